//===- Partition.cpp - Pipeline stages and workers for an application -----===//
//
// The search: every way to cut the NetPEs' topological order into at most
// `workers` contiguous stages (the run of NetPEs that share written shared
// memory kept whole), each stage given one worker and the rest handed one
// at a time to the stage that limits the throughput, while it can be
// replicated. The best predicted throughput wins; ties go to fewer stages,
// then fewer workers. docs/partitioning.md describes the model.
//
//===----------------------------------------------------------------------===//

#include "netvm/Analysis/Partition.h"

#include "NetVM/NetVMOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace netvm::analysis {

namespace {

std::string stageNames(const CostModel &model, const PlanStage &s) {
  std::string names;
  for (unsigned pe : s.pes)
    names += (names.empty() ? "" : ", ") + model.pes[pe].name;
  return names;
}

/// Stage `i` of `plan` becomes the bottleneck if it is the slowest so far.
void noteIfSlowest(const CostModel &model, Plan &plan, unsigned i) {
  const PlanStage &s = plan.stages[i];
  if (s.rate < plan.throughput) {
    plan.throughput = s.rate;
    plan.bottleneck =
        "stage " + std::to_string(i) + " (" + stageNames(model, s) + ")";
  }
}

// The packet path of an ME stage around its handlers: a work-ring get and
// the header prefetch (issue cycles, and the latency a context waits).
constexpr double meStageIssue = 20, meStageLatency = 60 + 180;

/// Messages per input packet that cross into or out of each stage.
std::vector<double> crossings(const CostModel &model,
                              const std::vector<unsigned> &stageOf,
                              unsigned stages) {
  std::vector<double> c(stages, 0);
  for (const EdgeCost &e : model.edges) {
    unsigned a = stageOf[e.from], b = stageOf[e.to];
    if (a == b)
      continue;
    c[a] += e.messagesPerPacket;
    c[b] += e.messagesPerPacket;
  }
  return c;
}

std::vector<unsigned> stageOfPEs(const CostModel &model, const Plan &plan) {
  std::vector<unsigned> stageOf(model.pes.size(), 0);
  for (unsigned s = 0; s < plan.stages.size(); ++s)
    for (unsigned pe : plan.stages[s].pes)
      stageOf[pe] = s;
  return stageOf;
}

double formatRate(double pps) { return pps / 1e6; }

/// Whether stage `s` may be replicated, and why not: every NetPE keeps no
/// state, or (host) the first one's state is partitioned by a flow key and
/// the others keep none (the runner's rule, build_stages in
/// runtime/native/runner.c: no NetPE of the stage sends to the first, so
/// the dealer sees every message for it).
void flowKeyedStage(const CostModel &model, PlanStage &s) {
  s.replicable = true;
  s.flowKeyed = false;
  s.notReplicable.clear();
  for (unsigned pe : s.pes) {
    const PECost &c = model.pes[pe];
    if (c.replicable)
      continue;
    if (pe == s.pes.front() && c.flowKeyed &&
        model.target == CostTarget::Native) {
      s.flowKeyed = true;
      continue;
    }
    s.replicable = false;
    s.flowKeyed = false;
    s.notReplicable = "NetPE '" + c.name + "' " + c.notReplicable;
    if (c.flowKeyed)
      s.notReplicable += " (by a flow key, but it is not the first NetPE of "
                         "its stage, or another keeps state)";
    else if (!c.flowKey.empty())
      s.notReplicable += " (no flow key: " + c.flowKey + ")";
    break;
  }
}

/// ME: whether a stage that some NetPE keeps from being replicated may be
/// replicated by flow key, as the ME back end does it (Compile.cpp,
/// "Dealing by flow key"): a plan of one stage, whose only NetPE with state
/// is flow-keyed, takes every packet from the sources and none from
/// another NetPE (the receive MEs compute the key on the packet as it
/// arrives).
void meFlowKeyedStage(const CostModel &model, const Plan &plan, PlanStage &s) {
  int keyed = -1;
  for (unsigned pe : s.pes) {
    const PECost &c = model.pes[pe];
    if (c.replicable)
      continue;
    if (keyed >= 0 || !c.flowKeyed) {
      keyed = -1;
      break;
    }
    keyed = int(pe);
  }
  std::string why;
  if (keyed < 0) {
    for (unsigned pe : s.pes)
      if (!model.pes[pe].replicable) {
        const PECost &c = model.pes[pe];
        s.notReplicable = "NetPE '" + c.name + "' " + c.notReplicable;
        if (c.flowKeyed)
          why = "by a flow key, but another NetPE of its stage keeps state";
        else if (!c.flowKey.empty())
          why = "no flow key: " + c.flowKey;
        break;
      }
  } else {
    const PECost &c = model.pes[keyed];
    for (const EdgeCost &e : model.edges)
      if (e.to == unsigned(keyed))
        why = "by a flow key, but another NetPE sends to it";
    if (why.empty() && c.runsPerPacket < 0.999)
      why = "by a flow key, but not every packet enters it";
    if (why.empty() && plan.stages.size() > 1)
      why = "by a flow key, but the MEs deal by bucket only to a plan of "
            "one stage";
    if (why.empty()) {
      s.replicable = true;
      s.flowKeyed = true;
      s.notReplicable.clear();
      return;
    }
  }
  if (!why.empty())
    s.notReplicable += " (" + why + ")";
}

/// ME: how much more than its share the busiest of K replicas dealt by
/// flow key gets (bucket mod K), from the profile's packets per bucket; 1
/// without a profile (the buckets assumed spread evenly).
double keyedImbalance(const CostModel &model, const PlanStage &s) {
  if (!s.flowKeyed || s.workers < 2)
    return 1;
  for (unsigned pe : s.pes) {
    const std::vector<uint64_t> &counts = model.pes[pe].bucketCounts;
    if (!model.pes[pe].flowKeyed || counts.empty())
      continue;
    std::vector<double> load(s.workers, 0);
    double total = 0;
    for (size_t b = 0; b < counts.size(); ++b) {
      load[b % s.workers] += double(counts[b]);
      total += double(counts[b]);
    }
    // Packets whose key would fault: replica 0.
    load[0] += double(model.pes[pe].keyFaults);
    total += double(model.pes[pe].keyFaults);
    if (total <= 0)
      return 1;
    return *std::max_element(load.begin(), load.end()) * s.workers / total;
  }
  return 1;
}

/// The messages per packet the caller deals to a replicated first stage:
/// 4 packets to a message, but by flow key only runs of packets of one
/// slot (on K slots, 1 + 1/K + 1/K^2 + 1/K^3 packets on average).
double batchShare(const PlanStage &s) {
  if (!s.flowKeyed)
    return 0.25;
  double k = double(std::max(1u, s.workers)), run = 0, p = 1;
  for (int i = 0; i < 4; ++i, p /= k)
    run += p;
  return 1 / run;
}

/// The host's figures for a plan (docs/partitioning.md, "A stage's
/// throughput"). One stage runs to completion: every thread runs the whole
/// application, no rings. Several are a pipeline: the caller's thread deals
/// packets to the first stage, every message between NetPEs is a call into
/// the runtime (a ring message between stages), and the runner adds a
/// stage of no NetPEs before a replicated first stage (the caller then only
/// deals), between two replicated stages and after a replicated last one
/// (build_stages in runtime/native/runner.c). Threads run slower while
/// others keep more cores busy, and cannot use more than the cores.
void evaluateHost(const CostModel &model, Plan &plan,
                  const std::vector<double> &cross) {
  std::vector<unsigned> stageOf = stageOfPEs(model, plan);
  size_t n = plan.stages.size();
  // Replicas by flow key share one instance's data memory: a pipeline
  // (dealer, slots, merger), never run to completion.
  for (PlanStage &s : plan.stages)
    flowKeyedStage(model, s);
  bool pipeline =
      n > 1 || (plan.stages[0].flowKeyed && plan.stages[0].workers > 1);
  std::vector<double> internal(n, 0);
  for (const EdgeCost &e : model.edges)
    if (stageOf[e.from] == stageOf[e.to])
      internal[stageOf[e.from]] += e.messagesPerPacket;
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    PlanStage &s = plan.stages[i];
    s.cost = 0;
    s.latency = 0;
    for (unsigned pe : s.pes)
      s.cost += model.pes[pe].cost;
    if (!pipeline) {
      s.cost += model.packetOverhead;
    } else {
      s.cost += cross[i] * model.crossingCost + internal[i] * model.forwardCost;
      if (i == 0 && s.workers == 1)
        s.cost += model.streamOverhead + model.pipelineOverhead;
      else if (i == 0) // packets dealt four to a message, run in a batch
        s.cost += model.packetOverhead + model.crossingCost * batchShare(s);
    }
    total += s.cost;
  }
  // The key function of a stage replicated by flow key runs on the thread
  // that deals to it: the stage before, or the one the runner adds.
  // So does a SWITCH mark, published at once, each time the next message
  // goes to another slot: (K - 1) / K of the messages for the keyed NetPE
  // on K slots, buckets spread evenly.
  auto keyCost = [&](size_t i) {
    const PlanStage &s = plan.stages[i];
    if (!s.flowKeyed || s.workers < 2)
      return 0.0;
    const PECost &c = model.pes[s.pes.front()];
    return c.keyCost + c.runsPerPacket * model.crossingCost *
                           double(s.workers - 1) / double(s.workers);
  };
  for (size_t i = 1; i < n; ++i)
    if (plan.stages[i - 1].workers == 1) {
      plan.stages[i - 1].cost += keyCost(i);
      total += keyCost(i);
    }
  // The stages the runner adds: (cost per input packet, after stage).
  std::vector<std::pair<double, int>> added;
  if (pipeline) {
    if (plan.stages[0].workers > 1)
      added.push_back({model.streamOverhead + model.pipelineOverhead -
                           model.packetOverhead +
                           model.crossingCost * batchShare(plan.stages[0]) +
                           keyCost(0),
                       -1});
    for (size_t i = 0; i + 1 < n; ++i)
      if (plan.stages[i].workers > 1 && plan.stages[i + 1].workers > 1) {
        double messages = 0;
        for (const EdgeCost &e : model.edges)
          if (stageOf[e.from] <= i && stageOf[e.to] > i)
            messages += e.messagesPerPacket;
        added.push_back(
            {2 * messages * model.crossingCost + keyCost(i + 1), int(i)});
      }
    if (plan.stages[n - 1].workers > 1)
      added.push_back({0, int(n - 1)}); // end marks only, without events
  }
  for (auto &[cost, after] : added)
    total += cost;
  // Run to completion: reading the packets from the trace file does not
  // divide among the threads (the file's pages come in at the rate
  // memory gives them: -j 2 ran a filter of 6 ns a packet no faster).
  double serial = pipeline ? 0 : model.streamOverhead;
  auto stageRate = [&](const PlanStage &s, double slowdown) {
    double perPacket = serial + s.cost * slowdown / s.workers;
    return perPacket > 0 ? 1e9 / perPacket : INFINITY;
  };
  // Busy cores B: each thread runs at 1 / (1 + penalty x (B - 1)), and the
  // threads together use at most the cores. A fixed point, from B = 1.
  double cores = double(std::max(1u, model.cores));
  double busy = 1, slowdown = 1;
  for (int iteration = 0; iteration < 50; ++iteration) {
    slowdown = 1 + model.parallelPenalty * std::max(0.0, busy - 1);
    double t = INFINITY;
    for (PlanStage &s : plan.stages)
      t = std::min(t, stageRate(s, slowdown));
    for (auto &[cost, after] : added)
      if (cost > 0)
        t = std::min(t, 1e9 / (cost * slowdown));
    if (total > 0)
      t = std::min(t, cores * 1e9 / (total * slowdown));
    // Running to completion, every thread is busy all along, reading
    // packets included.
    double demand =
        std::isinf(t)
            ? cores
            : t * (total * slowdown + serial * plan.stages[0].workers) / 1e9;
    double next = std::clamp(demand, 1.0, cores);
    if (std::abs(next - busy) < 1e-6)
      break;
    busy = 0.5 * (busy + next);
  }
  plan.throughput = INFINITY;
  plan.bottleneck.clear();
  for (size_t i = 0; i < n; ++i) {
    PlanStage &s = plan.stages[i];
    s.rate = stageRate(s, slowdown);
    s.cost += serial;
    noteIfSlowest(model, plan, i);
  }
  for (auto &[cost, after] : added)
    if (cost > 0 && 1e9 / (cost * slowdown) < plan.throughput) {
      plan.throughput = 1e9 / (cost * slowdown);
      plan.bottleneck = after < 0 ? "the caller's thread, dealing packets"
                                  : "the runner's thread after stage " +
                                        std::to_string(after);
    }
  if (total > 0 &&
      cores * 1e9 / (total * slowdown) < plan.throughput * 0.9999) {
    plan.throughput = cores * 1e9 / (total * slowdown);
    plan.bottleneck = "the " + std::to_string(model.cores) + " cores";
  }
}

} // namespace

