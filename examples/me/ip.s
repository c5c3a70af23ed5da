; ip.s - the paper's first filter, tcpdump "ip": IPv4 frames (EtherType
; 0x0800), as a receive -> filter -> transmit pipeline
; (pipeline-rx-tx.inc); the NetIL version is examples/filters/ip.netil.

.include "pipeline-rx-tx.inc"

.me 1
.include "pipeline-filter-begin.inc"
    alu[--, length, -, 14]
    bcs[reject]                          ; no EtherType
    dram[read, $$0, buffer, 0, 2], ctx_swap[read_done]   ; bytes 0-15
    alu_shf[a4, --, b, $$3, >>16]
    alu[--, a4, -, 0x800]
    bne[reject]
.include "pipeline-filter-end.inc"
