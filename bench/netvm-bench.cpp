//===- netvm-bench.cpp - The paper's filters against their peers ------------===//
//
// Measures, in one process and side by side, the five filters of the NetVM
// paper (section 6.3.1) written in NetIL and run by netvm's JIT (batch entry
// and per-packet entry), against the same filters hand-written in C
// (bench/handwritten.c, clang -O2), libpcap's bpf_filter on the same tcpdump
// expressions, and netvm's reference interpreter. Before timing anything it
// checks that every peer gives every packet the same verdict, and stops
// with an error if one does not. It also measures JIT compile latency and
// the packets/s of the multi-threaded runner (run to completion with 1 and
// 2 threads, and the pipeline).
//
// Results go to standard output as Markdown tables (bench/README.md holds
// the latest ones and the targets).
//
//===----------------------------------------------------------------------===//

#include "handwritten.h"

#include "netvm/Driver/Driver.h"
#include "netvm/Runtime/Engine.h"
#include "netvm/Runtime/PacketIO.h"
#include "netvm/Target/Native.h"
#include "netvm/runtime.h"

#include "NetVM/NetVMOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <pcap/pcap.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <optional>

using namespace mlir;
using namespace netvm;
namespace cl = llvm::cl;

static cl::OptionCategory benchCategory("netvm-bench options");
static cl::opt<std::string>
    smallTrace("small",
               cl::desc("Cache-resident trace (about 64K packets), replayed "
                        "many times"),
               cl::value_desc("trace.pcap"), cl::Required,
               cl::cat(benchCategory));
static cl::opt<std::string> largeTrace(
    "large", cl::desc("Large trace (1M packets or more), replayed a few times"),
    cl::value_desc("trace.pcap"), cl::cat(benchCategory));
static cl::opt<std::string>
    filterDir("filters", cl::desc("Directory of the NetIL filters"),
              cl::value_desc("dir"), cl::Required, cl::cat(benchCategory));
static cl::opt<std::string> pipelineApp(
    "pipeline-app",
    cl::desc("A multi-NetPE application to time in pipeline mode"),
    cl::value_desc("app.nvapp"), cl::cat(benchCategory));
static cl::opt<double>
    minTime("min-time",
            cl::desc("Seconds each measurement runs at least (default 0.25)"),
            cl::init(0.25), cl::cat(benchCategory));
static cl::opt<unsigned>
    repetitions("repetitions",
                cl::desc("Timed repetitions of each measurement; the fastest "
                         "counts (default 5)"),
                cl::init(5), cl::cat(benchCategory));
static cl::opt<unsigned> compiles(
    "compiles",
    cl::desc("Compilations of each filter for the latency median (default 21)"),
    cl::init(21), cl::cat(benchCategory));
static cl::opt<bool>
    verifyOnly("verify-only",
               cl::desc("Only check that all peers agree on every packet"),
               cl::cat(benchCategory));

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// A trace in one arena, as netvm_packet descriptors.
struct Trace {
  std::string name;
  std::vector<uint8_t> arena;
  std::vector<netvm_packet> packets;
  std::vector<uint32_t> wireLengths;
  std::vector<rt::TracePacket> copies; // for the interpreter
  size_t size() const { return packets.size(); }
};

bool loadTrace(const std::string &path, Trace &trace, bool keepCopies) {
  std::string error;
  auto reader = rt::PacketReader::open(path, false, error);
  if (!reader) {
    llvm::errs() << "netvm-bench: " << error << "\n";
    return false;
  }
  trace.name = llvm::sys::path::filename(path).str();
  std::vector<size_t> offsets;
  rt::TracePacket packet;
  while (reader->next(packet, error)) {
    offsets.push_back(trace.arena.size());
    trace.arena.insert(trace.arena.end(), packet.bytes.begin(),
                       packet.bytes.end());
    netvm_packet p{};
    p.length = packet.bytes.size();
    p.seconds = packet.seconds;
    p.microseconds = packet.microseconds;
    p.wire_length = packet.wireLength;
    trace.packets.push_back(p);
    trace.wireLengths.push_back(packet.wireLength);
    if (keepCopies)
      trace.copies.push_back(packet);
  }
  if (!error.empty()) {
    llvm::errs() << "netvm-bench: " << error << "\n";
    return false;
  }
  for (size_t i = 0; i < trace.packets.size(); ++i)
    trace.packets[i].data = trace.arena.data() + offsets[i];
  return true;
}