void evaluate(const CostModel &model, Plan &plan) {
  std::vector<unsigned> stageOf = stageOfPEs(model, plan);
  std::vector<double> cross = crossings(model, stageOf, plan.stages.size());
  bool me = model.target == CostTarget::ME;
  double clock = model.clockMHz * 1e6;
  if (!me) {
    evaluateHost(model, plan, cross);
    return;
  }
  plan.throughput = INFINITY;
  plan.bottleneck.clear();
  bool pipeline = plan.stages.size() > 1;
  for (unsigned i = 0; i < plan.stages.size(); ++i) {
    PlanStage &s = plan.stages[i];
    s.cost = cross[i] * model.crossingCost;
    s.latency = 0;
    s.replicable = true;
    s.notReplicable.clear();
    double entering = 0; // packets per input packet that enter the stage
    for (unsigned pe : s.pes) {
      const PECost &c = model.pes[pe];
      s.cost += c.cost;
      s.latency += c.latency;
      if (!c.replicable && s.replicable) {
        s.replicable = false;
        s.notReplicable = "NetPE '" + c.name + "' " + c.notReplicable;
      }
    }
    s.flowKeyed = false;
    if (!s.replicable)
      meFlowKeyedStage(model, plan, s);
    for (unsigned pe : s.pes) {
      bool fedFromOutside = true;
      for (const EdgeCost &e : model.edges)
        if (e.to == pe && stageOf[e.from] == i)
          fedFromOutside = false;
      if (fedFromOutside)
        entering += model.pes[pe].runsPerPacket;
    }
    if (me) {
      s.cost += entering * meStageIssue;
      s.latency += entering * meStageLatency;
      // The contexts hide each other's latency; the work ring is read in
      // packet order (a scratch get under a token), and NetPEs with state
      // pass it in packet order, one context at a time.
      // In a pipeline, which the profile does not calibrate, the stage's
      // ME stalls (every context waiting) for only part of that latency,
      // the rest overlapping the other contexts' issue
      // (docs/partitioning.md, "A pipeline of MEs").
      double stall = pipeline ? model.pipeLatencyStall : 1;
      double perPacket = s.cost + stall * s.latency / double(model.contexts);
      if (pipeline) {
        // Every stage of a pipeline passes every packet on, in order: one
        // put each, and a get and a put for the packets its NetPEs do not
        // run (docs/me-backend.md, "Stages").
        perPacket += model.pipePut;
        if (i > 0)
          perPacket += model.pipePass * std::max(0.0, 1 - entering);
        perPacket = std::max(perPacket, model.orderedGet);
        if (s.workers > 1)
          perPacket += model.pipeReplicaPut;
      } else {
        perPacket = std::max(perPacket, model.orderedGet);
        // A replica also puts every packet's outcome on its transmit ring
        // and reads the replica word each round (docs/me-backend.md).
        if (s.workers > 1 || plan.receiveWorkers > 1)
          perPacket += model.replicaOverhead;
      }
      double serial = 0;
      bool holding = false;
      for (unsigned pe : s.pes)
        if (model.pes[pe].serial) {
          serial += model.pes[pe].serialCost;
          holding = true;
        } else if (holding && pipeline) {
          // A packet keeps the state token until it leaves the ME.
          serial += model.pes[pe].cost + model.pes[pe].latency;
        }
      // In a pipeline every packet takes the token (passed on or not), and
      // each command under it waits for the ME's other contexts to swap
      // out before its context resumes.
      if (holding && pipeline)
        serial = serial * model.pipeSerialScale + model.pipeStateHold +
                 model.pipeStateBusy * s.cost;
      perPacket = std::max(perPacket, serial) * model.stageScale;
      // By flow key, the busiest replica sets the pace.
      perPacket *= keyedImbalance(model, s);
      s.rate = perPacket > 0 ? s.workers * clock / perPacket : INFINITY;
    }
    noteIfSlowest(model, plan, i);
  }
  {
    // Latency-bound paths: a context per packet, the ME's contexts in
    // parallel.
    auto pathTime = [&](double issue, double latency, unsigned contexts) {
      return std::max(issue, (issue + latency) / double(contexts));
    };
    // The default layout (one ME for the NetPEs, one receive ME) has a
    // one-context transmit ME that frees only what it sends; layouts of
    // several MEs free every buffer on an 8-context transmit ME.
    bool defaultLayout = plan.stages.size() == 1 &&
                         plan.stages[0].workers == 1 &&
                         plan.receiveWorkers <= 1;
    // Replicas dealt by flow key: the receive MEs run the key function
    // and put each packet's replica on the order ring, which the transmit
    // ME follows.
    const PECost *key = nullptr;
    if (!pipeline && plan.stages.size() == 1 && plan.stages[0].flowKeyed &&
        plan.stages[0].workers > 1)
      for (unsigned pe : plan.stages[0].pes)
        if (model.pes[pe].flowKeyed && !model.pes[pe].replicable)
          key = &model.pes[pe];
    double rx = pathTime(model.receiveIssue + (key ? key->keyIssue : 0),
                         model.receiveLatency + (key ? key->keyLatency : 0),
                         model.receiveContexts) /
                double(std::max(1u, plan.receiveWorkers));
    const std::vector<double> &ordered =
        pipeline ? model.pipeReceive : model.receiveOrdered;
    if (!defaultLayout && !ordered.empty())
      rx = std::max(rx, ordered[std::min<size_t>(
                            plan.receiveWorkers ? plan.receiveWorkers - 1 : 0,
                            ordered.size() - 1)] +
                            (key ? model.keyedOrdered : 0));
    if (key)
      rx = std::max(
          rx, (model.receiveIssue + key->keyIssue + model.keyedReceiveWait) /
                  double(std::max(1u, plan.receiveWorkers)));
    double tx =
        defaultLayout ? model.outputsPerPacket *
                            pathTime(model.transmitIssue, model.transmitLatency,
                                     model.transmitContexts)
        : pipeline
            ? model.pipeTransmit
            : model.transmitReplicated +
                  model.transmitPerRing /
                      double(plan.stages.empty() ? 1 : plan.stages[0].workers);
    if (key)
      tx = std::max(tx,
                    model.keyedTransmit + model.keyedTransmitPerRing /
                                              double(plan.stages[0].workers));
    plan.receiveRate = rx > 0 ? clock / rx : INFINITY;
    plan.transmitRate = tx > 0 ? clock / tx : INFINITY;
    // A memory controller serves bursts of commands from many contexts:
    // it saturates at about 90% busy (the emulator's DRAM controller under
    // replicated CRC loops).
    double dramBusy = model.dramBusy + (key ? key->keyDram : 0);
    double dramRate = dramBusy > 0 ? 0.9 * clock / dramBusy : INFINITY;
    if (plan.receiveRate < plan.throughput) {
      plan.throughput = plan.receiveRate;
      plan.bottleneck = "receive (" + std::to_string(plan.receiveWorkers) +
                        " ME" + (plan.receiveWorkers == 1 ? "" : "s") + ")";
    }
    if (plan.transmitRate < plan.throughput) {
      plan.throughput = plan.transmitRate;
      plan.bottleneck = "transmit";
    }
    if (dramRate < plan.throughput) {
      plan.throughput = dramRate;
      plan.bottleneck = "the DRAM controller";
    }
  }
}

