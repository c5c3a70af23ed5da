//===- InterpreterTest.cpp - The reference interpreter
//------------------------===//
//
// Applications assembled from NetIL through the driver, run packet by packet:
// outputs, drops, fan-out duplication, info memory carried between NetPEs,
// data memory persistence, exceptions and the watchdog.
//
//===----------------------------------------------------------------------===//

#include "netvm/Interpreter/Interpreter.h"
#include "netvm/Driver/Driver.h"

#include "NetVM/NetVMOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "gtest/gtest.h"

#include <fstream>

using namespace netvm;
using namespace netvm::interp;

namespace {

class InterpreterTest : public ::testing::Test {
protected:
  void SetUp() override {
    mlir::DialectRegistry registry;
    driver::registerDialects(registry);
    context = std::make_unique<mlir::MLIRContext>(registry);
    context->getDiagEngine().registerHandler(
        [this](mlir::Diagnostic &d) { diagnostics += d.str() + "\n"; });
    llvm::SmallString<128> dir;
    llvm::sys::fs::createUniqueDirectory("netvm-interp", dir);
    tempDir = std::string(dir);
  }
  void TearDown() override { llvm::sys::fs::remove_directories(tempDir); }

  std::string write(const std::string &name, const std::string &text) {
    llvm::SmallString<128> path(tempDir);
    llvm::sys::path::append(path, name);
    std::ofstream(std::string(path)) << text;
    return std::string(path);
  }

  /// Load an application from files and instantiate it.
  std::unique_ptr<Interpreter> load(std::vector<std::string> files,
                                    Options options = {}) {
    module = driver::loadApplication(*context, sourceMgr, files);
    if (!module || failed(driver::optimize(*module, 0)))
      return nullptr;
    auto vm = Interpreter::create(driver::getApplication(*module), options);
    if (vm)
      initExceptions = vm->initialize();
    return vm;
  }

  std::unique_ptr<mlir::MLIRContext> context;
  llvm::SourceMgr sourceMgr;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string tempDir, diagnostics;
  std::vector<Exception> initExceptions;
};

const char *kPorts = "segment .ports\n push_input in\n push_output out\nends\n";

Packet packet(std::vector<uint8_t> bytes) { return Packet{std::move(bytes)}; }

} // namespace

TEST_F(InterpreterTest, FilterForwardsAndDrops) {
  std::string f = write("f.netil", std::string(kPorts) + R"(
segment .push
.maxstacksize 4
  pop
  push 12
  upload.16
  push 0x0800
  jcmp.neq drop
  pkt.send out
drop:
  ret
ends
)");
  auto vm = load({f});
  ASSERT_NE(vm, nullptr) << diagnostics;
  std::vector<uint8_t> ip(20, 0), arp(20, 0);
  ip[12] = 0x08;
  arp[12] = 0x08;
  arp[13] = 0x06;
  Result r = vm->push(0, packet(ip));
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].bytes, ip);
  EXPECT_EQ(vm->sinkNames()[r.outputs[0].sink], "out");
  r = vm->push(0, packet(arp));
  EXPECT_TRUE(r.outputs.empty());
  EXPECT_EQ(r.drops, 1u);
  // Too short for the ethertype: a packet_bounds exception, not a crash.
  r = vm->push(0, packet({1, 2, 3}));
  ASSERT_EQ(r.exceptions.size(), 1u);
  EXPECT_EQ(r.exceptions[0].kind,
            static_cast<uint32_t>(ExceptionKind::PacketBounds));
  EXPECT_EQ(vm->peNames()[r.exceptions[0].pe], "f");
  EXPECT_TRUE(r.outputs.empty());
}

TEST_F(InterpreterTest, DataMemoryPersistsAcrossPackets) {
  std::string f = write("count.netil", std::string(kPorts) + R"(
segment .metadata
 .datamem_size 4
ends
segment .push
  pop
  push 0
  umload.32
  inc1
  push 0
  mstore.32
  pkt.send out
ends
)");
  auto vm = load({f});
  ASSERT_NE(vm, nullptr) << diagnostics;
  for (int i = 0; i < 5; ++i)
    vm->push(0, packet({0}));
  EXPECT_EQ(vm->dataMemory(0), llvm::ArrayRef<uint8_t>({0, 0, 0, 5}));
}

TEST_F(InterpreterTest, InfoMemoryTravelsAndChainsRun) {
  // The first NetPE writes the packet length into info memory, the second
  // copies it into the packet.
  std::string a = write("a.netil", std::string(kPorts) + R"(
segment .push
  pop
  pbl
  push 0
  istore.16
  pkt.send out
ends
)");
  std::string b = write("b.netil", std::string(kPorts) + R"(
segment .push
  pop
  push 0
  uiload.16
  push 0
  pstore.16
  pkt.send out
ends
)");
  auto vm = load({a, b});
  ASSERT_NE(vm, nullptr) << diagnostics;
  Result r = vm->push(0, packet(std::vector<uint8_t>(300, 0xAA)));
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].bytes[0], 0x01);
  EXPECT_EQ(r.outputs[0].bytes[1], 0x2C); // 300
  EXPECT_EQ(r.outputs[0].info[0], 0x01);
}

