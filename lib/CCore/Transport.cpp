//===- Transport.cpp - Reliable UDP reassembly as a handler ---------------===//
//
// The reassembler NetPE of netvm/CCore/Transport.h. Everything about the
// format is a constant of its code (the fragment count, each fragment's
// length and place), so it needs no loop and no computed offset: one
// branch per fragment index, which the ME back end takes as it is.
//
//===----------------------------------------------------------------------===//

#include "netvm/CCore/Transport.h"

#include <sstream>

namespace netvm::ccore {

namespace {
/// Where the message is assembled in data memory.
constexpr uint32_t bufferAddress = 32;
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
  return c;
}

bool emitReassembler(const Format &format, uint32_t payload,
                     const std::string &name, std::string &netil,
                     std::string &error) {
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
  auto bump = [&](uint32_t a, const char *delta) {
    os << "  push " << a << "\n  umload.32\n"
       << delta << "  push " << a << "\n  mstore.32\n";
  };
  auto load = [&](uint32_t a) { os << "  push " << a << "\n  umload.32\n"; };
  // Copies `length` bytes word by word at constant offsets (the ME back
  // end copies a netvm.copy byte by byte, a DRAM read-modify-write each):
  // packet -> data memory, or back. Only for a few whole-word fragments:
  // unrolled, the words take about 20 ME instructions each, and the
  // control store holds 4096.
  bool wordCopies = payload % 4 == 0 && count <= 8;
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
     << "segment .ports\n  push_input in\n  push_output out\nends\n\n"
     << "segment .metadata\n  .netpe_name " << name << "\n  .datamem_size "
     << bufferAddress + size << "\nends\n\n"
     << "segment .push\n  pop\n"
     << "  pbl                 ; shorter than a header: reject\n  push "
     << rudpHeaderBytes << "\n  jcmp.l reject\n"
     << "  push 10             ; the fragment count\n  upload.16\n  push "
     << count << "\n  jcmp.neq reject\n"
     << "  push 14             ; the message length\n  upload.16\n  push "
     << size << "\n  jcmp.neq reject\n"
     << "  push 4              ; the sequence number, kept at 20\n"
     << "  spload.32\n  push 20\n  mstore.32\n";
  load(20);
  load(RudpCounters::next);
  os << "  jcmp.l reject       ; an earlier message's: late\n";
  load(20);
  load(RudpCounters::next);
  os << "  jcmp.eq current\n"
     << "; a later message: the ones before it are lost\n";
  bump(RudpCounters::lost, "  push 20\n  umload.32\n  add\n  push 0\n"
                           "  umload.32\n  sub\n");
  load(20);
  os << "  push " << RudpCounters::next << "\n  mstore.32\n"
     << "  push 0\n  push " << RudpCounters::mask << "\n  mstore.32\n"
     << "current:\n  push 8              ; the fragment's index\n"
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
  os << "check:\n";
  load(RudpCounters::mask);
  os << "  push " << full << "\n  jcmp.neq keep\n"
     << "  push " << size << "\n  exbuf.create\n  push " << bufferAddress
     << "\n  push 0\n  push " << size << "\n  dpcopy\n";
  bump(RudpCounters::delivered, "  push 1\n  add\n");
  bump(RudpCounters::next, "  push 1\n  add\n");
  os << "  push 0\n  push " << RudpCounters::mask << "\n  mstore.32\n"
     << "  pkt.send out\n  ret\n"
     << "keep:                 ; the fragment is in the buffer\n  ret\n"
     << "reject:\n";
  bump(RudpCounters::rejected, "  push 1\n  add\n");
  os << "  ret\nends\n";
  netil = os.str();
  return true;
}

bool addReassembler(HandlerApp &app, const Format &format, uint32_t payload,
                    std::string &error) {
  std::string netil;
  if (!emitReassembler(format, payload, "rudp", netil, error))
    return false;
  std::ostringstream nvapp;
  if (app.nvapp.empty()) {
    // One handler: an application of it behind the reassembler.
    const std::string &pe = app.name;
    nvapp << "# C-CORE handler behind reliable UDP\napplication " << app.name
          << "\nsource in\nsink out\npe " << pe << " = \""
          << app.files.front().first << "\"\npe rudp = \"rudp.netil\"\n\n"
          << "in -> rudp.in\nrudp.out -> " << pe << ".in\n"
          << pe << ".out -> out\n";
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
      if (!declared && line.empty() &&
          nvapp.str().find("\npe ") != std::string::npos) {
        nvapp << "pe rudp = \"rudp.netil\"\n\nin -> rudp.in\n";
        declared = true;
        continue;
      }
      nvapp << line << "\n";
    }
  }
  app.nvapp = nvapp.str();
  app.files.emplace_back("rudp.netil", std::move(netil));
  return true;
}

} // namespace netvm::ccore
