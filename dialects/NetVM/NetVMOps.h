//===- NetVMOps.h - Operations of the netvm dialect -------------*- C++ -*-===//
//
// The operations of the netvm dialect and the side-effect resources that
// describe which NetVM memory an operation touches.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_DIALECT_NETVMOPS_H
#define NETVM_DIALECT_NETVMOPS_H

#include "NetVM/NetVMAttributes.h"
#include "NetVM/NetVMDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace netvm {

/// Side-effect resources: one per NetVM memory space, the exception state,
/// the coprocessors and the random generator. Every operation that may
/// raise an exception (checks, watchdogs, coprocessor calls, accesses not
/// proven in bounds) writes the exception state, which keeps it alive (an
/// unused load that would fail must still fail) and ordered with respect to
/// the others.
#define NETVM_RESOURCE(Class, Name)                                            \
  struct Class : public mlir::SideEffects::Resource::Base<Class> {             \
    llvm::StringRef getName() final { return Name; }                           \
  };
NETVM_RESOURCE(PacketMemoryResource, "netvm.packet")
NETVM_RESOURCE(InfoMemoryResource, "netvm.info")
NETVM_RESOURCE(DataMemoryResource, "netvm.data")
NETVM_RESOURCE(SharedMemoryResource, "netvm.shared")
NETVM_RESOURCE(InitDataResource, "netvm.initdata")
NETVM_RESOURCE(ExceptionStateResource, "netvm.exception")
NETVM_RESOURCE(CoprocessorResource, "netvm.coprocessor")
NETVM_RESOURCE(RandomStateResource, "netvm.random")
#undef NETVM_RESOURCE

/// The resource that models memory space `space`.
mlir::SideEffects::Resource *getResource(MemSpace space);

/// "file:line:col" of the NetIL instruction an operation came from: how
/// every engine reports the location of an exception.
std::string locationString(mlir::Location loc);

class PEOp;
class PortOp;
class HandlerOp;

} // namespace netvm

MLIR_DECLARE_EXPLICIT_TYPE_ID(netvm::PacketMemoryResource)
MLIR_DECLARE_EXPLICIT_TYPE_ID(netvm::InfoMemoryResource)
MLIR_DECLARE_EXPLICIT_TYPE_ID(netvm::DataMemoryResource)
MLIR_DECLARE_EXPLICIT_TYPE_ID(netvm::SharedMemoryResource)
MLIR_DECLARE_EXPLICIT_TYPE_ID(netvm::InitDataResource)
MLIR_DECLARE_EXPLICIT_TYPE_ID(netvm::ExceptionStateResource)
MLIR_DECLARE_EXPLICIT_TYPE_ID(netvm::CoprocessorResource)
MLIR_DECLARE_EXPLICIT_TYPE_ID(netvm::RandomStateResource)

#define GET_OP_CLASSES
#include "NetVM/NetVMOps.h.inc"

namespace netvm {
/// Whether `op` is an operation of a handler body that every engine runs:
/// the netvm operations, integer arith, math.ctlz and cf. Handlers made by
/// the front ends and the optimizer hold nothing else; an .mlir input with
/// anything else is refused by every engine alike.
bool isExecutableOp(mlir::Operation *op);
/// Whether the IR shows `v` to be a multiple of 4: a constant, a shift
/// left by 2 or more, a product with such a factor, a sum of two such, or
/// a mask that clears the low two bits (memory offsets of whole words).
bool isMultipleOf4(mlir::Value v);
/// The largest data, info and shared memory a NetPE may declare (NetIL's
/// limit, 64 MiB).
constexpr uint32_t kMaxMemorySize = 64u << 20;
} // namespace netvm

#endif // NETVM_DIALECT_NETVMOPS_H
