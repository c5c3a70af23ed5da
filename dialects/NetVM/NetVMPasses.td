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

//===----------------------------------------------------------------------===//
// The optimizer (docs/optimizer.md)
//===----------------------------------------------------------------------===//

def NetVMSimplify : Pass<"netvm-simplify", "netvm::HandlerOp"> {
  let summary = "algebraic simplification and constant folding";
  let description = [{
    Folds constants through every operation with a folder (arith's and
    netvm's) and applies the algebraic identities that arith's folders do
    not: masks of masks (`(x & 0xff00) & 0x0ff0` is `x & 0x0f00`), masks
    that keep every bit a zero-extension left (`zext(i8) & 0xff`), shifts
    of shifts by constants, multiplications, unsigned divisions and
    remainders by powers of two as shifts and masks, and comparisons that
    the known-zero bits of an operand decide (`(x & 0xf) == 0x10`,
    `zext(i8 x) > 300`). What folds to a constant and has no other effect
    disappears (dead code elimination).

    ```mlir
    %m = arith.andi %x, %c65280 : i32      // 0xff00
    %n = arith.andi %m, %c4080 : i32       // 0x0ff0
    // becomes
    %n = arith.andi %x, %c3840 : i32       // 0x0f00
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numMasks", "masks", "Masks merged or removed">,
    Statistic<"numShifts", "shifts", "Shifts of shifts merged">,
    Statistic<"numStrength", "strength-reduced",
              "Multiplications, divisions and remainders by powers of two "
              "made shifts and masks">,
    Statistic<"numCompares", "compares", "Comparisons decided by known bits">,
    Statistic<"numErased", "ops-removed",
              "Operations removed (folded or dead)">
  ];
}

def NetVMReassociate : Pass<"netvm-reassociate", "netvm::HandlerOp"> {
  let summary = "reassociate offset chains so that constants fold";
  let description = [{
    Rewrites chains of associative and commutative operations (`+`, `|`,
    `^`, `*` with constants, and `-` of a constant as `+`) so that their
    constant parts meet and fold, and moves constants to the outside of a
    chain so that offsets with the same variable part share it (paper
    Fig. 5: `r0 = r0 + 14; r0 = r0 + 20` becomes `r0 + 34`;
    `(h + 14) + 2` and `(h + 14) + 4` become `h + 16` and `h + 18`).

    ```mlir
    %a = arith.addi %r0, %c14 : i32
    %b = arith.addi %a, %c20 : i32
    // becomes
    %b = arith.addi %r0, %c34 : i32
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numFolded", "constants-folded",
              "Constants of a chain folded together">,
    Statistic<"numHoisted", "constants-hoisted",
              "Constants moved to the outside of a chain">
  ];
}

def NetVMSimplifyBranches
    : Pass<"netvm-simplify-branches", "netvm::HandlerOp"> {
  let summary = "branch, jump and switch simplification";
  let description = [{
    Simplifies the control flow of a handler: conditional branches on a
    constant, or on a condition a dominating branch already decided
    (`cond_br %c` below the true edge of another `cond_br %c`), become
    jumps; jumps to blocks that only jump again go straight to the final
    target (jump-to-jump elimination); a `cf.switch` on a constant becomes
    a jump, one whose cases all go where the default goes becomes a jump,
    cases that go to the default target are dropped and a switch with a
    single case becomes a conditional branch; blocks that no path reaches
    are removed, and a block with one predecessor that jumps to it is
    merged into it. Arguments of blocks entered from a switch of 64 cases
    or more that are unused, or get one value on every edge, are removed
    first, each switch rebuilt once (MLIR's region simplifier removes them
    an edge at a time, in time quadratic in the number of cases).

    ```mlir
    cf.cond_br %c, ^a, ^b
  ^a:
    cf.cond_br %c, ^x, ^y     // becomes cf.br ^x
    ```
  }];
  let dependentDialects = ["mlir::cf::ControlFlowDialect",
                           "mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numConstant", "constant-branches",
              "Conditional branches and switches on known values made jumps">,
    Statistic<"numThreaded", "jumps-threaded",
              "Jumps to jumps sent to the final target">,
    Statistic<"numSwitches", "switch-simplified",
              "Switch cases dropped or switches made branches">,
    Statistic<"numBlocks", "blocks-removed",
              "Blocks removed (unreachable or merged)">
  ];
}

def NetVMEliminateRedundantLoads
    : Pass<"netvm-eliminate-redundant-loads", "netvm::HandlerOp"> {
  let summary = "reuse values already loaded or stored";
  let description = [{
    A load of the same memory, offset and width as a dominating load, with
    no possible write to that memory between them, reuses its value; a load
    of what a store in the same block just wrote (same offset and width,
    nothing in between that may write that memory) uses the stored value.
    Packet and info memory are rewritten only by stores, copies and the
    operations that replace the exchange buffer; data memory by this
    NetPE only. Shared memory is left alone: another NetPE may write it at
    any time. Reusing loads can make later loads' offsets equal (a field
    at a header length loaded again): the pass then merges equal
    computations (CSE) and goes again, up to 8 rounds.

    ```mlir
    %a = netvm.load packet[%c12] : i16
    ...                                  // no packet writes
    %b = netvm.load packet[%c12] : i16   // replaced by %a
    ```
  }];
  let statistics = [
    Statistic<"numLoads", "loads-reused", "Loads replaced by earlier loads">,
    Statistic<"numForwarded", "stores-forwarded",
              "Loads replaced by the value just stored">
  ];
}

def NetVMCombineLoads : Pass<"netvm-combine-loads", "netvm::HandlerOp"> {
  let summary = "combine adjacent loads into one wider load";
  let description = [{
    Two loads of adjacent bytes of the same memory (two bytes at `o` and
    `o + 1`, two 16-bit halves at `o` and `o + 2`) in one block, with no
    write to that memory between them, become one load of twice the width,
    whose halves are taken with a shift and a truncation. The wide access
    must already be proven in bounds (a check covering both, e.g. after
    `netvm-eliminate-bounds-checks` merged theirs); otherwise the loads
    stay.

    ```mlir
    netvm.check_bounds packet[%c12], 2
    %hi = netvm.load packet[%c12] {in_bounds} : i8
    %lo = netvm.load packet[%c13] {in_bounds} : i8
    // becomes
    %w = netvm.load packet[%c12] {in_bounds} : i16
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numCombined", "loads-combined", "Pairs of loads combined">
  ];
}

def NetVMSwapConstantByteOrder
    : Pass<"netvm-swap-constant-byte-order", "netvm::HandlerOp"> {
  let summary = "compare raw little-endian loads with swapped constants";
  let description = [{
    NetVM loads are big-endian (network byte order), so on little-endian
    hosts every 16- and 32-bit load costs a byte swap. When a loaded value
    is only compared for equality with constants, possibly after masking
    with constants, the swap can move to the constants at compile time
    (paper Fig. 8): the load becomes `little_endian` (bytes in memory
    order, least significant first) and the constants are swapped.

    ```mlir
    %t = netvm.load packet[%c12] : i16
    %e = arith.extui %t : i16 to i32
    %ip = arith.cmpi eq, %e, %c2048 : i32      // 0x0800
    // becomes
    %t = netvm.load packet[%c12] {little_endian} : i16
    %e = arith.extui %t : i16 to i32
    %ip = arith.cmpi eq, %e, %c8 : i32         // 0x0008
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numLoads", "loads", "Loads made little-endian">
  ];
}

def NetVMEliminateBoundsChecks
    : Pass<"netvm-eliminate-bounds-checks", "netvm::HandlerOp"> {
  let summary = "remove bounds checks that other checks cover";
  let description = [{
    Removes a `netvm.check_bounds` dominated by a check of the same memory
    that covers its range: same offset value and a larger extent, or
    offsets `base + c1` and `base + c2` with the dominated range inside the
    other. Within straight-line code where nothing observable happens
    between two checks of the same base (only pure operations, loads and
    checks), the first is widened to cover both and the second goes: a
    packet too short for either then raises the same exception at a point
    where nothing could tell the difference. Checks are never moved across
    a branch: a packet that a test rejects before the second access must
    still be rejected, not raise an exception. Handlers that replace their
    exchange buffer keep their packet and info checks.

    ```mlir
    netvm.check_bounds packet[%a], 2     // %a = %h + 14
    %x = netvm.load packet[%a] {in_bounds} : i16
    netvm.check_bounds packet[%b], 2     // %b = %h + 16
    // becomes one check of 4 bytes at %a
    ```
  }];
  let statistics = [
    Statistic<"numDominated", "dominated",
              "Checks covered by a dominating check">,
    Statistic<"numMerged", "merged", "Checks merged into an earlier one">
  ];
}

def NetVMMergeTests : Pass<"netvm-merge-tests", "netvm::HandlerOp"> {
  let summary = "one branch for a chain of tests that exit to one place";
  let description = [{
    A filter is a chain of tests that each leave for the same block (reject)
    or go on to the next. When the next test's block has no other
    predecessor and only cheap operations that cannot fail or be observed
    (pure operations and loads already proven in bounds: typically the fast
    version made by `netvm-version-packet-checks`), its operations move up
    and the two tests become one branch on their combined condition. The
    CPU then predicts one branch per packet instead of one per test. Blocks
    with a bounds check, a store or more than `max-ops` operations are left
    alone. Part of the -O2 and -O3 pipelines, after versioning.

    ```mlir
      cf.cond_br %notip, ^reject, ^next
    ^next:
      %p = netvm.load packet[%c23] {in_bounds} : i8
      %nottcp = ...
      cf.cond_br %nottcp, ^reject, ^accept
    // becomes
      %p = netvm.load packet[%c23] {in_bounds} : i8
      %nottcp = ...
      %either = arith.ori %notip, %nottcp : i1
      cf.cond_br %either, ^reject, ^accept
    ```
  }];
  let options = [
    Option<"maxOps", "max-ops", "unsigned", /*default=*/"12",
           "Merge only blocks with at most this many operations besides "
           "the branch">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::cf::ControlFlowDialect"];
  let statistics = [
    Statistic<"numMerged", "merged", "Tests merged into the one before">
  ];
}

def NetVMFormSwitches : Pass<"netvm-form-switches", "netvm::HandlerOp"> {
  let summary = "a switch for a branch on a disjunction of equality tests";
  let description = [{
    `host a or host b or ...` ends, after `netvm-merge-tests`, as one
    branch on an `or` of many tests of one loaded field against constants,
    which LLVM optimizes and selects in time that grows fast with their
    number and then tests one by one. A conditional branch whose condition
    is a disjunction of `x == c` tests (through `arith.ori`, and negations
    of `arith.andi` of `x != c`) of at least `min-cases` tests becomes a
    `cf.switch` per tested value, each falling through to the next, which
    LLVM lowers to a binary search or a jump table. A disjunction of as
    many tests that is a value rather than a branch's condition (NetPFL
    or's a header's tests into the flag it carries) becomes the same
    switches, to a block split off after it that receives true on a match
    and false otherwise (a negated one the opposite). Part of the -O2 and
    -O3 pipelines, after `netvm-merge-tests`.

    ```mlir
      %a = arith.cmpi eq, %x, %c1 : i32
      %b = arith.cmpi eq, %x, %c2 : i32
      %ab = arith.ori %a, %b : i1
      ...
      cf.cond_br %abcd, ^match, ^other
    // becomes
      cf.switch %x : i32, [default: ^other, 1: ^match, 2: ^match, ...]
    ```
  }];
  let options = [
    Option<"minCases", "min-cases", "unsigned", /*default=*/"32",
           "Form switches for conditions of at least this many tests (a "
           "shorter `or` of comparisons is one predictable branch)">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::cf::ControlFlowDialect"];
  let statistics = [
    Statistic<"numSwitches", "switches", "Branches made switches">,
    Statistic<"numCases", "cases", "Cases of the switches formed">
  ];
}

#endif // NETVM_PASSES_TD

def NetVMInlinePEs : Pass<"netvm-inline-pes", "netvm::ApplicationOp"> {
  let summary = "merge connected NetPEs of one pipeline stage into one";
  let description = [{
    A NetPE `b` fed by exactly one connection, from output port `p` of
    NetPE `a` that goes nowhere else, is merged into `a`: every
    `netvm.send @p` of `a`'s push handler becomes a branch into a copy of
    `b`'s push handler (its port argument the constant number of `b`'s
    input), `b`'s output ports become ports of `a` named `b.port` with
    their connections, `b`'s init handler runs after `a`'s, and `b`'s data
    memory, initialised data and coprocessors move to `a`. The optimizer
    then sees both handlers as one: a header `a` checked need not be
    checked again in `b`, a value `a` stored in info memory is forwarded
    to `b`'s load (the NetVM paper's X11 compiler inlined a counting NetPE
    into a filter the same way).

    Left alone: NetPEs in different stages (their `netvm.stage` integer
    attributes differ; the partitioner sets them, docs/partitioning.md),
    NetPEs with pull ports, a `send_dup` to `p`, and pairs that both have
    data memory, initialised data or the same coprocessor (each memory's
    bounds are its NetPE's). What the packets do at the sinks does not
    change; per-NetPE counters and data memory dumps name `a` for both.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::cf::ControlFlowDialect"];
  let statistics = [
    Statistic<"numInlined", "inlined", "NetPEs merged into the NetPE before">
  ];
}

def NetVMIntRangeOpts : Pass<"netvm-int-range-opts", "netvm::HandlerOp"> {
  let summary = "MLIR's integer range optimizations, linear on large handlers";
  let description = [{
    The rewrites of MLIR's `int-range-optimizations` (comparisons whose
    result the integer range analysis proves become constants, values
    proven constant are replaced), applied without the greedy driver's
    region simplification. That simplification merges identical blocks by
    hashing every block's successors after each change, which took 1.8 s
    of a 1,000-term tcpdump expression's 2.5 s compile; netvm's own
    `netvm-simplify` and `netvm-simplify-branches`, which run after it,
    remove the dead and redundant blocks the rewrites leave.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def NetVMSplitPE : Pass<"netvm-split-pe", "netvm::ApplicationOp"> {
  let summary = "split one NetPE's push handler into two NetPEs at a legal cut";
  let description = [{
    The inverse of `netvm-inline-pes`, for a NetPE that takes most of a
    pipeline's work and cannot be replicated (docs/partitioning.md): its
    push handler is cut before a block `C` into two NetPEs. The first keeps
    the name, the input ports and every block `C` does not dominate; where
    it branched to `C` it now stores the values live across the cut (the
    values it defines that the second half uses, and `C`'s arguments) as
    4-byte words in info memory past every byte the application uses, and
    sends on a new port `split` connected to the second NetPE, `pe_2`. The
    second's handler loads the words, zeroes them and branches to `C`; it
    holds the blocks `C` dominates and the output ports only they send on.

    A cut is legal when (1) `C` is not the entry block and every successor
    of a block `C` dominates is dominated by `C`, none of them branching
    back to `C` (the second half is closed and outside loops); (2) data
    memory, the coprocessors and random numbers are used on one side only
    (they move there with the init handler): the halves may run in
    different pipeline stages at once, so a later packet's first half may
    run before an earlier packet's second half, and accesses to one state
    on both sides would interleave differently from the interpreter's
    packet-at-a-time order; for the same reason shared memory may be used
    on both sides only when neither writes it; (3) the handler neither
    replaces its exchange buffer nor sends copies (`send_dup`) before the
    cut, and no output port is sent on from both sides (its destination
    would be fed twice); (4) at most `max-carried` values of at most 32 bits
    are live across it; (5) every info memory access in the application is
    at a constant offset and nothing reads `info_len`, so no NetPE can see
    the carried words. Among legal cuts the pass picks the one whose share
    of the handler's estimated cost (the cost model's block costs for
    `target`) is nearest `fraction`, each carried value counting as 1% off;
    `block` names the cut instead (the block's index in the push handler,
    0 the entry). A bad NetPE name or an illegal explicit cut is an error.

    ```mlir
    // before: @fat's push handler, state (data memory) after ^done
    ^done(%sum: i32):
      %old = netvm.load data[%c0] : i32
      ...
    // after netvm-split-pe{pe=fat}: @fat ends
    ^bb3(%v: i32):
      %c8 = arith.constant 8 : i32
      netvm.store %v, info[%c8] {in_bounds} : i32
      netvm.send @split
    // and @fat_2 (fed by @fat::@split) begins
    netvm.handler push(%port) {
      %w = netvm.load info[%c8] {in_bounds} : i32
      netvm.store %c0, info[%c8] {in_bounds} : i32
      cf.br ^bb1(%w : i32)
    ^bb1(%sum: i32):
      %old = netvm.load data[%c0] : i32
      ...
    ```
  }];
  let options = [
    Option<"peName", "pe", "std::string", "", "the NetPE to split">,
    Option<"fraction", "fraction", "double", "0.5",
           "the share of the estimated cost before the cut">,
    Option<"block", "block", "int", "-1",
           "cut before this block of the push handler (index; -1: choose)">,
    Option<"target", "target", "std::string", "\"native\"",
           "the cost model's target: native or me">,
    Option<"maxCarried", "max-carried", "unsigned", "8",
           "the most values a cut may carry in info memory">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::cf::ControlFlowDialect"];
  let statistics = [
    Statistic<"numSplit", "split", "NetPEs split in two">
  ];
}

def NetVMRecognizeAtomics
    : Pass<"netvm-recognize-atomics", "netvm::ApplicationOp"> {
  let summary = "counters in data and shared memory become atomic adds";
  let description = [{
    A push handler that counts - loads a 4-byte word of data or shared
    memory, adds to it and stores the sum back to the same word, reading
    the loaded value nowhere else - gets `netvm.atomic_add` instead, when
    every access of its push handler to that memory (for shared memory:
    of every push handler) is such a counter. The order in which packets
    add then cannot be seen, so the NetPE needs no packet order for its
    state: on the MEs its contexts and replicas on several MEs add with
    `sram[add]` without passing the state token (the NetVM paper's
    section 6.3.4 did this for a match counter). A handler that also reads
    the memory, copies it or stores other values keeps its loads and
    stores. The offset must be a multiple of 4 that the pass can see
    (constant, or a product or shift by 4 and sums of such).

    ```mlir
    %v = netvm.load data[%off] {in_bounds} : i32
    %n = arith.addi %v, %c1 : i32
    netvm.store %n, data[%off] {in_bounds} : i32
    // becomes
    netvm.atomic_add %c1, data[%off] {in_bounds} : i32
    ```
  }];
  let statistics = [
    Statistic<"numAtomics", "atomics", "Counters made atomic adds">
  ];
}
