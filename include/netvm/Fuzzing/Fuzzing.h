//===- Fuzzing.h - What netvm's libFuzzer harnesses share -------*- C++ -*-===//
//
// The harnesses of tools/netvm-*-fuzzer (docs/fuzzing.md) feed their input
// to the same library entry points the tools call. A diagnostic is a
// normal outcome of a fuzz input; what they report as a failure (a crash,
// to libFuzzer) is a sanitizer report, a crash, or a broken promise of the
// library: a failure without an error saying why (input lost silently), or
// an image that does not read back as it was written.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_FUZZING_FUZZING_H
#define NETVM_FUZZING_FUZZING_H

#include "netvm/Driver/Driver.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>

namespace netvm::fuzzing {

/// Stop the run as libFuzzer reports a crash (the input is saved): print
/// `message` and abort.
[[noreturn]] void fail(llvm::StringRef message);

/// The input's bytes as text (not null-terminated; the libraries take
/// sizes).
inline llvm::StringRef asText(const uint8_t *data, size_t size) {
  return llvm::StringRef(reinterpret_cast<const char *>(data), size);
}

/// One fuzz input's compilation: a fresh context with the dialects the
/// tools register (driver::registerDialects) and no thread pool, a source
/// manager for the input's buffers, and a diagnostic handler that counts
/// the errors and prints nothing (printing would dominate the run).
class Session {
public:
  Session();
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  mlir::MLIRContext &context() { return ctx; }
  llvm::SourceMgr &sourceMgr() { return mgr; }
  unsigned errors() const { return numErrors; }

  /// A stage of the compiler that failed must have said why: fail() if it
  /// did not. Returns `failed`.
  bool failedWithError(bool failed, llvm::StringRef stage);

  /// What netc and netvm-run do after loading an application: run
  /// driver::optimize at -O2 (the tools' default), whose pass manager
  /// verifies the IR after every pass. A loaded module that does not
  /// verify (the loaders promise it does), or a module that does not
  /// verify after a successful pipeline, is a failure. Returns whether the
  /// pipeline succeeded.
  bool optimize(mlir::ModuleOp module,
                driver::OptimizeFor target = driver::OptimizeFor::Native);

  /// Load `input` as the tools do (driver::load; its texts given as
  /// buffers) and optimize it: the optimized module, or null after errors.
  mlir::OwningOpRef<mlir::ModuleOp> compile(const driver::Input &input);

private:
  mlir::MLIRContext ctx;
  llvm::SourceMgr mgr;
  unsigned numErrors = 0;
};

} // namespace netvm::fuzzing

#endif // NETVM_FUZZING_FUZZING_H