struct Filter {
  const char *name;       // file stem in --filters
  const char *expression; // tcpdump syntax
  int (*hand)(const uint8_t *, uint32_t);
  uint64_t (*handLoop)(const netvm_packet *, size_t);
};

const Filter kFilters[] = {
    {"ip", "ip", hand_ip, hand_loop_ip},
    {"ip-src", "ip src 10.1.1.1", hand_ip_src, hand_loop_ip_src},
    {"ip-tcp", "ip and tcp", hand_ip_tcp, hand_loop_ip_tcp},
    {"four-fields",
     "ip src 10.1.1.1 and ip dst 10.2.2.2 and tcp src port 20 and tcp dst "
     "port 30",
     hand_four_fields, hand_loop_four_fields},
    {"four-hosts",
     "ip src 10.4.4.4 or ip src 10.3.3.3 or ip src 10.2.2.2 or ip src "
     "10.1.1.1",
     hand_four_hosts, hand_loop_four_hosts},
};

/// Nanoseconds per packet of `pass` (one pass over `packets` packets): the
/// fastest of --repetitions measurements of at least --min-time /
/// --repetitions seconds each.
double nsPerPacket(const std::function<void()> &pass, size_t packets) {
  pass(); // warm up caches and branch predictors
  double best = 1e30;
  double each = minTime / std::max(1u, repetitions.getValue());
  for (unsigned r = 0; r < std::max(1u, repetitions.getValue()); ++r) {
    size_t passes = 0;
    auto start = Clock::now();
    double elapsed;
    do {
      pass();
      ++passes;
      elapsed = secondsSince(start);
    } while (elapsed < each);
    best = std::min(best, elapsed * 1e9 / (double(passes) * packets));
  }
  return best;
}

/// A compiled filter and an instance of it.
struct Compiled {
  const netvm_app_desc *desc = nullptr;
  netvm_instance *vm = nullptr;
  OwningOpRef<ModuleOp> module; // -O2 IR, for the interpreter
  ~Compiled() { netvm_instance_destroy(vm); }
};

/// Load, optimize and JIT-compile `files`; the phases' times in `times`.
const netvm_app_desc *compile(MLIRContext &context,
                              llvm::ArrayRef<std::string> files,
                              OwningOpRef<ModuleOp> *keep, double *frontEnd,
                              bool forwardLinks = false) {
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  auto start = Clock::now();
  OwningOpRef<ModuleOp> module =
      driver::loadApplication(context, sourceMgr, files);
  if (!module || failed(driver::optimize(*module, 2)))
    return nullptr;
  if (frontEnd)
    *frontEnd = secondsSince(start) * 1e3;
  if (keep) // code generation lowers the module in place
    *keep = OwningOpRef<ModuleOp>(module->clone());
  native::CodegenOptions codegen;
  codegen.optLevel = 2;
  codegen.countHandlerRuns = false;
  codegen.forwardLinks = forwardLinks;
  auto desc = native::jitCompile(*module, codegen);
  if (!desc) {
    llvm::errs() << "netvm-bench: " << llvm::toString(desc.takeError())
                 << "\n";
    return nullptr;
  }
  return *desc;
}

/// Packets the JIT-compiled filter forwards, one verdict per packet.
std::vector<uint8_t> jitVerdicts(netvm_instance *vm, Trace &trace) {
  std::vector<uint8_t> verdicts(trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    uint64_t before, after, bytes;
    netvm_instance_sink_counters(vm, 0, &before, &bytes);
    netvm_instance_push_batch(vm, 0, &trace.packets[i], 1);
    netvm_instance_sink_counters(vm, 0, &after, &bytes);
    verdicts[i] = after != before;
  }
  return verdicts;
}

