//===- NetVMOps.td - Operations of the netvm dialect -------*- tablegen -*-===//
//
// Structure (applications, NetPEs, ports, handlers, connections) and the
// operations of handler bodies.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_OPS_TD
#define NETVM_OPS_TD

include "NetVMDialect.td"
include "NetVMAttributes.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Side-effect resources (see NetVMOps.h)
//===----------------------------------------------------------------------===//

def NetVM_PacketMemory : Resource<"::netvm::PacketMemoryResource">;
def NetVM_InfoMemory : Resource<"::netvm::InfoMemoryResource">;
def NetVM_ExceptionState : Resource<"::netvm::ExceptionStateResource">;
def NetVM_CoprocessorState : Resource<"::netvm::CoprocessorResource">;
def NetVM_RandomState : Resource<"::netvm::RandomStateResource">;

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

def NetVM_ApplicationOp : NetVM_Op<"application", [
    Symbol, SymbolTable, IsolatedFromAbove, SingleBlock, NoTerminator,
    NoRegionArguments]> {
  let summary = "a NetVM application: a DAG of NetPEs, sources and sinks";
  let description = [{
    The body holds the application's NetPEs, sources and sinks (all symbols)
    and the connections between them. The verifier checks that every
    connection joins compatible endpoints, that no input port is fed twice
    and that the NetPE graph has no cycle.

    The optional `link_type` is the link-layer header type (libpcap's DLT_
    value) of the frames the application's sources take; without it they
    are Ethernet frames (DLT_EN10MB, 1). The pcap-filter front end sets it
    when it compiles an expression for another link type; tools refuse a
    trace whose link type is not the application's.

    Example:

    ```mlir
    netvm.application @forward {
      netvm.source @in
      netvm.sink @out
      netvm.pe @fwd {
        netvm.port @i push_input
        netvm.port @o push_output
        netvm.handler push(%port) {
          netvm.send @o
        }
      }
      netvm.connect @in -> @fwd::@i
      netvm.connect @fwd::@o -> @out
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       OptionalAttr<I32Attr>:$link_type);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name)>];
  let extraClassDeclaration = [{
    ::mlir::Block *getBodyBlock() { return &getBody().front(); }
    /// The NetPE with the given name, or null.
    PEOp lookupPE(::llvm::StringRef name);
    /// The link type of the frames the sources take (DLT_EN10MB, 1, when
    /// `link_type` is absent).
    int linkTypeOrEthernet() {
      auto type = getLinkType();
      return type ? static_cast<int>(*type) : 1;
    }
  }];
}

def NetVM_SourceOp : NetVM_Op<"source", [Symbol, HasParent<"ApplicationOp">]> {
  let summary = "an entry point of packets into the application";
  let description = [{
    A source is where the outside world (a network interface, a pcap file,
    an application interface) hands packets to the application. Sources are
    numbered in the order they are declared.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let assemblyFormat = "$sym_name attr-dict";
}

def NetVM_SinkOp : NetVM_Op<"sink", [Symbol, HasParent<"ApplicationOp">]> {
  let summary = "an exit of packets out of the application";
  let description = [{
    A sink receives the exchange buffers that leave the application (to a
    network interface, a pcap file, an application interface). Sinks are
    numbered in the order they are declared.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let assemblyFormat = "$sym_name attr-dict";
}

def NetVM_ConnectOp : NetVM_Op<"connect", [HasParent<"ApplicationOp">]> {
  let summary = "a connection from an output endpoint to an input endpoint";
  let description = [{
    Connects `from` (a source, or a NetPE output port written `@pe::@port`)
    to `to` (a sink, or a NetPE input port). Push connections go from a
    source or a `push_output` port to a sink or a `push_input` port; pull
    connections from a source or a `pull_output` port to a sink or a
    `pull_input` port. An output port connected to several inputs fans the
    exchange buffer out: each destination gets its own copy, in the order
    of the connections.
  }];
  let arguments = (ins SymbolRefAttr:$from, SymbolRefAttr:$to);
  let assemblyFormat = "$from `->` $to attr-dict";
}

def NetVM_PEOp : NetVM_Op<"pe", [
    Symbol, SymbolTable, IsolatedFromAbove, HasParent<"ApplicationOp">,
    SingleBlock, NoTerminator, NoRegionArguments]> {
  let summary = "a Network Processing Element";
  let description = [{
    A NetPE: its ports, handlers and resources. Attributes:

    - `datamem_size`: bytes of private data memory (persistent across
      packets, zero-initialised);
    - `info_size`: bytes of info memory this NetPE uses (the application's
      info memory is the largest of its NetPEs', at least the runtime's
      default);
    - `sharedmem_size`: bytes of application-wide shared memory requested
      (all NetPEs that ask must agree);
    - `coprocessors`: the virtual coprocessors this NetPE uses, by name;
    - `initdata`: the read-only initialised data segment.

    Ports are numbered in the order of their `netvm.port` operations; NetIL
    gives a push handler the number of the port the packet arrived on.
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    DefaultValuedAttr<I32Attr, "0">:$datamem_size,
    DefaultValuedAttr<I32Attr, "0">:$info_size,
    DefaultValuedAttr<I32Attr, "0">:$sharedmem_size,
    DefaultValuedAttr<StrArrayAttr, "{}">:$coprocessors,
    OptionalAttr<DenseI8ArrayAttr>:$initdata);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name)>];
  let extraClassDeclaration = [{
    ::mlir::Block *getBodyBlock() { return &getBody().front(); }
    /// The ports in declaration order (the order gives their numbers).
    ::llvm::SmallVector<PortOp, 4> getPorts();
    /// The handler of the given kind, or null.
    HandlerOp getHandler(HandlerKind kind);
    /// The port with the given name, or null.
    PortOp lookupPort(::llvm::StringRef name);
    /// The number of a port (its position among the ports).
    unsigned getPortNumber(PortOp port);
    /// The index of a coprocessor in `coprocessors`, or -1.
    int getCoprocessorIndex(::llvm::StringRef name);
  }];
}

def NetVM_PortOp : NetVM_Op<"port", [Symbol, HasParent<"PEOp">]> {
  let summary = "a port of a NetPE";
  let description = [{
    Declares a port: `push_input` (packets arrive and run the push handler),
    `push_output` (the NetPE sends packets out), `pull_input` (the NetPE
    pulls packets in with `netvm.receive`), `pull_output` (downstream
    NetPEs pull from it, running the pull handler).
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, NetVM_PortKindAttr:$kind);
  let assemblyFormat = "$sym_name `` $kind attr-dict";
  let extraClassDeclaration = [{
    bool isInput() {
      return getKind() == PortKind::PushInput ||
             getKind() == PortKind::PullInput;
    }
    bool isPush() {
      return getKind() == PortKind::PushInput ||
             getKind() == PortKind::PushOutput;
    }
  }];
}

def NetVM_HandlerOp : NetVM_Op<"handler", [
    IsolatedFromAbove, HasParent<"PEOp">,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>]> {
  let summary = "a NetPE handler";
  let description = [{
    The code a NetPE runs: `init` once when the application is instantiated,
    `push` for each exchange buffer arriving on a push input port, `pull`
    when a downstream NetPE pulls from a pull output port. Push and pull
    handlers take one `i32` argument, the number of the port involved.

    The body is an SSA control-flow graph whose blocks end in `cf` branches
    or in one of `netvm.send`, `netvm.drop`, `netvm.ret`, `netvm.trap`.
    `max_stack` and `locals` record the NetIL declarations the handler was
    assembled from (informational once in SSA form).

    ```mlir
    netvm.handler push(%port) {max_stack = 10 : i32} {
      %c12 = arith.constant 12 : i32
      %t = netvm.load packet[%c12] : i16
      ...
    }
    ```
  }];
  let arguments = (ins
    NetVM_HandlerKindAttr:$kind,
    OptionalAttr<I32Attr>:$max_stack,
    OptionalAttr<I32Attr>:$locals);
  let regions = (region AnyRegion:$body);
  let hasCustomAssemblyFormat = 1;
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "HandlerKind":$kind)>];
  let extraClassDeclaration = [{
    /// The port-number argument of push and pull handlers, or null.
    ::mlir::Value getPortArgument() {
      return getKind() == HandlerKind::Init ? ::mlir::Value()
                                            : getBody().getArgument(0);
    }
    PEOp getPE();
  }];
}

//===----------------------------------------------------------------------===//
// Terminators
//===----------------------------------------------------------------------===//

def NetVM_SendOp : NetVM_Op<"send", [Terminator, HasParent<"HandlerOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "send the exchange buffer out of a port and end the handler";
  let description = [{
    Forwards the current exchange buffer (packet and info memory) out of a
    `push_output` port of this NetPE, to the connected NetPE(s) or sink(s),
    and ends the handler (NetIL's `pkt.send`). In a pull handler it ends the
    handler too, returning nothing to the puller.
  }];
  let arguments = (ins FlatSymbolRefAttr:$port);
  let assemblyFormat = "$port attr-dict";
}

def NetVM_DropOp : NetVM_Op<"drop", [Terminator, HasParent<"HandlerOp">]> {
  let summary = "drop the exchange buffer and end the handler";
  let description = [{
    Ends a push handler without forwarding the exchange buffer, which is
    released (NetIL's `ret` in a `.push` segment).
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def NetVM_RetOp : NetVM_Op<"ret", [Terminator, HasParent<"HandlerOp">]> {
  let summary = "end an init or pull handler";
  let description = [{
    Ends an `init` handler, or a `pull` handler, in which case the current
    exchange buffer (if any; see `netvm.receive`, `netvm.exbuf_delete`) is
    handed to the NetPE that pulled (NetIL's `ret`).
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def NetVM_TrapOp : NetVM_Op<"trap", [Terminator, HasParent<"HandlerOp">]> {
  let summary = "raise a NetVM exception";
  let description = [{
    Stops the handler with an exception of the given kind: the exchange
    buffer is dropped and the exception counted.
  }];
  let arguments = (ins NetVM_ExceptionKindAttr:$kind);
  let assemblyFormat = "`` $kind attr-dict";
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

def NetVM_AccessType : AnyTypeOf<[I8, I16, I32]>;

def NetVM_LoadOp : NetVM_Op<"load", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "load 1, 2 or 4 bytes from a memory in network byte order";
  let description = [{
    Reads `sizeof(result)` bytes at byte offset `offset` (unsigned) of the
    memory `space`, most significant byte first. An access that does not lie
    entirely inside the memory raises the space's bounds exception. The
    `in_bounds` unit attribute records that a dominating check already
    proved the access in bounds; the load can then neither fail nor be kept
    alive just for its check. `little_endian` reads the bytes least
    significant first instead (set by `netvm-swap-constant-byte-order`
    where only comparisons with constants use the value).

    ```mlir
    %ethertype = netvm.load packet[%c12] : i16
    ```
  }];
  let arguments = (ins NetVM_MemSpaceAttr:$space, I32:$offset,
                       UnitAttr:$in_bounds, UnitAttr:$little_endian);
  let results = (outs NetVM_AccessType:$result);
  let assemblyFormat = "`` $space `[` $offset `]` attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def NetVM_StoreOp : NetVM_Op<"store", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "store 1, 2 or 4 bytes to a memory in network byte order";
  let description = [{
    Writes `value` at byte offset `offset` of the memory `space`, most
    significant byte first. `initdata` is read-only. An access that does not
    lie entirely inside the memory raises the space's bounds exception.

    ```mlir
    netvm.store %v, data[%c4] : i32
    ```
  }];
  let arguments = (ins NetVM_AccessType:$value, NetVM_MemSpaceAttr:$space,
                       I32:$offset, UnitAttr:$in_bounds);
  let assemblyFormat =
      "$value `,` `` $space `[` $offset `]` attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def NetVM_AtomicAddOp : NetVM_Op<"atomic_add", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "add to a 4-byte word of data or shared memory at once";
  let description = [{
    Adds `value` to the 4-byte word at byte offset `offset` of memory
    `space` (`data` or `shared`), in network byte order, as one operation:
    copies of the NetPE running at once (replicas on several workers) never
    lose an addition. `netvm-recognize-atomics` makes it from a load, an
    add and a store of the same word whose loaded value nothing else reads
    (a counter). An access that does not lie inside the memory raises the
    space's bounds exception.

    ```mlir
    netvm.atomic_add %c1, data[%off] : i32
    ```
  }];
  let arguments = (ins I32:$value, NetVM_MemSpaceAttr:$space, I32:$offset,
                       UnitAttr:$in_bounds);
  let assemblyFormat =
      "$value `,` `` $space `[` $offset `]` attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def NetVM_CopyOp : NetVM_Op<"copy", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "copy bytes from one memory to another";
  let description = [{
    Copies `length` bytes from `src_space[src]` to `dst_space[dst]` (NetIL's
    `dpcopy`, `pdcopy`, `dscopy`, `sdcopy`, `spcopy`, `pscopy`, `ipcopy`).
    Both ranges are checked (source first) before anything is written;
    `in_bounds` records that dominating checks already did.

    ```mlir
    netvm.copy initdata[%c0] -> packet[%c0], %c64
    ```
  }];
  let arguments = (ins NetVM_MemSpaceAttr:$src_space, I32:$src,
                       NetVM_MemSpaceAttr:$dst_space, I32:$dst, I32:$length,
                       UnitAttr:$in_bounds);
  let assemblyFormat = [{
    `` $src_space `[` $src `]` `->` `` $dst_space `[` $dst `]` `,` $length attr-dict
  }];
  let hasVerifier = 1;
}

def NetVM_PacketLengthOp : NetVM_Op<"pkt_len", [
    MemoryEffects<[MemRead<NetVM_PacketMemory>]>]> {
  let summary = "the length of the packet in bytes";
  let description = [{
    NetIL's `pbl`: the number of bytes of packet memory.
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict";
}

def NetVM_WireLengthOp : NetVM_Op<"wire_len", [
    MemoryEffects<[MemRead<NetVM_PacketMemory>]>]> {
  let summary = "the length the packet had on the wire";
  let description = [{
    The packet's length on the wire: at least `netvm.pkt_len`, more when
    the capture kept only the first bytes of the packet (its snapshot
    length). A buffer made by `netvm.exbuf_create` has its own size; none
    at all, 0. NetIL has no instruction for it; the tcpdump front end's
    `len` reads it, as libpcap's does.
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict";
}

def NetVM_InfoLengthOp : NetVM_Op<"info_len", [
    MemoryEffects<[MemRead<NetVM_InfoMemory>]>]> {
  let summary = "the size of the info memory in bytes";
  let description = [{
    The size of the current exchange buffer's info memory: the
    application's info size, or 0 when there is no current exchange buffer.
    Bounds checks on info memory compare against it.
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict";
}

def NetVM_InfoClearOp : NetVM_Op<"info_clear", [
    MemoryEffects<[MemWrite<NetVM_InfoMemory>]>]> {
  let summary = "zero the info memory";
  let assemblyFormat = "attr-dict";
}

def NetVM_TimestampOp : NetVM_Op<"timestamp", [
    MemoryEffects<[MemRead<NetVM_PacketMemory>]>]> {
  let summary = "the arrival timestamp of the packet";
  let description = [{
    The seconds (`tstamp_s`) or microseconds (`tstamp_us`) part of the
    packet's arrival time (for packets read from a capture, the capture
    timestamp, which keeps runs reproducible).
  }];
  let arguments = (ins NetVM_TimeUnitAttr:$unit);
  let results = (outs I32:$result);
  let assemblyFormat = "`` $unit attr-dict";
}

def NetVM_RandomOp : NetVM_Op<"random", [
    MemoryEffects<[MemRead<NetVM_RandomState>, MemWrite<NetVM_RandomState>]>]> {
  let summary = "the next number of the NetPE's pseudo-random sequence";
  let description = [{
    NetIL's `rnd`. Each NetPE instance owns a xorshift32 generator seeded
    with a fixed value, so every execution path yields the same sequence.
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict";
}

def NetVM_CheckOp : NetVM_Op<"check", [
    MemoryEffects<[MemWrite<NetVM_ExceptionState>]>]> {
  let summary = "raise an exception unless a condition holds";
  let description = [{
    Continues when `condition` is true; otherwise stops the handler with an
    exception of the given kind, like `netvm.trap`.

    ```mlir
    netvm.check %nonzero, division_by_zero
    ```
  }];
  let arguments = (ins I1:$condition, NetVM_ExceptionKindAttr:$kind);
  let assemblyFormat = "$condition `,` `` $kind attr-dict";
}

def NetVM_CheckBoundsOp : NetVM_Op<"check_bounds", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "raise a bounds exception unless a range lies in a memory";
  let description = [{
    Continues when the bytes `[offset, offset + extent)` lie inside memory
    `space`, where the extent is the constant after the comma or the value
    of `length`; otherwise stops the handler with the space's bounds
    exception. Offsets and lengths are unsigned and the sum does not wrap.
    `netvm-insert-bounds-checks` puts one in front of every access it
    proves nothing about; keeping the range structured (instead of a
    comparison) lets later passes see which checks cover which.

    ```mlir
    netvm.check_bounds packet[%off], 2        // 2 bytes at %off
    netvm.check_bounds data[%src], %len       // %len bytes at %src
    ```
  }];
  let arguments = (ins NetVM_MemSpaceAttr:$space, I32:$offset,
                       Optional<I32>:$length, I64Attr:$extent);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The constant extent when there is no `length` operand.
    bool hasConstantExtent() { return !getLength(); }
  }];
}

def NetVM_WatchdogOp : NetVM_Op<"watchdog", [
    MemoryEffects<[MemWrite<NetVM_ExceptionState>]>]> {
  let summary = "consume one unit of the packet's loop budget";
  let description = [{
    The software watchdog of the NetVM paper (section 3.3): every packet
    starts with a budget of loop iterations (`netvm-run --watchdog`); each
    execution of this operation uses one, and when none is left the handler
    stops with the `watchdog` exception. The `netvm-insert-watchdog` pass
    puts one at the head of every loop, so straight-line code pays nothing
    and every execution path counts the same iterations.
  }];
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// Computation
//===----------------------------------------------------------------------===//

def NetVM_ByteSwapOp : NetVM_Op<"bswap", [Pure]> {
  let summary = "reverse the bytes of a word";
  let description = [{
    NetIL's `ieswap`: `0xAABBCCDD` becomes `0xDDCCBBAA`.
  }];
  let arguments = (ins I32:$input);
  let results = (outs I32:$result);
  let assemblyFormat = "$input attr-dict";
  let hasFolder = 1;
}

def NetVM_FindBitOp : NetVM_Op<"find_bit", [Pure]> {
  let summary = "the position of the most significant set bit";
  let description = [{
    NetIL's `find.bit`: the index (31 = most significant) of the highest set
    bit of `input`, or `0xFFFFFFFF` when no bit is set.
  }];
  let arguments = (ins I32:$input);
  let results = (outs I32:$result);
  let assemblyFormat = "$input attr-dict";
  let hasFolder = 1;
}

def NetVM_BitOp : NetVM_Op<"bit", [Pure]> {
  let summary = "set, clear, flip or test one bit of a word";
  let description = [{
    With `index` below 32: `set`, `clear` and `flip` return `input` with bit
    `index` set, cleared or inverted; `test` returns 1 if the bit is set and
    0 otherwise, `testn` the opposite. With `index` 32 or more every variant
    returns `input` unchanged (NetIL's `set.bit`, `clear.bit`, `flip.bit`,
    `test.bit`, `testn.bit`).
  }];
  let arguments = (ins NetVM_BitOpKindAttr:$kind, I32:$input, I32:$index);
  let results = (outs I32:$result);
  let assemblyFormat = "`` $kind $input `,` $index attr-dict";
  let hasFolder = 1;
}

def NetVM_HashOp : NetVM_Op<"hash", [Pure]> {
  let summary = "a 32-bit hash of one or more words";
  let description = [{
    Hsieh's SuperFastHash over the bytes of the operands, each word in
    network byte order, first operand first (NetIL's `hash.32` and
    `hash N`).
  }];
  let arguments = (ins Variadic<I32>:$inputs);
  let results = (outs I32:$result);
  let assemblyFormat = "$inputs attr-dict";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def NetVM_ChecksumOp : NetVM_Op<"checksum", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "the ones' complement sum of a range of packet bytes";
  let description = [{
    The RFC 1071 ones' complement sum of the 16-bit big-endian words of
    `packet[offset, offset + length)` (an odd last byte is padded with a
    zero byte), folded to 16 bits and not complemented: a range whose
    Internet checksum is correct sums to `0xFFFF`. Raises `packet_bounds` if
    the range is not inside the packet (NetIL's `chksum.calc`).
  }];
  let arguments = (ins I32:$offset, I32:$length, UnitAttr:$in_bounds);
  let results = (outs I32:$result);
  let assemblyFormat = "$offset `,` $length attr-dict";
}

class NetVM_ChecksumAdjustOp<string mnemonic, string verb, string netil>
    : NetVM_Op<mnemonic, [Pure]> {
  let summary = verb # " a 16-bit word to/from a ones' complement sum";
  let description = [{
    Combines the low 16 bits of `value` with the 16-bit ones' complement sum
    `sum` with end-around carry, as in an RFC 1624 incremental update
    (NetIL's `}] # netil # [{`). The result is a 16-bit sum in an `i32`.
  }];
  let arguments = (ins I32:$sum, I32:$value);
  let results = (outs I32:$result);
  let assemblyFormat = "$sum `,` $value attr-dict";
}

