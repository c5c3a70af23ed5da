//===- Native.cpp - Native code for x86-64 and AArch64
//------------------------===//
//
// LLVM IR generation and optimization, object/assembly emission, and the
// process-wide ORC JIT with its persistent compile cache (see
// netvm/Target/Native.h and docs/native.md).
//
//===----------------------------------------------------------------------===//

#include "netvm/Target/Native.h"
#include "netvm/Conversion/NetVMToLLVM.h"
#include "netvm/cache/RunCache.h"
#include "netvm/runtime.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/SCCIterator.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/CompileUtils.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/IPO/AlwaysInliner.h"
#include "llvm/Transforms/IPO/GlobalDCE.h"
#include "llvm/Transforms/InstCombine/InstCombine.h"
#include "llvm/Transforms/Scalar/EarlyCSE.h"
#include "llvm/Transforms/Scalar/InstSimplifyPass.h"
#include "llvm/Transforms/Scalar/JumpThreading.h"
#include "llvm/Transforms/Scalar/LoopPassManager.h"
#include "llvm/Transforms/Scalar/LoopRotation.h"
#include "llvm/Transforms/Scalar/SROA.h"
#include "llvm/Transforms/Scalar/SimplifyCFG.h"

#include <array>
#include <chrono>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

extern "C" {
// The target initialisers we need (libLLVM.so has them all).
void LLVMInitializeX86TargetInfo();
void LLVMInitializeX86Target();
void LLVMInitializeX86TargetMC();
void LLVMInitializeX86AsmPrinter();
void LLVMInitializeAArch64TargetInfo();
void LLVMInitializeAArch64Target();
void LLVMInitializeAArch64TargetMC();
void LLVMInitializeAArch64AsmPrinter();
}

using namespace netvm;
using namespace netvm::native;

static void initializeTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    LLVMInitializeAArch64TargetInfo();
    LLVMInitializeAArch64Target();
    LLVMInitializeAArch64TargetMC();
    LLVMInitializeAArch64AsmPrinter();
  });
}

std::string netvm::native::hostTriple() {
  return llvm::sys::getProcessTriple();
}

bool netvm::native::isSupportedTriple(llvm::StringRef triple,
                                      std::string &why) {
  llvm::Triple t(llvm::Triple::normalize(triple));
  if (t.getArch() != llvm::Triple::x86_64 &&
      t.getArch() != llvm::Triple::aarch64) {
    why = "netvm generates code for x86-64 and AArch64 only, not '" +
          triple.str() + "'";
    return false;
  }
  if (!t.isOSLinux() && !t.isOSDarwin()) {
    why = "unsupported operating system in '" + triple.str() +
          "' (use e.g. x86_64-linux-gnu or aarch64-linux-gnu)";
    return false;
  }
  return true;
}

/// This machine's features, as a target machine's feature string.
static const std::string &hostFeatures() {
  static const std::string features = [] {
    llvm::SubtargetFeatures f;
    for (auto &feature : llvm::sys::getHostCPUFeatures())
      f.AddFeature(feature.first(), feature.second);
    return f.getString();
  }();
  return features;
}