void calibrate(CostModel &model, const Profile &profile) {
  if (profile.measuredTimePerPacket <= 0 || model.target != CostTarget::ME ||
      model.pes.empty())
    return;
  Plan plan;
  plan.target = model.target;
  plan.workers = 3;
  plan.receiveWorkers = 1;
  plan.stages.emplace_back();
  plan.stages.back().pes = model.order;
  model.stageScale = 1;
  evaluate(model, plan);
  double clock = model.clockMHz * 1e6;
  double stageTime = clock / plan.stages[0].rate;
  double predicted = clock / plan.throughput;
  // Only the stage's share: the receive and transmit paths are modelled
  // from the machine's latencies. A stage predicted to be the bottleneck
  // takes the measured time per packet, slower or faster (the measurement
  // bounds every part of the layout).
  if (plan.bottleneck.rfind("stage", 0) == 0)
    model.stageScale = profile.measuredTimePerPacket / stageTime;
  else if (profile.measuredTimePerPacket > stageTime &&
           profile.measuredTimePerPacket <= predicted)
    model.stageScale = 1;
}

bool partition(const CostModel &model, const PartitionOptions &options,
               Plan &best, std::string &error) {
  const bool me = model.target == CostTarget::ME;
  const std::vector<unsigned> &order = model.order;
  size_t n = order.size();
  best = Plan();
  best.target = model.target;
  best.workers = options.workers;
  if (n == 0) {
    error = "the application has no NetPEs to place";
    return false;
  }
  if (me && options.workers < 3) {
    error = "the MEs need at least 3 workers: a receive ME, a transmit ME and "
            "one for the NetPEs";
    return false;
  }
  if (me && options.workers > model.machineMEs) {
    error = "the machine has " + std::to_string(model.machineMEs) +
            " MEs: at most " + std::to_string(model.machineMEs) + " workers";
    return false;
  }
  if (!me && options.workers < 1) {
    error = "at least one worker is needed";
    return false;
  }
  if (me && options.receiveWorkers > 3) {
    error = "at most 3 receive MEs";
    return false;
  }

  // Cuts may not split the run of NetPEs that share written shared memory.
  size_t first = n, last = 0;
  bool writers = false;
  for (size_t i = 0; i < n; ++i) {
    const PECost &c = model.pes[order[i]];
    writers |= c.writesShared;
    if (c.writesShared || c.readsShared) {
      first = std::min(first, i);
      last = i;
    }
  }
  // The ME back end keeps NetPEs that share memory in one stage even when
  // their writes are atomic adds (docs/me-backend.md, "Stages").
  bool keepShared = writers || me;
  std::vector<size_t> cutPoints; // a cut before order[i]
  for (size_t i = 1; i < n; ++i)
    if (!(keepShared && first < n && i > first && i <= last))
      cutPoints.push_back(i);
  if (writers && first < last)
    best.notes.push_back(
        "NetPEs '" + model.pes[order[first]].name + "' to '" +
        model.pes[order[last]].name +
        "' share memory that one of them writes: they stay in one stage");

  std::vector<unsigned> receiveChoices;
  if (me) {
    if (options.receiveWorkers)
      receiveChoices.push_back(options.receiveWorkers);
    else
      for (unsigned r = 1; r <= 3 && r + 2 <= options.workers; ++r)
        receiveChoices.push_back(r);
  } else {
    receiveChoices.push_back(0);
  }

  bool found = false;
  unsigned bestUsed = 0;
  uint64_t tried = 0;
  constexpr uint64_t maxTried = 200000;
  for (unsigned receive : receiveChoices) {
    unsigned stageWorkers =
        me ? options.workers - receive - 1 : options.workers;
    if (stageWorkers == 0)
      continue;
    std::vector<size_t> cuts;
    std::function<void(size_t)> search = [&](size_t next) {
      if (tried >= maxTried)
        return;
      ++tried;
      // The plan with the cuts chosen so far.
      Plan plan;
      plan.target = model.target;
      plan.workers = options.workers;
      plan.receiveWorkers = receive;
      size_t begin = 0;
      for (size_t k = 0; k <= cuts.size(); ++k) {
        size_t end = k < cuts.size() ? cuts[k] : n;
        PlanStage s;
        for (size_t i = begin; i < end; ++i)
          s.pes.push_back(order[i]);
        plan.stages.push_back(s);
        begin = end;
      }
      // Workers: one each, the rest to the slowest stage while it can be
      // replicated; the best allocation on the way is kept (a second
      // replica can cost more than it gives, a third pay: the replicated
      // ME layout's overhead), and extra workers that do not help are
      // left unused.
      unsigned left = stageWorkers - plan.stages.size();
      evaluate(model, plan);
      std::vector<unsigned> bestWorkers;
      double bestRate = plan.throughput;
      auto snapshot = [&] {
        bestWorkers.clear();
        for (PlanStage &s : plan.stages)
          bestWorkers.push_back(s.workers);
        bestRate = plan.throughput;
      };
      snapshot();
      // The DRAM controller's bound (90% busy) is where it saturates under
      // many contexts' commands; replicas that could feed it beyond that,
      // up to 100%, still bring the measured rate closer to the bound
      // (ipv4-demux and pipeline9 on 8 MEs: 6.63 against 5.76 and 3.79
      // against 3.54 Mpps with one replica more), so they are kept.
      double dramFull = me && model.dramBusy > 0
                            ? model.clockMHz * 1e6 / model.dramBusy
                            : INFINITY;
      while (left) {
        PlanStage *slowest = nullptr;
        for (PlanStage &s : plan.stages)
          if (!slowest || s.rate < slowest->rate)
            slowest = &s;
        if (!slowest->replicable)
          break;
        double before = slowest->rate;
        ++slowest->workers;
        --left;
        evaluate(model, plan);
        if (plan.throughput > bestRate * 1.0001 ||
            (plan.throughput > bestRate * 0.9999 &&
             plan.bottleneck == "the DRAM controller" && before < dramFull))
          snapshot();
      }
      for (size_t k = 0; k < plan.stages.size(); ++k)
        plan.stages[k].workers = bestWorkers[k];
      evaluate(model, plan);
      // More receive MEs only feed replicas: before one ME that runs every
      // NetPE they only add the layout's hand-offs (watch.nvapp: 0.56
      // Mpps behind two receive MEs, 0.91 behind one).
      bool replicated = false;
      for (PlanStage &s : plan.stages)
        replicated |= s.workers > 1;
      if (me && receive > 1 && !replicated)
        return;
      unsigned used = receive + (me ? 1 : 0);
      for (PlanStage &s : plan.stages)
        used += s.workers;
      bool better =
          !found || plan.throughput > best.throughput * 1.0001 ||
          (plan.throughput > best.throughput * 0.9999 &&
           (plan.stages.size() < best.stages.size() ||
            (plan.stages.size() == best.stages.size() && used < bestUsed)));
      if (better) {
        std::vector<std::string> notes = best.notes;
        best = plan;
        best.notes = notes;
        bestUsed = used;
        found = true;
      }
      if (cuts.size() + 1 >= stageWorkers || (me && !model.meStages))
        return;
      for (size_t c = next; c < cutPoints.size(); ++c) {
        cuts.push_back(cutPoints[c]);
        search(c + 1);
        cuts.pop_back();
      }
    };
    search(0);
  }
  if (!found) {
    error = "no plan fits " + std::to_string(options.workers) + " workers";
    return false;
  }
  if (tried >= maxTried)
    best.notes.push_back("the search stopped after " +
                         std::to_string(maxTried) +
                         " plans: the best of them is shown");
  // Say why the bottleneck is not replicated further.
  for (unsigned i = 0; i < best.stages.size(); ++i) {
    const PlanStage &s = best.stages[i];
    if (!s.replicable &&
        best.bottleneck.rfind("stage " + std::to_string(i) + " ", 0) == 0)
      best.notes.push_back("stage " + std::to_string(i) +
                           " cannot be replicated: " + s.notReplicable);
  }
  return true;
}

