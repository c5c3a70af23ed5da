; Every directive and two code blocks on MEs of both context modes.
.equ BASE, 0x40
.equ SIZE, BASE * 2 + 8
.reg count, a3
.sig done, s2
.ring 2, 0x1000, 128
.data scratch, BASE
table:
    .word 1, 2, SIZE
    .half 0xffff
    .align 4
    .byte 7
    .space 3
.me 0-1
.ctx_mode 4
.ctx_enable 0x3
loop:
    immed[count, 3]
    scratch[read, $0, table, 0, 1], sig_done[done]
    ctx_arb[done]
    alu[count, count, -, 1]
    bne[loop]
    ctx_arb[kill]
.me 2
    nop
    ctx_arb[kill]
