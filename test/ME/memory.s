; Scratch, SRAM and DRAM commands: reads and writes of several words,
; initialised data, every atomic (test_ variants return the old word), and
; DRAM's 8-byte units through $$ registers. Memory is big-endian.
; RUN: netvm-emu %s --dump-regs --dump-mem=sram:0x100:32 \
; RUN:   --dump-mem=dram:0x40:16 --dump-mem=scratch:0:8 | FileCheck %s

.data sram, 0x100
counters:
    .word 10, 0xf0, 0xff, 5, 100, 7
.data dram, 0x48
    .byte 1, 2, 3, 4, 5, 6, 7, 8

.me 0
.ctx_enable 1
    ; Read the initialised words back.
    sram[read, $0, counters, 0, 2], ctx_swap[s1]
    alu[a0, --, b, $0]                          ; 10
    alu[a1, --, b, $1]                          ; 0xf0
    immed[$0, 5]
    sram[add, $0, counters, 0]                  ; 10 + 5
    sram[test_and_add, $0, counters, 0], ctx_swap[s1]
    alu[a2, --, b, $0]                          ; old: 15, now 20
    immed[$0, 0x0f]
    sram[test_and_set, $0, counters, 4], ctx_swap[s1]
    alu[a3, --, b, $0]                          ; old 0xf0, now 0xff
    immed[$0, 0x0f]
    sram[test_and_clr, $0, counters, 8], ctx_swap[s1]
    alu[a4, --, b, $0]                          ; old 0xff, now 0xf0
    immed[$0, 0x99]
    sram[swap, $0, counters, 12], ctx_swap[s1]
    alu[a5, --, b, $0]                          ; old 5, now 0x99
    sram[incr, --, counters, 16]                ; 101
    sram[decr, --, counters, 20]                ; 6
    sram[set, $0, counters, 16]                 ; $0 still 0x99: 101 | 0x99
    sram[clr, $0, counters, 20], sig_done[s2]   ; 6 & ~0x99
    ctx_arb[s2]
    ; Scratch: a write, then the same atomics on the same controller.
    immed[$0, 0x11111111]
    immed[$1, 0x22222222]
    scratch[write, $0, 0, 0, 2], ctx_swap[s1]
    immed[$0, 1]
    scratch[test_and_add, $0, 4, 0], ctx_swap[s1]
    alu[a6, --, b, $0]                          ; 0x22222222, now ...23
    scratch[decr, --, 0, 0], ctx_swap[s1]       ; 0x11111110
    ; DRAM: two 8-byte units out, one in.
    immed[$$0, 0xcafebabe]
    immed[$$1, 0xdeadbeef]
    immed[$$2, 0x01234567]
    immed[$$3, 0x89abcdef]
    dram[write, $$0, 0x40, 0, 1], ctx_swap[s1]
    dram[read, $$0, 0x48, 0, 1], ctx_swap[s1]
    alu[a7, --, b, $$0]                         ; the .byte data: 0x01020304
    alu[a8, --, b, $$1]                         ; 0x05060708
    halt

; CHECK:      me0.ctx0.a0 = 0x0000000a
; CHECK-NEXT: me0.ctx0.a1 = 0x000000f0
; CHECK-NEXT: me0.ctx0.a2 = 0x0000000f
; CHECK-NEXT: me0.ctx0.a3 = 0x000000f0
; CHECK-NEXT: me0.ctx0.a4 = 0x000000ff
; CHECK-NEXT: me0.ctx0.a5 = 0x00000005
; CHECK-NEXT: me0.ctx0.a6 = 0x22222222
; CHECK-NEXT: me0.ctx0.a7 = 0x01020304
; CHECK-NEXT: me0.ctx0.a8 = 0x05060708
; CHECK:      sram 0x000100: 00 00 00 14 00 00 00 ff 00 00 00 f0 00 00 00 99
; CHECK-NEXT: sram 0x000110: 00 00 00 fd 00 00 00 06 00 00 00 00 00 00 00 00
; CHECK-NEXT: dram 0x000040: ca fe ba be de ad be ef 01 02 03 04 05 06 07 08
; CHECK-NEXT: scratch 0x000000: 11 11 11 10 22 22 22 23