int splitCandidate(const CostModel &model, const Plan &plan, double minShare) {
  for (unsigned i = 0; i < plan.stages.size(); ++i) {
    const PlanStage &s = plan.stages[i];
    if (s.replicable ||
        plan.bottleneck.rfind("stage " + std::to_string(i) + " ", 0) != 0)
      continue;
    double handlers = 0;
    for (unsigned pe : s.pes)
      handlers += model.pes[pe].cost;
    int best = -1;
    for (unsigned pe : s.pes)
      if (!model.pes[pe].replicable && !model.pes[pe].flowKeyed &&
          model.pes[pe].cost >= minShare * handlers &&
          (best < 0 || model.pes[pe].cost > model.pes[best].cost))
        best = pe;
    return best;
  }
  return -1;
}

void printPlan(const CostModel &model, const Plan &plan,
               llvm::raw_ostream &os) {
  bool me = plan.target == CostTarget::ME;
  const char *worker = me ? "ME" : "thread";
  os << "plan for " << targetName(plan.target) << ", " << plan.workers << " "
     << worker << (plan.workers == 1 ? "" : "s") << " (costs "
     << (model.calibrated ? "measured on " + model.measuredOn
         : model.profiled ? std::string("estimated, weighted by a profile")
                          : std::string("estimated statically"))
     << ")\n";
  if (me)
    os << llvm::format("  receive   %u ME%s  %8.1f %s/packet  %8.3f Mpps\n",
                       plan.receiveWorkers,
                       plan.receiveWorkers == 1 ? " " : "s",
                       model.clockMHz * 1e6 / plan.receiveRate,
                       model.unit.c_str(), formatRate(plan.receiveRate));
  for (unsigned i = 0; i < plan.stages.size(); ++i) {
    const PlanStage &s = plan.stages[i];
    os << llvm::format("  stage %-3u %u %s%s  %8.1f %s/packet  %8.3f Mpps  ", i,
                       s.workers, worker, s.workers == 1 ? " " : "s", s.cost,
                       model.unit.c_str(), formatRate(s.rate));
    os << stageNames(model, s);
    if (s.workers > 1)
      os << (s.flowKeyed ? " (replicated by flow key)" : " (replicated)");
    os << "\n";
  }
  if (me)
    os << llvm::format("  transmit  1 ME   %8.1f %s/packet  %8.3f Mpps\n",
                       model.clockMHz * 1e6 / plan.transmitRate,
                       model.unit.c_str(), formatRate(plan.transmitRate));
  std::vector<unsigned> stageOf = stageOfPEs(model, plan);
  for (const EdgeCost &e : model.edges)
    if (stageOf[e.from] != stageOf[e.to])
      os << llvm::format("  crossing  %s: %.3f messages/packet\n",
                         e.label.c_str(), e.messagesPerPacket);
  os << llvm::format("predicted throughput: %.3f Mpps",
                     formatRate(plan.throughput))
     << ", bottleneck: " << plan.bottleneck << "\n";
  if (!me) {
    // How netvm-run --pipeline -j N runs it.
    unsigned used = 0;
    for (const PlanStage &s : plan.stages)
      used += s.workers;
    if (plan.stages.size() == 1 &&
        !(plan.stages[0].flowKeyed && plan.stages[0].workers > 1))
      os << "run as: run to completion on " << used << " thread"
         << (used == 1 ? "" : "s") << "\n";
    else
      os << "run as: pipeline --stages '" << toStageSpec(model, plan) << "'\n";
  }
  if (!plan.split.empty())
    os << "split: " << plan.split << "\n";
  for (const std::string &note : plan.notes)
    os << "note: " << note << "\n";
  os << "NetPEs (per input packet):\n";
  for (unsigned pe : model.order) {
    const PECost &c = model.pes[pe];
    os << llvm::format("  %-20s %6.3f runs  %8.1f %s", c.name.c_str(),
                       c.runsPerPacket, c.cost, model.unit.c_str());
    if (me)
      os << llvm::format("  + %7.1f latency", c.latency);
    os << (c.measured ? "  measured" : "  estimated");
    if (c.flowKeyed && me)
      os << "  replicable by flow key (" << c.flowKey
         << llvm::format(", key %.1f cycles + %.1f latency at the receive "
                         "MEs)",
                         c.keyIssue, c.keyLatency);
    else if (c.flowKeyed)
      os << "  replicable by flow key (" << c.flowKey
         << llvm::format(", key %.1f %s at the dealer)", c.keyCost,
                         model.unit.c_str());
    else if (c.replicable)
      os << "  replicable";
    else
      os << "  one worker: " << c.notReplicable
         << (c.flowKey.empty() ? "" : "; no flow key: " + c.flowKey);
    os << "\n";
  }
}