def NetVM_ChecksumAddOp
    : NetVM_ChecksumAdjustOp<"checksum_add", "add", "chksum.add">;
def NetVM_ChecksumSubOp
    : NetVM_ChecksumAdjustOp<"checksum_sub", "subtract", "chksum.sub">;

def NetVM_CrcOp : NetVM_Op<"crc", [Pure]> {
  let summary = "the CRC of the four bytes of a word";
  let description = [{
    The CRC of `input` taken as four bytes in network byte order (NetIL's
    `crc.calc`).
  }];
  let arguments = (ins NetVM_CrcKindAttr:$kind, I32:$input);
  let results = (outs I32:$result);
  let assemblyFormat = "`` $kind $input attr-dict";
}

def NetVM_PacketCrcOp : NetVM_Op<"crc_packet", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "the CRC of a range of packet bytes";
  let description = [{
    The CRC of `packet[offset, offset + length)`; raises `packet_bounds` if
    the range is not inside the packet (NetIL's `crc.calcpkt`).
  }];
  let arguments = (ins NetVM_CrcKindAttr:$kind, I32:$offset, I32:$length,
                       UnitAttr:$in_bounds);
  let results = (outs I32:$result);
  let assemblyFormat = "`` $kind $offset `,` $length attr-dict";
}

