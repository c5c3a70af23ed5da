; four-hosts.s - the paper's fourth filter, tcpdump "ip src 10.1.1.1 or
; ... 10.2.2.2 or ... 10.3.3.3 or ... 10.4.4.4", as a receive -> filter ->
; transmit pipeline (pipeline-rx-tx.inc) that looks the source up in the
; CAM; the NetIL version is examples/filters/four-hosts.netil.

.include "pipeline-rx-tx.inc"

.me 1
    ; Context 0 loads the four hosts into the CAM before it starts the
    ; token chains (the other contexts wait for the tokens).
    br!=ctx[0, hosts_loaded]
    cam_clear
    immed[a4, 0x0a010101]
    cam_write[0, a4, 1]
    immed[a4, 0x0a020202]
    cam_write[1, a4, 1]
    immed[a4, 0x0a030303]
    cam_write[2, a4, 1]
    immed[a4, 0x0a040404]
    cam_write[3, a4, 1]
hosts_loaded:
.include "pipeline-filter-begin.inc"
    alu[--, length, -, 30]
    bcs[reject]
    dram[read, $$0, buffer, 0, 4], ctx_swap[read_done]   ; bytes 0-31
    alu_shf[a4, --, b, $$3, >>16]
    alu[--, a4, -, 0x800]
    bne[reject]
    byte_align[a4, $$6, $$7, 2]          ; the IPv4 source
    cam_lookup[a4, a4]
    br_bclr[a4, 7, reject]               ; bit 7: hit
.include "pipeline-filter-end.inc"
