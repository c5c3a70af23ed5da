; ip-src.s - the paper's second filter, tcpdump "ip src 10.1.1.1", as a
; receive -> filter -> transmit pipeline over scratch rings (the NetIL
; version is examples/filters/ip-src.netil).
;
;   ME 0, receive (8 contexts): takes a free buffer from FREE_RING,
;        receives a packet into it and puts [buffer, length, wire length,
;        status] on WORK_RING;
;   ME 1, filter (8 contexts): takes work, reads the first 32 bytes of the
;        packet from DRAM, and either puts [buffer, length, wire length] on
;        TX_RING or gives the buffer back to FREE_RING;
;   ME 2, transmit (1 context): transmits what TX_RING holds and frees the
;        buffers.
;
; Tokens passed from context to context with same_me_signal keep every
; ring in packet order, so the output keeps the input's order. At the end
; of the input each receive context queues a marker (buffer 0xffffffff);
; each filter context passes one on and stops, and the transmit context
; stops after the eighth.
;
;   netvm-emu examples/me/ip-src.s -r in.pcap -w out.pcap

.equ FREE_RING, 0
.equ TX_RING, 1
.equ WORK_RING, 2
.ring FREE_RING, 0x0, 128          ; buffer addresses
.ring TX_RING, 0x400, 256          ; 3 words an entry
.ring WORK_RING, 0x800, 512        ; 4 words an entry

.equ BUFFERS, 64
.equ BUFFER_BASE, 0x10000          ; in DRAM; addresses are never 0
.equ BUFFER_BYTES, 2048
.equ MARKER, 0xffffffff
.equ SOURCE, 0x0a010101            ; 10.1.1.1

; same_me_signal values: signal << 3, and 0x80 for "the next context".
.equ TOKEN1_TO_SELF, 1 << 3
.equ TOKEN2_TO_SELF, 2 << 3
.equ TOKEN1_TO_NEXT, 0x80 | (1 << 3)
.equ TOKEN2_TO_NEXT, 0x80 | (2 << 3)

;===------------------------------------------------------------------===;
; ME 0: receive
;===------------------------------------------------------------------===;
.me 0
.sig rx_token, s1
.sig put_token, s2
.sig done, s3
.reg buffer, a0
.reg next, a1
.reg step, b1
    br!=ctx[0, rx_loop]
    ; Context 0 fills the free ring, 16 buffers a put, then starts the
    ; token chains.
    immed[next, BUFFER_BASE]
    immed[step, BUFFER_BYTES]
    immed[a2, BUFFERS / 16]
fill:
    local_csr_wr[t_index, 0]
    immed[b2, 16]
fill_word:
    alu[*$index++, --, b, next]
    alu[next, next, +, step]
    alu[b2, b2, -, 1]
    bne[fill_word]
    scratch[put, $0, FREE_RING, 0, 16], ctx_swap[done]
    alu[a2, a2, -, 1]
    bne[fill]
    local_csr_wr[same_me_signal, TOKEN1_TO_SELF]
    local_csr_wr[same_me_signal, TOKEN2_TO_SELF]
rx_loop:
    scratch[get, $0, FREE_RING, 0, 1], ctx_swap[done]
    alu[buffer, --, b, $0]
    beq[rx_loop]                         ; no free buffer yet
    ctx_arb[rx_token]
    msf[rx, $0, buffer, 0, 4], sig_done[done]
    local_csr_wr[same_me_signal, TOKEN1_TO_NEXT]
    ctx_arb[done]
    br_bset[$2, 0, rx_end]               ; status bit 0: end of input
    alu[$0, --, b, buffer]
    alu[$1, --, b, $0]                   ; length
    alu[$2, --, b, $1]                   ; wire length
    alu[$3, --, b, $2]                   ; status
    ctx_arb[put_token]
    scratch[put, $0, WORK_RING, 0, 4], sig_done[done]
    local_csr_wr[same_me_signal, TOKEN2_TO_NEXT]
    ctx_arb[done]
    br[rx_loop]
