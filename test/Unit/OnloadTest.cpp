//===- OnloadTest.cpp - UDP receive over the interface, on the emulator ---===//
//
// The three designs on the emulator: every datagram that should arrive
// does, byte for byte; the others are counted where they were refused;
// above saturation the fabric's drops are counted; the interface's
// features change what they should.
//
//===----------------------------------------------------------------------===//

#include "netvm/onload/Onload.h"
#include "netvm/Target/ME/Assembler.h"

#include <gtest/gtest.h>

using namespace netvm;
using namespace netvm::onload;

static OnloadResult run(OnloadConfig config, const Traffic &traffic) {
  me::AssemblerOptions options;
  options.machine = config.machine;
  me::Image image;
  std::vector<std::string> errors;
  std::string source = meProgram(config);
  EXPECT_TRUE(assemble(source, "<onload>", options, image, errors))
      << (errors.empty() ? "" : errors[0]);
  OnloadResult r;
  std::string error;
  EXPECT_TRUE(runReceive(config, image, traffic, r, error)) << error;
  EXPECT_TRUE(r.faults.empty()) << r.faults[0];
  return r;
}

TEST(Onload, FramesCarryCorrectChecksums) {
  Datagram d;
  d.payload = {0, 0, 0, 1, 0xaa, 0xbb, 0xcc};
  std::vector<uint8_t> f = buildFrame(d);
  ASSERT_EQ(f.size(), 14u + 20 + 8 + 7);
  // The IP header sums to 0xffff.
  uint32_t sum = 0;
  for (int i = 14; i < 34; i += 2)
    sum += f[i] << 8 | f[i + 1];
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  EXPECT_EQ(sum, 0xffffu);
}

TEST(Onload, EveryDesignDeliversEveryGoodDatagramAndCountsTheRest) {
  // Of 120 datagrams to three ports, every 17th has a bad checksum (7),
  // every 23rd is a fragment (5) and every 29th goes to a port nobody
  // bound (4); odd sizes exercise the ME's last partial word.
  Traffic t = makeTraffic(120, 333, 3, 17, 23, 29);
  uint64_t good = 0;
  for (const Datagram &d : t.datagrams)
    good += !d.badChecksum && !d.fragment && d.dstPort != 7;
  for (Design design : {Design::EmuNic, Design::SoftNic, Design::Onloader}) {
    OnloadConfig c;
    c.design = design;
    OnloadResult r = run(c, t);
    SCOPED_TRACE(designName(design));
    EXPECT_EQ(r.delivered, good);
    EXPECT_EQ(r.deliveredBytes, good * 333);
    EXPECT_EQ(r.corrupted, 0u);
    EXPECT_EQ(r.duplicates, 0u);
    EXPECT_EQ(r.missing, 0u);
    EXPECT_EQ(r.delivered + r.drops.total(), r.offered);
    uint64_t checksum = r.drops.meChecksum + r.drops.hostChecksum;
    uint64_t fragments = r.drops.meFragment + r.drops.hostFragment;
    EXPECT_EQ(checksum + fragments + r.drops.meNoSocket + r.drops.hostNoSocket,
              120 - good);
    if (design == Design::EmuNic)
      EXPECT_EQ(r.drops.meChecksum + r.drops.meFragment, 0u);
    if (design == Design::Onloader)
      EXPECT_EQ(r.drops.hostChecksum + r.drops.hostFragment +
                    r.drops.hostNoSocket,
                0u);
    if (design == Design::SoftNic) {
      EXPECT_GT(r.drops.meChecksum, 0u);   // the MEs verify
      EXPECT_GT(r.drops.hostFragment, 0u); // fragments go to the stack
    }
  }
}

