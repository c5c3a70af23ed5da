//===- MEIsaTest.cpp - Microengine encoding, assembly and images ---------===//
//
// Properties of the ME toolchain that hold for every word, not just the
// ones the lit tests spell out: decoding is total (never crashes) and
// canonical (a word that decodes encodes back to itself), the printed form
// assembles to the same word, and the image reader survives any damage.
//
//===----------------------------------------------------------------------===//

#include "netvm/Target/ME/Assembler.h"
#include "netvm/Target/ME/Disassembler.h"
#include "netvm/emu/Emulator.h"
#include "netvm/emu/Isa.h"

#include "gtest/gtest.h"

#include <cstdio>
#include <map>
#include <random>

using namespace netvm::me;

namespace {
/// Random words with a defined opcode and random fields: most do not
/// decode, enough do.
class WordSource {
public:
  explicit WordSource(uint64_t seed) : random(seed) {
    size_t count;
    const InstrInfo *rows = instrTable(count);
    for (size_t i = 0; i < count; ++i)
      opcodes.push_back(uint8_t(rows[i].op));
  }
  uint64_t next() {
    uint64_t word = (uint64_t(opcodes[random() % opcodes.size()]) << 56) |
                    (uint64_t(operand()) << 46) | (uint64_t(operand()) << 36) |
                    (uint64_t(operand()) << 26) | (uint64_t(small(10)) << 16) |
                    small(16);
    if (random() % 8 == 0)
      word ^= uint64_t(1) << (random() % 56); // now and then, any bit
    return word;
  }

private:
  /// A value of up to `bits` bits, small ones more likely.
  uint64_t small(unsigned bits) {
    return random() & ((uint64_t(1) << (random() % (bits + 1))) - 1);
  }
  /// An operand specifier, usually a valid one, often "none".
  uint16_t operand() {
    unsigned cls = random() % 8;
    if (cls == 7 || random() % 3 == 0)
      return Operand::noneSpec;
    unsigned index = cls <= 3   ? random() % 32
                     : cls == 4 ? random() % 128
                     : cls == 6 ? random() % 8
                                : 0;
    if (cls == 5) {
      unsigned mode = random() % 3;
      index = (random() % 2) << 6 | mode << 4 | (mode ? 0 : random() % 16);
    }
    return uint16_t(cls << 7 | index);
  }

  std::mt19937_64 random;
  std::vector<uint8_t> opcodes;
};

Image assembleOrFail(const std::string &source) {
  Image image;
  std::vector<std::string> errors;
  AssemblerOptions options;
  EXPECT_TRUE(assemble(source, "test.s", options, image, errors))
      << (errors.empty() ? "" : errors[0]);
  return image;
}
} // namespace

TEST(MEIsa, EveryRowEncodesAndDecodes) {
  size_t count;
  const InstrInfo *rows = instrTable(count);
  ASSERT_GT(count, 80u);
  for (size_t i = 0; i < count; ++i) {
    EXPECT_EQ(lookupOpcode(uint8_t(rows[i].op)), &rows[i]);
    EXPECT_NE(uint8_t(rows[i].op), 0) << rows[i].mnemonic;
  }
  EXPECT_EQ(lookupOpcode(0), nullptr);
  Instr in;
  std::string why;
  EXPECT_FALSE(decode(0, in, why));
  EXPECT_EQ(why, "undefined opcode 0");
}

TEST(MEIsa, DecodingIsCanonicalAndPrintingAssemblesBack) {
  WordSource words(1);
  unsigned decoded = 0, reassembled = 0;
  std::map<std::string, unsigned> refusals;
  for (int i = 0; i < 1000000; ++i) {
    uint64_t word = words.next();
    Instr in;
    std::string why;
    if (!decode(word, in, why)) {
      EXPECT_FALSE(why.empty());
      continue;
    }
    ++decoded;
    ASSERT_EQ(encode(in), word) << printInstr(in);
    // Branch targets need a program that long; leave them out.
    Format format = in.info().format;
    if (format >= Format::Branch && format <= Format::Jump)
      continue;
    std::string text = printInstr(in);
    Image image;
    std::vector<std::string> errors;
    AssemblerOptions options;
    if (!assemble(".me 0\n.ctx_mode 4\n    " + text + "\n", "t.s", options,
                  image, errors)) {
      // The assembler may be stricter than the decoder, for reasons that
      // are all about what programs should write.
      std::string message = errors[0].substr(errors[0].find("error: ") + 7);
      ++refusals[message.substr(0, message.find_first_of("'0123456789"))];
      continue;
    }
    ++reassembled;
    ASSERT_EQ(image.code.size(), 1u);
    ASSERT_EQ(image.code[0].words.size(), 1u);
    EXPECT_EQ(image.code[0].words[0], word) << text;
  }
  // The sample must exercise the property, not skip it.
  EXPECT_GT(decoded, 10000u);
  EXPECT_GT(reassembled, 3000u);
  for (const auto &[message, count] : refusals)
    std::printf("refused %u: %s\n", count, message.c_str());
}

