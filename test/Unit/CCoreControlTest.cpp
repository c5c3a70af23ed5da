//===- CCoreControlTest.cpp - C-CORE control plane: resource manager ------===//
//
// The resource manager's table of running chains (netvm/CCore/Chain.h):
// placing until a chain is refused with its reason, removing one and
// placing again, and the table's values. Reliable UDP with retransmission
// (netvm/CCore/Transport.h) through runChain on the emulator: the output
// is the messages sent, whatever the network loses or reorders, and the
// counts of a lost tail message and a lost middle fragment.
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
