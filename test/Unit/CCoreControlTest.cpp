//===- CCoreControlTest.cpp - C-CORE control plane: resource manager ------===//
//
// The resource manager's table of running chains (netvm/CCore/Chain.h):
// placing until a chain is refused with its reason, removing one and
// placing again, and the table's values. Reliable UDP with retransmission
// (netvm/CCore/Transport.h) through runChain on the emulator: the output
// is the messages sent, whatever the network loses or reorders, and the
// counts of a lost tail message and a lost middle fragment. Pipelines of
// ME stages: the same output as the host, per-stage figures, the table's
// MEs, and the swap of one stage with nothing lost or reordered.
//
//===----------------------------------------------------------------------===//

#include "netvm/CCore/Chain.h"
#include "netvm/CCore/Query.h"
#include "netvm/CCore/Transport.h"
#include "netvm/ccore/Message.h"

#include <gtest/gtest.h>

using namespace netvm::ccore;

namespace {

const char *schemaText = R"(
format flight id 1 size 64 {
  u32 flightno;
  u16 gate;
  u32 price @ 16;
}
)";

struct Fixture : ::testing::Test {
  void SetUp() override {
    std::string error;
    std::optional<Schema> parsed = parseSchema(schemaText, "t.ccs", error);
    ASSERT_TRUE(parsed) << error;
    schema = std::move(*parsed);
  }
  HandlerApp handler(const std::string &query) {
    HandlerOptions options;
    options.specialize = true;
    options.name = "me_stage";
    HandlerApp app;
    std::vector<Query> queries;
    std::string error;
    EXPECT_TRUE(
        emitHandlerApp(schema, &query, {}, options, app, queries, error))
        << error;
    return app;
  }
  /// Handlers in sequence, one ME stage each.
  HandlerApp pipeline(const std::vector<std::string> &texts,
                      bool specialize = true) {
    HandlerOptions options;
    options.specialize = specialize;
    options.name = "me_stage";
    HandlerApp app;
    std::vector<Query> queries;
    std::string error;
    EXPECT_TRUE(emitPipeline(schema, texts, options, true, app, queries, error))
        << error;
    return app;
  }
  Schema schema;
};

using CCoreResourceManager = Fixture;

} // namespace

