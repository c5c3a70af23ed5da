//===- netc.cpp - The netvm compiler driver -----------------------------------===//
//
// netc assembles NetVM applications (NetIL files, application descriptions,
// or MLIR), checks them, optimizes them and prints the result of the
// requested stage (-emit=). A thin main over lib/Driver.
//
//===----------------------------------------------------------------------===//

#include "netvm/Driver/Driver.h"
#include "netvm/Frontend/NetIL.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory netcCategory("netc options");

static cl::list<std::string>
    inputs(cl::Positional, cl::OneOrMore, cl::cat(netcCategory),
           cl::desc("<input: NetIL files (chained in order), one .nvapp "
                    "application description, or one .mlir file>"));

static cl::opt<std::string> outputFile("o", cl::desc("Output file (default: "
                                                     "standard output)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(netcCategory));

namespace {
enum class Emit { MLIR, None };
} // namespace

static cl::opt<Emit> emit(
    "emit", cl::desc("The stage to print:"), cl::init(Emit::MLIR),
    cl::cat(netcCategory),
    cl::values(clEnumValN(Emit::MLIR, "mlir",
                          "the netvm dialect after assembly and the "
                          "optimizations of the -O level (-O0: exactly what "
                          "the assembler produced)"),
               clEnumValN(Emit::None, "none",
                          "nothing: only check the input (exit status and "
                          "diagnostics)")));

static cl::opt<char> optLevel(
    "O", cl::desc("Optimization level: -O0 (none), -O1, -O2 (default), -O3"),
    cl::Prefix, cl::init('2'), cl::cat(netcCategory));

static cl::opt<std::string> appName(
    "app-name", cl::desc("Name of the application (default: the stem of the "
                         "first input)"),
    cl::value_desc("name"), cl::cat(netcCategory));

static cl::opt<bool> verifyDiagnostics(
    "verify-diagnostics",
    cl::desc("Check that the diagnostics match the expected-error/-warning "
             "annotations in the inputs (for tests)"),
    cl::init(false), cl::cat(netcCategory));

static cl::opt<bool> listOpcodes(
    "list-opcodes",
    cl::desc("Print the NetIL mnemonics netc accepts, one per line, and exit"),
    cl::init(false), cl::cat(netcCategory));

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // Let `--list-opcodes` work without input files.
  for (int i = 1; i < argc; ++i) {
    if (llvm::StringRef(argv[i]) == "--list-opcodes" ||
        llvm::StringRef(argv[i]) == "-list-opcodes") {
      netvm::netil::listMnemonics(
          [](llvm::StringRef m) { llvm::outs() << m << "\n"; });
      return 0;
    }
  }
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  cl::HideUnrelatedOptions({&netcCategory, &cl::getGeneralCategory()});
  cl::ParseCommandLineOptions(
      argc, argv,
      "netc - the netvm compiler\n\n"
      "Assembles NetVM applications written in NetIL (NetBee's syntax),\n"
      "checks them statically (stack discipline, labels, ports, locals,\n"
      "constant-offset memory accesses) and prints them in the netvm MLIR\n"
      "dialect.\n\n"
      "Examples:\n"
      "  netc filter.netil                 print the optimized netvm IR\n"
      "  netc -O0 filter.netil             print the assembler's output\n"
      "  netc -emit=none app.nvapp         only check an application\n"
      "  netc a.netil b.netil -o app.mlir  chain two NetPEs\n");

  if (optLevel < '0' || optLevel > '3') {
    llvm::errs() << "netc: unknown optimization level -O" << optLevel
                 << " (use -O0, -O1, -O2 or -O3)\n";
    return 1;
  }

  DialectRegistry registry;
  netvm::driver::registerDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  llvm::SourceMgr sourceMgr;
  std::unique_ptr<SourceMgrDiagnosticVerifierHandler> verifier;
  std::unique_ptr<SourceMgrDiagnosticHandler> printer;
  if (verifyDiagnostics) {
    // The verifier reads the expected-* annotations of the buffers loaded
    // when it is created: load the inputs first.
    for (const std::string &input : inputs) {
      auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(input, true);
      if (std::error_code ec = buffer.getError()) {
        llvm::errs() << "netc: cannot read '" << input
                     << "': " << ec.message() << "\n";
        return 1;
      }
      sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
    }
    verifier = std::make_unique<SourceMgrDiagnosticVerifierHandler>(
        sourceMgr, &context);
  } else {
    printer = std::make_unique<SourceMgrDiagnosticHandler>(sourceMgr, &context);
  }

  netvm::driver::LoadOptions options;
  options.appName = appName;
  OwningOpRef<ModuleOp> module = netvm::driver::loadApplication(
      context, sourceMgr, inputs, options);
  bool ok = static_cast<bool>(module);
  if (ok)
    ok = succeeded(netvm::driver::optimize(
        *module, optLevel - '0',
        [&](PassManager &pm) { return applyPassManagerCLOptions(pm); }));

  if (verifyDiagnostics)
    return failed(verifier->verify()) ? 1 : 0;
  if (!ok)
    return 1;

  std::string error;
  auto output = openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << "netc: " << error << "\n";
    return 1;
  }
  if (emit == Emit::MLIR)
    module->print(output->os());
  output->keep();
  return 0;
}
