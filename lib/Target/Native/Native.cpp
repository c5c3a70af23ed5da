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
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/CompileUtils.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/IndirectionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/LazyReexports.h"
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
#include "llvm/Transforms/Utils/Cloning.h"

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <functional>
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
  if (level > 0) {
    compareSmallSwitches(module);
  }
}
} // namespace

namespace {
/// Lowering to the LLVM dialect and translation to LLVM IR: the first half
/// of generateLLVMIR.
llvm::Expected<std::unique_ptr<llvm::Module>>
translateToLLVMIR(mlir::ModuleOp module, llvm::LLVMContext &llvmContext,
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
  return llvmModule;
}

/// The deferred entries split off a module (splitDeferred): their stubs'
/// names, which the module declares, and a module of their own, as bitcode,
/// defining each as its stub's name with kImplSuffix.
struct DeferredPart {
  std::vector<std::string> names;
  std::string bitcode;
};
constexpr const char *kImplSuffix = "$impl";

/// Move the definitions of the functions of `module` marked with one of
/// `attributes` into a module of their own: `module` keeps external
/// declarations of them, renamed after `descriptor` (unique in the JIT), and
/// the new module defines them (with kImplSuffix) and internal copies of every
/// other global, of which its optimizer keeps what they use. Everything
/// in the application's code is a function or a constant, so copies
/// behave as the originals.
std::optional<DeferredPart>
splitDeferred(llvm::Module &module, llvm::ArrayRef<llvm::StringRef> attributes,
              llvm::StringRef descriptor) {
  std::vector<llvm::Function *> moved;
  for (llvm::Function &f : module)
    if (!f.isDeclaration() &&
        llvm::any_of(attributes, [&](llvm::StringRef attribute) {
          return f.hasFnAttribute(attribute);
        }))
      moved.push_back(&f);
  if (moved.empty())
    return std::nullopt;
  for (llvm::GlobalVariable &g : module.globals())
    if (!g.isConstant())
      return std::nullopt;
  DeferredPart part;
  for (llvm::Function *f : moved) {
    f->setName(descriptor + "." + f->getName());
    part.names.push_back(f->getName().str());
  }
  // What the deferred entries use, directly or through constants and
  // other functions: the copy holds only that (the batch entries, the
  // descriptor and its tables stay behind).
  llvm::SmallPtrSet<const llvm::GlobalValue *, 32> needed;
  llvm::SmallPtrSet<const llvm::Constant *, 32> seen;
  llvm::SmallVector<const llvm::GlobalValue *> work(moved.begin(), moved.end());
  std::function<void(const llvm::Value *)> use = [&](const llvm::Value *v) {
    if (auto *g = llvm::dyn_cast<llvm::GlobalValue>(v))
      work.push_back(g);
    else if (auto *c = llvm::dyn_cast<llvm::Constant>(v);
             c && seen.insert(c).second)
      for (const llvm::Value *operand : c->operands())
        use(operand);
  };
  while (!work.empty()) {
    const llvm::GlobalValue *g = work.pop_back_val();
    if (!needed.insert(g).second)
      continue;
    if (auto *f = llvm::dyn_cast<llvm::Function>(g)) {
      for (const llvm::Instruction &i : llvm::instructions(*f))
        for (const llvm::Value *operand : i.operands())
          use(operand);
    } else if (auto *var = llvm::dyn_cast<llvm::GlobalVariable>(g);
               var && var->hasInitializer()) {
      use(var->getInitializer());
    }
  }
  llvm::ValueToValueMapTy map;
  std::unique_ptr<llvm::Module> side =
      llvm::CloneModule(module, map, [&](const llvm::GlobalValue *g) {
        return needed.contains(g);
      });
  for (llvm::GlobalValue &g :
       llvm::make_early_inc_range(side->global_values())) {
    if (!g.isDeclaration())
      g.setLinkage(llvm::GlobalValue::InternalLinkage);
    else if (g.use_empty())
      g.eraseFromParent();
  }
  for (llvm::Function *f : moved) {
    auto *copy = llvm::cast<llvm::Function>(map[f]);
    copy->setName(f->getName() + kImplSuffix);
    copy->setLinkage(llvm::GlobalValue::ExternalLinkage);
    f->deleteBody(); // now an external declaration
  }
  llvm::raw_string_ostream os(part.bitcode);
  llvm::WriteBitcodeToFile(*side, os);
  return part;
}
} // namespace

