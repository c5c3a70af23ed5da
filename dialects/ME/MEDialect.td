//===- MEDialect.td - The me dialect definition -------------*- tablegen -*-===//
//
// The microengine instruction set as an MLIR dialect: what the netvm-to-me
// instruction selection produces and the register allocator and the
// emitter consume (docs/me-backend.md).
//
//===----------------------------------------------------------------------===//

#ifndef ME_DIALECT_TD
#define ME_DIALECT_TD

include "mlir/IR/OpBase.td"

def ME_Dialect : Dialect {
  let name = "me";
  let cppNamespace = "::netvm::medialect";
  let summary = "The microengine instruction set, before register allocation";
  let description = [{
    The `me` dialect is the instruction set of netvm's IXP-like
    microengines (docs/me-isa.md) in MLIR, at the level where instruction
    selection, register allocation and scheduling work: one operation per
    family of instructions of the instruction table
    (`runtime/include/netvm/emu/MEInstrs.def`), whose row-selecting token
    (the ALU operation, the memory command, the branch condition) is a
    string attribute checked against the table. The table is the one
    source of truth: an ALU operation, a memory command or a branch
    condition the table does not define is refused by the verifier, and
    `MEDialectTest` fails when an instruction of the table has no
    operation here.

    A `me.func` holds the code of one NetVM handler as a control-flow graph.
    Values are 32-bit words in **virtual registers** (`i32`) until the
    register allocator (`allocateRegisters` in lib/Target/ME/CodeGen) gives each a physical one
    in the `reg` attribute of its definition: a GPR of bank A or B
    (`a3`..`a14`, `b3`..`b14`), a transfer register (`$$n` for DRAM reads,
    `$n` for scratch and SRAM reads and the hash unit) or a local-memory
    slot (`*l$index0[n]`, a spill). Constants are `me.const` operations that
    the emitter folds into the instruction's 16-bit immediate field where
    the instruction has one free, and otherwise loads with `immed`.

    Memory commands (`me.mem`) issue the command, swap the context out
    until its signal and yield the words read into transfer registers (the
    signal is allocated with the registers). `me.hdr` names the packet
    header that the packet path prefetches into DRAM transfer registers
    when the packet arrives.

    A few operations are **pseudo-instructions** that the emitter expands
    into short fixed sequences: `me.setcc` and `me.select` (a compare and a
    conditional move), `me.pkt_read` (a packet read at a computed offset),
    `me.switch` (a compare tree) and the handler exits `me.send`,
    `me.drop` and `me.raise`, which become the generated packet path's
    code for the NetPE's connections.
  }];
}

class ME_Op<string mnemonic, list<Trait> traits = []>
    : Op<ME_Dialect, mnemonic, traits>;

#endif // ME_DIALECT_TD
