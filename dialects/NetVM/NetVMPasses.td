//===- NetVMPasses.td - Passes of the netvm dialect --------*- tablegen -*-===//
//
// Safety and optimization passes on the netvm dialect. Each is declared here
// and implemented in one file of lib/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_PASSES_TD
#define NETVM_PASSES_TD

include "mlir/Pass/PassBase.td"

def NetVMInsertWatchdog : Pass<"netvm-insert-watchdog", "netvm::HandlerOp"> {
  let summary = "put a watchdog at the head of every loop";
  let description = [{
    Inserts `netvm.watchdog` at the start of every block that is the target
    of a back edge (an edge to a block that dominates its source), unless one
    is already there. Every loop iteration then consumes one unit of the
    packet's budget, while code without loops pays nothing (paper section
    3.3). Runs at every optimization level, before anything else, so the
    interpreter and the native code count the same iterations.

    ```mlir
    ^loop:                 // has a back edge from ^body
      netvm.watchdog
      ...
    ```
  }];
  let statistics = [
    Statistic<"numWatchdogs", "watchdogs", "Number of watchdogs inserted">
  ];
}

#endif // NETVM_PASSES_TD
