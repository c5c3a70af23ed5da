//===- CostModel.h - What each NetPE costs on each target -------*- C++ -*-===//
//
// The cost model the partitioner (Partition.h) balances stages with
// (docs/partitioning.md). For every NetPE of an optimized application it
// estimates, per packet that enters the application:
//
//  - how often its push handler runs (the flow of packets along the
//    connections, from the handlers' send probabilities);
//  - what one run costs on the target: host nanoseconds for native code,
//    ME issue cycles and exposed memory latency for the microengines, from
//    a table of per-operation costs weighted by how often each block runs;
//  - whether its state lets it be replicated (stateless, or state that
//    atomic operations keep right), and why not.
//
// Block frequencies are static (branches even, loop bodies 8 times) unless
// a Profile gives the counts of a run; a Profile may also carry measured
// per-NetPE costs on the target (Profile.h collects both), which then
// replace the estimates ("calibrated").
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_ANALYSIS_COSTMODEL_H
#define NETVM_ANALYSIS_COSTMODEL_H

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
class Block;
} // namespace mlir

namespace netvm {
class ApplicationOp;
class HandlerOp;
} // namespace netvm

namespace netvm::analysis {

enum class CostTarget { Native, ME };
llvm::StringRef targetName(CostTarget target);

/// What a run of the application on a trace showed.
struct Profile {
  /// Packets the run pushed in.
  uint64_t packets = 0;
  /// Executions of every block of every handler (the interpreter's count).
  llvm::DenseMap<mlir::Block *, uint64_t> blockCounts;
  /// Push handler runs per NetPE (declaration order).
  std::vector<uint64_t> peRuns;
  /// Measured cost per NetPE on the target, summed over the run (host
  /// nanoseconds or ME cycles; empty: not measured), and the engine.
  std::vector<double> measuredCost;
  std::string measuredOn;
  /// Packets that left through sinks, and the captured bytes pushed in.
  uint64_t outputs = 0, bytes = 0;
  /// The target's time per packet for the whole application in its
  /// default layout (ME cycles with one ME for every NetPE; host ns on one
  /// thread; 0: not measured).
  double measuredTimePerPacket = 0;
  /// ME: the DRAM controller's busy cycles per packet in that run (packet
  /// DMA in and out, the handlers' packet reads and writes).
  double measuredDramBusy = 0;
  /// Per NetPE whose data memory a flow key partitions (FlowKey.h): the
  /// packets of the trace in each bucket of its key (the interpreter runs
  /// the key function; empty for the others, or past 65536 buckets), and
  /// those whose key would fault (a packet load past the packet).
  std::vector<std::vector<uint64_t>> bucketCounts;
  std::vector<uint64_t> keyFaults;
};

/// One NetPE's figures, per packet entering the application.
struct PECost {
  std::string name;
  /// Push handler runs per input packet.
  double runsPerPacket = 0;
  /// Target units (ns or ME cycles) per input packet: issue cost, and on
  /// the MEs the memory latency a context waits for (hidden by the other
  /// contexts of the ME).
  double cost = 0, latency = 0;
  /// Whether the estimate comes from a measurement (Profile::measuredCost).
  bool measured = false;
  /// Its state allows replicas (several workers running it at once).
  bool replicable = true;
  /// Why not, e.g. "writes its data memory" (empty when replicable).
  std::string notReplicable;
  /// Host: its data memory is partitioned by a flow key (FlowKey.h), so a
  /// stage it begins may have replicas sharing that memory, each packet
  /// dealt by its bucket; `flowKey` describes the key, or says why there is
  /// none (for a NetPE that writes its data memory); `keyCost` is the key
  /// function's cost per input packet at the dealer (ns).
  bool flowKeyed = false;
  std::string flowKey;
  double keyCost = 0;
  /// ME: the key function on a receive ME (FlowKey.h; the ME back end's
  /// dealing by bucket), issue cycles, latency and the DRAM controller's
  /// busy cycles (the header's prefetch) per input packet; the
  /// profile's packets per bucket (Profile::bucketCounts; empty: spread
  /// evenly) and its packets whose key would fault (dealt to replica 0).
  double keyIssue = 0, keyLatency = 0, keyDram = 0;
  std::vector<uint64_t> bucketCounts;
  uint64_t keyFaults = 0;
  /// On the MEs its packets pass its state in packet order, one context at
  /// a time (the state token: it writes data or shared memory, uses the
  /// lookup coprocessor or draws random numbers).
  bool serial = false;
  /// The part of `cost` + `latency` spent in the operations on that state
  /// (per input packet): the section the token serialises, at least.
  double serialCost = 0;
  /// It writes (or only reads) the shared memory: the NetPEs that touch
  /// written shared memory stay in one stage.
  bool writesShared = false, readsShared = false;
};

/// A push connection between two NetPEs, per input packet.
struct EdgeCost {
  unsigned from = 0, to = 0; // NetPE indices
  std::string label;         // "pe.port -> pe.port"
  double messagesPerPacket = 0;
};

struct CostModel {
  CostTarget target = CostTarget::Native;
  /// "ns" or "cycles".
  std::string unit;
  std::vector<PECost> pes;
  /// NetPE indices in topological order along push connections (Kahn's
  /// algorithm, declaration order among ready NetPEs: the native
  /// runtime's pe_order).
  std::vector<unsigned> order;
  std::vector<EdgeCost> edges;
  /// Moving one message between two stages (a host ring, or a scratch ring
  /// between MEs): cost on each side, in `unit`.
  double crossingCost = 0;
  /// Packets that leave through sinks, and captured bytes, per input
  /// packet.
  double outputsPerPacket = 0, packetBytes = 0;
  /// ME: clock (MHz) and contexts per ME of a stage. The receive path per
  /// packet and the transmit path per output: issue cycles and the latency
  /// a context waits (a free buffer, the receive or transmit, the rings),
  /// hidden by the contexts of the ME; and the DRAM controller's busy
  /// cycles per input packet (the packet in, the outputs out, the header
  /// prefetches).
  double clockMHz = 600;
  unsigned contexts = 8, machineMEs = 8;
  double receiveIssue = 0, receiveLatency = 0;
  double transmitIssue = 0, transmitLatency = 0;
  unsigned receiveContexts = 8, transmitContexts = 1;
  /// ME: a stage takes its work in packet order, a scratch get at a time.
  double orderedGet = 0;
  /// ME, layouts of several MEs (docs/me-backend.md, "Placement"): the
  /// transmit ME's cycles per packet, transmitReplicated +
  /// transmitPerRing / K with K replicas (8 contexts taking packet j from
  /// ring j mod K under the ring's token, every packet's buffer freed
  /// there), what a replica adds per packet, and the
  /// receive MEs' ordered section per packet with 1, 2, 3 receive MEs
  /// (each deals its own packets). Fitted to the emulator
  /// (bench/me-backend.py, "Layouts of several microengines").
  double transmitReplicated = 0, transmitPerRing = 0, replicaOverhead = 0;
  std::vector<double> receiveOrdered;
  /// ME, replicas dealt by flow key (docs/partitioning.md, "Flow-keyed
  /// replicas on the MEs"): the receive MEs' ordered section gains the
  /// order ring's put (keyedOrdered cycles a packet); a receive ME that
  /// runs the key takes the receive path's issue cycles, the key's and
  /// keyedReceiveWait cycles a packet (the waits its contexts do not hide
  /// behind each other); the transmit ME takes each packet's replica from
  /// the order ring under its turn token (a scratch get) and waits for
  /// the ring's ticket: keyedTransmit + keyedTransmitPerRing / K cycles a
  /// packet on K replicas. Fitted to light.netil (test/Analysis/Inputs/
  /// flowkey) on the emulator.
  double keyedOrdered = 0, keyedReceiveWait = 0, keyedTransmit = 0,
         keyedTransmitPerRing = 0;
  /// ME: plans of several stages (a pipeline across MEs, docs/me-backend.md
  /// "Stages"); false plans one stage (replicated) only: for an
  /// application that copies packets (fan-out, send_dup), which the back
  /// end does not pipeline.
  bool meStages = true;
  /// ME pipelines (docs/partitioning.md, "A pipeline of MEs"): a stage's
  /// cycles per packet for the entry it puts on the next ring in order
  /// (every stage passes every packet on), what a later stage spends on a
  /// packet it only passes on (a get and an ordered put), what a
  /// replicated stage adds for putting in order by packet number (a busy
  /// wait for the packet's number in scratch, and an add), the receive MEs'
  /// ordered section (numbering) with 1, 2, 3 receive MEs, and the transmit
  /// ME's cycles per packet (one context, every buffer freed there). Fitted to
  /// the emulator (bench/partition.py).
  double pipePut = 0, pipePass = 0, pipeReplicaPut = 0, pipeTransmit = 0;
  /// ME pipelines: the part of a stage's latency per context (latency / 8)
  /// that its ME spends stalled, every context waiting; the rest overlaps
  /// the other contexts' issue. Fitted to the emulator's idle cycles of
  /// fatpe's and pipeline9's one-ME stages (bench/partition.py).
  double pipeLatencyStall = 1;
  /// ME pipelines: a stage with state serialises its packets from their
  /// first state access until they leave the ME (the NetPEs after it in
  /// the stage, the put): that section times pipeSerialScale, plus
  /// pipeStateHold cycles per packet for taking and passing the token,
  /// plus pipeStateBusy times the stage's issue cycles per packet (the
  /// token holder resumes only when the context running swaps out).
  double pipeSerialScale = 1, pipeStateHold = 0, pipeStateBusy = 0;
  std::vector<double> pipeReceive;
  /// ME: the factor by which a stage's time per packet exceeds the
  /// estimate (latency the contexts do not hide), fitted by calibrate().
  double stageScale = 1;
  double dramBusy = 0;
  /// Host (docs/partitioning.md, "Host constants"): the runner's cost per
  /// packet outside the handlers (ns) when it runs to completion over
  /// packets in memory, and what reading them from a trace file adds
  /// (`streamOverhead`, on the thread that takes the packets in); what
  /// dealing a packet to a pipeline costs the caller's thread on top; a
  /// message between two NetPEs of one pipeline stage (a call into the
  /// runtime, netvm_rt_forward); and how much slower a thread runs while
  /// another thread keeps a second core busy (0.43: two busy threads give
  /// 1.4x one). `cores`: the machine's (threads beyond them share them).
  double packetOverhead = 0, streamOverhead = 0, pipelineOverhead = 0,
         forwardCost = 0, parallelPenalty = 0;
  unsigned cores = 1;
  /// Block frequencies came from a profile; costs were measured.
  bool profiled = false, calibrated = false;
  /// The engine the costs were measured on (Profile::measuredOn).
  std::string measuredOn;
};

/// Builds the model of an optimized application (driver::optimize for the
/// same target). `profile` may be null.
CostModel buildCostModel(ApplicationOp app, CostTarget target,
                         const Profile *profile);

/// The estimated cost of each block of `handler`: its frequency (static,
/// per run: branches even, loop bodies 8 times; or the profile's count)
/// times its operations' costs on `target` (ME: issue cycles plus the
/// memory latency spread over the contexts of an ME). netvm-split-pe
/// balances its halves with these.
llvm::DenseMap<mlir::Block *, double>
blockCosts(HandlerOp handler, CostTarget target,
           const Profile *profile = nullptr);

} // namespace netvm::analysis

#endif // NETVM_ANALYSIS_COSTMODEL_H