TEST(MEIsa, ImagesSurviveDamage) {
  Image image = assembleOrFail(".equ K, 3\n.ring 1, 0, 128\n"
                               ".data sram, 16\nx: .word 1, 2\n"
                               ".me 0-1\nstart: alu[a0, --, b, K]\n"
                               "    br[start]\n");
  std::vector<uint8_t> bytes = writeImage(image);
  Image back;
  std::string error;
  ASSERT_TRUE(readImage(bytes.data(), bytes.size(), back, error)) << error;
  EXPECT_EQ(writeImage(back), bytes);
  EXPECT_EQ(disassemble(back), disassemble(image));
  // Every truncation and every single-byte change is refused cleanly.
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(readImage(bytes.data(), n, back, error)) << n;
  for (size_t at = 0; at < bytes.size(); ++at) {
    std::vector<uint8_t> damaged = bytes;
    damaged[at] ^= 0x5a;
    EXPECT_FALSE(readImage(damaged.data(), damaged.size(), back, error)) << at;
  }
}

TEST(MEEmulator, RandomProgramsNeverCrash) {
  // Words that decode, in any order, with any operands: runs end with a
  // fault or at the cycle limit, never with a crash or a hang.
  WordSource words(7);
  std::mt19937_64 random(11);
  for (int program = 0; program < 300; ++program) {
    Image image;
    CodeBlock block;
    block.meMask = 0x3;
    block.ctxMode = (random() & 1) ? 8 : 4;
    block.ctxEnable = block.ctxMode == 8 ? 0xff : 0x0f;
    size_t length = 1 + random() % 40;
    while (block.words.size() < length) {
      uint64_t word = words.next();
      Instr in;
      std::string why;
      if (decode(word, in, why) || (random() % 8) == 0)
        block.words.push_back(word);
    }
    image.code.push_back(block);
    image.rings.push_back(RingConfig{0, 0, 128});
    MachineConfig config;
    config.maxCycles = 20000;
    Emulator emulator(config);
    std::string error;
    ASSERT_TRUE(emulator.load(image, error)) << error;
    emulator.run();
    const Stats &stats = emulator.stats();
    EXPECT_LE(stats.cycles, config.maxCycles + 1000);
    for (const Fault &f : stats.faults)
      EXPECT_FALSE(f.reason.empty());
  }
}

namespace {
/// Host code on the C API of netvm/emu/host.h: doubles every message of
/// ring 4 onto ring 5, until the marker.
struct Doubler {
  unsigned calls = 0, moved = 0;
  bool triedBadRing = false;

  static uint64_t run(netvm_emu_host *host, void *user) {
    auto &d = *static_cast<Doubler *>(user);
    ++d.calls;
    if (!d.triedBadRing) {
      uint32_t word;
      EXPECT_EQ(netvm_emu_host_ring_get(host, 7, &word, 1), -1);
      d.triedBadRing = true;
    }
    uint64_t before = netvm_emu_host_now(host);
    int n = netvm_emu_host_ring_count(host, 4);
    EXPECT_EQ(netvm_emu_host_now(host), before + 100); // a crossing
    for (; n > 0; --n) {
      uint32_t word;
      EXPECT_EQ(netvm_emu_host_ring_get(host, 4, &word, 1), 0);
      uint64_t at = netvm_emu_host_now(host);
      uint32_t out = word == 0xffffffffu ? word : 2 * word;
      EXPECT_EQ(netvm_emu_host_ring_put(host, 5, &out, 1), 0);
      EXPECT_EQ(netvm_emu_host_now(host), at + 105); // + 1 word
      ++d.moved;
      if (word == 0xffffffffu)
        return 0;
    }
    return 50;
  }
};
} // namespace

