//===- pipeline-bench.cpp - Dynamic allocation of pipeline stages ---------===//
//
// netvm-pipeline-bench: the experiment of the dynamic-allocation paper on
// the host. A receive/process/transmit application (bench/pipeline/
// rtp.nvapp: `proc` is heavy and keeps no state) runs as a three-stage
// pipeline over a bursty arrival schedule (phases of high and low load
// alternating), with the process stage on a fixed number of threads or on
// a pool moved by the runtime's controller (--dynamic). Packets are fed at
// their arrival times: whatever has arrived is handed to the runner at
// once. Reported, as one JSON object: throughput, the delay of each packet
// from its arrival to its leaving (p50, p99), the CPU time of the process
// (every thread, busy and waiting), the runner's statistics of the process
// stage (worker-seconds, reallocations and what they cost); with
// --timeline, the allocation and queue length every millisecond as CSV.
//
//===----------------------------------------------------------------------===//

#include "BenchJit.h"
#include "netvm/Driver/Driver.h"
#include "netvm/Target/Native.h"
#include "netvm/io/PacketIO.h"
#include "netvm/runtime.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sys/resource.h>
#include <thread>
#include <vector>

using namespace mlir;
using namespace netvm;
namespace cl = llvm::cl;

static cl::opt<std::string> appFile(cl::Positional, cl::Required,
                                    cl::desc("<app.nvapp>"));
static cl::opt<std::string> tracePath("r", cl::Required,
                                      cl::desc("Packets (pcap), reused in "
                                               "turn to fill the schedule"),
                                      cl::value_desc("trace.pcap"));
static cl::opt<std::string> stagesPlan("stages", cl::init("rx;proc;tx"),
                                       cl::desc("The stages (netvm-run "
                                                "--stages)"));
static cl::opt<std::string>
    dynamicPolicy("dynamic", cl::ValueOptional,
                  cl::desc("Dynamic allocation, with these settings"));
static cl::opt<double>
    highRate("high", cl::init(0),
             cl::desc("Arrivals per second in high-load phases (0: 1.5 "
                      "times what one process thread handles)"));
static cl::opt<double>
    lowRate("low", cl::init(0),
            cl::desc("Arrivals per second in low-load phases (0: 0.3 times "
                     "what one process thread handles)"));
static cl::opt<unsigned> phaseMs("phase-ms", cl::init(100),
                                 cl::desc("Length of a phase (ms)"));
static cl::opt<unsigned> phases("phases", cl::init(6),
                                cl::desc("Phases, high first"));
static cl::opt<std::string> timeline("timeline",
                                     cl::desc("Write the allocation and "
                                              "queue every ms (CSV)"),
                                     cl::value_desc("file.csv"));
static cl::opt<bool> calibrateOnly(
    "calibrate",
    cl::desc("Only measure what one process thread handles (unpaced) and "
             "print it"));
static cl::opt<std::string> calibrateStage(
    "calibrate-stage", cl::init("proc"),
    cl::desc("The stage whose one-thread rate sets the default rates"));

namespace {

uint64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec +
         u.ru_stime.tv_usec / 1e6;
}

const netvm_app_desc *compile(MLIRContext &context, const std::string &file) {
  native::CodegenOptions codegen;
  codegen.optLevel = 2;
  codegen.lowering.forwardLinks = true;
  return bench::jitFiles(context, {file}, 2, codegen, "netvm-pipeline-bench");
}

struct Run {
  const netvm_app_desc *app;
  std::vector<uint32_t> stageOf, replicas;
  uint32_t stages = 0, watched = 0; // the stage timed and sampled
};

netvm_runner *makeRunner(const Run &run, bool dynamic,
                         const netvm_dynamic_policy *policy) {
  netvm_runner_options o{};
  o.mode = NETVM_RUN_PIPELINE;
  o.threads = 1;
  o.size = sizeof o;
  o.stage_of_pe = run.stageOf.data();
  o.replicas_of_stage = run.replicas.data();
  o.dynamic = dynamic ? policy : nullptr;
  char error[512] = {0};
  netvm_runner *r = netvm_runner_create(run.app, &o, error, sizeof error);
  if (!r)
    llvm::errs() << "netvm-pipeline-bench: " << error << "\n";
  return r;
}

