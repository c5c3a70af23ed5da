//===- Ring.cpp - UP and DOWN message rings of the host/NP interface -----===//
//
// Placement of messages in the shared circular buffers: 64-byte slots, WRAP
// messages, one slot kept free so that HEAD == TAIL means empty.
//
//===----------------------------------------------------------------------===//

#include "netvm/hostif/Ring.h"

namespace netvm::hostif {

static void putWord(uint8_t *at, uint32_t value) {
  at[0] = uint8_t(value >> 24);
  at[1] = uint8_t(value >> 16);
  at[2] = uint8_t(value >> 8);
  at[3] = uint8_t(value);
}

static uint32_t getWord(const uint8_t *at) {
  return uint32_t(at[0]) << 24 | uint32_t(at[1]) << 16 | uint32_t(at[2]) << 8 |
         at[3];
}

void encodeHeader(uint8_t *at, uint32_t type, uint32_t length) {
  putWord(at, type);
  putWord(at + 4, length);
}

void decodeHeader(const uint8_t *at, uint32_t &type, uint32_t &length) {
  type = getWord(at);
  length = getWord(at + 4);
}

RingProducer::RingProducer(uint32_t size) : bytes(size) {}

uint32_t RingProducer::used() const {
  return (tailIndex + bytes - headSeen) % bytes;
}

bool RingProducer::place(uint32_t payload, Placement &where) const {
  if (payload > bytes - 2 * slotAlign)
    return false;
  uint32_t need = slotBytes(payload);
  uint32_t room = bytes - used() - slotAlign; // one slot stays free
  where = Placement();
  if (tailIndex + need <= bytes) {
    if (need > room)
      return false;
    where.offset = tailIndex;
    where.newTail = (tailIndex + need) % bytes;
    return true;
  }
  // The message would cross the end: a WRAP fills the rest, the message
  // starts at 0.
  uint32_t filler = bytes - tailIndex;
  if (filler + need > room)
    return false;
  where.wrap = true;
  where.wrapAt = tailIndex;
  where.offset = 0;
  where.newTail = need;
  return true;
}

RingConsumer::RingConsumer(uint32_t size) : bytes(size) {}

bool RingConsumer::peek(const uint8_t *ring, Message &message) const {
  uint32_t at = headIndex;
  for (int step = 0; step < 2; ++step) {
    if (at == tailSeen)
      return false;
    uint32_t type, length;
    decodeHeader(ring + at, type, length);
    message = Message();
    message.offset = at;
    if (type == MsgWrap && at != 0) {
      at = 0;
      continue;
    }
    if (type != MsgData || length > bytes - 2 * slotAlign ||
        at + slotBytes(length) > bytes) {
      message.type = 0; // damaged
      message.newHead = headIndex;
      return true;
    }
    message.type = type;
    message.length = length;
    message.newHead = (at + slotBytes(length)) % bytes;
    return true;
  }
  return false;
}

} // namespace netvm::hostif
