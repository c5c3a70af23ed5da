//===- Chain.cpp - C-CORE chains across the MEs and the host --------------===//
//
// Compiling handlers for either side, and the control loop that hot-swaps
// the ME stage's code while messages flow (netvm/CCore/Chain.h).
//
//===----------------------------------------------------------------------===//

#include "netvm/CCore/Chain.h"

#include "NetVM/NetVMOps.h"
#include "netvm/Analysis/CostModel.h"
#include "netvm/Driver/Driver.h"
#include "netvm/Target/ME/CodeGen.h"
#include "netvm/Target/Native.h"
#include "netvm/emu/host.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <sstream>

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
  // A pipeline of handlers: each on its own ME stage, in order (the back
  // end's pipeline placement, docs/me-backend.md "Stages").
  for (const std::string &pe : app.stages)
    options.placement.stages.push_back({{pe}, 1});
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
  /// Every message has been handed to the machine.
  bool over() const { return index == messages.size(); }

private:
  const std::vector<std::vector<uint8_t>> &messages;
  size_t index = 0;
};

class VectorOutput final : public me::PacketOutput {
public:
  explicit VectorOutput(ChainRun &run) : out(run.fromMEs), run(run) {}
  void transmit(const me::Transmission &t) override {
    if (returnPath && t.port == 1) {
      returnPath->feedback(t.bytes, t.length, t.cycle);
      ++run.controlMessages;
      return;
    }
    out.emplace_back(t.bytes, t.bytes + t.length);
    run.fromMEsCycles.push_back(t.cycle);
    run.fromMEsTags.push_back(t.hasTag ? t.tag : ~uint64_t(0));
    // The tag is the input packet's number: its last output's cycle.
    if (t.hasTag) {
      if (lastOutput.size() <= t.tag)
        lastOutput.resize(size_t(t.tag) + 1, none);
      if (lastOutput[t.tag] == none || lastOutput[t.tag] < t.cycle)
        lastOutput[t.tag] = t.cycle;
    }
  }
  /// Per input message, its last output's cycle, or `none`.
  static constexpr uint64_t none = ~uint64_t(0);
  /// Reliable UDP's sender: transmit port 1 leads to it.
  ReliableSender *returnPath = nullptr;
  std::vector<uint64_t> lastOutput;

private:
  std::vector<std::vector<uint8_t>> &out;
  ChainRun &run;
};

/// Per-message latency at a line rate: message k arrives when the wire
/// has carried the ones before it (as the emulator's receive side times
/// them: each with 20 bytes of preamble and gap).
void measureLatency(const std::vector<std::vector<uint8_t>> &messages,
                    const std::vector<uint64_t> &lastOutput,
                    const me::MachineConfig &machine, ChainRun &run) {
  if (machine.lineRateGbps <= 0)
    return;
  uint64_t arrival = 0;
  double sum = 0;
  for (size_t k = 0; k < messages.size(); ++k) {
    if (k < lastOutput.size() && lastOutput[k] != VectorOutput::none &&
        lastOutput[k] >= arrival) {
      uint64_t latency = lastOutput[k] - arrival;
      sum += double(latency);
      run.maxLatencyCycles = std::max(run.maxLatencyCycles, latency);
      ++run.latencyMessages;
    }
    double bits = (double(messages[k].size()) + 20) * 8;
    arrival += std::max<uint64_t>(
        1, uint64_t(std::ceil(bits * machine.clockMHz /
                              (machine.lineRateGbps * 1000.0))));
  }
  if (run.latencyMessages)
    run.meanLatencyCycles = sum / double(run.latencyMessages);
}