void printPlanDot(const CostModel &model, const Plan &plan,
                  llvm::raw_ostream &os) {
  bool me = plan.target == CostTarget::ME;
  os << "digraph plan {\n  rankdir=LR;\n  node [shape=box];\n";
  os << llvm::format("  label=\"%s, %u workers: %.3f Mpps, bottleneck %s\";\n",
                     targetName(plan.target).str().c_str(), plan.workers,
                     formatRate(plan.throughput), plan.bottleneck.c_str());
  if (me)
    os << llvm::format("  rx [label=\"receive\\n%u ME%s\"];\n",
                       plan.receiveWorkers,
                       plan.receiveWorkers == 1 ? "" : "s");
  for (unsigned i = 0; i < plan.stages.size(); ++i) {
    const PlanStage &s = plan.stages[i];
    os << "  subgraph cluster_" << i << " {\n";
    os << llvm::format("    label=\"stage %u: %u %s%s, %.3f Mpps%s\";\n", i,
                       s.workers, me ? "ME" : "thread",
                       s.workers == 1 ? "" : "s", formatRate(s.rate),
                       s.flowKeyed && s.workers > 1 ? ", by flow key" : "");
    for (unsigned pe : s.pes)
      os << llvm::format("    pe%u [label=\"%s\\n%.1f %s\"];\n", pe,
                         model.pes[pe].name.c_str(), model.pes[pe].cost,
                         model.unit.c_str());
    os << "  }\n";
  }
  if (me)
    os << "  tx [label=\"transmit\"];\n";
  for (const EdgeCost &e : model.edges)
    os << llvm::format("  pe%u -> pe%u [label=\"%.2f\"];\n", e.from, e.to,
                       e.messagesPerPacket);
  os << "}\n";
}