struct Delays {
  std::vector<uint64_t> arrival; // by sequence
  std::vector<uint64_t> left;
  std::atomic<uint64_t> outputs{0};
};

void onOutput(void *user, const netvm_event *ev) {
  auto *d = static_cast<Delays *>(user);
  if (ev->sequence < d->left.size() && !d->left[ev->sequence])
    d->left[ev->sequence] = nowNs();
  d->outputs.fetch_add(1, std::memory_order_relaxed);
}

/// `count` packets: the trace's, in turn, each a copy of its own (the
/// application writes into them).
struct Packets {
  Packets(const std::vector<std::vector<uint8_t>> &trace, size_t count)
      : copies(count), items(count) {
    for (size_t i = 0; i < count; ++i) {
      copies[i] = trace[i % trace.size()];
      items[i].data = copies[i].data();
      items[i].length = static_cast<uint32_t>(copies[i].size());
    }
  }
  std::vector<std::vector<uint8_t>> copies;
  std::vector<netvm_packet> items;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::ParseCommandLineOptions(
      argc, argv,
      "netvm-pipeline-bench - a pipeline on a bursty arrival schedule, "
      "with fixed or dynamic allocation of its stages' threads\n");
  DialectRegistry registry;
  driver::registerDialects(registry);
  MLIRContext context(registry);
  Run run;
  run.app = compile(context, appFile);
  if (!run.app)
    return 1;
  run.stageOf.resize(run.app->num_pes + 1);
  run.replicas.resize(run.app->num_pes + 1);
  char error[512] = {0};
  if (!netvm_parse_stages(run.app, stagesPlan.c_str(), run.stageOf.data(),
                          run.replicas.data(), &run.stages, error,
                          sizeof error)) {
    llvm::errs() << "netvm-pipeline-bench: " << error << "\n";
    return 1;
  }
  for (uint32_t i = 0; i < run.app->num_pes; ++i)
    if (calibrateStage == run.app->pes[i].name)
      run.watched = run.stageOf[i];
  netvm_dynamic_policy policy{};
  bool dynamic = dynamicPolicy.getNumOccurrences() > 0;
  if (dynamic && !netvm_parse_dynamic_policy(dynamicPolicy.c_str(), &policy,
                                             error, sizeof error)) {
    llvm::errs() << "netvm-pipeline-bench: " << error << "\n";
    return 1;
  }

  // The packets, reused in turn.
  std::string readError;
  auto reader = rt::PacketReader::open(tracePath, false, readError);
  if (!reader) {
    llvm::errs() << "netvm-pipeline-bench: " << readError << "\n";
    return 1;
  }
  std::vector<std::vector<uint8_t>> trace;
  rt::TracePacket packet;
  while (reader->next(packet, readError))
    trace.push_back(packet.bytes);
  if (trace.empty()) {
    llvm::errs() << "netvm-pipeline-bench: no packets in " << tracePath << "\n";
    return 1;
  }

  // Calibration: what one thread of the process stage handles, unpaced.
  double oneThread;
  {
    Run one = run;
    std::fill(one.replicas.begin(), one.replicas.end(), 1u);
    netvm_runner *r = makeRunner(one, false, nullptr);
    if (!r)
      return 1;
    netvm_runner_init(r);
    size_t n = std::max<size_t>(trace.size(), 20000);
    Packets packets(trace, n);
    uint64_t t0 = nowNs();
    netvm_runner_run(r, 0, packets.items.data(), n);
    oneThread = n / ((nowNs() - t0) / 1e9);
    netvm_runner_destroy(r);
  }
  if (calibrateOnly) {
    llvm::outs() << llvm::formatv("{{\"one_thread_pps\": {0:f0}}\n", oneThread);
    return 0;
  }
  double high = highRate > 0 ? highRate : 1.5 * oneThread;
  double low = lowRate > 0 ? lowRate : 0.3 * oneThread;

  // The schedule: arrival times of every packet, phase after phase.
  Delays d;
  for (unsigned ph = 0; ph < phases; ++ph) {
    double rate = ph % 2 ? low : high;
    uint64_t start = static_cast<uint64_t>(ph) * phaseMs * 1000000u;
    uint64_t count = static_cast<uint64_t>(rate * phaseMs / 1000.0);
    for (uint64_t k = 0; k < count; ++k)
      d.arrival.push_back(start + static_cast<uint64_t>(k * 1e9 / rate));
  }
  size_t total = d.arrival.size();
  d.left.assign(total, 0);
  Packets packets(trace, total);

