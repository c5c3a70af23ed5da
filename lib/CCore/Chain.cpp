//===- Chain.cpp - C-CORE chains across the MEs and the host --------------===//
//
// Compiling handlers for either side, and the control loop that hot-swaps
// the ME stage's code while messages flow (netvm/CCore/Chain.h).
//
//===----------------------------------------------------------------------===//

#include "netvm/CCore/Chain.h"

#include "netvm/Driver/Driver.h"
#include "netvm/Target/ME/CodeGen.h"
#include "netvm/Target/Native.h"
#include "netvm/emu/host.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace netvm::ccore {

namespace {
/// An MLIR context with netvm's dialects whose diagnostics are rendered
/// (file:line:col, source line, caret) into a string.
struct Compilation {
  mlir::MLIRContext context;
  llvm::SourceMgr sourceMgr;
  std::string diagnostics;
  llvm::raw_string_ostream stream{diagnostics};
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> handler;

  Compilation() : context(registry(), mlir::MLIRContext::Threading::DISABLED) {
    context.printOpOnDiagnostic(false);
    handler = std::make_unique<mlir::SourceMgrDiagnosticHandler>(
        sourceMgr, &context, stream);
  }

  static mlir::DialectRegistry registry() {
    mlir::DialectRegistry r;
    driver::registerDialects(r);
    return r;
  }

  mlir::OwningOpRef<mlir::ModuleOp> load(const std::string &netil,
                                         const std::string &name) {
    driver::Input input;
    std::string file = name + ".netil";
    input.files = {file};
    input.buffers = {{file, netil}};
    input.appName = name;
    return driver::load(context, sourceMgr, input);
  }
};
} // namespace

bool compileForME(const std::string &netil, const std::string &name,
                  const me::MachineConfig &machine, me::CompiledApp &out,
                  std::string &error) {
  Compilation c;
  mlir::OwningOpRef<mlir::ModuleOp> module = c.load(netil, name);
  if (!module ||
      failed(driver::optimize(*module, 2, nullptr, driver::OptimizeFor::ME))) {
    error = c.diagnostics;
    return false;
  }
  me::CodeGenOptions options;
  options.machine = machine;
  if (failed(me::compileApplication(*module, options, out))) {
    error = c.diagnostics;
    return false;
  }
  return true;
}

std::unique_ptr<rt::Engine> compileForHost(const std::string &netil,
                                           const std::string &name,
                                           std::string &error) {
  Compilation c;
  mlir::OwningOpRef<mlir::ModuleOp> module = c.load(netil, name);
  if (!module || failed(driver::optimize(*module, 2))) {
    error = c.diagnostics;
    return nullptr;
  }
  native::CodegenOptions jit;
  jit.optLevel = 2;
  auto desc = native::jitCompile(*module, jit);
  if (!desc) {
    error = llvm::toString(desc.takeError());
    return nullptr;
  }
  return rt::Engine::native(*desc, rt::EngineOptions(), error);
}

namespace {

class VectorInput final : public me::PacketInput {
public:
  explicit VectorInput(const std::vector<std::vector<uint8_t>> &messages)
      : messages(messages) {}
  bool next(me::InputPacket &packet) override {
    if (index == messages.size())
      return false;
    packet.bytes = messages[index];
    packet.wireLength = 0;
    ++index;
    return true;
  }

private:
  const std::vector<std::vector<uint8_t>> &messages;
  size_t index = 0;
};

class VectorOutput final : public me::PacketOutput {
public:
  explicit VectorOutput(std::vector<std::vector<uint8_t>> &out) : out(out) {}
  void transmit(const me::Transmission &t) override {
    out.emplace_back(t.bytes, t.bytes + t.length);
  }

private:
  std::vector<std::vector<uint8_t>> &out;
};

/// The host control loop of a swap: a state machine run by the emulator's
/// host interface.
class Swapper {
public:
  Swapper(const SwapRequest &request, SwapReport &report)
      : request(request), report(report),
        code(codeOf(*request.next, handlerME)) {
    report.oldME = handlerME;
    report.newME =
        request.mode == SwapRequest::Mode::Spare ? request.spareME : handlerME;
  }

  static const me::CodeBlock *codeOf(const me::CompiledApp &app, unsigned me) {
    for (const me::CodeBlock &b : app.image.code)
      if ((b.meMask >> me) & 1)
        return &b;
    return nullptr;
  }

