; Memory, ring, hash and MSF commands.
; RUN: not netvm-me-as %s -o %t 2>&1 | FileCheck %s --implicit-check-not=error:

.me 0
; CHECK: errors-commands.s:[[@LINE+1]]:30: error: the count of scratch[read] is 1-16
    scratch[read, $0, a0, 0, 17]
; CHECK: :[[@LINE+1]]:29: error: the count of scratch[add] is 1-1
    scratch[add, $0, a0, 0, 2]
; CHECK: :[[@LINE+1]]:16: error: the transfer operand of dram is a $$ register
    dram[read, $0, a0, 0, 1]
; CHECK: :[[@LINE+1]]:28: error: the count of dram[read] is 1-8 (8-byte units)
    dram[read, $$0, a0, 0, 9]
; CHECK: :[[@LINE+1]]:16: error: the command uses 4 transfer registers from $14, beyond the 16 a context has
    sram[read, $14, a0, 0, 4]
; CHECK: :[[@LINE+1]]:10: error: unknown sram command 'frob' (read, write, add, test_and_add, set, test_and_set, clr, test_and_clr, swap, incr, decr)
    sram[frob, $0, a0, 0]
; CHECK: :[[@LINE+1]]:20: error: both source operands are in GPR bank A; an instruction reads at most one operand from each bank
    sram[read, $0, a0, a1]
; CHECK: :[[@LINE+1]]:24: error: the count of msf[rx] is 1-6
    msf[rx, $0, a0, 0, 7]
; CHECK: :[[@LINE+1]]:24: error: the count of msf[tx] is 1-4
    msf[tx, $0, a0, 0, 5]
; CHECK: :[[@LINE+1]]:45: error: a command raises one signal
    scratch[read, $0, a0, 0], ctx_swap[s1], sig_done[s2]
; CHECK: :[[@LINE+1]]:31: error: unexpected 'defer' after scratch
    scratch[read, $0, a0, 0], defer[1]
; CHECK: :[[@LINE+1]]:31: error: the address 65540 does not fit in 16 bits unsigned; put it in a register
    scratch[read, $0, 0xffff, 5]
; CHECK: :[[@LINE+1]]:5: error: 'hash_64' takes 2 operands, not 1
    hash_64[$0]
; CHECK: :[[@LINE+1]]:17: error: the count of hash_64 is 1-8 (8-byte units)
    hash_64[$0, 17]
    halt
