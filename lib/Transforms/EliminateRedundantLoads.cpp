//===- EliminateRedundantLoads.cpp - Reuse loaded and stored values -------===//
//
// Filters read the same field on several paths (an EtherType tested for
// IPv4, then for IPv6), NetIL programs reload what they just stored. A load
// dominated by a load of the same memory, offset, width and byte order
// reuses its value when nothing may write that memory in between; a load
// right after a store of the same place in a block takes the stored value.
//
// "Nothing in between" is decided simply: for a memory that no operation of
// the handler may write, every dominating load qualifies; otherwise only
// loads and stores earlier in the same block with no possible write after
// them. Shared memory is never touched: other NetPEs write it concurrently.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"
#include "PassUtils.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/CSE.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/ScopedHashTable.h"

#define DEBUG_TYPE "netvm-eliminate-redundant-loads"

namespace netvm {
#define GEN_PASS_DEF_NETVMELIMINATEREDUNDANTLOADS
#include "NetVM/NetVMPasses.h.inc"
} // namespace netvm

using namespace mlir;
using namespace netvm;

namespace {

/// What a load reads: memory, offset value, width, byte order.
struct Place {
  unsigned space;
  Value offset;
  Type type;
  bool little;
  bool operator==(const Place &o) const {
    return space == o.space && offset == o.offset && type == o.type &&
           little == o.little;
  }
};

Place placeOf(LoadOp load) {
  return {static_cast<unsigned>(load.getSpace()), load.getOffset(),
          load.getType(), load.getLittleEndian()};
}

constexpr MemSpace kSpaces[] = {MemSpace::Packet, MemSpace::Info,
                                MemSpace::Data, MemSpace::Shared,
                                MemSpace::InitData};

struct EliminateRedundantLoadsPass
    : public netvm::impl::NetVMEliminateRedundantLoadsBase<
          EliminateRedundantLoadsPass> {
  void runOnOperation() override {
    HandlerOp handler = getOperation();
    forwarded.clear();
    // Memories some operation of the handler may write.
    bool written[5] = {};
    handler.walk([&](Operation *op) {
      // The handler itself (walked last) says nothing about its body's
      // effects: mayWrite would take it for an unknown write.
      if (op == handler.getOperation())
        return;
      for (MemSpace space : kSpaces)
        if (mayWrite(op, space))
          written[static_cast<unsigned>(space)] = true;
    });
    written[static_cast<unsigned>(MemSpace::Shared)] = true;

    // Memories nobody writes: any dominating load of the same place.
    // Reusing a load can make the offsets of later loads equal (a header
    // length loaded again for each test, then a field at that length): CSE
    // then merges their computations, and another round reuses those
    // loads too. Chains are as deep as a packet's headers.
    for (unsigned round = 0; round < kMaxRounds; ++round) {
      DominanceInfo dominance(handler);
      if (!reuseDominating(handler, dominance, written))
        break;
      IRRewriter rewriter(&getContext());
      bool changed = false;
      eliminateCommonSubExpressions(rewriter, dominance, handler, &changed);
      if (!changed)
        break;
    }

    // Written memories: within a block, until something may write.
    for (Block &block : handler.getBody())
      forwardInBlock(block, written);
  }

  static constexpr unsigned kMaxRounds = 8;

  /// Replaces each load of an unwritten memory that a load of the same
  /// place dominates; whether any was.
  bool reuseDominating(HandlerOp handler, DominanceInfo &dominance,
                       const bool *written) {
    SmallVector<LoadOp> loads;
    handler.walk([&](LoadOp load) { loads.push_back(load); });
    llvm::DenseMap<Value, SmallVector<LoadOp, 2>> byOffset;
    for (LoadOp load : loads)
      if (!written[static_cast<unsigned>(load.getSpace())])
        byOffset[load.getOffset()].push_back(load);
    bool any = false;
    for (auto &[offset, group] : byOffset) {
      for (size_t i = 0; i < group.size(); ++i) {
        if (!group[i])
          continue;
        for (size_t j = 0; j < group.size(); ++j) {
          if (i == j || !group[j] || !(placeOf(group[i]) == placeOf(group[j])))
            continue;
          if (dominance.properlyDominates(group[i].getOperation(),
                                          group[j].getOperation())) {
            group[j].getResult().replaceAllUsesWith(group[i].getResult());
            group[j].erase();
            group[j] = nullptr;
            NETVM_BUMP(numLoads);
            any = true;
          }
        }
      }
    }
    return any;
  }

  void forwardInBlock(Block &block, const bool *written) {
    // The value known at each place of a written memory.
    SmallVector<std::pair<Place, Value>> known;
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (auto load = dyn_cast<LoadOp>(&op)) {
        Place place = placeOf(load);
        if (!written[place.space] || load.getSpace() == MemSpace::Shared)
          continue;
        auto it = llvm::find_if(
            known, [&](const auto &entry) { return entry.first == place; });
        if (it != known.end()) {
          if (forwarded.contains(it->second))
            NETVM_BUMP(numForwarded);
          else
            NETVM_BUMP(numLoads);
          load.getResult().replaceAllUsesWith(it->second);
          load.erase();
          continue;
        }
        known.push_back({place, load.getResult()});
        continue;
      }
      for (MemSpace space : kSpaces)
        if (mayWrite(&op, space))
          llvm::erase_if(known, [&](const auto &entry) {
            return entry.first.space == static_cast<unsigned>(space);
          });
      // A store makes its value known at its place (big-endian loads of
      // the same width read it back unchanged).
      if (auto store = dyn_cast<StoreOp>(&op)) {
        if (store.getSpace() == MemSpace::Shared)
          continue;
        Place place{static_cast<unsigned>(store.getSpace()), store.getOffset(),
                    store.getValue().getType(), false};
        known.push_back({place, store.getValue()});
        forwarded.insert(store.getValue());
      }
    }
  }

  /// Values that came from stores, to count forwarded loads apart.
  llvm::DenseSet<Value> forwarded;
};

} // namespace