def NetVM_FieldCmpOp : NetVM_Op<"field_cmp", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "compare two byte ranges of the packet";
  let description = [{
    Compares `packet[lhs, lhs + length)` with `packet[rhs, rhs + length)` as
    unsigned byte strings (like `memcmp`) and returns whether the relation
    holds. Raises `packet_bounds` if either range is not inside the packet
    (NetIL's `jfield.eq/ne/lt/gt`).
  }];
  let arguments = (ins NetVM_FieldCmpKindAttr:$kind, I32:$lhs, I32:$rhs,
                       I32:$length, UnitAttr:$in_bounds);
  let results = (outs I1:$result);
  let assemblyFormat = "`` $kind $lhs `,` $rhs `,` $length attr-dict";
}

def NetVM_PacketScanOp : NetVM_Op<"pscan", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "find the first occurrence of a value in the packet";
  let description = [{
    Returns the smallest offset `o >= offset` such that the 1, 2 or 4 bytes
    at `packet[o]` equal `value` (network byte order), or `0xFFFFFFFF` if
    there is none. Raises `packet_bounds` if `offset` is not inside the
    packet (NetIL's `pscan.8/16/32`).
  }];
  let arguments = (ins I32:$offset, NetVM_AccessType:$value,
                       UnitAttr:$in_bounds);
  let results = (outs I32:$result);
  let assemblyFormat = "$offset `,` $value attr-dict `:` type($value)";
}

