; One of every row of the instruction table, in every operand form the
; formats allow (used by roundtrip.test).
.equ LIMIT, 0x800
.ring 3, 0x1000, 256
.data sram, 0x100
table:
    .word 1, 2, 0xdeadbeef
bytes:
    .byte 1, 2, 3
.data dram, 0x40
    .half 0xabcd
    .space 2
    .align 8
packet:
    .word 0x45000054

.me 0-1, 3
.ctx_mode 4
.ctx_enable 0x5
start:
    nop
    alu[a0, b1, +, a2]
    alu[b0, --, b, 7]
    alu[--, a1, -, LIMIT]
    alu[a31, a0, ~and, b31]
    alu_shf[a2, --, ~b, b3, >>rot3]
    alu_shf[b2, a1, or, 0xff, <<8]
    alu_shf[a3, a4, b, b5, <<indirect]
    alu_shf[a3, a4, ~b, b5, >>indirect]
    alu_shf[a3, b4, b, a5, >>asr indirect]
    alu_shf[a3, --, b, b5, >>asr7]
    alu_shf[a3, b4, +carry, a5, <<rot8]
    alu[$0, a1, -carry, b1]
    alu[$$1, a1, b-a, b1]
    alu[n$5, a1, and, b1]
    alu[*l$index0, a1, and~, b1]
    alu[*l$index1++, *l$index0[3], xor, $2]
    alu[*n$index++, *l$index1--, *, $$3]
    alu[*$index, *n$index++, or, n$7]
    alu[a4, *$index++, +, *$$index]
    alu[*$$index++, b6, +, *$$index++]
    immed[a5, 0x12345678]
    immed[b5, -1]
    immed[a6, table]
    immed_w0[a6, 0xffff]
    immed_w1[b6, 0x1234]
    ld_field[a7, 0011, b7]
    ld_field_w_clr[b7, 1000, a7, <<24]
    byte_align[a8, $$6, $$7, 2]
    byte_align[a8, b9, 0x10]
again:
    br[start]
    beq[again], defer[1]
    nop
    bne[again]
    bmi[again]
    bpl[again]
    bcs[again]
    bcc[again]
    bvs[again]
    bvc[again]
    blt[again]
    bge[again]
    bgt[again]
    ble[again]
    bhi[again]
    bls[again], defer[3]
    nop
    nop
    nop
    br=byte[a1, 2, 0x45, again]
    br!=byte[$1, 0, 6, again]
    br_bset[b2, 31, again]
    br_bclr[a3, 0, again], defer[2]
    nop
    nop
    br=ctx[3, again]
    br!=ctx[0, again]
    br_signal[s4, again]
    br_!signal[s15, again]
    br_inp_state[nn_empty, again]
    br_!inp_state[scr_ring3_full, again]
    br_inp_state[scr_ring15_empty, again]
    br_inp_state[nn_full, 16]
    jump[a1, again]
    rtn[b2], defer[1]
    nop
    local_csr_rd[a9, timestamp_low]
    local_csr_rd[b9, active_ctx_sts]
    local_csr_wr[active_lm_addr_0, 0x40]
    local_csr_wr[same_me_signal, a9]
    local_csr_wr[prev_neighbor_signal, a9]
    local_csr_wr[interthread_signal, b9]
    cam_clear
    cam_lookup[a10, b10]
    cam_write[3, a10, 7]
    cam_write[b1, a10, 15]
    cam_write_state[a11, 2]
    cam_read_tag[b11, 3]
    cam_read_state[a11, b2]
    crc_be[crc_32, a12, $0]
    crc_le[crc_32c, --, b12]
    scratch[read, $0, a1, 0, 4], ctx_swap[s1]
    scratch[write, $4, a1, b1, 2], sig_done[s2]
    scratch[add, $0, 0x20, a2]
    scratch[test_and_add, $1, a1, 4], ctx_swap[s3]
    scratch[set, $2, a1, 8]
    scratch[test_and_set, $2, a1, 8], sig_done[s3]
    scratch[clr, $2, a1, 8]
    scratch[test_and_clr, $2, a1, 8], sig_done[s3]
    scratch[swap, $2, a1, 8], sig_done[s3]
    scratch[incr, --, a1, 8]
    scratch[decr, $0, a1, 8]
    scratch[put, $0, 3, 0, 16], sig_done[s4]
    scratch[get, $16, 3, 0, 16], ctx_swap[s4]
    sram[read, $0, a1, 0, 16], ctx_swap[s1]
    sram[write, $0, table, 4, 3], ctx_swap[s1]
    sram[add, $0, a1, 0]
    sram[test_and_add, $0, a1, 0], sig_done[s5]
    sram[set, $0, a1, 0]
    sram[test_and_set, $0, a1, 0], sig_done[s5]
    sram[clr, $0, a1, 0]
    sram[test_and_clr, $0, a1, 0], sig_done[s5]
    sram[swap, $0, a1, 0], sig_done[s5]
    sram[incr, --, a1, 0]
    sram[decr, --, a1, 0]
    dram[read, $$0, a1, 0, 8], ctx_swap[s6]
    dram[write, $$16, packet, 0, 1], sig_done[s6]
    hash_64[$2, 3], ctx_swap[s7]
    msf[rx, $0, b1, 0, 4], sig_done[s8]
    msf[tx, $4, a1, 0, 4], sig_done[s9]
    ctx_arb[s8, s9]
    ctx_arb[s1, s2, s14], any
    ctx_arb[voluntary]
    ctx_arb[kill]
    halt

.me 2
.sig done, s2
.reg counter, b3
    immed[counter, 3]
loop:
    alu[counter, counter, -, 1]
    bne[loop]
    scratch[read, $15, 0, 0, 1], ctx_swap[done]
    halt
end:
