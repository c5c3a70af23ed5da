; The ME-local units and cross-ME signalling: CRC, hash, CAM, local memory,
; indexed transfer registers, CSRs, register-test branches, jump and rtn,
; next-neighbour registers and ring, signals between contexts.
; RUN: netvm-emu %s -q --dump-regs | FileCheck %s

.me 0
.ctx_enable 3
    br=ctx[1, context1]
    ; CRC-32 of "12345678" (0x9ae0daaf) with crc_be on big-endian words.
    local_csr_wr[crc_remainder, 0xffff]
    immed_w1[a0, 0xffff]
    immed_w0[a0, 0xffff]
    local_csr_wr[crc_remainder, a0]
    immed[a0, 0x31323334]
    crc_be[crc_32, --, a0]
    immed[a0, 0x35363738]
    crc_be[crc_32, --, a0]
    local_csr_rd[a1, crc_remainder]
    alu[a1, --, ~b, a1]
    ; CRC-32C of the same bytes (0x6087809a) with crc_le on little-endian
    ; words; crc_le passes its source on to its destination.
    immed[b0, 0xffffffff]
    local_csr_wr[crc_remainder, b0]
    immed[a0, 0x34333231]
    crc_le[crc_32c, b1, a0]
    immed[a0, 0x38373635]
    crc_le[crc_32c, b1, a0]
    local_csr_rd[b2, crc_remainder]
    alu[b2, --, ~b, b2]
    ; The hash unit: two 64-bit values.
    immed[$0, 0]
    immed[$1, 1]
    immed[$2, 0xffffffff]
    immed[$3, 0xffffffff]
    hash_64[$0, 2], ctx_swap[s1]
    ; CAM: write entries 0 and 5, hit 5, miss (LRU is entry 1).
    cam_clear
    immed[a2, 0xaaaa]
    immed[b3, 0xbbbb]
    cam_write[0, a2, 3]
    cam_write[5, b3, 9]
    cam_lookup[a3, b3]                  ; state 9, hit, entry 5: 0x9a8
    cam_lookup[a4, 0xcccc]              ; miss, LRU entry 1: 0x8
    cam_read_tag[a5, 5]
    cam_read_state[a6, 0]
    cam_write_state[0, 7]
    cam_read_state[a7, 0]
    ctx_arb[kill]

context1:
    ; Local memory through both pointers.
    local_csr_wr[active_lm_addr_0, 0x40]
    alu[*l$index0++, --, b, 0x11]
    alu[*l$index0++, --, b, 0x22]
    alu[*l$index0, --, b, 0x33]
    local_csr_wr[active_lm_addr_1, 0x40]
    alu[a0, *l$index1[1], +, 0x100]     ; 0x122
    alu[a1, --, b, *l$index1[2]]        ; 0x33
    local_csr_rd[a2, active_lm_addr_0]  ; 0x48
    alu[a3, --, b, *l$index0--]         ; 0x33, pointer back to 0x44
    local_csr_rd[a4, active_lm_addr_0]
    ; Transfer registers by index: a read of 2 words lands in $4, $5.
    immed[$6, 0x1234]
    scratch[write, $6, 0x20, 0, 1], ctx_swap[s2]
    scratch[read, $4, 0x1c, 0, 2], ctx_swap[s2]
    local_csr_wr[t_index, 4]
    alu[a5, --, b, *$index++]           ; $4: 0
    alu[a6, --, b, *$index]             ; $5: 0x1234
    local_csr_rd[a7, t_index]           ; 5
    ; Register-test branches; a8 stays 0 unless one goes wrong.
    immed[b0, 0x11223344]
    br=byte[b0, 2, 0x22, ok1]
    immed[a8, 1]
ok1:
    br!=byte[b0, 0, 0x44, wrong]
    br_bclr[b0, 0, ok2]
    immed[a8, 2]
ok2:
    br_bset[b0, 2, ok3]
    immed[a8, 3]
ok3:
    br=ctx[0, wrong]
    ; A subroutine call with rtn, and a jump table.
    immed[b1, back]
    br[subroutine]
back:
    immed[b4, 2]
    jump[b4, table]
table:
    immed[a10, 10]
    immed[a10, 11]
    immed[a10, 12]                      ; table + 2
    local_csr_rd[a11, active_ctx_sts]   ; ME 0, context 1
    ctx_arb[kill]
subroutine:
    immed[a9, 9]
    rtn[b1]
wrong:
    immed[a8, 0xbad]
    ctx_arb[kill]

; ME 1 writes ME 2's next-neighbour registers and ring, then signals it.
.me 1
.ctx_enable 1
    alu[n$5, --, b, 0x55]
    alu[*n$index++, --, b, 0x66]
    alu[*n$index++, --, b, 0x77]
    local_csr_wr[next_neighbor_signal, 2 << 3]
    ctx_arb[kill]

