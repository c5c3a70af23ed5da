//===- Ring.h - UP and DOWN message rings -----------------------*- C++ -*-===//
//
// The shared circular buffers of the host/NP interface (docs/onload.md,
// seed 002): a region of memory holding variable-size messages, each an
// 8-byte header (type, length; big-endian, as the microengines see memory)
// and its payload, every message starting on a 64-byte boundary (the host's
// cache block and the DMA engine's preferred burst). Messages go in at TAIL
// and come out at HEAD; a message that would not fit before the end of the
// region is preceded by a WRAP message filling the rest, so a message is
// always contiguous. HEAD and TAIL are kept where they are read: the
// producer keeps TAIL and learns HEAD from a copy the consumer writes into
// the producer's memory, and the other way round, so that every crossing of
// the interface is a write. These classes compute placements only: the
// caller moves the bytes, across whatever memory holds the ring.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_HOSTIF_RING_H
#define NETVM_HOSTIF_RING_H

#include <cstdint>

namespace netvm::hostif {

/// Messages start on this boundary.
constexpr uint32_t slotAlign = 64;
/// The header: type (u32) and payload length in bytes (u32).
constexpr uint32_t headerBytes = 8;

enum MessageType : uint32_t {
  MsgData = 1, // a packet or a datagram
  MsgWrap = 2, // no-op filling the rest of the ring
};

/// Bytes a message with `payload` bytes occupies (header included, rounded
/// up to slotAlign).
constexpr uint32_t slotBytes(uint32_t payload) {
  return (headerBytes + payload + slotAlign - 1) / slotAlign * slotAlign;
}

/// Writes a header at `at` (8 bytes, big-endian).
void encodeHeader(uint8_t *at, uint32_t type, uint32_t length);
/// Reads the header at `at`.
void decodeHeader(const uint8_t *at, uint32_t &type, uint32_t &length);

/// Where a message goes.
struct Placement {
  /// A WRAP message goes at `wrapAt` first (then `offset` is 0).
  bool wrap = false;
  uint32_t wrapAt = 0;
  uint32_t offset = 0;  // the message's header
  uint32_t newTail = 0; // TAIL after the message
};

/// The producer's side: its TAIL, and the latest HEAD the consumer wrote
/// back. HEAD == TAIL means empty; one slot always stays free, so a full
/// ring never looks empty.
class RingProducer {
public:
  /// `size`: bytes in the ring, a multiple of slotAlign, at least two
  /// slots.
  explicit RingProducer(uint32_t size);
  uint32_t size() const { return bytes; }
  uint32_t tail() const { return tailIndex; }
  uint32_t head() const { return headSeen; }
  /// The consumer's HEAD, as written back across the interface.
  void setHead(uint32_t head) { headSeen = head; }
  /// Bytes in use as the producer sees them.
  uint32_t used() const;
  /// Where a message of `payload` bytes would go, or false if it does not
  /// fit now (nothing changes). A payload larger than the ring minus one
  /// slot never fits.
  bool place(uint32_t payload, Placement &where) const;
  /// Commits a placement: TAIL moves past the message.
  void commit(const Placement &where) { tailIndex = where.newTail; }

private:
  uint32_t bytes;
  uint32_t tailIndex = 0, headSeen = 0;
};

/// One message as the consumer finds it.
struct Message {
  uint32_t type = 0;
  uint32_t length = 0;
  uint32_t offset = 0;  // of the header (the payload follows it)
  uint32_t newHead = 0; // HEAD after consuming it
};

/// The consumer's side: its HEAD and the latest TAIL the producer wrote.
class RingConsumer {
public:
  explicit RingConsumer(uint32_t size);
  uint32_t head() const { return headIndex; }
  uint32_t tail() const { return tailSeen; }
  void setTail(uint32_t tail) { tailSeen = tail; }
  bool empty() const { return headIndex == tailSeen; }
  /// The next data message in `ring` (the ring's bytes, as the consumer
  /// sees them), skipping WRAP messages; false if there is none. A header
  /// whose length does not fit the ring reports itself with type 0 (a
  /// damaged ring), and HEAD does not move past it.
  bool peek(const uint8_t *ring, Message &message) const;
  /// Consumes up to and including `message`.
  void consume(const Message &message) { headIndex = message.newHead; }

private:
  uint32_t bytes;
  uint32_t headIndex = 0, tailSeen = 0;
};

} // namespace netvm::hostif

#endif // NETVM_HOSTIF_RING_H