TEST(MEEmulator, HostMovesMessagesBetweenMEs) {
  Image image = assembleOrFail(R"(
.ring 4, 0x400, 128
.ring 5, 0x800, 128
.me 0
.ctx_enable 1
    immed[a0, 1]
loop:
    alu[$0, --, b, a0]
    scratch[put, $0, 4, 0, 1], ctx_swap[s1]
    alu[a0, a0, +, 1]
    alu[--, a0, -, 21]
    bne[loop]
    immed[$0, 0xffffffff]
    scratch[put, $0, 4, 0, 1], ctx_swap[s1]
    ctx_arb[kill]
.me 1
.ctx_enable 1
    immed[a0, 0]
get:
    scratch[get, $0, 5, 0, 1], ctx_swap[s1]
    alu[b0, --, b, $0]
    beq[get]
    alu[--, b0, +, 1]
    beq[end]
    alu[a0, a0, +, b0]
    br[get]
end:
    alu[$0, --, b, a0]
    scratch[write, $0, 0x100, 0, 1], ctx_swap[s1]
    ctx_arb[kill]
)");
  MachineConfig config;
  config.hostCrossingCycles = 100;
  config.hostWordCycles = 5;
  config.maxCycles = 10000000;
  Emulator emulator(config);
  std::string error;
  ASSERT_TRUE(emulator.load(image, error)) << error;
  Doubler doubler;
  emulator.attachHost(Doubler::run, &doubler);
  emulator.run();
  const Stats &stats = emulator.stats();
  EXPECT_EQ(stats.stopReason, "quiescent: every context finished");
  EXPECT_EQ(doubler.moved, 21u);
  std::vector<uint8_t> sum;
  ASSERT_TRUE(emulator.readMemory(Memory::Scratch, 0x100, 4, sum));
  EXPECT_EQ(uint32_t(sum[0]) << 24 | sum[1] << 16 | sum[2] << 8 | sum[3],
            2u * 210u);
  EXPECT_EQ(stats.host.calls, doubler.calls);
  EXPECT_EQ(stats.host.gets, 21u);
  EXPECT_EQ(stats.host.puts, 21u);
  EXPECT_EQ(stats.host.failedGets, 1u);
  EXPECT_EQ(stats.host.words, 42u);
  // One count a call, a get and a put a message, the failed get.
  EXPECT_EQ(stats.host.crossings, doubler.calls + 42u + 1u);
  EXPECT_EQ(stats.host.busyCycles, stats.host.crossings * 100 + 42 * 5);
}

namespace {
/// Host code that reads a table from SRAM, writes it doubled into DRAM and
/// raises a flag in scratch for an ME (netvm_emu_host_read and _write).
struct TableWriter {
  uint64_t firstCall = 0, wroteAt = 0;
  uint32_t seenFlag = ~0u;
  bool done = false;

  static uint64_t run(netvm_emu_host *host, void *user) {
    auto &w = *static_cast<TableWriter *>(user);
    if (w.done) {
      // Called again after the flag landed: the ME saw it and answered.
      uint8_t answer[4];
      EXPECT_EQ(netvm_emu_host_read(host, NETVM_EMU_SCRATCH, 0x104, answer, 4),
                0);
      w.seenFlag = uint32_t(answer[0]) << 24 | answer[1] << 16 |
                   answer[2] << 8 | answer[3];
      return 0;
    }
    w.firstCall = netvm_emu_host_now(host);
    uint8_t table[16];
    EXPECT_EQ(netvm_emu_host_read(host, NETVM_EMU_SRAM, 0x400010, table, 16),
              0);
    EXPECT_EQ(netvm_emu_host_now(host), w.firstCall + 100 + 4 * 5);
    for (uint8_t &b : table)
      b = uint8_t(2 * b);
    EXPECT_EQ(netvm_emu_host_write(host, NETVM_EMU_DRAM, 0x2000, table, 16), 0);
    // The host sees its own write at once (program order) ...
    uint8_t back[16] = {};
    EXPECT_EQ(netvm_emu_host_read(host, NETVM_EMU_DRAM, 0x1ffc, back, 8), 0);
    EXPECT_EQ(back[4], table[0]);
    EXPECT_EQ(back[7], table[3]);
    // ... refused accesses pay a crossing and change nothing.
    uint64_t before = netvm_emu_host_now(host);
    EXPECT_EQ(
        netvm_emu_host_write(host, NETVM_EMU_SCRATCH, 16 * 1024 - 2, table, 4),
        -1);
    EXPECT_EQ(netvm_emu_host_read(host, 7, 0, back, 4), -1);
    EXPECT_EQ(netvm_emu_host_now(host), before + 200);
    uint8_t flag[4] = {0, 0, 0, 1};
    EXPECT_EQ(netvm_emu_host_write(host, NETVM_EMU_SCRATCH, 0x100, flag, 4), 0);
    w.wroteAt = netvm_emu_host_now(host); // the flag lands here
    w.done = true;
    return 2000;
  }
};
} // namespace

