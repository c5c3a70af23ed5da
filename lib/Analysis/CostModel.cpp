//===- CostModel.cpp - What each NetPE costs on each target ---------------===//
//
// docs/partitioning.md ("The cost model") gives the tables below with
// their sources: the ME figures follow the ME back end's instruction
// selection (docs/me-backend.md) and the emulator's latencies
// (MachineConfig); the host figures were fitted to netvm-bench runs of the
// bundled filters and applications on x86-64.
//
//===----------------------------------------------------------------------===//

#include "netvm/Analysis/CostModel.h"
#include "netvm/Analysis/FlowKey.h"

#include "NetVM/NetVMOps.h"
#include "netvm/emu/Machine.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <map>
#include <thread>

using namespace mlir;

namespace netvm::analysis {

StringRef targetName(CostTarget target) {
  return target == CostTarget::ME ? "me" : "native";
}

namespace {

/// Host constants, fitted to netvm-run on this project's 2-CPU x86-64 VM
/// (bench/partition.py --host; docs/partitioning.md, "Host constants").
/// Packets streamed from a trace file cost this much more each (ns) than
/// the profile's loop over packets in memory (netvm-run -j 1 against
/// netc --profile, median over the bundled applications).
constexpr double hostStreamOverhead = 5;
/// Dealing a packet into a pipeline's first stage costs the caller's thread
/// this much more than running it to completion (the packet message, the
/// source entry called per packet): netvm-run --pipeline -j 1 against -j 1.
constexpr double hostPipelineDealing = 8;
/// A message between NetPEs of one stage, a call into the runtime in a
/// pipeline (pipeline9.nvapp and classify.nvapp on one pipeline stage).
constexpr double hostForward = 8;
/// A message between stages, on each side (classify.nvapp on two stages).
constexpr double hostCrossing = 35;
/// A thread's slowdown while another keeps the second core busy: two
/// threads of flow-hash, pipeline9 and watch ran 1.35-1.41x one.
constexpr double hostParallelPenalty = 0.43;

/// ME: the key function's fixed part on a receive ME (docs/partitioning.md,
/// "Flow-keyed replicas on the MEs"): the descriptor into registers, the
/// header's prefetch, the bucket mod K and the order ring's put, issue
/// cycles per packet.
constexpr double meKeyIssue = 16;

/// The cost of one execution of an operation: issue (ns, or ME cycles in
/// which the ME is busy) and, on the MEs, memory latency the context waits
/// for while other contexts run.
struct OpCost {
  double issue = 0, latency = 0;
  /// ME: cycles the DRAM controller is busy (packet bytes read or written
  /// a word per command).
  double dram = 0;
};

/// A length operand's value, or a typical one (a 64-byte range) when it is
/// computed.
uint64_t lengthOf(Value v, uint64_t typical = 64) {
  APInt c;
  if (v && matchPattern(v, m_ConstantInt(&c)))
    return c.getZExtValue();
  return typical;
}

/// A constant packet offset below the prefetched header.
bool inHeader(Value offset) {
  APInt c;
  return offset && matchPattern(offset, m_ConstantInt(&c)) &&
         c.getZExtValue() < 60;
}

OpCost meCost(Operation *op, const me::MachineConfig &m) {
  const double sram = m.sramLatency, dram = m.dramLatency,
               scratch = m.scratchLatency;
  const double taken = m.branchPenalty;
  const double word =
      m.dramCommandCycles + 4.0 / std::max(1u, m.dramBytesPerCycle);
  auto memory = [&](MemSpace space, Value offset, bool store) -> OpCost {
    switch (space) {
    case MemSpace::Packet:
      if (!store && inHeader(offset))
        return {1.5, 0, 0};
      return {4, dram, word};
    case MemSpace::Info:
      return {store ? 2.0 : 1.5, 0};
    default: // data, shared, initialised data: SRAM
      return {store ? 5.0 : 4.0, sram};
    }
  };
  return llvm::TypeSwitch<Operation *, OpCost>(op)
      .Case([](arith::ConstantOp) { return OpCost{0.3, 0}; })
      .Case([&](cf::BranchOp) { return OpCost{0.5 * taken, 0}; })
      .Case([&](cf::CondBranchOp) { return OpCost{1 + 0.5 * taken, 0}; })
      .Case([&](LoadOp o) {
        return memory(o.getSpace(), o.getOffset(), /*store=*/false);
      })
      .Case([&](StoreOp o) {
        return memory(o.getSpace(), o.getOffset(), /*store=*/true);
      })
      .Case([&](CopyOp o) {
        double words = lengthOf(o.getLength()) / 4.0;
        bool packet = o.getSrcSpace() == MemSpace::Packet ||
                      o.getDstSpace() == MemSpace::Packet;
        return OpCost{6 + 2 * words, 2 * dram, packet ? words * word : 0};
      })
      .Case([&](ChecksumOp o) {
        double words = lengthOf(o.getLength()) / 4.0;
        return OpCost{4 + 2.5 * words, dram, words * word};
      })
      .Case([&](PacketCrcOp o) {
        double words = lengthOf(o.getLength()) / 4.0;
        return OpCost{4 + 3 * words, dram, words * word};
      })
      .Case([&](PacketScanOp) { return OpCost{4 + 3 * 16.0, dram, 16 * word}; })
      .Case([&](FieldCmpOp) { return OpCost{8, dram, 2 * word}; })
      .Case([&](HashOp) { return OpCost{4, double(m.hashLatency)}; })
      .Case([](CrcOp) { return OpCost{4, 0}; })
      .Case([](ChecksumAddOp) { return OpCost{3, 0}; })
      .Case([](ChecksumSubOp) { return OpCost{3, 0}; })
      .Case([](WatchdogOp) { return OpCost{2, 0}; })
      .Case([](CheckOp) { return OpCost{1.5, 0}; })
      .Case([](CheckBoundsOp) { return OpCost{1.5, 0}; })
      .Case([&](RandomOp) { return OpCost{6, sram}; })
      .Case([](TimestampOp) { return OpCost{1, 0}; })
      .Case([&](ExbufCreateOp) { return OpCost{12, scratch}; })
      .Case([&](ExbufDeleteOp) { return OpCost{6, scratch}; })
      .Case([&](CoproInvokeOp) { return OpCost{30, 2 * sram}; })
      .Case([&](CoproInitOp) { return OpCost{30, 2 * sram}; })
      .Case([](CoproReadOp) { return OpCost{1, 0}; })
      .Case([](CoproWriteOp) { return OpCost{1, 0}; })
      .Case([](CoproExbufOp) { return OpCost{1, 0}; })
      .Case([&](SendDupOp) { return OpCost{16, dram + scratch}; })
      // A send within a stage is a branch; to a sink a transmit-ring put
      // (crossings into another stage are the model's crossingCost).
      .Case([&](SendOp) { return OpCost{6, scratch}; })
      .Case([&](DropOp) { return OpCost{6, scratch}; })
      .Case([](RetOp) { return OpCost{1, 0}; })
      .Case([](TrapOp) { return OpCost{12, 0}; })
      .Default([](Operation *) { return OpCost{1, 0}; });
}

/// Operations on the state the ME packet path passes in packet order.
bool touchesState(Operation *op) {
  auto state = [](MemSpace s) {
    return s == MemSpace::Data || s == MemSpace::Shared;
  };
  if (auto l = dyn_cast<LoadOp>(op))
    return state(l.getSpace());
  if (auto st = dyn_cast<StoreOp>(op))
    return state(st.getSpace());
  if (auto c = dyn_cast<CopyOp>(op))
    return state(c.getSrcSpace()) || state(c.getDstSpace());
  return isa<RandomOp, CoproInvokeOp, CoproInitOp>(op);
}

OpCost hostCost(Operation *op) {
  auto memory = [](MemSpace space) -> double {
    return space == MemSpace::Packet || space == MemSpace::Info ? 0.35 : 0.6;
  };
  return llvm::TypeSwitch<Operation *, OpCost>(op)
      .Case([](arith::ConstantOp) { return OpCost{0, 0}; })
      .Case([](cf::BranchOp) { return OpCost{0.1, 0}; })
      .Case([](cf::CondBranchOp) { return OpCost{0.45, 0}; })
      .Case([&](LoadOp o) { return OpCost{memory(o.getSpace()), 0}; })
      .Case([&](StoreOp o) { return OpCost{memory(o.getSpace()), 0}; })
      .Case([](CopyOp o) {
        return OpCost{3 + 0.06 * lengthOf(o.getLength()), 0};
      })
      .Case([](ChecksumOp o) {
        return OpCost{2 + 0.12 * lengthOf(o.getLength()), 0};
      })
      .Case([](PacketCrcOp o) {
        return OpCost{2 + 0.5 * lengthOf(o.getLength()), 0};
      })
      .Case([](PacketScanOp) { return OpCost{6, 0}; })
      .Case([](FieldCmpOp) { return OpCost{2, 0}; })
      .Case([](HashOp) { return OpCost{2, 0}; })
      .Case([](CrcOp) { return OpCost{1, 0}; })
      .Case([](WatchdogOp) { return OpCost{0.3, 0}; })
      .Case([](CheckOp) { return OpCost{0.3, 0}; })
      .Case([](CheckBoundsOp) { return OpCost{0.3, 0}; })
      .Case([](RandomOp) { return OpCost{2, 0}; })
      .Case([](TimestampOp) { return OpCost{0.3, 0}; })
      .Case([](ExbufCreateOp) { return OpCost{20, 0}; })
      .Case([](ExbufDeleteOp) { return OpCost{5, 0}; })
      .Case([](CoproInvokeOp) { return OpCost{25, 0}; })
      .Case([](CoproInitOp) { return OpCost{25, 0}; })
      .Case([](CoproReadOp) { return OpCost{0.5, 0}; })
      .Case([](CoproWriteOp) { return OpCost{0.5, 0}; })
      .Case([](CoproExbufOp) { return OpCost{0.5, 0}; })
      .Case([](SendDupOp) { return OpCost{25, 0}; })
      .Case([](SendOp) { return OpCost{2, 0}; })
      .Case([](DropOp) { return OpCost{1, 0}; })
      .Case([](TrapOp) { return OpCost{10, 0}; })
      .Default([](Operation *) { return OpCost{0.25, 0}; });
}

/// Static block frequencies of one run of a handler: the entry runs once,
/// a conditional branch goes either way with even odds, and a block in a
/// loop runs `loopTrips` times per entry of the loop. `exit` gets the
/// frequencies without the loop factor (the terminators' share of the
/// runs, which sums to 1).
void staticFrequencies(HandlerOp handler, llvm::DenseMap<Block *, double> &freq,
                       llvm::DenseMap<Block *, double> &exit) {
  constexpr double loopTrips = 8;
  Region &body = handler.getBody();
  if (body.empty())
    return;
  // Depth-first order and back edges.
  llvm::SmallPtrSet<Block *, 16> visited, onStack;
  llvm::SmallVector<Block *> post;
  llvm::SmallVector<std::pair<Block *, Block *>> backEdges;
  std::function<void(Block *)> dfs = [&](Block *b) {
    visited.insert(b);
    onStack.insert(b);
    for (Block *s : b->getSuccessors()) {
      if (onStack.contains(s))
        backEdges.push_back({b, s});
      else if (!visited.contains(s))
        dfs(s);
    }
    onStack.erase(b);
    post.push_back(b);
  };
  dfs(&body.front());
  llvm::DenseSet<std::pair<Block *, Block *>> isBack(backEdges.begin(),
                                                     backEdges.end());
  exit[&body.front()] = 1;
  for (Block *b : llvm::reverse(post)) {
    double f = exit[b];
    unsigned n = b->getNumSuccessors();
    for (Block *s : b->getSuccessors())
      if (!isBack.contains({b, s}))
        exit[s] += f / n;
  }
  for (auto &[b, f] : exit)
    freq[b] = f;
  // Natural loops: the blocks that reach the latch without the header.
  for (auto [latch, header] : backEdges) {
    llvm::SetVector<Block *> loop;
    loop.insert(header);
    llvm::SmallVector<Block *> work{latch};
    while (!work.empty()) {
      Block *b = work.pop_back_val();
      if (!loop.insert(b))
        continue;
      for (Block *p : b->getPredecessors())
        work.push_back(p);
    }
    for (Block *b : loop)
      freq[b] *= loopTrips;
  }
}

} // namespace

CostModel buildCostModel(ApplicationOp app, CostTarget target,
                         const Profile *profile) {
  CostModel model;
  model.target = target;
  model.unit = target == CostTarget::ME ? "cycles" : "ns";
  me::MachineConfig machine;
  model.clockMHz = machine.clockMHz;
  model.machineMEs = machine.numMEs;
  model.cores = std::max(1u, std::thread::hardware_concurrency());
  if (target == CostTarget::ME) {
    // The generated packet path (docs/me-backend.md, Compile.cpp): receive
    // takes a free buffer (a scratch get), receives into it and puts the
    // work entry; transmit gets the entry, transmits and frees the buffer.
    double dma = model.packetBytes / std::max(1u, machine.dramBytesPerCycle);
    model.receiveIssue = 30;
    model.receiveLatency = 2 * machine.scratchLatency + machine.rxLatency +
                           dma + machine.dramCommandCycles;
    model.transmitIssue = 40;
    model.orderedGet = machine.scratchLatency + 20;
    model.transmitReplicated = 36;
    model.transmitPerRing = 24;
    model.replicaOverhead = 25;
    model.pipePut = 30;
    model.pipePass = 40;
    model.pipeReplicaPut = 200;
    model.pipeLatencyStall = 0.55;
    model.pipeTransmit = 100;
    model.pipeReceive = {50, 90, 100};
    model.pipeSerialScale = 1.17;
    model.pipeStateHold = 160;
    model.pipeStateBusy = 0.85;
    model.receiveOrdered = {41, 40, 40};
    model.keyedOrdered = 10;
    model.keyedReceiveWait = 50;
    model.keyedTransmit = 80;
    model.keyedTransmitPerRing = 100;
    model.transmitLatency = 2 * machine.scratchLatency + machine.txLatency +
                            dma + machine.dramCommandCycles;
    // A scratch ring put on one side and a get with the header prefetch on
    // the other (the packet path of a stage, docs/me-backend.md).
    model.crossingCost = 14;
  } else {
    // An SPSC ring message written on one thread and read on another: the
    // cache lines move between cores.
    model.crossingCost = hostCrossing;
    model.packetOverhead = 2;
    model.streamOverhead = hostStreamOverhead;
    model.pipelineOverhead = model.packetOverhead + hostPipelineDealing;
    model.forwardCost = hostForward;
    model.parallelPenalty = hostParallelPenalty;
  }
  model.profiled = profile && profile->packets;
  model.packetBytes =
      model.profiled ? double(profile->bytes) / double(profile->packets) : 128;

  std::vector<PEOp> pes;
  std::map<std::string, unsigned> index;
  for (PEOp pe : app.getBodyBlock()->getOps<PEOp>()) {
    index[pe.getSymName().str()] = pes.size();
    pes.push_back(pe);
  }
  unsigned numSources = 0;
  for (auto src : app.getBodyBlock()->getOps<SourceOp>()) {
    (void)src;
    ++numSources;
  }
  numSources = std::max(1u, numSources);

  // Push routes: (pe, port name) -> destination NetPEs; sources -> NetPEs.
  std::map<std::pair<unsigned, std::string>, std::vector<unsigned>> routes;
  std::vector<unsigned> fromSources;
  std::map<std::pair<unsigned, std::string>, unsigned> toSinks;
  for (ConnectOp c : app.getBodyBlock()->getOps<ConnectOp>()) {
    SymbolRefAttr from = c.getFrom(), to = c.getTo();
    if (to.getNestedReferences().empty()) {
      auto src = index.find(from.getRootReference().str());
      if (src != index.end() && !from.getNestedReferences().empty())
        ++toSinks[{src->second,
                   from.getNestedReferences().front().getValue().str()}];
      continue;
    }
    auto dest = index.find(to.getRootReference().str());
    if (dest == index.end())
      continue;
    PortOp port = pes[dest->second].lookupPort(
        to.getNestedReferences().front().getValue());
    if (!port || port.getKind() != PortKind::PushInput)
      continue;
    if (from.getNestedReferences().empty()) {
      fromSources.push_back(dest->second);
      continue;
    }
    auto src = index.find(from.getRootReference().str());
    if (src == index.end())
      continue;
    routes[{src->second, from.getNestedReferences().front().getValue().str()}]
        .push_back(dest->second);
  }

  // Copies of packets (fan-out, send_dup): the ME back end does not
  // replicate an application that makes them (its replicas would share one
  // copy pool).
  bool copies = false;
  {
    std::map<std::string, unsigned> fanout;
    for (ConnectOp c : app.getBodyBlock()->getOps<ConnectOp>()) {
      std::string from;
      llvm::raw_string_ostream os(from);
      os << c.getFrom();
      copies |= ++fanout[from] > 1;
    }
    app.walk([&](SendDupOp) { copies = true; });
  }
  // Nor does it pipeline one across MEs (docs/me-backend.md, "Stages").
  if (target == CostTarget::ME && copies)
    model.meStages = false;

  // Topological order (Kahn, declaration order among ready NetPEs).
  size_t n = pes.size();
  std::vector<unsigned> indegree(n, 0);
  for (auto &[from, dests] : routes)
    for (unsigned d : dests)
      ++indegree[d];
  std::vector<bool> placed(n, false);
  while (model.order.size() < n) {
    size_t next = n;
    for (size_t i = 0; i < n && next == n; ++i)
      if (!placed[i] && indegree[i] == 0)
        next = i;
    for (size_t i = 0; i < n && next == n; ++i)
      if (!placed[i])
        next = i; // a cycle: the verifier refuses these
    placed[next] = true;
    model.order.push_back(next);
    for (auto &[from, dests] : routes)
      if (from.first == next)
        for (unsigned d : dests)
          if (indegree[d])
            --indegree[d];
  }

  // Per NetPE: runs, cost, sends per port.
  model.pes.resize(n);
  std::vector<double> runs(n, 0);
  for (unsigned d : fromSources)
    runs[d] += 1.0 / numSources;
  std::vector<std::map<std::string, double>> sendsPerRun(n);
  std::vector<double> costPerRun(n, 0), latencyPerRun(n, 0), serialPerRun(n, 0),
      dramPerRun(n, 0), keyPerRun(n, 0), keyLatencyPerRun(n, 0),
      keyDramPerRun(n, 0);
  std::vector<std::map<std::string, double>> profiledSends(n);
  double handlerDram = 0;
  for (unsigned i = 0; i < n; ++i) {
    PEOp pe = pes[i];
    PECost &pc = model.pes[i];
    pc.name = pe.getSymName().str();
    HandlerOp push = pe.getHandler(HandlerKind::Push);
    // State: what the runtime and the ME back end refuse to replicate.
    bool writesData = false, coprocessors = false, random = false;
    pe.walk([&](Operation *op) {
      if (auto h = op->getParentOfType<HandlerOp>();
          h && h.getKind() == HandlerKind::Init)
        return;
      auto write = [&](MemSpace s) {
        writesData |= s == MemSpace::Data;
        pc.writesShared |= s == MemSpace::Shared;
      };
      if (auto st = dyn_cast<StoreOp>(op))
        write(st.getSpace());
      else if (auto cp = dyn_cast<CopyOp>(op)) {
        write(cp.getDstSpace());
        pc.readsShared |= cp.getSrcSpace() == MemSpace::Shared;
      } else if (auto ld = dyn_cast<LoadOp>(op))
        pc.readsShared |= ld.getSpace() == MemSpace::Shared;
      else if (isa<RandomOp>(op))
        random = true;
      else if (isa<CoproInvokeOp, CoproInitOp, CoproWriteOp>(op))
        coprocessors = true;
    });
    pc.notReplicable = writesData        ? "writes its data memory"
                       : pc.writesShared ? "writes shared memory"
                       : coprocessors    ? "uses coprocessors"
                       : random          ? "draws random numbers"
                                         : "";
    pc.serial = !pc.notReplicable.empty();
    if (pc.notReplicable.empty() && copies && target == CostTarget::ME)
      pc.notReplicable = "is in an application that copies packets (ME "
                         "replicas would share one copy pool)";
    pc.replicable = pc.notReplicable.empty();
    // Host threads may replicate a NetPE whose data memory a flow key
    // partitions (FlowKey.h): the key function runs at the dealer.
    // So may the MEs (the receive MEs run the key function and deal by
    // bucket, docs/me-backend.md), when no other NetPE keeps state and the
    // NetPE is fed by the sources alone (Partition.cpp checks the rest).
    if (writesData) {
      FlowKeyProof proof = proveFlowKey(pe);
      if (proof.proved) {
        pc.flowKeyed = true;
        pc.flowKey = std::to_string(proof.buckets) + " buckets of " +
                     std::to_string(proof.stride) + " bytes";
        // The key function: its operations, the guards of its packet loads
        // and the call (on the dealer's thread); on a receive ME the
        // header's prefetch, the guards, the division by the replicas and
        // the order ring's put.
        keyPerRun[i] = target == CostTarget::ME ? meKeyIssue : 2;
        keyLatencyPerRun[i] =
            target == CostTarget::ME ? double(machine.dramLatency) : 0;
        // The header's prefetch on the receive ME: about 40 bytes.
        keyDramPerRun[i] =
            target == CostTarget::ME
                ? machine.dramCommandCycles +
                      40.0 / std::max(1u, machine.dramBytesPerCycle)
                : 0;
        for (Operation *op : proof.slice) {
          if (target == CostTarget::ME) {
            // The guard of a packet load (a compare, a branch) and the
            // extraction; netvm.hash is SuperFastHash in software, about
            // 12 instructions a word and 14 to finish.
            OpCost c = meCost(op, machine);
            if (isa<HashOp>(op))
              c.issue = 14 + 12 * double(op->getNumOperands());
            keyPerRun[i] += c.issue + (isa<LoadOp>(op) ? 5 : 0);
            keyLatencyPerRun[i] += c.latency;
            keyDramPerRun[i] += c.dram;
          } else {
            keyPerRun[i] += hostCost(op).issue + (isa<LoadOp>(op) ? 0.5 : 0);
          }
        }
        if (profile && i < profile->bucketCounts.size()) {
          pc.bucketCounts = profile->bucketCounts[i];
          pc.keyFaults = profile->keyFaults[i];
        }
      } else {
        pc.flowKey = proof.reason;
      }
    }
    for (PortOp port : pe.getPorts())
      if (!port.isPush()) {
        pc.replicable = false;
        pc.notReplicable = "has pull ports";
      }
    if (!push)
      continue;

    llvm::DenseMap<Block *, double> freq, exit;
    if (!model.profiled)
      staticFrequencies(push, freq, exit);
    for (Block &b : push.getBody()) {
      double f;
      if (model.profiled) {
        auto it = profile->blockCounts.find(&b);
        f = it == profile->blockCounts.end() ? 0 : double(it->second);
      } else {
        f = freq.lookup(&b);
      }
      if (f == 0)
        continue;
      for (Operation &op : b) {
        OpCost c =
            target == CostTarget::ME ? meCost(&op, machine) : hostCost(&op);
        costPerRun[i] += f * c.issue;
        latencyPerRun[i] += f * c.latency;
        dramPerRun[i] += f * c.dram;
        if (touchesState(&op))
          serialPerRun[i] += f * (c.issue + c.latency);
        if (auto send = dyn_cast<SendOp>(op))
          (model.profiled ? profiledSends[i]
                          : sendsPerRun[i])[send.getPort().str()] +=
              model.profiled ? f : exit.lookup(&b);
        else if (auto dup = dyn_cast<SendDupOp>(op))
          (model.profiled ? profiledSends[i]
                          : sendsPerRun[i])[dup.getPort().str()] +=
              model.profiled ? f : exit.lookup(&b);
      }
    }
  }

  if (model.profiled) {
    double packets = double(profile->packets);
    for (unsigned i = 0; i < n; ++i) {
      PECost &pc = model.pes[i];
      pc.runsPerPacket =
          i < profile->peRuns.size() ? profile->peRuns[i] / packets : 0;
      pc.cost = costPerRun[i] / packets; // counts are totals already
      pc.latency = latencyPerRun[i] / packets;
      pc.serialCost = serialPerRun[i] / packets;
      pc.keyCost = pc.runsPerPacket * keyPerRun[i];
      pc.keyIssue = pc.keyCost;
      pc.keyLatency = pc.runsPerPacket * keyLatencyPerRun[i];
      pc.keyDram = pc.runsPerPacket * keyDramPerRun[i];
      handlerDram += dramPerRun[i] / packets;
      for (auto &[port, count] : profiledSends[i])
        for (unsigned d : routes[{i, port}]) {
          EdgeCost e;
          e.from = i;
          e.to = d;
          e.messagesPerPacket = count / packets;
          model.edges.push_back(e);
        }
    }
  } else {
    // Runs flow along the topological order.
    for (unsigned i : model.order) {
      PECost &pc = model.pes[i];
      pc.runsPerPacket = runs[i];
      pc.cost = runs[i] * costPerRun[i];
      pc.latency = runs[i] * latencyPerRun[i];
      pc.serialCost = runs[i] * serialPerRun[i];
      pc.keyCost = runs[i] * keyPerRun[i];
      pc.keyIssue = pc.keyCost;
      pc.keyLatency = runs[i] * keyLatencyPerRun[i];
      pc.keyDram = runs[i] * keyDramPerRun[i];
      handlerDram += runs[i] * dramPerRun[i];
      for (auto &[port, p] : sendsPerRun[i]) {
        model.outputsPerPacket += runs[i] * p * toSinks[{i, port}];
        for (unsigned d : routes[{i, port}]) {
          EdgeCost e;
          e.from = i;
          e.to = d;
          e.messagesPerPacket = runs[i] * p;
          runs[d] += e.messagesPerPacket;
          model.edges.push_back(e);
        }
      }
    }
  }
  if (model.profiled)
    model.outputsPerPacket =
        double(profile->outputs) / double(profile->packets);
  if (target == CostTarget::ME) {
    double dma = model.packetBytes / std::max(1u, machine.dramBytesPerCycle);
    model.dramBusy =
        (1 + model.outputsPerPacket) * (machine.dramCommandCycles + dma) +
        handlerDram;
    if (profile && profile->measuredDramBusy > 0)
      model.dramBusy = profile->measuredDramBusy;
  }
  for (EdgeCost &e : model.edges)
    e.label = model.pes[e.from].name + " -> " + model.pes[e.to].name;

  // Measured costs replace the estimates, NetPE by NetPE; the latency
  // estimate is scaled with the issue cost.
  if (profile && profile->packets && profile->measuredCost.size() == n) {
    double packets = double(profile->packets);
    for (unsigned i = 0; i < n; ++i) {
      PECost &pc = model.pes[i];
      pc.cost = profile->measuredCost[i] / packets;
      pc.measured = true;
    }
    model.calibrated = true;
    model.measuredOn = profile->measuredOn;
    if (target == CostTarget::Native && profile->measuredTimePerPacket > 0) {
      double handlers = 0;
      for (const PECost &c : model.pes)
        handlers += c.cost;
      model.packetOverhead =
          std::max(0.0, profile->measuredTimePerPacket - handlers);
      model.pipelineOverhead = model.packetOverhead + hostPipelineDealing;
    }
  }
  return model;
}

llvm::DenseMap<Block *, double> blockCosts(HandlerOp handler, CostTarget target,
                                           const Profile *profile) {
  llvm::DenseMap<Block *, double> freq, exit, costs;
  if (profile && profile->packets)
    for (Block &b : handler.getBody())
      freq[&b] = double(profile->blockCounts.lookup(&b));
  else
    staticFrequencies(handler, freq, exit);
  me::MachineConfig machine;
  for (Block &b : handler.getBody()) {
    double c = 0;
    for (Operation &op : b) {
      OpCost oc =
          target == CostTarget::ME ? meCost(&op, machine) : hostCost(&op);
      c += oc.issue + (target == CostTarget::ME ? oc.latency / 8 : 0);
    }
    costs[&b] = freq.lookup(&b) * c;
  }
  return costs;
}

} // namespace netvm::analysis
