//===- SplitPE.cpp - Split one NetPE's push handler in two ----------------===//
//
// netvm-split-pe (NetVMPasses.td): the push handler of a NetPE is cut
// before a block C; the blocks C dominates become the push handler of a new
// NetPE fed by a new port, the values live across the cut travel in info
// memory. The legality rules and the choice of C are in the pass's
// description and docs/optimizer.md.
//
//===----------------------------------------------------------------------===//

#include "netvm/Transforms/SplitPE.h"

#include "NetVM/NetVMPasses.h"
#include "PassUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/Format.h"

#include <cmath>

#define DEBUG_TYPE "netvm-split-pe"

namespace netvm {
#define GEN_PASS_DEF_NETVMSPLITPE
#include "NetVM/NetVMPasses.h.inc"
} // namespace netvm

using namespace mlir;
using namespace netvm;

namespace {

/// What one side of a cut does with the NetPE's state.
struct SideUse {
  bool data = false, random = false, sharedRead = false, sharedWrite = false,
       sendDup = false;
  llvm::StringSet<> coprocessors, ports;
  bool owns() const { return data || random || !coprocessors.empty(); }
};

/// A candidate cut before `cut`, with what the split would need.
struct Cut {
  Block *cut = nullptr;
  unsigned index = 0;
  llvm::SetVector<Block *> second; // blocks `cut` dominates, region order
  llvm::SetVector<Value> carried;  // defined before the cut, used after
  llvm::SetVector<Operation *> constants; // used after: copied, not carried
  SideUse before, after;
  double firstCost = 0, secondCost = 0;
  std::string illegal; // why not (empty: legal)
};

} // namespace

static void noteSpace(SideUse &u, MemSpace space, bool write) {
  if (space == MemSpace::Data)
    u.data = true;
  else if (space == MemSpace::Shared)
    (write ? u.sharedWrite : u.sharedRead) = true;
}

static void noteOp(SideUse &u, Operation *op) {
  if (auto ld = dyn_cast<LoadOp>(op))
    noteSpace(u, ld.getSpace(), false);
  else if (auto st = dyn_cast<StoreOp>(op))
    noteSpace(u, st.getSpace(), true);
  else if (auto at = dyn_cast<AtomicAddOp>(op))
    noteSpace(u, at.getSpace(), true);
  else if (auto cp = dyn_cast<CopyOp>(op)) {
    noteSpace(u, cp.getSrcSpace(), false);
    noteSpace(u, cp.getDstSpace(), true);
  } else if (auto cb = dyn_cast<CheckBoundsOp>(op))
    noteSpace(u, cb.getSpace(), false);
  else if (isa<RandomOp>(op))
    u.random = true;
  else if (auto send = dyn_cast<SendOp>(op))
    u.ports.insert(send.getPort());
  else if (auto dup = dyn_cast<SendDupOp>(op)) {
    u.ports.insert(dup.getPort());
    u.sendDup = true;
  }
  if (auto copro = op->getAttrOfType<StringAttr>("copro"))
    u.coprocessors.insert(copro.getValue());
}

static std::optional<uint64_t> constantOf(Value v) {
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return c.getZExtValue();
  return std::nullopt;
}

