; ip-tcp.s - the paper's third filter, tcpdump "ip proto tcp": IPv4 frames
; carrying TCP (protocol byte 23 is 6), as a receive -> filter -> transmit
; pipeline (pipeline-rx-tx.inc); the NetIL version is
; examples/filters/ip-tcp.netil.

.include "pipeline-rx-tx.inc"

.me 1
.include "pipeline-filter-begin.inc"
    alu[--, length, -, 24]
    bcs[reject]
    dram[read, $$0, buffer, 0, 3], ctx_swap[read_done]   ; bytes 0-23
    alu_shf[a4, --, b, $$3, >>16]
    alu[--, a4, -, 0x800]
    bne[reject]
    br!=byte[$$5, 0, 6, reject]          ; byte 23, the IPv4 protocol
.include "pipeline-filter-end.inc"