TEST_F(CCoreResourceManager, PlacesUntilRefusedThenAgainAfterARemoval) {
  netvm::me::MachineConfig machine; // 8 MEs
  ResourceManager manager(machine, /*hostThreads=*/1);
  EXPECT_EQ(manager.spareME(), 3);
  EXPECT_EQ(manager.freeMEs(), 7u);
  ChainDemand demand;
  demand.rateGbps = 1;
  demand.messageBytes = 64;
  HandlerApp select = handler("from flight select price > 500");
  unsigned id = 0;
  Placement a = manager.add("a", select, demand, &id, "select");
  EXPECT_EQ(a.where, Placement::Where::ME) << a.reason;
  EXPECT_EQ(id, 1u);
  Placement b =
      manager.add("b", handler("from flight project flightno"), demand, &id);
  EXPECT_EQ(b.where, Placement::Where::ME) << b.reason;
  EXPECT_EQ(id, 2u);
  EXPECT_EQ(manager.freeMEs(), 1u);

  // The MEs are full: a chain that must go there is refused, naming each
  // resource, what it needs and what is free; the table is unchanged.
  demand.side = ChainDemand::Side::ME;
  Placement c = manager.add("c", select, demand);
  EXPECT_EQ(c.where, Placement::Where::Refused);
  EXPECT_EQ(c.reason, "does not fit: MEs: needs 3, 1 free (of 8; 1 kept "
                      "spare for hot-swaps); host: not asked for");
  EXPECT_EQ(manager.chains().size(), 2u);

  // Anywhere: the host thread takes it; then nothing is left.
  demand.side = ChainDemand::Side::Auto;
  Placement d = manager.add("d", select, demand, &id);
  EXPECT_EQ(d.where, Placement::Where::Host) << d.reason;
  EXPECT_EQ(id, 3u);
  EXPECT_EQ(manager.freeHostThreads(), 0u);
  Placement e = manager.add("e", select, demand);
  EXPECT_EQ(e.where, Placement::Where::Refused);
  EXPECT_NE(e.reason.find("host: needs 1 thread, 0 free"), std::string::npos);
  EXPECT_EQ(manager.add("d", select, demand).reason,
            "a chain named 'd' is running");

  // The table's values.
  const std::vector<RunningChain> &t = manager.chains();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].name, "a");
  EXPECT_EQ(t[0].description, "select");
  EXPECT_EQ(t[0].mes, (std::vector<unsigned>{0, 1, 2}));
  EXPECT_EQ(t[1].mes, (std::vector<unsigned>{4, 5, 6}));
  EXPECT_EQ(t[2].mes, std::vector<unsigned>{});
  EXPECT_EQ(t[2].hostThreads, std::vector<unsigned>{0});
  EXPECT_EQ(t[0].where, Placement::Where::ME);
  EXPECT_EQ(t[0].codeWords, a.codeWords);
  EXPECT_GT(t[0].codeWords, 0u);
  EXPECT_EQ(t[0].estimate, a.meCycles);
  EXPECT_EQ(t[0].budget, a.budgetCycles);
  // 64-byte messages plus 20 bytes of wire at 1 Gbit/s: 672 ns, 403.2
  // cycles at 600 MHz.
  EXPECT_NEAR(t[0].budget, 403.2, 1e-9);
  EXPECT_NEAR(t[2].budget, 672.0, 1e-9);
  EXPECT_DOUBLE_EQ(t[0].load, a.meCycles / a.budgetCycles);
  EXPECT_GT(t[0].load, 0.0);
  EXPECT_LT(t[0].load, 1.0);
  EXPECT_EQ(t[1].stages, 1u);
  std::vector<uint32_t> words = manager.controlStoreUse();
  EXPECT_EQ(words[1], a.codeWords);
  EXPECT_EQ(words[5], b.codeWords);
  EXPECT_EQ(words[3], 0u);

  // Removing frees what it held; the next chain takes it.
  EXPECT_TRUE(manager.remove("a"));
  EXPECT_FALSE(manager.remove("a"));
  EXPECT_EQ(manager.freeMEs(), 4u);
  demand.side = ChainDemand::Side::ME;
  Placement f = manager.add("f", select, demand, &id);
  EXPECT_EQ(f.where, Placement::Where::ME) << f.reason;
  EXPECT_EQ(id, 4u);
  EXPECT_EQ(manager.chains().back().mes, (std::vector<unsigned>{0, 1, 2}));
  EXPECT_EQ(manager.freeMEs(), 1u);
  std::string text = manager.text();
  EXPECT_NE(text.find("free: 1 of 8 MEs (ME 3 kept spare), 0 of 1 host "
                      "threads"),
            std::string::npos)
      << text;
  std::string json = manager.toJSON();
  EXPECT_NE(json.find("\"name\": \"f\", \"description\": \"\", "
                      "\"stages\": 1, \"where\": \"me\", \"mes\": [0, 1, 2]"),
            std::string::npos)
      << json;
}

TEST_F(CCoreResourceManager, RefusesOverBudgetAndWithoutSpare) {
  netvm::me::MachineConfig machine;
  ResourceManager manager(machine, /*hostThreads=*/0, /*keepSpare=*/false);
  EXPECT_EQ(manager.spareME(), -1);
  EXPECT_EQ(manager.freeMEs(), 8u);
  ChainDemand demand;
  demand.messageBytes = 64;
  demand.rateGbps = 1000; // far beyond the MEs and the host
  Placement p =
      manager.add("fast", handler("from flight select gate == 3"), demand);
  EXPECT_EQ(p.where, Placement::Where::Refused);
  EXPECT_EQ(p.reason.rfind("does not fit: MEs: ", 0), 0u) << p.reason;
  EXPECT_NE(p.reason.find("the rate leaves"), std::string::npos) << p.reason;
  EXPECT_TRUE(manager.chains().empty());
  demand.rateGbps = 0;
  for (const char *name : {"x", "y"})
    EXPECT_EQ(manager.add(name, handler("from flight"), demand).where,
              Placement::Where::ME);
  EXPECT_EQ(manager.chains()[1].mes, (std::vector<unsigned>{3, 4, 5}));
  EXPECT_EQ(manager.chains()[1].load, 0.0); // no rate: no predicted load
  EXPECT_EQ(manager.add("z", handler("from flight"), demand).where,
            Placement::Where::Refused);
}