static llvm::CodeGenOptLevel codegenLevel(unsigned level) {
  switch (level) {
  case 0:
    return llvm::CodeGenOptLevel::None;
  case 1:
    return llvm::CodeGenOptLevel::Less;
  case 3:
    return llvm::CodeGenOptLevel::Aggressive;
  default:
    return llvm::CodeGenOptLevel::Default;
  }
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
netvm::native::createTargetMachine(llvm::StringRef tripleName,
                                   unsigned optLevel, llvm::StringRef cpuName) {
  initializeTargets();
  std::string tripleStr = tripleName.empty() ? hostTriple() : tripleName.str();
  std::string why;
  if (!isSupportedTriple(tripleStr, why))
    return llvm::createStringError(why);
  llvm::Triple triple(llvm::Triple::normalize(tripleStr));
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError(error);
  // Code for this machine (no triple: the JIT, netc without --target) may
  // use every feature of its CPU, like -march=native; code for a named
  // target the baseline of that architecture, unless a CPU is named
  // ("native": this machine's, if the architecture matches).
  bool sameArch = triple.getArch() == llvm::Triple(hostTriple()).getArch();
  bool native =
      cpuName.empty() ? tripleName.empty() : cpuName == "native" && sameArch;
  if (cpuName == "native" && !sameArch)
    return llvm::createStringError("--cpu=native needs a target of this "
                                   "machine's architecture");
  std::string cpu = native            ? llvm::sys::getHostCPUName().str()
                    : cpuName.empty() ? std::string("generic")
                                      : cpuName.str();
  if (!native && !cpuName.empty()) {
    std::unique_ptr<llvm::MCSubtargetInfo> info(
        target->createMCSubtargetInfo(triple, "", ""));
    if (!info || !info->isCPUStringValid(cpu))
      return llvm::createStringError("unknown CPU '" + cpu + "' for " +
                                     tripleStr);
  }
  std::string features = native ? hostFeatures() : "";
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, options, llvm::Reloc::PIC_, std::nullopt,
      codegenLevel(optLevel)));
  if (!tm)
    return llvm::createStringError("cannot create a target machine for " +
                                   tripleStr);
  return tm;
}