/// The first byte of info memory no NetPE of `app` can touch, or an error
/// when one could reach any byte (a computed offset, info_len).
static std::optional<uint32_t> infoEnd(ApplicationOp app, std::string &error) {
  uint64_t end = 0;
  for (PEOp pe : app.getBodyBlock()->getOps<PEOp>())
    end = std::max<uint64_t>(end, pe.getInfoSize());
  WalkResult walk = app.walk([&](Operation *op) {
    auto access = [&](MemSpace space, Value offset,
                      std::optional<uint64_t> size) {
      if (space != MemSpace::Info)
        return true;
      std::optional<uint64_t> at = constantOf(offset);
      if (!at || !size) {
        error = "NetPE '" + op->getParentOfType<PEOp>().getSymName().str() +
                "' accesses info memory at a computed offset or length: "
                "the carried values could not be kept from it";
        return false;
      }
      end = std::max(end, *at + *size);
      return true;
    };
    bool ok = true;
    if (auto ld = dyn_cast<LoadOp>(op))
      ok = access(ld.getSpace(), ld.getOffset(),
                  ld.getType().getIntOrFloatBitWidth() / 8);
    else if (auto st = dyn_cast<StoreOp>(op))
      ok = access(st.getSpace(), st.getOffset(),
                  st.getValue().getType().getIntOrFloatBitWidth() / 8);
    else if (auto cp = dyn_cast<CopyOp>(op))
      ok = access(cp.getSrcSpace(), cp.getSrc(), constantOf(cp.getLength())) &&
           access(cp.getDstSpace(), cp.getDst(), constantOf(cp.getLength()));
    else if (auto cb = dyn_cast<CheckBoundsOp>(op))
      ok = access(cb.getSpace(), cb.getOffset(),
                  cb.hasConstantExtent()
                      ? std::optional<uint64_t>(cb.getExtent())
                      : constantOf(cb.getLength()));
    else if (isa<InfoLengthOp>(op)) {
      error = "NetPE '" + op->getParentOfType<PEOp>().getSymName().str() +
              "' reads info_len, which the carried values would change";
      ok = false;
    }
    return ok ? WalkResult::advance() : WalkResult::interrupt();
  });
  if (walk.wasInterrupted())
    return std::nullopt;
  return uint32_t((end + 3) & ~uint64_t(3));
}

/// Fills `c` for the cut before `c.cut`; `c.illegal` says why it is not
/// legal.
static void analyzeCut(HandlerOp push, DominanceInfo &dom,
                       const llvm::DenseMap<Block *, double> &costs,
                       const llvm::SmallPtrSetImpl<Block *> &reachable,
                       unsigned maxCarried, Cut &c) {
  Region &body = push.getBody();
  Block *cut = c.cut;
  if (cut == &body.front()) {
    c.illegal = "it is the entry block";
    return;
  }
  if (!reachable.contains(cut)) {
    c.illegal = "it is unreachable";
    return;
  }
  for (Block &b : body)
    if (reachable.contains(&b) && dom.dominates(cut, &b))
      c.second.insert(&b);
  for (Block *b : c.second)
    for (Block *s : b->getSuccessors()) {
      if (s == cut) {
        c.illegal = "it is in a loop (a block after it branches back to it)";
        return;
      }
      if (!c.second.contains(s)) {
        c.illegal = "a block after it branches to a block it does not "
                    "dominate (it is in a loop, or paths join past it)";
        return;
      }
    }
  for (Block &b : body) {
    bool after = c.second.contains(&b);
    (after ? c.secondCost : c.firstCost) += costs.lookup(&b);
    SideUse &u = after ? c.after : c.before;
    for (Operation &op : b) {
      op.walk([&](Operation *nested) { noteOp(u, nested); });
      if (!after || isa<ReceiveOp, ExbufCreateOp, ExbufDeleteOp>(op))
        continue;
      for (Value v : op.getOperands()) {
        Block *def = v.getParentBlock();
        if (!def || c.second.contains(def))
          continue;
        if (Operation *op = v.getDefiningOp();
            op && op->hasTrait<OpTrait::ConstantLike>())
          c.constants.insert(op);
        else
          c.carried.insert(v);
      }
    }
  }
  for (BlockArgument a : cut->getArguments())
    c.carried.insert(a);
  if (c.before.data && c.after.data) {
    c.illegal = "data memory is used on both sides: the halves run in "
                "different stages, so a packet's later accesses could come "
                "before an earlier packet's";
    return;
  }
  if (c.before.random && c.after.random) {
    c.illegal = "random numbers are drawn on both sides";
    return;
  }
  for (const auto &name : c.before.coprocessors)
    if (c.after.coprocessors.contains(name.getKey())) {
      c.illegal =
          "coprocessor '" + name.getKey().str() + "' is used on both sides";
      return;
    }
  if (c.before.owns() && c.after.owns()) {
    c.illegal = "state (data memory, coprocessors, random numbers) is used on "
                "both sides";
    return;
  }
  if ((c.before.sharedRead || c.before.sharedWrite) &&
      (c.after.sharedRead || c.after.sharedWrite) &&
      (c.before.sharedWrite || c.after.sharedWrite)) {
    c.illegal = "shared memory is used on both sides and written on one";
    return;
  }
  if (c.before.sendDup) {
    c.illegal = "a copy is sent (send_dup) before it";
    return;
  }
  for (const auto &port : c.before.ports)
    if (c.after.ports.contains(port.getKey())) {
      c.illegal =
          "port '" + port.getKey().str() + "' is sent on from both sides";
      return;
    }
  for (Value v : c.carried) {
    auto type = dyn_cast<IntegerType>(v.getType());
    if (!type || type.getWidth() > 32) {
      c.illegal = "a value live across it is not an integer of at most 32 bits";
      return;
    }
  }
  if (c.carried.size() > maxCarried)
    c.illegal = std::to_string(c.carried.size()) +
                (c.carried.size() == 1 ? " value is" : " values are") +
                " live across it (at most " + std::to_string(maxCarried) + ")";
}