std::string ratio(double a, double b) {
  return llvm::formatv("{0:f2}", a / b).str();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(benchCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "netvm-bench - the NetVM paper's filters: JIT vs hand-written C vs "
      "libpcap's bpf_filter vs the interpreter\n");

  std::vector<Trace> traces(1);
  if (!loadTrace(smallTrace, traces[0], /*keepCopies=*/true))
    return 1;
  if (!largeTrace.empty()) {
    traces.emplace_back();
    if (!loadTrace(largeTrace, traces[1], false))
      return 1;
  }

  DialectRegistry registry;
  driver::registerDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);

  pcap_t *dead = pcap_open_dead(DLT_EN10MB, 65535);
  llvm::raw_ostream &os = llvm::outs();
  bool failedCheck = false;

  struct Row {
    std::string filter, trace;
    double handLoop, handCall, jitBatch, jitCall, bpf, interp;
    uint64_t accepted;
  };
  std::vector<Row> rows;
  std::map<std::string, std::vector<double>> latency; // filter -> ms
  std::map<std::string, native::CompileTimes> phases;
  std::map<std::string, double> frontEnds;

  for (const Filter &f : kFilters) {
    std::string path = filterDir + "/" + f.name + ".netil";
    Compiled c;
    c.desc = compile(context, {path}, &c.module, nullptr);
    if (!c.desc)
      return 1;
    char error[256];
    c.vm = netvm_instance_create(c.desc, error, sizeof error);
    if (!c.vm) {
      llvm::errs() << "netvm-bench: " << error << "\n";
      return 1;
    }
    netvm_instance_init(c.vm);
    struct bpf_program bpf;
    if (pcap_compile(dead, &bpf, f.expression, 1, PCAP_NETMASK_UNKNOWN) != 0) {
      llvm::errs() << "netvm-bench: libpcap rejects '" << f.expression
                   << "': " << pcap_geterr(dead) << "\n";
      return 1;
    }
    std::string engineError;
    rt::EngineOptions engineOptions;
    auto interp = rt::Engine::interpreter(driver::getApplication(*c.module),
                                          engineOptions, engineError);
    if (!interp) {
      llvm::errs() << "netvm-bench: " << engineError << "\n";
      return 1;
    }
    interp->initialize();

    for (Trace &t : traces) {
      // Every peer must give every packet the same verdict.
      std::vector<uint8_t> jit = jitVerdicts(c.vm, t);
      uint64_t accepted = 0, mismatches = 0;
      for (size_t i = 0; i < t.size(); ++i) {
        const netvm_packet &p = t.packets[i];
        bool hand = f.hand(p.data, p.length) != 0;
        bool viaBpf =
            bpf_filter(bpf.bf_insns, p.data, t.wireLengths[i], p.length) != 0;
        std::optional<bool> viaInterp;
        if (!t.copies.empty())
          viaInterp = !interp->push(0, t.copies[i]).outputs.empty();
        accepted += jit[i];
        if (hand == bool(jit[i]) && viaBpf == bool(jit[i]) &&
            (!viaInterp || *viaInterp == bool(jit[i])))
          continue;
        if (mismatches++ < 5)
          llvm::errs() << "netvm-bench: " << f.name << ": packet " << i + 1
                       << " of " << t.name << ": JIT " << int(jit[i])
                       << ", hand-written C " << hand << ", bpf_filter "
                       << viaBpf << ", interpreter "
                       << (viaInterp ? (*viaInterp ? "1" : "0") : "-") << "\n";
      }
      if (accepted != f.handLoop(t.packets.data(), t.size())) {
        llvm::errs() << "netvm-bench: " << f.name
                     << ": the hand-written loop counts differently\n";
        ++mismatches;
      }
      if (mismatches) {
        failedCheck = true;
        continue;
      }
      if (verifyOnly) {
        os << llvm::formatv("{0,-12} {1,-16} {2,8} of {3,8} packets accepted by "
                            "all peers\n",
                            f.name, t.name, accepted, t.size());
        continue;
      }

      Row row;
      row.filter = f.name;
      row.trace = t.name;
      row.accepted = accepted;
      volatile uint64_t sink = 0;
      row.handLoop = nsPerPacket(
          [&] { sink = sink + f.handLoop(t.packets.data(), t.size()); },
          t.size());
      int (*volatile handFn)(const uint8_t *, uint32_t) = f.hand;
      row.handCall = nsPerPacket(
          [&] {
            int (*fn)(const uint8_t *, uint32_t) = handFn;
            uint64_t n = 0;
            for (const netvm_packet &p : t.packets)
              n += fn(p.data, p.length);
            sink = sink + n;
          },
          t.size());
      row.jitBatch = nsPerPacket(
          [&] { netvm_instance_push_batch(c.vm, 0, t.packets.data(), t.size()); },
          t.size());
      row.jitCall = nsPerPacket(
          [&] {
            for (netvm_packet &p : t.packets)
              netvm_instance_push_batch(c.vm, 0, &p, 1);
          },
          t.size());
      row.bpf = nsPerPacket(
          [&] {
            uint64_t n = 0;
            for (size_t i = 0; i < t.size(); ++i)
              n += bpf_filter(bpf.bf_insns, t.packets[i].data,
                              t.wireLengths[i], t.packets[i].length) != 0;
            sink = sink + n;
          },
          t.size());
      row.interp = 0;
      if (!t.copies.empty()) {
        auto start = Clock::now();
        for (const rt::TracePacket &p : t.copies)
          interp->push(0, p);
        row.interp = secondsSince(start) * 1e9 / t.size();
      }
      rows.push_back(row);
    }
    pcap_freecode(&bpf);

    // Compile latency in a warm process (the filter was compiled above).
    if (!verifyOnly) {
      std::vector<double> totals, front;
      std::vector<native::CompileTimes> parts;
      for (unsigned i = 0; i < compiles; ++i) {
        auto start = Clock::now();
        double fe = 0;
        if (!compile(context, {path}, nullptr, &fe))
          return 1;
        totals.push_back(secondsSince(start) * 1e3);
        front.push_back(fe);
        parts.push_back(native::lastCompileTimes());
      }
      latency[f.name] = totals;
      frontEnds[f.name] = median(front);
      native::CompileTimes m;
      auto med = [&](auto get) {
        std::vector<double> v;
        for (auto &p : parts)
          v.push_back(get(p));
        return median(v);
      };
      m.lowering = med([](auto &p) { return p.lowering; });
      m.translation = med([](auto &p) { return p.translation; });
      m.optimization = med([](auto &p) { return p.optimization; });
      m.codegen = med([](auto &p) { return p.codegen; });
      phases[f.name] = m;
    }
  }
  pcap_close(dead);
  if (failedCheck) {
    llvm::errs() << "netvm-bench: the peers disagree; no timings\n";
    return 1;
  }
  if (verifyOnly)
    return 0;

  // Per-packet cost.
  os << "### ns per packet (lower is better)\n\n"
     << "| filter | trace | accepted | C loop | JIT batch | C call | JIT call "
        "| bpf_filter | interpreter |\n"
     << "|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const Row &r : rows)
    os << llvm::formatv("| {0} | {1} | {2} | {3:f2} | {4:f2} | {5:f2} | "
                        "{6:f2} | {7:f2} | {8} |\n",
                        r.filter, r.trace, r.accepted, r.handLoop, r.jitBatch,
                        r.handCall, r.jitCall, r.bpf,
                        r.interp ? llvm::formatv("{0:f1}", r.interp).str()
                                 : std::string("-"));
  os << "\n### Ratios against the targets\n\n"
     << "| filter | trace | JIT batch / C loop (<= 1.0) | JIT call / C call "
        "(<= 1.0) | bpf_filter / JIT call (>= 3.0 on the small trace) | "
        "interpreter / JIT call |\n"
     << "|---|---|---:|---:|---:|---:|\n";
  for (const Row &r : rows)
    os << llvm::formatv("| {0} | {1} | {2} | {3} | {4} | {5} |\n", r.filter,
                        r.trace, ratio(r.jitBatch, r.handLoop),
                        ratio(r.jitCall, r.handCall), ratio(r.bpf, r.jitCall),
                        r.interp ? ratio(r.interp, r.jitCall)
                                 : std::string("-"));

  os << "\n### JIT compile latency (ms, warm process, median of " << compiles
     << "; target: median < 5 ms)\n\n"
     << "| filter | total | NetIL to optimized netvm IR | netvm to LLVM "
        "dialect | to LLVM IR | LLVM -O2 | code generation and linking |\n"
     << "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const Filter &f : kFilters) {
    const native::CompileTimes &p = phases[f.name];
    os << llvm::formatv("| {0} | {1:f2} | {2:f2} | {3:f2} | {4:f2} | {5:f2} | "
                        "{6:f2} |\n",
                        f.name, median(latency[f.name]), frontEnds[f.name],
                        p.lowering, p.translation, p.optimization, p.codegen);
  }

  // Threads: the runner over the largest trace.
  Trace &big = traces.back();
  auto runnerPps = [&](const netvm_app_desc *desc, uint32_t mode,
                       uint32_t threads, uint32_t *used) -> double {
    netvm_runner_options options{};
    options.mode = mode;
    options.threads = threads;
    char error[256];
    netvm_runner *r = netvm_runner_create(desc, &options, error, sizeof error);
    if (!r) {
      llvm::errs() << "netvm-bench: " << error << "\n";
      return 0;
    }
    netvm_runner_init(r);
    *used = netvm_runner_threads(r);
    double best = 0;
    netvm_runner_run(r, 0, big.packets.data(), big.size()); // warm up
    for (unsigned i = 0; i < std::max(1u, repetitions.getValue()); ++i) {
      auto start = Clock::now();
      netvm_runner_run(r, 0, big.packets.data(), big.size());
      best = std::max(best, big.size() / secondsSince(start));
    }
    netvm_runner_destroy(r);
    return best;
  };
  os << "\n### Threads (" << big.name << ", " << big.size()
     << " packets in memory; packets/s, best of " << repetitions << ")\n\n"
     << "| application | mode | threads | Mpackets/s | vs 1 thread |\n"
     << "|---|---|---:|---:|---:|\n";
  {
    const netvm_app_desc *ip = compile(
        context, {filterDir + "/ip.netil"}, nullptr, nullptr);
    if (!ip)
      return 1;
    uint32_t used1 = 0, used2 = 0;
    double one = runnerPps(ip, NETVM_RUN_TO_COMPLETION, 1, &used1);
    double two = runnerPps(ip, NETVM_RUN_TO_COMPLETION, 2, &used2);
    os << llvm::formatv("| ip | run to completion | {0} | {1:f1} | 1.00 |\n",
                        used1, one / 1e6);
    os << llvm::formatv("| ip | run to completion | {0} | {1:f1} | {2} |\n",
                        used2, two / 1e6, ratio(two, one));
  }
  if (!pipelineApp.empty()) {
    const netvm_app_desc *app = compile(context, {pipelineApp.getValue()},
                                        nullptr, nullptr, /*forwardLinks=*/true);
    if (!app)
      return 1;
    std::string name = llvm::sys::path::filename(pipelineApp).str();
    uint32_t used1 = 0, used2 = 0;
    double one = runnerPps(app, NETVM_RUN_PIPELINE, 1, &used1);
    double two = runnerPps(app, NETVM_RUN_PIPELINE, 2, &used2);
    os << llvm::formatv("| {0} | pipeline | {1} | {2:f1} | 1.00 |\n", name,
                        used1, one / 1e6);
    os << llvm::formatv("| {0} | pipeline | {1} | {2:f1} | {3} |\n", name,
                        used2, two / 1e6, ratio(two, one));
  }
  return 0;
}
