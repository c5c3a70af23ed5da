//===- Allocation.cpp - Moving MEs between busy and idle ------------------===//

#include "netvm/emu/Allocation.h"

#include "netvm/emu/host.h"

#include <algorithm>

namespace netvm::me {

unsigned decideReplicas(const AllocationPolicy &policy, unsigned current,
                        double waiting, uint64_t sinceChange) {
  unsigned lo = std::max(1u, policy.minReplicas);
  unsigned hi = std::max(lo, policy.maxReplicas);
  current = std::clamp(current, lo, hi);
  double perReplica = waiting / double(current);
  if (perReplica > policy.addAbove && current < hi &&
      sinceChange >= policy.addDwell) {
    // As many as the backlog asks for at once (a burst should not wait a
    // dwell per replica), within the bounds.
    unsigned want = unsigned(waiting / policy.addAbove) + 1;
    return std::clamp(want, current + 1, hi);
  }
  if (perReplica < policy.removeBelow && current > lo &&
      sinceChange >= policy.removeDwell)
    return current - 1;
  return current;
}

AllocationController::AllocationController(const AllocationPolicy &policy,
                                           std::vector<unsigned> rings,
                                           unsigned entryWords,
                                           uint32_t replicaWord,
                                           std::function<bool()> finished)
    : policy(policy), rings(std::move(rings)),
      entryWords(std::max(1u, entryWords)), replicaWord(replicaWord),
      finished(std::move(finished)), current(std::max(1u, policy.minReplicas)) {
}

void AllocationController::attach(Emulator &emulator) {
  // Start with the fewest replicas: the word is written before the run.
  uint8_t bytes[4] = {0, 0, 0, uint8_t(current)};
  std::string error;
  emulator.writeMemory(Memory::Scratch, replicaWord, bytes, 4, error);
  history.push_back({0, policy.maxReplicas, current, 0, 0});
  emulator.attachHost(&AllocationController::step, this, policy.interval);
}

uint64_t AllocationController::step(netvm_emu_host *host, void *self) {
  return static_cast<AllocationController *>(self)->look(host);
}

uint64_t AllocationController::look(netvm_emu_host *host) {
  uint64_t now = netvm_emu_host_now(host);
  ++numLooks;
  double words = 0;
  for (unsigned ring : rings) {
    int n = netvm_emu_host_ring_count(host, ring);
    words += n > 0 ? n : 0;
  }
  // Packets wait in the stage's work rings and, when the receive side
  // cannot hand them out faster, in the fabric's receive buffers.
  int backlog = netvm_emu_host_rx_backlog(host);
  double waiting = words / entryWords + backlog;
  maxWaiting = std::max(maxWaiting, waiting);
  // Once the input is over and received, the replicas finish what they
  // were dealt whatever the count (the end markers stay in the rings):
  // detach, so that the machine can go quiescent.
  if (finished && finished() && backlog == 0)
    return 0;
  unsigned next = decideReplicas(policy, current, waiting, now - lastChange);
  if (next != current) {
    uint8_t bytes[4] = {uint8_t(next >> 24), uint8_t(next >> 16),
                        uint8_t(next >> 8), uint8_t(next)};
    netvm_emu_host_write(host, NETVM_EMU_SCRATCH, replicaWord, bytes, 4);
    uint64_t landed = netvm_emu_host_now(host);
    history.push_back({landed, current, next, waiting, now});
    current = next;
    lastChange = landed;
  }
  return policy.interval;
}

uint64_t AllocationController::allocatedCycles(uint64_t end) const {
  uint64_t total = 0;
  for (size_t i = 0; i < history.size(); ++i) {
    uint64_t from = history[i].cycle;
    uint64_t to = i + 1 < history.size() ? history[i + 1].cycle : end;
    if (to > from)
      total += (to - from) * history[i].to;
  }
  return total;
}

uint64_t AllocationController::maxReaction() const {
  uint64_t worst = 0;
  for (size_t i = 1; i < history.size(); ++i)
    worst = std::max(worst, history[i].cycle - history[i].decided);
  // A change is seen at the next look at the latest: add the interval.
  return history.size() > 1 ? worst + policy.interval : 0;
}

} // namespace netvm::me
