//===- Driver.cpp - The netvm compile pipeline as a library
//-------------------===//
//
// Loading applications from NetIL files, application descriptions (.nvapp,
// parsed by lib/Frontend/Application) and MLIR, and the optimization
// pipelines of each -O level. Input.cpp describes and checks what to
// compile and prints diagnostics as the tools show them.
//
//===----------------------------------------------------------------------===//

#include "netvm/Driver/Driver.h"
#include "netvm/Frontend/Application.h"
#include "netvm/Frontend/NetIL.h"

#include "ME/MEDialect.h"
#include "NetVM/NetVMDialect.h"
#include "NetVM/NetVMOps.h"
#include "NetVM/NetVMPasses.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace netvm;
using namespace netvm::driver;
using llvm::SMLoc;

void netvm::driver::registerDialects(DialectRegistry &registry) {
  registry.insert<NetVMDialect, arith::ArithDialect, cf::ControlFlowDialect,
                  math::MathDialect, medialect::MEDialect>();
}

void netvm::driver::configureHelp(llvm::cl::OptionCategory &toolCategory,
                                  bool showMLIROptions) {
  static llvm::cl::OptionCategory mlirCategory(
      "MLIR debugging options",
      "Inspect the compiler's MLIR pipeline (see also --help-hidden)");
  SmallVector<const llvm::cl::OptionCategory *> shown = {&toolCategory};
  // Defined with DiagnosticPrinter (Input.cpp), shown as the tool's own.
  if (llvm::cl::Option *limit =
          llvm::cl::getRegisteredOptions().lookup("error-limit"))
    limit->addCategory(toolCategory);
  if (showMLIROptions) {
    for (auto &entry : llvm::cl::getRegisteredOptions())
      if (entry.first.starts_with("mlir-"))
        entry.second->addCategory(mlirCategory);
    shown.push_back(&mlirCategory);
  }
  llvm::cl::HideUnrelatedOptions(shown);
}

InputKind netvm::driver::classifyInput(StringRef path) {
  StringRef ext = llvm::sys::path::extension(path);
  if (ext == ".mlir")
    return InputKind::MLIR;
  if (ext == ".nvapp")
    return InputKind::AppDescription;
  return InputKind::NetIL;
}

ApplicationOp netvm::driver::getApplication(ModuleOp module) {
  auto apps = module.getBody()->getOps<ApplicationOp>();
  if (apps.empty() || std::next(apps.begin()) != apps.end())
    return {};
  return *apps.begin();
}

/// Load `path` into the source manager; reports an error on failure.
/// MLIR's parser recurses once per nested region, attribute and type: an
/// .mlir file nested deeper than this is refused before it can exhaust the
/// stack (netvm's own IR nests about ten levels).
constexpr unsigned kMaxMLIRNesting = 500;

/// Where `text` first opens a bracket ({, [, () nested more than
/// kMaxMLIRNesting deep outside strings and comments, if it does.
static std::optional<size_t> tooDeeplyNested(llvm::StringRef text) {
  unsigned depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
    } else if (c == '/' && text.substr(i).starts_with("//")) {
      i = std::min(text.find('\n', i), text.size());
    } else if (c == '{' || c == '[' || c == '(') {
      if (++depth > kMaxMLIRNesting)
        return i;
    } else if ((c == '}' || c == ']' || c == ')') && depth) {
      --depth;
    }
  }
  return std::nullopt;
}

static std::optional<unsigned> loadFile(MLIRContext &context,
                                        llvm::SourceMgr &sourceMgr,
                                        StringRef path, Location useLoc) {
  // Tools may have loaded the inputs already (e.g. for -verify-diagnostics).
  for (unsigned id = 1; id <= sourceMgr.getNumBuffers(); ++id)
    if (sourceMgr.getMemoryBuffer(id)->getBufferIdentifier() == path)
      return id;
  auto buffer = readSourceFile(path);
  if (!buffer) {
    // The path once: as the location when the file is the input itself,
    // in the message when another file names it.
    auto at = dyn_cast<FileLineColLoc>(useLoc);
    if (at && at.getFilename() == path)
      emitError(useLoc) << "cannot read: "
                        << llvm::toString(buffer.takeError());
    else
      emitError(useLoc) << "cannot read '" << path
                        << "': " << llvm::toString(buffer.takeError());
    return std::nullopt;
  }
  return sourceMgr.AddNewSourceBuffer(std::move(*buffer), SMLoc());
}