namespace {
thread_local CompileTimes lastTimes;

double millisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

/// NetPEs call the NetPEs they send to, and LLVM's inliner would inline
/// a chain of N of them transitively into every caller: quadratic code,
/// and each inlined level adds its `noalias` scopes to every access
/// below it (1,000 forwarding NetPEs took a minute). Calls to a function
/// whose chain of callees below it is a multiple of this long stay
/// calls, so the inlined pieces hold at most that many NetPEs.
constexpr unsigned kInlineChain = 8;

/// Marks the calls that end inlined chains (see kInlineChain) noinline.
void boundInlineChains(llvm::Module &module) {
  // height: 1 + the longest chain of defined callees below; computed
  // without recursion, as chains can be thousands long.
  llvm::DenseMap<llvm::Function *, unsigned> height;
  auto callees = [](llvm::Function &f) {
    llvm::SmallVector<llvm::CallBase *> calls;
    for (llvm::Instruction &i : llvm::instructions(f))
      if (auto *call = llvm::dyn_cast<llvm::CallBase>(&i))
        if (llvm::Function *g = call->getCalledFunction())
          if (!g->isDeclaration())
            calls.push_back(call);
    return calls;
  };
  for (llvm::Function &root : module) {
    if (root.isDeclaration() || height.count(&root))
      continue;
    // (function, its calls, next call); a function in progress has
    // height 0, which also ends a (never valid) cycle.
    struct Frame {
      llvm::Function *f;
      llvm::SmallVector<llvm::CallBase *> calls;
      size_t next = 0;
    };
    std::vector<Frame> stack;
    height[&root] = 0;
    stack.push_back({&root, callees(root)});
    while (!stack.empty()) {
      Frame &top = stack.back();
      if (top.next < top.calls.size()) {
        llvm::Function *g = top.calls[top.next++]->getCalledFunction();
        if (height.try_emplace(g, 0).second)
          stack.push_back({g, callees(*g)});
        continue;
      }
      unsigned h = 1;
      for (llvm::CallBase *call : top.calls)
        h = std::max(h, height[call->getCalledFunction()] + 1);
      height[top.f] = h;
      stack.pop_back();
    }
  }
  bool deep = llvm::any_of(
      height, [](const auto &entry) { return entry.second > kInlineChain; });
  if (!deep)
    return;
  for (llvm::Function &f : module)
    for (llvm::Instruction &i : llvm::instructions(f))
      if (auto *call = llvm::dyn_cast<llvm::CallBase>(&i))
        if (llvm::Function *g = call->getCalledFunction())
          if (!g->isDeclaration() && height[g] % kInlineChain == 0 &&
              !call->hasFnAttr(llvm::Attribute::AlwaysInline))
            call->addFnAttr(llvm::Attribute::NoInline);
}

/// The short pipeline for a large module (isLargeModule): what the
/// lowering leaves for LLVM to clean up, in time linear in the code.
llvm::ModulePassManager largeModulePipeline() {
  llvm::ModulePassManager mpm;
  mpm.addPass(llvm::AlwaysInlinerPass());
  llvm::FunctionPassManager fpm;
  fpm.addPass(llvm::SROAPass(llvm::SROAOptions::ModifyCFG));
  fpm.addPass(llvm::EarlyCSEPass());
  fpm.addPass(llvm::SimplifyCFGPass());
  fpm.addPass(llvm::InstSimplifyPass());
  mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
  return mpm;
}

/// The lean pipeline of a small module at -O1 and -O2 (docs/native.md,
/// "LLVM's pipelines"). netvm's optimizer has already folded, merged and
/// pruned the handlers; what is left for LLVM is inlining the lowering's
/// always-inline glue and first NetPE into the entries (and dropping what
/// is then unused), promoting the stack slots, merging the loads the
/// lowering repeats, peephole and CFG clean-up, and threading the
/// verdict's phis into their branches and rotating the batch loop, which
/// keep the batch entry's loop as short as LLVM's -O2 makes it.
llvm::ModulePassManager leanPipeline() {
  llvm::ModulePassManager mpm;
  mpm.addPass(llvm::AlwaysInlinerPass());
  mpm.addPass(llvm::GlobalDCEPass());
  llvm::FunctionPassManager fpm;
  fpm.addPass(llvm::SROAPass(llvm::SROAOptions::ModifyCFG));
  fpm.addPass(llvm::EarlyCSEPass(/*UseMemorySSA=*/true));
  fpm.addPass(llvm::InstCombinePass(
      llvm::InstCombineOptions().setVerifyFixpoint(false)));
  fpm.addPass(llvm::SimplifyCFGPass());
  fpm.addPass(llvm::JumpThreadingPass());
  fpm.addPass(llvm::createFunctionToLoopPassAdaptor(llvm::LoopRotatePass(),
                                                    /*UseMemorySSA=*/true));
  fpm.addPass(llvm::SimplifyCFGPass());
  mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
  return mpm;
}

LLVMPipeline choosePipeline(const llvm::Module &module, unsigned level,
                            bool standard) {
  if (level == 0)
    return LLVMPipeline::Standard;
  if (isLargeModule(module))
    return LLVMPipeline::Short;
  if (level < 3 && !standard && isSmallModule(module))
    return LLVMPipeline::Lean;
  return LLVMPipeline::Standard;
}

void optimizeModule(llvm::Module &module, llvm::TargetMachine &tm,
                    unsigned level, bool standard) {
  if (level > 0)
    boundInlineChains(module);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  LLVMPipeline pipeline = choosePipeline(module, level, standard);
  lastTimes.pipeline = pipeline;
  lastTimes.largeModule = pipeline == LLVMPipeline::Short;
  switch (pipeline) {
  case LLVMPipeline::Short:
    module.addModuleFlag(llvm::Module::Warning, "netvm.large-module", 1);
    searchLargeSwitches(module);
    mpm = largeModulePipeline();
    break;
  case LLVMPipeline::Lean:
    module.addModuleFlag(llvm::Module::Warning, "netvm.lean-module", 1);
    mpm = leanPipeline();
    break;
  case LLVMPipeline::Standard:
    mpm = level == 0 ? pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0)
                     : pb.buildPerModuleDefaultPipeline(
                           level == 1   ? llvm::OptimizationLevel::O1
                           : level == 3 ? llvm::OptimizationLevel::O3
                                        : llvm::OptimizationLevel::O2);
    break;
  }
  mpm.run(module, mam);
}
} // namespace

