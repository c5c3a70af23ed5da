//===- Transport.h - Reliable UDP reassembly as a handler -------*- C++ -*-===//
//
// The receiving side of the C-CORE layer's reliable UDP (docs/ccore.md,
// "Reliable UDP"): a NetPE that reassembles the fragments of one sender's
// messages (netvm/ccore/Message.h, fragmentMessages) and reports what it
// lost, compiled like every handler for the host or an ME, and put in
// front of a chain's first stage.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_CCORE_TRANSPORT_H
#define NETVM_CCORE_TRANSPORT_H

#include "netvm/CCore/Query.h"

#include <cstdint>
#include <string>
#include <vector>

namespace netvm::ccore {

/// The reassembler's data memory: the words it reports (byte offsets).
struct RudpCounters {
  /// The sequence number it assembles (the next to deliver), the bit mask
  /// of its fragments received, the messages delivered, the messages lost
  /// (a later sequence number came before they were complete), and the
  /// fragments rejected (late or duplicate, or not of the format).
  static constexpr uint32_t next = 0, mask = 4, delivered = 8, lost = 12,
                            rejected = 16;
  uint32_t nextSequence = 0, fragmentMask = 0, messagesDelivered = 0,
           messagesLost = 0, fragmentsRejected = 0;
};
/// Reads the counters from the reassembler's data memory (at least 20
/// bytes, big-endian words).
RudpCounters rudpCounters(const std::vector<uint8_t> &dataMemory);

/// The NetIL of the reassembler NetPE `name` for messages of `format`
/// carried in fragments of `payload` bytes: push port `in`, push port
/// `out`. False with `error` if the format needs more than
/// rudpMaxFragments fragments.
bool emitReassembler(const Format &format, uint32_t payload,
                     const std::string &name, std::string &netil,
                     std::string &error);

/// Puts a reassembler (NetPE "rudp", declared last, so the handlers keep
/// their indices) between `app`'s source and its handlers.
bool addReassembler(HandlerApp &app, const Format &format, uint32_t payload,
                    std::string &error);

} // namespace netvm::ccore

#endif // NETVM_CCORE_TRANSPORT_H
