; ALU operations, the shifter, immediates, fields and bytes.
; RUN: netvm-emu %s -q --dump-regs | FileCheck %s

.me 0
.ctx_enable 1
    immed[a0, 0x12345678]
    immed[b0, 0x0000ff0f]
    alu[a1, a0, +, b0]                  ; 0x12355587
    alu[a2, a0, -, b0]                  ; 0x12335769
    alu[a3, a0, b-a, b0]                ; b0 - a0 = 0xedcca897
    alu[a4, a0, and, b0]                ; 0x00005608
    alu[a5, a0, ~and, b0]               ; ~a0 & b0 = 0x0000a907
    alu[a6, a0, and~, b0]               ; a0 & ~b0 = 0x12340070
    alu[a7, a0, or, b0]                 ; 0x1234ff7f
    alu[a8, a0, xor, b0]                ; 0x1234a977
    alu[a9, --, ~b, b0]                 ; 0xffff00f0
    alu[a10, a0, *, 3]                  ; 0x369d0368
    alu_shf[a11, --, b, a0, <<4]        ; 0x23456780
    alu_shf[a12, --, b, a0, >>4]        ; 0x01234567
    alu_shf[a13, --, b, a0, >>rot8]     ; 0x78123456
    alu_shf[a14, --, b, a0, <<rot8]     ; 0x34567812
    immed[b1, 0x80000010]
    alu_shf[b2, --, b, b1, >>asr4]      ; 0xf8000001
    immed[a15, 0x80000010]
    alu_shf[b3, 8, b, a15, >>indirect]      ; amount from a: 0x00800000
    alu_shf[b4, 8, b, a15, >>asr indirect]  ; 0xff800000
    alu_shf[b5, 8, ~b, a0, <<indirect]      ; ~0x34567800 = 0xcba987ff
    alu_shf[b6, a0, +, 1, <<16]         ; 0x12355678
    ; 64-bit arithmetic: 0x00000001_ffffffff + 0x00000000_00000001
    immed[a1, 0xffffffff]
    alu[b7, a1, +, 1]                   ; 0, carry out
    immed[a1, 1]
    alu[b8, a1, +carry, 0]              ; 2
    ; 0x00000002_00000000 - 1
    immed[a1, 0]
    alu[b9, a1, -, 1]                   ; 0xffffffff, borrow
    immed[a1, 2]
    alu[b10, a1, -carry, 0]             ; 1
    immed_w0[b11, 0xbeef]
    immed_w1[b11, 0xdead]               ; 0xdeadbeef
    immed[b12, 0x11223344]
    ld_field[b12, 0101, a0]             ; bytes 2 and 0 from a0: 0x11343378
    immed[b13, 0x11223344]
    ld_field_w_clr[b13, 0110, a0, <<8]  ; 0x00567800? bytes 2,1 of a0<<8
    immed[b14, 0xaabbccdd]
    byte_align[b15, b14, a0, 1]         ; 0xbbccdd12
    halt

; CHECK:      me0.ctx0 pc=39 stopped
; CHECK-NEXT: me0.ctx0.a0 = 0x12345678
; CHECK-NEXT: me0.ctx0.a1 = 0x00000002
; CHECK-NEXT: me0.ctx0.a2 = 0x12335769
; CHECK-NEXT: me0.ctx0.a3 = 0xedcca897
; CHECK-NEXT: me0.ctx0.a4 = 0x00005608
; CHECK-NEXT: me0.ctx0.a5 = 0x0000a907
; CHECK-NEXT: me0.ctx0.a6 = 0x12340070
; CHECK-NEXT: me0.ctx0.a7 = 0x1234ff7f
; CHECK-NEXT: me0.ctx0.a8 = 0x1234a977
; CHECK-NEXT: me0.ctx0.a9 = 0xffff00f0
; CHECK-NEXT: me0.ctx0.a10 = 0x369d0368
; CHECK-NEXT: me0.ctx0.a11 = 0x23456780
; CHECK-NEXT: me0.ctx0.a12 = 0x01234567
; CHECK-NEXT: me0.ctx0.a13 = 0x78123456
; CHECK-NEXT: me0.ctx0.a14 = 0x34567812
; CHECK-NEXT: me0.ctx0.a15 = 0x80000010
; CHECK-NEXT: me0.ctx0.b0 = 0x0000ff0f
; CHECK-NEXT: me0.ctx0.b1 = 0x80000010
; CHECK-NEXT: me0.ctx0.b2 = 0xf8000001
; CHECK-NEXT: me0.ctx0.b3 = 0x00800000
; CHECK-NEXT: me0.ctx0.b4 = 0xff800000
; CHECK-NEXT: me0.ctx0.b5 = 0xcba987ff
; CHECK-NEXT: me0.ctx0.b6 = 0x12355678
; CHECK-NEXT: me0.ctx0.b7 = 0x00000000
; CHECK-NEXT: me0.ctx0.b8 = 0x00000002
; CHECK-NEXT: me0.ctx0.b9 = 0xffffffff
; CHECK-NEXT: me0.ctx0.b10 = 0x00000001
; CHECK-NEXT: me0.ctx0.b11 = 0xdeadbeef
; CHECK-NEXT: me0.ctx0.b12 = 0x11343378
; CHECK-NEXT: me0.ctx0.b13 = 0x00567800
; CHECK-NEXT: me0.ctx0.b14 = 0xaabbccdd
; CHECK-NEXT: me0.ctx0.b15 = 0xbbccdd12
