//===- NetVMPasses.h - Passes of the netvm dialect --------------*- C++ -*-===//
//
// Declarations of the netvm passes (generated from NetVMPasses.td) and their
// registration with the pass registry (for netvm-opt and netc).
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_DIALECT_NETVMPASSES_H
#define NETVM_DIALECT_NETVMPASSES_H

#include "NetVM/NetVMOps.h"

#include "mlir/Pass/Pass.h"

namespace netvm {

#define GEN_PASS_DECL
#include "NetVM/NetVMPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "NetVM/NetVMPasses.h.inc"

} // namespace netvm

#endif // NETVM_DIALECT_NETVMPASSES_H
