//===- Application.cpp - Compiled applications for the Python package ----===//
//
// Every application owns its MLIRContext (single-threaded: the machine's
// cores belong to the packets), the source manager its diagnostics point
// into, the module as the front end made it and the optimized one. Later
// stages (instrumented IR, LLVM dialect, LLVM IR, code) are made from
// clones on request, so that asking for one never changes another.
//
//===----------------------------------------------------------------------===//

#include "Application.h"

#include "netvm/Conversion/NetVMToLLVM.h"
#include "netvm/Driver/Driver.h"
#include "netvm/Runtime/Engine.h"
#include "netvm/Target/ME/AppLayout.h"
#include "netvm/Target/Native.h"
#include "netvm/emu/Options.h"
#ifdef NETVM_HAVE_ME_CODEGEN
#include "netvm/Target/ME/CodeGen.h"
#endif

#include "NetVM/NetVMOps.h"
#include "NetVM/NetVMPasses.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <stdexcept>

using namespace netvm;
using namespace netvm::python;

struct Application::State {
  // The context first: the modules are destroyed before it.
  std::unique_ptr<mlir::MLIRContext> context;
  llvm::SourceMgr sourceMgr;
  mlir::OwningOpRef<mlir::ModuleOp> input, optimized;
};

Application::Application(std::unique_ptr<State> state)
    : state(std::move(state)) {}
Application::~Application() = default;

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