.me 2
.ctx_enable 1
    br_!inp_state[nn_empty, nn_wrong]   ; nothing yet
    ctx_arb[s2]
    alu[a0, --, b, n$5]
    alu[a1, --, b, *n$index++]
    br_inp_state[nn_empty, nn_wrong]
    alu[a2, --, b, *n$index++]
    br_!inp_state[nn_empty, nn_wrong]
    ctx_arb[kill]
nn_wrong:
    immed[a3, 0xbad]
    ctx_arb[kill]

; Signals between the contexts of ME 3: context 0 raises s3 and s4 in
; context 1 (which waits for both) and s7 in context 2 (which waits for
; either of s6 and s7); br_signal tests and clears.
.me 3
.ctx_enable 7
    br=ctx[1, waits_all]
    br=ctx[2, waits_any]
    local_csr_wr[same_me_signal, (3 << 3) | 1]
    local_csr_wr[same_me_signal, (7 << 3) | 2]
    local_csr_wr[same_me_signal, 0x80 | (4 << 3)]   ; the next context: 1
    local_csr_wr[same_me_signal, 5 << 3]            ; itself
    br_!signal[s5, sig_wrong]
    br_signal[s5, sig_wrong]                        ; cleared by the test
    immed[a0, 1]
    ctx_arb[kill]
waits_all:
    ctx_arb[s3, s4]
    immed[a0, 2]
    ctx_arb[kill]
waits_any:
    ctx_arb[s6, s7], any
    immed[a0, 3]
    ctx_arb[kill]
sig_wrong:
    immed[a1, 0xbad]
    ctx_arb[kill]

; CHECK:      me0.ctx0 pc={{[0-9]+}} killed
; CHECK:      me0.ctx0.a1 = 0x9ae0daaf
; CHECK:      me0.ctx0.a3 = 0x000009a8
; CHECK-NEXT: me0.ctx0.a4 = 0x00000008
; CHECK-NEXT: me0.ctx0.a5 = 0x0000bbbb
; CHECK-NEXT: me0.ctx0.a6 = 0x00000003
; CHECK-NEXT: me0.ctx0.a7 = 0x00000007
; CHECK:      me0.ctx0.b1 = 0x38373635
; CHECK-NEXT: me0.ctx0.b2 = 0x6087809a
; CHECK:      me0.ctx0.$0 = 0x9e3779b9
; CHECK-NEXT: me0.ctx0.$1 = 0x7f4a7c15
; CHECK-NEXT: me0.ctx0.$2 = 0x1a619ce5
; CHECK-NEXT: me0.ctx0.$3 = 0xafdfb722
; CHECK:      me0.ctx1 pc={{[0-9]+}} killed
; CHECK-NEXT: me0.ctx1.a0 = 0x00000122
; CHECK-NEXT: me0.ctx1.a1 = 0x00000033
; CHECK-NEXT: me0.ctx1.a2 = 0x00000048
; CHECK-NEXT: me0.ctx1.a3 = 0x00000033
; CHECK-NEXT: me0.ctx1.a4 = 0x00000044
; CHECK-NEXT: me0.ctx1.a5 = 0x00000000
; CHECK-NEXT: me0.ctx1.a6 = 0x00001234
; CHECK-NEXT: me0.ctx1.a7 = 0x00000005
; CHECK-NEXT: me0.ctx1.a8 = 0x00000000
; CHECK-NEXT: me0.ctx1.a9 = 0x00000009
; CHECK-NEXT: me0.ctx1.a10 = 0x0000000c
; CHECK-NEXT: me0.ctx1.a11 = 0x00000001
; CHECK:      me1.ctx0 pc=5 killed
; CHECK:      me2.ctx0 pc=8 killed
; CHECK-NEXT: me2.ctx0.a0 = 0x00000055
; CHECK-NEXT: me2.ctx0.a1 = 0x00000066
; CHECK-NEXT: me2.ctx0.a2 = 0x00000077
; CHECK-NEXT: me2.ctx0.a3 = 0x00000000
; CHECK:      me3.ctx0 pc={{[0-9]+}} killed
; CHECK-NEXT: me3.ctx0.a0 = 0x00000001
; CHECK-NEXT: me3.ctx0.a1 = 0x00000000
; CHECK:      me3.ctx1 pc={{[0-9]+}} killed
; CHECK-NEXT: me3.ctx1.a0 = 0x00000002
; CHECK:      me3.ctx2 pc={{[0-9]+}} killed
; CHECK-NEXT: me3.ctx2.a0 = 0x00000003
