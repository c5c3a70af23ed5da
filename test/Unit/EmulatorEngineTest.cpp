//===- EmulatorEngineTest.cpp - The ME emulator as an engine --------------===//
//
// Engine::emulator against a compiled application made by hand: a small ME
// program that follows the layout protocol of netvm/Target/ME/AppLayout.h
// (receive into DRAM after the info memory, transmit with the packet
// number as tag, exceptions, drops and unconnected sends in the SRAM event
// log, data memory carried from run to run, the watchdog word). It pins
// the protocol between the ME back end and the run library: the results,
// counters, memories and failures the engine derives from it.
//
//===----------------------------------------------------------------------===//

#include "netvm/Runtime/Engine.h"
#include "netvm/Target/ME/AppLayout.h"
#include "netvm/Target/ME/Assembler.h"
#include "netvm/emu/Emulator.h"

#include "gtest/gtest.h"

using namespace netvm;
using namespace netvm::rt;

namespace {

/// The layout protocol of a compiled application, written by hand (the
/// Python tests run the same file).
std::string protocolProgram() {
  std::string text, error;
  EXPECT_TRUE(me::readTextFile(std::string(NETVM_SOURCE_DIR) +
                                   "/test/Python/Inputs/me-protocol.s",
                               text, error))
      << error;
  return text;
}

/// The program above as a compiled application: sources a and b (receive
/// ports 0, 1), sinks out0 and out1 (transmit ports 0, 1), one NetPE.
me::CompiledApp protocolApp() {
  me::CompiledApp app;
  me::AssemblerOptions options;
  std::vector<std::string> errors;
  std::string program = protocolProgram();
  bool ok = me::assemble(program, "me-protocol.s", options, app.image, errors);
  EXPECT_TRUE(ok) << (errors.empty() ? "" : errors.front());
  app.assembly = program;
  me::AppLayout &l = app.layout;
  l.sources = {"a", "b"};
  l.sinks = {"out0", "out1"};
  l.pes = {"pe"};
  l.dataMemory = {{me::Memory::Sram, 0x100, 8}};
  l.sharedMemory = {me::Memory::Sram, 0x200, 8};
  l.persistent = {{me::Memory::Sram, 0x100, 12}};
  l.eventCount = 0x1000;
  l.eventLog = 0x1010;
  l.eventCapacity = 16;
  l.locations = {"app.netil:1:1", "app.netil:7:3"};
  l.watchdogAddress = 0x2000;
  l.infoOffset = 64;
  l.infoSize = 16;
  l.infoUsed = true;
  return app;
}

std::unique_ptr<Engine> makeEngine(const me::CompiledApp &app,
                                   uint64_t watchdog = 777) {
  EngineOptions options;
  options.watchdogBudget = watchdog;
  std::string error;
  std::unique_ptr<Engine> engine =
      Engine::emulator(app, options, me::MachineConfig(), error);
  EXPECT_TRUE(engine) << error;
  EXPECT_EQ(error, "");
  return engine;
}

TracePacket packet(std::vector<uint8_t> bytes, uint32_t seconds = 0) {
  TracePacket p;
  p.bytes = std::move(bytes);
  p.wireLength = static_cast<uint32_t>(p.bytes.size());
  p.seconds = seconds;
  p.microseconds = 7;
  return p;
}

uint32_t word(llvm::ArrayRef<uint8_t> bytes, size_t at) {
  return uint32_t(bytes[at]) << 24 | uint32_t(bytes[at + 1]) << 16 |
         uint32_t(bytes[at + 2]) << 8 | bytes[at + 3];
}

/// The info memory the program writes for packet `tag`.
std::vector<uint8_t> info(uint8_t tag) {
  std::vector<uint8_t> v(16);
  v[3] = tag;
  v[4] = 0x11, v[5] = 0x22, v[6] = 0x33, v[7] = 0x44;
  return v;
}

TEST(EmulatorEngine, ResultsFollowTheLayoutProtocol) {
  me::CompiledApp app = protocolApp();
  std::unique_ptr<Engine> engine = makeEngine(app);
  ASSERT_TRUE(engine);
  EXPECT_STREQ(engine->kind(), "emulator");
  EXPECT_EQ(engine->sourceNames().size(), 2u);
  EXPECT_EQ(*engine->findSource("b"), 1u);
  // Before any run: the image's initial memories.
  EXPECT_EQ(word(engine->sharedMemory(), 0), 0xcafebabeu);
  EXPECT_EQ(word(engine->dataMemory(0), 0), 0u);

  // The init handlers: the event without a packet number.
  PacketResult init = engine->initialize();
  ASSERT_EQ(init.exceptions.size(), 1u);
  EXPECT_EQ(init.exceptions[0].kind, uint32_t(NETVM_EXC_DATA_BOUNDS));
  EXPECT_EQ(init.exceptions[0].pe, 0);
  EXPECT_EQ(init.exceptions[0].handler, uint32_t(NETVM_HANDLER_INIT));
  EXPECT_EQ(init.exceptions[0].location, "app.netil:1:1");
  EXPECT_TRUE(init.outputs.empty());
  EXPECT_EQ(init.drops, 0u);
  EXPECT_EQ(engine->failure(), "");

  // A batch: results per packet, in arrival order.
  std::vector<TracePacket> trace = {
      packet({1, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}, 100), // out0
      packet({2, 0x11, 0x22, 0x33}, 101),             // out1
      packet({0, 0, 0, 0}, 102),                      // dropped
      packet({3, 0, 0, 0}, 103),                      // exception
      packet({4, 0, 0, 0}, 104),                      // unconnected
      packet({5, 1, 2, 3, 4}, 105)};                  // a copy dropped, out1
  PacketBatch batch;
  for (const TracePacket &p : trace)
    batch.add(p);
  std::vector<PacketResult> results;
  std::vector<size_t> order;
  auto keep = [&](size_t i, const PacketResult &r) {
    order.push_back(i);
    results.push_back(r);
  };
  ResultFn fn = keep;
  engine->run(0, {batch.packets(), batch.size()}, &fn, ResultDetail::Full);
  EXPECT_EQ(engine->failure(), "");
  ASSERT_EQ(results.size(), 6u);
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));

  ASSERT_EQ(results[0].outputs.size(), 1u);
  const Output &o0 = results[0].outputs[0];
  EXPECT_EQ(o0.sink, 0u);
  EXPECT_EQ(o0.bytes, trace[0].bytes);
  EXPECT_EQ(o0.length, 6u);
  EXPECT_EQ(o0.info, info(0));
  EXPECT_EQ(o0.seconds, 100u);
  EXPECT_EQ(o0.microseconds, 7u);
  EXPECT_EQ(results[0].drops, 0u);
  EXPECT_TRUE(results[0].exceptions.empty());

  ASSERT_EQ(results[1].outputs.size(), 1u);
  EXPECT_EQ(results[1].outputs[0].sink, 1u);
  EXPECT_EQ(results[1].outputs[0].bytes, trace[1].bytes);
  EXPECT_EQ(results[1].outputs[0].info, info(1));
  EXPECT_EQ(results[1].outputs[0].seconds, 101u);

  // Nothing out, nothing raised, nothing logged: one drop.
  EXPECT_TRUE(results[2].outputs.empty());
  EXPECT_TRUE(results[2].exceptions.empty());
  EXPECT_EQ(results[2].drops, 1u);

  ASSERT_EQ(results[3].exceptions.size(), 1u);
  const ExceptionReport &e = results[3].exceptions[0];
  EXPECT_EQ(e.kind, uint32_t(NETVM_EXC_DIVISION_BY_ZERO));
  EXPECT_EQ(e.pe, 0);
  EXPECT_EQ(e.handler, uint32_t(NETVM_HANDLER_PUSH));
  EXPECT_EQ(e.location, "app.netil:7:3");
  EXPECT_TRUE(results[3].outputs.empty());
  EXPECT_EQ(results[3].drops, 0u);

  EXPECT_TRUE(results[4].outputs.empty());
  EXPECT_EQ(results[4].unconnected, 1u);
  EXPECT_EQ(results[4].drops, 0u);

  ASSERT_EQ(results[5].outputs.size(), 1u);
  EXPECT_EQ(results[5].outputs[0].sink, 1u);
  EXPECT_EQ(results[5].outputs[0].info, info(5));
  EXPECT_EQ(results[5].drops, 1u);

  // Counters, as a Tally keeps them.
  Counters c = engine->counters();
  EXPECT_EQ(c.packets, 6u);
  EXPECT_EQ(c.dropped, 2u);
  EXPECT_EQ(c.unconnected, 1u);
  EXPECT_EQ(c.exceptions[NETVM_EXC_DIVISION_BY_ZERO], 1u);
  EXPECT_EQ(c.exceptions[NETVM_EXC_DATA_BOUNDS], 1u);
  EXPECT_EQ(engine->sinkCounters(0).packets, 1u);
  EXPECT_EQ(engine->sinkCounters(0).bytes, 6u);
  EXPECT_EQ(engine->sinkCounters(1).packets, 2u);
  EXPECT_EQ(engine->sinkCounters(1).bytes, 9u);
  EXPECT_EQ(engine->peCounters(0).exceptions, 2u);
  EXPECT_EQ(engine->peCounters(0).dropped, 1u);

  // Data memory as the last run left it: 6 packets, the watchdog budget.
  EXPECT_EQ(word(engine->dataMemory(0), 0), 6u);
  EXPECT_EQ(word(engine->dataMemory(0), 4), 777u);
  EXPECT_EQ(word(engine->sharedMemory(), 4), 0x01020304u);

  // The next run (a push through source b, receive port 1) starts from
  // the persistent memory: the count goes on, init does not run again.
  PacketResult r = engine->push(1, packet({2, 9, 9, 9}));
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].sink, 1u);
  EXPECT_EQ(r.outputs[0].info, info(0)); // packet 0 of its run
  EXPECT_TRUE(r.exceptions.empty());
  EXPECT_EQ(word(engine->dataMemory(0), 0), 7u);

  // What the control plane writes reaches the next run.
  engine->dataMemory(0)[3] = 100;
  r = engine->push(0, packet({0, 0, 0, 0}));
  EXPECT_EQ(r.drops, 1u);
  EXPECT_EQ(word(engine->dataMemory(0), 0), 101u);
  EXPECT_EQ(engine->counters().packets, 8u);
  EXPECT_EQ(engine->counters().exceptions[NETVM_EXC_DATA_BOUNDS], 1u);

  // The emulator's statistics, summed over the four runs.
  const me::Stats *stats = engine->emulatorStats();
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->packetsReceived, 8u);
  EXPECT_EQ(stats->packetsSent, 4u);
  EXPECT_GT(stats->cycles, 0u);
  ASSERT_FALSE(stats->mes.empty());
  EXPECT_TRUE(stats->mes[0].loaded);
  EXPECT_GT(stats->mes[0].busyCycles, 0u);
  EXPECT_TRUE(stats->faults.empty());
  EXPECT_EQ(engine->failure(), "");
}

