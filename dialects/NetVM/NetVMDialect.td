//===- NetVMDialect.td - The netvm dialect definition ------*- tablegen -*-===//
//
// The dialect record shared by every other .td file of the dialect.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_DIALECT_TD
#define NETVM_DIALECT_TD

include "mlir/IR/OpBase.td"

def NetVM_Dialect : Dialect {
  let name = "netvm";
  let cppNamespace = "::netvm";
  let summary = "The Network Virtual Machine in SSA form";
  let description = [{
    The `netvm` dialect expresses the Network Virtual Machine (NetVM) model
    of Morandi, Risso et al. ("Creating portable and efficient packet
    processing applications", 2011) in SSA form.

    An **application** (`netvm.application`) is a directed acyclic graph of
    **NetPEs** (`netvm.pe`) connected port to port (`netvm.connect`), fed by
    **sources** (`netvm.source`) and draining into **sinks** (`netvm.sink`).
    A NetPE declares its **ports** (`netvm.port`), the sizes of its private
    **data memory** and of the **info memory** it uses, the virtual
    **coprocessors** it talks to, an optional read-only **initialised data**
    segment, and up to three **handlers** (`netvm.handler`): `init` runs once
    when the application is instantiated, `push` runs when an exchange buffer
    arrives on a push input port, `pull` runs when a downstream NetPE pulls
    from one of its pull output ports.

    A handler works on one **exchange buffer** at a time: the packet memory
    (the packet bytes) and the info memory (per-packet scratch data that
    travels with the packet from NetPE to NetPE). It keeps persistent state in
    its data memory, may use the application-wide shared memory, and ends by
    sending the exchange buffer out of a port (`netvm.send`), dropping it
    (`netvm.drop`) or returning (`netvm.ret`). A runtime error (an access out
    of bounds, a division by zero, an exhausted watchdog budget) raises a
    NetVM **exception**: the handler stops, the exchange buffer is dropped and
    the exception is counted by kind.

    Handler bodies are ordinary SSA control-flow graphs over `i32` values:
    arithmetic and comparisons use the upstream `arith` dialect, branches and
    multi-way branches (NetIL's `switch`) the upstream `cf` dialect
    (`cf.br`, `cf.cond_br`, `cf.switch`), and `math.ctlz` counts leading
    zeros. The `netvm` operations carry what is specific to packet processing:
    typed accesses to each memory space in network byte order, packet length
    and timestamp, sending and dropping, coprocessor access, hashing, CRC and
    Internet checksums, bit search and bit test/set, field comparison and
    packet scanning.

    All memories are byte addressed and accessed in network (big-endian) byte
    order: a 16-bit load of the bytes `0x08 0x00` yields `0x0800`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::math::MathDialect"
  ];
  let useDefaultAttributePrinterParser = 1;
}

class NetVM_Op<string mnemonic, list<Trait> traits = []>
    : Op<NetVM_Dialect, mnemonic, traits>;

#endif // NETVM_DIALECT_TD