namespace {

/// Runs `count` 64-byte messages relayed behind the reliable reassembler
/// (16-byte fragments: four a message) at `gbps`; the outputs must be the
/// messages.
struct CCoreReliableUDP : Fixture {
  void run(const ReliableOptions &options, uint64_t count, double gbps,
           ChainRun &out) {
    GenerateOptions generate;
    generate.count = count;
    messages = generateMessages(*schema.format("flight"), generate);
    HandlerApp app = handler("from flight");
    std::string error;
    ASSERT_TRUE(addReassembler(app, *schema.format("flight"), 16, error,
                               /*reliable=*/true))
        << error;
    netvm::me::MachineConfig machine;
    machine.lineRateGbps = gbps;
    netvm::me::CompiledApp image;
    ASSERT_TRUE(compileForME(app, machine, image, error)) << error;
    ChainControl control;
    control.reliable = options;
    control.reliable.enabled = true;
    control.reliable.payload = 16;
    ASSERT_TRUE(
        runChain(image, nullptr, messages, machine, control, out, error))
        << error;
    EXPECT_EQ(out.outputs, messages);
    counters = rudpCounters(out.dataMemory.back());
    EXPECT_EQ(counters.messagesDelivered, count);
    EXPECT_EQ(out.reliable.acknowledged, count);
    EXPECT_EQ(out.reliable.fragmentsSent - out.reliable.fragmentsResent,
              4 * count);
    EXPECT_EQ(out.controlMessages, counters.acksSent + counters.nacksSent);
  }
  std::vector<std::vector<uint8_t>> messages;
  RudpCounters counters;
};

} // namespace

TEST_F(CCoreReliableUDP, CleanLinkResendsNothing) {
  ChainRun r;
  run(ReliableOptions(), 50, 0.02, r);
  EXPECT_EQ(r.reliable.fragmentsSent, 200u);
  EXPECT_EQ(r.reliable.fragmentsResent, 0u);
  EXPECT_EQ(r.reliable.timeouts, 0u);
  EXPECT_EQ(counters.acksSent, 50u);
  EXPECT_EQ(counters.nacksSent, 0u);
  EXPECT_EQ(counters.fragmentsRejected, 0u);
  EXPECT_EQ(r.reliable.acksReceived, 50u);
  EXPECT_GT(r.reliable.doneCycle, 0u);
  EXPECT_LE(r.reliable.doneCycle, r.cycles);
}

TEST_F(CCoreReliableUDP, LostTailIsRecoveredByTheTimeout) {
  ReliableOptions o;
  o.dropFirst = {199}; // the last message's last fragment
  ChainRun r;
  run(o, 50, 0.02, r);
  EXPECT_EQ(r.reliable.fragmentsLost, 1u);
  EXPECT_EQ(r.reliable.timeouts, 1u);
  EXPECT_EQ(r.reliable.goBacks, 0u);
  EXPECT_EQ(r.reliable.messagesResent, 1u);
  EXPECT_EQ(r.reliable.fragmentsResent, 4u);
  EXPECT_EQ(counters.nacksSent, 0u);
  EXPECT_EQ(counters.fragmentsRejected, 3u); // its three duplicates
  EXPECT_EQ(counters.acksSent, 50u);
  // Recovered no sooner than a timeout after the loss.
  EXPECT_GT(r.reliable.doneCycle, o.timeoutCycles);
}

TEST_F(CCoreReliableUDP, LostMiddleFragmentIsNackedOnce) {
  ReliableOptions o;
  o.dropFirst = {101}; // message 25's second fragment
  ChainRun r;
  run(o, 50, 0.02, r);
  EXPECT_EQ(counters.nacksSent, 1u);
  EXPECT_EQ(r.reliable.nacksReceived, 1u);
  EXPECT_EQ(r.reliable.goBacks, 1u);
  EXPECT_EQ(r.reliable.timeouts, 0u);
  EXPECT_GE(r.reliable.messagesResent, 1u);
}

TEST_F(CCoreReliableUDP, HeavyLossReorderingAndLostControlMessages) {
  for (unsigned loss : {5u, 20u}) {
    ReliableOptions o;
    o.lossPercent = loss;
    o.reorderPercent = 10;
    o.controlLossPercent = 10;
    o.seed = loss;
    ChainRun r;
    run(o, 120, 0.05, r);
    EXPECT_GT(r.reliable.fragmentsLost, 0u) << loss;
    EXPECT_GT(r.reliable.fragmentsReordered, 0u) << loss;
    EXPECT_GT(r.reliable.fragmentsResent, 0u) << loss;
    EXPECT_GT(counters.nacksSent, 0u) << loss;
    EXPECT_GT(counters.fragmentsRejected, 0u) << loss;
  }
}