me::Placement toPlacement(const CostModel &model, const Plan &plan) {
  me::Placement p;
  p.receiveMEs = std::max(1u, plan.receiveWorkers);
  for (const PlanStage &s : plan.stages) {
    me::StagePlacement sp;
    for (unsigned pe : s.pes)
      sp.pes.push_back(model.pes[pe].name);
    sp.mes = s.workers;
    p.stages.push_back(sp);
  }
  return p;
}

void annotateStages(ApplicationOp app, const CostModel &model,
                    const Plan &plan) {
  mlir::OpBuilder b(app.getContext());
  for (unsigned s = 0; s < plan.stages.size(); ++s)
    for (unsigned pe : plan.stages[s].pes)
      if (PEOp op = app.lookupPE(model.pes[pe].name))
        op->setAttr("netvm.stage", b.getI32IntegerAttr(s));
}

me::Placement placementOfStages(ApplicationOp app, const Plan &plan) {
  me::Placement p;
  p.receiveMEs = std::max(1u, plan.receiveWorkers);
  p.stages.resize(plan.stages.size());
  for (unsigned s = 0; s < plan.stages.size(); ++s)
    p.stages[s].mes = plan.stages[s].workers;
  for (PEOp pe : app.getBodyBlock()->getOps<PEOp>())
    if (auto a = pe->getAttrOfType<mlir::IntegerAttr>("netvm.stage");
        a && a.getInt() >= 0 && size_t(a.getInt()) < p.stages.size())
      p.stages[a.getInt()].pes.push_back(pe.getSymName().str());
  return p;
}

std::string toStageSpec(const CostModel &model, const Plan &plan) {
  std::string spec;
  for (const PlanStage &s : plan.stages) {
    if (!spec.empty())
      spec += ";";
    std::string names;
    for (unsigned pe : s.pes)
      names += (names.empty() ? "" : ",") + model.pes[pe].name;
    spec += names;
    if (s.workers > 1)
      spec += ":" + std::to_string(s.workers);
  }
  return spec;
}

void toStages(const CostModel &model, const Plan &plan,
              std::vector<uint32_t> &stageOfPE,
              std::vector<uint32_t> &replicasOfStage) {
  std::vector<unsigned> stageOf = stageOfPEs(model, plan);
  stageOfPE.assign(stageOf.begin(), stageOf.end());
  replicasOfStage.clear();
  for (const PlanStage &s : plan.stages)
    replicasOfStage.push_back(s.workers);
}

} // namespace netvm::analysis