TEST_F(InterpreterTest, FanOutDuplicatesInConnectionOrder) {
  std::string tag = write("tag.netil", R"(
segment .ports
 push_input in
 push_output out
ends
segment .metadata
 .datamem_size 1
ends
segment .push
  pop
  push 0
  umload.8
  push 0
  pstore.8
  push 0
  umload.8
  inc1
  push 0
  mstore.8
  pkt.send out
ends
)");
  std::string split = write("split.netil", std::string(kPorts) + R"(
segment .push
  pop
  pkt.send out
ends
)");
  std::string app = write("fan.nvapp", R"(
# one source, a splitter whose output feeds two taggers
source wire
sink left, right
pe split = "split.netil"
pe t1 = "tag.netil"
pe t2 = "tag.netil"
wire -> split.in
split.out -> t1.in
split.out -> t2.in
t1.out -> left
t2.out -> right
)");
  (void)tag;
  (void)split;
  auto vm = load({app});
  ASSERT_NE(vm, nullptr) << diagnostics;
  Result r = vm->push(0, packet({9, 9}));
  ASSERT_EQ(r.outputs.size(), 2u);
  EXPECT_EQ(vm->sinkNames()[r.outputs[0].sink], "left");
  EXPECT_EQ(vm->sinkNames()[r.outputs[1].sink], "right");
  // Each tagger has its own data memory; both stamp 0 on their first packet.
  EXPECT_EQ(r.outputs[0].bytes, (std::vector<uint8_t>{0, 9}));
  EXPECT_EQ(r.outputs[1].bytes, (std::vector<uint8_t>{0, 9}));
  r = vm->push(0, packet({9, 9}));
  EXPECT_EQ(r.outputs[0].bytes[0], 1);
  EXPECT_EQ(vm->dataMemory(1)[0], 2);
  EXPECT_EQ(vm->dataMemory(2)[0], 2);
}

TEST_F(InterpreterTest, WatchdogStopsRunawayLoops) {
  std::string f = write("loop.netil", std::string(kPorts) + R"(
segment .push
  pop
spin:
  jump spin
ends
)");
  Options options;
  options.watchdogBudget = 1000;
  auto vm = load({f}, options);
  ASSERT_NE(vm, nullptr) << diagnostics;
  Result r = vm->push(0, packet({1}));
  ASSERT_EQ(r.exceptions.size(), 1u);
  EXPECT_EQ(r.exceptions[0].kind,
            static_cast<uint32_t>(ExceptionKind::Watchdog));
  // The loop body is the watchdog and the branch: two operations an
  // iteration, 1000 iterations, then the failing watchdog.
  EXPECT_EQ(vm->operationsExecuted(), 2 * 1000 + 2u);
}

TEST_F(InterpreterTest, DivisionByZeroIsAnException) {
  std::string f = write("mod.netil", std::string(kPorts) + R"(
segment .push
  pop
  push 7
  push 0
  upload.8
  mod
  push 0
  pstore.8
  pkt.send out
ends
)");
  auto vm = load({f});
  ASSERT_NE(vm, nullptr) << diagnostics;
  Result r = vm->push(0, packet({3}));
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].bytes[0], 1); // 7 % 3
  r = vm->push(0, packet({0}));
  ASSERT_EQ(r.exceptions.size(), 1u);
  EXPECT_EQ(r.exceptions[0].kind,
            static_cast<uint32_t>(ExceptionKind::DivisionByZero));
}

TEST_F(InterpreterTest, InitHandlerRunsOnce) {
  std::string f = write("init.netil", std::string(kPorts) + R"(
segment .metadata
 .datamem_size 1
ends
segment .init
  push 42
  push 0
  mstore.8
  ret
ends
segment .push
  pop
  push 0
  umload.8
  push 0
  pstore.8
  pkt.send out
ends
)");
  auto vm = load({f});
  ASSERT_NE(vm, nullptr) << diagnostics;
  EXPECT_TRUE(initExceptions.empty());
  Result r = vm->push(0, packet({0}));
  EXPECT_EQ(r.outputs[0].bytes[0], 42);
  EXPECT_EQ(vm->counters(0).runs, 2u);
}

TEST_F(InterpreterTest, PullChain) {
  // The sink pulls from `filter`, which pulls from the source and keeps
  // only packets starting with 1.
  std::string f = write("pull.netil", R"(
segment .ports
 pull_input in
 pull_output out
ends
segment .pull
  pop
again:
  pkt.receive in
  pbl
  j.eq done
  push 0
  upload.8
  push 1
  jcmp.eq done
  jump again
done:
  ret
ends
)");
  auto vm = load({f});
  ASSERT_NE(vm, nullptr) << diagnostics;
  std::vector<Packet> queue = {packet({2}), packet({1, 5}), packet({3})};
  size_t next = 0;
  vm->setSourcePuller([&](unsigned) -> std::optional<Packet> {
    if (next == queue.size())
      return Packet{}; // an empty packet ends the loop above
    return queue[next++];
  });
  Result r = vm->pull(0);
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].bytes, (std::vector<uint8_t>{1, 5}));
}

TEST_F(InterpreterTest, UnknownCoprocessorIsReported) {
  std::string f = write("copro.netil", std::string(kPorts) + R"(
segment .metadata
 .use_coprocessor lookup_ex
ends
segment .push
  pop
  copro.invoke lookup_ex, 0
  pkt.send out
ends
)");
  EXPECT_EQ(load({f}), nullptr);
  EXPECT_NE(diagnostics.find("uses coprocessor 'lookup_ex', which netvm does "
                             "not provide (available: associative, lookup, "
                             "regexp, stringmatching)"),
            std::string::npos)
      << diagnostics;
}
