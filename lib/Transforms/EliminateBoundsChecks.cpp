//===- EliminateBoundsChecks.cpp - Remove covered bounds checks -----------===//
//
// netvm-insert-bounds-checks puts a check in front of every access. Two
// rules remove most of them without changing what any packet does:
//
// 1. Merge (within a block): when nothing observable happens between two
//    checks of the same memory at `base + c1` and `base + c2` (only pure
//    operations, reads and checks of that memory), a second check inside
//    the first goes, and when both come from the same NetIL location, the
//    first grows to cover both and the second goes. Checks from different
//    locations are not merged: a packet long enough for the first range but
//    not for the second must raise at the second's location.
// 2. Dominance: a check whose range a dominating check of the same memory
//    covers (same base, constant range inside; or the same offset and
//    length values) cannot fail and goes.
//
// Checks never move across a branch: a filter that rejects a short packet
// before reading further must still reject it rather than raise an
// exception. Packet and info checks stay in handlers that replace their
// exchange buffer (a later access sees another packet).
//
// Ranges are compared as `base + c` with c read as a signed 32-bit
// constant; ranges whose constants or extents exceed 2^16 are left alone,
// so that no wrap-around of `base + c` can make two checks disagree on any
// memory smaller than 2^31 bytes.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"
#include "PassUtils.h"

#include "mlir/IR/Dominance.h"

#define DEBUG_TYPE "netvm-eliminate-bounds-checks"

namespace netvm {
#define GEN_PASS_DEF_NETVMELIMINATEBOUNDSCHECKS
#include "NetVM/NetVMPasses.h.inc"
} // namespace netvm

using namespace mlir;
using namespace netvm;

namespace {

constexpr int64_t kLimit = 1 << 16;

/// A check with a constant extent, as [base + lo, base + hi).
struct Range {
  CheckBoundsOp op;
  MemSpace space;
  Value base;
  int64_t lo, hi;
};

std::optional<Range> rangeOf(CheckBoundsOp check) {
  if (!check.hasConstantExtent())
    return std::nullopt;
  SplitOffset split = splitOffset(check.getOffset());
  int64_t lo = static_cast<int32_t>(split.constant);
  int64_t extent = check.getExtent();
  if (lo <= -kLimit || lo >= kLimit || extent <= 0 || extent > kLimit)
    return std::nullopt;
  return Range{check, check.getSpace(), split.base, lo, lo + extent};
}

struct EliminateBoundsChecksPass
    : public netvm::impl::NetVMEliminateBoundsChecksBase<
          EliminateBoundsChecksPass> {
  void runOnOperation() override {
    HandlerOp handler = getOperation();
    keepExchangeBuffer = replacesExchangeBuffer(handler);
    for (Block &block : handler.getBody())
      mergeInBlock(block);
    DominanceInfo dominance(handler);
    Region &body = handler.getBody();
    if (!body.hasOneBlock()) {
      SmallVector<Range> available;
      SmallVector<CheckBoundsOp> dynamic;
      eliminateDominated(dominance.getRootNode(&body), available, dynamic);
    } else {
      SmallVector<Range> available;
      SmallVector<CheckBoundsOp> dynamic;
      eliminateInBlock(body.front(), available, dynamic);
    }
  }

  bool leftAlone(MemSpace space) const {
    return keepExchangeBuffer &&
           (space == MemSpace::Packet || space == MemSpace::Info);
  }

  void mergeInBlock(Block &block) {
    SmallVector<Range> open;
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (auto check = dyn_cast<CheckBoundsOp>(&op)) {
        std::optional<Range> range = rangeOf(check);
        // Other checks of the same memory are transparent; of another
        // memory, they end what is open (their exception differs).
        llvm::erase_if(
            open, [&](const Range &r) { return r.space != check.getSpace(); });
        if (!range || leftAlone(range->space))
          continue;
        // A check inside an open one cannot fail: it goes. Growing an open
        // one is only right when both raise at the same location: a packet
        // long enough for the first range but not for the second must
        // report the second check's location.
        if (llvm::any_of(open, [&](const Range &r) {
              return r.base == range->base && range->lo >= r.lo &&
                     range->hi <= r.hi;
            })) {
          check.erase();
          NETVM_BUMP(numMerged);
          continue;
        }
        Range *into = llvm::find_if(open, [&](Range &r) {
          return r.base == range->base && r.op.getLoc() == check.getLoc();
        });
        if (into == open.end()) {
          open.push_back(*range);
          continue;
        }
        int64_t lo = std::min(into->lo, range->lo);
        int64_t hi = std::max(into->hi, range->hi);
        if (hi - lo > kLimit) {
          *into = *range;
          continue;
        }
        if (lo != into->lo) {
          OpBuilder b(into->op);
          Value offset = materializeOffset(
              b, into->op.getLoc(),
              SplitOffset{into->base, static_cast<uint32_t>(lo)});
          into->op.getOffsetMutable().assign(offset);
        }
        into->op.setExtent(hi - lo);
        into->lo = lo;
        into->hi = hi;
        check.erase();
        NETVM_BUMP(numMerged);
        continue;
      }
      llvm::erase_if(open, [&](const Range &r) {
        return !isTransparentFor(&op, r.space);
      });
    }
  }

  void eliminateInBlock(Block &block, SmallVectorImpl<Range> &available,
                        SmallVectorImpl<CheckBoundsOp> &dynamic) {
    for (CheckBoundsOp check :
         llvm::make_early_inc_range(block.getOps<CheckBoundsOp>())) {
      if (leftAlone(check.getSpace()))
        continue;
      if (std::optional<Range> range = rangeOf(check)) {
        bool covered = llvm::any_of(available, [&](const Range &r) {
          return r.space == range->space && r.base == range->base &&
                 r.lo <= range->lo && range->hi <= r.hi;
        });
        if (covered) {
          check.erase();
          NETVM_BUMP(numDominated);
        } else {
          available.push_back(*range);
        }
        continue;
      }
      bool covered = llvm::any_of(dynamic, [&](CheckBoundsOp d) {
        return d.getSpace() == check.getSpace() &&
               d.getOffset() == check.getOffset() &&
               d.getLength() == check.getLength() &&
               d.getExtent() == check.getExtent();
      });
      if (covered) {
        check.erase();
        NETVM_BUMP(numDominated);
      } else {
        dynamic.push_back(check);
      }
    }
  }

  /// Depth-first over the dominator tree: the checks of the blocks that
  /// dominate `node` are available in it.
  void eliminateDominated(llvm::DomTreeNodeBase<Block> *node,
                          SmallVectorImpl<Range> &available,
                          SmallVectorImpl<CheckBoundsOp> &dynamic) {
    size_t ranges = available.size(), dynamics = dynamic.size();
    eliminateInBlock(*node->getBlock(), available, dynamic);
    for (llvm::DomTreeNodeBase<Block> *child : node->children())
      eliminateDominated(child, available, dynamic);
    available.resize(ranges);
    dynamic.resize(dynamics);
  }

  bool keepExchangeBuffer = false;
};

} // namespace