static const char *severityName(mlir::DiagnosticSeverity severity) {
  switch (severity) {
  case mlir::DiagnosticSeverity::Error:
    return "error";
  case mlir::DiagnosticSeverity::Warning:
    return "warning";
  case mlir::DiagnosticSeverity::Note:
    return "note";
  case mlir::DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

static void setLocation(Diagnostic &d, mlir::Location loc) {
  if (auto file = loc->findInstanceOf<mlir::FileLineColLoc>()) {
    d.file = file.getFilename().str();
    d.line = file.getLine();
    d.column = file.getColumn();
  }
}

namespace {
/// SourceMgrDiagnosticHandler's rendering, into a string.
class Renderer : public mlir::SourceMgrDiagnosticHandler {
public:
  using SourceMgrDiagnosticHandler::emitDiagnostic;
  using SourceMgrDiagnosticHandler::SourceMgrDiagnosticHandler;
};

/// Collects the context's diagnostics as records while it is alive, each
/// also rendered as netc would print it (source line and caret).
class DiagnosticCollector {
public:
  DiagnosticCollector(mlir::MLIRContext &context, llvm::SourceMgr &sourceMgr,
                      std::vector<Diagnostic> &out)
      : renderer(sourceMgr, &context, renderStream),
        handler(&context,
                [this](mlir::Diagnostic &diag) {
                  collect(diag);
                  return mlir::success();
                }),
        out(out) {}

  bool hasErrors() const { return errors; }

private:
  void collect(mlir::Diagnostic &diag) {
    Diagnostic d;
    d.severity = severityName(diag.getSeverity());
    d.message = diag.str();
    setLocation(d, diag.getLocation());
    rendered.clear();
    renderer.emitDiagnostic(diag);
    d.rendered = rendered;
    while (!d.rendered.empty() && d.rendered.back() == '\n')
      d.rendered.pop_back();
    for (mlir::Diagnostic &note : diag.getNotes()) {
      Diagnostic n;
      n.severity = "note";
      n.message = note.str();
      setLocation(n, note.getLocation());
      d.notes.push_back(std::move(n));
    }
    if (diag.getSeverity() == mlir::DiagnosticSeverity::Error)
      errors = true;
    out.push_back(std::move(d));
  }

  std::string rendered;
  llvm::raw_string_ostream renderStream{rendered};
  Renderer renderer;
  mlir::ScopedDiagnosticHandler handler;
  std::vector<Diagnostic> &out;
  bool errors = false;
};
} // namespace

static std::string renderErrors(const std::vector<Diagnostic> &diagnostics) {
  std::string text;
  for (const Diagnostic &d : diagnostics)
    if (d.severity == "error")
      text += (text.empty() ? "" : "\n") + d.rendered;
  return text;
}

//===----------------------------------------------------------------------===//
// Compiling
//===----------------------------------------------------------------------===//

/// Whether an operation of the handlers of `app` may write packet memory.
/// Only netvm operations touch memories; one that does not describe its
/// effects counts as a writer unless it is structure (no operands).
static bool mayWritePackets(ApplicationOp app) {
  mlir::Dialect *netvmDialect = app->getDialect();
  auto result = app.walk([&](mlir::Operation *op) {
    if (op->getDialect() != netvmDialect || op == app.getOperation())
      return mlir::WalkResult::advance();
    if (auto effects = llvm::dyn_cast<mlir::MemoryEffectOpInterface>(op)) {
      llvm::SmallVector<mlir::MemoryEffects::EffectInstance> list;
      effects.getEffects(list);
      for (auto &e : list)
        if (llvm::isa<mlir::MemoryEffects::Write>(e.getEffect()) &&
            e.getResource() == PacketMemoryResource::get())
          return mlir::WalkResult::interrupt();
      return mlir::WalkResult::advance();
    }
    if (op->getNumOperands() == 0 || op->getNumRegions() > 0)
      return mlir::WalkResult::advance();
    return mlir::WalkResult::interrupt();
  });
  return result.wasInterrupted();
}

std::unique_ptr<Application>
Application::compile(const CompileRequest &request,
                     std::vector<Diagnostic> &diagnostics) {
  if (request.optLevel > 3)
    throw std::invalid_argument("opt_level must be 0, 1, 2 or 3, not " +
                                std::to_string(request.optLevel));
  if (request.inputs.empty())
    throw std::invalid_argument("nothing to compile");
  if (request.target != "native" && request.target != "me")
    throw std::invalid_argument("unknown target '" + request.target +
                                "': use 'native' or 'me'");
  (void)machineConfig(request.machine); // bad options: before compiling
  auto state = std::make_unique<State>();
  mlir::DialectRegistry registry;
  driver::registerDialects(registry);
  state->context = std::make_unique<mlir::MLIRContext>(
      registry, mlir::MLIRContext::Threading::DISABLED);
  mlir::MLIRContext &context = *state->context;
  context.printOpOnDiagnostic(false);
  DiagnosticCollector collector(context, state->sourceMgr, diagnostics);

  // Statistics counted before this compile belong to someone else.
  (void)takePassStatistics();
  // What to compile, checked as netc and netvm-run check theirs.
  bool isFilter = request.language == Language::NetPFL ||
                  request.language == Language::PcapFilter;
  driver::InputOptions in;
  in.protoDB = request.protoDB;
  in.appName = request.name;
  std::vector<std::pair<std::string, std::string>> buffers;
  for (const auto &[fileName, text] : request.inputs) {
    if (isFilter && text)
      (request.language == Language::NetPFL ? in.pfl : in.pcapFilter) = *text;
    else if (isFilter)
      in.filterFile = fileName;
    else
      in.files.push_back(fileName);
    if (text && !isFilter)
      buffers.emplace_back(fileName, *text);
  }
  in.filterFileLanguage = request.language == Language::NetPFL
                              ? driver::FilterLanguage::NetPFL
                              : driver::FilterLanguage::PcapFilter;
  std::string inputError;
  mlir::FailureOr<driver::Input> input = driver::resolveInput(in, inputError);
  if (mlir::failed(input))
    throw std::invalid_argument(inputError);
  if (isFilter && request.inputs.front().second)
    input->filterName = request.inputs.front().first;
  input->linkType = request.linkType;
  input->linkSwapped = request.linkSwapped;
  input->buffers = std::move(buffers);
  for (const auto &[fileName, text] : request.files)
    input->buffers.emplace_back(fileName, text);
  state->input = driver::load(context, state->sourceMgr, *input);
  // Every failure leaves at least one error behind.
  auto fail = [&]() -> std::unique_ptr<Application> {
    if (llvm::none_of(diagnostics, [](const Diagnostic &d) {
          return d.severity == "error";
        }))
      diagnostics.push_back({"error",
                             "compilation failed",
                             "",
                             0,
                             0,
                             "error: compilation failed",
                             {}});
    return nullptr;
  };
  if (!state->input || collector.hasErrors())
    return fail();

  state->optimized = state->input->clone();
  if (mlir::failed(driver::optimize(*state->optimized, request.optLevel)))
    return fail();
  std::vector<netvm::PassStatistic> counted = takePassStatistics();

  ApplicationOp app = driver::getApplication(*state->optimized);
  auto result = std::unique_ptr<Application>(new Application(std::move(state)));
  result->appName = app.getSymName().str();
  result->level = request.optLevel;
  for (mlir::Operation &op : app.getBodyBlock()->getOperations()) {
    if (auto pe = llvm::dyn_cast<PEOp>(op))
      result->peNames.push_back(pe.getSymName().str());
    else if (auto source = llvm::dyn_cast<SourceOp>(op))
      result->sourceNames.push_back(source.getSymName().str());
    else if (auto sink = llvm::dyn_cast<SinkOp>(op))
      result->sinkNames.push_back(sink.getSymName().str());
  }
  for (netvm::PassStatistic &s : counted)
    result->stats.push_back({s.pass, s.name, s.value});
  result->packetWrites = mayWritePackets(app);
  result->links = app.linkTypeOrEthernet();
  result->targetName = request.target;
  // Compiled for the MEs, every packet fits its buffer whole unless the
  // caller says otherwise.
  bool sized = false;
  for (const auto &option : request.machine)
    sized |= option.first == "max-packet";
  if (!sized)
    result->machineOptions.push_back(
        {"max-packet", std::to_string(me::compiledMaxPacketBytes)});
  result->machineOptions.insert(result->machineOptions.end(),
                                request.machine.begin(), request.machine.end());
  return result;
}

//===----------------------------------------------------------------------===//
// The microengines
//===----------------------------------------------------------------------===//

me::MachineConfig netvm::python::machineConfig(const MachineOptions &options) {
  me::MachineConfig config;
  for (const auto &[name, value] : options) {
    std::string error;
    if (!me::applyMachineOption(config, name, value, error))
      throw std::invalid_argument(error);
  }
  return config;
}

bool netvm::python::haveMECodeGen() {
#ifdef NETVM_HAVE_ME_CODEGEN
  return true;
#else
  return false;
#endif
}

std::shared_ptr<const me::CompiledApp>
Application::meProgram(std::vector<Diagnostic> &diagnostics) {
  if (compiledME)
    return compiledME;
#ifdef NETVM_HAVE_ME_CODEGEN
  me::CodeGenOptions options;
  options.machine = machineConfig(machineOptions);
  auto program = std::make_shared<me::CompiledApp>();
  // The back end lowers the module it is given: a clone of the input,
  // optimized for the big-endian MEs.
  mlir::OwningOpRef<mlir::ModuleOp> clone = state->input->clone();
  DiagnosticCollector collector(*state->context, state->sourceMgr, diagnostics);
  if (mlir::failed(
          driver::optimize(*clone, level, nullptr, driver::OptimizeFor::ME)) ||
      mlir::failed(me::compileApplication(*clone, options, *program))) {
    if (llvm::none_of(diagnostics, [](const Diagnostic &d) {
          return d.severity == "error";
        }))
      diagnostics.push_back({"error",
                             "the ME back end cannot compile the application",
                             "",
                             0,
                             0,
                             "error: the ME back end cannot compile the "
                             "application",
                             {}});
    return nullptr;
  }
  compiledME = std::move(program);
  return compiledME;
#else
  (void)diagnostics;
  throw std::runtime_error("this netvm package was built without the ME "
                           "back end (lib/Target/ME/CodeGen): it cannot "
                           "compile for the microengines");
#endif
}

std::unique_ptr<rt::Engine>
Application::interpreter(const rt::EngineOptions &options, std::string &error) {
  return rt::Engine::interpreter(driver::getApplication(*state->optimized),
                                 options, error);
}

//===----------------------------------------------------------------------===//
// Stages
//===----------------------------------------------------------------------===//

static std::string print(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

/// Run `fn` with the context's diagnostics collected; a failure throws
/// std::runtime_error with `what` and the diagnostics.
template <typename Fn>
static auto collecting(mlir::MLIRContext &context, llvm::SourceMgr &sourceMgr,
                       const std::string &what, Fn fn) {
  std::vector<Diagnostic> diagnostics;
  DiagnosticCollector collector(context, sourceMgr, diagnostics);
  std::string error;
  auto result = fn(error);
  if (!error.empty()) {
    std::string details = renderErrors(diagnostics);
    throw std::runtime_error(what + ": " + error +
                             (details.empty() ? "" : "\n" + details));
  }
  return result;
}

std::string Application::mlir(const std::string &stage) {
  if (stage == "input")
    return print(*state->input);
  if (stage == "optimized")
    return print(*state->optimized);
  if (stage == "instrumented") {
    mlir::OwningOpRef<mlir::ModuleOp> clone = state->input->clone();
    (void)takePassStatistics();
    return collecting(*state->context, state->sourceMgr, "instrumenting",
                      [&](std::string &error) {
                        if (mlir::failed(driver::optimize(*clone, 0)))
                          error = "the -O0 pipeline failed";
                        (void)takePassStatistics();
                        return print(*clone);
                      });
  }
  if (stage == "llvm-dialect") {
    mlir::OwningOpRef<mlir::ModuleOp> clone = state->optimized->clone();
    return collecting(*state->context, state->sourceMgr, "lowering",
                      [&](std::string &error) {
                        NativeLoweringOptions options;
                        if (mlir::failed(lowerToLLVMDialect(*clone, options)))
                          error = "netvm-to-llvm failed";
                        return print(*clone);
                      });
  }
  throw std::invalid_argument("unknown stage '" + stage +
                              "': use 'input', 'instrumented', 'optimized' "
                              "or 'llvm-dialect'");
}

enum { EmitIR, EmitAssembly, EmitObject };

std::string Application::codegen(const std::string &triple,
                                 const std::string &cpu,
                                 const std::string &descriptor, int kind) {
  std::string why;
  if (!triple.empty() && !native::isSupportedTriple(triple, why))
    throw std::invalid_argument(why);
  auto tm = native::createTargetMachine(triple, level, cpu);
  if (!tm)
    throw std::invalid_argument(llvm::toString(tm.takeError()));
  mlir::OwningOpRef<mlir::ModuleOp> clone = state->optimized->clone();
  native::CodegenOptions options;
  options.optLevel = level;
  options.lowering.descriptorSymbol = descriptor;
  return collecting(
      *state->context, state->sourceMgr, "code generation",
      [&](std::string &error) -> std::string {
        llvm::LLVMContext llvmContext;
        auto module =
            native::generateLLVMIR(*clone, llvmContext, **tm, options);
        if (!module) {
          error = llvm::toString(module.takeError());
          return {};
        }
        llvm::SmallString<0> out;
        llvm::raw_svector_ostream os(out);
        if (kind == EmitIR) {
          (*module)->print(os, nullptr);
        } else if (llvm::Error err = native::emitFile(
                       **module, **tm,
                       kind == EmitObject ? native::FileKind::Object
                                          : native::FileKind::Assembly,
                       os)) {
          error = llvm::toString(std::move(err));
          return {};
        }
        return std::string(out.str());
      });
}

std::string Application::llvmIR(const std::string &triple,
                                const std::string &cpu) {
  return codegen(triple, cpu, "", EmitIR);
}

std::string Application::assembly(const std::string &triple,
                                  const std::string &cpu) {
  return codegen(triple, cpu, "", EmitAssembly);
}

std::string Application::object(const std::string &triple,
                                const std::string &cpu,
                                const std::string &descriptor) {
  return codegen(triple, cpu, descriptor, EmitObject);
}

const netvm_app_desc *Application::jit() {
  if (jitted)
    return jitted;
  mlir::OwningOpRef<mlir::ModuleOp> clone = state->optimized->clone();
  native::CodegenOptions options;
  options.optLevel = level;
  // Instances push packets one at a time through the per-call entries;
  // the batch entries' fast loops are compiled if something runs them.
  options.eager = native::JitEntries::PerCall;
  jitted = collecting(*state->context, state->sourceMgr, "JIT compilation",
                      [&](std::string &error) -> const netvm_app_desc * {
                        auto desc = native::jitCompile(*clone, options);
                        if (!desc) {
                          error = llvm::toString(desc.takeError());
                          return nullptr;
                        }
                        return *desc;
                      });
  return jitted;
}
