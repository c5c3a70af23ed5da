//===- CombineLoads.cpp - One wide load for two adjacent ones -------------===//
//
// Two loads of adjacent bytes of one memory in a block (bytes at o and
// o + 1, halves at o and o + 2), with no write to that memory between them,
// become one load of twice the width at the first position; each original
// value is a shift and a truncation of it (loads are big-endian, so the
// lower address holds the high half). The wide access must already be
// known to be in bounds at the first load: a bounds check before it in the
// block covering both (netvm-eliminate-bounds-checks merges the two checks
// into one), or the packet length that netvm-version-packet-checks
// guarantees. Otherwise the loads stay as they are.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"
#include "PassUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#define DEBUG_TYPE "netvm-combine-loads"

namespace netvm {
#define GEN_PASS_DEF_NETVMCOMBINELOADS
#include "NetVM/NetVMPasses.h.inc"
} // namespace netvm

using namespace mlir;
using namespace netvm;

namespace {

constexpr llvm::StringLiteral kMinPacketLength = "netvm.min_packet_length";

unsigned bytesOf(LoadOp load) {
  return load.getType().getIntOrFloatBitWidth() / 8;
}

/// Is [offset, offset + bytes) proven in bounds just before `at`?
bool provenBefore(LoadOp at, const SplitOffset &offset, unsigned bytes) {
  int64_t lo = static_cast<int32_t>(offset.constant), hi = lo + bytes;
  if (at.getSpace() == MemSpace::Packet && !offset.base && lo >= 0)
    if (auto known = at->getAttrOfType<IntegerAttr>(kMinPacketLength))
      if (hi <= known.getInt())
        return true;
  for (Operation *op = at->getPrevNode(); op; op = op->getPrevNode()) {
    auto check = dyn_cast<CheckBoundsOp>(op);
    if (!check || check.getSpace() != at.getSpace() ||
        !check.hasConstantExtent())
      continue;
    SplitOffset c = splitOffset(check.getOffset());
    int64_t clo = static_cast<int32_t>(c.constant);
    if (c.base == offset.base && clo <= lo &&
        hi <= clo + static_cast<int64_t>(check.getExtent()))
      return true;
  }
  return false;
}

struct CombineLoadsPass
    : public netvm::impl::NetVMCombineLoadsBase<CombineLoadsPass> {
  void runOnOperation() override {
    // Combining can enable more (two i16 from four i8): repeat.
    bool changed = true;
    while (changed) {
      changed = false;
      for (Block &block : getOperation().getBody())
        changed |= combineInBlock(block);
    }
  }

  bool combineInBlock(Block &block) {
    SmallVector<LoadOp> open; // loads with no write to their memory since
    for (Operation &op : block) {
      if (auto load = dyn_cast<LoadOp>(&op)) {
        if (!load.getInBounds() || load.getLittleEndian() ||
            bytesOf(load) > 2 || load.getSpace() == MemSpace::Shared)
          continue;
        SplitOffset mine = splitOffset(load.getOffset());
        for (LoadOp first : open) {
          if (first.getSpace() != load.getSpace() ||
              first.getType() != load.getType())
            continue;
          SplitOffset other = splitOffset(first.getOffset());
          if (other.base != mine.base)
            continue;
          unsigned n = bytesOf(load);
          bool firstIsHigh = other.constant + n == mine.constant;
          bool firstIsLow = mine.constant + n == other.constant;
          if (!firstIsHigh && !firstIsLow)
            continue;
          SplitOffset start = firstIsHigh ? other : mine;
          if (static_cast<int32_t>(start.constant) < 0 ||
              !provenBefore(first, start, 2 * n))
            continue;
          combine(first, load, start, firstIsHigh);
          NETVM_BUMP(numCombined);
          return true; // the block changed: start again
        }
        open.push_back(load);
        continue;
      }
      llvm::erase_if(open,
                     [&](LoadOp l) { return mayWrite(&op, l.getSpace()); });
    }
    return false;
  }

  void combine(LoadOp first, LoadOp second, const SplitOffset &start,
               bool firstIsHigh) {
    OpBuilder b(first);
    Location loc = first.getLoc();
    unsigned bits = first.getType().getIntOrFloatBitWidth();
    Type narrow = first.getType(), wide = b.getIntegerType(2 * bits);
    Value offset =
        firstIsHigh ? first.getOffset() : materializeOffset(b, loc, start);
    auto load = LoadOp::create(b, loc, wide, first.getSpace(), offset,
                               /*in_bounds=*/true, /*little_endian=*/false);
    if (Attribute known = first->getAttr(kMinPacketLength))
      load->setAttr(kMinPacketLength, known);
    Value shift = arith::ConstantIntOp::create(b, loc, wide, bits);
    Value high = arith::TruncIOp::create(
        b, loc, narrow, arith::ShRUIOp::create(b, loc, load, shift));
    Value low = arith::TruncIOp::create(b, loc, narrow, load);
    first.getResult().replaceAllUsesWith(firstIsHigh ? high : low);
    second.getResult().replaceAllUsesWith(firstIsHigh ? low : high);
    second.erase();
    first.erase();
  }
};

} // namespace
