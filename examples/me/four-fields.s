; four-fields.s - the paper's fifth filter, tcpdump "ip src 10.1.1.1 and
; ip dst 10.2.2.2 and tcp src port 20 and tcp dst port 30" (first
; fragments only), as a receive -> filter -> transmit pipeline
; (pipeline-rx-tx.inc); the NetIL version is examples/filters/four-fields.netil.
; The TCP header follows IPv4 options: its offset comes from the header
; length, and the ports are picked out of a second DRAM read with
; byte_align and the byte_index CSR.

.include "pipeline-rx-tx.inc"

.me 1
.include "pipeline-filter-begin.inc"
.reg field, a4
.reg want, b4
.reg tcp, a5
.reg unit, b5
    alu[--, length, -, 34]
    bcs[reject]
    dram[read, $$0, buffer, 0, 5], ctx_swap[read_done]   ; bytes 0-39
    alu_shf[field, --, b, $$3, >>16]
    alu[--, field, -, 0x800]
    bne[reject]
    byte_align[field, $$6, $$7, 2]       ; source, bytes 26-29
    immed[want, 0x0a010101]
    alu[--, field, -, want]
    bne[reject]
    byte_align[field, $$7, $$8, 2]       ; destination, bytes 30-33
    immed[want, 0x0a020202]
    alu[--, field, -, want]
    bne[reject]
    br!=byte[$$5, 0, 6, reject]          ; protocol, byte 23: TCP
    alu_shf[field, 0x1fff, and, $$5, >>16]   ; fragment offset, bytes 20-21
    bne[reject]
    ; TCP starts at 14 + 4 x (header length in byte 14's low bits); its
    ; ports must be in the captured bytes.
    alu_shf[tcp, 0xf, and, $$3, >>8]
    alu_shf[tcp, 14, +, tcp, <<2]
    alu[field, tcp, +, 4]
    alu[--, length, -, field]
    bcs[reject]
    alu[unit, tcp, and~, 7]              ; the 8-byte unit holding it
    dram[read, $$0, buffer, unit, 2], ctx_swap[read_done]
    local_csr_wr[byte_index, tcp]        ; low 2 bits: byte in the word
    immed[want, (20 << 16) | 30]
    br_bset[tcp, 2, ports_high]
    byte_align[field, $$0, $$1]
    br[ports]
ports_high:
    byte_align[field, $$1, $$2]
ports:
    alu[--, field, -, want]
    bne[reject]
.include "pipeline-filter-end.inc"
