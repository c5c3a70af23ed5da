//===- netc.cpp - The netvm compiler driver
//-----------------------------------===//
//
// netc assembles NetVM applications (NetIL files, application descriptions,
// or MLIR), checks them, optimizes them and prints the result of the
// requested stage (-emit=). A thin main over lib/Driver.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"
#include "netvm/Analysis/Partition.h"
#include "netvm/Analysis/Profile.h"
#include "netvm/Conversion/NetVMToLLVM.h"
#include "netvm/Driver/Driver.h"
#include "netvm/Frontend/NetIL.h"
#include "netvm/Target/ME/CodeGen.h"
#include "netvm/Target/Native.h"
#include "netvm/Transforms/SplitPE.h"
#include "netvm/emu/Image.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

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
    inputs(cl::Positional, cl::ZeroOrMore, cl::cat(netcCategory),
           cl::desc("<input: NetIL files (chained in order), one .nvapp "
                    "application description, or one .mlir file>"));

static cl::opt<std::string> pcapFilter(
    "pcap-filter",
    cl::desc("Compile this tcpdump expression (man pcap-filter) instead of "
             "input files: an application whose NetPE 'filter' sends the "
             "packets it accepts to sink 'match'"),
    cl::value_desc("expression"), cl::cat(netcCategory));
static cl::opt<std::string> pflFilter(
    "pfl",
    cl::desc("Compile this NetPFL filter (docs/netpfl.md) instead of input "
             "files, e.g. 'tcp.dport == 80 and ip.src == 10.1.1.1': an "
             "application whose NetPE 'filter' sends matching packets to "
             "sink 'match' (or 'portN' after 'returnpacket on port N')"),
    cl::value_desc("filter"), cl::cat(netcCategory));
static cl::opt<std::string>
    filterFile("filter-file",
               cl::desc("Read the --pfl or --pcap-filter filter from this file "
                        "instead (errors then give file:line:col); use with "
                        "--filter-language"),
               cl::value_desc("file"), cl::cat(netcCategory));
namespace {
enum class FilterLang { None, PcapFilter, NetPFL };
} // namespace
static cl::opt<FilterLang>
    filterLanguage("filter-language",
                   cl::desc("The language of --filter-file:"),
                   cl::init(FilterLang::None), cl::cat(netcCategory),
                   cl::values(clEnumValN(FilterLang::PcapFilter, "pcap-filter",
                                         "tcpdump expressions"),
                              clEnumValN(FilterLang::NetPFL, "pfl", "NetPFL")));
static cl::opt<std::string> protoDB(
    "protodb",
    cl::desc("The NetPDL protocol database NetPFL filters use (default: "
             "netvm's own, see docs/protodb.md)"),
    cl::value_desc("file.xml"), cl::cat(netcCategory));