llvm::Expected<std::unique_ptr<llvm::Module>> netvm::native::generateLLVMIR(
    mlir::ModuleOp module, llvm::LLVMContext &llvmContext,
    llvm::TargetMachine &tm, const CodegenOptions &options) {
  auto start = std::chrono::steady_clock::now();
  if (mlir::failed(lowerToLLVMDialect(module, options.lowering)))
    return llvm::createStringError("lowering to the LLVM dialect failed");
  lastTimes.lowering = millisSince(start);

  start = std::chrono::steady_clock::now();
  mlir::DialectRegistry registry;
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  module.getContext()->appendDialectRegistry(registry);
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, llvmContext, "netvm");
  if (!llvmModule)
    return llvm::createStringError("translation to LLVM IR failed");
  llvmModule->setDataLayout(tm.createDataLayout());
  llvmModule->setTargetTriple(tm.getTargetTriple());
  lastTimes.translation = millisSince(start);

  start = std::chrono::steady_clock::now();
  optimizeModule(*llvmModule, tm, options.optLevel, options.standardPipeline);
  lastTimes.optimization = millisSince(start);
  return llvmModule;
}

llvm::Error netvm::native::emitFile(llvm::Module &llvmModule,
                                    llvm::TargetMachine &tm, FileKind kind,
                                    llvm::raw_pwrite_stream &os) {
  llvm::CodeGenOptLevel level = tm.getOptLevel();
  bool quick =
      level != llvm::CodeGenOptLevel::None && isLargeModule(llvmModule);
  if (quick)
    tm.setOptLevel(llvm::CodeGenOptLevel::None);
  llvm::legacy::PassManager pm;
  bool failed = tm.addPassesToEmitFile(
      pm, os, nullptr,
      kind == FileKind::Object ? llvm::CodeGenFileType::ObjectFile
                               : llvm::CodeGenFileType::AssemblyFile);
  if (!failed)
    pm.run(llvmModule);
  tm.setOptLevel(level);
  if (failed)
    return llvm::createStringError("the target cannot emit this file type");
  return llvm::Error::success();
}

/// The instructions of `llvmModule`, a switch counting one per case,
/// counted up to just above `limit`.
static unsigned moduleWeight(const llvm::Module &llvmModule, unsigned limit) {
  unsigned weight = 0;
  for (const llvm::Function &f : llvmModule)
    for (const llvm::Instruction &i : llvm::instructions(f)) {
      weight += 1;
      if (auto *sw = llvm::dyn_cast<llvm::SwitchInst>(&i))
        weight += sw->getNumCases();
      if (weight > limit)
        return weight;
    }
  return weight;
}

bool netvm::native::isLargeModule(const llvm::Module &llvmModule) {
  if (llvmModule.getModuleFlag("netvm.large-module"))
    return true;
  return moduleWeight(llvmModule, kLargeModuleWeight) > kLargeModuleWeight;
}

/// Whether `f`'s control flow has a cycle.
static bool hasLoop(const llvm::Function &f) {
  for (auto scc = llvm::scc_begin(&f); !scc.isAtEnd(); ++scc)
    if (scc.hasCycle())
      return true;
  return false;
}

bool netvm::native::isSmallModule(const llvm::Module &llvmModule) {
  if (llvmModule.getModuleFlag("netvm.lean-module"))
    return true;
  if (moduleWeight(llvmModule, kSmallModuleWeight) > kSmallModuleWeight)
    return false;
  // The lowering's batch entries are loops over the packets; a loop
  // anywhere else is the application's, which LLVM's loop optimizations
  // may speed up.
  for (const llvm::Function &f : llvmModule)
    if (!f.isDeclaration() && !f.hasFnAttribute(kBatchEntryAttribute) &&
        hasLoop(f))
      return false;
  return true;
}

