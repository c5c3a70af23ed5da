//===- InlinePEs.cpp - Merge connected NetPEs of one stage ----------------===//
//
// netvm-inline-pes (NetVMPasses.td): a NetPE fed only by one output port
// of another is merged into it, its push handler copied in place of the
// sends to it. Applied until nothing more merges, so a chain of NetPEs of
// one stage becomes one NetPE with one handler.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"
#include "PassUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringSet.h"

#define DEBUG_TYPE "netvm-inline-pes"

namespace netvm {
#define GEN_PASS_DEF_NETVMINLINEPES
#include "NetVM/NetVMPasses.h.inc"
} // namespace netvm

using namespace mlir;
using namespace netvm;

namespace {

/// The NetPE and port of a connection endpoint (null for sources, sinks).
struct End {
  PEOp pe;
  PortOp port;
};

End resolve(ApplicationOp app, SymbolRefAttr ref) {
  if (ref.getNestedReferences().empty())
    return {};
  PEOp pe = app.lookupPE(ref.getRootReference().getValue());
  if (!pe)
    return {};
  return {pe, pe.lookupPort(ref.getLeafReference().getValue())};
}

std::optional<int64_t> stageOf(PEOp pe) {
  if (auto a = pe->getAttrOfType<IntegerAttr>("netvm.stage"))
    return a.getInt();
  return std::nullopt;
}

bool hasPullPorts(PEOp pe) {
  for (PortOp port : pe.getPorts())
    if (!port.isPush())
      return true;
  return false;
}

struct InlinePEsPass : public netvm::impl::NetVMInlinePEsBase<InlinePEsPass> {
  using NetVMInlinePEsBase::NetVMInlinePEsBase;

  void runOnOperation() override {
    ApplicationOp app = getOperation();
    bool changed = true;
    while (changed) {
      changed = false;
      for (ConnectOp c : app.getBodyBlock()->getOps<ConnectOp>())
        if (tryMerge(app, c)) {
          NETVM_BUMP(numInlined);
          changed = true;
          break;
        }
    }
  }

  /// Whether `b` can be merged into `a` along connection `c`.
  bool mergeable(ApplicationOp app, ConnectOp c, End from, End to) {
    PEOp a = from.pe, b = to.pe;
    if (!a || !b || a == b || !from.port || !to.port)
      return false;
    if (from.port.getKind() != PortKind::PushOutput ||
        to.port.getKind() != PortKind::PushInput)
      return false;
    if (stageOf(a) != stageOf(b) || hasPullPorts(a) || hasPullPorts(b))
      return false;
    HandlerOp aPush = a.getHandler(HandlerKind::Push);
    HandlerOp bPush = b.getHandler(HandlerKind::Push);
    if (!aPush || !bPush || bPush.getBody().empty())
      return false;
    // `p` goes only to `b`, and nothing else feeds `b`.
    for (ConnectOp other : app.getBodyBlock()->getOps<ConnectOp>()) {
      if (other == c)
        continue;
      End f = resolve(app, other.getFrom()), t = resolve(app, other.getTo());
      if (f.pe == a && f.port == from.port)
        return false;
      if (t.pe == b)
        return false;
    }
    // Memories whose bounds are their NetPE's, and coprocessor instances.
    if (a.getDatamemSize() && b.getDatamemSize())
      return false;
    if (a.getInitdata() && b.getInitdata())
      return false;
    for (Attribute name : b.getCoprocessors())
      if (a.getCoprocessorIndex(cast<StringAttr>(name).getValue()) >= 0)
        return false;
    // A copy sent to `b` goes on in `a` after it: not a branch.
    bool dup = false;
    aPush.walk(
        [&](SendDupOp op) { dup |= op.getPort() == from.port.getSymName(); });
    return !dup;
  }

