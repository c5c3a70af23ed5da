//===- Transport.cpp - Reliable UDP reassembly as a handler ---------------===//
//
// The reassembler NetPE of netvm/CCore/Transport.h. Everything about the
// format is a constant of its code (the fragment count, each fragment's
// length and place), so it needs no loop and no computed offset: one
// branch per fragment index, which the ME back end takes as it is. And
// ReliableSender, the go-back-N sender of retransmission.
//
//===----------------------------------------------------------------------===//

#include "netvm/CCore/Transport.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace netvm::ccore {

namespace {
/// Where the sequence number of the arriving fragment is kept, and the
/// message is assembled, in data memory.
constexpr uint32_t sequenceAddress = 20, bufferAddress = 48;
} // namespace

RudpCounters rudpCounters(const std::vector<uint8_t> &data) {
  auto word = [&](uint32_t at) {
    return at + 4 <= data.size()
               ? uint32_t(data[at]) << 24 | uint32_t(data[at + 1]) << 16 |
                     uint32_t(data[at + 2]) << 8 | data[at + 3]
               : 0;
  };
  RudpCounters c;
  c.nextSequence = word(RudpCounters::next);
  c.fragmentMask = word(RudpCounters::mask);
  c.messagesDelivered = word(RudpCounters::delivered);
  c.messagesLost = word(RudpCounters::lost);
  c.fragmentsRejected = word(RudpCounters::rejected);
  c.nacksSent = word(RudpCounters::nacks);
  c.acksSent = word(RudpCounters::acks);
  return c;
}