const char *netvm::native::pipelineName(LLVMPipeline pipeline) {
  switch (pipeline) {
  case LLVMPipeline::Standard:
    return "standard";
  case LLVMPipeline::Lean:
    return "lean";
  case LLVMPipeline::Short:
    return "short";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// The persistent compile cache
//===----------------------------------------------------------------------===//

std::string netvm::native::jitCacheDirectory() {
  return netvm::cache::directory();
}

namespace {
/// Bump when how a key is made changes. (The entries' own format is
/// netvm/cache/RunCache.h's.)
constexpr uint32_t cacheFormat = 2;

/// What makes this compiler's code what it is beyond the IR and the
/// options: the binary (executable or library) netvm's code generation is
/// linked into, by path, size and modification time, so that a rebuilt
/// netvm never loads what an older one compiled.
const std::string &compilerIdentity() {
  static const std::string identity = [] {
    std::string id = "netvm abi " + std::to_string(NETVM_ABI_VERSION) +
                     " llvm " LLVM_VERSION_STRING;
    Dl_info info;
    struct stat st;
    if (dladdr(reinterpret_cast<void *>(&compilerIdentity), &info) &&
        info.dli_fname && stat(info.dli_fname, &st) == 0)
      id += std::string(" binary ") + info.dli_fname + " " +
            std::to_string(st.st_size) + " " + std::to_string(st.st_mtime) +
            "." + std::to_string(st.st_mtim.tv_nsec);
    else
      id += " binary unknown " + std::to_string(getpid()); // never shared
    return id;
  }();
  return identity;
}

/// The key of `module` compiled with `options` for this machine (the
/// target machine createTargetMachine("") makes: it is made on a miss
/// only).
std::array<uint8_t, 32> cacheKey(mlir::ModuleOp module,
                                 const CodegenOptions &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "format " << cacheFormat << "\n"
     << compilerIdentity() << "\n"
     << "target " << hostTriple() << " " << llvm::sys::getHostCPUName() << " "
     << hostFeatures() << "\n"
     << "opt " << options.optLevel << " counters "
     << options.lowering.countHandlerRuns << " info "
     << options.lowering.defaultInfoSize << " forward "
     << options.lowering.forwardLinks << " symbol "
     << options.lowering.descriptorSymbol << " standard-pipeline "
     << options.standardPipeline << "\n";
  // Locations name the exception sites the descriptor carries.
  module->print(os, mlir::OpPrintingFlags().enableDebugInfo(true, false));
  return llvm::SHA256::hash(llvm::arrayRefFromStringRef(text));
}

std::string cachePath(const std::string &dir,
                      const std::array<uint8_t, 32> &key) {
  return netvm::cache::entryPath(dir, key, ".o");
}

/// The object of a valid entry at `path` for `key`, or null (no entry, or
/// one that is truncated, corrupt or for another key).
std::unique_ptr<llvm::MemoryBuffer>
cacheLoad(const std::string &path, const std::array<uint8_t, 32> &key) {
  std::string object, tag;
  if (!netvm::cache::readEntry(path, key, object, tag) || !tag.empty())
    return nullptr;
  return llvm::MemoryBuffer::getMemBufferCopy(object, path);
}

/// Store `object` as the entry for `key` (written aside, then renamed, so
/// that concurrent runs never see half an entry). Failures are ignored:
/// the cache only saves time.
void cacheStore(const std::string &path, const std::array<uint8_t, 32> &key,
                llvm::StringRef object) {
  std::string error;
  (void)netvm::cache::writeEntry(path, key, object.str(), "", error);
}
} // namespace

//===----------------------------------------------------------------------===//
// The process-wide JIT
//===----------------------------------------------------------------------===//

namespace {
class Engine {
public:
  static llvm::Expected<Engine *> get() {
    static std::once_flag once;
    static std::unique_ptr<Engine> engine;
    static std::string error;
    std::call_once(once, [] {
      auto created = create();
      if (created)
        engine = std::move(*created);
      else
        error = llvm::toString(created.takeError());
    });
    if (!engine)
      return llvm::createStringError("cannot start the JIT: " + error);
    return engine.get();
  }

  llvm::Expected<const netvm_app_desc *>
  add(mlir::ModuleOp module, CodegenOptions options, JitObject *keep) {
    std::lock_guard<std::mutex> lock(mutex);
    options.lowering.descriptorSymbol =
        "netvm_jit_app_" + std::to_string(counter++);
    // The cache: hit, the object as it was stored; miss, compiled and
    // stored. Either way the JIT links an object made by emitFile.
    std::string dir = options.useCache ? jitCacheDirectory() : "";
    std::array<uint8_t, 32> key{};
    std::string path;
    std::unique_ptr<llvm::MemoryBuffer> object;
    if (!dir.empty()) {
      auto start = std::chrono::steady_clock::now();
      key = cacheKey(module, options);
      path = cachePath(dir, key);
      object = cacheLoad(path, key);
      lastTimes.cache = millisSince(start);
      lastTimes.cached = object != nullptr;
    }
    auto start = std::chrono::steady_clock::now();
    if (!object) {
      auto tm = targetMachine(options.optLevel);
      if (!tm)
        return tm.takeError();
      lastTimes.setup += millisSince(start);
      llvm::LLVMContext context;
      auto llvmModule = generateLLVMIR(module, context, **tm, options);
      if (!llvmModule)
        return llvmModule.takeError();
      start = std::chrono::steady_clock::now();
      llvm::SmallVector<char, 0> bytes;
      llvm::raw_svector_ostream os(bytes);
      if (llvm::Error err = emitFile(**llvmModule, **tm, FileKind::Object, os))
        return std::move(err);
      llvm::StringRef text(bytes.data(), bytes.size());
      if (!dir.empty())
        cacheStore(path, key, text);
      object = llvm::MemoryBuffer::getMemBufferCopy(
          text, options.lowering.descriptorSymbol);
      lastTimes.codegen = millisSince(start);
    }
    if (keep) {
      keep->object = object->getBuffer().str();
      keep->symbol = options.lowering.descriptorSymbol;
    }
    start = std::chrono::steady_clock::now();
    if (llvm::Error err = jit->addObjectFile(std::move(object)))
      return std::move(err);
    auto symbol = jit->lookup(options.lowering.descriptorSymbol);
    if (!symbol)
      return symbol.takeError();
    lastTimes.linking = millisSince(start);
    lastTimes.codegen += lastTimes.linking;
    return symbol->toPtr<const netvm_app_desc *>();
  }

private:
  /// The target machine of `level`, made on first use (the caller holds
  /// the mutex).
  llvm::Expected<llvm::TargetMachine *> targetMachine(unsigned level) {
    std::unique_ptr<llvm::TargetMachine> &tm =
        targetMachines[std::min(level, 3u)];
    if (!tm) {
      auto created = createTargetMachine("", level);
      if (!created)
        return created.takeError();
      tm = std::move(*created);
    }
    return tm.get();
  }

  static llvm::Expected<std::unique_ptr<Engine>> create() {
    initializeTargets();
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb)
      return jtmb.takeError();
    jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Default);
    // Objects only (add() compiles them itself): the IR layer's target
    // machine is never made.
    auto jit =
        llvm::orc::LLJITBuilder()
            .setJITTargetMachineBuilder(std::move(*jtmb))
            .setCompileFunctionCreator(
                [](llvm::orc::JITTargetMachineBuilder builder)
                    -> llvm::Expected<std::unique_ptr<
                        llvm::orc::IRCompileLayer::IRCompiler>> {
                  return std::make_unique<llvm::orc::ConcurrentIRCompiler>(
                      std::move(builder));
                })
            .create();
    if (!jit)
      return jit.takeError();
    auto engine = std::make_unique<Engine>();
    engine->jit = std::move(*jit);
    llvm::orc::LLJIT &j = *engine->jit;
    // The runtime is linked into this program: give its addresses to the
    // JIT (they are not in the dynamic symbol table).
    llvm::orc::MangleAndInterner mangle(j.getExecutionSession(),
                                        j.getDataLayout());
    llvm::orc::SymbolMap symbols;
    auto define = [&](const char *name, const void *address) {
      symbols[mangle(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                               llvm::JITSymbolFlags::Exported};
    };
#define NETVM_SYMBOL(name) define(#name, reinterpret_cast<const void *>(&name))
    NETVM_SYMBOL(netvm_rt_emit);
    NETVM_SYMBOL(netvm_rt_forward);
    NETVM_SYMBOL(netvm_rt_drop);
    NETVM_SYMBOL(netvm_rt_discard);
    NETVM_SYMBOL(netvm_rt_unconnected);
    NETVM_SYMBOL(netvm_rt_exception);
    NETVM_SYMBOL(netvm_rt_clone);
    NETVM_SYMBOL(netvm_rt_exbuf_create);
    NETVM_SYMBOL(netvm_rt_pull_source);
    NETVM_SYMBOL(netvm_rt_hash);
    NETVM_SYMBOL(netvm_rt_checksum);
    NETVM_SYMBOL(netvm_rt_crc);
    NETVM_SYMBOL(netvm_rt_crc_word);
    NETVM_SYMBOL(netvm_rt_pscan);
    NETVM_SYMBOL(netvm_rt_memcmp);
    NETVM_SYMBOL(netvm_copro_init);
    NETVM_SYMBOL(netvm_copro_read);
    NETVM_SYMBOL(netvm_copro_write);
    NETVM_SYMBOL(netvm_copro_invoke);
    NETVM_SYMBOL(netvm_copro_attach);
#undef NETVM_SYMBOL
    if (llvm::Error err =
            j.getMainJITDylib().define(llvm::orc::absoluteSymbols(symbols)))
      return std::move(err);
    // memmove, memset and friends come from the C library.
    auto process =
        llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
            j.getDataLayout().getGlobalPrefix());
    if (!process)
      return process.takeError();
    j.getMainJITDylib().addGenerator(std::move(*process));
    return engine;
  }

  std::unique_ptr<llvm::orc::LLJIT> jit;
  /// For LLVM's optimizer, one per -O level, made on first use.
  std::unique_ptr<llvm::TargetMachine> targetMachines[4];
  std::mutex mutex;
  unsigned counter = 0;
};
} // namespace

