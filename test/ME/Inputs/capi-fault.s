; For test/ME/capi.test (the C API): ME 0 writes 42 to SRAM 0x100, then
; reads scratch beyond its 16 KB, which faults.
.me 0
.ctx_enable 1
    immed[$0, 42]
    sram[write, $0, 0x100, 0, 1], ctx_swap[s1]
    scratch[read, $0, 0x4000, 0, 1], ctx_swap[s1]