TEST(MEEmulator, HostReadsAndWritesMemory) {
  // ME 0 polls the flag, then sums the DRAM table and answers in scratch,
  // with the cycle it first saw the flag.
  Image image = assembleOrFail(R"(
.data sram, 0x400010
.word 1, 2, 3, 4
.me 0
.ctx_enable 1
poll:
    scratch[read, $0, 0x100, 0, 1], ctx_swap[s1]
    alu[--, --, b, $0]
    beq[poll]
    local_csr_rd[a1, timestamp_low]
    dram[read, $$0, 0x2000, 0, 2], ctx_swap[s1]
    alu[a0, $$0, +, $$1]
    alu[a0, a0, +, $$2]
    alu[$0, a0, +, $$3]
    scratch[write, $0, 0x104, 0, 1], ctx_swap[s1]
    alu[$0, --, b, a1]
    scratch[write, $0, 0x108, 0, 1], ctx_swap[s1]
    ctx_arb[kill]
)");
  MachineConfig config;
  config.hostCrossingCycles = 100;
  config.hostWordCycles = 5;
  config.maxCycles = 1000000;
  Emulator emulator(config);
  std::string error;
  ASSERT_TRUE(emulator.load(image, error)) << error;
  TableWriter writer;
  emulator.attachHost(TableWriter::run, &writer, 50);
  emulator.run();
  const Stats &stats = emulator.stats();
  EXPECT_EQ(writer.firstCall, 50u);
  EXPECT_EQ(writer.seenFlag, 2u * (1 + 2 + 3 + 4));
  std::vector<uint8_t> seenAt;
  ASSERT_TRUE(emulator.readMemory(Memory::Scratch, 0x108, 4, seenAt));
  uint32_t cycle =
      uint32_t(seenAt[0]) << 24 | seenAt[1] << 16 | seenAt[2] << 8 | seenAt[3];
  // Not before the write landed, and within a poll (a scratch read) after.
  EXPECT_GE(cycle, writer.wroteAt);
  EXPECT_LT(cycle, writer.wroteAt + 80);
  EXPECT_EQ(stats.host.memoryReads, 3u);
  EXPECT_EQ(stats.host.memoryWrites, 2u);
  EXPECT_EQ(stats.host.failedMemory, 2u);
  EXPECT_EQ(stats.host.memoryBytes, 16u + 8u + 16u + 4u + 4u);
}

namespace {
/// Packets from a list, for one receive port.
struct ListInput : PacketInput {
  std::vector<std::vector<uint8_t>> packets;
  size_t at = 0;
  bool next(InputPacket &packet) override {
    if (at == packets.size())
      return false;
    packet.bytes = packets[at++];
    packet.wireLength = 0;
    return true;
  }
};

struct PortOutput : PacketOutput {
  std::vector<std::pair<unsigned, std::vector<uint8_t>>> sent;
  void transmit(const uint8_t *bytes, size_t length, uint32_t, unsigned port,
                uint64_t) override {
    sent.push_back({port, std::vector<uint8_t>(bytes, bytes + length)});
  }
};
} // namespace

