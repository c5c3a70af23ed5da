//===- NetVMToLLVMPass.cpp - The netvm-to-llvm pass -----------------------===//
//
// The pass declared in include/netvm/Conversion/Passes.td: its options
// become NativeLoweringOptions, the lowering is lowerToLLVMDialect. netc
// and the JIT call that function directly; the pass is for netvm-opt.
//
//===----------------------------------------------------------------------===//

#include "netvm/Conversion/NetVMToLLVM.h"
#include "netvm/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace netvm {
#define GEN_PASS_DEF_NETVMTOLLVM
#include "netvm/Conversion/Passes.h.inc"
} // namespace netvm

using namespace mlir;
using namespace netvm;

namespace {
struct NetVMToLLVMPass : public netvm::impl::NetVMToLLVMBase<NetVMToLLVMPass> {
  using NetVMToLLVMBase::NetVMToLLVMBase;

  void runOnOperation() override {
    NativeLoweringOptions options;
    options.forwardLinks = forwardLinks;
    options.countHandlerRuns = counters;
    options.defaultInfoSize = infoSize;
    options.descriptorSymbol = descriptor;
    if (failed(lowerToLLVMDialect(getOperation(), options)))
      signalPassFailure();
  }
};
} // namespace
