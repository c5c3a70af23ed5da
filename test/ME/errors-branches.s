; Branch targets, defer slots and the other control instructions.
; RUN: not netvm-me-as %s -o %t 2>&1 | FileCheck %s --implicit-check-not=error:

.me 0
; CHECK: errors-branches.s:[[@LINE+1]]:8: error: undefined label 'nowhere'
    br[nowhere]
; CHECK: :[[@LINE+1]]:23: error: defer takes 1-3 instructions, not 4
    beq[there], defer[4]
; CHECK: :[[@LINE+1]]:8: error: branch target 99 is outside the block's 19 instructions
    br[99]
    bne[there], defer[1]
there:
; CHECK: :[[@LINE+1]]:5: error: defer slot 1 of the branch at line 11 holds an instruction that changes the flow or swaps the context
    br[there]
    br[there], defer[1]
; CHECK: :[[@LINE+1]]:5: error: defer slot 1 of the branch at line 15 holds an instruction that changes the flow or swaps the context
    scratch[read, $0, 0, 0, 1], ctx_swap[s1]
; CHECK: :[[@LINE+1]]:12: error: the context must be 0-7, not 8
    br=ctx[8, there]
; CHECK: :[[@LINE+1]]:18: error: unknown state 'rx_full' (nn_empty, nn_full, scr_ringN_full, scr_ringN_empty)
    br_inp_state[rx_full, there]
; CHECK: :[[@LINE+1]]:13: error: expected a register, not '3'
    br_bset[3, 0, there]
; CHECK: :[[@LINE+1]]:17: error: the bit must be 0-31, not 32
    br_bclr[a0, 32, there]
; CHECK: :[[@LINE+1]]:5: error: ctx_arb[kill] takes no signals
    ctx_arb[kill], any
; CHECK: :[[@LINE+1]]:13: error: expected a signal s1-s15 or a .sig name, not 's0'
    ctx_arb[s0]
; CHECK: :[[@LINE+1]]:18: error: unexpected 'defer' after ctx_arb
    ctx_arb[s1], defer[1]
; CHECK: :[[@LINE+1]]:18: error: CSR timestamp_low cannot be written
    local_csr_wr[timestamp_low, 0]
; CHECK: :[[@LINE+1]]:22: error: unknown CSR 'nonsense'
    local_csr_rd[a0, nonsense]
; CHECK: :[[@LINE+1]]:5: error: 'halt' takes no operands
    halt[1]
; CHECK: :[[@LINE+1]]:5: error: 'br' needs [operands]
    br
; CHECK: :[[@LINE+1]]:5: error: defer[1] needs instructions after the branch
    br[there], defer[1]