  netvm_runner *r = makeRunner(run, dynamic, &policy);
  if (!r)
    return 1;
  netvm_runner_init(r);
  netvm_runner_set_output_events(r, onOutput, &d);

  // A sampler: the watched stage's threads and queue every millisecond.
  std::atomic<bool> done{false};
  struct Sample {
    double t;
    uint32_t workers;
    uint64_t queued;
  };
  std::vector<Sample> samples;
  uint64_t begin = nowNs();
  std::thread sampler([&] {
    while (!done.load()) {
      netvm_stage_stats s;
      netvm_runner_stage_stats(r, run.watched, &s);
      samples.push_back({(nowNs() - begin) / 1e6, s.workers, s.queued});
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  double cpu0 = cpuSeconds();
  begin = nowNs();
  size_t next = 0;
  while (next < total) {
    uint64_t now = nowNs() - begin;
    size_t end = next;
    while (end < total && d.arrival[end] <= now && end - next < 4096)
      ++end;
    if (end == next) {
      // Nothing has arrived: sleep off gaps longer than a sleep's
      // overshoot (about 60 us), yield the CPU in shorter ones.
      uint64_t wait = d.arrival[next] - now;
      if (wait > 80000)
        std::this_thread::sleep_for(std::chrono::nanoseconds(wait - 70000));
      else
        std::this_thread::yield();
      continue;
    }
    for (size_t i = next; i < end; ++i)
      d.arrival[i] += begin;
    netvm_runner_run(r, 0, packets.items.data() + next, end - next);
    next = end;
  }
  uint64_t finished = nowNs();
  double cpu = cpuSeconds() - cpu0;
  done = true;
  sampler.join();

  std::vector<double> delays;
  for (size_t i = 0; i < total; ++i)
    if (d.left[i])
      delays.push_back((d.left[i] - d.arrival[i]) / 1e3);
  netvm_stage_stats s;
  netvm_runner_stage_stats(r, run.watched, &s);
  netvm_controller_stats c;
  netvm_runner_controller_stats(r, &c);
  double seconds = (finished - begin) / 1e9;
  llvm::outs() << llvm::formatv(
      "{{\"stages\": \"{0}\", \"dynamic\": {1}, \"one_thread_pps\": {2:f0}, "
      "\"high_pps\": {3:f0}, \"low_pps\": {4:f0}, \"packets\": {5}, "
      "\"outputs\": {6}, \"seconds\": {7:f4}, \"throughput_pps\": {8:f0}, "
      "\"delay_p50_us\": {9:f1}, \"delay_p99_us\": {10:f1}, "
      "\"cpu_seconds\": {11:f4}, \"stage_worker_seconds\": {12:f4}, "
      "\"stage_cpu_seconds\": {13:f4}, \"adds\": {14}, \"removes\": {15}, "
      "\"reallocations\": {16}, \"realloc_mean_us\": {17:f1}, "
      "\"realloc_max_us\": {18:f1}, \"decisions\": {19}, "
      "\"controller_cpu_seconds\": {20:f4}, \"max_workers\": {21}}\n",
      stagesPlan, dynamic ? "true" : "false", oneThread, high, low, total,
      d.outputs.load(), seconds, total / seconds, percentile(delays, 0.5),
      percentile(delays, 0.99), cpu, s.worker_ns / 1e9, s.cpu_ns / 1e9, s.adds,
      s.removes, s.reallocations,
      s.reallocations ? s.realloc_ns_total / 1e3 / s.reallocations : 0.0,
      s.realloc_ns_max / 1e3, c.decisions, c.cpu_ns / 1e9, s.max_workers);
  if (!timeline.empty()) {
    std::ofstream out(timeline);
    out << "ms,workers,queued,phase\n";
    for (const Sample &x : samples)
      out << x.t << "," << x.workers << "," << x.queued << ","
          << (static_cast<unsigned>(x.t / phaseMs) % 2 ? "low" : "high")
          << "\n";
  }
  netvm_runner_destroy(r);
  return 0;
}