TEST_F(CCoreReliableUDP, NeedsALineRate) {
  GenerateOptions generate;
  generate.count = 2;
  std::vector<std::vector<uint8_t>> messages =
      generateMessages(*schema.format("flight"), generate);
  HandlerApp app = handler("from flight");
  std::string error;
  ASSERT_TRUE(addReassembler(app, *schema.format("flight"), 16, error, true));
  netvm::me::MachineConfig machine;
  netvm::me::CompiledApp image;
  ASSERT_TRUE(compileForME(app, machine, image, error)) << error;
  ChainControl control;
  control.reliable.enabled = true;
  ChainRun r;
  EXPECT_FALSE(runChain(image, nullptr, messages, machine, control, r, error));
  EXPECT_EQ(error, "reliable UDP with retransmission needs a line rate (the "
                   "sender is timed by the wire)");
}

namespace {
using CCorePipeline = Fixture;
} // namespace

// A select then a project, each on its own ME stage: the output is the
// same handlers' on the host (JIT), in order; each stage takes every
// message; swaps are refused on such a chain.
TEST_F(CCorePipeline, StagesMatchTheHostAndSwapsNameAStage) {
  HandlerApp app = pipeline({"from flight select price > 500",
                             "from flight project flightno, price"});
  std::string error;
  EXPECT_EQ(app.stages, (std::vector<std::string>{"me_stage_1", "me_stage_2"}));
  GenerateOptions generate;
  generate.count = 120;
  generate.ranges["price"] = {0, 1000};
  std::vector<std::vector<uint8_t>> messages =
      generateMessages(*schema.format("flight"), generate);
  netvm::me::MachineConfig machine;
  netvm::me::CompiledApp image;
  ASSERT_TRUE(compileForME(app, machine, image, error)) << error;
  ASSERT_EQ(image.layout.stages.size(), 2u);
  ChainRun me, host;
  ASSERT_TRUE(
      runChain(image, nullptr, messages, machine, ChainControl(), me, error))
      << error;
  std::unique_ptr<netvm::rt::Engine> jit = compileForHost(app, error);
  ASSERT_TRUE(jit) << error;
  jit->initialize();
  ASSERT_TRUE(runHostChain({jit.get()}, messages, host, error)) << error;
  EXPECT_EQ(me.outputs, host.outputs);
  size_t passed = 0;
  for (const std::vector<uint8_t> &m : messages)
    passed += (uint32_t(m[16]) << 24 | uint32_t(m[17]) << 16 |
               uint32_t(m[18]) << 8 | m[19]) > 500;
  EXPECT_EQ(me.outputs.size(), passed);
  ASSERT_EQ(me.stages.size(), 2u);
  EXPECT_EQ(me.stages[0].me, 1u);
  EXPECT_EQ(me.stages[1].me, 2u);
  EXPECT_EQ(me.stages[0].messages, 120u);
  EXPECT_EQ(me.stages[1].messages, 120u);
  EXPECT_EQ(me.stages[0].sent, passed);
  EXPECT_EQ(me.stages[1].sent, passed);
  EXPECT_EQ(me.meSent, passed);
  EXPECT_GT(me.stages[0].busyCycles, 0u);
  ResourceReport report = resourceReport(me, image, ChainControl(), machine);
  EXPECT_EQ(report.mes[1].stage, 1u);
  EXPECT_EQ(report.mes[2].stage, 2u);
  EXPECT_EQ(report.mes[3].role, "transmit");

  ChainControl control;
  control.swap.mode = SwapRequest::Mode::Spare;
  control.swap.next = &image;
  control.swap.spareME = 5;
  ChainRun refused;
  EXPECT_FALSE(
      runChain(image, nullptr, messages, machine, control, refused, error));
  EXPECT_NE(error.find("pipeline of 2 ME stages"), std::string::npos) << error;

  // A handler must read what the one before sends.
  std::vector<Query> queries;
  EXPECT_FALSE(emitPipeline(
      schema, {"from flight project flightno", "from flight select price > 1"},
      HandlerOptions(), true, app, queries, error));
  EXPECT_NE(error.find("<me-query 2>: reads format 'flight' (id 1), but "
                       "handler 1 sends format id 32769"),
            std::string::npos)
      << error;
}