bool emitReassembler(const Format &format, uint32_t payload,
                     const std::string &name, std::string &netil,
                     std::string &error, bool reliable) {
  uint32_t size = format.size;
  uint32_t count = payload ? (size + payload - 1) / payload : 0;
  if (count == 0 || count > rudpMaxFragments) {
    error = "reliable UDP: " + std::to_string(size) +
            "-byte messages of format '" + format.name + "' need 1 to " +
            std::to_string(rudpMaxFragments) + " fragments, not " +
            std::to_string(count) + " of " + std::to_string(payload) + " bytes";
    return false;
  }
  uint32_t full = count == 32 ? 0xFFFFFFFFu : (1u << count) - 1;
  std::ostringstream os;
  // Data memory word at `a` plus `delta`, stored back.
  auto bump = [&](uint32_t a, const std::string &delta) {
    os << "  push " << a << "\n  umload.32\n"
       << delta << "  push " << a << "\n  mstore.32\n";
  };
  auto load = [&](uint32_t a) { os << "  push " << a << "\n  umload.32\n"; };
  // Copies `length` bytes word by word at constant offsets (the ME back
  // end copies a netvm.copy byte by byte, a DRAM read-modify-write each):
  // packet -> data memory, or back. Only for a few whole-word fragments:
  // unrolled, the words take about 20 ME instructions each, and the
  // control store holds 4096 (the retransmission's receiver is about 300
  // instructions longer: word copies up to 512-byte messages).
  bool wordCopies =
      payload % 4 == 0 && count <= 8 && (!reliable || size <= 512);
  auto copy = [&](bool toPacket, uint32_t from, uint32_t to, uint32_t length) {
    for (uint32_t at = 0; at < length;) {
      uint32_t n = length - at >= 4 ? 4 : 1;
      if (toPacket)
        os << "  push " << from + at << "\n  umload." << n * 8 << "\n  push "
           << to + at << "\n  pstore." << n * 8 << "\n";
      else
        os << "  push " << from + at << "\n  " << (n == 4 ? "s" : "u")
           << "pload." << n * 8 << "\n  push " << to + at << "\n  mstore."
           << n * 8 << "\n";
      at += n;
    }
  };
  os << "; C-CORE reliable UDP: reassembles " << size << "-byte '"
     << format.name << "' messages from " << count << " fragments of "
     << payload << " bytes (docs/ccore.md)\n"
     << "segment .ports\n  push_input in\n  push_output out\n"
     << (reliable ? "  push_output ack\n" : "") << "ends\n\n"
     << "segment .metadata\n  .netpe_name " << name << "\n  .datamem_size "
     << bufferAddress + size << "\nends\n\n"
     << "segment .push\n  pop\n"
     << "  pbl                 ; shorter than a header: reject\n  push "
     << rudpHeaderBytes << "\n  jcmp.l reject\n";
  if (reliable)
    os << "  push 10             ; fragment count 0: the sender's idle gap\n"
       << "  upload.16\n  push 0\n  jcmp.eq drop\n";
  os << "  push 10             ; the fragment count\n  upload.16\n  push "
     << count << "\n  jcmp.neq reject\n"
     << "  push 14             ; the message length\n  upload.16\n  push "
     << size << "\n  jcmp.neq reject\n"
     << "  push 4              ; the sequence number\n"
     << "  spload.32\n  push " << sequenceAddress << "\n  mstore.32\n";
  load(sequenceAddress);
  load(RudpCounters::next);
  os << "  jcmp.l " << (reliable ? "late" : "reject")
     << "       ; an earlier message's: late\n";
  load(sequenceAddress);
  load(RudpCounters::next);
  os << "  jcmp.eq current\n";
  if (reliable) {
    os << "  jump gap\n";
  } else {
    os << "; a later message: the ones before it are lost\n";
    bump(RudpCounters::lost, "  push " + std::to_string(sequenceAddress) +
                                 "\n  umload.32\n  add\n  push 0\n"
                                 "  umload.32\n  sub\n");
    load(sequenceAddress);
    os << "  push " << RudpCounters::next << "\n  mstore.32\n"
       << "  push 0\n  push " << RudpCounters::mask << "\n  mstore.32\n";
  }
  os << "current:\n  push 8              ; the fragment's index\n"
     << "  upload.16\n";
  for (uint32_t i = 0; i < count; ++i)
    os << "  dup\n  push " << i << "\n  jcmp.eq f" << i << "\n";
  os << "  pop\n  jump reject\n";
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t length = std::min(payload, size - i * payload);
    uint32_t bit = 1u << i;
    os << "f" << i << ":\n  pop\n  pbl\n  push " << rudpHeaderBytes + length
       << "\n  jcmp.neq reject\n";
    load(RudpCounters::mask);
    os << "  push " << bit << "\n  and\n  push 0\n"
       << "  jcmp.neq reject     ; a duplicate\n";
    load(RudpCounters::mask);
    os << "  push " << bit << "\n  or\n  push " << RudpCounters::mask
       << "\n  mstore.32\n";
    if (wordCopies)
      copy(false, rudpHeaderBytes, bufferAddress + i * payload, length);
    else
      os << "  push " << rudpHeaderBytes << "\n  push "
         << bufferAddress + i * payload << "\n  push " << length
         << "\n  pdcopy\n";
    os << "  jump check\n";
  }
  // A control message on the return path: `kind`, then the next sequence
  // number expected (plus `delta`), sent (`send`) or sent as a copy.
  auto control = [&](uint32_t kind, uint32_t delta, const char *send) {
    os << "  push " << rudpControlBytes << "\n  exbuf.create\n  push " << kind
       << "\n  push 0\n  pstore.32\n";
    load(RudpCounters::next);
    if (delta)
      os << "  push " << delta << "\n  add\n";
    os << "  push 4\n  pstore.32\n  " << send << " ack\n";
  };
  os << "check:\n";
  load(RudpCounters::mask);
  os << "  push " << full << "\n  jcmp.neq keep\n";
  if (reliable) {
    // Delivered: the cumulative ACK first (a copy), then the message.
    bump(RudpCounters::acks, "  push 1\n  add\n");
    control(rudpAck, 1, "pkt.senddup");
    os << "  push 0\n  push " << RudpCounters::nacked
       << "\n  mstore.32         ; progress: a new gap may be NACKed\n";
  }
  os << "  push " << size << "\n  exbuf.create\n  push " << bufferAddress
     << "\n  push 0\n  push " << size << "\n  dpcopy\n";
  bump(RudpCounters::delivered, "  push 1\n  add\n");
  bump(RudpCounters::next, "  push 1\n  add\n");
  os << "  push 0\n  push " << RudpCounters::mask << "\n  mstore.32\n"
     << "  pkt.send out\n  ret\n"
     << "keep:                 ; the fragment is in the buffer\n  ret\n"
     << "reject:\n";
  bump(RudpCounters::rejected, "  push 1\n  add\n");
  os << "  ret\n";
  if (reliable) {
    // A fragment of a delivered message: the sender has not seen its ACK
    // (lost, or still on its way): ACK again, once a message (its last
    // fragment).
    os << "late:\n";
    bump(RudpCounters::rejected, "  push 1\n  add\n");
    os << "  push 8\n  upload.16\n  push " << count - 1
       << "\n  jcmp.neq drop\n";
    bump(RudpCounters::acks, "  push 1\n  add\n");
    control(rudpAck, 0, "pkt.send");
    // A later message's fragment: only in-order messages are kept; NACK
    // the expected one, once until progress.
    os << "gap:\n";
    bump(RudpCounters::rejected, "  push 1\n  add\n");
    load(RudpCounters::nacked);
    load(RudpCounters::next);
    os << "  push 1\n  add\n  jcmp.eq drop        ; NACKed already\n";
    load(RudpCounters::next);
    os << "  push 1\n  add\n  push " << RudpCounters::nacked
       << "\n  mstore.32\n";
    bump(RudpCounters::nacks, "  push 1\n  add\n");
    control(rudpNack, 0, "pkt.send");
    os << "drop:\n  ret\n";
  }
  os << "ends\n";
  netil = os.str();
  return true;
}