TEST(MEEmulator, PortsReceiveInTurnAndTransmitWherePacketsSay) {
  // One context receives and sends every packet out of port
  // (receive port + 1) mod 3.
  Image image = assembleOrFail(R"(
.me 0
.ctx_enable 1
loop:
    msf[rx, $0, 0, 0, 3], ctx_swap[s1]
    br_bset[$2, 0, end]
    alu_shf[a1, 0xff, and, $2, >>8]      ; the receive port
    alu[a1, a1, +, 1]
    alu[--, a1, -, 3]
    bne[keep]
    immed[a1, 0]
keep:
    alu[$0, --, b, $0]
    alu[$1, --, b, 0]
    alu[$2, --, b, a1]
    msf[tx, $0, 0, 0, 3], ctx_swap[s2]
    br[loop]
end:
    ctx_arb[kill]
)");
  auto packetOf = [](unsigned port, unsigned k) {
    return std::vector<uint8_t>(20 + k, uint8_t(port << 4 | k));
  };
  ListInput in0, in2;
  for (unsigned k = 0; k < 3; ++k)
    in0.packets.push_back(packetOf(0, k));
  in2.packets.push_back(packetOf(2, 0));
  MachineConfig config;
  Emulator emulator(config);
  std::string error;
  ASSERT_TRUE(emulator.load(image, error)) << error;
  emulator.setInput(0, &in0);
  emulator.setInput(2, &in2); // port 1 has no input
  PortOutput out;
  emulator.setOutput(&out);
  emulator.run();
  const Stats &stats = emulator.stats();
  ASSERT_TRUE(stats.faults.empty()) << stats.faults[0].reason;
  // Ports take turns: 0, 2, 0, 0.
  ASSERT_EQ(out.sent.size(), 4u);
  EXPECT_EQ(out.sent[0], std::make_pair(1u, packetOf(0, 0)));
  EXPECT_EQ(out.sent[1], std::make_pair(0u, packetOf(2, 0)));
  EXPECT_EQ(out.sent[2], std::make_pair(1u, packetOf(0, 1)));
  EXPECT_EQ(out.sent[3], std::make_pair(1u, packetOf(0, 2)));
  ASSERT_EQ(stats.ports.size(), 3u);
  EXPECT_EQ(stats.ports[0].received, 3u);
  EXPECT_EQ(stats.ports[0].sent, 1u);
  EXPECT_EQ(stats.ports[1].received, 0u);
  EXPECT_EQ(stats.ports[1].sent, 3u);
  EXPECT_EQ(stats.ports[1].bytesSent, 20u + 21u + 22u);
  EXPECT_EQ(stats.ports[2].offered, 1u);
  EXPECT_EQ(stats.ports[2].received, 1u);
  EXPECT_EQ(stats.packetsReceived, 4u);
}

TEST(MEEmulator, ReceiveDescriptorCarriesTheArrivalTime) {
  // Words 4 and 5 of the descriptor: the input's seconds and microseconds.
  // The program sends them as the packet's first 8 bytes.
  Image image = assembleOrFail(R"(
.me 0
.ctx_enable 1
loop:
    msf[rx, $0, 0, 0, 6], ctx_swap[s1]
    br_bset[$2, 0, end]
    alu[$$0, --, b, $4]
    alu[$$1, --, b, $5]
    dram[write, $$0, 0, 0, 1], ctx_swap[s2]
    immed[$0, 8]
    immed[$1, 0]
    immed[$2, 0]
    msf[tx, $0, 0, 0, 3], ctx_swap[s2]
    br[loop]
end:
    ctx_arb[kill]
)");
  struct TimedInput : PacketInput {
    unsigned at = 0;
    bool next(InputPacket &packet) override {
      if (at == 2)
        return false;
      packet.bytes.assign(60, 0);
      packet.seconds = 1700000000u + at;
      packet.microseconds = 999999u - at;
      ++at;
      return true;
    }
  } in;
  MachineConfig config;
  Emulator emulator(config);
  std::string error;
  ASSERT_TRUE(emulator.load(image, error)) << error;
  emulator.setInput(0, &in);
  PortOutput out;
  emulator.setOutput(&out);
  emulator.run();
  ASSERT_TRUE(emulator.stats().faults.empty());
  ASSERT_EQ(out.sent.size(), 2u);
  for (unsigned k = 0; k < 2; ++k) {
    uint32_t s = 1700000000u + k, us = 999999u - k;
    std::vector<uint8_t> want = {
        uint8_t(s >> 24),  uint8_t(s >> 16),  uint8_t(s >> 8),  uint8_t(s),
        uint8_t(us >> 24), uint8_t(us >> 16), uint8_t(us >> 8), uint8_t(us)};
    EXPECT_EQ(out.sent[k].second, want) << "packet " << k;
  }
}

TEST(MEEmulator, TransmitToAPortBeyondTheFabricFaults) {
  Image image = assembleOrFail(R"(
.me 0
.ctx_enable 1
    immed[$0, 60]
    immed[$1, 0]
    immed[$2, 16]
    msf[tx, $0, 0, 0, 3], ctx_swap[s2]
    ctx_arb[kill]
)");
  Emulator emulator(MachineConfig{});
  std::string error;
  ASSERT_TRUE(emulator.load(image, error)) << error;
  emulator.run();
  const Stats &stats = emulator.stats();
  ASSERT_EQ(stats.faults.size(), 1u);
  EXPECT_EQ(stats.faults[0].reason, "transmit port 16 is not 0-15");
  EXPECT_EQ(stats.packetsSent, 0u);
}

