//===- InsertWatchdog.cpp - Watchdogs at the head of every loop
//---------------===//
//
// Every cycle of a control-flow graph contains a retreating edge of any
// depth-first search: an edge to a block still on the search stack. One
// netvm.watchdog at the target of each retreating edge therefore bounds the
// iterations of every loop, irreducible ones included, while loop-free code
// pays nothing. (For reducible loops these targets are the loop headers.)
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"
#include "PassUtils.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

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
    // Iterative depth-first search from the entry block.
    llvm::SetVector<Block *> heads;
    llvm::SmallPtrSet<Block *, 16> visited, onStack;
    SmallVector<std::pair<Block *, unsigned>> stack;
    Block *entry = &body.front();
    stack.push_back({entry, 0});
    visited.insert(entry);
    onStack.insert(entry);
    while (!stack.empty()) {
      auto &[block, next] = stack.back();
      if (next < block->getNumSuccessors()) {
        Block *succ = block->getSuccessor(next++);
        if (onStack.contains(succ))
          heads.insert(succ);
        else if (visited.insert(succ).second) {
          onStack.insert(succ);
          stack.push_back({succ, 0});
        }
        continue;
      }
      onStack.erase(block);
      stack.pop_back();
    }
    OpBuilder builder(handler.getContext());
    for (Block *head : heads) {
      if (!head->empty() && isa<WatchdogOp>(head->front()))
        continue;
      builder.setInsertionPointToStart(head);
      Location loc = head->empty() ? handler.getLoc() : head->front().getLoc();
      WatchdogOp::create(builder, loc);
      NETVM_BUMP(numWatchdogs);
    }
  }
};
} // namespace
