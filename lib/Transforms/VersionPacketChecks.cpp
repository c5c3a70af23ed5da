//===- VersionPacketChecks.cpp - One length test for the common case
//---------===//
//
// Filters test packet fields one after the other, and every test at a new
// offset brings its own bounds check. The checks must stay where they are
// (a short packet that fails an earlier test is rejected, not an
// exception), so they split the handler into many small blocks, and LLVM
// cannot turn the tests into branch-free code. This pass versions the
// handler: if the packet is at least as long as the furthest constant-offset
// access, a copy of the handler without those checks runs; otherwise the
// original, checks and all. Both give the same result on every packet.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"
#include "PassUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

#define DEBUG_TYPE "netvm-version-packet-checks"

namespace netvm {
#define GEN_PASS_DEF_NETVMVERSIONPACKETCHECKS
#include "NetVM/NetVMPasses.h.inc"
} // namespace netvm

using namespace mlir;
using namespace netvm;

namespace {

/// The end of the packet range a check covers, if it is a constant.
std::optional<uint64_t> constantPacketEnd(CheckBoundsOp check) {
  APInt offset;
  if (check.getSpace() != MemSpace::Packet || !check.hasConstantExtent() ||
      !matchPattern(check.getOffset(), m_ConstantInt(&offset)))
    return std::nullopt;
  return offset.getZExtValue() + static_cast<uint64_t>(check.getExtent());
}

struct VersionPacketChecksPass
    : public netvm::impl::NetVMVersionPacketChecksBase<
          VersionPacketChecksPass> {
  using NetVMVersionPacketChecksBase::NetVMVersionPacketChecksBase;
  void runOnOperation() override {
    HandlerOp handler = getOperation();
    // Only push handlers start with a packet, and only while nothing
    // replaces it does one length test speak for the whole handler.
    if (handler.getKind() != HandlerKind::Push)
      return;
    bool replaces = false;
    uint64_t end = 0;
    unsigned checks = 0;
    handler.walk([&](Operation *op) {
      if (isa<ExbufCreateOp, ExbufDeleteOp, ReceiveOp>(op))
        replaces = true;
      if (auto check = dyn_cast<CheckBoundsOp>(op))
        if (std::optional<uint64_t> e = constantPacketEnd(check)) {
          end = std::max(end, *e);
          ++checks;
        }
    });
    if (replaces || checks < minChecks || end > 0xFFFF)
      return;

    Region &body = handler.getBody();
    Block *oldEntry = &body.front();
    // The fast copy, without the constant-offset packet checks.
    Region copy;
    IRMapping mapping;
    body.cloneInto(&copy, mapping);
    Block *fastEntry = &copy.front();
    SmallVector<CheckBoundsOp> covered;
    copy.walk([&](CheckBoundsOp check) {
      if (constantPacketEnd(check))
        covered.push_back(check);
    });
    for (CheckBoundsOp check : covered)
      check.erase();
    // What the fast version may rely on, for code generation: the packet
    // holds at least `end` bytes at every packet load.
    auto known = IntegerAttr::get(IntegerType::get(&getContext(), 64), end);
    copy.walk([&](LoadOp load) {
      if (load.getSpace() == MemSpace::Packet)
        load->setAttr("netvm.min_packet_length", known);
    });
    NETVM_BUMP(numRemoved, covered.size());
    NETVM_BUMP(numVersioned);
    body.getBlocks().splice(body.end(), copy.getBlocks());

    // The new entry: the length test.
    Block *entry = new Block();
    body.getBlocks().push_front(entry);
    SmallVector<Value> args;
    for (BlockArgument arg : oldEntry->getArguments())
      args.push_back(entry->addArgument(arg.getType(), arg.getLoc()));
    OpBuilder b = OpBuilder::atBlockEnd(entry);
    Location loc = handler.getLoc();
    Value length = PacketLengthOp::create(b, loc, b.getI32Type());
    Value needed = arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                                static_cast<int64_t>(end));
    Value longEnough = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                             length, needed);
    cf::CondBranchOp::create(b, loc, longEnough, fastEntry, args, oldEntry,
                             args, ArrayRef<int32_t>{1000, 1});
  }
};

} // namespace
