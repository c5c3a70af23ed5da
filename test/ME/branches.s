; Branches on condition codes. Three contexts compare three pairs (-1 with
; 1, 0x80000000 with 1, 5 with 5) once, then try every conditional branch;
; register aK (K = 1..14) is set to 1 where the K-th branch was NOT taken,
; since immed leaves the condition codes alone.
; RUN: netvm-emu %s -q --dump-regs | FileCheck %s

.me 0
.ctx_enable 7
    br=ctx[1, pair1]
    br=ctx[2, pair2]
    immed[a0, 0xffffffff]
    immed[b0, 1]
    br[compare]
pair1:
    immed[a0, 0x80000000]
    immed[b0, 1]
    br[compare]
pair2:
    immed[a0, 5]
    immed[b0, 5]
compare:
    alu[--, a0, -, b0]
    beq[n1]
    immed[a1, 1]
n1:
    bne[n2]
    immed[a2, 1]
n2:
    bmi[n3]
    immed[a3, 1]
n3:
    bpl[n4]
    immed[a4, 1]
n4:
    bcs[n5]
    immed[a5, 1]
n5:
    bcc[n6]
    immed[a6, 1]
n6:
    bvs[n7]
    immed[a7, 1]
n7:
    bvc[n8]
    immed[a8, 1]
n8:
    blt[n9]
    immed[a9, 1]
n9:
    bge[n10]
    immed[a10, 1]
n10:
    bgt[n11]
    immed[a11, 1]
n11:
    ble[n12]
    immed[a12, 1]
n12:
    bhi[n13]
    immed[a13, 1]
n13:
    bls[n14]
    immed[a14, 1]
n14:
    ctx_arb[kill]

; -1 - 1: signed less, unsigned greater, negative
; CHECK: me0.ctx0 pc={{[0-9]+}} killed
; CHECK-NEXT: me0.ctx0.a0 =
; beq not taken
; CHECK-NEXT: me0.ctx0.a1 = 0x00000001
; bne taken
; CHECK-NEXT: me0.ctx0.a2 = 0x00000000
; bmi taken
; CHECK-NEXT: me0.ctx0.a3 = 0x00000000
; bpl not taken
; CHECK-NEXT: me0.ctx0.a4 = 0x00000001
; bcs not taken
; CHECK-NEXT: me0.ctx0.a5 = 0x00000001
; bcc taken
; CHECK-NEXT: me0.ctx0.a6 = 0x00000000
; bvs not taken
; CHECK-NEXT: me0.ctx0.a7 = 0x00000001
; bvc taken
; CHECK-NEXT: me0.ctx0.a8 = 0x00000000
; blt taken
; CHECK-NEXT: me0.ctx0.a9 = 0x00000000
; bge not taken
; CHECK-NEXT: me0.ctx0.a10 = 0x00000001
; bgt not taken
; CHECK-NEXT: me0.ctx0.a11 = 0x00000001
; ble taken
; CHECK-NEXT: me0.ctx0.a12 = 0x00000000
; bhi taken
; CHECK-NEXT: me0.ctx0.a13 = 0x00000000
; bls not taken
; CHECK-NEXT: me0.ctx0.a14 = 0x00000001
; 0x80000000 - 1: overflow; signed less, unsigned greater
; CHECK: me0.ctx1 pc={{[0-9]+}} killed
; CHECK-NEXT: me0.ctx1.a0 =
; beq not taken
; CHECK-NEXT: me0.ctx1.a1 = 0x00000001
; bne taken
; CHECK-NEXT: me0.ctx1.a2 = 0x00000000
; bmi not taken
; CHECK-NEXT: me0.ctx1.a3 = 0x00000001
; bpl taken
; CHECK-NEXT: me0.ctx1.a4 = 0x00000000
; bcs not taken
; CHECK-NEXT: me0.ctx1.a5 = 0x00000001
; bcc taken
; CHECK-NEXT: me0.ctx1.a6 = 0x00000000
; bvs taken
; CHECK-NEXT: me0.ctx1.a7 = 0x00000000
; bvc not taken
; CHECK-NEXT: me0.ctx1.a8 = 0x00000001
; blt taken
; CHECK-NEXT: me0.ctx1.a9 = 0x00000000
; bge not taken
; CHECK-NEXT: me0.ctx1.a10 = 0x00000001
; bgt not taken
; CHECK-NEXT: me0.ctx1.a11 = 0x00000001
; ble taken
; CHECK-NEXT: me0.ctx1.a12 = 0x00000000
; bhi taken
; CHECK-NEXT: me0.ctx1.a13 = 0x00000000
; bls not taken
; CHECK-NEXT: me0.ctx1.a14 = 0x00000001
; 5 - 5: equal
; CHECK: me0.ctx2 pc={{[0-9]+}} killed
; CHECK-NEXT: me0.ctx2.a0 =
; beq taken
; CHECK-NEXT: me0.ctx2.a1 = 0x00000000
; bne not taken
; CHECK-NEXT: me0.ctx2.a2 = 0x00000001
; bmi not taken
; CHECK-NEXT: me0.ctx2.a3 = 0x00000001
; bpl taken
; CHECK-NEXT: me0.ctx2.a4 = 0x00000000
; bcs not taken
; CHECK-NEXT: me0.ctx2.a5 = 0x00000001
; bcc taken
; CHECK-NEXT: me0.ctx2.a6 = 0x00000000
; bvs not taken
; CHECK-NEXT: me0.ctx2.a7 = 0x00000001
; bvc taken
; CHECK-NEXT: me0.ctx2.a8 = 0x00000000
; blt not taken
; CHECK-NEXT: me0.ctx2.a9 = 0x00000001
; bge taken
; CHECK-NEXT: me0.ctx2.a10 = 0x00000000
; bgt not taken
; CHECK-NEXT: me0.ctx2.a11 = 0x00000001
; ble taken
; CHECK-NEXT: me0.ctx2.a12 = 0x00000000
; bhi not taken
; CHECK-NEXT: me0.ctx2.a13 = 0x00000001
; bls taken
; CHECK-NEXT: me0.ctx2.a14 = 0x00000000
