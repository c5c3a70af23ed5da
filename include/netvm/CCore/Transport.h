//===- Transport.h - Reliable UDP reassembly as a handler -------*- C++ -*-===//
//
// The C-CORE layer's reliable UDP (docs/ccore.md, "Reliable UDP"): the
// receiving side, a NetPE that reassembles the fragments of one sender's
// messages (netvm/ccore/Message.h, fragmentMessages) and reports what it
// lost or, with retransmission, NACKs gaps and ACKs deliveries, compiled
// like every handler for the host or an ME and put in front of a chain's
// first stage; and the sending side of retransmission, a go-back-N sender
// modelled on the host and timed by the emulator's wire.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_CCORE_TRANSPORT_H
#define NETVM_CCORE_TRANSPORT_H

#include "netvm/CCore/Query.h"
#include "netvm/emu/Emulator.h"

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
  /// With retransmission: the NACKs and ACKs sent, and the sequence number
  /// plus 1 of the gap NACKed (0: none since the last delivery).
  static constexpr uint32_t next = 0, mask = 4, delivered = 8, lost = 12,
                            rejected = 16, nacks = 24, acks = 28, nacked = 32;
  uint32_t nextSequence = 0, fragmentMask = 0, messagesDelivered = 0,
           messagesLost = 0, fragmentsRejected = 0, nacksSent = 0, acksSent = 0;
};
/// Reads the counters from the reassembler's data memory (big-endian
/// words).
RudpCounters rudpCounters(const std::vector<uint8_t> &dataMemory);

/// The NetIL of the reassembler NetPE `name` for messages of `format`
/// carried in fragments of `payload` bytes: push port `in`, push port
/// `out`. False with `error` if the format needs more than
/// rudpMaxFragments fragments. `reliable`: the receiver of the
/// retransmission protocol (docs/ccore.md, "Retransmission"): it keeps
/// in-order messages only, rejects a later message's fragments and NACKs
/// the expected one (once until progress), ACKs each delivery and a
/// delivered message's repeat, on a third port `ack`; the sender's idle
/// gaps are dropped. Else loss reporting: a later message's fragment
/// counts the messages before it lost.
bool emitReassembler(const Format &format, uint32_t payload,
                     const std::string &name, std::string &netil,
                     std::string &error, bool reliable = false);

/// Puts a reassembler (NetPE "rudp", declared last, so the handlers keep
/// their indices) between `app`'s source and its handlers; `reliable`:
/// its `ack` port goes to a second sink `ack` (transmit port 1), the
/// return path to the sender.
bool addReassembler(HandlerApp &app, const Format &format, uint32_t payload,
                    std::string &error, bool reliable = false);

/// The sender of reliable UDP with retransmission (docs/ccore.md,
/// "Retransmission"), a host-side model driven by emulated time: go-back-N
/// over a window of messages, resending from a NACKed sequence number, and
/// from the oldest unacknowledged message after a timeout without an ACK;
/// the network between it and the MEs loses, reorders and (on the return
/// path) loses control messages from a seed.
struct ReliableOptions {
  bool enabled = false;
  uint32_t payload = 256;
  /// Messages sent and not acknowledged at most.
  uint32_t window = 8;
  /// Emulated cycles without an ACK, from the oldest unacknowledged
  /// message's last fragment on the wire (or the last ACK that made
  /// progress, if later), before that message is resent (go-back-N).
  uint64_t timeoutCycles = 120000;
  /// The return path's delay (cycles from the ACK's transmit to the
  /// sender).
  uint64_t returnCycles = 600;
  /// The wire time of an idle gap (nothing to send): the emulator pulls
  /// its input at the line rate, so silence is a gap packet.
  uint64_t idleCycles = 6000;
  /// Percentages: fragments lost, fragments delayed behind the next one,
  /// control messages lost on the way back.
  unsigned lossPercent = 0, reorderPercent = 0, controlLossPercent = 0;
  uint64_t seed = 1;
  /// Fragments (their ordinals in the stream: message k's fragment i is
  /// the sum of the fragment counts before k, plus i) the network loses
  /// the first time they are sent, beside the random losses.
  std::vector<uint64_t> dropFirst;
  /// Give up (the run fails) after this many cycles.
  uint64_t giveUpCycles = 4000000000ull;
};

/// Enabled options for fragments of `payload` bytes, `window` messages in
/// flight and a timeout of `timeoutMicros` emulated us at `clockMHz`, with
/// idle gaps of a twentieth of it (the tool's and Python's defaults).
ReliableOptions reliableOptions(uint32_t payload, uint32_t window,
                                double timeoutMicros, double clockMHz);

struct ReliableReport {
  uint64_t messages = 0, messageBytes = 0;
  /// Fragments put on the wire (first sends and resends), resent, lost by
  /// the network, delayed behind the next one; messages resent (their
  /// first fragment again), timeouts, go-backs on a NACK.
  uint64_t fragmentsSent = 0, fragmentsResent = 0, fragmentsLost = 0,
           fragmentsReordered = 0, messagesResent = 0, timeouts = 0,
           goBacks = 0;
  /// Control messages the sender received (and that the return path lost),
  /// and idle gaps.
  uint64_t acksReceived = 0, nacksReceived = 0, controlLost = 0, idleGaps = 0;
  /// The messages acknowledged, and the cycle the last ACK reached the
  /// sender.
  uint64_t acknowledged = 0, doneCycle = 0;
  bool gaveUp = false;
};

/// The sender: the emulator's input (fragments at the line rate) and the
/// receiver of what the MEs transmit on the return path (`feedback`).
class ReliableSender : public me::PacketInput {
public:
  ReliableSender(const std::vector<std::vector<uint8_t>> &messages,
                 const ReliableOptions &options, double clockMHz,
                 double lineRateGbps);
  bool next(me::InputPacket &packet) override;
  /// A control message the MEs transmitted at `cycle`.
  void feedback(const uint8_t *bytes, size_t length, uint64_t cycle);
  const ReliableReport &report() const { return stats; }

private:
  struct Control {
    uint64_t arrival;
    uint32_t kind, sequence;
  };
  uint64_t wireCycles(uint32_t wireBytes) const;
  void receive();
  /// The next fragment to send (cursor), if the window allows.
  bool take(std::vector<uint8_t> &fragment);
  void idle(me::InputPacket &packet, uint32_t wireBytes);

  const std::vector<std::vector<uint8_t>> &messages;
  ReliableOptions options;
  double clockMHz, gbps;
  /// Per message its fragments, and the ordinal of its first fragment in
  /// the stream.
  std::vector<uint32_t> counts;
  std::vector<uint64_t> firstFragment;
  /// Fragments of the stream sent at least once (in order).
  uint64_t sentFragments = 0;
  /// The fragments of dropFirst not yet lost.
  std::vector<uint64_t> toDrop;
  std::vector<Control> controls;
  size_t controlsSeen = 0;
  uint64_t now = 0, timerStart = 0;
  /// Oldest unacknowledged, the cursor (message, fragment), the first
  /// message never sent.
  uint32_t base = 0, cursor = 0, fragment = 0, fresh = 0;
  /// The last go-back (to `goneBackTo` at `goneBackAt`): a NACK of the
  /// same message within a timeout of it is stale.
  uint32_t goneBackTo = ~0u;
  uint64_t goneBackAt = 0;
  std::vector<uint8_t> held;
  bool holding = false;
  uint64_t random = 0;
  bool chance(unsigned percent);
  void goBack(uint32_t to);
  ReliableReport stats;
};

} // namespace netvm::ccore

#endif // NETVM_CCORE_TRANSPORT_H
