; forward.s - a packet forwarder on one microengine.
;
; The eight contexts of ME 0 receive and transmit in turn: context i takes
; packets i, i+8, i+16, ... Two tokens, passed from each context to the next
; with same_me_signal, keep the order: the receive token orders the rx
; commands (the media switch fabric serves them first come, first served)
; and the transmit token orders the tx commands, so packets leave in the
; order they came. Each context owns a 2 KB DRAM buffer; while one context
; waits for its packet to land in DRAM, the others run.
;
;   netvm-emu examples/me/forward.s -r in.pcap -w out.pcap

.equ BUFFER_BYTES, 2048
; same_me_signal values: signal << 3, 0x80 for "the next context".
.equ RX_TOKEN_TO_SELF, 1 << 3
.equ TX_TOKEN_TO_SELF, 2 << 3
.equ RX_TOKEN_TO_NEXT, 0x80 | (1 << 3)
.equ TX_TOKEN_TO_NEXT, 0x80 | (2 << 3)

.sig rx_token, s1
.sig tx_token, s2
.sig rx_done, s3
.sig tx_done, s4

.reg ctx, a0
.reg buffer, b0

.me 0
    local_csr_rd[ctx, active_ctx_sts]
    alu[ctx, ctx, and, 7]                   ; bits 2:0: this context
    alu_shf[buffer, --, b, ctx, <<11]       ; ctx * BUFFER_BYTES
    br!=ctx[0, loop]
    local_csr_wr[same_me_signal, RX_TOKEN_TO_SELF]  ; context 0 starts
    local_csr_wr[same_me_signal, TX_TOKEN_TO_SELF]  ; with both tokens
loop:
    ctx_arb[rx_token]
    msf[rx, $0, buffer, 0, 4], sig_done[rx_done]
    local_csr_wr[same_me_signal, RX_TOKEN_TO_NEXT]
    ctx_arb[rx_done]
    br_bset[$2, 0, end_of_input]            ; status bit 0: no more packets
    alu[$0, --, b, $0]                      ; tx descriptor: length,
    alu[$1, --, b, $1]                      ; wire length
    ctx_arb[tx_token]
    msf[tx, $0, buffer, 0, 2], sig_done[tx_done]
    local_csr_wr[same_me_signal, TX_TOKEN_TO_NEXT]
    ctx_arb[tx_done]                        ; the buffer is free again
    br[loop]
end_of_input:
    ctx_arb[tx_token]                       ; earlier packets go first
    local_csr_wr[same_me_signal, TX_TOKEN_TO_NEXT]
    ctx_arb[kill]
