//===- BenchJit.h - JIT code of an application for the benchmarks -*- C++
//-*-===//
//
// Part of netvm. The benchmarks load NetIL files or an application,
// optimize them and JIT-compile them the same way; this is that one way.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_BENCH_BENCHJIT_H
#define NETVM_BENCH_BENCHJIT_H

#include "netvm/Driver/Driver.h"
#include "netvm/Target/Native.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace netvm::bench {

/// The JIT code of `files` (NetIL files or one .nvapp) optimized at netvm
/// level `netvmLevel` and compiled with `codegen`; null after printing the
/// error, prefixed by `tool`.
inline const netvm_app_desc *jitFiles(mlir::MLIRContext &context,
                                      llvm::ArrayRef<std::string> files,
                                      unsigned netvmLevel,
                                      const native::CodegenOptions &codegen,
                                      llvm::StringRef tool) {
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      driver::loadApplication(context, sourceMgr, files);
  if (!module || mlir::failed(driver::optimize(*module, netvmLevel)))
    return nullptr;
  auto desc = native::jitCompile(*module, codegen);
  if (!desc) {
    llvm::errs() << tool << ": " << llvm::toString(desc.takeError()) << "\n";
    return nullptr;
  }
  return *desc;
}

} // namespace netvm::bench

#endif // NETVM_BENCH_BENCHJIT_H