static std::string uniqueName(llvm::StringRef want,
                              llvm::function_ref<bool(llvm::StringRef)> taken) {
  std::string name = want.str();
  for (unsigned i = 2; taken(name); ++i)
    name = want.str() + "_" + std::to_string(i);
  return name;
}

LogicalResult netvm::splitPE(ApplicationOp app, const SplitOptions &options,
                             SplitResult &result, std::string &error) {
  PEOp pe = app.lookupPE(options.pe);
  if (!pe) {
    error = "no NetPE named '" + options.pe + "'";
    return failure();
  }
  HandlerOp push = pe.getHandler(HandlerKind::Push);
  if (!push || push.getBody().empty()) {
    error = "NetPE '" + options.pe + "' has no push handler";
    return failure();
  }
  for (PortOp port : pe.getPorts())
    if (!port.isPush()) {
      error = "NetPE '" + options.pe + "' has pull ports";
      return failure();
    }
  if (replacesExchangeBuffer(push)) {
    error = "NetPE '" + options.pe + "' replaces its exchange buffer";
    return failure();
  }
  std::optional<uint32_t> infoBase = infoEnd(app, error);
  if (!infoBase)
    return failure();

  Region &body = push.getBody();
  DominanceInfo dom(push);
  llvm::DenseMap<Block *, double> costs =
      analysis::blockCosts(push, options.target, options.profile);
  double total = 0;
  for (auto &[b, c] : costs)
    total += c;
  llvm::SmallPtrSet<Block *, 16> reachable;
  {
    SmallVector<Block *> work{&body.front()};
    while (!work.empty()) {
      Block *b = work.pop_back_val();
      if (reachable.insert(b).second)
        for (Block *s : b->getSuccessors())
          work.push_back(s);
    }
  }
  unsigned numBlocks = body.getBlocks().size();
  if (options.block >= 0 && unsigned(options.block) >= numBlocks) {
    error = "NetPE '" + options.pe + "' has " + std::to_string(numBlocks) +
            " blocks in its push handler: no block " +
            std::to_string(options.block);
    return failure();
  }

  // Every candidate; the legal one nearest the fraction wins.
  std::optional<Cut> best;
  double bestScore = INFINITY, nearestIllegal = INFINITY;
  std::string illegalReason;
  unsigned index = 0;
  for (Block &b : body) {
    unsigned i = index++;
    if (options.block >= 0 && int(i) != options.block)
      continue;
    Cut c;
    c.cut = &b;
    c.index = i;
    analyzeCut(push, dom, costs, reachable, options.maxCarried, c);
    double share = total > 0 ? c.firstCost / total : 0.5;
    double off = std::fabs(share - options.fraction);
    if (!c.illegal.empty()) {
      if (options.block >= 0 || (off < nearestIllegal && i != 0)) {
        nearestIllegal = off;
        illegalReason = "block " + std::to_string(i) + ": " + c.illegal;
      }
      continue;
    }
    double score = off + 0.01 * c.carried.size();
    if (score < bestScore) {
      bestScore = score;
      best = std::move(c);
    }
  }
  if (!best) {
    error =
        options.block >= 0
            ? "cannot cut NetPE '" + options.pe + "' before " + illegalReason
            : "NetPE '" + options.pe + "' has no legal cut point" +
                  (illegalReason.empty()
                       ? std::string(" (its push handler is one block)")
                       : " (nearest the fraction: " + illegalReason + ")");
    return failure();
  }
  Cut &cut = *best;
  LLVM_DEBUG(llvm::dbgs() << "netvm-split-pe: '" << options.pe
                          << "' before block " << cut.index << " ("
                          << cut.firstCost << " + " << cut.secondCost << ", "
                          << cut.carried.size() << " carried)\n");

  // The second NetPE, after the first.
  MLIRContext *ctx = app.getContext();
  OpBuilder b(ctx);
  std::string secondName = uniqueName(options.pe + "_2", [&](StringRef n) {
    return static_cast<bool>(SymbolTable::lookupSymbolIn(app, n));
  });
  b.setInsertionPointAfter(pe);
  PEOp second = PEOp::create(b, pe.getLoc(), secondName);
  if (second.getBody().empty())
    second.getBody().emplaceBlock();
  unsigned k = cut.carried.size();
  uint32_t infoSize = *infoBase + 4 * k;
  pe.setInfoSize(std::max<uint32_t>(pe.getInfoSize(), infoSize));
  second.setInfoSize(infoSize);
  second.setSharedmemSize(pe.getSharedmemSize());
  if (auto init = pe.getInitdataAttr())
    second.setInitdataAttr(init);
  if (auto stage = pe->getAttr("netvm.stage"))
    second->setAttr("netvm.stage", stage);

  // Ports: an input, the output ports only the second half sends on (moved
  // with their connections), and the first half's new output.
  b.setInsertionPointToEnd(second.getBodyBlock());
  std::string inName = "in";
  PortOp::create(b, pe.getLoc(), inName, PortKind::PushInput);
  // A copy: the loop erases ports (and a range over the temporary vector
  // getPorts() returns would not keep it alive).
  SmallVector<PortOp, 4> ports = pe.getPorts();
  for (PortOp port : ports) {
    if (port.isInput() || !cut.after.ports.contains(port.getSymName()))
      continue;
    b.setInsertionPointToEnd(second.getBodyBlock());
    PortOp::create(b, port.getLoc(), port.getSymName(), port.getKind());
    for (ConnectOp c : app.getBodyBlock()->getOps<ConnectOp>()) {
      SymbolRefAttr from = c.getFrom();
      if (from.getRootReference() == pe.getSymNameAttr() &&
          !from.getNestedReferences().empty() &&
          from.getLeafReference() == port.getSymNameAttr())
        c.setFromAttr(SymbolRefAttr::get(
            second.getSymNameAttr(),
            {FlatSymbolRefAttr::get(port.getSymNameAttr())}));
    }
    port.erase();
  }
  std::string portName = uniqueName("split", [&](StringRef n) {
    return static_cast<bool>(pe.lookupPort(n));
  });
  Operation *lastPort = nullptr;
  for (PortOp port : pe.getPorts())
    lastPort = port;
  if (lastPort)
    b.setInsertionPointAfter(lastPort);
  else
    b.setInsertionPointToStart(pe.getBodyBlock());
  PortOp::create(b, pe.getLoc(), portName, PortKind::PushOutput);

  // State moves to the side that uses it, with the init handler.
  if (cut.after.owns()) {
    second.setDatamemSize(pe.getDatamemSize());
    pe.setDatamemSize(0);
    second.setCoprocessorsAttr(pe.getCoprocessorsAttr());
    pe.setCoprocessorsAttr(ArrayAttr::get(ctx, {}));
    if (HandlerOp init = pe.getHandler(HandlerKind::Init))
      init->moveBefore(second.getBodyBlock(), second.getBodyBlock()->end());
  }

  // The second handler: load the carried words, zero them, go to the cut.
  b.setInsertionPointToEnd(second.getBodyBlock());
  HandlerOp push2 = HandlerOp::create(b, push.getLoc(), HandlerKind::Push);
  Region &body2 = push2.getBody();
  Block *entry2 = &body2.front();
  for (Block *blk : cut.second)
    blk->moveBefore(&body2, body2.end());
  Location loc = cut.cut->empty() ? push.getLoc() : cut.cut->front().getLoc();
  b.setInsertionPointToStart(entry2);
  Type i32 = b.getI32Type();
  for (Operation *op : cut.constants) {
    Operation *copy = b.clone(*op);
    op->getResult(0).replaceUsesWithIf(copy->getResult(0), [&](OpOperand &use) {
      return use.getOwner()->getParentRegion() == &body2;
    });
  }
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
  SmallVector<Value> loaded;
  for (unsigned i = 0; i < k; ++i) {
    Value off = arith::ConstantIntOp::create(b, loc, *infoBase + 4 * i, 32);
    Value w = LoadOp::create(b, loc, i32, MemSpace::Info, off,
                             /*in_bounds=*/true, /*little_endian=*/false);
    StoreOp::create(b, loc, zero, MemSpace::Info, off, /*in_bounds=*/true);
    Type t = cut.carried[i].getType();
    if (t != i32)
      w = arith::TruncIOp::create(b, loc, t, w);
    loaded.push_back(w);
  }
  SmallVector<Value> cutArgs;
  for (unsigned i = 0; i < k; ++i) {
    Value v = cut.carried[i];
    if (auto arg = dyn_cast<BlockArgument>(v); arg && arg.getOwner() == cut.cut)
      cutArgs.push_back(loaded[i]);
    else
      v.replaceUsesWithIf(loaded[i], [&](OpOperand &use) {
        return use.getOwner()->getParentRegion() == &body2;
      });
  }
  cf::BranchOp::create(b, loc, cut.cut, cutArgs);

  // The first handler: where it went to the cut, store and send.
  Block *store = new Block();
  body.push_back(store);
  SmallVector<Value> storeArgs;
  for (BlockArgument a : cut.cut->getArguments())
    storeArgs.push_back(store->addArgument(a.getType(), a.getLoc()));
  b.setInsertionPointToStart(store);
  for (unsigned i = 0; i < k; ++i) {
    Value v = cut.carried[i];
    if (auto arg = dyn_cast<BlockArgument>(v); arg && arg.getOwner() == cut.cut)
      v = storeArgs[arg.getArgNumber()];
    if (v.getType() != i32)
      v = arith::ExtUIOp::create(b, loc, i32, v);
    Value off = arith::ConstantIntOp::create(b, loc, *infoBase + 4 * i, 32);
    StoreOp::create(b, loc, v, MemSpace::Info, off, /*in_bounds=*/true);
  }
  SendOp::create(b, loc, portName);
  for (Block &blk : body)
    if (Operation *term = blk.empty() ? nullptr : &blk.back())
      for (unsigned s = 0; s < term->getNumSuccessors(); ++s)
        if (term->getSuccessor(s) == cut.cut)
          term->setSuccessor(store, s);

  // The connection between the halves, after the first half's.
  b.setInsertionPointToEnd(app.getBodyBlock());
  ConnectOp::create(b, pe.getLoc(),
                    SymbolRefAttr::get(pe.getSymNameAttr(),
                                       {FlatSymbolRefAttr::get(ctx, portName)}),
                    SymbolRefAttr::get(second.getSymNameAttr(),
                                       {FlatSymbolRefAttr::get(ctx, inName)}));

  result.first = options.pe;
  result.second = secondName;
  result.port = portName;
  result.block = cut.index;
  result.carried = k;
  result.infoOffset = *infoBase;
  result.firstCost = cut.firstCost;
  result.secondCost = cut.secondCost;
  result.cut = cut.cut;
  result.storeBlock = store;
  result.loadBlock = entry2;
  return success();
}

