//===- Passes.h - Conversion passes of netvm --------------------*- C++ -*-===//
//
// Declarations of the conversion passes (generated from Passes.td beside
// this file) and their registration with the pass registry (netvm-opt).
// Drivers that lower without a pass manager call the functions of the
// conversion's own header, e.g. lowerToLLVMDialect (NetVMToLLVM.h).
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_CONVERSION_PASSES_H
#define NETVM_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

#include <string>

namespace netvm {

#define GEN_PASS_DECL
#include "netvm/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "netvm/Conversion/Passes.h.inc"

} // namespace netvm

#endif // NETVM_CONVERSION_PASSES_H
