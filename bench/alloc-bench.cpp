//===- alloc-bench.cpp - Dynamic allocation of MEs on bursty input --------===//
//
// netvm-alloc-bench APP TRACE: the dynamic-allocation paper's experiment
// on the ME emulator. APP is compiled with its NetPEs in one stage on
// --mes replicas (netvm/Target/ME), TRACE is offered at --line-rate, and
// the run is repeated with the stage's replicas fixed (--mes of them: the
// allocation sized for the peak; and 1) and under the controller of
// netvm/emu/Allocation.h. For each run: throughput, the queueing delay of
// every packet (its transmit cycle minus its arrival cycle at the line
// rate) at the median and the 99th percentile, the ME-seconds the stage
// was allocated, and the controller's decisions and reaction time. With
// --timeline FILE, the controller's allocation over time and the packets
// waiting at each look (CSV) for bench/alloc-plot.py.
//
//===----------------------------------------------------------------------===//

#include "netvm/Driver/Driver.h"
#include "netvm/Target/ME/CodeGen.h"
#include "netvm/emu/Allocation.h"
#include "netvm/emu/Emulator.h"
#include "netvm/io/PacketIO.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

using namespace netvm;
namespace cl = llvm::cl;

static cl::opt<std::string> appFile(cl::Positional, cl::Required,
                                    cl::desc("<application>"));
static cl::opt<std::string> traceFile(cl::Positional, cl::Required,
                                      cl::desc("<trace.pcap>"));
static cl::opt<unsigned> mes("mes", cl::desc("Replicas of the stage (1-6)"),
                             cl::init(6));
static cl::opt<double> lineRate("line-rate", cl::desc("Offered rate in Gbit/s"),
                                cl::init(1.0));
static cl::opt<double> addAbove("add-above",
                                cl::desc("Packets waiting per active replica "
                                         "above which replicas are added"),
                                cl::init(2));
static cl::opt<double> removeBelow("remove-below",
                                   cl::desc("... below which one is removed"),
                                   cl::init(0.5));
static cl::opt<double> intervalUs("interval-us",
                                  cl::desc("Microseconds between looks"),
                                  cl::init(3));
static cl::opt<double>
    removeDwellUs("remove-dwell-us",
                  cl::desc("Microseconds after a change before a removal"),
                  cl::init(50));
static cl::opt<std::string> timeline("timeline",
                                     cl::desc("Write the controller's "
                                              "allocation over time (CSV)"),
                                     cl::value_desc("file"));

namespace {

struct Trace : me::PacketInput {
  std::vector<rt::TracePacket> packets;
  size_t index = 0;
  bool done = false;
  bool next(me::InputPacket &p) override {
    if (index >= packets.size()) {
      done = true;
      return false;
    }
    const rt::TracePacket &t = packets[index++];
    p.bytes = t.bytes;
    p.wireLength = t.wireLength;
    p.seconds = t.seconds;
    p.microseconds = t.microseconds;
    return true;
  }
};

struct Departures : me::PacketOutput {
  std::map<uint32_t, uint64_t> cycleOfTag;
  void transmit(const me::Transmission &t) override {
    if (t.hasTag)
      cycleOfTag[t.tag] = t.cycle;
  }
};

struct RunResult {
  double mpps = 0, p50Us = 0, p99Us = 0, meSeconds = 0;
  uint64_t sent = 0, dropped = 0, cycles = 0;
  unsigned decisions = 0;
  double reactionUs = 0;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, size_t(std::ceil(p * v.size())) - 1);
  return v[i];
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(
      argc, argv,
      "netvm-alloc-bench - fixed against dynamic allocation of MEs to a "
      "replicated stage on bursty input (bench/alloc.py runs it)\n");
  if (mes < 1 || mes > 6) {
    llvm::errs() << "netvm-alloc-bench: --mes is 1-6\n";
    return 1;
  }
  mlir::DialectRegistry registry;
  driver::registerDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  driver::DiagnosticPrinter printer(sourceMgr, context, "netvm-alloc-bench");
  driver::InputOptions in;
  in.files = {appFile};
  std::string error;
  auto input = driver::resolveInput(in, error);
  if (mlir::failed(input)) {
    llvm::errs() << "netvm-alloc-bench: " << error << "\n";
    return 1;
  }
  auto module = driver::load(context, sourceMgr, *input);
  if (!module || mlir::failed(driver::optimize(*module, 2, nullptr,
                                               driver::OptimizeFor::ME)))
    return 1;

  Trace trace;
  {
    auto reader = rt::PacketReader::open(traceFile, false, error);
    if (!reader) {
      llvm::errs() << "netvm-alloc-bench: " << error << "\n";
      return 1;
    }
    rt::TracePacket p;
    while (reader->next(p, error))
      trace.packets.push_back(p);
    if (!error.empty()) {
      llvm::errs() << "netvm-alloc-bench: " << traceFile << ": " << error
                   << "\n";
      return 1;
    }
  }
  // Arrival cycles at the line rate, as the emulator schedules them.
  me::MachineConfig machine;
  machine.maxPacketBytes = me::compiledMaxPacketBytes;
  machine.lineRateGbps = lineRate;
  machine.rbufElements = 1u << 16; // queue in the fabric rather than drop
  std::vector<uint64_t> arrival(trace.packets.size());
  uint64_t t = 0;
  for (size_t i = 0; i < trace.packets.size(); ++i) {
    arrival[i] = t;
    const rt::TracePacket &p = trace.packets[i];
    double bits =
        (double(std::max<size_t>(p.wireLength, p.bytes.size())) + 20) * 8;
    t += std::max<uint64_t>(
        1, uint64_t(std::ceil(bits * machine.clockMHz / (lineRate * 1000.0))));
  }