namespace {
/// The JIT's one function that does nothing (taking the context), which
/// split modules call instead of their own empty init functions.
constexpr const char *kEmptyFunction = "netvm_jit_empty";
extern "C" void netvmJitEmpty(netvm_ctx *) {}

/// Make the uses of `module`'s empty init functions (internal, taking a
/// pointer, `ret void` alone: an application without init handlers) the
/// JIT's kEmptyFunction, so that code generation does not make one more
/// function. Only for split modules, whose objects the front cache (whose
/// shared objects cannot see the JIT's symbols) never links.
void shareEmptyFunctions(llvm::Module &module) {
  llvm::Function *shared = nullptr;
  for (llvm::Function &f : llvm::make_early_inc_range(module)) {
    if (f.isDeclaration() || !f.hasLocalLinkage() || f.size() != 1 ||
        f.front().size() != 1 ||
        !llvm::isa<llvm::ReturnInst>(f.front().front()) ||
        !f.getReturnType()->isVoidTy() || f.arg_size() != 1 ||
        !f.getArg(0)->getType()->isPointerTy())
      continue;
    if (!shared)
      shared = llvm::Function::Create(f.getFunctionType(),
                                      llvm::GlobalValue::ExternalLinkage,
                                      kEmptyFunction, module);
    f.replaceAllUsesWith(shared);
    f.eraseFromParent();
  }
}
} // namespace

llvm::Expected<std::unique_ptr<llvm::Module>> netvm::native::generateLLVMIR(
    mlir::ModuleOp module, llvm::LLVMContext &llvmContext,
    llvm::TargetMachine &tm, const CodegenOptions &options) {
  auto llvmModule = translateToLLVMIR(module, llvmContext, tm, options);
  if (!llvmModule)
    return llvmModule.takeError();
  auto start = std::chrono::steady_clock::now();
  optimizeModule(**llvmModule, tm, options.optLevel, options.standardPipeline);
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
    std::string binary;
    if (dladdr(reinterpret_cast<void *>(&compilerIdentity), &info) &&
        info.dli_fname)
      binary = info.dli_fname;
    // The executable itself is named as it was run (argv[0]): a name
    // found on the PATH is no path from here.
    if (binary.find('/') == std::string::npos)
      binary = llvm::sys::fs::getMainExecutable(
          nullptr, reinterpret_cast<void *>(&compilerIdentity));
    if (!binary.empty() && stat(binary.c_str(), &st) == 0)
      id += std::string(" binary ") + binary + " " +
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
     << options.standardPipeline << " eager " << static_cast<int>(options.eager)
     << "\n";
  // Locations name the exception sites the descriptor carries.
  module->print(os, mlir::OpPrintingFlags().enableDebugInfo(true, false));
  return llvm::SHA256::hash(llvm::arrayRefFromStringRef(text));
}

std::string cachePath(const std::string &dir,
                      const std::array<uint8_t, 32> &key) {
  return netvm::cache::entryPath(dir, key, ".o");
}

/// The key of the deferred entries' object of the entry `key`.
std::array<uint8_t, 32> deferredKey(const std::array<uint8_t, 32> &key) {
  std::string text = "deferred entries of ";
  text.append(key.begin(), key.end());
  return llvm::SHA256::hash(llvm::arrayRefFromStringRef(text));
}

/// The tag of an entry whose module was split: what the JIT needs to
/// compile the deferred entries on first use (their names and bitcode).
constexpr llvm::StringLiteral kDeferredTag = "netvm-deferred 1\n";

std::string deferredTag(const DeferredPart &part) {
  std::string tag = kDeferredTag.str() + std::to_string(part.names.size());
  for (const std::string &name : part.names)
    tag += "\n" + name;
  return tag + "\n" + part.bitcode;
}

