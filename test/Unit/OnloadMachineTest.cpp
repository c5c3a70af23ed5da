//===- OnloadMachineTest.cpp - Pausing and resuming the emulator ---------===//
//
// What a socket session (docs/onload.md, "Socket API") needs of the
// emulator: a run paused from host code and resumed keeps its time line
// exactly (the same packets leave at the same cycles as in one run), and a
// live input that is empty for now is read again when the run resumes.
//
//===----------------------------------------------------------------------===//

#include "netvm/Target/ME/Assembler.h"
#include "netvm/emu/Emulator.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <deque>

using namespace netvm::me;

namespace {

/// One context receives and sends every packet back out of its port.
Image forwarder() {
  Image image;
  AssemblerOptions options;
  std::vector<std::string> errors;
  EXPECT_TRUE(assemble(R"(
.me 0
.ctx_enable 1
loop:
    msf[rx, $0, 0, 0, 3], ctx_swap[s1]
    br_bset[$2, 0, end]
    alu[$0, --, b, $0]
    alu[$1, --, b, 0]
    alu[$2, --, b, 0]
    msf[tx, $0, 0, 0, 3], ctx_swap[s2]
    br[loop]
end:
    ctx_arb[kill]
)",
                       "forward.s", options, image, errors))
      << (errors.empty() ? "" : errors[0]);
  return image;
}

std::vector<uint8_t> packet(unsigned k) {
  return std::vector<uint8_t>(60 + k * 7 % 900, uint8_t(k));
}

/// Packets handed out in order; live: empty for now, not over.
struct Wire : PacketInput {
  std::deque<std::vector<uint8_t>> packets;
  bool isLive = false;
  bool next(InputPacket &p) override {
    if (packets.empty())
      return false;
    p.bytes = std::move(packets.front());
    packets.pop_front();
    return true;
  }
  bool live() const override { return isLive; }
};

struct Sent : PacketOutput {
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> frames;
  void transmit(const Transmission &t) override {
    frames.emplace_back(t.cycle,
                        std::vector<uint8_t>(t.bytes, t.bytes + t.length));
  }
};

/// Host code that looks every 97 cycles, pauses the machine every
/// `pauseEvery` looks (0: never), and detaches after `looks`.
struct Pauser {
  Emulator *emulator = nullptr;
  unsigned pauseEvery = 0, looks = 0, seen = 0, pauses = 0;
  static uint64_t call(netvm_emu_host *, void *user) {
    Pauser &p = *static_cast<Pauser *>(user);
    if (++p.seen >= p.looks)
      return 0;
    if (p.pauseEvery && p.seen % p.pauseEvery == 0) {
      p.emulator->pause();
      ++p.pauses;
    }
    return 97;
  }
};

} // namespace

TEST(OnloadMachine, PausingKeepsTheTimeLine) {
  Image image = forwarder();
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> reference;
  uint64_t referenceCycles = 0;
  for (unsigned every : {0u, 1u, 7u, 50u}) {
    SCOPED_TRACE(every);
    MachineConfig config;
    Emulator emulator(config);
    std::string error;
    ASSERT_TRUE(emulator.load(image, error)) << error;
    Wire wire;
    for (unsigned k = 0; k < 200; ++k)
      wire.packets.push_back(packet(k));
    Sent sent;
    emulator.setInput(&wire);
    emulator.setOutput(&sent);
    Pauser pauser;
    pauser.emulator = &emulator;
    pauser.pauseEvery = every;
    pauser.looks = 2000;
    emulator.attachHost(&Pauser::call, &pauser, 0);
    unsigned runs = 0;
    uint64_t last = 0;
    do {
      emulator.run();
      ++runs;
      if (emulator.stats().stopReason == "paused") {
        EXPECT_GT(emulator.cycle(), last); // the clock only moves on
        last = emulator.cycle();
        EXPECT_EQ(emulator.stats().cycles, last);
      }
    } while (emulator.stats().stopReason == "paused" && runs < 10000);
    EXPECT_EQ(runs, pauser.pauses + 1);
    ASSERT_TRUE(emulator.stats().faults.empty());
    ASSERT_EQ(sent.frames.size(), 200u);
    if (!every) {
      reference = sent.frames;
      referenceCycles = emulator.stats().cycles;
      EXPECT_EQ(runs, 1u);
      continue;
    }
    EXPECT_GT(runs, 1u);
    // The same packets left at the same cycles, and the run ended alike.
    EXPECT_EQ(sent.frames, reference);
    EXPECT_EQ(emulator.stats().cycles, referenceCycles);
    EXPECT_EQ(emulator.stats().stopReason.rfind("quiescent", 0), 0u);
  }
}

TEST(OnloadMachine, ALiveInputIsReadAgainWhenTheRunResumes) {
  MachineConfig config;
  Emulator emulator(config);
  std::string error;
  ASSERT_TRUE(emulator.load(forwarder(), error)) << error;
  Wire wire;
  wire.isLive = true;
  Sent sent;
  emulator.setInput(&wire);
  emulator.setOutput(&sent);
  Pauser pauser;
  pauser.emulator = &emulator;
  pauser.pauseEvery = 100; // every 9,700 cycles
  pauser.looks = 1000000;
  emulator.attachHost(&Pauser::call, &pauser, 0);
  // Nothing on the wire: the contexts wait, the machine pauses.
  emulator.run();
  EXPECT_EQ(emulator.stats().stopReason, "paused");
  EXPECT_TRUE(sent.frames.empty());
  EXPECT_EQ(emulator.stats().packetsOffered, 0u);
  unsigned k = 0;
  for (unsigned round = 1; round <= 3; ++round) {
    uint64_t resumed = emulator.cycle();
    for (unsigned i = 0; i < round * 2; ++i)
      wire.packets.push_back(packet(k++));
    emulator.run();
    ASSERT_EQ(emulator.stats().stopReason, "paused");
    // Every packet fed so far has left (sorted: any order would do),
    // after the run resumed.
    ASSERT_EQ(sent.frames.size(), k);
    std::vector<std::vector<uint8_t>> got, want;
    for (unsigned i = k - round * 2; i < k; ++i) {
      got.push_back(sent.frames[i].second);
      want.push_back(packet(i));
      EXPECT_GT(sent.frames[i].first, resumed);
    }
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want);
    EXPECT_EQ(emulator.stats().packetsOffered, k);
  }
  // The wire ends: the contexts see the end of the input and finish.
  wire.isLive = false;
  pauser.pauseEvery = 0;
  pauser.looks = pauser.seen + 2;
  emulator.run();
  EXPECT_EQ(emulator.stats().stopReason, "quiescent: every context finished");
  EXPECT_EQ(sent.frames.size(), k);
  EXPECT_TRUE(emulator.stats().faults.empty());
}