  me::CodeGenOptions codegen;
  codegen.machine = machine;
  codegen.dynamicReplicas = true; // the controller writes the replica word
  if (!me::parsePlacement("*" + std::to_string(mes), codegen.placement,
                          error)) {
    llvm::errs() << "netvm-alloc-bench: " << error << "\n";
    return 1;
  }
  me::CompiledApp compiled;
  if (mlir::failed(me::compileApplication(*module, codegen, compiled)))
    return 1;
  if (compiled.layout.stages.size() != 1) {
    llvm::errs() << "netvm-alloc-bench: the back end made no replicated "
                    "stage\n";
    return 1;
  }
  const me::AppLayout::Stage &stage = compiled.layout.stages[0];

  auto runOnce = [&](int fixed, RunResult &r,
                     me::AllocationController **keep) -> bool {
    me::Emulator emu(machine);
    if (!emu.load(compiled.image, error)) {
      llvm::errs() << "netvm-alloc-bench: " << error << "\n";
      return false;
    }
    trace.index = 0;
    trace.done = false;
    emu.setInput(&trace);
    Departures out;
    emu.setOutput(&out);
    me::AllocationPolicy policy;
    policy.minReplicas = 1;
    policy.maxReplicas = mes;
    policy.addAbove = addAbove;
    policy.removeBelow = removeBelow;
    policy.interval = uint64_t(intervalUs * machine.clockMHz);
    policy.removeDwell = uint64_t(removeDwellUs * machine.clockMHz);
    auto *controller = new me::AllocationController(
        policy, stage.workRings, stage.workEntryWords, stage.replicaWord,
        [&] { return trace.done; });
    if (fixed > 0) {
      uint8_t bytes[4] = {0, 0, 0, uint8_t(fixed)};
      emu.writeMemory(me::Memory::Scratch, stage.replicaWord, bytes, 4, error);
    } else {
      controller->attach(emu);
    }
    emu.run();
    const me::Stats &s = emu.stats();
    std::vector<double> delays;
    for (auto &[tag, cycle] : out.cycleOfTag)
      if (tag < arrival.size() && cycle >= arrival[tag])
        delays.push_back(double(cycle - arrival[tag]) / machine.clockMHz);
    r.cycles = s.cycles;
    r.sent = s.packetsSent;
    r.dropped = s.packetsDropped;
    r.mpps =
        s.cycles ? trace.packets.size() / (s.cycles / machine.clockMHz) : 0;
    r.p50Us = percentile(delays, 0.5);
    r.p99Us = percentile(delays, 0.99);
    uint64_t replicaCycles = fixed > 0 ? uint64_t(fixed) * s.cycles
                                       : controller->allocatedCycles(s.cycles);
    r.meSeconds = replicaCycles / (machine.clockMHz * 1e6);
    r.decisions = fixed > 0 ? 0 : controller->decisions().size() - 1;
    r.reactionUs = fixed > 0 ? 0 : controller->maxReaction() / machine.clockMHz;
    if (keep)
      *keep = controller;
    else
      delete controller;
    return true;
  };

  llvm::outs() << llvm::format(
      "%s on %u replica MEs, %zu packets at %.2f Gbit/s (offered over %.1f "
      "us)\n",
      appFile.c_str(), unsigned(mes), trace.packets.size(), double(lineRate),
      t / machine.clockMHz);
  llvm::outs() << "| allocation | Mpps | p50 delay us | p99 delay us | "
                  "ME-seconds (stage) | changes | max reaction us |\n"
                  "|---|---|---|---|---|---|---|\n";
  auto print = [&](const std::string &name, const RunResult &r) {
    llvm::outs() << llvm::format(
        "| %s | %.3f | %.1f | %.1f | %.6f | %u | %.2f |\n", name.c_str(),
        r.mpps, r.p50Us, r.p99Us, r.meSeconds, r.decisions, r.reactionUs);
  };
  RunResult peak, one, dynamic;
  me::AllocationController *controller = nullptr;
  if (!runOnce(int(mes), peak, nullptr) || !runOnce(1, one, nullptr) ||
      !runOnce(0, dynamic, &controller))
    return 1;
  print("fixed, " + std::to_string(mes) + " MEs (the peak)", peak);
  print("fixed, 1 ME", one);
  print("dynamic", dynamic);
  llvm::outs() << llvm::format(
      "controller: %u looks, at most %.1f packets waiting, rings",
      controller->looks(), controller->mostWaiting());
  for (unsigned r : stage.workRings)
    llvm::outs() << " " << r;
  llvm::outs() << ", " << stage.workEntryWords << " words an entry\n";
  llvm::outs() << llvm::format(
      "dynamic: p99 %.2fx the peak allocation's, %.1f%% fewer ME-seconds\n",
      peak.p99Us > 0 ? dynamic.p99Us / peak.p99Us : 0.0,
      peak.meSeconds > 0 ? 100 * (1 - dynamic.meSeconds / peak.meSeconds)
                         : 0.0);
  if (!timeline.empty()) {
    std::ofstream f(timeline);
    f << "cycle,us,replicas,waiting\n";
    for (const me::AllocationDecision &d : controller->decisions())
      f << d.cycle << "," << d.cycle / machine.clockMHz << "," << d.to << ","
        << d.waiting << "\n";
    f << dynamic.cycles << "," << dynamic.cycles / machine.clockMHz << ","
      << controller->decisions().back().to << ",0\n";
  }
  delete controller;
  return 0;
}