namespace {
/// Records what transmit hands over, and what memory holds meanwhile.
struct TagOutput : PacketOutput {
  struct Seen {
    Transmission t;
    std::vector<uint8_t> bytes, dram, counters;
    bool wrote = true;
    std::string writeError;
  };
  Emulator *emulator = nullptr;
  std::vector<Seen> sent;
  void transmit(const Transmission &t) override {
    Seen s;
    s.t = t;
    s.bytes.assign(t.bytes, t.bytes + t.length);
    EXPECT_TRUE(emulator->readMemory(Memory::Dram, t.dramAddress,
                                     uint32_t(t.length), s.dram));
    EXPECT_TRUE(emulator->readMemory(Memory::Scratch, 0x10, 8, s.counters));
    uint8_t one[4] = {0, 0, 0, 1};
    s.wrote =
        emulator->writeMemory(Memory::Scratch, 0x20, one, 4, s.writeError);
    sent.push_back(std::move(s));
  }
};

uint32_t wordAt(const std::vector<uint8_t> &bytes, size_t at) {
  return uint32_t(bytes[at]) << 24 | uint32_t(bytes[at + 1]) << 16 |
         uint32_t(bytes[at + 2]) << 8 | bytes[at + 3];
}
} // namespace

TEST(MEEmulator, TransmitHandsOverTagsAndMemory) {
  // Each packet is sent with its packet number as the tag. Scratch 0x10
  // counts the packets, written before the packet leaves; 0x14 is set to
  // 100 + the count once it has left; then the buffer is scribbled over.
  // Last, 8 bytes of the scribbled buffer go out with no tag, on port 1.
  Image image = assembleOrFail(R"(
.me 0
.ctx_enable 1
    immed[a2, 0]
loop:
    msf[rx, $0, 0x1000, 0, 4], ctx_swap[s1]
    br_bset[$2, 0, end]
    alu[$0, --, b, $0]
    alu[$1, --, b, 0]
    alu[$2, --, b, 0]
    alu[$3, --, b, $3]
    msf[tx, $0, 0x1000, 0, 4], sig_done[s2]
    alu[a2, a2, +, 1]
    alu[$4, --, b, a2]
    scratch[write, $4, 0x10, 0, 1], sig_done[s3]
    ctx_arb[s2, s3]
    alu[$5, a2, +, 100]
    scratch[write, $5, 0x14, 0, 1], ctx_swap[s4]
    immed[$$0, 0xdeadbeef]
    immed[$$1, 0]
    dram[write, $$0, 0x1000, 0, 1], ctx_swap[s5]
    br[loop]
end:
    immed[$0, 8]
    immed[$1, 0]
    immed[$2, 1]
    msf[tx, $0, 0x1000, 0, 3], ctx_swap[s2]
    ctx_arb[kill]
)");
  ListInput in;
  for (unsigned k = 0; k < 3; ++k)
    in.packets.push_back(std::vector<uint8_t>(60 + k, uint8_t(0x10 + k)));
  Emulator emulator(MachineConfig{});
  std::string error;
  ASSERT_TRUE(emulator.load(image, error)) << error;
  emulator.setInput(&in);
  TagOutput out;
  out.emulator = &emulator;
  emulator.setOutput(&out);
  emulator.run();
  const Stats &stats = emulator.stats();
  ASSERT_TRUE(stats.faults.empty()) << stats.faults[0].reason;
  ASSERT_EQ(out.sent.size(), 4u);
  for (unsigned k = 0; k < 4; ++k) {
    const TagOutput::Seen &s = out.sent[k];
    SCOPED_TRACE(k);
    EXPECT_EQ(s.t.dramAddress, 0x1000u);
    EXPECT_EQ(s.dram, s.bytes); // readMemory agrees with the bytes
    // The count written before the packet left is there, the one written
    // after it left is not yet.
    EXPECT_EQ(wordAt(s.counters, 0), k < 3 ? k + 1 : 3u);
    EXPECT_EQ(wordAt(s.counters, 4), k == 0 ? 0u : 100 + k);
    if (k > 0)
      EXPECT_GT(s.t.cycle, out.sent[k - 1].t.cycle);
    // No direct writes while running.
    EXPECT_FALSE(s.wrote);
    EXPECT_EQ(s.writeError,
              "the emulator is running: write memory before or between "
              "runs (host code writes with netvm_emu_host_write)");
  }
  for (unsigned k = 0; k < 3; ++k) {
    const TagOutput::Seen &s = out.sent[k];
    EXPECT_TRUE(s.t.hasTag);
    EXPECT_EQ(s.t.tag, k); // the packet number
    EXPECT_EQ(s.t.port, 0u);
    EXPECT_EQ(s.t.length, 60u + k);
    EXPECT_EQ(s.t.wireLength, 60u + k);
    EXPECT_EQ(s.bytes, std::vector<uint8_t>(60 + k, uint8_t(0x10 + k)));
  }
  const TagOutput::Seen &last = out.sent[3];
  EXPECT_FALSE(last.t.hasTag);
  EXPECT_EQ(last.t.tag, 0u);
  EXPECT_EQ(last.t.port, 1u);
  EXPECT_EQ(last.bytes,
            (std::vector<uint8_t>{0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0}));
  std::vector<uint8_t> flag;
  ASSERT_TRUE(emulator.readMemory(Memory::Scratch, 0x20, 4, flag));
  EXPECT_EQ(wordAt(flag, 0), 0u);
  // After the run, writes land at once.
  uint8_t one[4] = {0, 0, 0, 1};
  EXPECT_TRUE(emulator.writeMemory(Memory::Scratch, 0x20, one, 4, error));
  ASSERT_TRUE(emulator.readMemory(Memory::Scratch, 0x20, 4, flag));
  EXPECT_EQ(wordAt(flag, 0), 1u);
}