  static uint64_t step(netvm_emu_host *host, void *self) {
    return static_cast<Swapper *>(self)->look(host);
  }

  std::string failure;

private:
  enum class Phase { Preload, Wait, Drain, Started, Done };
  const SwapRequest &request;
  SwapReport &report;
  const me::CodeBlock *code;
  Phase phase = Phase::Preload;

  bool load(netvm_emu_host *host, unsigned me) {
    if (netvm_emu_host_me_load(host, me, code->words.data(),
                               unsigned(code->words.size()), code->ctxMode,
                               code->ctxEnable) != 0) {
      failure = "the new code does not load on ME " + std::to_string(me);
      return false;
    }
    report.loadedCycle = netvm_emu_host_now(host);
    return true;
  }

  netvm_emu_ring_ops ops(netvm_emu_host *host, unsigned me, unsigned ring) {
    netvm_emu_ring_ops o{};
    netvm_emu_host_me_ring_ops(host, me, ring, &o);
    return o;
  }

  uint64_t look(netvm_emu_host *host) {
    switch (phase) {
    case Phase::Preload:
      // The spare gets its code while the old ME still serves: loading
      // costs no downtime.
      if (request.mode == SwapRequest::Mode::Spare &&
          !load(host, request.spareME))
        return 0;
      phase = Phase::Wait;
      return request.atCycle > netvm_emu_host_now(host)
                 ? request.atCycle - netvm_emu_host_now(host)
                 : 1;
    case Phase::Wait:
      netvm_emu_host_ring_fence(host, handlerME, workRing, 1);
      report.fenceCycle = netvm_emu_host_now(host);
      phase = Phase::Drain;
      return request.pollCycles;
    case Phase::Drain: {
      // Drained: every message the old ME took has left it, sent (the
      // transmit ring) or dropped (its buffer back on the free ring).
      netvm_emu_ring_ops taken = ops(host, handlerME, workRing);
      netvm_emu_ring_ops sent = ops(host, handlerME, transmitRing);
      netvm_emu_ring_ops freed = ops(host, handlerME, freeRing);
      if (taken.gets != sent.puts + freed.puts)
        return request.pollCycles;
      report.drainedCycle = netvm_emu_host_now(host);
      report.oldLastGet = taken.lastGet;
      report.oldMessages = taken.gets;
      netvm_emu_host_me_stop(host, handlerME);
      netvm_emu_host_ring_fence(host, handlerME, workRing, 0);
      if (request.mode == SwapRequest::Mode::InPlace && !load(host, handlerME))
        return 0;
      if (netvm_emu_host_me_start(host, report.newME) != 0) {
        failure = "ME " + std::to_string(report.newME) + " does not start";
        return 0;
      }
      report.startCycle = netvm_emu_host_now(host);
      phase = Phase::Started;
      return request.pollCycles;
    }
    case Phase::Started: {
      // Stay until the new code takes its first message, or the input
      // is over.
      netvm_emu_ring_ops taken = ops(host, report.newME, workRing);
      if (!taken.gets)
        return request.pollCycles;
      report.newFirstGet = taken.firstGet;
      report.done = true;
      phase = Phase::Done;
      return 0;
    }
    case Phase::Done:
      return 0;
    }
    return 0;
  }
};

/// Whether the new image can take over the old one's machine: the same
/// rings, memories and packet path (only the handler ME's code differs).
static bool compatible(const me::CompiledApp &a, const me::CompiledApp &b,
                       std::string &why) {
  auto ringsOf = [](const me::Image &image) {
    std::vector<std::tuple<unsigned, uint32_t, uint32_t>> r;
    for (const me::RingConfig &c : image.rings)
      r.emplace_back(c.ring, c.base, c.sizeWords);
    return r;
  };
  if (ringsOf(a.image) != ringsOf(b.image)) {
    why = "the new image configures other rings";
    return false;
  }
  // Only code crosses at a swap: initial data the new image expects
  // must be what the old one put there.
  auto dataOf = [](const me::Image &image) {
    std::vector<std::tuple<int, uint32_t, std::vector<uint8_t>>> d;
    for (const me::DataInit &init : image.data)
      d.emplace_back(int(init.memory), init.address, init.bytes);
    return d;
  };
  if (dataOf(a.image) != dataOf(b.image)) {
    why = "the new image initialises memory differently";
    return false;
  }
  if (!a.layout.stages.empty() || !b.layout.stages.empty()) {
    why = "a hot-swap needs the default layout (one handler ME)";
    return false;
  }
  if (a.layout.peCounters != b.layout.peCounters ||
      a.layout.eventCount != b.layout.eventCount ||
      a.layout.eventLog != b.layout.eventLog ||
      a.layout.infoOffset != b.layout.infoOffset) {
    why = "the new image lays out its memories differently";
    return false;
  }
  for (const me::CodeBlock &block : a.image.code)
    if (block.meMask != (1u << handlerME) &&
        std::find_if(b.image.code.begin(), b.image.code.end(),
                     [&](const me::CodeBlock &other) {
                       return other.meMask == block.meMask &&
                              other.words == block.words;
                     }) == b.image.code.end()) {
      why = "the new image changes the receive or transmit code";
      return false;
    }
  return true;
}

} // namespace

