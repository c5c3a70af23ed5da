//===- SplitApplication.cpp - Cutting an application for the split run ----===//
//
// planSplit and createSplitEngine of netvm/Runtime/Split.h: the NetPE
// graph cut into a head for the microengines and a tail for the host, each
// part an application of its own (a clone of the module with the other
// part's NetPEs removed), a cut connection becoming a sink of the head and
// a source of the tail of the same name. The parts are optimized and
// compiled as netvm-run would optimize and compile a whole application
// for their engines, with the whole application's info memory size.
//
//===----------------------------------------------------------------------===//

#include "netvm/Runtime/Split.h"

#include "NetVM/NetVMOps.h"
#include "netvm/Driver/Driver.h"
#include "netvm/Target/ME/CodeGen.h"
#include "netvm/Target/Native.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <set>

using namespace mlir;

namespace netvm::rt {
namespace {

/// An endpoint of a connection: a source or sink (`port` empty) or a port
/// of a NetPE.
struct End {
  std::string node, port;
  std::string text() const { return port.empty() ? node : node + "." + port; }
};

End endOf(SymbolRefAttr ref) {
  End e;
  e.node = ref.getRootReference().str();
  if (!ref.getNestedReferences().empty())
    e.port = ref.getLeafReference().str();
  return e;
}

/// Why the microengines cannot run `pe`, or "".
std::string hostOnly(PEOp pe) {
  for (Attribute attr : pe.getCoprocessors()) {
    StringRef name = cast<StringAttr>(attr).getValue();
    if (name != "lookup")
      return ("it uses coprocessor '" + name + "', which runs on the host")
          .str();
  }
  for (PortOp port : pe.getPorts())
    if (!port.isPush())
      return "it has a pull port";
  if (pe.getHandler(HandlerKind::Pull))
    return "it has a pull handler";
  return "";
}

/// The name of the sink and source that stand for a cut connection.
std::string cutName(const End &to) { return "split." + to.text(); }

struct Cut {
  SplitPlan plan;
  std::set<std::string> head;
};

bool cut(ApplicationOp app, Cut &result, std::string &error) {
  SplitPlan &plan = result.plan;
  std::set<std::string> &head = result.head;
  std::map<std::string, std::string> why;
  std::vector<std::string> order;
  for (PEOp pe : app.getBodyBlock()->getOps<PEOp>()) {
    std::string name = pe.getSymName().str();
    order.push_back(name);
    why[name] = hostOnly(pe);
    if (why[name].empty())
      head.insert(name);
  }
  std::set<std::string> pes(order.begin(), order.end());
  // Every NetPE upstream of a head NetPE must be in the head: the packets
  // go from the MEs to the host, never back.
  for (bool changed = true; changed;) {
    changed = false;
    for (ConnectOp c : app.getBodyBlock()->getOps<ConnectOp>()) {
      End from = endOf(c.getFrom()), to = endOf(c.getTo());
      if (pes.count(from.node) && !head.count(from.node) &&
          head.erase(to.node)) {
        why[to.node] = "NetPE '" + from.node + "' before it runs on the host";
        changed = true;
      }
    }
  }
  if (head.empty()) {
    std::string reasons;
    for (const std::string &pe : order)
      reasons += "; '" + pe + "': " + why[pe];
    error =
        "no NetPE of this application can run on the microengines" + reasons;
    return false;
  }
  bool sharedHead = false, sharedTail = false;
  for (PEOp pe : app.getBodyBlock()->getOps<PEOp>()) {
    std::string name = pe.getSymName().str();
    (head.count(name) ? plan.head : plan.tail).push_back(name);
    if (pe.getSharedmemSize())
      (head.count(name) ? sharedHead : sharedTail) = true;
  }
  if (sharedHead && sharedTail) {
    error = "NetPEs on the microengines and on the host share memory; the "
            "split cannot keep one copy of it";
    return false;
  }
  for (ConnectOp c : app.getBodyBlock()->getOps<ConnectOp>()) {
    End from = endOf(c.getFrom()), to = endOf(c.getTo());
    if (!pes.count(from.node) && pes.count(to.node) && !head.count(to.node)) {
      error = "source '" + from.node + "' feeds NetPE '" + to.node +
              "', which runs on the host (" + why[to.node] +
              "); the split needs every source to feed the microengines";
      return false;
    }
    if (head.count(from.node) && pes.count(to.node) && !head.count(to.node))
      plan.cuts.push_back(from.text() + " -> " + to.text());
  }
  return true;
}

/// A clone of `module` with only the NetPEs of one part: `keep` says
/// which. The head keeps the sources and gets a sink per cut connection;
/// the tail gets a source per cut connection instead of the sources.
OwningOpRef<ModuleOp> part(ModuleOp module, const std::set<std::string> &head,
                           bool tailPart) {
  OwningOpRef<ModuleOp> clone = module.clone();
  ApplicationOp app = driver::getApplication(*clone);
  Block *body = app.getBodyBlock();
  std::set<std::string> pes;
  for (PEOp pe : body->getOps<PEOp>())
    pes.insert(pe.getSymName().str());
  auto kept = [&](const std::string &pe) {
    return pes.count(pe) && head.count(pe) != tailPart;
  };
  OpBuilder b(module.getContext());
  MLIRContext *ctx = module.getContext();
  auto portRef = [&](const End &e) {
    return SymbolRefAttr::get(ctx, e.node,
                              {FlatSymbolRefAttr::get(ctx, e.port)});
  };
  std::set<std::string> fedSinks;
  std::vector<Operation *> dead;
  for (ConnectOp c : llvm::make_early_inc_range(body->getOps<ConnectOp>())) {
    End from = endOf(c.getFrom()), to = endOf(c.getTo());
    bool fromPE = pes.count(from.node), toPE = pes.count(to.node);
    bool cutHere =
        fromPE && toPE && head.count(from.node) && !head.count(to.node);
    if (cutHere) {
      b.setInsertionPoint(c);
      std::string name = cutName(to);
      if (!tailPart) { // head: the connection ends in a sink
        b.setInsertionPointToStart(body);
        SinkOp::create(b, c.getLoc(), name);
        b.setInsertionPoint(c);
        ConnectOp::create(b, c.getLoc(), portRef(from),
                          FlatSymbolRefAttr::get(ctx, name));
        fedSinks.insert(name);
      } else { // tail: it starts at a source
        b.setInsertionPointToStart(body);
        SourceOp::create(b, c.getLoc(), name);
        b.setInsertionPoint(c);
        ConnectOp::create(b, c.getLoc(), FlatSymbolRefAttr::get(ctx, name),
                          portRef(to));
      }
      c.erase();
      continue;
    }
    bool keep =
        (fromPE ? kept(from.node) : !tailPart) && (toPE ? kept(to.node) : true);
    if (!keep)
      c.erase();
    else if (!toPE)
      fedSinks.insert(to.node);
  }
  for (Operation &op : *body) {
    if (auto pe = dyn_cast<PEOp>(op); pe && !kept(pe.getSymName().str()))
      dead.push_back(&op);
    if (auto sink = dyn_cast<SinkOp>(op);
        sink && !fedSinks.count(sink.getSymName().str()))
      dead.push_back(&op);
    if (auto source = dyn_cast<SourceOp>(op);
        source && tailPart && !source.getSymName().starts_with("split."))
      dead.push_back(&op);
  }
  for (Operation *op : dead)
    op->erase();
  return clone;
}

template <typename OpT> std::vector<std::string> namesOf(ApplicationOp app) {
  std::vector<std::string> names;
  for (OpT op : app.getBodyBlock()->getOps<OpT>())
    names.push_back(op.getSymName().str());
  return names;
}

unsigned indexIn(const std::vector<std::string> &names,
                 const std::string &name) {
  return static_cast<unsigned>(llvm::find(names, name) - names.begin());
}

} // namespace

bool planSplit(ModuleOp module, SplitPlan &plan, std::string &error) {
  Cut c;
  if (!cut(driver::getApplication(module), c, error))
    return false;
  plan = c.plan;
  return true;
}

std::unique_ptr<Engine> createSplitEngine(ModuleOp module,
                                          const SplitOptions &options,
                                          SplitPlan &plan, std::string &error) {
  ApplicationOp app = driver::getApplication(module);
  Cut c;
  if (!cut(app, c, error))
    return nullptr;
  plan = c.plan;
  // Both parts get the whole application's info memory.
  uint32_t infoSize = options.engine.defaultInfoSize;
  for (PEOp pe : app.getBodyBlock()->getOps<PEOp>())
    infoSize = std::max(infoSize, pe.getInfoSize());

  SplitRoutes routes;
  routes.sources = namesOf<SourceOp>(app);
  routes.sinks = namesOf<SinkOp>(app);
  routes.pes = namesOf<PEOp>(app);

  // The head, on the emulator.
  OwningOpRef<ModuleOp> headModule = part(module, c.head, false);
  if (failed(driver::optimize(*headModule, options.optLevel, nullptr,
                              driver::OptimizeFor::ME))) {
    error = "the NetPEs for the microengines do not optimize";
    return nullptr;
  }
  me::CodeGenOptions codegen;
  codegen.machine = options.machine;
  codegen.defaultInfoSize = infoSize;
  if (!options.mePlacement.empty() &&
      !me::parsePlacement(options.mePlacement, codegen.placement, error)) {
    error = "--me-placement: " + error;
    return nullptr;
  }
  me::CompiledApp compiled;
  if (failed(me::compileApplication(*headModule, codegen, compiled))) {
    std::string list;
    for (const std::string &pe : plan.head)
      list += (list.empty() ? "'" : ", '") + pe + "'";
    error = "the ME back end cannot compile the NetPEs the split puts on the "
            "microengines (" +
            list + "; see the errors above)";
    return nullptr;
  }
  EngineOptions engineOptions = options.engine;
  engineOptions.defaultInfoSize = infoSize;
  std::unique_ptr<Engine> head =
      Engine::emulator(compiled, engineOptions, options.machine, error);
  if (!head)
    return nullptr;
  ApplicationOp headApp = driver::getApplication(*headModule);
  std::vector<std::string> headPes = namesOf<PEOp>(headApp);
  std::vector<std::string> headSinks = namesOf<SinkOp>(headApp);

  // The tail, JIT-compiled.
  std::unique_ptr<Engine> tail;
  std::vector<std::string> tailPes, tailSources, tailSinks;
  if (!plan.tail.empty()) {
    OwningOpRef<ModuleOp> tailModule = part(module, c.head, true);
    if (failed(driver::optimize(*tailModule, options.optLevel))) {
      error = "the NetPEs for the host do not optimize";
      return nullptr;
    }
    ApplicationOp tailApp = driver::getApplication(*tailModule);
    tailPes = namesOf<PEOp>(tailApp);
    tailSources = namesOf<SourceOp>(tailApp);
    tailSinks = namesOf<SinkOp>(tailApp);
    native::CodegenOptions jit;
    jit.optLevel = options.optLevel;
    jit.lowering.defaultInfoSize = infoSize;
    auto desc = native::jitCompile(*tailModule, jit);
    if (!desc) {
      error = llvm::toString(desc.takeError());
      return nullptr;
    }
    EngineOptions tailOptions = engineOptions;
    tailOptions.threads = 1;
    tailOptions.pipeline = false;
    tail = Engine::native(*desc, tailOptions, error);
    if (!tail)
      return nullptr;
  }

  for (const std::string &sink : headSinks) {
    SplitRoutes::Route r;
    r.toTail = StringRef(sink).starts_with("split.");
    r.index =
        r.toTail ? indexIn(tailSources, sink) : indexIn(routes.sinks, sink);
    routes.headSinks.push_back(r);
  }
  for (const std::string &sink : tailSinks)
    routes.tailSinks.push_back(indexIn(routes.sinks, sink));
  for (const std::string &pe : routes.pes) {
    bool inTail = !c.head.count(pe);
    routes.peHomes.push_back({inTail, indexIn(inTail ? tailPes : headPes, pe)});
  }
  return splitEngine(std::move(head), std::move(tail), std::move(routes),
                     error);
}

} // namespace netvm::rt
