//===- Native.h - Native code for x86-64 and AArch64 ------------*- C++ -*-===//
//
// From a netvm module (after driver::optimize) to native code: LLVM IR
// through the netvm-to-llvm lowering and MLIR's LLVM IR translation, LLVM's
// optimization pipeline of the chosen level, then either an object or
// assembly file for a target triple (AOT), or code in this process (JIT).
//
// The JIT is one long-lived ORC LLJIT per process; every application added
// to it gets its own descriptor symbol and stays until the process ends.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_TARGET_NATIVE_H
#define NETVM_TARGET_NATIVE_H

#include "netvm/Conversion/NetVMToLLVM.h"
#include "netvm/abi.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
} // namespace llvm

namespace netvm::native {

/// Which entries of an application jitCompile compiles before it returns;
/// the others are compiled on their first call (docs/native.md, "Compile
/// only what runs"). The module holds the application twice, inlined into
/// the per-call entries and into the batch entries' fast loops, and a
/// caller runs one of them: compiling the other later, if ever, halves the
/// code generation.
enum class JitEntries {
  /// Everything now (one object): what every caller got before.
  All,
  /// The batch entries now; the per-call entries (which the batch entries
  /// call when the runtime listens: outputs, events) on first use.
  Batch,
  /// The per-call entries and the batch entries' slow loops now; the
  /// batch entries' fast loops (nobody listening) on first use.
  PerCall,
};

struct CodegenOptions {
  /// LLVM optimization level, 0 to 3.
  unsigned optLevel = 2;
  /// What the lowering to the LLVM dialect generates (counters, descriptor
  /// name, forward links, info size).
  NativeLoweringOptions lowering;
  /// jitCompile: look the object up in, and add it to, the persistent
  /// compile cache (see jitCacheDirectory) instead of always compiling.
  bool useCache = true;
  /// Give a small module (isSmallModule) LLVM's own pipeline of the level
  /// instead of the lean one: the yardstick netvm-bench sets the lean
  /// pipeline against.
  bool standardPipeline = false;
  /// jitCompile: what to compile before returning (the rest on first use).
  /// Only small modules at -O1 and -O2 (the lean pipeline) are split, and
  /// only without forwarded links; others are compiled whole.
  JitEntries eager = JitEntries::All;
};

/// The LLVM pipeline a module gets (docs/native.md, "LLVM's pipelines").
enum class LLVMPipeline {
  /// LLVM's own -O0 to -O3 pipeline (PassBuilder): every module at -O0
  /// and -O3, and a module that is neither small nor large at -O1 and -O2.
  Standard,
  /// A small module (isSmallModule) at -O1 and -O2: always-inline, SROA,
  /// early CSE with memory SSA, InstCombine, CFG simplification.
  Lean,
  /// A large module (isLargeModule) at -O1 to -O3: always-inline, SROA,
  /// early CSE, CFG and instruction simplification; -O0 code generation.
  Short,
};
const char *pipelineName(LLVMPipeline pipeline);

/// The directory of the JIT's persistent compile cache: $NETVM_CACHE_DIR,
/// else $XDG_CACHE_HOME/netvm/jit, else $HOME/.cache/netvm/jit; empty (no
/// cache) when NETVM_CACHE is "off" or "0", or no directory is known.
/// Entries are objects keyed by the optimized netvm IR (with locations),
/// the code generation options, the target (triple, CPU, features), LLVM's
/// version and the identity of the compiler's own binary; each is checked
/// (key and checksum) when loaded, and compiled again if it does not match.
std::string jitCacheDirectory();

/// The triple of this machine, and the triples netvm can generate code for.
std::string hostTriple();
bool isSupportedTriple(llvm::StringRef triple, std::string &why);

/// A target machine for `triple` (empty: the host) at `optLevel`.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(llvm::StringRef triple, unsigned optLevel,
                    llvm::StringRef cpu = "");

/// Lower `module` (consumed: it is rewritten to the LLVM dialect) and
/// translate it to LLVM IR for `tm`, optimized at `options.optLevel`.
llvm::Expected<std::unique_ptr<llvm::Module>>
generateLLVMIR(mlir::ModuleOp module, llvm::LLVMContext &llvmContext,
               llvm::TargetMachine &tm, const CodegenOptions &options);

enum class FileKind { Object, Assembly };

/// Write `llvmModule` as an object or assembly file for `tm`. A large
/// module (isLargeModule) is generated at CodeGenOptLevel::None whatever
/// `tm`'s level.
llvm::Error emitFile(llvm::Module &llvmModule, llvm::TargetMachine &tm,
                     FileKind kind, llvm::raw_pwrite_stream &os);