llvm::Expected<const netvm_app_desc *>
netvm::native::jitCompile(mlir::ModuleOp module, const CodegenOptions &options,
                          JitObject *keep) {
  lastTimes = CompileTimes();
  auto start = std::chrono::steady_clock::now();
  auto engine = Engine::get();
  if (!engine)
    return engine.takeError();
  lastTimes.setup = millisSince(start);
  return (*engine)->add(module, options, keep);
}

CompileTimes netvm::native::lastCompileTimes() { return lastTimes; }

llvm::Error netvm::native::linkSharedObject(llvm::StringRef object,
                                            const std::string &path) {
  std::string linker;
  if (const char *named = std::getenv("NETVM_LINKER"); named && *named)
    linker = named;
  else
    linker = "ld";
  if (!llvm::sys::path::is_absolute(linker)) {
    auto found = llvm::sys::findProgramByName(linker);
    if (!found)
      return llvm::createStringError("no linker '" + linker + "' on the PATH");
    linker = *found;
  }
  std::string input = path + ".o";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(input, ec, llvm::sys::fs::OF_None);
    if (ec)
      return llvm::createStringError("cannot write " + input + ": " +
                                     ec.message());
    os << object;
    os.close();
    if (os.has_error()) {
      os.clear_error();
      llvm::sys::fs::remove(input);
      return llvm::createStringError("cannot write " + input);
    }
  }
  // No executable stack (the object has no .note.GNU-stack), and code
  // not padded to a page of its own (a 6 KB file, not 14); undefined
  // symbols (the runtime, memmove) are the loading program's.
  llvm::SmallVector<llvm::StringRef, 10> args = {
      linker, "-shared", "-z", "noexecstack", "-z", "noseparate-code",
      "-o",   path,      input};
  std::optional<llvm::StringRef> quiet[] = {std::nullopt, llvm::StringRef(""),
                                            llvm::StringRef("")};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(linker, args, std::nullopt, quiet,
                                         /*SecondsToWait=*/60, 0, &message);
  llvm::sys::fs::remove(input);
  if (status != 0)
    return llvm::createStringError(linker + " failed" +
                                   (message.empty() ? "" : ": " + message));
  return llvm::Error::success();
}