  bool tryMerge(ApplicationOp app, ConnectOp c) {
    End from = resolve(app, c.getFrom()), to = resolve(app, c.getTo());
    if (!mergeable(app, c, from, to))
      return false;
    PEOp a = from.pe, b = to.pe;
    MLIRContext *ctx = app.getContext();
    OpBuilder builder(ctx);

    // `b`'s output ports become `a`'s, named after `b`.
    llvm::StringMap<StringAttr> renamed;
    llvm::StringSet<> taken;
    for (PortOp port : a.getPorts())
      taken.insert(port.getSymName());
    builder.setInsertionPointToEnd(a.getBodyBlock());
    Operation *lastPort = nullptr;
    for (PortOp port : a.getPorts())
      lastPort = port;
    for (PortOp port : b.getPorts()) {
      if (port.isInput())
        continue;
      std::string name = (b.getSymName() + "_" + port.getSymName()).str();
      while (taken.contains(name))
        name += "_";
      taken.insert(name);
      if (lastPort)
        builder.setInsertionPointAfter(lastPort);
      else
        builder.setInsertionPointToStart(a.getBodyBlock());
      lastPort = PortOp::create(builder, port.getLoc(), name, port.getKind());
      renamed[port.getSymName()] = StringAttr::get(ctx, name);
    }

    // The push handler: sends to `p` branch into a copy of `b`'s.
    HandlerOp aPush = a.getHandler(HandlerKind::Push);
    HandlerOp bPush = b.getHandler(HandlerKind::Push);
    SmallVector<SendOp> sends;
    aPush.walk([&](SendOp op) {
      if (op.getPort() == from.port.getSymName())
        sends.push_back(op);
    });
    Block *entry = inlineRegion(bPush.getBody(), aPush.getBody(), renamed);
    int64_t inPort = b.getPortNumber(to.port);
    for (SendOp send : sends) {
      builder.setInsertionPoint(send);
      Value number =
          arith::ConstantIntOp::create(builder, send.getLoc(), inPort, 32);
      cf::BranchOp::create(builder, send.getLoc(), entry, ValueRange{number});
      send.erase();
    }

    // Init handlers: `b`'s after `a`'s.
    if (HandlerOp bInit = b.getHandler(HandlerKind::Init)) {
      if (HandlerOp aInit = a.getHandler(HandlerKind::Init)) {
        SmallVector<RetOp> rets;
        aInit.walk([&](RetOp r) { rets.push_back(r); });
        Block *initEntry =
            inlineRegion(bInit.getBody(), aInit.getBody(), renamed);
        for (RetOp r : rets) {
          builder.setInsertionPoint(r);
          cf::BranchOp::create(builder, r.getLoc(), initEntry, ValueRange{});
          r.erase();
        }
      } else {
        bInit->moveBefore(a.getBodyBlock(), a.getBodyBlock()->end());
        renameSends(bInit.getBody(), renamed);
      }
    }

    // Resources.
    if (b.getDatamemSize())
      a.setDatamemSize(b.getDatamemSize());
    if (auto init = b.getInitdataAttr())
      a.setInitdataAttr(init);
    a.setInfoSize(std::max(a.getInfoSize(), b.getInfoSize()));
    a.setSharedmemSize(std::max(a.getSharedmemSize(), b.getSharedmemSize()));
    if (!b.getCoprocessors().empty()) {
      SmallVector<Attribute> all(a.getCoprocessors().begin(),
                                 a.getCoprocessors().end());
      all.append(b.getCoprocessors().begin(), b.getCoprocessors().end());
      a.setCoprocessorsAttr(ArrayAttr::get(ctx, all));
    }

    // Connections out of `b` leave from `a`'s new ports.
    for (ConnectOp other :
         llvm::make_early_inc_range(app.getBodyBlock()->getOps<ConnectOp>())) {
      SymbolRefAttr f = other.getFrom();
      if (f.getRootReference() != b.getSymNameAttr() ||
          f.getNestedReferences().empty())
        continue;
      StringAttr port = renamed.lookup(f.getLeafReference().getValue());
      other.setFromAttr(SymbolRefAttr::get(a.getSymNameAttr(),
                                           {FlatSymbolRefAttr::get(port)}));
    }
    c.erase();
    b.erase();
    return true;
  }

  /// Copies `src`'s blocks to the end of `dst`, sends renamed; returns the
  /// copy of the entry block.
  Block *inlineRegion(Region &src, Region &dst,
                      const llvm::StringMap<StringAttr> &renamed) {
    IRMapping map;
    size_t before = dst.getBlocks().size();
    src.cloneInto(&dst, dst.end(), map);
    Block *entry = map.lookup(&src.front());
    auto it = dst.begin();
    std::advance(it, before);
    for (Block &block : llvm::make_range(it, dst.end()))
      for (Operation &op : block)
        renameSend(&op, renamed);
    return entry;
  }

  void renameSends(Region &region, const llvm::StringMap<StringAttr> &renamed) {
    region.walk([&](Operation *op) { renameSend(op, renamed); });
  }

  static void renameSend(Operation *op,
                         const llvm::StringMap<StringAttr> &renamed) {
    auto rename = [&](StringRef port) -> FlatSymbolRefAttr {
      return FlatSymbolRefAttr::get(renamed.lookup(port));
    };
    if (auto send = dyn_cast<SendOp>(op))
      send.setPortAttr(rename(send.getPort()));
    else if (auto dup = dyn_cast<SendDupOp>(op))
      dup.setPortAttr(rename(dup.getPort()));
  }
};

} // namespace
