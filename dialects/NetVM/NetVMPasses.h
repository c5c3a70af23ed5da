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

#include <string>
#include <vector>

namespace netvm {

#define GEN_PASS_DECL
#include "NetVM/NetVMPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "NetVM/NetVMPasses.h.inc"

/// One of netvm's pass statistics, summed over the handlers a pass ran on.
struct PassStatistic {
  std::string pass; // the pass argument, e.g. "netvm-simplify"
  std::string name; // e.g. "masks"
  uint64_t value = 0;
};

/// The statistics counted since the last call, in the order first counted
/// (LLVM's own statistics are compiled out of Debian's release build).
std::vector<PassStatistic> takePassStatistics();
/// Print and reset them, in the style of --mlir-pass-statistics.
void printPassStatistics(llvm::raw_ostream &os);

} // namespace netvm

#endif // NETVM_DIALECT_NETVMPASSES_H
