; host-forward.s - packets from the microengines to the host and back.
;
; ME 0 receives packets into DRAM buffers taken from FREE_RING and puts
; [buffer, length, wire length] on TO_HOST; host-side code (here the relay
; of netvm-emu --host-relay, written against runtime/include/netvm/emu/host.h)
; moves each entry to FROM_HOST; ME 1 transmits what FROM_HOST holds and
; gives the buffers back. At the end of the input ME 0 sends a marker
; (buffer 0xffffffff) the same way, and ME 1 stops when it sees it.
;
;   netvm-emu examples/me/host-forward.s --host-relay=4:5:3 -r in.pcap -w out.pcap

.equ FREE_RING, 0
.equ TO_HOST, 4
.equ FROM_HOST, 5
.ring FREE_RING, 0x0, 128          ; buffer addresses
.ring TO_HOST, 0x400, 256          ; 3 words an entry
.ring FROM_HOST, 0x800, 256

.equ BUFFERS, 16
.equ BUFFER_BASE, 0x10000          ; in DRAM; addresses are never 0
.equ BUFFER_BYTES, 2048
.equ MARKER, 0xffffffff

.reg buffer, a0

.me 0
.ctx_enable 1
    immed[a1, BUFFER_BASE]
    immed[b1, BUFFER_BYTES]
    immed[b2, BUFFERS]
    local_csr_wr[t_index, 0]
fill:
    alu[*$index++, --, b, a1]
    alu[a1, a1, +, b1]
    alu[b2, b2, -, 1]
    bne[fill]
    scratch[put, $0, FREE_RING, 0, BUFFERS], ctx_swap[s1]
rx_loop:
    scratch[get, $0, FREE_RING, 0, 1], ctx_swap[s1]
    alu[buffer, --, b, $0]
    beq[rx_loop]                         ; no free buffer yet
    msf[rx, $0, buffer, 0, 4], ctx_swap[s2]
    br_bset[$2, 0, rx_end]               ; status bit 0: end of input
    alu[$0, --, b, buffer]
    alu[$1, --, b, $0]                   ; length
    alu[$2, --, b, $1]                   ; wire length
    scratch[put, $0, TO_HOST, 0, 3], ctx_swap[s1]
    br[rx_loop]
rx_end:
    immed[$0, MARKER]
    immed[$1, 0]
    immed[$2, 0]
    scratch[put, $0, TO_HOST, 0, 3], ctx_swap[s1]
    ctx_arb[kill]

.me 1
.ctx_enable 1
tx_loop:
    scratch[get, $0, FROM_HOST, 0, 3], ctx_swap[s1]
    alu[buffer, --, b, $0]
    beq[tx_loop]                         ; nothing from the host yet
    alu[--, buffer, +, 1]
    beq[tx_end]                          ; MARKER + 1 == 0
    alu[$0, --, b, $1]                   ; length
    alu[$1, --, b, $2]                   ; wire length
    msf[tx, $0, buffer, 0, 2], ctx_swap[s2]
    alu[$0, --, b, buffer]
    scratch[put, $0, FREE_RING, 0, 1], ctx_swap[s1]
    br[tx_loop]
tx_end:
    ctx_arb[kill]