//===----------------------------------------------------------------------===//
// Exchange buffers and ports
//===----------------------------------------------------------------------===//

def NetVM_SendDupOp : NetVM_Op<"send_dup", [HasParent<"HandlerOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "send a copy of the exchange buffer out of a port";
  let description = [{
    Sends a copy of the current exchange buffer out of a `push_output` port
    and continues once the copy has left the application (NetIL's
    `pkt.senddup`).
  }];
  let arguments = (ins FlatSymbolRefAttr:$port);
  let assemblyFormat = "$port attr-dict";
}

def NetVM_ReceiveOp : NetVM_Op<"receive", [HasParent<"HandlerOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "pull an exchange buffer from a pull input port";
  let description = [{
    Replaces the current exchange buffer with one pulled from a
    `pull_input` port: the upstream NetPE's pull handler runs, or the next
    packet of the connected source is taken. If nothing comes back there is
    no current exchange buffer (NetIL's `pkt.receive`).
  }];
  let arguments = (ins FlatSymbolRefAttr:$port);
  let assemblyFormat = "$port attr-dict";
}

def NetVM_ExbufCreateOp : NetVM_Op<"exbuf_create", [HasParent<"HandlerOp">]> {
  let summary = "make a new, zero-filled exchange buffer current";
  let description = [{
    Releases the current exchange buffer, if any, and makes a new one with
    `size` bytes of zeroed packet memory and zeroed info memory current
    (NetIL's `exbuf.create`).
  }];
  let arguments = (ins I32:$size);
  let assemblyFormat = "$size attr-dict";
}

def NetVM_ExbufDeleteOp : NetVM_Op<"exbuf_delete", [HasParent<"HandlerOp">]> {
  let summary = "release the current exchange buffer";
  let description = [{
    Releases the current exchange buffer; there is none afterwards (NetIL's
    `exbuf.delete`).
  }];
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// Coprocessors
//===----------------------------------------------------------------------===//

class NetVM_CoproOp<string mnemonic, list<Trait> traits = []>
    : NetVM_Op<mnemonic, !listconcat(traits,
          [HasParent<"HandlerOp">,
           MemoryEffects<[MemRead<NetVM_CoprocessorState>,
                          MemWrite<NetVM_CoprocessorState>,
                          MemRead<NetVM_PacketMemory>,
                          MemWrite<NetVM_ExceptionState>]>])> {
  let hasVerifier = 1;
}

def NetVM_CoproInitOp : NetVM_CoproOp<"copro_init"> {
  let summary = "initialise a coprocessor from the initialised data";
  let description = [{
    Calls the initialisation of coprocessor `copro` with the initialised data
    starting at byte `offset` of the `initdata` segment and returns its
    status (NetIL's `copro.init`).
  }];
  let arguments = (ins StrAttr:$copro, I32Attr:$offset);
  let results = (outs I32:$result);
  let assemblyFormat = "$copro `,` $offset attr-dict";
}

def NetVM_CoproReadOp : NetVM_CoproOp<"copro_in"> {
  let summary = "read a coprocessor register";
  let arguments = (ins StrAttr:$copro, I32Attr:$reg);
  let results = (outs I32:$result);
  let assemblyFormat = "$copro `[` $reg `]` attr-dict";
}

def NetVM_CoproWriteOp : NetVM_CoproOp<"copro_out"> {
  let summary = "write a coprocessor register";
  let arguments = (ins StrAttr:$copro, I32Attr:$reg, I32:$value);
  let assemblyFormat = "$value `,` $copro `[` $reg `]` attr-dict";
}

def NetVM_CoproInvokeOp : NetVM_CoproOp<"copro_invoke"> {
  let summary = "run a coprocessor operation";
  let description = [{
    Runs operation `opcode` of coprocessor `copro` on its registers and
    internal state. A failing operation raises the `coprocessor` exception.
  }];
  let arguments = (ins StrAttr:$copro, I32Attr:$opcode);
  let assemblyFormat = "$copro `,` $opcode attr-dict";
}

def NetVM_CoproExbufOp : NetVM_CoproOp<"copro_exbuf"> {
  let summary = "give a coprocessor access to the current exchange buffer";
  let arguments = (ins StrAttr:$copro);
  let assemblyFormat = "$copro attr-dict";
}

#endif // NETVM_OPS_TD
