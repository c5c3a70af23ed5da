//===- Allocation.h - Moving MEs between busy and idle -----------*- C++
//-*-===//
//
// Dynamic allocation of microengines (docs/partitioning.md, "Dynamic
// allocation"): a controller on the host side of the emulator (an XScale
// control loop, attached with Emulator::attachHost) watches the work rings
// of a replicated stage and sets how many of its replicas receive new
// packets (the stage's replica word, netvm/Target/ME/AppLayout.h), with
// hysteresis, as the dynamic-allocation paper adds and removes CPUs of a
// receive/process/transmit pipeline by queue thresholds, and as Shenango
// and Caladan reallocate cores every few microseconds on queueing delay.
// Parked replicas finish what they were dealt and take nothing new; the
// ME-seconds a run allocates are what the controller saves.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_EMU_ALLOCATION_H
#define NETVM_EMU_ALLOCATION_H

#include "netvm/emu/Emulator.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace netvm::me {

struct AllocationPolicy {
  /// Replicas the stage may use.
  unsigned minReplicas = 1, maxReplicas = 1;
  /// Add a replica when the packets waiting per active replica exceed
  /// `addAbove`; take one away when they fall below `removeBelow`
  /// (hysteresis: removeBelow < addAbove).
  double addAbove = 2, removeBelow = 0.5;
  /// Cycles after a change before the next addition, and before the next
  /// removal (removing slowly keeps a burst's tail served).
  uint64_t addDwell = 0, removeDwell = 30000;
  /// Cycles between two looks at the rings (3000: 5 us at 600 MHz).
  uint64_t interval = 3000;
};

/// The replicas to use next: `current` replicas, `waiting` packets in the
/// stage's rings, `sinceChange` cycles since the last change. A pure
/// function (the unit tests drive it with observations).
unsigned decideReplicas(const AllocationPolicy &policy, unsigned current,
                        double waiting, uint64_t sinceChange);

struct AllocationDecision {
  uint64_t cycle = 0; // when the new count landed
  unsigned from = 0, to = 0;
  double waiting = 0;   // packets waiting when it was decided
  uint64_t decided = 0; // the cycle of the look that decided it
};

/// The controller: attach() it to an emulator before run(). Every
/// `interval` cycles it reads the rings' counts and the fabric's receive
/// backlog (one host crossing each) and, when decideReplicas changes the count,
/// writes the replica word (a scratch word; one more crossing).
class AllocationController {
public:
  /// `rings`: the stage's work rings; `entryWords`: words per ring entry;
  /// `replicaWord`: the scratch address of the stage's replica count;
  /// `finished`: true once nothing more will arrive (the controller then
  /// detaches when the fabric has handed every packet to the receive side,
  /// so that the machine can go quiescent).
  AllocationController(const AllocationPolicy &policy,
                       std::vector<unsigned> rings, unsigned entryWords,
                       uint32_t replicaWord, std::function<bool()> finished);
  void attach(Emulator &emulator);

  const std::vector<AllocationDecision> &decisions() const { return history; }
  /// Replica-cycles allocated from cycle 0 to `end` (the ME-seconds of the
  /// stage times the clock), given the count at the start.
  uint64_t allocatedCycles(uint64_t end) const;
  /// The longest time from a look that saw the need to the new count
  /// landing (cycles).
  uint64_t maxReaction() const;
  unsigned looks() const { return numLooks; }
  /// The most packets seen waiting at a look.
  double mostWaiting() const { return maxWaiting; }

private:
  static uint64_t step(netvm_emu_host *host, void *self);
  uint64_t look(netvm_emu_host *host);

  AllocationPolicy policy;
  std::vector<unsigned> rings;
  unsigned entryWords;
  uint32_t replicaWord;
  std::function<bool()> finished;
  unsigned current;
  uint64_t lastChange = 0;
  unsigned numLooks = 0;
  double maxWaiting = 0;
  std::vector<AllocationDecision> history;
};

} // namespace netvm::me

#endif // NETVM_EMU_ALLOCATION_H