llvm::Error netvm::driver::writeTextFile(StringRef path, StringRef text) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return llvm::errorCodeToError(ec);
  os << text;
  os.close();
  if (os.has_error()) {
    ec = os.error();
    os.clear_error();
    return llvm::errorCodeToError(ec);
  }
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
netvm::driver::readSourceFile(StringRef path, size_t limit) {
  namespace fs = llvm::sys::fs;
  bool stdinput = path == "-";
  llvm::Expected<fs::file_t> file =
      stdinput ? fs::getStdinHandle()
               : fs::openNativeFileForRead(path, fs::OF_Text);
  if (!file)
    return file.takeError();
  llvm::scope_exit close([&] {
    if (!stdinput)
      fs::closeFile(*file);
  });
  constexpr size_t kChunk = 1 << 16;
  std::string text;
  for (;;) {
    size_t at = text.size();
    text.resize(at + kChunk);
    llvm::Expected<size_t> n =
        fs::readNativeFile(*file, llvm::MutableArrayRef(&text[at], kChunk));
    if (!n)
      return n.takeError();
    text.resize(at + *n);
    if (*n == 0)
      break;
    if (text.size() > limit)
      return llvm::createStringError(
          std::errc::file_too_large,
          "larger than %zu MiB, too large for a source file", limit >> 20);
  }
  return llvm::MemoryBuffer::getMemBufferCopy(text,
                                              stdinput ? "<stdin>" : path);
}

static std::string stemOf(StringRef path) {
  std::string stem = llvm::sys::path::stem(path).str();
  return stem.empty() || stem == "-" ? "app" : stem;
}

/// A symbol name for a source or sink named after `port`, avoiding names
/// already in use.
static std::string freshName(ApplicationOp app, StringRef want,
                             StringRef peName) {
  std::string name = want.str();
  if (!app.lookupSymbol(name))
    return name;
  name = (peName + "." + want).str();
  for (unsigned i = 1; app.lookupSymbol(name); ++i)
    name = (peName + "." + want + "." + Twine(i)).str();
  return name;
}

