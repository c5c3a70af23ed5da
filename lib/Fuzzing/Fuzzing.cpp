//===- Fuzzing.cpp - What netvm's libFuzzer harnesses share ---------------===//
//
// The session every compiler harness runs one input in, and the checks
// that turn a broken promise of the libraries into a crash libFuzzer
// saves.
//
//===----------------------------------------------------------------------===//

#include "netvm/Fuzzing/Fuzzing.h"
#include "netvm/Driver/Driver.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;
using namespace netvm;
using namespace netvm::fuzzing;

/// AddressSanitizer's defaults for every harness. LLVM's BumpPtrAllocator
/// poisons a new slab and unpoisons each allocation when the code that
/// inlines it is instrumented; libMLIR.so is not, so an allocation it
/// takes from a slab our code created would be reported as a use after
/// poison. Heap errors are still caught: ASan checks malloc and new
/// itself, whatever the allocators on top of them do.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

void netvm::fuzzing::fail(llvm::StringRef message) {
  llvm::errs() << "netvm fuzzer: " << message << "\n";
  llvm::errs().flush();
  std::abort();
}

static DialectRegistry toolDialects() {
  DialectRegistry registry;
  driver::registerDialects(registry);
  return registry;
}

Session::Session() : ctx(toolDialects(), MLIRContext::Threading::DISABLED) {
  ctx.getDiagEngine().registerHandler([this](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      ++numErrors;
    return success();
  });
}

Session::~Session() = default;

bool Session::failedWithError(bool failed, llvm::StringRef stage) {
  if (failed && numErrors == 0)
    fail((stage + " failed without reporting an error").str());
  return failed;
}

bool Session::optimize(ModuleOp module, driver::OptimizeFor target) {
  // The loaders promise a verified module.
  if (failed(verify(module)))
    fail("the loaded module does not verify");
  if (failedWithError(
          failed(driver::optimize(module, /*optLevel=*/2, nullptr, target)),
          "driver::optimize"))
    return false;
  unsigned before = numErrors;
  if (failed(verify(module)) || numErrors != before)
    fail("the optimized module does not verify");
  return true;
}

OwningOpRef<ModuleOp> Session::compile(const driver::Input &input) {
  OwningOpRef<ModuleOp> module = driver::load(ctx, mgr, input);
  if (failedWithError(!module, "driver::load") || !optimize(*module))
    return nullptr;
  return module;
}
