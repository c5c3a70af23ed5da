//===- Freelist.h - Out-of-order completion of messages ---------*- C++ -*-===//
//
// The DOWN ring is consumed in order, but the messages it carries finish in
// any order (sent on different ports, or held by a slow stage). The freelist
// (seed 002) works as a reorder buffer: a message is issued in ring order
// with the HEAD the ring will have once it is freed, completes whenever its
// work is done, and commits in order, moving the HEAD the producer sees
// only past messages that are done and all of whose predecessors are done.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_HOSTIF_FREELIST_H
#define NETVM_HOSTIF_FREELIST_H

#include <cstdint>
#include <vector>

namespace netvm::hostif {

class Freelist {
public:
  explicit Freelist(unsigned entries);
  /// Issues the next message, whose freeing moves HEAD to `headAfter`; its
  /// entry, or -1 when every entry is in use (the consumer must wait).
  int issue(uint32_t headAfter);
  /// The message of `entry` is done (any order). False for an entry that is
  /// not in use (a bug of the caller, reported rather than trusted).
  bool complete(unsigned entry);
  /// Commits done messages in issue order; true, with the new HEAD, if at
  /// least one was committed.
  bool commit(uint32_t &head);
  unsigned inUse() const { return count; }
  unsigned capacity() const { return unsigned(slots.size()); }

private:
  struct Slot {
    uint32_t headAfter = 0;
    bool inUse = false, done = false;
  };
  std::vector<Slot> slots;
  unsigned oldest = 0, count = 0;
};

} // namespace netvm::hostif

#endif // NETVM_HOSTIF_FREELIST_H