std::optional<DeferredPart> parseDeferredTag(llvm::StringRef tag) {
  if (!tag.consume_front(kDeferredTag))
    return std::nullopt;
  auto [countText, rest] = tag.split('\n');
  unsigned count;
  if (countText.getAsInteger(10, count) || count == 0)
    return std::nullopt;
  DeferredPart part;
  for (unsigned i = 0; i < count; ++i) {
    auto [name, next] = rest.split('\n');
    if (name.empty() || next.data() == nullptr)
      return std::nullopt;
    part.names.push_back(name.str());
    rest = next;
  }
  part.bitcode = rest.str();
  return part;
}

/// The object of a valid entry at `path` for `key`, or null (no entry, or
/// one that is truncated, corrupt or for another key), and its deferred
/// entries if its module was split.
std::unique_ptr<llvm::MemoryBuffer>
cacheLoad(const std::string &path, const std::array<uint8_t, 32> &key,
          std::optional<DeferredPart> &deferred) {
  std::string object, tag;
  if (!netvm::cache::readEntry(path, key, object, tag))
    return nullptr;
  if (!tag.empty() && !(deferred = parseDeferredTag(tag)))
    return nullptr;
  return llvm::MemoryBuffer::getMemBufferCopy(object, path);
}

/// Store `object` as the entry for `key` (written aside, then renamed, so
/// that concurrent runs never see half an entry). Failures are ignored:
/// the cache only saves time.
void cacheStore(const std::string &path, const std::array<uint8_t, 32> &key,
                llvm::StringRef object, const std::string &tag = "") {
  std::string error;
  (void)netvm::cache::writeEntry(path, key, object.str(), tag, error);
}
} // namespace

//===----------------------------------------------------------------------===//
// The process-wide JIT
//===----------------------------------------------------------------------===//

namespace {
class Engine;

/// The deferred entries of one application (CodegenOptions::eager): the
/// JIT materializes them, compiling them (or loading their cached object),
/// when a lazy re-export of one of them is first called.
class DeferredEntries : public llvm::orc::MaterializationUnit {
public:
  DeferredEntries(Engine &engine, Interface interface, DeferredPart part,
                  unsigned level, std::string path, std::array<uint8_t, 32> key)
      : MaterializationUnit(std::move(interface)), engine(engine),
        part(std::move(part)), level(level), path(std::move(path)), key(key) {}
  llvm::StringRef getName() const override { return "netvm-deferred-entries"; }

private:
  void materialize(
      std::unique_ptr<llvm::orc::MaterializationResponsibility> r) override;
  void discard(const llvm::orc::JITDylib &,
               const llvm::orc::SymbolStringPtr &) override {}

