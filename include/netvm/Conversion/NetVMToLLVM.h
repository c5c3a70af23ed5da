//===- NetVMToLLVM.h - Lowering netvm to the LLVM dialect -------*- C++ -*-===//
//
// Lowers a netvm.application to the LLVM dialect, ready for translation to
// LLVM IR and native code generation:
//
//  - every handler becomes a function `void (netvm_ctx*, netvm_exbuf*, i32)`;
//  - netvm.send becomes direct calls of the connected handlers (NetPE to NetPE
//    "direct linking", with clones for fan-out) or of netvm_rt_emit for sinks;
//  - memory operations become loads and stores in network byte order;
//    netvm.check_bounds, netvm.check and netvm.watchdog become branches to a
//    call of netvm_rt_exception;
//  - a `netvm_app_desc` global describes the application to the runtime
//    (runtime/include/netvm/abi.h).
//
// The application must have been through netvm-insert-bounds-checks (every
// access `in_bounds`); driver::optimize runs it at every level.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_CONVERSION_NETVMTOLLVM_H
#define NETVM_CONVERSION_NETVMTOLLVM_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <memory>
#include <string>

namespace mlir {
class LLVMTypeConverter;
class RewritePatternSet;
} // namespace mlir

namespace netvm {

/// The LLVM function attribute the lowering gives batch entries (loops over
/// a batch of packets, with the application inlined), so that the native
/// backend can tell their loops from the application's.
constexpr const char *kBatchEntryAttribute = "netvm-batch-entry";
/// Marks the per-call entry of a source (netvm_entry_fn) and, with
/// NativeLoweringOptions::separateFastLoops and separateSlowLoops, the
/// fast and slow loops of a batch entry: the pieces the JIT may compile on
/// first use (native::JitEntries, docs/native.md).
constexpr const char *kSourceEntryAttribute = "netvm-source-entry";
constexpr const char *kFastLoopAttribute = "netvm-fast-loop";
constexpr const char *kSlowLoopAttribute = "netvm-slow-loop";

struct NativeLoweringOptions {
  /// Maintain the per-NetPE `runs` and `sent` counters of netvm_pe_state.
  bool countHandlerRuns = true;
  /// Name of the exported descriptor (default: netvm_app_<application>).
  std::string descriptorSymbol;
  /// Info memory size when no NetPE declares more (as the interpreter's).
  uint32_t defaultInfoSize = 64;
  /// Lower connections between NetPEs to netvm_rt_forward calls instead of
  /// direct calls, and list the push handlers in the descriptor, so that
  /// the runtime can run NetPEs on different threads (pipeline mode).
  bool forwardLinks = false;
  /// Put each batch entry's fast loop (the one with the application
  /// inlined) in a function of its own, marked kFastLoopAttribute, which
  /// the batch entry calls once per batch; the JIT can then compile it on
  /// first use while the per-call entries are compiled at once.
  bool separateFastLoops = false;
  /// Likewise for the slow loop (the one that calls the per-call entry for
  /// every packet, when somebody listens), marked kSlowLoopAttribute: the
  /// JIT can then compile it with the per-call entries on first use while
  /// the fast loops are compiled at once. Not with separateFastLoops.
  bool separateSlowLoops = false;
};

/// Per-application facts the conversion patterns need (routes, indices,
/// exception sites). Built by prepareNativeLowering().
struct NativeLoweringState;

/// Turn the structure of the single netvm.application of `module` into LLVM
/// functions (moving the handler bodies into them, still holding netvm,
/// arith, cf and math operations) and record what the patterns need. Fails
/// with a diagnostic if the module is not lowerable.
mlir::FailureOr<std::unique_ptr<NativeLoweringState>>
prepareNativeLowering(mlir::ModuleOp module,
                      const NativeLoweringOptions &options);

/// Patterns converting the netvm operations inside the functions made by
/// prepareNativeLowering() to the LLVM dialect.
void populateNetVMToLLVMConversionPatterns(mlir::LLVMTypeConverter &converter,
                                           mlir::RewritePatternSet &patterns,
                                           NativeLoweringState &state);

/// Emit the application descriptor, once the patterns have run (they number
/// the exception sites it lists).
mlir::LogicalResult finishNativeLowering(mlir::ModuleOp module,
                                         NativeLoweringState &state);

/// All of the above plus the upstream arith, cf and math lowerings: on
/// success `module` holds only LLVM dialect operations.
mlir::LogicalResult lowerToLLVMDialect(mlir::ModuleOp module,
                                       const NativeLoweringOptions &options);

/// The name of the descriptor lowerToLLVMDialect() exports for `appName`
/// when no name is given.
std::string defaultDescriptorSymbol(llvm::StringRef appName);

} // namespace netvm

#endif // NETVM_CONVERSION_NETVMTOLLVM_H