bool addReassembler(HandlerApp &app, const Format &format, uint32_t payload,
                    std::string &error, bool reliable) {
  std::string netil;
  if (!emitReassembler(format, payload, "rudp", netil, error, reliable))
    return false;
  std::ostringstream nvapp;
  if (app.nvapp.empty()) {
    // One handler: an application of it behind the reassembler.
    const std::string &pe = app.name;
    nvapp << "# C-CORE handler behind reliable UDP\napplication " << app.name
          << "\nsource in\nsink out\n"
          << (reliable ? "sink ack\n" : "") << "pe " << pe << " = \""
          << app.files.front().first << "\"\npe rudp = \"rudp.netil\"\n\n"
          << "in -> rudp.in\nrudp.out -> " << pe << ".in\n"
          << pe << ".out -> out\n"
          << (reliable ? "rudp.ack -> ack\n" : "");
  } else {
    // A multicast: its edges from the source now leave the reassembler.
    std::istringstream in(app.nvapp);
    std::string line;
    bool declared = false;
    while (std::getline(in, line)) {
      if (line.rfind("in -> ", 0) == 0) {
        nvapp << "rudp.out -> " << line.substr(6) << "\n";
        continue;
      }
      if (reliable && line == "sink out") {
        nvapp << line << "\nsink ack\n";
        continue;
      }
      if (!declared && line.empty() &&
          nvapp.str().find("\npe ") != std::string::npos) {
        nvapp << "pe rudp = \"rudp.netil\"\n\nin -> rudp.in\n"
              << (reliable ? "rudp.ack -> ack\n" : "");
        declared = true;
        continue;
      }
      nvapp << line << "\n";
    }
  }
  app.nvapp = nvapp.str();
  app.files.emplace_back("rudp.netil", std::move(netil));
  // A pipeline: the reassembler is its first ME stage.
  if (!app.stages.empty())
    app.stages.insert(app.stages.begin(), "rudp");
  return true;
}

ReliableOptions reliableOptions(uint32_t payload, uint32_t window,
                                double timeoutMicros, double clockMHz) {
  ReliableOptions r;
  r.enabled = true;
  r.payload = payload;
  r.window = window;
  r.timeoutCycles = uint64_t(timeoutMicros * clockMHz);
  r.idleCycles = std::max<uint64_t>(r.timeoutCycles / 20, 1);
  return r;
}

ReliableSender::ReliableSender(
    const std::vector<std::vector<uint8_t>> &messages,
    const ReliableOptions &options, double clockMHz, double lineRateGbps)
    : messages(messages), options(options), clockMHz(clockMHz),
      gbps(lineRateGbps), random(options.seed) {
  uint64_t ordinal = 0;
  for (const std::vector<uint8_t> &m : messages) {
    firstFragment.push_back(ordinal);
    counts.push_back(fragmentCount(m.size(), options.payload));
    ordinal += counts.back();
    stats.messageBytes += m.size();
  }
  stats.messages = messages.size();
  toDrop = options.dropFirst;
}