// The table holds N + 2 MEs for a pipeline of N stages and refuses one
// that does not fit, saying what it needs.
TEST_F(CCorePipeline, TableCountsStageMEs) {
  netvm::me::MachineConfig machine;
  ResourceManager manager(machine, /*hostThreads=*/0);
  HandlerApp three =
      pipeline({"from flight select price > 500", "from flight select gate < 9",
                "from flight project flightno, price"});
  HandlerApp two = pipeline(
      {"from flight select price > 500", "from flight project flightno"});
  ChainDemand demand;
  demand.messageBytes = 64;
  Placement p = manager.add("three", three, demand);
  ASSERT_EQ(p.where, Placement::Where::ME) << p.reason;
  EXPECT_EQ(p.mes, 5u);
  ASSERT_EQ(manager.chains().size(), 1u);
  EXPECT_EQ(manager.chains()[0].mes, (std::vector<unsigned>{0, 1, 2, 4, 5}));
  ASSERT_EQ(manager.chains()[0].meWords.size(), 3u);
  EXPECT_EQ(manager.freeMEs(), 2u);
  std::vector<uint32_t> words = manager.controlStoreUse();
  EXPECT_GT(words[1], 0u);
  EXPECT_GT(words[4], 0u);
  EXPECT_EQ(words[5], 0u); // the transmit ME runs no handler
  Placement q = manager.add("two", two, demand);
  EXPECT_EQ(q.where, Placement::Where::Refused);
  EXPECT_NE(q.reason.find("MEs: needs 4 (receive, 2 handler stages, "
                          "transmit), 2 free"),
            std::string::npos)
      << q.reason;
  EXPECT_EQ(manager.chains().size(), 1u);
}

// Stage 2 (the project) swapped from generic to specialized through the
// spare ME 4 while the messages flow: the output is the run's without a
// swap (none lost, none reordered); the old ME took the messages before
// the switch, the spare the rest.
TEST_F(CCorePipeline, SwapOfOneStageLosesAndReordersNothing) {
  std::vector<std::string> texts = {"from flight select price > 500",
                                    "from flight project flightno, price"};
  HandlerApp before = pipeline(texts, /*specialize=*/false),
             other = pipeline(texts);
  std::string error;
  HandlerApp after = before;
  after.files[1] = other.files[1];
  netvm::me::MachineConfig machine;
  netvm::me::CompiledApp image, next;
  ASSERT_TRUE(compileForME(before, machine, image, error)) << error;
  ASSERT_TRUE(compileForME(after, machine, next, error)) << error;
  GenerateOptions generate;
  generate.count = 300;
  generate.ranges["price"] = {0, 1000};
  std::vector<std::vector<uint8_t>> messages =
      generateMessages(*schema.format("flight"), generate);
  ChainRun plain, swapped;
  ASSERT_TRUE(
      runChain(image, nullptr, messages, machine, ChainControl(), plain, error))
      << error;
  ChainControl control;
  control.swap.mode = SwapRequest::Mode::Spare;
  control.swap.next = &next;
  control.swap.stage = 2;
  control.swap.spareME = 4;
  control.swap.atCycle = 20000;
  ASSERT_TRUE(
      runChain(image, nullptr, messages, machine, control, swapped, error))
      << error;
  EXPECT_EQ(swapped.outputs, plain.outputs);
  EXPECT_TRUE(swapped.swap.done);
  EXPECT_EQ(swapped.swap.oldME, 2u);
  EXPECT_EQ(swapped.swap.newME, 4u);
  EXPECT_GT(swapped.swap.oldMessages, 0u);
  EXPECT_LT(swapped.swap.oldMessages, 300u);
  ASSERT_EQ(swapped.stages.size(), 2u);
  EXPECT_EQ(swapped.stages[1].me, 4u);
  EXPECT_EQ(swapped.handlerMessages[2], swapped.swap.oldMessages);
  EXPECT_EQ(swapped.handlerMessages[2] + swapped.handlerMessages[4], 300u);
  EXPECT_GT(swapped.swap.downtimeCycles(), 0u);

  // The generic select's data memory moves the stage after it: a new
  // form of stage 1 changes ME 2's code too, and is refused.
  HandlerApp first = before;
  first.files[0] = other.files[0];
  netvm::me::CompiledApp moved;
  ASSERT_TRUE(compileForME(first, machine, moved, error)) << error;
  control.swap.next = &moved;
  control.swap.stage = 1;
  EXPECT_FALSE(
      runChain(image, nullptr, messages, machine, control, swapped, error));
  EXPECT_NE(error.find("changes the code of ME 2 besides the swapped ME 1"),
            std::string::npos)
      << error;
}
