//===- InsertWatchdog.cpp - Watchdogs at the head of every loop ---------------===//
//
// A block is a loop head when it is the target of a back edge, an edge whose
// target dominates its source. One netvm.watchdog per loop head bounds the
// iterations a packet can spend, without slowing down loop-free code.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"

#define DEBUG_TYPE "netvm-insert-watchdog"

namespace netvm {
#define GEN_PASS_DEF_NETVMINSERTWATCHDOG
#include "NetVM/NetVMPasses.h.inc"
} // namespace netvm

using namespace mlir;
using namespace netvm;

namespace {
struct InsertWatchdogPass
    : public netvm::impl::NetVMInsertWatchdogBase<InsertWatchdogPass> {
  void runOnOperation() override {
    HandlerOp handler = getOperation();
    Region &body = handler.getBody();
    if (body.hasOneBlock())
      return;
    DominanceInfo dominance(handler);
    llvm::SetVector<Block *> heads;
    for (Block &block : body)
      for (Block *succ : block.getSuccessors())
        if (dominance.dominates(succ, &block))
          heads.insert(succ);
    OpBuilder builder(handler.getContext());
    for (Block *head : heads) {
      if (!head->empty() && isa<WatchdogOp>(head->front()))
        continue;
      builder.setInsertionPointToStart(head);
      Location loc = head->empty() ? handler.getLoc() : head->front().getLoc();
      WatchdogOp::create(builder, loc);
      ++numWatchdogs;
    }
  }
};
} // namespace
