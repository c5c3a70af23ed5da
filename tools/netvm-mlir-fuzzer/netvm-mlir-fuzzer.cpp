//===- netvm-mlir-fuzzer.cpp - Fuzz the MLIR input path to native code ----===//
//
// The input is an .mlir file holding a netvm application: untrusted input,
// loaded as `netc app.mlir` and `netvm-run app.mlir` load it (driver::load:
// the parser with the verifier on, netvm's checks of what engines
// execute). Then both back ends, as the tools run them:
//  - native: optimized at -O2 with the safety passes, lowered to the LLVM
//    dialect, translated to LLVM IR and optimized by LLVM at -O2
//    (native::generateLLVMIR, what the JIT compiles), and code generation
//    to an object in memory (native::emitFile, as `netc -c` and the JIT's
//    compiler do);
//  - microengines: optimized for the MEs (driver::OptimizeFor::ME) and
//    compiled to an image (me::compileApplication, `netc --target=me`),
//    whose refusals must be diagnostics.
// Whatever the verifier accepts must get through without a crash.
//
// The JIT itself is not called: it keeps every application it compiles
// until the process ends, which a fuzzer's millions of inputs would turn
// into an out-of-memory stop. What it adds to the object code is linking.
//
//===----------------------------------------------------------------------===//

#include "netvm/Driver/Driver.h"
#include "netvm/Fuzzing/Fuzzing.h"
#include "netvm/Target/ME/AppLayout.h"
#include "netvm/Target/ME/CodeGen.h"
#include "netvm/Target/Native.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"
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
  mlir::OwningOpRef<mlir::ModuleOp> module =
      driver::load(session.context(), session.sourceMgr(), input);
  if (session.failedWithError(!module, "driver::load"))
    return 0;
  mlir::OwningOpRef<mlir::ModuleOp> forME = module->clone();

  if (session.optimize(*module)) {
    llvm::LLVMContext llvmContext;
    native::CodegenOptions options;
    options.useCache = false;
    auto llvmModule =
        native::generateLLVMIR(*module, llvmContext, *targetMachine(), options);
    if (!llvmModule) {
      llvm::consumeError(llvmModule.takeError());
    } else {
      llvm::SmallVector<char, 0> object;
      llvm::raw_svector_ostream os(object);
      if (llvm::Error e = native::emitFile(**llvmModule, *targetMachine(),
                                           native::FileKind::Object, os))
        fuzzing::fail("code generation failed: " + toString(std::move(e)));
      if (object.empty())
        fuzzing::fail("code generation wrote no object");
    }
  }

  if (session.optimize(*forME, driver::OptimizeFor::ME)) {
    me::CodeGenOptions options;
    options.machine.maxPacketBytes = me::compiledMaxPacketBytes;
    me::CompiledApp compiled;
    session.failedWithError(
        failed(me::compileApplication(*forME, options, compiled)),
        "me::compileApplication");
  }
  return 0;
}