TEST(EmulatorEngine, VerdictsAndBatchesWithoutListener) {
  me::CompiledApp app = protocolApp();
  app.layout.infoUsed = false; // info memory is then all zeros
  std::unique_ptr<Engine> engine = makeEngine(app);
  ASSERT_TRUE(engine);
  engine->initialize();
  PacketResult r = engine->push(0, packet({1, 2, 3, 4}));
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].info, std::vector<uint8_t>(16, 0));

  PacketBatch batch;
  batch.add(packet({1, 2, 3, 4, 5}));
  batch.add(packet({7, 7, 7, 7}));
  std::vector<PacketResult> results;
  auto keep = [&](size_t, const PacketResult &r) { results.push_back(r); };
  ResultFn fn = keep;
  engine->run(0, {batch.packets(), batch.size()}, &fn, ResultDetail::Verdicts);
  ASSERT_EQ(results.size(), 2u);
  ASSERT_EQ(results[0].outputs.size(), 1u);
  EXPECT_EQ(results[0].outputs[0].length, 5u);
  EXPECT_TRUE(results[0].outputs[0].bytes.empty());
  EXPECT_TRUE(results[0].outputs[0].info.empty());
  EXPECT_EQ(results[1].drops, 1u);

  // Without a listener only the counters move.
  engine->run(0, {batch.packets(), batch.size()});
  EXPECT_EQ(engine->counters().packets, 5u);
  EXPECT_EQ(engine->sinkCounters(0).packets, 3u);
  EXPECT_EQ(engine->counters().dropped, 2u);
  EXPECT_EQ(engine->failure(), "");
}