TEST(MEEmulator, WriteMemoryBeforeTheRun) {
  // ME 0 copies an SRAM word and a DRAM quadword that the image
  // initialises into scratch.
  Image image = assembleOrFail(R"(
.data sram, 0x10
.word 1
.data dram, 0x40
.word 2, 3
.me 0
.ctx_enable 1
    sram[read, $0, 0x10, 0, 1], ctx_swap[s1]
    dram[read, $$0, 0x40, 0, 1], ctx_swap[s2]
    alu[$0, --, b, $0]
    alu[$1, --, b, $$0]
    alu[$2, --, b, $$1]
    scratch[write, $0, 0, 0, 3], ctx_swap[s1]
    ctx_arb[kill]
)");
  Emulator emulator(MachineConfig{});
  std::string error;
  uint8_t word[4] = {0, 0, 0, 42};
  EXPECT_FALSE(emulator.writeMemory(Memory::Sram, 0x10, word, 4, error));
  EXPECT_EQ(error, "no image is loaded (memory is initialised by load())");
  ASSERT_TRUE(emulator.load(image, error)) << error;
  EXPECT_TRUE(emulator.writeMemory(Memory::Sram, 0x10, word, 4, error));
  uint8_t quad[8] = {0, 0, 0, 7, 0, 0, 0, 8};
  EXPECT_TRUE(emulator.writeMemory(Memory::Dram, 0x40, quad, 8, error));
  // Ranges that leave the memory: 16 KB of scratch.
  EXPECT_FALSE(
      emulator.writeMemory(Memory::Scratch, 16 * 1024 - 2, word, 4, error));
  EXPECT_EQ(error, "a write of 4 bytes at scratch address 0x3ffe is outside "
                   "the memory");
  EXPECT_FALSE(emulator.writeMemory(Memory::Dram, 0xffffffffu, word, 4, error));
  EXPECT_TRUE(emulator.writeMemory(Memory::Scratch, 16 * 1024, word, 0, error));
  emulator.run();
  ASSERT_TRUE(emulator.stats().faults.empty());
  std::vector<uint8_t> copied;
  ASSERT_TRUE(emulator.readMemory(Memory::Scratch, 0, 12, copied));
  EXPECT_EQ(wordAt(copied, 0), 42u);
  EXPECT_EQ(wordAt(copied, 4), 7u);
  EXPECT_EQ(wordAt(copied, 8), 8u);
}

namespace {
/// Hands the work of ME 0 (ring 3 to ring 4, unchanged) over to ME 1 with
/// other code (adds 1000) while values flow: refusals first, then the
/// new code preloaded, ME 0 fenced, drained, stopped, ME 1 started.
struct HandOver {
  const CodeBlock *next = nullptr;
  unsigned step = 0;
  uint32_t put = 0;
  std::vector<uint32_t> out;
  netvm_emu_ring_ops oldOps{}, newOps{};
  uint64_t stoppedAt = 0;

