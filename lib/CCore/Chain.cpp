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

  mlir::OwningOpRef<mlir::ModuleOp> load(const HandlerApp &app) {
    driver::Input input;
    input.buffers = app.files;
    if (app.nvapp.empty()) {
      for (const auto &file : app.files)
        input.files.push_back(file.first);
    } else {
      input.files = {app.name + ".nvapp"};
      input.buffers.emplace_back(input.files.front(), app.nvapp);
    }
    input.appName = app.name;
    return driver::load(context, sourceMgr, input);
  }
};

HandlerApp single(const std::string &netil, const std::string &name) {
  HandlerApp app;
  app.name = name;
  app.files = {{name + ".netil", netil}};
  return app;
}
} // namespace

bool compileForME(const std::string &netil, const std::string &name,
                  const me::MachineConfig &machine, me::CompiledApp &out,
                  std::string &error) {
  return compileForME(single(netil, name), machine, out, error);
}

std::unique_ptr<rt::Engine> compileForHost(const std::string &netil,
                                           const std::string &name,
                                           std::string &error) {
  return compileForHost(single(netil, name), error);
}

bool compileForME(const HandlerApp &app, const me::MachineConfig &machine,
                  me::CompiledApp &out, std::string &error) {
  Compilation c;
  mlir::OwningOpRef<mlir::ModuleOp> module = c.load(app);
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

std::unique_ptr<rt::Engine> compileForHost(const HandlerApp &app,
                                           std::string &error) {
  Compilation c;
  mlir::OwningOpRef<mlir::ModuleOp> module = c.load(app);
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

/// The host control loop: a state machine run by the emulator's host
/// interface. It preloads a spare ME, then takes the swap and the
/// reconfigurations in the order of their cycles; each fences the handler
/// ME off the work ring, waits for it to drain, acts, lifts the fence and
/// watches for the first message taken after it.
class Controller {
public:
  Controller(const ChainControl &control, const me::CompiledApp &app,
             ChainRun &run)
      : control(control), app(app), run(run) {
    if (control.swap.mode != SwapRequest::Mode::None) {
      code = codeOf(*control.swap.next, handlerME);
      run.swap.oldME = handlerME;
      run.swap.newME = control.swap.mode == SwapRequest::Mode::Spare
                           ? control.swap.spareME
                           : handlerME;
      events.push_back({control.swap.atCycle, -1});
    }
    for (size_t i = 0; i < control.params.size(); ++i)
      events.push_back({control.params[i].atCycle, int(i)});
    std::sort(events.begin(), events.end(), [](const Event &a, const Event &b) {
      return a.atCycle != b.atCycle ? a.atCycle < b.atCycle : a.param < b.param;
    });
    run.params.assign(control.params.size(), ParamReport());
  }

  static const me::CodeBlock *codeOf(const me::CompiledApp &app, unsigned me) {
    for (const me::CodeBlock &b : app.image.code)
      if ((b.meMask >> me) & 1)
        return &b;
    return nullptr;
  }

  static uint64_t step(netvm_emu_host *host, void *self) {
    return static_cast<Controller *>(self)->look(host);
  }

  std::string failure;

private:
  enum class Phase { Preload, Wait, Drain, Watch, Done };
  struct Event {
    uint64_t atCycle;
    int param; // -1: the swap
  };
  const ChainControl &control;
  const me::CompiledApp &app;
  ChainRun &run;
  const me::CodeBlock *code = nullptr;
  std::vector<Event> events;
  size_t next = 0;
  Phase phase = Phase::Preload;
  /// The ME serving the work ring, and the messages earlier MEs took.
  unsigned current = handlerME;
  uint64_t takenBefore = 0, takenAtChange = 0;

  uint64_t poll() const { return control.swap.pollCycles; }

  bool load(netvm_emu_host *host, unsigned me) {
    if (netvm_emu_host_me_load(host, me, code->words.data(),
                               unsigned(code->words.size()), code->ctxMode,
                               code->ctxEnable) != 0) {
      failure = "the new code does not load on ME " + std::to_string(me);
      return false;
    }
    run.swap.loadedCycle = netvm_emu_host_now(host);
    return true;
  }

  netvm_emu_ring_ops ops(netvm_emu_host *host, unsigned me, unsigned ring) {
    netvm_emu_ring_ops o{};
    netvm_emu_host_me_ring_ops(host, me, ring, &o);
    return o;
  }

  uint64_t waitFor(netvm_emu_host *host) {
    if (next == events.size()) {
      phase = Phase::Done;
      return 0;
    }
    phase = Phase::Wait;
    uint64_t now = netvm_emu_host_now(host);
    return events[next].atCycle > now ? events[next].atCycle - now : 1;
  }

  /// The event's action once the handler ME is drained; false on failure.
  bool act(netvm_emu_host *host, const Event &event,
           const netvm_emu_ring_ops &taken) {
    if (event.param >= 0) {
      const ParamChange &change = control.params[size_t(event.param)];
      ParamReport &report = run.params[size_t(event.param)];
      const me::AppLayout::Region &region = app.layout.dataMemory[change.pe];
      uint8_t bytes[4] = {uint8_t(change.value >> 24),
                          uint8_t(change.value >> 16),
                          uint8_t(change.value >> 8), uint8_t(change.value)};
      if (netvm_emu_host_write(host, unsigned(region.memory),
                               region.address + change.offset, bytes, 4) != 0) {
        failure = "the write of " + change.name + " did not land";
        return false;
      }
      report.writtenCycle = netvm_emu_host_now(host);
      report.lastGetBefore = taken.lastGet;
      report.messagesBefore = takenBefore + taken.gets;
      netvm_emu_host_ring_fence(host, current, workRing, 0);
      takenAtChange = taken.gets;
      return true;
    }
    SwapReport &report = run.swap;
    report.drainedCycle = netvm_emu_host_now(host);
    report.oldLastGet = taken.lastGet;
    report.oldMessages = taken.gets;
    netvm_emu_host_me_stop(host, current);
    netvm_emu_host_ring_fence(host, current, workRing, 0);
    if (control.swap.mode == SwapRequest::Mode::InPlace && !load(host, current))
      return false;
    if (netvm_emu_host_me_start(host, report.newME) != 0) {
      failure = "ME " + std::to_string(report.newME) + " does not start";
      return false;
    }
    report.startCycle = netvm_emu_host_now(host);
    takenBefore += taken.gets;
    current = report.newME;
    takenAtChange = 0;
    return true;
  }

  uint64_t look(netvm_emu_host *host) {
    switch (phase) {
    case Phase::Preload:
      // The spare gets its code while the old ME still serves: loading
      // costs no downtime.
      if (control.swap.mode == SwapRequest::Mode::Spare &&
          !load(host, control.swap.spareME))
        return 0;
      return waitFor(host);
    case Phase::Wait: {
      netvm_emu_host_ring_fence(host, current, workRing, 1);
      uint64_t now = netvm_emu_host_now(host);
      const Event &event = events[next];
      (event.param < 0 ? run.swap.fenceCycle
                       : run.params[size_t(event.param)].fenceCycle) = now;
      phase = Phase::Drain;
      return poll();
    }
    case Phase::Drain: {
      // Drained: every message the handler ME took has left it, sent (the
      // transmit ring) or dropped (its buffer back on the free ring).
      netvm_emu_ring_ops taken = ops(host, current, workRing);
      netvm_emu_ring_ops sent = ops(host, current, transmitRing);
      netvm_emu_ring_ops freed = ops(host, current, freeRing);
      if (taken.gets != sent.puts + freed.puts)
        return poll();
      if (!act(host, events[next], taken))
        return 0;
      phase = Phase::Watch;
      return poll();
    }
    case Phase::Watch: {
      // Stay until the handler takes its first message after the change,
      // or the input is over.
      netvm_emu_ring_ops taken = ops(host, current, workRing);
      if (taken.gets == takenAtChange)
        return poll();
      uint64_t first = 0;
      if (takenAtChange == 0) {
        first = taken.firstGet;
      } else {
        // Not since a start: the get that followed the change completed
        // after the fence was lifted; the ring ops keep the last one only.
        first = taken.lastGet;
      }
      const Event &event = events[next];
      if (event.param < 0) {
        run.swap.newFirstGet = first;
        run.swap.done = true;
      } else {
        ParamReport &report = run.params[size_t(event.param)];
        report.firstGetAfter = first;
        report.done = true;
      }
      ++next;
      return waitFor(host);
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
              const me::MachineConfig &machine, const ChainControl &control,
              ChainRun &run, std::string &error) {
  run = ChainRun();
  const SwapRequest &swap = control.swap;
  bool swapping = swap.mode != SwapRequest::Mode::None;
  if (swapping) {
    if (!swap.next || !Controller::codeOf(*swap.next, handlerME)) {
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
         Controller::codeOf(meStage, swap.spareME))) {
      error = "hot-swap: ME " + std::to_string(swap.spareME) +
              " is not an idle ME of the machine";
      return false;
    }
  }
  for (const ParamChange &change : control.params) {
    if (!meStage.layout.stages.empty()) {
      error = "reconfigure: needs the default layout (one handler ME)";
      return false;
    }
    if (change.pe >= meStage.layout.dataMemory.size() ||
        change.offset + 4 > meStage.layout.dataMemory[change.pe].size) {
      error = "reconfigure " + change.name +
              ": not a word of the handler's data memory";
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
  std::unique_ptr<Controller> controller;
  if (swapping || !control.params.empty()) {
    controller = std::make_unique<Controller>(control, meStage, run);
    emulator.attachHost(&Controller::step, controller.get(), 0);
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
  if (controller && !controller->failure.empty()) {
    error = "host control: " + controller->failure;
    return false;
  }
  if (meStage.layout.peCounters) {
    std::vector<uint8_t> words;
    unsigned pes = unsigned(meStage.layout.pes.size());
    if (emulator.readMemory(me::Memory::Sram, meStage.layout.peCounters,
                            12 * pes, words)) {
      auto word = [&](unsigned i) {
        return uint64_t(words[4 * i]) << 24 | uint64_t(words[4 * i + 1]) << 16 |
               uint64_t(words[4 * i + 2]) << 8 | words[4 * i + 3];
      };
      // Every handler of a multicast runs for every message: the first
      // one's runs are the messages; sends and drops are summed.
      run.meRuns = word(0);
      for (unsigned pe = 0; pe < pes; ++pe) {
        run.meSent += word(3 * pe + 1);
        run.meDropped += word(3 * pe + 2);
      }
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