bool ReliableSender::chance(unsigned percent) {
  if (!percent)
    return false;
  // splitmix64: the same draws for the same seed everywhere.
  uint64_t z = (random += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (z ^ (z >> 31)) % 100 < percent;
}

uint64_t ReliableSender::wireCycles(uint32_t wireBytes) const {
  // As the emulator's receive side times arrivals (preamble, start
  // delimiter and inter-frame gap: 20 bytes).
  double bits = (double(wireBytes) + 20) * 8;
  return std::max<uint64_t>(
      uint64_t(std::ceil(bits * clockMHz / (gbps * 1000.0))), 1);
}

void ReliableSender::goBack(uint32_t to) {
  cursor = to;
  fragment = 0;
  goneBackTo = to;
  goneBackAt = now;
  timerStart = now;
}

void ReliableSender::receive() {
  for (;
       controlsSeen < controls.size() && controls[controlsSeen].arrival <= now;
       ++controlsSeen) {
    const Control &c = controls[controlsSeen];
    uint32_t n = std::min<uint32_t>(c.sequence, uint32_t(messages.size()));
    if (c.kind == rudpAck)
      ++stats.acksReceived;
    else
      ++stats.nacksReceived;
    // Either says every message before n was delivered.
    if (n > base) {
      base = n;
      timerStart = now;
      stats.acknowledged = base;
      if (base == messages.size())
        stats.doneCycle = c.arrival;
      if (cursor < base) {
        cursor = base;
        fragment = 0;
      }
    }
    // A NACK: resend from n (go-back-N), unless a go-back to n was made
    // within a timeout (the NACK is older than it).
    if (c.kind == rudpNack && n >= base && n < fresh &&
        !(goneBackTo == n && now - goneBackAt < options.timeoutCycles)) {
      ++stats.goBacks;
      goBack(n);
    }
  }
}

bool ReliableSender::take(std::vector<uint8_t> &out) {
  if (cursor >= messages.size() || cursor >= uint64_t(base) + options.window)
    return false;
  uint64_t ordinal = firstFragment[cursor] + fragment;
  if (ordinal < sentFragments) {
    ++stats.fragmentsResent;
    stats.messagesResent += fragment == 0;
  }
  sentFragments = std::max(sentFragments, ordinal + 1);
  makeFragment(messages[cursor], cursor, fragment, options.payload, out);
  fresh = std::max(fresh, cursor + 1);
  if (++fragment == counts[cursor]) {
    fragment = 0;
    // The oldest unacknowledged message has gone out whole: its timer
    // starts.
    if (cursor++ == base)
      timerStart = now;
  }
  return true;
}

void ReliableSender::idle(me::InputPacket &packet, uint32_t wireBytes) {
  packet.bytes.assign(rudpHeaderBytes, 0); // fragment count 0
  packet.wireLength = std::max(wireBytes, rudpHeaderBytes);
  now += wireCycles(packet.wireLength);
}

bool ReliableSender::next(me::InputPacket &packet) {
  receive();
  if (base >= messages.size())
    return false;
  if (now >= options.giveUpCycles) {
    stats.gaveUp = true;
    return false;
  }
  if (cursor > base && now - timerStart >= options.timeoutCycles) {
    // No ACK for a timeout: resend from the oldest unacknowledged message
    // (its loss at the tail has no later fragment to cause a NACK).
    ++stats.timeouts;
    goBack(base);
  }
  std::vector<uint8_t> out;
  if (holding) {
    // The delayed fragment follows the one that overtook it.
    out.swap(held);
    holding = false;
  } else if (!take(out)) {
    ++stats.idleGaps;
    double bytes =
        double(options.idleCycles) * gbps * 1000.0 / (8 * clockMHz) - 20;
    idle(packet, bytes > 0 ? uint32_t(bytes) : 0);
    return true;
  } else if (chance(options.reorderPercent) && take(held)) {
    holding = true;
    ++stats.fragmentsReordered;
    out.swap(held);
  }
  ++stats.fragmentsSent;
  uint32_t sequence = uint32_t(out[4]) << 24 | uint32_t(out[5]) << 16 |
                      uint32_t(out[6]) << 8 | out[7];
  uint64_t ordinal = firstFragment[sequence] + (uint32_t(out[8]) << 8 | out[9]);
  auto drop = std::find(toDrop.begin(), toDrop.end(), ordinal);
  bool dropped = drop != toDrop.end();
  if (dropped)
    toDrop.erase(drop);
  if (chance(options.lossPercent) || dropped) {
    // Lost in the network: the wire carried it, nothing arrives.
    ++stats.fragmentsLost;
    idle(packet, uint32_t(out.size()));
    return true;
  }
  packet.bytes.swap(out);
  packet.wireLength = 0;
  now += wireCycles(uint32_t(packet.bytes.size()));
  return true;
}

void ReliableSender::feedback(const uint8_t *bytes, size_t length,
                              uint64_t cycle) {
  if (length < rudpControlBytes)
    return;
  if (chance(options.controlLossPercent)) {
    ++stats.controlLost;
    return;
  }
  auto word = [&](size_t at) {
    return uint32_t(bytes[at]) << 24 | uint32_t(bytes[at + 1]) << 16 |
           uint32_t(bytes[at + 2]) << 8 | bytes[at + 3];
  };
  controls.push_back({cycle + options.returnCycles, word(0), word(4)});
}

} // namespace netvm::ccore
