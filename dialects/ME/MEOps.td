//===- MEOps.td - Operations of the me dialect --------------*- tablegen -*-===//
//
// One operation per family of rows of MEInstrs.def, plus the function that
// holds a handler and the pseudo-instructions the emitter expands.
//
//===----------------------------------------------------------------------===//

#ifndef ME_OPS_TD
#define ME_OPS_TD

include "MEDialect.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Shifter operand of ALU and ld_field instructions: `shift` is one of
// "<<", ">>", ">>rot", ">>asr" (with `amount` 1-31) or "<<indirect",
// ">>indirect", ">>asr indirect" (the amount is the low 5 bits of `a`).
defvar ME_ShiftAttrs = (ins OptionalAttr<StrAttr>:$shift,
                           OptionalAttr<I32Attr>:$amount);

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

def ME_FuncOp : ME_Op<"func", [Symbol, IsolatedFromAbove]> {
  let summary = "the code of one NetVM handler";
  let description = [{
    The handler `handler` (init, push or pull) of NetPE `pe`, as a
    control-flow graph of `me` operations. Its entry block has no
    arguments: what the packet path hands a handler (the packet's DRAM
    address, its lengths, the input port) is read with `me.arg`.

    ```mlir
    me.func @filter.push attributes {handler = "push", pe = "filter"} {
      %len = me.arg "length"
      %c30 = me.const 30
      me.cmp_br "bcs" "-" %len, %c30, ^short, ^long
      ...
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrAttr:$pe,
                       StrAttr:$handler);
  let regions = (region AnyRegion:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

def ME_ArgOp : ME_Op<"arg", [Pure]> {
  let summary = "a value the packet path hands the handler";
  let description = [{
    `buffer` (the DRAM address of the packet's first byte), `length` (its
    captured length), `wire` (its length on the wire), `port` (the input
    port of the NetPE it arrived on) or `tag` (its number in the input).
    They live in registers the packet path reserves.
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs I32:$result);
  let assemblyFormat = "$name attr-dict";
  let hasVerifier = 1;
}

def ME_ArgSetOp : ME_Op<"arg_set"> {
  let summary = "change a value the packet path handed the handler";
  let description = [{
    Writes `length` or `wire` (a new exchange buffer has new lengths):
    a move into the register the packet path reserves for it.
  }];
  let arguments = (ins StrAttr:$name, I32:$value);
  let assemblyFormat = "$name `,` $value attr-dict";
  let hasVerifier = 1;
}

def ME_ConstOp : ME_Op<"const", [Pure, ConstantLike]> {
  let summary = "a 32-bit constant";
  let description = [{
    Folded into the 16-bit immediate field of the instruction that uses
    it when the value fits and the instruction has no other immediate;
    loaded with `immed` otherwise.
  }];
  let arguments = (ins I32Attr:$value);
  let results = (outs I32:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
}

def ME_HeaderOp : ME_Op<"hdr", [Pure]> {
  let summary = "a word of the prefetched packet header";
  let description = [{
    DRAM transfer register `$$index`: bytes 4 x index to 4 x index + 3 of
    the packet, read into the transfer registers by the packet path when
    the packet arrived (docs/me-backend.md, "Memory placement").
  }];
  let arguments = (ins I32Attr:$index);
  let results = (outs I32:$result);
  let assemblyFormat = "$index attr-dict";
}

def ME_CopyOp : ME_Op<"copy", [Pure]> {
  let summary = "a register move (alu[dst, --, b, src])";
  let arguments = (ins I32:$input);
  let results = (outs I32:$result);
  let assemblyFormat = "$input attr-dict";
}

//===----------------------------------------------------------------------===//
// ALU, immediates, fields and bytes
//===----------------------------------------------------------------------===//

def ME_AluOp : ME_Op<"alu", [Pure]> {
  let summary = "alu and alu_shf: dst = a OP shift(b)";
  let description = [{
    `op` is an ALU operation of the instruction table (`+`, `-`, `b-a`,
    `and`, `~and`, `and~`, `or`, `xor`, `b`, `~b`, `*`, `+carry`,
    `-carry`). `a` is absent for `b` and `~b`. With `shift` the emitter
    writes `alu_shf`.

    ```mlir
    %r = me.alu "+" %x, %y
    %h = me.alu "b" %w {shift = ">>", amount = 16 : i32}
    ```
  }];
  let arguments = !con((ins StrAttr:$op, Optional<I32>:$a, I32:$b),
                       ME_ShiftAttrs);
  let results = (outs I32:$result);
  // `"op" %a, %b` or, for the unary operations, `"op" %b` (a declarative
  // optional group before $b would read a unary operand as `a`).
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

def ME_LdFieldOp : ME_Op<"ld_field", [Pure]> {
  let summary = "ld_field and ld_field_w_clr: load selected bytes";
  let description = [{
    The bytes of `old` selected by `mask` (4 bits, bit 3 = byte 3, the most
    significant) take the bytes of shift(b); without `old` the other bytes
    are cleared (`ld_field_w_clr`).
  }];
  let arguments = !con((ins I32Attr:$mask, Optional<I32>:$old, I32:$b),
                       ME_ShiftAttrs);
  let results = (outs I32:$result);
  let assemblyFormat = "$mask (`into` $old^ `,`)? $b attr-dict";
  let hasVerifier = 1;
}

def ME_ImmedHalfOp : ME_Op<"immed_half", [Pure]> {
  let summary = "immed_w0 and immed_w1: set one half of a register";
  let arguments = (ins I32:$old, I32Attr:$half, I32Attr:$value);
  let results = (outs I32:$result);
  let assemblyFormat = "$half `,` $old `,` $value attr-dict";
  let hasVerifier = 1;
}

def ME_ByteAlignOp : ME_Op<"byte_align", [Pure]> {
  let summary = "the 4 bytes at byte n of the 64-bit concatenation a:b";
  let arguments = (ins I32:$a, I32:$b, I32Attr:$n); // n 4: the byte_index CSR
  let results = (outs I32:$result);
  let assemblyFormat = "$a `,` $b `,` $n attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

def ME_BrOp : ME_Op<"br", [Terminator, Pure,
    DeclareOpInterfaceMethods<BranchOpInterface>]> {
  let summary = "br: always";
  let arguments = (ins Variadic<I32>:$destOperands);
  let successors = (successor AnySuccessor:$dest);
  let assemblyFormat = "$dest (`(` $destOperands^ `:` type($destOperands) `)`)? attr-dict";
}

def ME_CmpBrOp : ME_Op<"cmp_br", [Terminator, Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<BranchOpInterface>]> {
  let summary = "an ALU operation that sets the condition codes, then a branch on them";
  let description = [{
    `alu[--, a, op, b]` followed by the branch `cond` (`beq`, `bne`,
    `bmi`, `bpl`, `bcs`, `bcc`, `bvs`, `bvc`, `blt`, `bge`, `bgt`, `ble`,
    `bhi`, `bls`) to `trueDest`; `falseDest` is reached otherwise (the
    emitter makes it the fall-through when it is laid out next).

    ```mlir
    me.cmp_br "bcs" "-" %len, %c30, ^short, ^long   // len < 30 unsigned
    ```
  }];
  let arguments = (ins StrAttr:$cond, StrAttr:$op, I32:$a, I32:$b,
                       Variadic<I32>:$trueOperands,
                       Variadic<I32>:$falseOperands);
  let successors = (successor AnySuccessor:$trueDest, AnySuccessor:$falseDest);
  let assemblyFormat = [{
    $cond $op $a `,` $b `,` $trueDest (`(` $trueOperands^ `:` type($trueOperands) `)`)?
    `,` $falseDest (`(` $falseOperands^ `:` type($falseOperands) `)`)? attr-dict
  }];
  let hasVerifier = 1;
}

def ME_BitBrOp : ME_Op<"bit_br", [Terminator, Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<BranchOpInterface>]> {
  let summary = "br_bset / br_bclr: branch on one bit of a register";
  let arguments = (ins I32:$input, I32Attr:$bit, BoolAttr:$set,
                       Variadic<I32>:$trueOperands,
                       Variadic<I32>:$falseOperands);
  let successors = (successor AnySuccessor:$trueDest, AnySuccessor:$falseDest);
  let assemblyFormat = [{
    $input `,` $bit `,` $set `,` $trueDest (`(` $trueOperands^ `:` type($trueOperands) `)`)?
    `,` $falseDest (`(` $falseOperands^ `:` type($falseOperands) `)`)? attr-dict
  }];
  let hasVerifier = 1;
}

def ME_ByteBrOp : ME_Op<"byte_br", [Terminator, Pure,
    DeclareOpInterfaceMethods<BranchOpInterface>]> {
  let summary = "br=byte / br!=byte: branch on one byte of a register";
  let arguments = (ins I32:$input, I32Attr:$byte, I32Attr:$value,
                       BoolAttr:$equal);
  let successors = (successor AnySuccessor:$trueDest, AnySuccessor:$falseDest);
  let assemblyFormat = "$input `,` $byte `,` $value `,` $equal `,` $trueDest `,` $falseDest attr-dict";
  let hasVerifier = 1;
}

def ME_SwitchOp : ME_Op<"switch", [Terminator, Pure,
    DeclareOpInterfaceMethods<BranchOpInterface>]> {
  let summary = "a multi-way branch (pseudo-instruction: a compare tree)";
  let description = [{
    Branches to the successor whose case value equals `input`, or to the
    first successor (the default). The emitter writes a chain of
    compare-and-branch instructions (docs/me-backend.md, "Switches").
    Successors take no operands.
  }];
  let arguments = (ins I32:$input, DenseI32ArrayAttr:$cases);
  let successors = (successor VariadicSuccessor<AnySuccessor>:$dests);
  let assemblyFormat = "$input `,` $cases `,` $dests attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pseudo-instructions
//===----------------------------------------------------------------------===//

def ME_WatchdogOp : ME_Op<"watchdog", [Terminator]> {
  let summary = "use one unit of the packet's loop budget";
  let description = [{
    Decrements the packet's watchdog counter (a register the packet path
    reserves and loads from the budget word for every packet) and goes on
    to `next`, or to `expired` when the budget is used up.
  }];
  let successors = (successor AnySuccessor:$next, AnySuccessor:$expired);
  let assemblyFormat = "$next `,` $expired attr-dict";
}

def ME_SetCCOp : ME_Op<"setcc", [Pure]> {
  let summary = "1 if the branch `cond` after alu[--, a, op, b] is taken, else 0";
  let arguments = (ins StrAttr:$cond, StrAttr:$op, I32:$a, I32:$b);
  let results = (outs I32:$result);
  let assemblyFormat = "$cond $op $a `,` $b attr-dict";
  let hasVerifier = 1;
}

def ME_SelectOp : ME_Op<"select", [Pure]> {
  let summary = "trueValue if the branch `cond` after alu[--, a, op, b] is taken, else falseValue";
  let arguments = (ins StrAttr:$cond, StrAttr:$op, I32:$a, I32:$b,
                       I32:$trueValue, I32:$falseValue);
  let results = (outs I32:$result);
  let assemblyFormat = "$cond $op $a `,` $b `,` $trueValue `,` $falseValue attr-dict";
  let hasVerifier = 1;
}

def ME_LocalReadOp : ME_Op<"lm_read"> {
  let summary = "read a word of local memory (*l$indexN[word])";
  let description = [{
    Word `word` (0-15) above the context's local-memory pointer `window`
    (0 or 1). The back end keeps info memory in window 1 while a packet is
    on the ME (docs/me-backend.md, "Memory placement").
  }];
  let arguments = (ins I32Attr:$window, I32Attr:$word);
  let results = (outs I32:$result);
  let assemblyFormat = "$window `,` $word attr-dict";
  let hasVerifier = 1;
}

def ME_LocalWriteOp : ME_Op<"lm_write"> {
  let summary = "write a word of local memory (*l$indexN[word])";
  let arguments = (ins I32Attr:$window, I32Attr:$word, I32:$value);
  let assemblyFormat = "$window `,` $word `,` $value attr-dict";
  let hasVerifier = 1;
}

def ME_PacketReadOp : ME_Op<"pkt_read"> {
  let summary = "read 1, 2 or 4 packet bytes at a computed DRAM address";
  let description = [{
    Reads the quadwords that hold bytes `address` .. `address + size - 1`
    into DRAM transfer registers and extracts them (big-endian, zero- or
    sign-extended): `dram[read]` of 2 quadwords at the address rounded
    down to 8, then `byte_align` by the address's low bits.
  }];
  let arguments = (ins I32:$address, I32Attr:$size, BoolAttr:$isSigned);
  let results = (outs I32:$result);
  let assemblyFormat = "$address `,` $size `,` $isSigned attr-dict";
  let hasVerifier = 1;
}

def ME_PacketFillOp : ME_Op<"pkt_fill"> {
  let summary = "read the 16 aligned packet bytes holding an address";
  let description = [{
    `dram[read]` of the 2 quadwords at `address` rounded down to 16 into
    $$12-$$15, the transfer registers of `pkt_read`, and `t_index` set to
    the register of `address`'s word, for `pkt_next` to take the words in
    turn: a loop over packet words (the checksum) makes one DRAM round
    trip every 16 bytes rather than one a word.
  }];
  let arguments = (ins I32:$address);
  let assemblyFormat = "$address attr-dict";
}

def ME_PacketNextOp : ME_Op<"pkt_next"> {
  let summary = "the next word `pkt_fill` read (alu[dst, --, b, *$$index++])";
  let description = [{
    The DRAM transfer register the context's `t_index` CSR names, then
    `t_index` moves to the next one: after `pkt_fill` and `t_index` set to
    12 + the word within the 16 bytes, the words in address order.
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict";
}

def ME_SendOp : ME_Op<"send", [Terminator]> {
  let summary = "end the handler: the packet leaves through output port `port`";
  let description = [{
    The packet path takes the packet to what the NetPE's output port
    `port` (its number among the NetPE's ports) connects to: a sink's
    transmit queue, the next NetPE on this ME, or a ring to another ME.
  }];
  let arguments = (ins I32Attr:$port);
  let assemblyFormat = "$port attr-dict";
}

def ME_SendCopyOp : ME_Op<"send_copy"> {
  let summary = "a copy of the packet leaves through output port `port`";
  let description = [{
    NetIL's `pkt.senddup` when the port leads to a sink: the packet path
    copies the buffer and its info memory into a buffer of the copy pool
    and puts it on the transmit queue in packet order; the handler goes on
    with the original. The expansion uses only the temporaries, `$15`,
    `$$12`-`$$15` and local memory, so the handler's registers survive it.
  }];
  let arguments = (ins I32Attr:$port);
  let assemblyFormat = "$port attr-dict";
}

def ME_StateTokenOp : ME_Op<"state_token"> {
  let summary = "enter the packet-ordered section before a state access";
  let description = [{
    Put before every access to data or shared memory. When the handlers of
    the application write state, the packet path expands it to: unless
    the packet already holds the state token, wait for it (the previous
    packet passes it on when it is done). Packets thus reach the state in
    packet order while the code before their first access runs in
    parallel. In init handlers and stateless applications it is nothing.
  }];
  let assemblyFormat = "attr-dict";
}

def ME_DropOp : ME_Op<"drop", [Terminator]> {
  let summary = "end the handler: the packet is dropped and its buffer freed";
  let description = [{
    With `logged`, the drop is also logged as an event: in a handler that
    may have logged a drop already (`exbuf.delete`), the host cannot infer
    this one. With `counted` (`pkt.drop`, not `ret`), the NetPE's drop
    counter goes up by one.
  }];
  let arguments = (ins UnitAttr:$logged, UnitAttr:$counted);
  let assemblyFormat = "attr-dict";
}

def ME_RaiseOp : ME_Op<"raise", [Terminator]> {
  let summary = "end the handler with a NetVM exception";
  let description = [{
    Logs an exception event (kind `kind`, a NETVM_EXC_* value, and the
    index of the NetIL location in the application's location table) in
    the event log and drops the packet.
  }];
  let arguments = (ins I32Attr:$kind, I32Attr:$location);
  let assemblyFormat = "$kind `,` $location attr-dict";
}

//===----------------------------------------------------------------------===//
// Local CSRs, CAM, CRC
//===----------------------------------------------------------------------===//

def ME_CsrReadOp : ME_Op<"csr_rd"> {
  let summary = "local_csr_rd: read a local CSR";
  let arguments = (ins StrAttr:$csr);
  let results = (outs I32:$result);
  let assemblyFormat = "$csr attr-dict";
  let hasVerifier = 1;
}

def ME_CsrWriteOp : ME_Op<"csr_wr"> {
  let summary = "local_csr_wr: write a local CSR";
  let arguments = (ins StrAttr:$csr, I32:$value);
  let assemblyFormat = "$csr `,` $value attr-dict";
  let hasVerifier = 1;
}

def ME_CamClearOp : ME_Op<"cam_clear"> {
  let summary = "cam_clear: every entry 0, LRU order 0..15";
  let assemblyFormat = "attr-dict";
}

def ME_CamLookupOp : ME_Op<"cam_lookup"> {
  let summary = "cam_lookup: hit: state << 8 | 0x80 | entry << 3; miss: lru << 3";
  let arguments = (ins I32:$tag);
  let results = (outs I32:$result);
  let assemblyFormat = "$tag attr-dict";
}

def ME_CamWriteOp : ME_Op<"cam_write"> {
  let summary = "cam_write: write an entry's tag and state";
  let arguments = (ins I32:$entry, I32:$tag, I32Attr:$state);
  let assemblyFormat = "$entry `,` $tag `,` $state attr-dict";
}

def ME_CamReadOp : ME_Op<"cam_read"> {
  let summary = "cam_read_tag / cam_read_state: read an entry";
  let arguments = (ins I32:$entry, BoolAttr:$state);
  let results = (outs I32:$result);
  let assemblyFormat = "$entry `,` $state attr-dict";
}

def ME_CamWriteStateOp : ME_Op<"cam_write_state"> {
  let summary = "cam_write_state: change an entry's state";
  let arguments = (ins I32:$entry, I32Attr:$state);
  let assemblyFormat = "$entry `,` $state attr-dict";
}

def ME_CrcOp : ME_Op<"crc"> {
  let summary = "crc_be / crc_le: fold a word into the context's CRC remainder";
  let description = [{
    `kind` is `crc_32` or `crc_32c`; `bigEndian` folds the most significant
    byte first (`crc_be`). The result is a copy of the input.
  }];
  let arguments = (ins StrAttr:$kind, BoolAttr:$bigEndian, I32:$input);
  let results = (outs I32:$result);
  let assemblyFormat = "$kind `,` $bigEndian `,` $input attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Memory commands, hash, receive and transmit, contexts
//===----------------------------------------------------------------------===//

def ME_MemOp : ME_Op<"mem"> {
  let summary = "a memory, ring or media-switch-fabric command";
  let description = [{
    `unit[cmd, $x, a, b, count]` with `unit` `scratch`, `sram`, `dram` or
    `msf` and `cmd` one of the unit's commands in the instruction table.
    The address is `a + b`. `data` are the words of writes, atomics and
    puts (placed in write transfer registers before the command); the
    results are the words a read, a get or a test-and-* returns, in read
    transfer registers. The context swaps out until the command's signal.

    ```mlir
    %w:2 = me.mem "sram" "read" %base, %off count 2 : i32, i32
    me.mem "sram" "write" %base, %off data(%v) count 1
    ```
  }];
  let arguments = (ins StrAttr:$unit, StrAttr:$cmd, I32:$a, I32:$b,
                       Variadic<I32>:$data, I32Attr:$count);
  let results = (outs Variadic<I32>:$results);
  let assemblyFormat = [{
    $unit $cmd $a `,` $b (`data` `(` $data^ `)`)? `count` $count attr-dict (`:` type($results)^)?
  }];
  let hasVerifier = 1;
}

def ME_HashOp : ME_Op<"hash"> {
  let summary = "hash_64: hash 64-bit values (two words each, high first)";
  let arguments = (ins Variadic<I32>:$data);
  let results = (outs Variadic<I32>:$results);
  let assemblyFormat = "$data attr-dict `:` type($results)";
  let hasVerifier = 1;
}

def ME_CtxArbOp : ME_Op<"ctx_arb"> {
  let summary = "ctx_arb: swap the context out";
  let description = [{
    `mode` is `voluntary` (the other contexts go first) or `kill` (the
    context ends). Waiting for signals is part of the commands that raise
    them (`me.mem`), so the handler code has no other use for it.
  }];
  let arguments = (ins StrAttr:$mode);
  let assemblyFormat = "$mode attr-dict";
  let hasVerifier = 1;
}

def ME_NopOp : ME_Op<"nop"> {
  let summary = "nop";
  let assemblyFormat = "attr-dict";
}

#endif // ME_OPS_TD