TEST(EmulatorEngine, FaultIsAFailureNotALoss) {
  std::unique_ptr<Engine> engine = makeEngine(protocolApp());
  ASSERT_TRUE(engine);
  engine->initialize();
  PacketBatch batch;
  batch.add(packet({1, 0, 0, 0}));
  batch.add(packet({0xff, 0, 0, 0})); // transmit port 20: a fault
  size_t delivered = 0;
  auto count = [&](size_t, const PacketResult &) { ++delivered; };
  ResultFn fn = count;
  engine->run(0, {batch.packets(), batch.size()}, &fn, ResultDetail::Full);
  EXPECT_EQ(delivered, 0u);
  EXPECT_NE(engine->failure().find("the emulator faulted: ME 0 context 0"),
            std::string::npos)
      << engine->failure();
  EXPECT_NE(engine->failure().find("transmit port 20"), std::string::npos)
      << engine->failure();
  ASSERT_TRUE(engine->emulatorStats());
  EXPECT_EQ(engine->emulatorStats()->faults.size(), 1u);
  // Later packets are refused, the failure stays.
  PacketResult r = engine->push(0, packet({1, 0, 0, 0}));
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(engine->counters().packets, 0u);
  EXPECT_NE(engine->failure().find("transmit port 20"), std::string::npos);
}

