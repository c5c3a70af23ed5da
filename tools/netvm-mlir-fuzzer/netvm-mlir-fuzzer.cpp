//===- netvm-mlir-fuzzer.cpp - Fuzz the MLIR input path to native code ----===//
//
// The input is an .mlir file holding a netvm application: untrusted input,
// loaded as `netc app.mlir` and `netvm-run app.mlir` load it (driver::load:
// the parser with the verifier on, netvm's checks of what engines
// execute), optimized at -O2 with the safety passes, lowered to the LLVM
// dialect, translated to LLVM IR and optimized by LLVM at -O2
// (native::generateLLVMIR, what the JIT compiles). Whatever the verifier
// accepts must get there without a crash.
//
// The JIT itself is not called: it keeps every application it compiles
// until the process ends, which a fuzzer's millions of inputs would turn
// into an out-of-memory stop. Its code generation from the same LLVM IR is
// LLVM's.
//
//===----------------------------------------------------------------------===//

#include "netvm/Driver/Driver.h"
#include "netvm/Fuzzing/Fuzzing.h"
#include "netvm/Target/Native.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

using namespace netvm;

static llvm::TargetMachine *targetMachine() {
  static std::unique_ptr<llvm::TargetMachine> tm = [] {
    auto created = native::createTargetMachine("", /*optLevel=*/2);
    if (!created)
      fuzzing::fail("cannot create the host's target machine: " +
                    llvm::toString(created.takeError()));
    return std::move(*created);
  }();
  return tm.get();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzzing::Session session;
  driver::Input input;
  input.files = {"fuzz.mlir"};
  input.buffers = {{"fuzz.mlir", fuzzing::asText(data, size).str()}};
  mlir::OwningOpRef<mlir::ModuleOp> module = session.compile(input);
  if (!module)
    return 0;
  llvm::LLVMContext llvmContext;
  native::CodegenOptions options;
  options.useCache = false;
  auto llvmModule =
      native::generateLLVMIR(*module, llvmContext, *targetMachine(), options);
  if (!llvmModule)
    llvm::consumeError(llvmModule.takeError());
  return 0;
}
