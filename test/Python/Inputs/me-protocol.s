; The layout protocol of a compiled application, by hand: one context
; receives on any port into DRAM (info memory 64 bytes before the packet),
; counts packets in NetPE 0's data memory, notes the watchdog budget, and
; acts on the packet's first byte: 1, 2 send on port 0, 1 (tag = packet
; number); 3 raises division_by_zero at location 1; 4 sends to an
; unconnected port; 5 drops a copy and sends on port 1; 6 transmits
; without a tag; 0xff transmits on port 20 (a fault); anything else drops.
; The first run logs an init exception (data_bounds at location 0).
.equ DATA, 0x100       ; NetPE 0: packets seen, watchdog budget
.equ INITDONE, 0x108   ; persistent with the data memory
.equ SHARED, 0x200
.equ EVCOUNT, 0x1000
.equ EVLOG, 0x1010
.equ WATCHDOG, 0x2000

.data sram, SHARED
.word 0xcafebabe, 0x01020304

.me 0
.ctx_enable 1
        immed[a0, 0x10040]        ; the packet buffer
        immed[a1, 0x10000]        ; its info memory
        sram[read, $4, INITDONE, 0, 1], ctx_swap[s1]
        alu[--, --, b, $4]
        bne[loop]
        alu[$12, --, b, 1]
        sram[write, $12, INITDONE, 0, 1], ctx_swap[s1]
        immed[a8, 0xffffffff]     ; no packet
        immed[a9, 1]              ; Exception
        immed[a10, 0x20000]       ; data_bounds in NetPE 0
        immed[a11, 0]             ; location 0
        immed[b0, loop]
        br[event]
loop:
        msf[rx, $0, a0, 0, 4], ctx_swap[s2]
        br_bset[$2, 0, done]
        sram[read, $5, DATA, 0, 1], ctx_swap[s1]
        alu[$13, $5, +, 1]
        sram[read, $7, WATCHDOG, 0, 1], ctx_swap[s1]
        alu[$14, --, b, $7]
        sram[write, $13, DATA, 0, 2], ctx_swap[s1]
        alu[$$0, --, b, $3]       ; info: the tag, then a constant
        immed[a2, 0x11223344]
        alu[$$1, --, b, a2]
        dram[write, $$0, a1, 0, 1], ctx_swap[s3]
        dram[read, $$0, a0, 0, 1], ctx_swap[s3]
        alu_shf[a3, --, b, $$0, >>24]
        alu[--, a3, -, 1]
        beq[port0]
        alu[--, a3, -, 2]
        beq[port1]
        alu[--, a3, -, 3]
        beq[raise]
        alu[--, a3, -, 4]
        beq[unconnected]
        alu[--, a3, -, 5]
        beq[dropcopy]
        alu[--, a3, -, 6]
        beq[untagged]
        alu[--, a3, -, 0xff]
        beq[badport]
        br[loop]
port0:
        immed[a4, 0]
        br[send]
port1:
        immed[a4, 1]
send:
        alu[$4, --, b, $0]
        alu[$5, --, b, $1]
        alu[$6, --, b, a4]
        alu[$7, --, b, $3]
        msf[tx, $4, a0, 0, 4], ctx_swap[s4]
        br[loop]
raise:
        alu[a8, --, b, $3]
        immed[a9, 1]
        immed[a10, 0x50000]       ; division_by_zero in NetPE 0
        immed[a11, 1]             ; location 1
        immed[b0, loop]
        br[event]
unconnected:
        alu[a8, --, b, $3]
        immed[a9, 3]
        immed[a10, 0]
        immed[a11, 0]
        immed[b0, loop]
        br[event]
dropcopy:
        alu[a8, --, b, $3]
        immed[a9, 2]
        immed[a10, 0]
        immed[a11, 0]
        immed[b0, port1]
        br[event]
untagged:
        alu[$4, --, b, $0]
        alu[$5, --, b, $1]
        alu[$6, --, b, 0]
        msf[tx, $4, a0, 0, 3], ctx_swap[s4]
        br[loop]
badport:
        alu[$4, --, b, $0]
        alu[$5, --, b, $1]
        alu[$6, --, b, 20]
        alu[$7, --, b, $3]
        msf[tx, $4, a0, 0, 4], ctx_swap[s4]
        br[loop]
; Appends the event a8..a11 to the log, then returns to b0.
event:
        sram[read, $8, EVCOUNT, 0, 1], ctx_swap[s1]
        alu_shf[a12, --, b, $8, <<4]
        alu[a12, a12, +, EVLOG]
        alu[$8, --, b, a8]
        alu[$9, --, b, a9]
        alu[$10, --, b, a10]
        alu[$11, --, b, a11]
        sram[write, $8, a12, 0, 4], ctx_swap[s1]
        alu[$12, $8, +, 1]
        sram[write, $12, EVCOUNT, 0, 1], ctx_swap[s1]
        rtn[b0]
done:
        ctx_arb[kill]