rx_end:
    immed[$0, MARKER]
    immed[$1, 0]
    immed[$2, 0]
    immed[$3, 1]
    ctx_arb[put_token]
    scratch[put, $0, WORK_RING, 0, 4], sig_done[done]
    local_csr_wr[same_me_signal, TOKEN2_TO_NEXT]
    ctx_arb[done]
    ctx_arb[kill]

;===------------------------------------------------------------------===;
; ME 1: filter
;===------------------------------------------------------------------===;
.me 1
.sig get_token, s1
.sig tx_token, s2
.sig read_done, s4
.sig put_done, s5
.reg length, b3
.reg wire, a3
.reg field, a4
.reg source, b4
    br!=ctx[0, work_loop]
    local_csr_wr[same_me_signal, TOKEN1_TO_SELF]
    local_csr_wr[same_me_signal, TOKEN2_TO_SELF]
work_loop:
    ctx_arb[get_token]
get_work:
    scratch[get, $0, WORK_RING, 0, 4], ctx_swap[read_done]
    alu[buffer, --, b, $0]
    beq[get_work]                        ; nothing queued yet
    local_csr_wr[same_me_signal, TOKEN1_TO_NEXT]
    alu[length, --, b, $1]
    alu[wire, --, b, $2]
    br_bset[$3, 0, work_end]
    ; ip src 10.1.1.1: EtherType (bytes 12-13) is IPv4 and the IPv4 source
    ; (bytes 26-29) is 10.1.1.1; shorter packets do not match.
    alu[--, length, -, 30]
    bcs[reject]                          ; borrow: length < 30
    dram[read, $$0, buffer, 0, 4], ctx_swap[read_done]
    alu_shf[field, --, b, $$3, >>16]
    alu[--, field, -, 0x800]
    bne[reject]
    byte_align[field, $$6, $$7, 2]
    immed[source, SOURCE]
    alu[--, field, -, source]
    bne[reject]
    alu[$0, --, b, buffer]
    alu[$1, --, b, length]
    alu[$2, --, b, wire]
    ctx_arb[tx_token]
    scratch[put, $0, TX_RING, 0, 3], sig_done[put_done]
    local_csr_wr[same_me_signal, TOKEN2_TO_NEXT]
    ctx_arb[put_done]
    br[work_loop]
reject:
    alu[$0, --, b, buffer]
    scratch[put, $0, FREE_RING, 0, 1], sig_done[put_done]
    ctx_arb[tx_token]                    ; keep the token moving
    local_csr_wr[same_me_signal, TOKEN2_TO_NEXT]
    ctx_arb[put_done]
    br[work_loop]
work_end:
    immed[$0, MARKER]
    ctx_arb[tx_token]
    scratch[put, $0, TX_RING, 0, 3], sig_done[put_done]
    local_csr_wr[same_me_signal, TOKEN2_TO_NEXT]
    ctx_arb[put_done]
    ctx_arb[kill]

;===------------------------------------------------------------------===;
; ME 2: transmit
;===------------------------------------------------------------------===;
.me 2
.ctx_enable 1
.reg markers, b5
    immed[markers, 0]
tx_loop:
    scratch[get, $0, TX_RING, 0, 3], ctx_swap[s1]
    alu[buffer, --, b, $0]
    beq[tx_loop]                         ; nothing to send yet
    alu[--, buffer, +, 1]
    beq[tx_marker]                       ; MARKER + 1 == 0
    alu[$0, --, b, $1]                   ; length
    alu[$1, --, b, $2]                   ; wire length
    msf[tx, $0, buffer, 0, 2], ctx_swap[s2]
    alu[$0, --, b, buffer]
    scratch[put, $0, FREE_RING, 0, 1], sig_done[s3]
    ctx_arb[s3]
    br[tx_loop]
tx_marker:
    alu[markers, markers, +, 1]
    alu[--, markers, -, 8]
    bne[tx_loop]
    ctx_arb[kill]
