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
    of a retreating edge of a depth-first search of the control-flow graph
    (an edge to a block on the search stack; for natural loops, the loop
    headers), unless one is already there. Every cycle, irreducible ones
    included, contains such an edge, so every loop iteration consumes budget,
    while code without loops pays nothing (paper section 3.3). Runs at every optimization level, before anything else, so the
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

def NetVMInsertBoundsChecks
    : Pass<"netvm-insert-bounds-checks", "netvm::HandlerOp"> {
  let summary = "make every memory access explicitly checked";
  let description = [{
    For every memory access not yet proven safe (loads, stores, copies and
    the operations that read a range of the packet: checksum, crc_packet,
    field_cmp, pscan), inserts a `netvm.check_bounds` of the accessed range
    and marks the access `in_bounds`. Accesses at constant offsets into
    memories whose size is known at compile time (data, shared and
    initialised data) need no check when they fit. Runs at every
    optimization level: back ends implement only `netvm.check_bounds`, and
    optimizations can reason about the structured ranges.

    ```mlir
    %v = netvm.load packet[%o] : i16
    // becomes
    netvm.check_bounds packet[%o], 2
    %v = netvm.load packet[%o] {in_bounds} : i16
    ```
  }];
  let statistics = [
    Statistic<"numChecks", "checks", "Number of bounds checks inserted">
  ];
}

def NetVMVersionPacketChecks
    : Pass<"netvm-version-packet-checks", "netvm::HandlerOp"> {
  let summary = "one packet-length test for the common case";
  let description = [{
    Versions a push handler whose packet accesses at constant offsets need
    several `netvm.check_bounds`: when the packet is at least as long as
    the furthest of those accesses, a copy of the handler without them
    runs; shorter packets run the original, checks and all, so every
    packet gets the same result, exceptions included. The checks otherwise
    stay between the tests of a filter (a short packet that fails an
    earlier test must be rejected, not raise an exception) and keep LLVM
    from turning the tests into branch-free code. Handlers that replace
    their exchange buffer (`exbuf_create`, `exbuf_delete`, `receive`) are
    left alone. Part of the -O2 and -O3 pipelines.

    ```mlir
    netvm.handler push(%port) {
      %len = netvm.pkt_len
      %ok = arith.cmpi uge, %len, %c24_i32 : i32
      cf.cond_br %ok, ^fast(%port : i32), ^checked(%port : i32)
      ...
    ```
  }];
  let options = [
    Option<"minChecks", "min-checks", "unsigned", /*default=*/"2",
           "Version only handlers with at least this many constant-offset "
           "packet checks">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::cf::ControlFlowDialect"];
  let statistics = [
    Statistic<"numVersioned", "versioned", "Number of handlers versioned">,
    Statistic<"numRemoved", "removed",
              "Number of checks the fast versions do without">
  ];
}

#endif // NETVM_PASSES_TD
