; Operand errors: every bad line is reported at its line and column, and the
; assembler goes on to the next.
; RUN: not netvm-me-as %s -o %t 2>&1 | FileCheck %s --implicit-check-not=error:

.me 0
; CHECK: errors-operands.s:[[@LINE+1]]:13: error: both source operands are in GPR bank A; an instruction reads at most one operand from each bank
    alu[a0, a1, +, a2]
; CHECK: :[[@LINE+1]]:13: error: both source operands are in GPR bank B; an instruction reads at most one operand from each bank
    alu[b0, b1, and, b2]
; CHECK: :[[@LINE+1]]:13: error: both source operands are in local memory; an instruction reads at most one local-memory operand
    alu[a0, *l$index0, +, *l$index1]
; CHECK: :[[@LINE+1]]:19: error: both source operands are immediates; an instruction has one immediate field
    alu[a0, 1, +, 2]
; CHECK: :[[@LINE+1]]:20: error: immediate 0x10000 (65536) does not fit in 16 bits unsigned; load it with immed[] first
    alu[a0, a1, +, 0x10000]
; CHECK: :[[@LINE+1]]:20: error: immediate -1 (-1) does not fit in 16 bits unsigned; load it with immed[] first
    alu[a0, a1, +, -1]
; CHECK: :[[@LINE+1]]:17: error: unknown ALU operation 'plus' (b, ~b, +, +carry, -, -carry, b-a, and, ~and, and~, or, xor, *)
    alu[a0, a1, plus, b2]
; CHECK: :[[@LINE+1]]:5: error: 'alu' takes 4 operands, not 3
    alu[a0, a1, +]
; CHECK: :[[@LINE+1]]:9: error: 'a16' does not exist: a context has 16 GPRs in bank A in 8-context mode
    alu[a16, a1, +, b2]
; CHECK: :[[@LINE+1]]:13: error: ALU operation 'b' ignores a: write --
    alu[a0, a1, b, b2]
; CHECK: :[[@LINE+1]]:13: error: ALU operation '+' needs an a operand
    alu[a0, --, +, b2]
; CHECK: :[[@LINE+1]]:28: error: shift amounts are 1-31: '<<32'
    alu_shf[a0, --, b, b1, <<32]
; CHECK: :[[@LINE+1]]:21: error: an indirect shift takes its amount from the a operand, so the operation must be b or ~b
    alu_shf[a0, a1, +, b1, <<indirect]
; CHECK: :[[@LINE+1]]:15: error: value does not fit in 32 bits
    immed[a0, 0x100000000]
; CHECK: :[[@LINE+1]]:15: error: undefined symbol 'undefined_thing'
    immed[a0, undefined_thing]
; CHECK: :[[@LINE+1]]:5: error: unknown instruction 'frob'
    frob[a0]
; CHECK: :[[@LINE+1]]:14: error: ld_field writes part of a GPR: the destination must be an A or B register
    ld_field[$0, 0011, a1]
; CHECK: :[[@LINE+1]]:18: error: the byte mask is 4 binary digits, byte 3 first (e.g. 0011), not '0021'
    ld_field[a0, 0021, a1]
; CHECK: :[[@LINE+1]]:11: error: expected a destination register, not '0x10'
    immed[0x10, 1]
    halt