static OwningOpRef<ModuleOp> loadNetIL(MLIRContext &context,
                                       llvm::SourceMgr &sourceMgr,
                                       ArrayRef<std::string> inputs,
                                       const LoadOptions &options) {
  Location fileLoc = FileLineColLoc::get(&context, inputs.front(), 1, 1);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  OpBuilder builder(&context);
  builder.setInsertionPointToEnd(module->getBody());
  std::string appName =
      options.appName.empty() ? stemOf(inputs.front()) : options.appName;
  auto app = ApplicationOp::create(builder, fileLoc, appName);

  SmallVector<PEOp> pes;
  for (const std::string &path : inputs) {
    std::optional<unsigned> buffer = loadFile(
        context, sourceMgr, path, FileLineColLoc::get(&context, path, 0, 0));
    if (!buffer)
      return nullptr;
    std::string name = stemOf(path);
    PEOp pe = netil::assemble(sourceMgr, *buffer, app, name);
    if (!pe)
      return nullptr;
    pes.push_back(pe);
  }

  // Wire it: sources into the first NetPE, each NetPE's first push output
  // into the next one's first push input, everything left open to sinks.
  OpBuilder endpoints(&context);
  endpoints.setInsertionPointToStart(app.getBodyBlock());
  OpBuilder conns(&context);
  conns.setInsertionPointToEnd(app.getBodyBlock());
  auto portRef = [&](PEOp pe, PortOp port) {
    return SymbolRefAttr::get(pe.getSymNameAttr(),
                              {FlatSymbolRefAttr::get(port.getSymNameAttr())});
  };
  DenseSet<Operation *> fed;
  for (size_t i = 0; i + 1 < pes.size(); ++i) {
    PortOp out, in;
    for (PortOp p : pes[i].getPorts())
      if (!out && p.getKind() == PortKind::PushOutput)
        out = p;
    for (PortOp p : pes[i + 1].getPorts())
      if (!in && p.getKind() == PortKind::PushInput)
        in = p;
    if (!out || !in) {
      emitError(pes[i + 1].getLoc())
          << "cannot chain NetPE @" << pes[i].getSymName() << " to @"
          << pes[i + 1].getSymName()
          << ": the first needs a push_output port and the second a "
             "push_input port; describe the connections in an .nvapp file "
             "instead";
      return nullptr;
    }
    ConnectOp::create(conns, pes[i + 1].getLoc(), portRef(pes[i], out),
                      portRef(pes[i + 1], in));
    fed.insert(out);
    fed.insert(in);
  }
  for (auto [index, pe] : llvm::enumerate(pes)) {
    for (PortOp port : pe.getPorts()) {
      if (fed.contains(port))
        continue;
      bool isInput = port.isInput();
      // Only the first NetPE's inputs come from the outside world.
      if (isInput && index != 0)
        continue;
      std::string name = freshName(app, port.getSymName(), pe.getSymName());
      if (isInput) {
        SourceOp::create(endpoints, port.getLoc(), name);
        ConnectOp::create(conns, port.getLoc(),
                          FlatSymbolRefAttr::get(&context, name),
                          portRef(pe, port));
      } else {
        SinkOp::create(endpoints, port.getLoc(), name);
        ConnectOp::create(conns, port.getLoc(), portRef(pe, port),
                          FlatSymbolRefAttr::get(&context, name));
      }
    }
  }
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

OwningOpRef<ModuleOp>
netvm::driver::loadApplication(MLIRContext &context, llvm::SourceMgr &sourceMgr,
                               ArrayRef<std::string> inputs,
                               const LoadOptions &options) {
  context.loadDialect<NetVMDialect, arith::ArithDialect, cf::ControlFlowDialect,
                      math::MathDialect>();
  Location unknown = UnknownLoc::get(&context);
  if (inputs.empty()) {
    emitError(unknown) << "no input files";
    return nullptr;
  }
  InputKind kind = classifyInput(inputs.front());
  for (const std::string &input : llvm::drop_begin(inputs)) {
    if (classifyInput(input) != kind || kind != InputKind::NetIL) {
      emitError(FileLineColLoc::get(&context, input, 0, 0))
          << "cannot combine '" << inputs.front() << "' with '" << input
          << "': give NetIL files (chained in order), or one .nvapp "
             "application description, or one .mlir file";
      return nullptr;
    }
  }
  switch (kind) {
  case InputKind::NetIL:
    return loadNetIL(context, sourceMgr, inputs, options);
  case InputKind::AppDescription: {
    std::optional<unsigned> buffer =
        loadFile(context, sourceMgr, inputs.front(),
                 FileLineColLoc::get(&context, inputs.front(), 0, 0));
    if (!buffer)
      return nullptr;
    auto load = [&](StringRef path, Location useLoc) {
      return loadFile(context, sourceMgr, path, useLoc);
    };
    return application::parseDescription(context, sourceMgr, *buffer,
                                         options.appName, load);
  }
  case InputKind::MLIR: {
    std::optional<unsigned> buffer =
        loadFile(context, sourceMgr, inputs.front(),
                 FileLineColLoc::get(&context, inputs.front(), 0, 0));
    if (!buffer)
      return nullptr;
    llvm::StringRef text = sourceMgr.getMemoryBuffer(*buffer)->getBuffer();
    if (std::optional<size_t> at = tooDeeplyNested(text)) {
      auto [line, col] = sourceMgr.getLineAndColumn(
          SMLoc::getFromPointer(text.data() + *at), *buffer);
      emitError(FileLineColLoc::get(&context, inputs.front(), line, col))
          << "the IR nests too deeply (more than " << kMaxMLIRNesting
          << " levels of brackets)";
      return nullptr;
    }
    OwningOpRef<ModuleOp> module =
        parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return nullptr;
    if (!getApplication(*module)) {
      emitError(module->getLoc())
          << "expected exactly one netvm.application in '" << inputs.front()
          << "'";
      return nullptr;
    }
    // An .mlir file is untrusted input: its `in_bounds` claims go, so that
    // the bounds-check pass checks every access again (the optimizer
    // removes the checks the file already had where they are redundant).
    // Compiled code then never touches memory the interpreter would
    // refuse, whatever the file says.
    module->walk([](Operation *op) { op->removeAttr("in_bounds"); });
    // Only what every engine executes (the interpreter would refuse the
    // rest; the JIT must not run it either).
    WalkResult walk = module->walk([&](HandlerOp handler) {
      WalkResult inner =
          handler.getBody().walk([&](Operation *op) {
            if (isExecutableOp(op))
              return WalkResult::advance();
            op->emitError("'")
                << op->getName()
                << "' is not an operation netvm executes in a handler (netvm "
                   "operations, integer arith of at most 64 bits, math.ctlz "
                   "and cf)";
            return WalkResult::interrupt();
          });
      return inner.wasInterrupted() ? WalkResult::interrupt()
                                    : WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return nullptr;
    return module;
  }
  }
  return nullptr;
}

LogicalResult netvm::driver::optimize(
    ModuleOp module, unsigned optLevel,
    llvm::function_ref<LogicalResult(PassManager &)> configure,
    OptimizeFor target) {
  PassManager pm(module.getContext());
#ifdef NDEBUG
  // Verifying the module after each of some 25 passes took a fifth of the
  // optimizer's time on a small filter (issue 18's JIT compile budget):
  // release builds verify once, at the end; debug builds after each pass.
  pm.enableVerifier(false);
#endif
  if (configure && failed(configure(pm)))
    return failure();
  OpPassManager &handlers =
      pm.nest<ApplicationOp>().nest<PEOp>().nest<HandlerOp>();
  // Safety instrumentation comes first and at every level: every execution
  // path then counts the same loop iterations and checks accesses the same
  // way (the native lowering relies on the explicit checks).
  handlers.addPass(createNetVMInsertWatchdog());
  handlers.addPass(createNetVMInsertBoundsChecks());
  // The optimizer (docs/optimizer.md). -O1: folding, algebra, offset
  // chains, control flow. -O2 adds the memory passes (redundant loads,
  // covered bounds checks, combined loads, byte order) and versioning;
  // -O3 runs the cleanup round twice and versions every handler with a
  // constant-offset check.
  auto scalar = [&] {
    handlers.addPass(createSCCPPass());
    handlers.addPass(createNetVMSimplify());
    handlers.addPass(createNetVMReassociate());
    handlers.addPass(createNetVMSimplifyBranches());
    handlers.addPass(createCSEPass());
    handlers.addPass(createNetVMSimplify());
  };
  auto memory = [&] {
    handlers.addPass(createNetVMIntRangeOpts());
    handlers.addPass(createNetVMEliminateRedundantLoads());
    handlers.addPass(createNetVMEliminateBoundsChecks());
    handlers.addPass(createNetVMCombineLoads());
    handlers.addPass(createCSEPass());
    handlers.addPass(createNetVMSimplify());
    handlers.addPass(createNetVMSimplifyBranches());
  };
  if (optLevel > 0) {
    handlers.addPass(createCanonicalizerPass());
    scalar();
  }
  if (optLevel > 1) {
    memory();
    if (optLevel > 2) {
      scalar();
      memory();
    }
    if (target == OptimizeFor::Native)
      handlers.addPass(createNetVMSwapConstantByteOrder());
    // Versioning duplicates a handler to take its bounds checks out of the
    // common path; on the MEs a check is one compare-and-branch and the
    // control store is small, so the copy does not pay.
    if (target == OptimizeFor::Native) {
      NetVMVersionPacketChecksOptions versioning;
      versioning.minChecks = optLevel > 2 ? 1 : 2;
      handlers.addPass(createNetVMVersionPacketChecks(versioning));
    }
    handlers.addPass(createNetVMMergeTests());
    handlers.addPass(createNetVMFormSwitches());
    handlers.addPass(createCanonicalizerPass());
    // Merged tests and switches leave flags decided on one edge and
    // compares repeated on joined paths (NetPFL's per-header flags): fold
    // them and thread the jumps through the tests of a flag.
    handlers.addPass(createSCCPPass());
    handlers.addPass(createNetVMSimplifyBranches());
    handlers.addPass(createNetVMSimplify());
    handlers.addPass(createCSEPass());
    handlers.addPass(createNetVMSimplifyBranches());
    handlers.addPass(createNetVMSimplify());
    handlers.addPass(createCSEPass());
  }
  // On the MEs, counters need no packet order (and no state token).
  if (optLevel > 0 && target == OptimizeFor::ME)
    pm.nest<ApplicationOp>().addPass(createNetVMRecognizeAtomics());
  if (failed(pm.run(module)))
    return failure();
#ifdef NDEBUG
  return verify(module);
#else
  return success();
#endif
}