static cl::opt<std::string> outputFile("o",
                                       cl::desc("Output file (default: "
                                                "standard output)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(netcCategory));

namespace {
enum class Emit {
  MLIR,
  LLVMDialect,
  LLVM,
  Assembly,
  Object,
  ME,
  Image,
  Partition,
  PartitionDot,
  None
};
} // namespace

static cl::opt<Emit> emit(
    "emit", cl::desc("The stage to output:"), cl::init(Emit::MLIR),
    cl::cat(netcCategory),
    cl::values(
        clEnumValN(Emit::MLIR, "mlir",
                   "the netvm dialect after assembly, the safety "
                   "instrumentation (watchdogs, bounds checks) and the "
                   "optimizations of the -O level"),
        clEnumValN(Emit::LLVMDialect, "llvm-dialect",
                   "the MLIR LLVM dialect after netvm-to-llvm"),
        clEnumValN(Emit::LLVM, "llvm", "LLVM IR, optimized at the -O level"),
        clEnumValN(Emit::Assembly, "asm", "assembly for --target (same as -S)"),
        clEnumValN(Emit::Object, "obj",
                   "an object file for --target (same as -c)"),
        clEnumValN(Emit::ME, "me",
                   "--target=me: the handlers in the me dialect after "
                   "register allocation"),
        clEnumValN(Emit::Image, "image",
                   "--target=me: the loadable microengine image (the "
                   "default with --target=me; -S gives its ME assembly)"),
        clEnumValN(Emit::Partition, "partition",
                   "the pipeline plan for --workers on --target (stages, "
                   "workers, predicted throughput and the bottleneck; "
                   "docs/partitioning.md)"),
        clEnumValN(Emit::PartitionDot, "partition-dot",
                   "the same plan as a Graphviz graph"),
        clEnumValN(Emit::None, "none",
                   "nothing: only check the input (exit status and "
                   "diagnostics)")));

static cl::opt<bool> emitAssembly("S", cl::desc("Same as -emit=asm"),
                                  cl::cat(netcCategory));
static cl::opt<bool> emitObject("c", cl::desc("Same as -emit=obj"),
                                cl::cat(netcCategory));
static cl::opt<std::string> targetTriple(
    "target",
    cl::desc("Target triple for -emit=llvm/asm/obj: x86_64-linux-gnu, "
             "aarch64-linux-gnu, ... (default: this machine), or 'me' for "
             "the microengines of the bundled network-processor emulator "
             "(docs/me-backend.md)"),
    cl::value_desc("triple"), cl::cat(netcCategory));
static cl::opt<std::string> cpuName(
    "cpu",
    cl::desc("CPU to generate code for (default: this machine's CPU without "
             "--target, the architecture's baseline with it; 'native' = this "
             "machine's)"),
    cl::value_desc("name"), cl::cat(netcCategory));
static cl::opt<std::string> descriptorName(
    "descriptor",
    cl::desc("Symbol of the exported application descriptor (default: "
             "netvm_app_<application name>)"),
    cl::value_desc("symbol"), cl::cat(netcCategory));
static cl::opt<bool> meReport(
    "resource-report",
    cl::desc("--target=me: print what each microengine holds (instructions, "
             "spills, bank moves) to stderr"),
    cl::cat(netcCategory));
static cl::opt<std::string> mePlacement(
    "me-placement",
    cl::desc("--target=me: which MEs receive and run the NetPEs, e.g. "
             "'rx=2;*3' (2 receive MEs, every NetPE on 3 replicas); "
             "docs/me-backend.md, \"Placement\""),
    cl::value_desc("spec"), cl::cat(netcCategory));
static cl::opt<bool> meDynamicReplicas(
    "me-dynamic-replicas",
    cl::desc("--target=me: replicas read a replica word (scratch 0x608) at "
             "each round, so that a controller may park and wake them "
             "(docs/me-backend.md); without it they take packets in a fixed "
             "turn, which is faster"),
    cl::cat(netcCategory));
static cl::opt<bool> meCodeRanges(
    "me-code-ranges",
    cl::desc("--target=me: print where each NetPE's code is (ME, first and "
             "end instruction) to stderr, for per-PC profiles"),
    cl::cat(netcCategory));
static cl::opt<bool> noCounters(
    "no-counters",
    cl::desc("Do not maintain the per-NetPE run and send counters in the "
             "generated code"),
    cl::cat(netcCategory));

static cl::opt<unsigned> workers(
    "workers",
    cl::desc("Partition the application over this many workers: host "
             "threads, or with --target=me microengines (receive and "
             "transmit MEs included; 3-8). -emit=partition prints the plan; "
             "with --target=me the image follows it (default: the one-ME "
             "layout)"),
    cl::value_desc("N"), cl::cat(netcCategory));
static cl::opt<unsigned> receiveMEs(
    "receive-mes",
    cl::desc("--workers with --target=me: receive MEs (1-3; default: "
             "chosen by the cost model)"),
    cl::init(0), cl::value_desc("N"), cl::cat(netcCategory));
static cl::opt<unsigned> hostCores(
    "cores",
    cl::desc("--workers on a host target: plan for a machine of this many "
             "cores (threads beyond them share them; default: this "
             "machine's)"),
    cl::init(0), cl::value_desc("N"), cl::cat(netcCategory));
static cl::opt<std::string> profileTrace(
    "profile",
    cl::desc("Calibrate the cost model by running the application once over "
             "this trace: block frequencies from the interpreter, costs "
             "measured on the target's engine (the emulator for --target=me, "
             "JIT code on this host otherwise)"),
    cl::value_desc("trace.pcap"), cl::cat(netcCategory));

static cl::opt<bool> inlinePEs(
    "inline-pes",
    cl::desc("Merge connected NetPEs into one handler before optimizing "
             "(netvm-inline-pes): with --workers, the NetPEs of each stage of "
             "the plan; otherwise every pair that can be merged"),
    cl::cat(netcCategory));

static cl::opt<bool> forwardLinks(
    "forward-links",
    cl::desc("Compile connections between NetPEs as calls into the runtime "
             "(netvm_rt_forward) instead of direct calls, so that a runner "
             "can put NetPEs on different threads (pipeline mode)"),
    cl::cat(netcCategory));
static cl::opt<uint32_t> infoSize(
    "info-size",
    cl::desc("Info memory size when no NetPE declares more (default 64, as "
             "netvm-run's)"),
    cl::init(64), cl::cat(netcCategory));

static cl::opt<char> optLevel(
    "O", cl::desc("Optimization level: -O0 (none), -O1, -O2 (default), -O3"),
    cl::Prefix, cl::init('2'), cl::cat(netcCategory));

static cl::opt<std::string>
    appName("app-name",
            cl::desc("Name of the application (default: the stem of the "
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
  netvm::driver::configureHelp(netcCategory, /*showMLIROptions=*/true);
  cl::ParseCommandLineOptions(
      argc, argv,
      "netc - the netvm compiler\n\n"
      "Assembles NetVM applications written in NetIL (NetBee's syntax),\n"
      "checks them statically (stack discipline, labels, ports, locals,\n"
      "constant-offset memory accesses), optimizes them and prints them in\n"
      "the netvm MLIR dialect, or compiles them to LLVM IR, assembly or an\n"
      "object file for x86-64 or AArch64 (-emit, -S, -c, --target).\n\n"
      "Examples:\n"
      "  netc filter.netil                 the optimized netvm IR\n"
      "  netc -O0 filter.netil             the assembler's output (plus the\n"
      "                                    watchdogs and bounds checks)\n"
      "  netc -emit=none app.nvapp         only check an application\n"
      "  netc a.netil b.netil -o app.mlir  chain two NetPEs\n"
      "  netc -emit=llvm filter.netil      optimized LLVM IR\n"
      "  netc --target=aarch64-linux-gnu -c filter.netil -o filter.o\n"
      "                                    an AArch64 object to link with the\n"
      "                                    runtime (docs/native.md)\n"
      "  netc --target=me -emit=partition --profile t.pcap app.nvapp\n"
      "                                    the plan for 8 microengines, costs\n"
      "                                    measured on the emulator\n"
      "                                    (docs/partitioning.md)\n"
      "  netc --target=me --workers 6 app.nvapp -o app.img\n"
      "                                    an image laid out by that plan\n");

  bool forME = targetTriple == "me";
  if (forME && !emit.getNumOccurrences())
    emit = Emit::Image;
  if (emitAssembly)
    emit = Emit::Assembly;
  if (emitObject)
    emit = Emit::Object;
  if (optLevel < '0' || optLevel > '3') {
    llvm::errs() << "netc: unknown optimization level -O" << optLevel
                 << " (use -O0, -O1, -O2 or -O3)\n";
    return 1;
  }

  DialectRegistry registry;
  netvm::driver::registerDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics point at NetIL source; dumping the IR of the operation
  // would only bury them.
  context.printOpOnDiagnostic(false);
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope timingScope = timing.getRootScope();

  // What to compile: files, or a filter on the command line or in a file.
  netvm::driver::InputOptions in;
  in.files = inputs;
  if (pcapFilter.getNumOccurrences())
    in.pcapFilter = pcapFilter;
  if (pflFilter.getNumOccurrences())
    in.pfl = pflFilter;
  if (filterFile.getNumOccurrences())
    in.filterFile = filterFile;
  if (filterLanguage != FilterLang::None)
    in.filterFileLanguage = filterLanguage == FilterLang::NetPFL
                                ? netvm::driver::FilterLanguage::NetPFL
                                : netvm::driver::FilterLanguage::PcapFilter;
  in.protoDB = protoDB;
  in.appName = appName;
  std::string inputError;
  FailureOr<netvm::driver::Input> input =
      netvm::driver::resolveInput(in, inputError);
  if (failed(input)) {
    llvm::errs() << "netc: " << inputError << "\n";
    return 1;
  }

  llvm::SourceMgr sourceMgr;
  std::unique_ptr<SourceMgrDiagnosticVerifierHandler> verifier;
  std::unique_ptr<netvm::driver::DiagnosticPrinter> printer;
  if (verifyDiagnostics) {
    // The verifier reads the expected-* annotations of the buffers loaded
    // when it is created: load the inputs first.
    for (const std::string &file : input->files) {
      auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(file, true);
      if (std::error_code ec = buffer.getError()) {
        llvm::errs() << "netc: cannot read '" << file << "': " << ec.message()
                     << "\n";
        return 1;
      }
      sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
    }
    verifier = std::make_unique<SourceMgrDiagnosticVerifierHandler>(sourceMgr,
                                                                    &context);
  } else {
    printer = std::make_unique<netvm::driver::DiagnosticPrinter>(
        sourceMgr, context, "netc");
  }
  OwningOpRef<ModuleOp> module =
      netvm::driver::load(context, sourceMgr, *input);
  bool ok = static_cast<bool>(module);
  auto optimize = [&](ModuleOp m) {
    return succeeded(netvm::driver::optimize(
        m, optLevel - '0',
        [&](PassManager &pm) {
          pm.enableTiming(timingScope);
          return applyPassManagerCLOptions(pm);
        },
        forME ? netvm::driver::OptimizeFor::ME
              : netvm::driver::OptimizeFor::Native));
  };

  // The plan (docs/partitioning.md): for -emit=partition, and for the ME
  // image with --workers. It is made on the optimized application; with
  // --inline-pes the NetPEs of each stage are then merged in the
  // application as loaded, which is optimized after.
  bool wantPlan = emit == Emit::Partition || emit == Emit::PartitionDot ||
                  (forME && workers.getNumOccurrences());
  netvm::analysis::CostModel model;
  netvm::analysis::Plan plan;
  std::string error;
  bool optimized = false;
  if (ok && wantPlan) {
    // The application as loaded: a fat NetPE that limits the plan is split
    // (netvm-split-pe) in copies of it, before packet-check versioning
    // duplicates its blocks.
    OwningOpRef<ModuleOp> loaded = module->clone();
    ModuleOp planned = *module;
    ok = optimize(planned);
    optimized = !inlinePEs;
    if (ok) {
      auto target = forME ? netvm::analysis::CostTarget::ME
                          : netvm::analysis::CostTarget::Native;
      netvm::analysis::ProfileOptions profileOptions;
      profileOptions.target = target;
      profileOptions.trace = profileTrace;
      profileOptions.optLevel = optLevel - '0';
      profileOptions.defaultInfoSize = infoSize;
      netvm::analysis::Profile profile;
      bool profiled = !profileTrace.empty();
      if (profiled && !netvm::analysis::collectProfile(planned, profileOptions,
                                                       profile, error)) {
        llvm::errs() << "netc: --profile " << profileTrace << ": " << error
                     << "\n";
        return 1;
      }
      netvm::analysis::PartitionOptions po;
      po.workers = workers.getNumOccurrences() ? workers : forME ? 8u : 1u;
      po.receiveWorkers = receiveMEs;
      po.cores = hostCores;
      netvm::SplitPlanner planner;
      planner.optimize = [&](ModuleOp m) { return success(optimize(m)); };
      planner.profile = [&](ModuleOp m, netvm::analysis::Profile &p,
                            std::string &err) {
        return netvm::analysis::collectProfile(m, profileOptions, p, err);
      };
      OwningOpRef<ModuleOp> splitLoaded;
      if (!netvm::partitionWithSplit(planned, *loaded, planner, target, po,
                                     profiled ? &profile : nullptr, model, plan,
                                     error, &splitLoaded)) {
        llvm::errs() << "netc: " << error << "\n";
        return 1;
      }
      // --inline-pes merges the NetPEs of each stage in the application as
      // loaded (split, if the plan split one), then optimizes it.
      if (inlinePEs) {
        module = splitLoaded ? std::move(splitLoaded) : std::move(loaded);
        netvm::analysis::annotateStages(netvm::driver::getApplication(*module),
                                        model, plan);
      }
    }
  }
  if (ok && inlinePEs) {
    PassManager pm(&context, netvm::ApplicationOp::getOperationName());
    pm.addPass(netvm::createNetVMInlinePEs());
    ok = succeeded(pm.run(netvm::driver::getApplication(*module)));
  }
  if (ok && !optimized)
    ok = optimize(*module);

  // MLIR's statistics report is empty with Debian's release LLVM (its
  // counters are compiled out): netvm's passes keep their own.
  if (auto *stats =
          llvm::cl::getRegisteredOptions().lookup("mlir-pass-statistics");
      stats && stats->getNumOccurrences())
    netvm::printPassStatistics(llvm::errs());

  if (verifyDiagnostics)
    return failed(verifier->verify()) ? 1 : 0;
  if (!ok)
    return 1;

  if (emit == Emit::None)
    return 0;

  if (emit == Emit::Object && outputFile == "-") {
    llvm::errs() << "netc: -c needs an output file (-o app.o)\n";
    return 1;
  }
  auto output = openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << "netc: " << error << "\n";
    return 1;
  }
  // Keep the output if all of it was written; a failed write or close is
  // an error naming the file (not LLVM's fatal "IO failure").
  auto finish = [&]() {
    output->os().close();
    if (output->os().has_error()) {
      llvm::errs() << "netc: " << output->getFilename() << ": "
                   << output->os().error().message() << "\n";
      output->os().clear_error();
      return 1;
    }
    output->keep();
    return 0;
  };
  if (emit == Emit::MLIR) {
    module->print(output->os());
    return finish();
  }
  if (emit == Emit::Partition || emit == Emit::PartitionDot) {
    if (emit == Emit::Partition)
      netvm::analysis::printPlan(model, plan, output->os());
    else
      netvm::analysis::printPlanDot(model, plan, output->os());
    return finish();
  }

  if (forME) {
    if (emit != Emit::ME && emit != Emit::Image && emit != Emit::Assembly) {
      llvm::errs() << "netc: --target=me writes an image (default), its ME "
                      "assembly (-S) or the me dialect (-emit=me)\n";
      return 1;
    }
    netvm::me::CodeGenOptions meOptions;
    meOptions.defaultInfoSize = infoSize;
    meOptions.machine.maxPacketBytes = netvm::me::compiledMaxPacketBytes;
    meOptions.dynamicReplicas = meDynamicReplicas;
    if (!mePlacement.empty()) {
      if (workers.getNumOccurrences()) {
        llvm::errs() << "netc: --me-placement and --workers both choose the "
                        "placement: give one\n";
        return 1;
      }
      if (!netvm::me::parsePlacement(mePlacement, meOptions.placement, error)) {
        llvm::errs() << "netc: --me-placement: " << error << "\n";
        return 1;
      }
    } else if (wantPlan) {
      meOptions.placement =
          inlinePEs ? netvm::analysis::placementOfStages(
                          netvm::driver::getApplication(*module), plan)
                    : netvm::analysis::toPlacement(model, plan);
    }
    netvm::me::CompiledApp compiled;
    OwningOpRef<ModuleOp> meIR;
    if (failed(
            netvm::me::compileApplication(*module, meOptions, compiled, &meIR)))
      return 1;
    if (meReport)
      for (const netvm::me::MEReport &r : compiled.report)
        llvm::errs() << "me" << r.me << " (" << r.role
                     << "): " << r.instructions << " of " << r.controlStore
                     << " instructions, " << r.spills << " spills, "
                     << r.bankMoves << " bank moves\n";
    if (meCodeRanges)
      for (const netvm::me::AppLayout::CodeRange &r :
           compiled.layout.codeRanges)
        llvm::errs() << "pe " << compiled.layout.pes[r.pe] << ": me" << r.me
                     << " [" << r.begin << ", " << r.end << ")\n";
    if (emit == Emit::ME) {
      meIR->print(output->os());
    } else if (emit == Emit::Assembly) {
      output->os() << compiled.assembly;
    } else {
      if (outputFile == "-") {
        llvm::errs() << "netc: --target=me needs an output file (-o app.img), "
                        "or -S for its assembly\n";
        return 1;
      }
      std::vector<uint8_t> bytes = netvm::me::writeImage(compiled.image);
      output->os().write(reinterpret_cast<const char *>(bytes.data()),
                         bytes.size());
    }
    return finish();
  }

  netvm::native::CodegenOptions codegen;
  codegen.optLevel = optLevel - '0';
  codegen.lowering.countHandlerRuns = !noCounters;
  codegen.lowering.descriptorSymbol = descriptorName;
  codegen.lowering.forwardLinks = forwardLinks;
  codegen.lowering.defaultInfoSize = infoSize;
  if (emit == Emit::LLVMDialect) {
    if (failed(netvm::lowerToLLVMDialect(*module, codegen.lowering)))
      return 1;
    module->print(output->os());
    return finish();
  }
  auto tm = netvm::native::createTargetMachine(targetTriple, codegen.optLevel,
                                               cpuName);
  if (!tm) {
    llvm::errs() << "netc: " << llvm::toString(tm.takeError()) << "\n";
    return 1;
  }
  llvm::LLVMContext llvmContext;
  auto llvmModule =
      netvm::native::generateLLVMIR(*module, llvmContext, **tm, codegen);
  if (!llvmModule) {
    llvm::errs() << "netc: " << llvm::toString(llvmModule.takeError()) << "\n";
    return 1;
  }
  if (emit == Emit::LLVM) {
    (*llvmModule)->print(output->os(), nullptr);
  } else if (llvm::Error err = netvm::native::emitFile(
                 **llvmModule, **tm,
                 emit == Emit::Object ? netvm::native::FileKind::Object
                                      : netvm::native::FileKind::Assembly,
                 output->os())) {
    llvm::errs() << "netc: " << llvm::toString(std::move(err)) << "\n";
    return 1;
  }
  return finish();
}