static ApplicationOp applicationOf(ModuleOp module) {
  auto apps = module.getOps<ApplicationOp>();
  return apps.empty() ? ApplicationOp() : *apps.begin();
}

bool netvm::partitionWithSplit(ModuleOp optimized, ModuleOp loaded,
                               const SplitPlanner &planner,
                               analysis::CostTarget target,
                               const analysis::PartitionOptions &options,
                               analysis::Profile *profile,
                               analysis::CostModel &model, analysis::Plan &plan,
                               std::string &error,
                               OwningOpRef<ModuleOp> *splitLoaded) {
  if (splitLoaded)
    *splitLoaded = nullptr;
  auto planFor = [&](ApplicationOp a, analysis::Profile *p,
                     analysis::CostModel &m, analysis::Plan &pl,
                     std::string &err) {
    bool profiled = p && p->packets;
    m = analysis::buildCostModel(a, target, profiled ? p : nullptr);
    if (options.cores)
      m.cores = options.cores;
    if (profiled)
      analysis::calibrate(m, *p);
    return analysis::partition(m, options, pl, err);
  };
  ApplicationOp app = applicationOf(optimized);
  if (!app) {
    error = "no application to plan";
    return false;
  }
  if (!planFor(app, profile, model, plan, error))
    return false;
  int candidate = analysis::splitCandidate(model, plan);
  // A profiled plan is only compared with profiled plans of the splits.
  bool profiled = profile && profile->packets;
  if (candidate < 0 || !loaded || !planner.optimize ||
      (profiled && !planner.profile))
    return true;
  std::string name = model.pes[candidate].name;

  // Split the loaded application at several shares of the NetPE's cost,
  // optimize and plan each; keep the best.
  struct Try {
    OwningOpRef<ModuleOp> module, loaded;
    analysis::Profile profile;
    analysis::CostModel model;
    analysis::Plan plan;
    SplitResult result;
  };
  std::optional<Try> best;
  std::string refusal;
  unsigned lastBlock = ~0u;
  for (double fraction : {0.5, 0.7, 0.8, 0.9, 0.95}) {
    Try t;
    t.module = loaded.clone();
    SplitOptions so;
    so.pe = name;
    so.fraction = fraction;
    so.target = target;
    std::string err;
    if (failed(splitPE(applicationOf(*t.module), so, t.result, err))) {
      refusal = err;
      break; // every fraction meets the same refusal
    }
    if (t.result.block == lastBlock)
      continue; // the same cut as the fraction before
    lastBlock = t.result.block;
    if (splitLoaded)
      t.loaded = t.module->clone();
    if (failed(planner.optimize(*t.module)))
      continue;
    analysis::Profile *p = nullptr;
    if (profiled) {
      if (!planner.profile(*t.module, t.profile, err))
        continue;
      p = &t.profile;
    }
    if (!planFor(applicationOf(*t.module), p, t.model, t.plan, err))
      continue;
    if (!best || t.plan.throughput > best->plan.throughput * 1.0001)
      best = std::move(t);
  }
  double before = plan.throughput;
  if (!best || best->plan.throughput < before * 1.05) {
    plan.notes.push_back(
        "NetPE '" + name + "' limits the plan and cannot be replicated; " +
        (!refusal.empty() ? "it cannot be split: " + refusal
                          : std::string("splitting it predicts no gain")));
    return true;
  }
  // The optimized split application replaces the original.
  ApplicationOp split = applicationOf(*best->module);
  split->moveBefore(app);
  app.erase();
  if (splitLoaded)
    *splitLoaded = std::move(best->loaded);
  if (profile && best->profile.packets)
    *profile = std::move(best->profile);
  model = std::move(best->model);
  plan = std::move(best->plan);
  const SplitResult &r = best->result;
  llvm::raw_string_ostream os(plan.split);
  os << "'" << name << "' before block " << r.block
     << " of its push handler into '" << r.first << "' and '" << r.second
     << "' (" << r.carried << " value" << (r.carried == 1 ? "" : "s")
     << " carried in info memory at byte " << r.infoOffset << "): predicted "
     << llvm::format("%.3f -> %.3f Mpps (%.2fx)", before / 1e6,
                     plan.throughput / 1e6, plan.throughput / before);
  return true;
}

namespace {

struct SplitPEPass : public netvm::impl::NetVMSplitPEBase<SplitPEPass> {
  using NetVMSplitPEBase::NetVMSplitPEBase;

  void runOnOperation() override {
    ApplicationOp app = getOperation();
    SplitOptions options;
    options.pe = peName;
    options.fraction = fraction;
    options.block = block;
    options.maxCarried = maxCarried;
    if (target == "me")
      options.target = analysis::CostTarget::ME;
    else if (target != "native") {
      app.emitError("netvm-split-pe: target must be 'native' or 'me', not '")
          << target << "'";
      return signalPassFailure();
    }
    if (peName.empty()) {
      app.emitError("netvm-split-pe: name the NetPE to split (pe=NAME)");
      return signalPassFailure();
    }
    if (fraction <= 0 || fraction >= 1) {
      app.emitError("netvm-split-pe: fraction must lie between 0 and 1");
      return signalPassFailure();
    }
    SplitResult result;
    std::string error;
    if (failed(splitPE(app, options, result, error))) {
      Operation *at = app.lookupPE(peName);
      (at ? at : app.getOperation())->emitError("netvm-split-pe: ") << error;
      return signalPassFailure();
    }
    NETVM_BUMP(numSplit);
  }
};

} // namespace
