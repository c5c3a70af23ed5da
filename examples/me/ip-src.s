; ip-src.s - the paper's second filter, tcpdump "ip src 10.1.1.1", as a
; receive -> filter -> transmit pipeline over scratch rings
; (pipeline-rx-tx.inc); the NetIL version is examples/filters/ip-src.netil.
;
;   netvm-emu examples/me/ip-src.s -r in.pcap -w out.pcap

.include "pipeline-rx-tx.inc"

.me 1
.include "pipeline-filter-begin.inc"
    ; The EtherType (bytes 12-13) is IPv4 and the IPv4 source (bytes 26-29)
    ; is 10.1.1.1; shorter packets do not match.
    alu[--, length, -, 30]
    bcs[reject]                          ; borrow: length < 30
    dram[read, $$0, buffer, 0, 4], ctx_swap[read_done]   ; bytes 0-31
    alu_shf[a4, --, b, $$3, >>16]
    alu[--, a4, -, 0x800]
    bne[reject]
    byte_align[a4, $$6, $$7, 2]
    immed[b4, 0x0a010101]
    alu[--, a4, -, b4]
    bne[reject]
.include "pipeline-filter-end.inc"