/// Whether the new image can take over the old one's machine: the same
/// rings, memories and packet path (only the handler ME's code differs).
bool compatible(const me::CompiledApp &a, const me::CompiledApp &b,
                std::string &why, unsigned swappedME = handlerME) {
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
  auto stagesOf = [](const me::AppLayout &layout) {
    std::vector<std::tuple<std::vector<unsigned>, std::vector<unsigned>,
                           std::vector<unsigned>>>
        r;
    for (const me::AppLayout::Stage &stage : layout.stages)
      r.emplace_back(stage.pes, stage.mes, stage.workRings);
    return r;
  };
  if (stagesOf(a.layout) != stagesOf(b.layout)) {
    why = "the new image lays out its ME stages differently";
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
    if (block.meMask != (1u << swappedME) &&
        std::find_if(b.image.code.begin(), b.image.code.end(),
                     [&](const me::CodeBlock &other) {
                       return other.meMask == block.meMask &&
                              other.words == block.words;
                     }) == b.image.code.end()) {
      unsigned other = unsigned(__builtin_ctz(block.meMask | 1u << 31));
      bool stage = other > 0 && other <= a.layout.stages.size();
      why = !stage ? std::string("the new image changes the receive or "
                                 "transmit code")
                   : "the new image changes the code of ME " +
                         std::to_string(other) + " besides the swapped ME " +
                         std::to_string(swappedME) +
                         " (another stage's form, or its data memory moved)";
      return false;
    }
  return true;
}

/// The host control loop: a state machine run by the emulator's host
/// interface. It preloads a spare ME, then takes the swap and the
/// reconfigurations in the order of their cycles; each fences the handler
/// ME off the work ring, waits for it to drain, acts, lifts the fence and
/// watches for the first message taken after it. With automatic
/// specialization it also watches the generic handler between events and
/// switches to (and back from) the specialized form.
class Controller {
public:
  Controller(const ChainControl &control, const me::CompiledApp &app,
             const VectorInput &input, ChainRun &run)
      : control(control), autoSpec(control.autoSpecialize), app(app),
        input(input), run(run), parameters(autoSpec.parameters) {
    if (control.swap.stage) {
      // A pipeline's stage: its ME, the ring it takes from and the one it
      // puts on (the next stage's, or the transmit ring 2).
      const auto &stages = app.layout.stages;
      unsigned s = control.swap.stage - 1;
      current = stages[s].mes.front();
      inRing = stages[s].workRings.front();
      outRing = s + 1 < stages.size() ? stages[s + 1].workRings.front() : 2;
      pipelined = true;
    }
    if (control.swap.mode != SwapRequest::Mode::None) {
      code = codeOf(*control.swap.next, current);
      run.swap.oldME = current;
      run.swap.newME = control.swap.mode == SwapRequest::Mode::Spare
                           ? control.swap.spareME
                           : current;
      events.push_back({control.swap.atCycle, swapEvent});
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
  /// The machine, for its count of messages received (the end of the
  /// stream: the host sees the same through the receive side's counters).
  const me::Emulator *emulator = nullptr;
  /// The ME serving the work ring, and per ME the messages it took before
  /// the last switch away from it.
  unsigned current = handlerME;
  std::vector<uint64_t> taken;
  /// The ring the served ME takes its work from and, in a pipeline, the
  /// ring it puts every entry it took on (a swapped stage's).
  unsigned inRing = workRing, outRing = transmitRing;
  bool pipelined = false;

private:
  enum class Phase { Preload, Wait, Drain, Watch, Done };
  /// Event::param of the swap and of an automatic specialization.
  static constexpr int swapEvent = -2, specializeEvent = -1;
  struct Event {
    uint64_t atCycle;
    int param; // a ParamChange, or one of the above
  };
  const ChainControl &control;
  const AutoSpecialize &autoSpec;
  const me::CompiledApp &app;
  const VectorInput &input;
  ChainRun &run;
  const me::CodeBlock *code = nullptr;
  std::vector<Event> events;
  size_t next = 0;
  Event active{0, 0};
  Phase phase = Phase::Preload;
  /// Messages earlier MEs took; the current one's count at the change.
  uint64_t takenBefore = 0, takenAtChange = 0;
  /// Automatic specialization: whether the specialized code serves, the
  /// current parameter values, since when they are stable, the images
  /// compiled so far (by values) and the values of the one on the spare.
  bool specialized = false;
  std::map<std::string, uint32_t> parameters;
  uint64_t stableCycle = 0, stableMessages = 0;
  std::map<std::map<std::string, uint32_t>, std::unique_ptr<me::CompiledApp>>
      images;
  std::optional<std::map<std::string, uint32_t>> onSpare;
  /// The automatic switch the active event makes (-1: none).
  int autoSwap = -1;

  uint64_t poll() const { return control.swap.pollCycles; }
  unsigned spareME() const { return control.swap.spareME; }

  bool load(netvm_emu_host *host, unsigned me) {
    if (netvm_emu_host_me_load(host, me, code->words.data(),
                               unsigned(code->words.size()), code->ctxMode,
                               code->ctxEnable) != 0) {
      failure = "the new code does not load on ME " + std::to_string(me);
      return false;
    }
    if (me < run.codeWords.size())
      run.codeWords[me] = uint32_t(code->words.size());
    return true;
  }

  netvm_emu_ring_ops ops(netvm_emu_host *host, unsigned me, unsigned ring) {
    netvm_emu_ring_ops o{};
    netvm_emu_host_me_ring_ops(host, me, ring, &o);
    return o;
  }

  /// The watcher looks at the generic handler between events.
  bool watching() const { return autoSpec.enabled && !specialized; }

  uint64_t waitFor(netvm_emu_host *host) {
    constexpr uint64_t never = ~uint64_t(0);
    uint64_t now = netvm_emu_host_now(host), wait = never;
    if (next < events.size())
      wait = events[next].atCycle > now ? events[next].atCycle - now : 1;
    if (watching())
      wait = std::min(wait, std::max<uint64_t>(1, autoSpec.watchCycles));
    phase = wait == never ? Phase::Done : Phase::Wait;
    return wait == never ? 0 : wait;
  }

  /// The specialized image for the current values, compiled unless it was,
  /// loaded on the spare unless it is there; opens its report.
  bool prepareSpecialized(netvm_emu_host *host) {
    AutoSwapReport report;
    report.parameters = parameters;
    auto image = images.find(parameters);
    if (image == images.end()) {
      auto next = std::make_unique<me::CompiledApp>();
      std::string error, why;
      auto start = std::chrono::steady_clock::now();
      if (!autoSpec.specialize(parameters, *next, error)) {
        failure = "automatic specialization: " + error;
        return false;
      }
      report.compileMilliseconds = std::chrono::duration<double, std::milli>(
                                       std::chrono::steady_clock::now() - start)
                                       .count();
      if (!compatible(app, *next, why)) {
        failure = "automatic specialization: " + why;
        return false;
      }
      image = images.emplace(parameters, std::move(next)).first;
    }
    code = codeOf(*image->second, handlerME);
    if (!code) {
      failure = "automatic specialization: no code for ME " +
                std::to_string(handlerME);
      return false;
    }
    if (onSpare != parameters) {
      if (!load(host, spareME()))
        return false;
      onSpare = parameters;
    }
    report.swap.loadedCycle = netvm_emu_host_now(host);
    report.swap.oldME = current;
    report.swap.newME = spareME();
    autoSwap = int(run.autoSwaps.size());
    run.autoSwaps.push_back(std::move(report));
    return true;
  }

  /// Fences the handler ME off the work ring for the active event.
  uint64_t fence(netvm_emu_host *host) {
    netvm_emu_host_ring_fence(host, current, inRing, 1);
    uint64_t now = netvm_emu_host_now(host);
    if (active.param == swapEvent) {
      run.swap.fenceCycle = now;
    } else if (active.param >= 0) {
      run.params[size_t(active.param)].fenceCycle = now;
      if (specialized) {
        // Back to the generic code, which reads the new value.
        AutoSwapReport report;
        report.toSpecialized = false;
        report.swap.oldME = current;
        report.swap.newME = handlerME;
        report.swap.loadedCycle = now;
        autoSwap = int(run.autoSwaps.size());
        run.autoSwaps.push_back(std::move(report));
      }
    }
    if (autoSwap >= 0)
      run.autoSwaps[size_t(autoSwap)].swap.fenceCycle = now;
    phase = Phase::Drain;
    return poll();
  }

  /// The drained old ME stops and `newME` starts (after `reload` loads
  /// the new code into it, in place).
  bool switchTo(netvm_emu_host *host, unsigned newME,
                const netvm_emu_ring_ops &old, SwapReport &report,
                bool reload) {
    report.drainedCycle = netvm_emu_host_now(host);
    report.oldLastGet = old.lastGet;
    report.oldMessages = old.gets;
    netvm_emu_host_me_stop(host, current);
    netvm_emu_host_ring_fence(host, current, inRing, 0);
    if (reload && !load(host, current))
      return false;
    if (netvm_emu_host_me_start(host, newME) != 0) {
      failure = "ME " + std::to_string(newME) + " does not start";
      return false;
    }
    report.startCycle = netvm_emu_host_now(host);
    taken[current] += old.gets;
    takenBefore += old.gets;
    current = newME;
    takenAtChange = 0;
    return true;
  }

  /// The stability clock starts again (a change, or the start).
  void stable(netvm_emu_host *host, uint64_t messages) {
    stableCycle = netvm_emu_host_now(host);
    stableMessages = messages;
  }

  /// The event's action once the handler ME is drained; false on failure.
  bool act(netvm_emu_host *host, const netvm_emu_ring_ops &old) {
    if (active.param >= 0) {
      const ParamChange &change = control.params[size_t(active.param)];
      ParamReport &report = run.params[size_t(active.param)];
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
      report.done = true;
      report.lastGetBefore = old.lastGet;
      report.messagesBefore =
          std::min(takenBefore + old.gets, emulator->stats().packetsReceived);
      if (autoSpec.enabled)
        parameters[change.parameter] = change.value;
      if (autoSwap >= 0 && streamOver(host, old.gets)) {
        // No message comes after the change: the specialized code stays
        // (a restart would take the end markers again).
        run.autoSwaps.pop_back();
        autoSwap = -1;
      }
      if (autoSwap >= 0) {
        AutoSwapReport &back = run.autoSwaps[size_t(autoSwap)];
        back.messagesBefore = report.messagesBefore;
        if (!switchTo(host, handlerME, old, back.swap, false))
          return false;
        specialized = false;
      } else {
        // The handler ME restarts: its contexts may hold the old value,
        // read ahead of their next message (a restart clears them).
        SwapReport restart;
        if (!switchTo(host, current, old, restart, false))
          return false;
      }
      stable(host, report.messagesBefore);
      return true;
    }
    if (active.param == specializeEvent) {
      AutoSwapReport &report = run.autoSwaps[size_t(autoSwap)];
      report.messagesBefore = takenBefore + old.gets;
      specialized = true;
      return switchTo(host, spareME(), old, report.swap, false);
    }
    return switchTo(host, run.swap.newME, old, run.swap,
                    control.swap.mode == SwapRequest::Mode::InPlace);
  }

  /// The active event's first message after the change, taken at `first`
  /// (0: none came).
  void finish(uint64_t first) {
    if (active.param == swapEvent) {
      run.swap.newFirstGet = first;
      run.swap.done = first != 0;
    } else if (active.param >= 0) {
      run.params[size_t(active.param)].firstGetAfter = first;
    }
    if (autoSwap >= 0) {
      run.autoSwaps[size_t(autoSwap)].swap.newFirstGet = first;
      run.autoSwaps[size_t(autoSwap)].swap.done = true;
    }
    autoSwap = -1;
    if (active.param != specializeEvent)
      ++next;
  }

  /// Every message the machine received has been taken by the handler
  /// (`gets` by the current ME): none can follow.
  bool streamOver(netvm_emu_host *host, uint64_t gets) {
    return input.over() && netvm_emu_host_rx_backlog(host) == 0 &&
           takenBefore + gets >= emulator->stats().packetsReceived;
  }

  /// Every message has been offered and taken.
  bool inputDone(netvm_emu_host *host) {
    return input.over() && netvm_emu_host_ring_count(host, inRing) == 0 &&
           netvm_emu_host_rx_backlog(host) == 0;
  }

  uint64_t look(netvm_emu_host *host) {
    switch (phase) {
    case Phase::Preload:
      // The spare gets its code while the old ME still serves: loading
      // costs no downtime.
      if (control.swap.mode == SwapRequest::Mode::Spare) {
        if (!load(host, spareME()))
          return 0;
        run.swap.loadedCycle = netvm_emu_host_now(host);
      }
      stable(host, 0);
      return waitFor(host);
    case Phase::Wait: {
      uint64_t now = netvm_emu_host_now(host);
      if (next < events.size() && events[next].atCycle <= now) {
        active = events[next];
        return fence(host);
      }
      if (watching()) {
        uint64_t gets = ops(host, current, inRing).gets;
        uint64_t messages = takenBefore + gets;
        if (!streamOver(host, gets) &&
            now - stableCycle >= autoSpec.stableCycles &&
            messages - stableMessages >= autoSpec.stableMessages &&
            messages > stableMessages) {
          if (!prepareSpecialized(host))
            return 0;
          active = {now, specializeEvent};
          return fence(host);
        }
        if (next == events.size() && inputDone(host)) {
          phase = Phase::Done;
          return 0;
        }
      }
      return waitFor(host);
    }
    case Phase::Drain: {
      // Drained: every buffer the handler ME took has left it: each
      // message (the work ring) and, with fan-out, each copy buffer (the
      // copy pool) is sent (the transmit ring), dropped (its buffer back
      // on the free ring) or, a copy's, back in the pool.
      // The takings are read last: a read sees the state when its crossing
      // starts, so equal counts mean nothing was taken while the outcomes
      // were read. The copy pool only with fan-out (a crossing each).
      if (pipelined) {
        // A pipeline's stage puts one entry on the ring after it for each
        // one it took (a dropped message as a "free this buffer" entry):
        // drained when they are equal (the takings read last, as below).
        netvm_emu_ring_ops put = ops(host, current, outRing);
        netvm_emu_ring_ops old = ops(host, current, inRing);
        if (old.gets != put.puts)
          return poll();
        if (!act(host, old))
          return 0;
        phase = Phase::Watch;
        return poll();
      }
      netvm_emu_ring_ops sent = ops(host, current, transmitRing);
      netvm_emu_ring_ops freed = ops(host, current, freeRing);
      netvm_emu_ring_ops copies{};
      if (std::any_of(
              app.image.rings.begin(), app.image.rings.end(),
              [](const me::RingConfig &c) { return c.ring == copyRing; }))
        copies = ops(host, current, copyRing);
      netvm_emu_ring_ops old = ops(host, current, inRing);
      if (old.gets + copies.gets != sent.puts + freed.puts + copies.puts)
        return poll();
      if (!act(host, old))
        return 0;
      phase = Phase::Watch;
      return poll();
    }
    case Phase::Watch: {
      // Stay until the handler takes its first message after the change,
      // or the input is over.
      netvm_emu_ring_ops now = ops(host, current, inRing);
      if (now.gets == takenAtChange) {
        // No message comes after the change: the next event, if any.
        if (inputDone(host)) {
          finish(0);
          return waitFor(host);
        }
        return poll();
      }
      // Since a start, its first get; else the get that followed the
      // change completed after the fence was lifted (the ring ops keep
      // the last one only).
      finish(takenAtChange == 0 ? now.firstGet : now.lastGet);
      return waitFor(host);
    }
    case Phase::Done:
      return 0;
    }
    return 0;
  }
};

} // namespace

bool runChain(const me::CompiledApp &meStage, rt::Engine *hostStage,
              const std::vector<std::vector<uint8_t>> &messages,
              const me::MachineConfig &machine, const ChainControl &control,
              ChainRun &run, std::string &error) {
  run = ChainRun();
  const SwapRequest &swap = control.swap;
  bool swapping = swap.mode != SwapRequest::Mode::None;
  size_t stageCount = meStage.layout.stages.size();
  if (stageCount &&
      (!control.params.empty() || control.autoSpecialize.enabled)) {
    // The control loop reconfigures and specializes the one handler ME of
    // the default layout (docs/ccore.md, "Pipelines of ME stages").
    error = "reconfigurations and automatic specialization act on a chain "
            "whose ME side is one handler ME; this one is a pipeline of " +
            std::to_string(stageCount) + " ME stages";
    return false;
  }
  if (swapping && (stageCount ? swap.stage == 0 || swap.stage > stageCount
                              : swap.stage != 0)) {
    error = stageCount
                ? "hot-swap: name the stage to swap (1 to " +
                      std::to_string(stageCount) + ") of this pipeline of " +
                      std::to_string(stageCount) + " ME stages"
                : std::string("hot-swap: the chain has no pipeline of "
                              "ME stages to name a stage of");
    return false;
  }
  if (swapping && stageCount &&
      meStage.layout.stages[swap.stage - 1].mes.size() != 1) {
    error = "hot-swap: stage " + std::to_string(swap.stage) +
            " runs on several MEs";
    return false;
  }
  unsigned swappedME = swapping && stageCount
                           ? meStage.layout.stages[swap.stage - 1].mes.front()
                           : handlerME;
  if (swapping) {
    if (!swap.next || !Controller::codeOf(*swap.next, swappedME)) {
      error = "hot-swap: no new code for ME " + std::to_string(swappedME);
      return false;
    }
    std::string why;
    if (!compatible(meStage, *swap.next, why, swappedME)) {
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
  const AutoSpecialize &autoSpec = control.autoSpecialize;
  if (autoSpec.enabled) {
    if (swapping) {
      error = "automatic specialization makes its own swaps: no other swap";
      return false;
    }
    if (!autoSpec.specialize) {
      error = "automatic specialization: no specializer";
      return false;
    }
    if (!meStage.layout.stages.empty() || !meStage.layout.pes.size()) {
      error = "automatic specialization: needs the default layout (one "
              "handler ME)";
      return false;
    }
    if (swap.spareME >= machine.numMEs ||
        Controller::codeOf(meStage, swap.spareME)) {
      error = "automatic specialization: ME " + std::to_string(swap.spareME) +
              " is not an idle ME of the machine";
      return false;
    }
    for (const ParamChange &change : control.params)
      if (!autoSpec.parameters.count(change.parameter)) {
        error = "automatic specialization: " + change.name +
                " is not a parameter of the handler";
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
  std::unique_ptr<ReliableSender> sender;
  if (control.reliable.enabled) {
    if (swapping || !control.params.empty() || autoSpec.enabled) {
      error = "reliable UDP with retransmission: no swap, reconfiguration or "
              "automatic specialization";
      return false;
    }
    if (machine.lineRateGbps <= 0) {
      error = "reliable UDP with retransmission needs a line rate (the "
              "sender is timed by the wire)";
      return false;
    }
    sender = std::make_unique<ReliableSender>(
        messages, control.reliable, machine.clockMHz, machine.lineRateGbps);
  }
  me::Emulator emulator(machine);
  if (!emulator.load(meStage.image, error))
    return false;
  VectorInput input(messages);
  VectorOutput output(run);
  output.returnPath = sender.get();
  if (sender)
    emulator.setInput(sender.get());
  else
    emulator.setInput(&input);
  emulator.setOutput(&output);
  run.codeWords.assign(machine.numMEs, 0);
  for (unsigned me = 0; me < machine.numMEs; ++me)
    if (const me::CodeBlock *code = Controller::codeOf(meStage, me))
      run.codeWords[me] = uint32_t(code->words.size());
  std::unique_ptr<Controller> controller;
  if (swapping || !control.params.empty() || autoSpec.enabled) {
    controller = std::make_unique<Controller>(control, meStage, input, run);
    controller->taken.assign(machine.numMEs, 0);
    controller->emulator = &emulator;
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
  if (sender) {
    run.reliable = sender->report();
    if (run.reliable.acknowledged < messages.size()) {
      error = "reliable UDP: " + std::to_string(run.reliable.acknowledged) +
              " of " + std::to_string(messages.size()) +
              " messages acknowledged when the " +
              (run.reliable.gaveUp
                   ? "sender gave up at cycle " + std::to_string(run.cycles)
                   : "machine stopped (" + run.stats.stopReason + ")");
      return false;
    }
  } else if (!input.over()) {
    // Never a silent loss: the machine stopped with messages not offered.
    error = "the machine stopped (" + run.stats.stopReason + ") after " +
            std::to_string(run.stats.packetsOffered) + " of " +
            std::to_string(messages.size()) + " messages";
    return false;
  }
  // The messages each ME took from the work ring: the current one took
  // what the others did not (the ring's gets less the end markers each
  // context takes last, docs/me-backend.md: one get per message received).
  run.handlerMessages.assign(machine.numMEs, 0);
  run.handlerME = controller ? controller->current : handlerME;
  uint64_t others = 0;
  if (controller)
    for (unsigned me = 0; me < machine.numMEs; ++me) {
      run.handlerMessages[me] = controller->taken[me];
      others += controller->taken[me];
    }
  uint64_t gets =
      std::min(run.stats.rings[workRing].gets, run.stats.packetsReceived);
  if (run.handlerME < machine.numMEs && gets >= others)
    run.handlerMessages[run.handlerME] += gets - others;
  for (const me::AppLayout::Region &region : meStage.layout.dataMemory) {
    run.dataMemory.emplace_back();
    if (region.size)
      emulator.readMemory(region.memory, region.address, region.size,
                          run.dataMemory.back());
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
      // A pipeline: the messages enter its first stage and leave its last.
      const auto &stages = meStage.layout.stages;
      for (size_t s = 0; s < stages.size(); ++s) {
        StageRun stage;
        if (!stages[s].mes.empty())
          stage.me = stages[s].mes.front();
        if (!stages[s].workRings.empty())
          stage.ring = stages[s].workRings.front();
        for (unsigned pe : stages[s].pes) {
          stage.pes.push_back(meStage.layout.pes[pe]);
          stage.runs += word(3 * pe);
          stage.sent += word(3 * pe + 1);
          stage.dropped += word(3 * pe + 2);
        }
        // Every message passes every stage (the ring's gets beyond them
        // are the end markers each context takes).
        stage.messages = std::min(run.stats.rings[stage.ring].gets,
                                  run.stats.packetsReceived);
        // A swapped stage ran on its ME, then on the one that took over.
        std::vector<unsigned> mes = {stage.me};
        if (controller && control.swap.stage == s + 1 &&
            controller->current != stage.me) {
          mes.push_back(controller->current);
          stage.me = controller->current;
        }
        for (unsigned me : mes)
          if (me < run.stats.mes.size()) {
            stage.busyCycles += run.stats.mes[me].busyCycles;
            stage.instructions += run.stats.mes[me].instructions;
          }
        stage.utilization =
            run.cycles ? double(stage.busyCycles) / double(run.cycles) : 0;
        run.stages.push_back(std::move(stage));
      }
      if (!run.stages.empty()) {
        run.meRuns = run.stages.front().runs;
        run.meSent = run.stages.back().sent;
        run.handlerME = run.stages.front().me;
        run.handlerMessages.assign(machine.numMEs, 0);
        for (const StageRun &stage : run.stages)
          if (stage.me < machine.numMEs)
            run.handlerMessages[stage.me] = stage.messages;
        // A swapped stage: its old ME took what it took before the switch.
        if (controller && control.swap.stage)
          for (unsigned me = 0; me < machine.numMEs; ++me)
            if (controller->taken[me]) {
              unsigned now = run.stages[control.swap.stage - 1].me;
              run.handlerMessages[me] = controller->taken[me];
              run.handlerMessages[now] -=
                  std::min(run.handlerMessages[now], controller->taken[me]);
            }
      }
    }
  }
  if (!sender) // the tags are the fragments' numbers
    measureLatency(messages, output.lastOutput, machine, run);
  if (!hostStage) {
    run.outputs = run.fromMEs;
    return true;
  }
  std::vector<rt::TracePacket> packets(run.fromMEs.size());
  for (size_t i = 0; i < packets.size(); ++i) {
    packets[i].bytes = run.fromMEs[i];
    packets[i].wireLength = uint32_t(run.fromMEs[i].size());
  }
  std::vector<rt::PacketResult> results(packets.size());
  auto start = std::chrono::steady_clock::now();
  uint64_t ticks = hostCycleCounter();
  for (size_t i = 0; i < packets.size(); ++i)
    results[i] = hostStage->push(0, packets[i]);
  run.hostCycles = hostCycleCounter() - ticks;
  run.hostNanoseconds =
      uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now() - start)
                   .count());
  run.hostMessages = packets.size();
  for (rt::PacketResult &result : results) {
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

bool runHostChain(const std::vector<rt::Engine *> &stages,
                  const std::vector<std::vector<uint8_t>> &messages,
                  ChainRun &run, std::string &error) {
  run = ChainRun();
  std::vector<rt::TracePacket> packets(messages.size());
  for (size_t i = 0; i < packets.size(); ++i) {
    packets[i].bytes = messages[i];
    packets[i].wireLength = uint32_t(messages[i].size());
  }
  auto start = std::chrono::steady_clock::now();
  uint64_t ticks = hostCycleCounter();
  for (size_t s = 0; s < stages.size(); ++s) {
    std::vector<rt::TracePacket> next;
    for (const rt::TracePacket &packet : packets) {
      rt::PacketResult result = stages[s]->push(0, packet);
      for (rt::Output &out : result.outputs) {
        rt::TracePacket p;
        p.wireLength = uint32_t(out.bytes.size());
        p.bytes = std::move(out.bytes);
        next.push_back(std::move(p));
      }
      (s == 0 ? run.meDropped : run.hostDropped) += result.drops;
    }
    if (s == 0) {
      run.meRuns = packets.size();
      run.meSent = next.size();
    }
    packets = std::move(next);
  }
  run.hostCycles = hostCycleCounter() - ticks;
  run.hostNanoseconds =
      uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now() - start)
                   .count());
  run.hostMessages = messages.size();
  for (rt::TracePacket &packet : packets)
    run.outputs.push_back(std::move(packet.bytes));
  for (rt::Engine *stage : stages) {
    std::string failure = stage->failure();
    if (!failure.empty()) {
      error = "host stage: " + failure;
      return false;
    }
  }
  return true;
}

uint64_t hostCycleCounter() {
#if defined(__x86_64__)
  return __builtin_readcyclecounter();
#else
  return 0;
#endif
}

ResourceReport resourceReport(const ChainRun &run,
                              const me::CompiledApp &meStage,
                              const ChainControl &control,
                              const me::MachineConfig &machine) {
  ResourceReport r;
  r.cycles = run.cycles;
  r.clockMHz = run.stats.clockMHz;
  r.messagesIn = run.stats.packetsOffered;
  r.messagesOut = run.outputs.size();
  r.receiveDrops = run.stats.packetsDropped;
  r.dramUtilization =
      run.cycles ? double(run.stats.dram.busyCycles) / double(run.cycles) : 0;
  for (unsigned me = 0; me < machine.numMEs; ++me) {
    MELoad load;
    load.me = me;
    load.controlStore = machine.controlStore;
    if (me < run.codeWords.size())
      load.codeWords = run.codeWords[me];
    if (me < run.handlerMessages.size())
      load.messages = run.handlerMessages[me];
    // One receive ME, one ME per stage, then the transmit ME.
    unsigned transmitME =
        run.stages.empty() ? 2 : unsigned(run.stages.size()) + 1;
    for (size_t s = 0; s < run.stages.size(); ++s)
      if (run.stages[s].me == me)
        load.stage = unsigned(s + 1);
    if (me == 0)
      load.role = "receive";
    else if (me == transmitME)
      load.role = "transmit";
    else if (me == run.handlerME || load.stage)
      load.role = "handler";
    else if (load.codeWords)
      load.role = "spare";
    else
      load.role = "idle";
    if (me < run.stats.mes.size()) {
      const me::MEStats &st = run.stats.mes[me];
      load.busyCycles = st.busyCycles;
      load.instructions = st.instructions;
      for (uint64_t c : st.idleCycles)
        load.idleCycles += c;
    }
    load.utilization =
        run.cycles ? double(load.busyCycles) / double(run.cycles) : 0;
    r.mes.push_back(load);
  }
  static const char *names[] = {"free buffers", "transmit", "work",
                                "copy buffers"};
  for (unsigned ring = 0; ring < 16; ++ring) {
    const me::RingStats &st = run.stats.rings[ring];
    if (!st.configured)
      continue;
    QueueLoad q;
    q.ring = ring;
    q.name = ring < 4 ? names[ring] : "ring " + std::to_string(ring);
    // A pipeline's rings: each stage's work, then the transmit ring 2.
    if (!run.stages.empty() && ring < 3)
      q.name = ring == 2 ? "transmit" : ring == 1 ? "order" : q.name;
    for (size_t s = 0; s < run.stages.size(); ++s)
      if (run.stages[s].ring == ring)
        q.name = "stage " + std::to_string(s + 1) + " work";
    q.sizeWords = st.sizeWords;
    q.maxOccupancy = st.maxOccupancy;
    q.finalOccupancy = st.finalOccupancy;
    q.puts = st.puts;
    q.gets = st.gets;
    q.overflows = st.overflows;
    r.queues.push_back(q);
  }
  (void)control; // the run says what the swaps did
  if (run.swap.done || run.swap.fenceCycle) {
    const SwapReport &s = run.swap;
    r.swaps.push_back({"manual", s.oldME, s.newME, s.fenceCycle, s.startCycle,
                       s.downtimeCycles(), s.oldMessages, 0});
  }
  for (const AutoSwapReport &a : run.autoSwaps)
    r.swaps.push_back({a.toSpecialized ? "specialize" : "generic", a.swap.oldME,
                       a.swap.newME, a.swap.fenceCycle, a.swap.startCycle,
                       a.swap.downtimeCycles(), a.messagesBefore,
                       a.compileMilliseconds});
  if (run.hostMessages)
    r.hostThreads.push_back(
        {"host stage", run.hostMessages, run.hostNanoseconds, run.hostCycles});
  return r;
}

std::string toJSON(const ResourceReport &r) {
  std::ostringstream os;
  os.precision(6);
  os << "{\n  \"cycles\": " << r.cycles << ",\n  \"clock_mhz\": " << r.clockMHz
     << ",\n  \"messages_in\": " << r.messagesIn
     << ",\n  \"messages_out\": " << r.messagesOut
     << ",\n  \"receive_drops\": " << r.receiveDrops
     << ",\n  \"dram_utilization\": " << r.dramUtilization << ",\n  \"mes\": [";
  for (size_t i = 0; i < r.mes.size(); ++i) {
    const MELoad &m = r.mes[i];
    os << (i ? "," : "") << "\n    {\"me\": " << m.me << ", \"role\": \""
       << m.role << "\", \"code_words\": " << m.codeWords
       << ", \"control_store\": " << m.controlStore
       << ", \"busy_cycles\": " << m.busyCycles
       << ", \"idle_cycles\": " << m.idleCycles
       << ", \"instructions\": " << m.instructions
       << ", \"messages\": " << m.messages << ", \"stage\": " << m.stage
       << ", \"busy_cycles_per_message\": "
       << (m.messages ? double(m.busyCycles) / double(m.messages) : 0.0)
       << ", \"utilization\": " << m.utilization << "}";
  }
  os << "\n  ],\n  \"queues\": [";
  for (size_t i = 0; i < r.queues.size(); ++i) {
    const QueueLoad &q = r.queues[i];
    os << (i ? "," : "") << "\n    {\"name\": \"" << q.name
       << "\", \"ring\": " << q.ring << ", \"size_words\": " << q.sizeWords
       << ", \"max_occupancy\": " << q.maxOccupancy
       << ", \"final_occupancy\": " << q.finalOccupancy
       << ", \"puts\": " << q.puts << ", \"gets\": " << q.gets
       << ", \"overflows\": " << q.overflows << "}";
  }
  os << "\n  ],\n  \"host_threads\": [";
  for (size_t i = 0; i < r.hostThreads.size(); ++i) {
    const HostThreadLoad &h = r.hostThreads[i];
    os << (i ? "," : "") << "\n    {\"name\": \"" << h.name
       << "\", \"messages\": " << h.messages
       << ", \"nanoseconds\": " << h.nanoseconds << ", \"cycles\": " << h.cycles
       << "}";
  }
  os << "\n  ],\n  \"swaps\": [";
  for (size_t i = 0; i < r.swaps.size(); ++i) {
    const ResourceReport::Swap &w = r.swaps[i];
    os << (i ? "," : "") << "\n    {\"kind\": \"" << w.kind
       << "\", \"old_me\": " << w.oldME << ", \"new_me\": " << w.newME
       << ", \"fence_cycle\": " << w.fenceCycle
       << ", \"start_cycle\": " << w.startCycle
       << ", \"downtime_cycles\": " << w.downtimeCycles << ", \"downtime_us\": "
       << (r.clockMHz > 0 ? double(w.downtimeCycles) / r.clockMHz : 0.0)
       << ", \"messages_before\": " << w.messagesBefore
       << ", \"compile_ms\": " << w.compileMilliseconds << "}";
  }
  os << "\n  ]\n}\n";
  return os.str();
}

const char *whereName(Placement::Where where) {
  switch (where) {
  case Placement::Where::ME:
    return "me";
  case Placement::Where::Host:
    return "host";
  case Placement::Where::Refused:
    return "refused";
  }
  return "refused";
}

/// The cost model's estimate of one message on `target`: ME cycles (the
/// handlers' issue cycles plus their memory latency shared by the ME's
/// contexts, or the DRAM controller's busy cycles if more) or host ns
/// (the handlers plus the runner's cost per packet).
static bool estimate(const HandlerApp &handler, analysis::CostTarget target,
                     double &cost, std::string &error) {
  Compilation c;
  mlir::OwningOpRef<mlir::ModuleOp> module = c.load(handler);
  bool me = target == analysis::CostTarget::ME;
  if (!module || failed(driver::optimize(*module, 2, nullptr,
                                         me ? driver::OptimizeFor::ME
                                            : driver::OptimizeFor::Native))) {
    error = c.diagnostics;
    return false;
  }
  analysis::CostModel model = analysis::buildCostModel(
      driver::getApplication(*module), target, nullptr);
  double issue = 0, latency = 0;
  for (const analysis::PECost &pe : model.pes) {
    issue += pe.cost;
    latency += pe.latency;
  }
  if (me && !handler.stages.empty()) {
    // A pipeline of one NetPE per ME: its slowest stage sets the rate.
    double slowest = 0;
    for (const analysis::PECost &pe : model.pes)
      slowest = std::max(slowest,
                         pe.cost + pe.latency / std::max(1u, model.contexts));
    cost = std::max(slowest, model.dramBusy);
    return true;
  }
  if (me)
    cost = std::max(issue + latency / std::max(1u, model.contexts),
                    model.dramBusy);
  else
    cost = issue + model.packetOverhead;
  return true;
}

/// "N unit a message[ of the B the rate leaves]".
static std::string perMessage(double need, const char *unit, double budget) {
  std::ostringstream os;
  os.precision(4);
  os << need << " " << unit << " a message";
  if (budget > 0)
    os << " of the " << budget << " the rate leaves";
  return os.str();
}

Placement placeChain(const HandlerApp &handler, const PlacementRequest &request,
                     const me::MachineConfig &machine) {
  Placement p;
  std::ostringstream why;
  if (request.rateGbps > 0) {
    double perSecond =
        request.rateGbps * 1e9 / ((double(request.messageBytes) + 20) * 8);
    p.budgetCycles = machine.clockMHz * 1e6 / perSecond;
    p.budgetNanoseconds = 1e9 / perSecond;
  }
  auto fits = [](double need, double budget) {
    return budget <= 0 || need <= budget;
  };
  // The MEs first (the paper's rule: the c-cores take what they can).
  std::string meError;
  me::CompiledApp app;
  // A pipeline holds the receive ME, one ME per stage and the transmit ME.
  unsigned stageMEs =
      handler.stages.empty()
          ? request.stageMEs
          : std::max(request.stageMEs, unsigned(handler.stages.size()) + 2);
  p.mes = stageMEs;
  unsigned needed = request.busyMEs + stageMEs + (request.keepSpare ? 1 : 0);
  unsigned kept = request.keepSpare ? 1 : 0;
  if (!request.allowME) {
    why << "MEs: not asked for";
  } else if (needed > machine.numMEs) {
    unsigned used = std::min(machine.numMEs, request.busyMEs + kept);
    why << "MEs: needs " << stageMEs;
    if (!handler.stages.empty())
      why << " (receive, " << handler.stages.size()
          << " handler stages, transmit)";
    why << ", " << machine.numMEs - used << " free (of " << machine.numMEs;
    if (kept)
      why << "; 1 kept spare for hot-swaps";
    why << ")";
  } else if (!compileForME(handler, machine, app, meError)) {
    std::string first = meError.substr(0, meError.find('\n'));
    why << "MEs: it does not compile for them (" << first << ")";
  } else {
    // The handler ME, or each stage's (MEs 1..N of the layout).
    unsigned handlerMEs =
        handler.stages.empty() ? 1 : unsigned(handler.stages.size());
    for (unsigned me = 1; me <= handlerMEs; ++me)
      if (const me::CodeBlock *code = Controller::codeOf(app, me)) {
        p.meWords.push_back(uint32_t(code->words.size()));
        p.codeWords = std::max(p.codeWords, p.meWords.back());
      }
    if (!estimate(handler, analysis::CostTarget::ME, p.meCycles, meError)) {
      why << "MEs: no estimate (" << meError << ")";
    } else if (fits(p.meCycles, p.budgetCycles)) {
      p.where = Placement::Where::ME;
      p.reason =
          "fits the MEs: " + perMessage(p.meCycles, "cycles", p.budgetCycles) +
          (handler.stages.empty()
               ? std::string()
               : " on its slowest of " + std::to_string(handler.stages.size()) +
                     " ME stages") +
          "; " + std::to_string(p.codeWords) + " of " +
          std::to_string(machine.controlStore) +
          " instructions of control store";
      return p;
    } else {
      why.precision(4);
      why << "MEs: " << p.meCycles << " cycles a message, the rate leaves "
          << p.budgetCycles;
    }
  }
  std::string hostError;
  if (!request.allowHost) {
    why << "; host: not asked for";
  } else if (request.freeHostThreads == 0) {
    why << "; host: needs 1 thread, 0 free";
  } else if (!estimate(handler, analysis::CostTarget::Native, p.hostNanoseconds,
                       hostError)) {
    why << "; host: " << hostError.substr(0, hostError.find('\n'));
  } else if (fits(p.hostNanoseconds, p.budgetNanoseconds)) {
    p.where = Placement::Where::Host;
    p.reason = "on the host: " +
               perMessage(p.hostNanoseconds, "ns", p.budgetNanoseconds) + " (" +
               why.str() + ")";
    return p;
  } else {
    why.precision(4);
    why << "; host: " << p.hostNanoseconds << " ns a message, the rate leaves "
        << p.budgetNanoseconds;
  }
  p.reason = "does not fit: " + why.str();
  return p;
}

bool parameterChanges(const std::vector<Query> &queries,
                      const std::string &name, uint32_t value, uint64_t atCycle,
                      std::vector<ParamChange> &out, std::string &error) {
  size_t before = out.size();
  for (size_t pe = 0; pe < queries.size(); ++pe) {
    const std::vector<std::string> &ps = queries[pe].parameters;
    if (std::find(ps.begin(), ps.end(), name) == ps.end())
      continue;
    ParamChange change;
    change.atCycle = atCycle;
    change.pe = unsigned(pe);
    change.offset = parameterAddress(queries[pe], name);
    change.value = value;
    change.name = "$" + name;
    change.parameter = name;
    out.push_back(change);
  }
  if (out.size() == before) {
    error = "the ME stage's query has no $" + name;
    return false;
  }
  return true;
}

Specializer specializerFor(const Schema &schema,
                           std::optional<std::string> query,
                           std::vector<Subscriber> subscribers,
                           HandlerOptions options,
                           const me::MachineConfig &machine) {
  options.specialize = true;
  return
      [&schema, query = std::move(query), subscribers = std::move(subscribers),
       options, machine](const std::map<std::string, uint32_t> &parameters,
                         me::CompiledApp &out, std::string &error) {
        HandlerOptions o = options;
        o.parameters = parameters;
        HandlerApp app;
        std::vector<Query> queries;
        return emitHandlerApp(schema, query ? &*query : nullptr, subscribers, o,
                              app, queries, error) &&
               compileForME(app, machine, out, error);
      };
}

ResourceManager::ResourceManager(const me::MachineConfig &machine,
                                 unsigned hostThreads, bool keepSpare)
    : machine(machine), meOwner(machine.numMEs, 0),
      threadOwner(hostThreads, 0) {
  // The default layout's spare (SwapRequest::spareME) when the machine has
  // it, else its last ME.
  if (keepSpare && machine.numMEs > 0)
    spare = machine.numMEs > 3 ? 3 : int(machine.numMEs) - 1;
}

unsigned ResourceManager::freeMEs() const {
  unsigned n = 0;
  for (unsigned me = 0; me < meOwner.size(); ++me)
    n += meOwner[me] == 0 && int(me) != spare;
  return n;
}

unsigned ResourceManager::freeHostThreads() const {
  return unsigned(std::count(threadOwner.begin(), threadOwner.end(), 0u));
}

std::vector<uint32_t> ResourceManager::controlStoreUse() const {
  std::vector<uint32_t> words(meOwner.size(), 0);
  for (const RunningChain &c : table)
    for (size_t i = 0; i < c.meWords.size() && i + 1 < c.mes.size(); ++i)
      words[c.mes[i + 1]] = c.meWords[i];
  return words;
}

Placement ResourceManager::add(const std::string &name,
                               const HandlerApp &handler,
                               const ChainDemand &demand, unsigned *id,
                               const std::string &description) {
  for (const RunningChain &c : table)
    if (c.name == name) {
      Placement p;
      p.reason = "a chain named '" + name + "' is running";
      return p;
    }
  PlacementRequest request;
  request.rateGbps = demand.rateGbps;
  request.messageBytes = demand.messageBytes;
  request.stageMEs = demand.stageMEs;
  request.keepSpare = spare >= 0;
  request.busyMEs = machine.numMEs - freeMEs() - (spare >= 0 ? 1 : 0);
  request.freeHostThreads = freeHostThreads();
  request.allowHost = demand.side != ChainDemand::Side::ME;
  request.allowME = demand.side != ChainDemand::Side::Host;
  Placement p = placeChain(handler, request, machine);
  if (p.where == Placement::Where::Refused)
    return p;
  RunningChain c;
  c.id = nextId++;
  c.name = name;
  c.description = description;
  c.where = p.where;
  c.rateGbps = demand.rateGbps;
  std::istringstream nvapp(handler.nvapp);
  std::string line;
  while (std::getline(nvapp, line))
    c.stages += line.rfind("pe ", 0) == 0;
  c.stages = std::max(c.stages, 1u);
  if (p.where == Placement::Where::ME) {
    for (unsigned me = 0; me < meOwner.size() && c.mes.size() < p.mes; ++me)
      if (meOwner[me] == 0 && int(me) != spare) {
        meOwner[me] = c.id;
        c.mes.push_back(me);
      }
    c.codeWords = p.codeWords;
    c.meWords = p.meWords;
    c.estimate = p.meCycles;
    c.budget = p.budgetCycles;
  } else {
    for (unsigned t = 0; t < threadOwner.size(); ++t)
      if (threadOwner[t] == 0) {
        threadOwner[t] = c.id;
        c.hostThreads.push_back(t);
        break;
      }
    c.estimate = p.hostNanoseconds;
    c.budget = p.budgetNanoseconds;
  }
  c.load = c.budget > 0 ? c.estimate / c.budget : 0;
  if (id)
    *id = c.id;
  table.push_back(std::move(c));
  return p;
}

bool ResourceManager::remove(const std::string &name) {
  auto it = std::find_if(table.begin(), table.end(),
                         [&](const RunningChain &c) { return c.name == name; });
  if (it == table.end())
    return false;
  for (unsigned &owner : meOwner)
    if (owner == it->id)
      owner = 0;
  for (unsigned &owner : threadOwner)
    if (owner == it->id)
      owner = 0;
  table.erase(it);
  return true;
}

/// `s` as the inside of a JSON string.
static std::string jsonEscape(const std::string &s) {
  std::ostringstream os;
  for (char ch : s) {
    unsigned char u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\')
      os << '\\' << ch;
    else if (u < 0x20)
      os << "\\u" << std::hex << std::setw(4) << std::setfill('0')
         << unsigned(u) << std::dec << std::setfill(' ');
    else
      os << ch;
  }
  return os.str();
}

/// "0,1,2" or "-".
static std::string listOf(const std::vector<unsigned> &items) {
  std::string s;
  for (unsigned i : items)
    s += (s.empty() ? "" : ",") + std::to_string(i);
  return s.empty() ? "-" : s;
}

std::string ResourceManager::text() const {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(3);
  os << "id  name            where  MEs       threads  words  estimate    "
        "budget      load\n";
  for (const RunningChain &c : table) {
    bool me = c.where == Placement::Where::ME;
    std::string name = c.name.size() > 15 ? c.name.substr(0, 15) : c.name;
    os << std::left << std::setw(4) << c.id << std::setw(16) << name
       << std::setw(7) << whereName(c.where) << std::setw(10) << listOf(c.mes)
       << std::setw(9) << listOf(c.hostThreads) << std::setw(7) << c.codeWords;
    std::ostringstream estimate, budget;
    estimate.setf(std::ios::fixed);
    budget.setf(std::ios::fixed);
    estimate.precision(1);
    budget.precision(1);
    estimate << c.estimate << (me ? " cyc" : " ns");
    if (c.budget > 0)
      budget << c.budget << (me ? " cyc" : " ns");
    else
      budget << "-";
    os << std::setw(12) << estimate.str() << std::setw(12) << budget.str()
       << std::right << c.load << "\n";
  }
  os << "free: " << freeMEs() << " of " << machine.numMEs << " MEs";
  if (spare >= 0)
    os << " (ME " << spare << " kept spare)";
  os << ", " << freeHostThreads() << " of " << threadOwner.size()
     << " host threads\n";
  return os.str();
}

std::string ResourceManager::toJSON() const {
  std::ostringstream os;
  auto list = [&](const std::vector<unsigned> &items) {
    os << "[";
    for (size_t i = 0; i < items.size(); ++i)
      os << (i ? ", " : "") << items[i];
    os << "]";
  };
  os << "{\n  \"chains\": [";
  for (size_t i = 0; i < table.size(); ++i) {
    const RunningChain &c = table[i];
    os << (i ? "," : "") << "\n    {\"id\": " << c.id << ", \"name\": \""
       << jsonEscape(c.name) << "\", \"description\": \""
       << jsonEscape(c.description) << "\", \"stages\": " << c.stages
       << ", \"where\": \"" << whereName(c.where) << "\", \"mes\": ";
    list(c.mes);
    os << ", \"host_threads\": ";
    list(c.hostThreads);
    os << ", \"code_words\": " << c.codeWords
       << ", \"rate_gbps\": " << c.rateGbps << ", \"estimate\": " << c.estimate
       << ", \"budget\": " << c.budget << ", \"load\": " << c.load
       << ", \"me_words\": ";
    list(std::vector<unsigned>(c.meWords.begin(), c.meWords.end()));
    os << "}";
  }
  os << "\n  ],\n  \"free_mes\": " << freeMEs() << ", \"spare_me\": " << spare
     << ", \"free_host_threads\": " << freeHostThreads()
     << ", \"mes\": " << machine.numMEs
     << ", \"host_threads\": " << threadOwner.size() << "\n}\n";
  return os.str();
}

} // namespace netvm::ccore
