//===- RecognizeAtomics.cpp - Counters become atomic adds -----------------===//
//
// netvm-recognize-atomics (NetVMPasses.td): load, add, store of one word
// of data or shared memory whose loaded value has no other use becomes
// netvm.atomic_add, when every access of the memory is such a counter.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"
#include "PassUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

#define DEBUG_TYPE "netvm-recognize-atomics"

namespace netvm {
#define GEN_PASS_DEF_NETVMRECOGNIZEATOMICS
#include "NetVM/NetVMPasses.h.inc"
} // namespace netvm

using namespace mlir;
using namespace netvm;

namespace {

/// A counter: the store, its load and the value added.
struct Counter {
  LoadOp load;
  arith::AddIOp add;
  StoreOp store;
  Value increment;
};

/// The counter `store` ends, if it ends one: it stores `load + x` (or
/// `x + load`) to the word `load` read, in the same block with no other
/// access of the space between, the sum and the loaded value used once.
std::optional<Counter> counterOf(StoreOp store) {
  auto add = store.getValue().getDefiningOp<arith::AddIOp>();
  if (!add || !add->hasOneUse() || !store.getValue().getType().isInteger(32))
    return std::nullopt;
  for (Value side : {add.getLhs(), add.getRhs()}) {
    auto load = side.getDefiningOp<LoadOp>();
    if (!load || load.getSpace() != store.getSpace() || !load->hasOneUse() ||
        load.getOffset() != store.getOffset() ||
        load.getInBounds() != store.getInBounds() ||
        load->getBlock() != store->getBlock() ||
        !isMultipleOf4(store.getOffset()))
      continue;
    // Nothing between may write or read the word.
    bool clean = true;
    for (Operation *op = load->getNextNode(); op && op != store;
         op = op->getNextNode())
      if (op != add && mayWrite(op, store.getSpace()))
        clean = false;
    if (!clean)
      continue;
    Value increment = side == add.getLhs() ? add.getRhs() : add.getLhs();
    return Counter{load, add, store, increment};
  }
  return std::nullopt;
}

bool touches(Operation *op, MemSpace space) {
  if (auto l = dyn_cast<LoadOp>(op))
    return l.getSpace() == space;
  if (auto s = dyn_cast<StoreOp>(op))
    return s.getSpace() == space;
  if (auto c = dyn_cast<CopyOp>(op))
    return c.getSrcSpace() == space || c.getDstSpace() == space;
  if (auto a = dyn_cast<AtomicAddOp>(op))
    return a.getSpace() == space;
  return false;
}

/// The counters of `handlers` on `space`, if every access to it is one.
std::optional<SmallVector<Counter>> countersOnly(ArrayRef<HandlerOp> handlers,
                                                 MemSpace space) {
  SmallVector<Counter> counters;
  llvm::DenseSet<Operation *> covered;
  for (HandlerOp h : handlers)
    h.walk([&](StoreOp store) {
      if (store.getSpace() != space)
        return;
      if (auto c = counterOf(store)) {
        counters.push_back(*c);
        covered.insert(c->load);
        covered.insert(c->store);
      }
    });
  bool only = true;
  for (HandlerOp h : handlers)
    h.walk([&](Operation *op) {
      if (touches(op, space) && !isa<AtomicAddOp>(op) && !covered.contains(op))
        only = false;
    });
  if (!only)
    return std::nullopt;
  return counters;
}

struct RecognizeAtomicsPass
    : public netvm::impl::NetVMRecognizeAtomicsBase<RecognizeAtomicsPass> {
  using NetVMRecognizeAtomicsBase::NetVMRecognizeAtomicsBase;

  void runOnOperation() override {
    ApplicationOp app = getOperation();
    SmallVector<HandlerOp> all;
    for (PEOp pe : app.getBodyBlock()->getOps<PEOp>()) {
      HandlerOp push = pe.getHandler(HandlerKind::Push);
      if (!push)
        continue;
      all.push_back(push);
      if (auto counters = countersOnly({push}, MemSpace::Data))
        rewrite(*counters);
    }
    if (auto counters = countersOnly(all, MemSpace::Shared))
      rewrite(*counters);
  }

  void rewrite(MutableArrayRef<Counter> counters) {
    for (Counter &c : counters) {
      OpBuilder b(c.store);
      AtomicAddOp::create(b, c.store.getLoc(), c.increment, c.store.getSpace(),
                          c.store.getOffset(), c.store.getInBounds());
      c.store.erase();
      c.add.erase();
      c.load.erase();
      NETVM_BUMP(numAtomics);
    }
  }
};

} // namespace