  Engine &engine;
  DeferredPart part;
  unsigned level;
  std::string path;
  std::array<uint8_t, 32> key;
};

std::mutex deferredMutex;
DeferredCompiles deferredTotals;

/// Called by a lazy re-export whose entry could not be compiled: the
/// program cannot go on (the error went to the execution session).
void deferredCompileFailed() {
  std::fputs("netvm: compiling an entry on first use failed\n", stderr);
  std::abort();
}

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
    // A whole object for whoever keeps it (netvm-run's front cache links
    // it into a shared object); forwarded links list every push handler.
    if (keep || options.lowering.forwardLinks)
      options.eager = JitEntries::All;
    options.lowering.separateFastLoops = options.eager == JitEntries::PerCall;
    options.lowering.separateSlowLoops = options.eager == JitEntries::Batch;
    // The cache: hit, the object as it was stored; miss, compiled and
    // stored. Either way the JIT links an object made by emitFile.
    std::string dir = options.useCache ? jitCacheDirectory() : "";
    std::array<uint8_t, 32> key{};
    std::string path;
    std::unique_ptr<llvm::MemoryBuffer> object;
    std::optional<DeferredPart> deferred;
    if (!dir.empty()) {
      auto start = std::chrono::steady_clock::now();
      key = cacheKey(module, options);
      path = cachePath(dir, key);
      object = cacheLoad(path, key, deferred);
      lastTimes.cache = millisSince(start);
      lastTimes.cached = object != nullptr;
    }
    auto start = std::chrono::steady_clock::now();
    if (!object) {
      std::lock_guard<std::mutex> codegenLock(codegenMutex);
      auto tm = targetMachine(options.optLevel);
      if (!tm)
        return tm.takeError();
      lastTimes.setup += millisSince(start);
      llvm::LLVMContext context;
      auto llvmModule = translateToLLVMIR(module, context, **tm, options);
      if (!llvmModule)
        return llvmModule.takeError();
      start = std::chrono::steady_clock::now();
      if (options.eager != JitEntries::All &&
          choosePipeline(**llvmModule, options.optLevel,
                         options.standardPipeline) == LLVMPipeline::Lean) {
        // Batch: the per-call entries and the slow loops that call them;
        // PerCall: the fast loops.
        llvm::StringRef batch[] = {kSourceEntryAttribute, kSlowLoopAttribute};
        llvm::StringRef perCall[] = {kFastLoopAttribute};
        deferred = splitDeferred(**llvmModule,
                                 options.eager == JitEntries::Batch
                                     ? llvm::ArrayRef<llvm::StringRef>(batch)
                                     : llvm::ArrayRef<llvm::StringRef>(perCall),
                                 options.lowering.descriptorSymbol);
      }
      if (deferred)
        shareEmptyFunctions(**llvmModule);
      lastTimes.translation += millisSince(start);
      start = std::chrono::steady_clock::now();
      optimizeModule(**llvmModule, **tm, options.optLevel,
                     options.standardPipeline);
      lastTimes.optimization = millisSince(start);
      start = std::chrono::steady_clock::now();
      llvm::SmallVector<char, 0> bytes;
      if (llvm::Error err = emitObject(**llvmModule, **tm, options.optLevel,
                                       lastTimes.pipeline, bytes))
        return std::move(err);
      llvm::StringRef text(bytes.data(), bytes.size());
      if (!dir.empty())
        cacheStore(path, key, text, deferred ? deferredTag(*deferred) : "");
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
    if (deferred) {
      lastTimes.deferred = true;
      lastTimes.deferredFunctions = deferred->names.size();
      std::string deferredPath =
          dir.empty() ? "" : cachePath(dir, deferredKey(key));
      if (llvm::Error err = addDeferred(std::move(*deferred), options.optLevel,
                                        deferredPath, deferredKey(key)))
        return std::move(err);
    }
    auto symbol = jit->lookup(options.lowering.descriptorSymbol);
    if (!symbol)
      return symbol.takeError();
    lastTimes.linking = millisSince(start);
    lastTimes.codegen += lastTimes.linking;
    return symbol->toPtr<const netvm_app_desc *>();
  }

  /// Compile the deferred entries `part` (when first called, or from the
  /// cache's object at `path` if it has one) and store the object there.
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
  compileDeferred(const DeferredPart &part, unsigned level,
                  const std::string &path, const std::array<uint8_t, 32> &key) {
    if (!path.empty()) {
      std::string object, tag;
      if (netvm::cache::readEntry(path, key, object, tag) && tag.empty())
        return llvm::MemoryBuffer::getMemBufferCopy(object, path);
    }
    // This thread's last compile keeps its times.
    CompileTimes times = lastTimes;
    llvm::LLVMContext context;
    auto module = llvm::parseBitcodeFile(
        llvm::MemoryBufferRef(part.bitcode, "netvm-deferred"), context);
    if (!module)
      return module.takeError();
    llvm::SmallVector<char, 0> bytes;
    {
      std::lock_guard<std::mutex> codegenLock(codegenMutex);
      auto tm = targetMachine(level);
      if (!tm)
        return tm.takeError();
      optimizeModule(**module, **tm, level, /*standard=*/false);
      if (llvm::Error err =
              emitObject(**module, **tm, level, lastTimes.pipeline, bytes))
        return std::move(err);
    }
    lastTimes = times;
    llvm::StringRef text(bytes.data(), bytes.size());
    if (!path.empty())
      cacheStore(path, key, text);
    return llvm::MemoryBuffer::getMemBufferCopy(text, "netvm-deferred");
  }