bool runChain(const me::CompiledApp &meStage, rt::Engine *hostStage,
              const std::vector<std::vector<uint8_t>> &messages,
              const me::MachineConfig &machine, const SwapRequest &swap,
              ChainRun &run, std::string &error) {
  run = ChainRun();
  bool swapping = swap.mode != SwapRequest::Mode::None;
  if (swapping) {
    if (!swap.next || !Swapper::codeOf(*swap.next, handlerME)) {
      error = "hot-swap: no new code for ME " + std::to_string(handlerME);
      return false;
    }
    std::string why;
    if (!compatible(meStage, *swap.next, why)) {
      error = "hot-swap: " + why;
      return false;
    }
    if (swap.mode == SwapRequest::Mode::Spare &&
        (swap.spareME >= machine.numMEs ||
         Swapper::codeOf(meStage, swap.spareME))) {
      error = "hot-swap: ME " + std::to_string(swap.spareME) +
              " is not an idle ME of the machine";
      return false;
    }
  }
  me::Emulator emulator(machine);
  if (!emulator.load(meStage.image, error))
    return false;
  VectorInput input(messages);
  VectorOutput output(run.fromMEs);
  emulator.setInput(&input);
  emulator.setOutput(&output);
  std::unique_ptr<Swapper> swapper;
  if (swapping) {
    swapper = std::make_unique<Swapper>(swap, run.swap);
    emulator.attachHost(&Swapper::step, swapper.get(), 0);
  }
  emulator.run();
  run.stats = emulator.stats();
  run.cycles = run.stats.cycles;
  run.micros = run.cycles / run.stats.clockMHz;
  if (!run.stats.faults.empty()) {
    const me::Fault &f = run.stats.faults.front();
    error = "ME " + std::to_string(f.me) + " faulted at pc " +
            std::to_string(f.pc) + ": " + f.reason;
    return false;
  }
  if (swapper && !swapper->failure.empty()) {
    error = "hot-swap: " + swapper->failure;
    return false;
  }
  if (meStage.layout.peCounters) {
    std::vector<uint8_t> words;
    if (emulator.readMemory(me::Memory::Sram, meStage.layout.peCounters, 12,
                            words)) {
      auto word = [&](unsigned i) {
        return uint64_t(words[4 * i]) << 24 | uint64_t(words[4 * i + 1]) << 16 |
               uint64_t(words[4 * i + 2]) << 8 | words[4 * i + 3];
      };
      run.meRuns = word(0);
      run.meSent = word(1);
      run.meDropped = word(2);
    }
  }
  if (!hostStage) {
    run.outputs = run.fromMEs;
    return true;
  }
  for (const std::vector<uint8_t> &m : run.fromMEs) {
    rt::TracePacket packet;
    packet.bytes = m;
    packet.wireLength = uint32_t(m.size());
    rt::PacketResult result = hostStage->push(0, packet);
    for (rt::Output &out : result.outputs)
      run.outputs.push_back(std::move(out.bytes));
    run.hostDropped += result.drops;
  }
  std::string failure = hostStage->failure();
  if (!failure.empty()) {
    error = "host stage: " + failure;
    return false;
  }
  return true;
}

} // namespace netvm::ccore
