//===- InsertBoundsChecks.cpp - Explicit checks for every memory access -------===//
//
// Every access to a NetVM memory must stay inside it, or raise the memory's
// bounds exception. This pass makes that check an explicit netvm.check in
// front of each access and marks the access `in_bounds`, so that back ends
// only have to implement one kind of check, and later passes can see, move
// and remove checks like any other operation.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

#define DEBUG_TYPE "netvm-insert-bounds-checks"

namespace netvm {
#define GEN_PASS_DEF_NETVMINSERTBOUNDSCHECKS
#include "NetVM/NetVMPasses.h.inc"
} // namespace netvm

using namespace mlir;
using namespace netvm;

namespace {

/// A byte range [offset, offset + length) of a memory that `op` touches.
struct Range {
  MemSpace space;
  Value offset;
  Value length;        // null: `width` bytes
  uint64_t width = 0;
};

struct InsertBoundsChecksPass
    : public netvm::impl::NetVMInsertBoundsChecksBase<InsertBoundsChecksPass> {
  void runOnOperation() override;

  /// The size of `space` as an i32 value, or its constant size.
  Value sizeOf(OpBuilder &b, Location loc, MemSpace space, HandlerOp handler);
  /// Insert the check of `range` before `op`.
  void check(Operation *op, const Range &range, HandlerOp handler);

  uint32_t sharedSize = 0;
};

} // namespace

Value InsertBoundsChecksPass::sizeOf(OpBuilder &b, Location loc,
                                     MemSpace space, HandlerOp handler) {
  PEOp pe = handler.getPE();
  auto constant = [&](uint64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, v, 32);
  };
  switch (space) {
  case MemSpace::Packet:
    return PacketLengthOp::create(b, loc, b.getI32Type());
  case MemSpace::Info:
    return InfoLengthOp::create(b, loc, b.getI32Type());
  case MemSpace::Data:
    return constant(pe.getDatamemSize());
  case MemSpace::Shared:
    return constant(sharedSize);
  case MemSpace::InitData:
    return constant(pe.getInitdata() ? pe.getInitdata()->size() : 0);
  }
  llvm_unreachable("unknown memory space");
}

void InsertBoundsChecksPass::check(Operation *op, const Range &range,
                                   HandlerOp handler) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  Type i64 = b.getI64Type();
  // Decide statically when everything is known (constant sizes).
  APInt offset, length;
  bool constOffset = matchPattern(range.offset, m_ConstantInt(&offset));
  bool constLength =
      !range.length || matchPattern(range.length, m_ConstantInt(&length));
  uint64_t len = range.length ? (constLength ? length.getZExtValue() : 0)
                              : range.width;
  if (constOffset && constLength && range.space != MemSpace::Packet &&
      range.space != MemSpace::Info) {
    Value size = sizeOf(b, loc, range.space, handler);
    APInt sizeValue;
    if (matchPattern(size, m_ConstantInt(&sizeValue))) {
      bool ok = offset.getZExtValue() + len <= sizeValue.getZExtValue();
      size.getDefiningOp()->erase();
      if (ok)
        return;
    }
  }
  Value end = arith::ExtUIOp::create(b, loc, i64, range.offset);
  Value extent =
      range.length ? arith::ExtUIOp::create(b, loc, i64, range.length)
                         .getResult()
                   : arith::ConstantIntOp::create(b, loc, range.width, 64)
                         .getResult();
  end = arith::AddIOp::create(b, loc, end, extent);
  Value size = arith::ExtUIOp::create(
      b, loc, i64, sizeOf(b, loc, range.space, handler));
  Value ok =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, end, size);
  CheckOp::create(b, loc, ok, boundsExceptionFor(range.space));
  ++numChecks;
}

void InsertBoundsChecksPass::runOnOperation() {
  HandlerOp handler = getOperation();
  // Shared memory belongs to the application: all NetPEs see its largest
  // requested size.
  sharedSize = 0;
  if (auto app = handler->getParentOfType<ApplicationOp>())
    for (PEOp pe : app.getBodyBlock()->getOps<PEOp>())
      sharedSize = std::max<uint32_t>(sharedSize, pe.getSharedmemSize());

  SmallVector<Operation *> accesses;
  handler.walk([&](Operation *op) {
    if (isa<LoadOp, StoreOp, CopyOp, ChecksumOp, PacketCrcOp, FieldCmpOp,
            PacketScanOp>(op) &&
        !op->hasAttr("in_bounds"))
      accesses.push_back(op);
  });
  auto bytes = [](Type t) { return t.getIntOrFloatBitWidth() / 8; };
  for (Operation *op : accesses) {
    SmallVector<Range, 2> ranges;
    if (auto load = dyn_cast<LoadOp>(op))
      ranges.push_back({load.getSpace(), load.getOffset(), {},
                        bytes(load.getType())});
    else if (auto store = dyn_cast<StoreOp>(op))
      ranges.push_back({store.getSpace(), store.getOffset(), {},
                        bytes(store.getValue().getType())});
    else if (auto copy = dyn_cast<CopyOp>(op)) {
      ranges.push_back({copy.getSrcSpace(), copy.getSrc(), copy.getLength()});
      ranges.push_back({copy.getDstSpace(), copy.getDst(), copy.getLength()});
    } else if (auto sum = dyn_cast<ChecksumOp>(op))
      ranges.push_back({MemSpace::Packet, sum.getOffset(), sum.getLength()});
    else if (auto crc = dyn_cast<PacketCrcOp>(op))
      ranges.push_back({MemSpace::Packet, crc.getOffset(), crc.getLength()});
    else if (auto cmp = dyn_cast<FieldCmpOp>(op)) {
      ranges.push_back({MemSpace::Packet, cmp.getLhs(), cmp.getLength()});
      ranges.push_back({MemSpace::Packet, cmp.getRhs(), cmp.getLength()});
    } else if (auto scan = dyn_cast<PacketScanOp>(op))
      // The scan starts inside the packet; it never reads past its end.
      ranges.push_back({MemSpace::Packet, scan.getOffset(), {}, 1});
    for (const Range &range : ranges)
      check(op, range, handler);
    op->setAttr("in_bounds", UnitAttr::get(op->getContext()));
  }
}