  llvm::orc::LLJIT &getJIT() { return *jit; }

private:
  /// The object of `module`, optimized with `pipeline`, into `bytes`.
  /// The lean pipeline's modules reuse one code generation pass manager
  /// per level (making its hundred-odd passes took about 0.4 ms a
  /// module); others get emitFile's. The caller holds codegenMutex.
  llvm::Error emitObject(llvm::Module &module, llvm::TargetMachine &tm,
                         unsigned level, LLVMPipeline pipeline,
                         llvm::SmallVectorImpl<char> &bytes) {
    if (pipeline != LLVMPipeline::Lean) {
      llvm::raw_svector_ostream os(bytes);
      return emitFile(module, tm, FileKind::Object, os);
    }
    CodegenPipeline &cg = codegenPipelines[std::min(level, 3u)];
    if (!cg.pm) {
      cg.os = std::make_unique<llvm::raw_svector_ostream>(cg.bytes);
      cg.pm = std::make_unique<llvm::legacy::PassManager>();
      if (tm.addPassesToEmitFile(*cg.pm, *cg.os, nullptr,
                                 llvm::CodeGenFileType::ObjectFile)) {
        cg.pm.reset();
        return llvm::createStringError("the target cannot emit objects");
      }
    }
    cg.bytes.clear();
    cg.pm->run(module);
    bytes.assign(cg.bytes.begin(), cg.bytes.end());
    return llvm::Error::success();
  }

  /// Define the deferred entries `part` in the JIT: each name a lazy
  /// re-export (a stub) of its definition, which DeferredEntries provides.
  llvm::Error addDeferred(DeferredPart part, unsigned level,
                          const std::string &path,
                          const std::array<uint8_t, 32> &key) {
    llvm::orc::ExecutionSession &session = jit->getExecutionSession();
    if (!callThrough) {
      const llvm::Triple &triple = jit->getTargetTriple();
      auto created = llvm::orc::createLocalLazyCallThroughManager(
          triple, session,
          llvm::orc::ExecutorAddr::fromPtr(&deferredCompileFailed));
      if (!created)
        return created.takeError();
      callThrough = std::move(*created);
      stubs = llvm::orc::createLocalIndirectStubsManagerBuilder(triple)();
    }
    llvm::orc::MangleAndInterner mangle(session, jit->getDataLayout());
    llvm::orc::SymbolFlagsMap flags;
    llvm::orc::SymbolAliasMap aliases;
    auto callable =
        llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable;
    for (const std::string &name : part.names) {
      flags[mangle(name + kImplSuffix)] = callable;
      aliases[mangle(name)] = {mangle(name + kImplSuffix), callable};
    }
    llvm::orc::JITDylib &dylib = jit->getMainJITDylib();
    if (llvm::Error err = dylib.define(std::make_unique<DeferredEntries>(
            *this,
            llvm::orc::MaterializationUnit::Interface(std::move(flags),
                                                      nullptr),
            std::move(part), level, path, key)))
      return err;
    return dylib.define(
        llvm::orc::lazyReexports(*callThrough, *stubs, dylib, aliases));
  }

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
    define(kEmptyFunction, reinterpret_cast<const void *>(&netvmJitEmpty));
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
  /// emitObject's pass managers, one per level, made on first use.
  struct CodegenPipeline {
    llvm::SmallVector<char, 0> bytes;
    std::unique_ptr<llvm::raw_svector_ostream> os;
    std::unique_ptr<llvm::legacy::PassManager> pm;
  };
  CodegenPipeline codegenPipelines[4];
  /// Held by add(); codegenMutex also by compilations of deferred entries
  /// (on the thread that first calls one), for the target machines.
  std::mutex mutex, codegenMutex;
  unsigned counter = 0;
  /// Lazy re-exports of deferred entries, made on first use.
  std::unique_ptr<llvm::orc::LazyCallThroughManager> callThrough;
  std::unique_ptr<llvm::orc::IndirectStubsManager> stubs;
};

void DeferredEntries::materialize(
    std::unique_ptr<llvm::orc::MaterializationResponsibility> r) {
  auto start = std::chrono::steady_clock::now();
  auto object = engine.compileDeferred(part, level, path, key);
  llvm::orc::LLJIT &jit = engine.getJIT();
  if (!object) {
    jit.getExecutionSession().reportError(object.takeError());
    r->failMaterialization();
    return;
  }
  jit.getObjLinkingLayer().emit(std::move(r), std::move(*object));
  std::lock_guard<std::mutex> lock(deferredMutex);
  deferredTotals.count += 1;
  deferredTotals.milliseconds += millisSince(start);
}
} // namespace

DeferredCompiles netvm::native::deferredCompiles() {
  std::lock_guard<std::mutex> lock(deferredMutex);
  return deferredTotals;
}

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