TEST(Onload, HostWorkShrinksFromEmuNicToOnloader) {
  Traffic t = makeTraffic(200, 1024, 1);
  OnloadConfig c;
  c.design = Design::EmuNic;
  OnloadResult emu = run(c, t);
  c.design = Design::SoftNic;
  OnloadResult soft = run(c, t);
  c.design = Design::Onloader;
  OnloadResult onl = run(c, t);
  EXPECT_EQ(emu.host.interrupts, 200u); // one per packet
  EXPECT_LT(soft.host.interrupts, 200u);
  EXPECT_EQ(soft.host.checksummedBytes, 0u);
  EXPECT_EQ(onl.host.copiedBytes, 0u);
  EXPECT_EQ(onl.host.protocolRuns, 0u);
  EXPECT_GT(emu.hostCyclesPerDatagram(), soft.hostCyclesPerDatagram());
  EXPECT_GT(soft.hostCyclesPerDatagram(), onl.hostCyclesPerDatagram());
  EXPECT_GT(onl.datagramsPerSecond(), emu.datagramsPerSecond());
}

TEST(Onload, FeaturesChangeWhatTheyShould) {
  Traffic t = makeTraffic(400, 18, 1);
  OnloadConfig c;
  c.design = Design::Raw;
  c.features.notify = hostif::Notify::Polling;
  OnloadResult all = run(c, t);
  c.features.combining = false;
  OnloadResult single = run(c, t);
  c.features.adaptiveUpdates = false;
  OnloadResult eager = run(c, t);
  for (const OnloadResult *r : {&all, &single, &eager})
    EXPECT_EQ(r->delivered, 400u);
  EXPECT_LT(all.dmaTransfers, 100u); // messages share DMAs
  EXPECT_GT(all.combinedMessages, 300u);
  EXPECT_EQ(single.combinedMessages, 0u);
  EXPECT_LT(single.tailUpdates, 100u);
  EXPECT_EQ(eager.tailUpdates, 400u); // one per message
  EXPECT_EQ(eager.dmaTransfers, 800u);
  EXPECT_GT(all.datagramsPerSecond(), single.datagramsPerSecond());
  EXPECT_GT(single.datagramsPerSecond(), eager.datagramsPerSecond());
}

TEST(Onload, AboveSaturationDropsAreCountedAtTheFabric) {
  Traffic t = makeTraffic(600, 1472, 1);
  OnloadConfig c;
  c.design = Design::EmuNic;
  c.lineRateGbps = 1; // far above what the emu-nic host takes
  OnloadResult r = run(c, t);
  EXPECT_GT(r.drops.fabric, 0u);
  EXPECT_EQ(r.corrupted, 0u);
  EXPECT_EQ(r.delivered + r.drops.total(), r.offered);
}

TEST(Onload, EveryDesignTransmitsEveryDatagramByteForByte) {
  // Odd sizes and two sockets: the onloader's MEs build the headers from
  // each socket's template; softnic's and the onloader's fill the UDP
  // checksum. The output is compared with frames built on the host.
  for (unsigned size : {5u, 333u, 1472u}) {
    Traffic t = makeSendTraffic(60, size, 2);
    for (Design design : {Design::EmuNic, Design::SoftNic, Design::Onloader}) {
      OnloadConfig c;
      c.design = design;
      me::AssemblerOptions options;
      me::Image image;
      std::vector<std::string> errors;
      ASSERT_TRUE(assemble(meProgram(c), "<onload>", options, image, errors));
      OnloadResult r;
      std::string error;
      ASSERT_TRUE(runTransmit(c, image, t, r, error)) << error;
      SCOPED_TRACE(std::string(designName(design)) + " " +
                   std::to_string(size));
      EXPECT_TRUE(r.faults.empty());
      EXPECT_EQ(r.delivered, 60u);
      EXPECT_EQ(r.deliveredBytes, 60u * size);
      EXPECT_EQ(r.corrupted + r.duplicates + r.missing, 0u);
      if (design == Design::EmuNic)
        EXPECT_EQ(r.host.checksummedBytes, 60u * (size + 8));
      else
        EXPECT_EQ(r.host.checksummedBytes, 0u);
      if (design == Design::Onloader)
        EXPECT_EQ(r.host.copiedBytes, 0u);
    }
  }
}

TEST(Onload, TheTemplateNeedsOnlyLengthsAndChecksums) {
  std::vector<uint8_t> h = headerTemplate(9001);
  ASSERT_EQ(h.size(), 42u);
  EXPECT_EQ(h[16] | h[17] | h[38] | h[39] | h[40] | h[41], 0);
  EXPECT_EQ(h[34] << 8 | h[35], 9001);
  EXPECT_EQ(h[36] << 8 | h[37], 5000);
}