TEST(EmulatorEngine, UntaggedTransmitIsAFailure) {
  std::unique_ptr<Engine> engine = makeEngine(protocolApp());
  ASSERT_TRUE(engine);
  engine->initialize();
  PacketResult r = engine->push(0, packet({6, 0, 0, 0}));
  EXPECT_TRUE(r.empty());
  EXPECT_NE(engine->failure().find("without a packet tag"), std::string::npos)
      << engine->failure();
}

TEST(EmulatorEngine, EventLogOverflowIsAFailure) {
  me::CompiledApp app = protocolApp();
  app.layout.eventCapacity = 2;
  std::unique_ptr<Engine> engine = makeEngine(app);
  ASSERT_TRUE(engine);
  engine->initialize(); // one event
  PacketBatch batch;
  for (int i = 0; i < 3; ++i)
    batch.add(packet({3, 0, 0, 0}));
  engine->run(0, {batch.packets(), batch.size()});
  EXPECT_NE(engine->failure().find("the event log overflowed: 3 events, "
                                   "room for 2"),
            std::string::npos)
      << engine->failure();
}

TEST(EmulatorEngine, PullIsRefused) {
  std::unique_ptr<Engine> engine = makeEngine(protocolApp());
  ASSERT_TRUE(engine);
  engine->initialize();
  EXPECT_TRUE(engine->pull(0).empty());
  EXPECT_NE(engine->failure().find("push mode only"), std::string::npos);
}

TEST(EmulatorEngine, RefusesWhatDoesNotFit) {
  EngineOptions options;
  std::string error;
  me::CompiledApp app = protocolApp();
  me::MachineConfig small;
  small.controlStore = 16; // the program has more instructions
  EXPECT_FALSE(Engine::emulator(app, options, small, error));
  EXPECT_NE(error.find("cannot load the ME image"), std::string::npos) << error;

  error.clear();
  app.layout.dataMemory.clear();
  EXPECT_FALSE(Engine::emulator(app, options, me::MachineConfig(), error));
  EXPECT_EQ(error, "the layout gives 0 data memories for 1 NetPEs");

  error.clear();
  app = protocolApp();
  app.layout.sharedMemory = {me::Memory::Sram, 0x7ffffc, 16};
  EXPECT_FALSE(Engine::emulator(app, options, me::MachineConfig(), error));
  EXPECT_NE(error.find("lies outside the machine's"), std::string::npos)
      << error;
}

TEST(EmulatorEngine, WatchdogBudgetReachesTheImage) {
  std::unique_ptr<Engine> engine = makeEngine(protocolApp(), 1u << 20);
  ASSERT_TRUE(engine);
  engine->initialize();
  engine->push(0, packet({0, 0, 0, 0}));
  EXPECT_EQ(word(engine->dataMemory(0), 4), 1u << 20);
}

} // namespace
