//===- Freelist.cpp - Out-of-order completion of in-order messages -------===//
//
// A circular reorder buffer: issue at the back, complete anywhere, commit
// from the front.
//
//===----------------------------------------------------------------------===//

#include "netvm/hostif/Freelist.h"

namespace netvm::hostif {

Freelist::Freelist(unsigned entries) : slots(entries ? entries : 1) {}

int Freelist::issue(uint32_t headAfter) {
  if (count == slots.size())
    return -1;
  unsigned entry = (oldest + count) % slots.size();
  slots[entry] = {headAfter, true, false};
  ++count;
  return int(entry);
}

bool Freelist::complete(unsigned entry) {
  if (entry >= slots.size() || !slots[entry].inUse || slots[entry].done)
    return false;
  slots[entry].done = true;
  return true;
}

bool Freelist::commit(uint32_t &head) {
  bool moved = false;
  while (count && slots[oldest].done) {
    head = slots[oldest].headAfter;
    slots[oldest] = Slot();
    oldest = (oldest + 1) % slots.size();
    --count;
    moved = true;
  }
  return moved;
}

} // namespace netvm::hostif