/// Whether `llvmModule` has more than kLargeModuleWeight instructions (a
/// switch counting one per case). LLVM's optimizer and code generator take
/// time that grows faster than linearly on a handler of thousands of
/// blocks (a 1,000-term NetPFL `or` took 52 s in SLP vectorization, jump
/// threading and InstCombine; a 1,000-term `host` list 5 s in instruction
/// selection), and such a handler's speed comes from the netvm optimizer
/// that ran before: a large module gets a short LLVM pipeline (inlining,
/// SROA, early CSE, CFG simplification, instruction simplification) and
/// -O0 code generation (docs/native.md, "Compile time").
/// A module the short pipeline has run on is marked (the
/// "netvm.large-module" flag), so it stays large after its switches are
/// rewritten.
bool isLargeModule(const llvm::Module &llvmModule);
constexpr unsigned kLargeModuleWeight = 8000;

/// Whether `llvmModule` has at most kSmallModuleWeight instructions
/// (weighed as isLargeModule does), or is marked as one that was (the
/// "netvm.lean-module" flag): at -O1 and -O2 it gets the lean pipeline
/// (LLVMPipeline::Lean).
bool isSmallModule(const llvm::Module &llvmModule);
constexpr unsigned kSmallModuleWeight = 2000;

constexpr unsigned kSearchedSwitchCases = 64;
/// Rewrite every switch of `module` with at least `minCases` cases as a
/// branch-free binary search of a sorted constant table of its case
/// values, then a branch on the entry found (lib/Target/Native/
/// SwitchTables.cpp). The short pipeline of a large module runs it: code
/// generation of the compare trees LLVM makes of such switches took most
/// of a 1,000-term `host` list's compile time.
void searchLargeSwitches(llvm::Module &module,
                         unsigned minCases = kSearchedSwitchCases);

constexpr unsigned kComparedSwitchCases = 8;
/// Rewrite every switch of `module` that tests membership of a small set
/// (2 to `maxCases` cases, all leading to one block, values too far apart
/// for a bit test) as one branch on the `or` of a comparison per case,
/// marked unpredictable (lib/Target/Native/SwitchTables.cpp). LLVM turns
/// such an `or` of comparisons (a tcpdump `host` list, NetIL's chain of
/// `jcmp.eq`) into a switch and then into a tree of branches, each as
/// unpredictable as the packets: `four-hosts` took 1.65x the C loop's
/// time. Where both ways are a few speculatable instructions that then
/// meet (the batch entry's counting), selects replace the branch too.
/// Runs after the LLVM pipeline at -O1 and above.
void compareSmallSwitches(llvm::Module &module,
                          unsigned maxCases = kComparedSwitchCases);

/// The object jitCompile linked, and its descriptor's symbol.
struct JitObject {
  std::string object;
  std::string symbol;
};

/// Compile an application into this process. Returns its descriptor, valid
/// for the lifetime of the process. Thread-safe. Like generateLLVMIR, it
/// lowers `module` in place (clone it first to keep the netvm IR). With
/// `keep`, also hands back the object it linked (compiled, or from the
/// cache), for linkSharedObject.
llvm::Expected<const netvm_app_desc *> jitCompile(mlir::ModuleOp module,
                                                  const CodegenOptions &options,
                                                  JitObject *keep = nullptr);

/// Link `object` (position-independent, as jitCompile makes them) into a
/// shared object at `path` with the system's linker ($NETVM_LINKER, else
/// `ld` on the PATH), its runtime calls left for the program that loads
/// it to resolve (netvm-run's launcher exports the runtime). The front
/// cache of netvm-run keeps such files (netvm/cache/RunCache.h).
llvm::Error linkSharedObject(llvm::StringRef object, const std::string &path);

/// Milliseconds spent in the last jitCompile on this thread, by phase.
struct CompileTimes {
  double lowering = 0, translation = 0, optimization = 0, codegen = 0;
  /// Looking the object up in the cache (hashing the IR, reading, checking).
  double cache = 0;
  /// Starting the JIT and making the target machine of the level: the
  /// first compilation in a process (at that level) only.
  double setup = 0;
  /// The object came from the compile cache (lowering, translation,
  /// optimization and code generation did not run; codegen is the
  /// linking).
  bool cached = false;
  /// The module was large (isLargeModule): the short LLVM pipeline and
  /// -O0 code generation.
  bool largeModule = false;
  /// The LLVM pipeline the module got.
  LLVMPipeline pipeline = LLVMPipeline::Standard;
  /// Of codegen, the JIT linking (adding the object, looking up its
  /// descriptor).
  double linking = 0;
  /// The module was split (CodegenOptions::eager): its other entries are
  /// compiled on first use (deferredCompiles() says when).
  bool deferred = false;
  /// How many functions were left for their first call (the per-call
  /// entries and the batch entries' slow loops, or the fast loops).
  unsigned deferredFunctions = 0;
  double total() const {
    return setup + lowering + translation + optimization + codegen + cache;
  }
};
CompileTimes lastCompileTimes();

/// The deferred entries (CodegenOptions::eager) compiled on first use so far
/// in this process, on any thread, and the milliseconds they took (from
/// the cached bitcode or object to linked code).
struct DeferredCompiles {
  unsigned count = 0;
  double milliseconds = 0;
};
DeferredCompiles deferredCompiles();

} // namespace netvm::native

#endif // NETVM_TARGET_NATIVE_H
