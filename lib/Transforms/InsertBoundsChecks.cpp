//===- InsertBoundsChecks.cpp - Explicit checks for every memory access
//-------===//
//
// Every access to a NetVM memory must stay inside it, or raise the memory's
// bounds exception. This pass makes that check an explicit
// netvm.check_bounds in front of each access and marks the access
// `in_bounds`, so that back ends only implement one kind of check, and
// passes can see, move and remove checks like any other operation.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"
#include "PassUtils.h"

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
  Value length; // null: `width` bytes
  uint64_t width = 0;
};

struct InsertBoundsChecksPass
    : public netvm::impl::NetVMInsertBoundsChecksBase<InsertBoundsChecksPass> {
  void runOnOperation() override;

  /// The size of `space` when it is known at compile time.
  std::optional<uint64_t> staticSize(MemSpace space, HandlerOp handler);
  /// Insert the check of `range` before `op`.
  void check(Operation *op, const Range &range, HandlerOp handler);

  uint32_t sharedSize = 0;
};

} // namespace

std::optional<uint64_t> InsertBoundsChecksPass::staticSize(MemSpace space,
                                                           HandlerOp handler) {
  PEOp pe = handler.getPE();
  switch (space) {
  case MemSpace::Packet:
  case MemSpace::Info:
    return std::nullopt; // known only at run time
  case MemSpace::Data:
    return pe.getDatamemSize();
  case MemSpace::Shared:
    return sharedSize;
  case MemSpace::InitData:
    return pe.getInitdata() ? pe.getInitdata()->size() : 0;
  }
  llvm_unreachable("unknown memory space");
}

void InsertBoundsChecksPass::check(Operation *op, const Range &range,
                                   HandlerOp handler) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  // Accesses at constant offsets into memories of constant size are decided
  // now: no check when they fit (the assembler reports those that do not).
  APInt offset, length;
  bool constOffset = matchPattern(range.offset, m_ConstantInt(&offset));
  bool constLength =
      !range.length || matchPattern(range.length, m_ConstantInt(&length));
  if (constOffset && constLength) {
    if (std::optional<uint64_t> size = staticSize(range.space, handler)) {
      uint64_t extent = range.length ? length.getZExtValue() : range.width;
      if (offset.getZExtValue() + extent <= *size)
        return;
    }
  }
  if (range.length)
    CheckBoundsOp::create(b, loc,
                          MemSpaceAttr::get(b.getContext(), range.space),
                          range.offset, range.length, b.getI64IntegerAttr(0));
  else
    CheckBoundsOp::create(
        b, loc, MemSpaceAttr::get(b.getContext(), range.space), range.offset,
        Value(), b.getI64IntegerAttr(range.width));
  NETVM_BUMP(numChecks);
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
      ranges.push_back(
          {load.getSpace(), load.getOffset(), {}, bytes(load.getType())});
    else if (auto store = dyn_cast<StoreOp>(op))
      ranges.push_back({store.getSpace(),
                        store.getOffset(),
                        {},
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