  void putValues(netvm_emu_host *host, uint32_t count) {
    for (uint32_t i = 0; i < count; ++i) {
      uint32_t v = ++put;
      EXPECT_EQ(netvm_emu_host_ring_put(host, 3, &v, 1), 0);
    }
  }

  static uint64_t run(netvm_emu_host *host, void *user) {
    auto &h = *static_cast<HandOver *>(user);
    switch (h.step++) {
    case 0: {
      const uint64_t word = 0;
      EXPECT_EQ(netvm_emu_host_me_load(host, 0, &word, 1, 8, 1), -1); // running
      EXPECT_EQ(netvm_emu_host_me_start(host, 0), -1);                // running
      EXPECT_EQ(netvm_emu_host_me_stop(host, 5), -1);                 // no code
      EXPECT_EQ(netvm_emu_host_ring_fence(host, 0, 16, 1), -1);
      netvm_emu_ring_ops ops;
      EXPECT_EQ(netvm_emu_host_me_ring_ops(host, 99, 3, &ops), -1);
      EXPECT_EQ(netvm_emu_host_me_load(host, 1, h.next->words.data(), 1, 6, 1),
                -1); // 6 contexts
      h.putValues(host, 5);
      return 2000;
    }
    case 1:
      EXPECT_EQ(netvm_emu_host_me_load(host, 1, h.next->words.data(),
                                       unsigned(h.next->words.size()), 8, 1),
                0);
      EXPECT_EQ(netvm_emu_host_ring_fence(host, 0, 3, 1), 0);
      h.putValues(host, 5); // they wait in the ring
      return 200;
    case 2: {
      netvm_emu_ring_ops taken, sent;
      netvm_emu_host_me_ring_ops(host, 0, 3, &taken);
      netvm_emu_host_me_ring_ops(host, 0, 4, &sent);
      if (taken.gets != sent.puts) {
        --h.step; // not drained yet
        return 50;
      }
      h.oldOps = taken;
      EXPECT_EQ(netvm_emu_host_me_stop(host, 0), 0);
      h.stoppedAt = netvm_emu_host_now(host);
      EXPECT_EQ(netvm_emu_host_me_start(host, 1), 0);
      h.putValues(host, 2);
      return 3000;
    }
    default: {
      netvm_emu_host_me_ring_ops(host, 1, 3, &h.newOps);
      uint32_t v;
      while (netvm_emu_host_ring_get(host, 4, &v, 1) == 0)
        h.out.push_back(v);
      return 0;
    }
    }
  }
};
} // namespace

TEST(MEEmulator, HostChangesAnMEsCodeWhileRunning) {
  // ME `me` moves values from ring 3 to ring 4, adding `add`.
  auto mover = [](unsigned me, unsigned add) {
    return ".ring 3, 0x0, 128\n.ring 4, 0x200, 128\n.me " + std::to_string(me) +
           R"(
.ctx_enable 1
loop:
    scratch[get, $0, 3, --, 1], ctx_swap[s1]
    alu[a0, --, b, $0]
    beq[loop]
    immed[b0, )" +
           std::to_string(add) +
           R"(]
    alu[$0, a0, +, b0]
    scratch[put, $0, 4, --, 1], ctx_swap[s1]
    br[loop]
)";
  };
  Image image = assembleOrFail(mover(0, 0));
  Image next = assembleOrFail(mover(1, 1000));
  ASSERT_EQ(next.code.size(), 1u);
  MachineConfig config;
  config.maxCycles = 40000; // the MEs poll forever
  Emulator emulator(config);
  std::string error;
  ASSERT_TRUE(emulator.load(image, error)) << error;
  HandOver h;
  h.next = &next.code[0];
  emulator.attachHost(HandOver::run, &h, 100);
  emulator.run();
  EXPECT_TRUE(emulator.stats().faults.empty());
  // Every value once, in order: the first five by the old code, the rest
  // (five waiting through the fence, two later) by the new.
  EXPECT_EQ(h.out, std::vector<uint32_t>({1, 2, 3, 4, 5, 1006, 1007, 1008, 1009,
                                          1010, 1011, 1012}));
  EXPECT_EQ(h.oldOps.gets, 5u);
  EXPECT_GT(h.oldOps.refused, 0u);
  EXPECT_EQ(h.newOps.gets, 7u);
  EXPECT_GE(h.newOps.firstGet, h.stoppedAt);
  EXPECT_GT(h.newOps.firstGet, h.oldOps.lastGet);
}
