; 4-context mode: 32 GPRs per bank and 32 transfer registers a context,
; contexts 0-3; the same program on two MEs.
; RUN: netvm-emu %s -q --dump-regs | FileCheck %s --implicit-check-not=ctx4

.me 2-3
.ctx_mode 4
    local_csr_rd[a31, active_ctx_sts]
    alu[b31, a31, +, 0x100]
    alu_shf[a30, --, b, a31, <<2]       ; a word per context and ME
    immed[$31, 7]
    scratch[write, $31, 0x40, a30, 1], ctx_swap[s15]
    scratch[read, $30, 0x40, a30, 1], ctx_swap[s15]
    alu[a20, --, b, $30]
    ctx_arb[kill]

; CHECK: me2.ctx0 pc=8 killed
; CHECK: me2.ctx0.a20 = 0x00000007
; CHECK: me2.ctx0.a31 = 0x00000010
; CHECK: me2.ctx0.b31 = 0x00000110
; CHECK: me2.ctx0.$30 = 0x00000007
; CHECK: me2.ctx3.a31 = 0x00000013
; CHECK: me3.ctx0.a31 = 0x00000018
; CHECK: me3.ctx3 pc=8 killed
; CHECK: me3.ctx3.b31 = 0x0000011b
