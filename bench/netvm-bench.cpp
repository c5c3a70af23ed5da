//===- netvm-bench.cpp - The paper's filters against their peers
//------------===//
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
// The front-end section (--section frontends) compiles the paper's filters
// and a few everyday ones from tcpdump expressions (the pcap-filter front
// end) and from equivalent NetPFL filters, and sets them against libpcap:
// compile latency by phase against pcap_compile, ns per packet of the JIT
// code against bpf_filter and the hand-written NetIL, and the size of the
// netvm IR before and after -O2 against BPF instruction counts.
//
// The optimizer section (--section optimizer) measures what netvm's
// optimizer does (issue 5): the size of the netvm IR at -O0 and -O2 (and of
// the -O2 fast path) of every bundled application and of the front ends'
// differential filter lists, the paper's filters against their hand-written
// NetIL, NetBee's NetPFL compiler output (--netbee) against hand-written
// equivalents, and ns per packet of the JIT code at -O0 and -O2 against
// hand-written C.
//
// Results go to standard output as Markdown tables (bench/README.md holds
// the latest ones and the targets).
//
//===----------------------------------------------------------------------===//

#include "handwritten.h"

#include "BenchJit.h"
#include "netvm/Driver/Driver.h"
#include "netvm/Runtime/Engine.h"
#include "netvm/Target/Native.h"
#include "netvm/io/PacketIO.h"
#include "netvm/runtime.h"

#include "NetVM/NetVMOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <pcap/pcap.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

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
static cl::opt<std::string>
    pipelineApp("pipeline-app",
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
enum class Section { All, Filters, FrontEnds, Optimizer, Compile };
static cl::opt<Section> section(
    "section", cl::desc("What to measure (default: all)"),
    cl::values(clEnumValN(Section::All, "all", "everything"),
               clEnumValN(Section::Filters, "filters",
                          "the paper's filters in NetIL against their peers, "
                          "compile latency, threads"),
               clEnumValN(Section::FrontEnds, "frontends",
                          "the pcap-filter and NetPFL front ends against "
                          "libpcap and the hand-written NetIL"),
               clEnumValN(Section::Optimizer, "optimizer",
                          "the optimizer's effect: IR size at -O0 and -O2 of "
                          "every bundled application and front-end filter, "
                          "ns/packet at -O0 and -O2 against C"),
               clEnumValN(Section::Compile, "compile",
                          "JIT compile latency by phase and ns per packet "
                          "of the paper's filters (NetIL) and the front-end "
                          "section's tcpdump expressions, with the lean and "
                          "LLVM's standard -O2 pipeline side by side")),
    cl::init(Section::All), cl::cat(benchCategory));
static cl::opt<std::string> examplesDir(
    "examples",
    cl::desc("Optimizer section: the examples directory, whose "
             "filters/*.netil, netil/*.netil and apps/*.nvapp are measured "
             "(default: the parent of --filters)"),
    cl::value_desc("dir"), cl::cat(benchCategory));
static cl::list<std::string> pcapExpressionFiles(
    "pcap-expressions",
    cl::desc("Optimizer section: a file of tcpdump expressions, one a line, "
             "'#' to the end of a line a comment (repeatable)"),
    cl::value_desc("file"), cl::cat(benchCategory));
static cl::list<std::string> netpflFilterFiles(
    "netpfl-filters",
    cl::desc("Optimizer section: a file of NetPFL filters, one a line, lines "
             "starting with '#' comments, anything after ' ;; ' ignored "
             "(repeatable)"),
    cl::value_desc("file"), cl::cat(benchCategory));
static cl::opt<std::string> netbeeDir(
    "netbee",
    cl::desc("Optimizer section: a NetBee checkout; its samples/nbnetvm/"
             "netilsamples/{ip,ip_dst,tcp,tcp_dst}.netil are set against "
             "their hand-written equivalents in --filters"),
    cl::value_desc("dir"), cl::cat(benchCategory));
static cl::list<std::string> netbeeTraces(
    "netbee-trace",
    cl::desc("Optimizer section: another trace on which each NetBee sample "
             "and its equivalent must treat every packet the same "
             "(repeatable; the small trace always is)"),
    cl::value_desc("trace.pcap"), cl::cat(benchCategory));
static cl::list<std::string> frontEndPairs(
    "frontend-filter",
    cl::desc("Front-end section: measure this filter instead of the built-in "
             "set, written 'NAME: TCPDUMP-EXPRESSION ;; NETPFL-FILTER' "
             "(repeatable)"),
    cl::value_desc("pair"), cl::cat(benchCategory));

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}
double msSince(Clock::time_point start) { return secondsSince(start) * 1e3; }

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

/// A filter of the front-end section: a tcpdump expression and a NetPFL
/// filter that gives every packet the same verdict as libpcap does.
/// libpcap looks at fixed offsets (`ip` is "EtherType 0x800", ports are
/// those of the first header after it, a load past the capture rejects the
/// packet) where NetPFL follows the encapsulation through VLAN tags, MPLS
/// and tunnels and makes a missing field false; so the equivalents test
/// the Ethernet type and the first IPv4 (`ip%1`) or IPv6 header, as libpcap
/// does (docs/netpfl.md, "Checked against libpcap").
struct FrontEndFilter {
  std::string name;
  std::string tcpdump;
  std::string netpfl;
  /// The hand-written NetIL (a stem in --filters), if there is one.
  std::string netil;
  /// The filter as one would write it in NetPFL without thinking of
  /// libpcap: not equivalent (tunnels, VLAN, MPLS); its differences are
  /// counted, not checked.
  std::string natural;
};

const FrontEndFilter kFrontEndFilters[] = {
    {"ip", "ip", "ethernet%1.type == 0x800", "ip", "ip"},
    {"ip-src", "ip src 10.1.1.1",
     "ethernet%1.type == 0x800 and ip%1.src == 10.1.1.1", "ip-src",
     "ip.src == 10.1.1.1"},
    {"ip-tcp", "ip and tcp", "ethernet%1.type == 0x800 and ip%1.proto == 6",
     "ip-tcp", "ip and tcp"},
    {"four-fields",
     "ip src 10.1.1.1 and ip dst 10.2.2.2 and tcp src port 20 and tcp dst "
     "port 30",
     "ethernet%1.type == 0x800 and ip%1.src == 10.1.1.1 and ip%1.dst == "
     "10.2.2.2 and ip%1.proto == 6 and ip%1.foffset == 0 and tcp%1.sport == "
     "20 and tcp%1.dport == 30",
     "four-fields",
     "ip.src == 10.1.1.1 and ip.dst == 10.2.2.2 and tcp.sport == 20 and "
     "tcp.dport == 30"},
    {"four-hosts",
     "ip src 10.4.4.4 or ip src 10.3.3.3 or ip src 10.2.2.2 or ip src "
     "10.1.1.1",
     "ethernet%1.type == 0x800 and (ip%1.src == 10.4.4.4 or ip%1.src == "
     "10.3.3.3 or ip%1.src == 10.2.2.2 or ip%1.src == 10.1.1.1)",
     "four-hosts",
     "ip.src == 10.4.4.4 or ip.src == 10.3.3.3 or ip.src == 10.2.2.2 or "
     "ip.src == 10.1.1.1"},
    {"tcp-port-80", "tcp port 80",
     "(ethernet%1.type == 0x800 and ip%1.proto == 6 and ip%1.foffset == 0 and "
     "(tcp%1.sport == 80 or tcp%1.dport == 80)) or (ethernet%1.type == 0x86dd "
     "and ipv6%1.nexthdr == 6 and (tcp%1.sport == 80 or tcp%1.dport == 80))",
     "", ""},
    {"host-tcp-udp", "host 10.1.1.1 and (tcp or udp)",
     "ethernet%1.type == 0x800 and (ip%1.src == 10.1.1.1 or ip%1.dst == "
     "10.1.1.1) and (ip%1.proto == 6 or ip%1.proto == 17)",
     "", ""},
    {"syn-only", "tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn",
     "ethernet%1.type == 0x800 and ip%1.proto == 6 and ip%1.foffset == 0 and "
     "tcp%1.flags & 0x12 == 0x02",
     "", ""},
    {"vlan-ip", "vlan and ip",
     "(ethernet%1.type == 0x8100 or ethernet%1.type == 0x88a8 or "
     "ethernet%1.type "
     "== 0x9100) and vlan%1.type == 0x800",
     "", ""},
    {"ip6-https", "ip6 and tcp dst port 443",
     "ethernet%1.type == 0x86dd and ipv6%1.nexthdr == 6 and tcp%1.dport == 443",
     "", ""},
    {"icmp-arp", "icmp or arp",
     "(ethernet%1.type == 0x800 and ip%1.proto == 1) or ethernet%1.type == "
     "0x806",
     "", ""},
    // libpcap's `net` also matches ARP and RARP addresses, and `port` also
    // SCTP ports, which the built-in NetPDL database does not know: the
    // NetPFL filter rejects SCTP and RARP packets libpcap may accept (the
    // generated traces have none).
    {"net-not-ssh", "net 10.0.0.0/8 and not port 22",
     "(ethernet%1.type == 0x800 and (ip%1.src & 255.0.0.0 == 10.0.0.0 or "
     "ip%1.dst & 255.0.0.0 == 10.0.0.0) and (ip%1.foffset != 0 or "
     "(ip%1.proto != 6 and ip%1.proto != 17 and ip%1.proto != 132) or "
     "(ip%1.proto == 6 and tcp%1.sport != 22 and tcp%1.dport != 22) or "
     "(ip%1.proto == 17 and udp%1.sport != 22 and udp%1.dport != 22))) or "
     "(ethernet%1.type == 0x806 and (arp[14:4] & 255.0.0.0 == 10.0.0.0 or "
     "arp[24:4] & 255.0.0.0 == 10.0.0.0))",
     "", ""},
};

/// The front-end filters to measure: --frontend-filter's, or the built-in
/// set. False (with a message) on a malformed --frontend-filter.
bool frontEndFilters(std::vector<FrontEndFilter> &filters) {
  if (frontEndPairs.empty()) {
    filters.assign(std::begin(kFrontEndFilters), std::end(kFrontEndFilters));
    return true;
  }
  for (llvm::StringRef pair : frontEndPairs) {
    auto [name, rest] = pair.split(':');
    auto [tcpdump, netpfl] = rest.split(";;");
    if (rest.empty() || !rest.contains(";;") || name.trim().empty()) {
      llvm::errs() << "netvm-bench: --frontend-filter '" << pair
                   << "': expected 'NAME: TCPDUMP-EXPRESSION ;; "
                      "NETPFL-FILTER'\n";
      return false;
    }
    filters.push_back(
        {name.trim().str(), tcpdump.trim().str(), netpfl.trim().str(), "", ""});
  }
  return true;
}

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

/// Operations inside the handlers of a module: all of them (netvm, arith,
/// cf, constants included) and those of the netvm dialect.
struct OpCount {
  unsigned all = 0, netvm = 0;
};
OpCount countHandlerOps(ModuleOp module) {
  OpCount n;
  module.walk([&](HandlerOp handler) {
    handler.walk([&](Operation *op) {
      if (op == handler.getOperation())
        return;
      ++n.all;
      if (op->getName().getDialectNamespace() == "netvm")
        ++n.netvm;
    });
  });
  return n;
}

/// What one compilation cost, by phase (ms), and the size of its IR.
struct Phases {
  double frontEnd = 0; // the source to netvm IR
  double optimize = 0; // netvm's -O2 pipeline
  native::CompileTimes jit;
  double total = 0;
  // CPU time of the compiling thread over the whole compilation (with
  // compileLatency): what a loaded machine changes least.
  double cpu = 0;
  OpCount before, after; // with `count`: before and after -O2
};

/// CPU time of the calling thread, in ms.
double threadCpuMs() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/// Compile with LLVM's standard -O2 pipeline instead of the lean one
/// (native::CodegenOptions::standardPipeline; the compile section).
bool standardPipeline = false;
/// The entries to compile at once (native::CodegenOptions::eager): the
/// batch entries, which is what the benchmark runs (the per-call entries
/// on first use); the compile section also times everything at once.
native::JitEntries eagerEntries = native::JitEntries::Batch;

/// Optimize `module` at -O2 and JIT-compile it (without run counters);
/// keep a copy of the -O2 IR in `keep` if given. Op counts (with `count`)
/// are not part of the times.
const netvm_app_desc *optimizeAndJit(ModuleOp module, Phases &phases,
                                     OwningOpRef<ModuleOp> *keep, bool count,
                                     bool forwardLinks = false) {
  if (count)
    phases.before = countHandlerOps(module);
  auto start = Clock::now();
  if (failed(driver::optimize(module, 2)))
    return nullptr;
  phases.optimize = msSince(start);
  if (count)
    phases.after = countHandlerOps(module);
  if (keep) // code generation lowers the module in place
    *keep = OwningOpRef<ModuleOp>(module.clone());
  native::CodegenOptions codegen;
  codegen.optLevel = 2;
  codegen.lowering.countHandlerRuns = false;
  codegen.useCache = false; // compile latency: always compile
  codegen.lowering.forwardLinks = forwardLinks;
  codegen.standardPipeline = standardPipeline;
  codegen.eager = eagerEntries;
  start = Clock::now();
  auto desc = native::jitCompile(module, codegen);
  double jit = msSince(start);
  if (!desc) {
    llvm::errs() << "netvm-bench: " << llvm::toString(desc.takeError()) << "\n";
    return nullptr;
  }
  phases.jit = native::lastCompileTimes();
  phases.total = phases.frontEnd + phases.optimize + jit;
  return *desc;
}

/// Load NetIL files or an application, optimize and JIT-compile them.
const netvm_app_desc *
compileFiles(MLIRContext &context, llvm::ArrayRef<std::string> files,
             Phases &phases, OwningOpRef<ModuleOp> *keep = nullptr,
             bool count = false, bool forwardLinks = false) {
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  auto start = Clock::now();
  OwningOpRef<ModuleOp> module =
      driver::loadApplication(context, sourceMgr, files);
  phases.frontEnd = msSince(start);
  if (!module)
    return nullptr;
  return optimizeAndJit(*module, phases, keep, count, forwardLinks);
}

/// A filter through its front end (driver::load); null with the first
/// error's message in `error` if it is refused.
OwningOpRef<ModuleOp> compileFilter(MLIRContext &context, llvm::StringRef text,
                                    driver::FilterLanguage language,
                                    std::string &error) {
  driver::Input input;
  input.kind = driver::Input::Kind::Filter;
  input.filter = text.str();
  input.language = language;
  llvm::SourceMgr sourceMgr;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error && error.empty())
      error = diag.str();
    return success();
  });
  return driver::load(context, sourceMgr, input);
}

/// Compile a filter through a front end, optimize and JIT-compile it.
const netvm_app_desc *compileText(MLIRContext &context, llvm::StringRef text,
                                  driver::FilterLanguage language,
                                  Phases &phases,
                                  OwningOpRef<ModuleOp> *keep = nullptr,
                                  bool count = false) {
  std::string error;
  auto start = Clock::now();
  OwningOpRef<ModuleOp> module = compileFilter(context, text, language, error);
  phases.frontEnd = msSince(start);
  if (!module) {
    llvm::errs() << "netvm-bench: '" << text << "': " << error << "\n";
    return nullptr;
  }
  return optimizeAndJit(*module, phases, keep, count);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// The median of every phase over --compiles compilations by `compileOnce`
/// in this (warm) process; false if one fails.
bool compileLatency(
    const std::function<const netvm_app_desc *(Phases &)> &compileOnce,
    Phases &m) {
  std::vector<Phases> runs(compiles);
  for (Phases &p : runs) {
    double cpu = threadCpuMs();
    if (!compileOnce(p))
      return false;
    p.cpu = threadCpuMs() - cpu;
  }
  auto med = [&](double (*get)(const Phases &)) {
    std::vector<double> v;
    for (const Phases &p : runs)
      v.push_back(get(p));
    return median(v);
  };
  m.frontEnd = med([](const Phases &p) { return p.frontEnd; });
  m.optimize = med([](const Phases &p) { return p.optimize; });
  m.total = med([](const Phases &p) { return p.total; });
  m.cpu = med([](const Phases &p) { return p.cpu; });
  m.jit.lowering = med([](const Phases &p) { return p.jit.lowering; });
  m.jit.translation = med([](const Phases &p) { return p.jit.translation; });
  m.jit.optimization = med([](const Phases &p) { return p.jit.optimization; });
  m.jit.codegen = med([](const Phases &p) { return p.jit.codegen; });
  m.jit.linking = med([](const Phases &p) { return p.jit.linking; });
  m.jit.pipeline = runs.front().jit.pipeline;
  m.jit.deferred = runs.front().jit.deferred;
  return true;
}

/// An initialized instance of `c.desc` in `c.vm`; false with a message.
bool instantiate(Compiled &c) {
  if (!c.desc)
    return false;
  char error[256];
  c.vm = netvm_instance_create(c.desc, error, sizeof error);
  if (!c.vm) {
    llvm::errs() << "netvm-bench: " << error << "\n";
    return false;
  }
  netvm_instance_init(c.vm);
  return true;
}

/// The reference interpreter on the -O2 IR of `c`, initialized.
std::unique_ptr<rt::Engine> interpreterOf(Compiled &c) {
  std::string error;
  rt::EngineOptions options;
  auto engine = rt::Engine::interpreter(driver::getApplication(*c.module),
                                        options, error);
  if (!engine) {
    llvm::errs() << "netvm-bench: " << error << "\n";
    return nullptr;
  }
  engine->initialize();
  return engine;
}

/// libpcap's optimized program for `expression` on Ethernet.
bool compileBpf(pcap_t *dead, const std::string &expression,
                struct bpf_program &program) {
  if (pcap_compile(dead, &program, expression.c_str(), 1,
                   PCAP_NETMASK_UNKNOWN) == 0)
    return true;
  llvm::errs() << "netvm-bench: libpcap rejects '" << expression
               << "': " << pcap_geterr(dead) << "\n";
  return false;
}

/// One peer's verdict (1: accepted) on every packet of a trace.
struct Verdicts {
  std::string peer;
  std::vector<uint8_t> of;
};

/// Packets the JIT-compiled filter forwards, one verdict per packet.
/// The verdicts of the application's per-call entry (netvm_instance_push),
/// one packet at a time.
Verdicts jitCallVerdicts(const std::string &peer, netvm_instance *vm,
                         Trace &trace) {
  Verdicts v{peer, std::vector<uint8_t>(trace.size())};
  for (size_t i = 0; i < trace.size(); ++i) {
    uint64_t before, after, bytes;
    const netvm_packet &p = trace.packets[i];
    netvm_instance_sink_counters(vm, 0, &before, &bytes);
    netvm_instance_push(vm, 0, p.data, p.length, p.seconds, p.microseconds);
    netvm_instance_sink_counters(vm, 0, &after, &bytes);
    v.of[i] = after != before;
  }
  return v;
}

Verdicts jitVerdicts(const std::string &peer, netvm_instance *vm,
                     Trace &trace) {
  Verdicts v{peer, std::vector<uint8_t>(trace.size())};
  for (size_t i = 0; i < trace.size(); ++i) {
    uint64_t before, after, bytes;
    netvm_instance_sink_counters(vm, 0, &before, &bytes);
    netvm_instance_push_batch(vm, 0, &trace.packets[i], 1);
    netvm_instance_sink_counters(vm, 0, &after, &bytes);
    v.of[i] = after != before;
  }
  return v;
}

bool bpfAccepts(const struct bpf_program &bpf, const Trace &t, size_t i) {
  return bpf_filter(bpf.bf_insns, t.packets[i].data, t.wireLengths[i],
                    t.packets[i].length) != 0;
}

Verdicts bpfVerdicts(const struct bpf_program &bpf, const Trace &t) {
  Verdicts v{"bpf_filter", std::vector<uint8_t>(t.size())};
  for (size_t i = 0; i < t.size(); ++i)
    v.of[i] = bpfAccepts(bpf, t, i);
  return v;
}

/// Packets `bpf_filter` accepts in one pass (the timed loop).
uint64_t bpfPass(const struct bpf_program &bpf, const Trace &t) {
  uint64_t n = 0;
  for (size_t i = 0; i < t.size(); ++i)
    n += bpfAccepts(bpf, t, i);
  return n;
}

/// The interpreter's verdicts (the trace must keep copies).
Verdicts interpreterVerdicts(const std::string &peer, rt::Engine &engine,
                             const Trace &t) {
  Verdicts v{peer, std::vector<uint8_t>(t.size())};
  for (size_t i = 0; i < t.size(); ++i)
    v.of[i] = !engine.push(0, t.copies[i]).outputs.empty();
  return v;
}

/// Packets on which some peer's verdict differs from the first peer's; the
/// first few are reported.
uint64_t disagreements(llvm::StringRef filter, const Trace &t,
                       llvm::ArrayRef<Verdicts> peers) {
  uint64_t n = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    bool same = llvm::all_of(
        peers, [&](const Verdicts &p) { return p.of[i] == peers[0].of[i]; });
    if (same || n++ >= 5)
      continue;
    llvm::errs() << "netvm-bench: " << filter << ": packet " << i + 1 << " of "
                 << t.name << ":";
    for (const Verdicts &p : peers)
      llvm::errs() << " " << p.peer << " " << int(p.of[i]);
    llvm::errs() << "\n";
  }
  if (n)
    llvm::errs() << "netvm-bench: " << filter << ": " << n << " of " << t.size()
                 << " packets of " << t.name << " get different verdicts\n";
  return n;
}

uint64_t accepted(const Verdicts &v) {
  return std::count(v.of.begin(), v.of.end(), 1);
}

std::string ratio(double a, double b) {
  return llvm::formatv("{0:f2}", a / b).str();
}

std::string peerNames(llvm::ArrayRef<Verdicts> peers) {
  std::string names;
  for (const Verdicts &p : peers)
    names += (names.empty() ? "" : ", ") + p.peer;
  return names;
}

/// The paper's five filters in NetIL against their peers, the JIT's compile
/// latency and the runner's threads. Returns the exit status.
int measureFilters(MLIRContext &context, std::vector<Trace> &traces,
                   pcap_t *dead, llvm::raw_ostream &os) {
  bool failedCheck = false;
  struct Row {
    std::string filter, trace;
    double handLoop, handCall, jitBatch, jitCall, bpf, interp;
    uint64_t accepted;
  };
  std::vector<Row> rows;
  std::map<std::string, Phases> latency; // filter -> medians

  for (const Filter &f : kFilters) {
    std::string path = filterDir + "/" + f.name + ".netil";
    Compiled c;
    Phases phases;
    c.desc = compileFiles(context, {path}, phases, &c.module);
    if (!instantiate(c))
      return 1;
    struct bpf_program bpf;
    if (!compileBpf(dead, f.expression, bpf))
      return 1;
    auto interp = interpreterOf(c);
    if (!interp)
      return 1;

    for (Trace &t : traces) {
      // Every peer must give every packet the same verdict.
      Verdicts hand{"hand-written C", std::vector<uint8_t>(t.size())};
      for (size_t i = 0; i < t.size(); ++i)
        hand.of[i] = f.hand(t.packets[i].data, t.packets[i].length) != 0;
      std::vector<Verdicts> peers = {jitVerdicts("JIT", c.vm, t),
                                     std::move(hand), bpfVerdicts(bpf, t)};
      if (!t.copies.empty())
        peers.push_back(interpreterVerdicts("interpreter", *interp, t));
      uint64_t mismatches = disagreements(f.name, t, peers);
      uint64_t acceptedByJit = accepted(peers[0]);
      if (acceptedByJit != f.handLoop(t.packets.data(), t.size())) {
        llvm::errs() << "netvm-bench: " << f.name
                     << ": the hand-written loop counts differently\n";
        ++mismatches;
      }
      if (mismatches) {
        failedCheck = true;
        continue;
      }
      if (verifyOnly) {
        os << llvm::formatv(
            "{0,-12} {1,-16} {2,8} of {3,8} packets accepted by "
            "all peers\n",
            f.name, t.name, acceptedByJit, t.size());
        continue;
      }

      Row row;
      row.filter = f.name;
      row.trace = t.name;
      row.accepted = acceptedByJit;
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
          [&] {
            netvm_instance_push_batch(c.vm, 0, t.packets.data(), t.size());
          },
          t.size());
      row.jitCall = nsPerPacket(
          [&] {
            for (netvm_packet &p : t.packets)
              netvm_instance_push_batch(c.vm, 0, &p, 1);
          },
          t.size());
      row.bpf = nsPerPacket([&] { sink = sink + bpfPass(bpf, t); }, t.size());
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
    if (!verifyOnly &&
        !compileLatency(
            [&](Phases &p) { return compileFiles(context, {path}, p); },
            latency[f.name]))
      return 1;
  }
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
    const Phases &m = latency[f.name];
    os << llvm::formatv("| {0} | {1:f2} | {2:f2} | {3:f2} | {4:f2} | {5:f2} | "
                        "{6:f2} |\n",
                        f.name, m.total, m.frontEnd + m.optimize,
                        m.jit.lowering, m.jit.translation, m.jit.optimization,
                        m.jit.codegen);
  }

  // Threads: the runner over the largest trace.
  Trace &big = traces.back();
  auto runnerPps = [&](const netvm_app_desc *desc, bool pipelined,
                       uint32_t threads, uint32_t *used) -> double {
    rt::EngineOptions options;
    options.threads = threads;
    options.pipeline = pipelined;
    std::string error;
    std::unique_ptr<rt::Engine> engine =
        rt::Engine::native(desc, options, error);
    if (!engine) {
      llvm::errs() << "netvm-bench: " << error << "\n";
      return 0;
    }
    engine->initialize();
    *used = engine->threads();
    double best = 0;
    engine->run(0, big.packets); // warm up
    for (unsigned i = 0; i < std::max(1u, repetitions.getValue()); ++i) {
      auto start = Clock::now();
      engine->run(0, big.packets);
      best = std::max(best, big.size() / secondsSince(start));
    }
    return best;
  };
  os << "\n### Threads (" << big.name << ", " << big.size()
     << " packets in memory; packets/s, best of " << repetitions << ")\n\n"
     << "| application | mode | threads | Mpackets/s | vs 1 thread |\n"
     << "|---|---|---:|---:|---:|\n";
  {
    Phases unused;
    const netvm_app_desc *ip =
        compileFiles(context, {filterDir + "/ip.netil"}, unused);
    if (!ip)
      return 1;
    uint32_t used1 = 0, used2 = 0;
    double one = runnerPps(ip, false, 1, &used1);
    double two = runnerPps(ip, false, 2, &used2);
    os << llvm::formatv("| ip | run to completion | {0} | {1:f1} | 1.00 |\n",
                        used1, one / 1e6);
    os << llvm::formatv("| ip | run to completion | {0} | {1:f1} | {2} |\n",
                        used2, two / 1e6, ratio(two, one));
  }
  if (!pipelineApp.empty()) {
    Phases unused;
    const netvm_app_desc *app =
        compileFiles(context, {pipelineApp.getValue()}, unused, nullptr,
                     /*count=*/false, /*forwardLinks=*/true);
    if (!app)
      return 1;
    std::string name = llvm::sys::path::filename(pipelineApp).str();
    uint32_t used1 = 0, used2 = 0;
    double one = runnerPps(app, true, 1, &used1);
    double two = runnerPps(app, true, 2, &used2);
    os << llvm::formatv("| {0} | pipeline | {1} | {2:f1} | 1.00 |\n", name,
                        used1, one / 1e6);
    os << llvm::formatv("| {0} | pipeline | {1} | {2:f1} | {3} |\n", name,
                        used2, two / 1e6, ratio(two, one));
  }
  return 0;
}

/// One front-end filter compiled every way, and what it measured.
struct FrontEndRun {
  FrontEndFilter filter;
  struct bpf_program bpf{};
  Compiled pcap, pfl, netil, natural;
  Phases pcapBuild, pflBuild, netilBuild; // op counts
  Phases pcapLatency, pflLatency;         // medians
  double pcapCompileMs = 0;               // pcap_compile, median
  struct PerTrace {
    uint64_t accepted = 0, naturalAccepted = 0, naturalDiffer = 0;
    double pcapJit = 0, pflJit = 0, netilJit = 0, bpf = 0, naturalJit = 0;
  };
  std::vector<PerTrace> traces;
  ~FrontEndRun() { pcap_freecode(&bpf); }
};

/// A Markdown table cell holding code.
std::string code(llvm::StringRef text) {
  std::string cell = "`";
  for (char ch : text)
    cell += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return cell + "`";
}

/// "all (netvm)" operations.
std::string ops(const OpCount &n) {
  return llvm::formatv("{0} ({1})", n.all, n.netvm).str();
}

/// The front-end section: the pcap-filter and NetPFL front ends against
/// libpcap and the hand-written NetIL. Returns the exit status.
int measureFrontEnds(MLIRContext &context, std::vector<Trace> &traces,
                     pcap_t *dead, llvm::raw_ostream &os) {
  std::vector<FrontEndFilter> filters;
  if (!frontEndFilters(filters))
    return 1;
  using driver::FilterLanguage;
  std::vector<std::unique_ptr<FrontEndRun>> runs;
  bool failedCheck = false;

  // Compile every filter every way and check the verdicts before timing.
  for (const FrontEndFilter &f : filters) {
    auto run = std::make_unique<FrontEndRun>();
    run->filter = f;
    FrontEndRun &r = *run;
    runs.push_back(std::move(run));
    r.pcap.desc = compileText(context, f.tcpdump, FilterLanguage::PcapFilter,
                              r.pcapBuild, &r.pcap.module, /*count=*/true);
    r.pfl.desc = compileText(context, f.netpfl, FilterLanguage::NetPFL,
                             r.pflBuild, &r.pfl.module, /*count=*/true);
    if (!instantiate(r.pcap) || !instantiate(r.pfl) ||
        !compileBpf(dead, f.tcpdump, r.bpf))
      return 1;
    if (!f.netil.empty()) {
      r.netil.desc =
          compileFiles(context, {filterDir + "/" + f.netil + ".netil"},
                       r.netilBuild, nullptr, /*count=*/true);
      if (!instantiate(r.netil))
        return 1;
    }
    if (!f.natural.empty()) {
      Phases unused;
      r.natural.desc =
          compileText(context, f.natural, FilterLanguage::NetPFL, unused);
      if (!instantiate(r.natural))
        return 1;
    }
    auto pcapInterp = interpreterOf(r.pcap), pflInterp = interpreterOf(r.pfl);
    if (!pcapInterp || !pflInterp)
      return 1;

    for (Trace &t : traces) {
      std::vector<Verdicts> peers = {
          bpfVerdicts(r.bpf, t), jitVerdicts("pcap-filter JIT", r.pcap.vm, t),
          jitVerdicts("NetPFL JIT", r.pfl.vm, t)};
      if (r.netil.vm)
        peers.push_back(jitVerdicts("NetIL JIT", r.netil.vm, t));
      if (!t.copies.empty()) {
        peers.push_back(
            interpreterVerdicts("pcap-filter interpreter", *pcapInterp, t));
        peers.push_back(
            interpreterVerdicts("NetPFL interpreter", *pflInterp, t));
      }
      if (disagreements(f.name, t, peers)) {
        failedCheck = true;
        continue;
      }
      FrontEndRun::PerTrace result;
      result.accepted = accepted(peers[0]);
      if (r.natural.vm) {
        Verdicts natural = jitVerdicts("natural NetPFL", r.natural.vm, t);
        result.naturalAccepted = accepted(natural);
        for (size_t i = 0; i < t.size(); ++i)
          result.naturalDiffer += natural.of[i] != peers[0].of[i];
      }
      r.traces.push_back(result);
      if (verifyOnly)
        os << llvm::formatv("front ends: {0,-12} {1,-16} {2,8} of {3,8} "
                            "packets accepted by all peers ({4})\n",
                            f.name, t.name, result.accepted, t.size(),
                            peerNames(peers));
    }
  }
  if (failedCheck) {
    llvm::errs() << "netvm-bench: the front ends disagree with libpcap; no "
                    "timings\n";
    return 1;
  }
  if (verifyOnly)
    return 0;

  // Timings: ns per packet on every trace, then compile latency.
  for (auto &run : runs) {
    FrontEndRun &r = *run;
    for (size_t ti = 0; ti < traces.size(); ++ti) {
      Trace &t = traces[ti];
      FrontEndRun::PerTrace &result = r.traces[ti];
      auto batch = [&](netvm_instance *vm) {
        return nsPerPacket(
            [&] {
              netvm_instance_push_batch(vm, 0, t.packets.data(), t.size());
            },
            t.size());
      };
      result.pcapJit = batch(r.pcap.vm);
      result.pflJit = batch(r.pfl.vm);
      if (r.netil.vm)
        result.netilJit = batch(r.netil.vm);
      if (r.natural.vm)
        result.naturalJit = batch(r.natural.vm);
      volatile uint64_t sink = 0;
      result.bpf =
          nsPerPacket([&] { sink = sink + bpfPass(r.bpf, t); }, t.size());
    }
    const FrontEndFilter &f = r.filter;
    if (!compileLatency(
            [&](Phases &p) {
              return compileText(context, f.tcpdump, FilterLanguage::PcapFilter,
                                 p);
            },
            r.pcapLatency) ||
        !compileLatency(
            [&](Phases &p) {
              return compileText(context, f.netpfl, FilterLanguage::NetPFL, p);
            },
            r.pflLatency))
      return 1;
    std::vector<double> times;
    for (unsigned i = 0; i < compiles; ++i) {
      struct bpf_program program;
      auto start = Clock::now();
      if (!compileBpf(dead, f.tcpdump, program))
        return 1;
      times.push_back(msSince(start));
      pcap_freecode(&program);
    }
    r.pcapCompileMs = median(times);
  }

  os << "\n## Front ends\n\n"
     << "### The filters (the NetPFL filters give every packet libpcap's "
        "verdict)\n\n"
     << "| filter | tcpdump expression | NetPFL | hand-written NetIL |\n"
     << "|---|---|---|---|\n";
  for (auto &r : runs)
    os << llvm::formatv("| {0} | {1} | {2} | {3} |\n", r->filter.name,
                        code(r->filter.tcpdump), code(r->filter.netpfl),
                        r->filter.netil.empty()
                            ? std::string("-")
                            : "filters/" + r->filter.netil + ".netil");

  os << "\n### Front ends: ns per packet (JIT batch entry; lower is better; "
        "target: bpf_filter / JIT >= 3 on the small trace)\n\n"
     << "| filter | trace | accepted | pcap-filter JIT | NetPFL JIT | NetIL "
        "JIT | bpf_filter | bpf_filter / pcap-filter JIT | bpf_filter / "
        "NetPFL JIT |\n"
     << "|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (auto &r : runs)
    for (size_t ti = 0; ti < traces.size(); ++ti) {
      const FrontEndRun::PerTrace &p = r->traces[ti];
      os << llvm::formatv(
          "| {0} | {1} | {2} | {3:f2} | {4:f2} | {5} | {6:f2} | {7} | {8} |\n",
          r->filter.name, traces[ti].name, p.accepted, p.pcapJit, p.pflJit,
          r->netil.vm ? llvm::formatv("{0:f2}", p.netilJit).str()
                      : std::string("-"),
          p.bpf, ratio(p.bpf, p.pcapJit), ratio(p.bpf, p.pflJit));
    }

  os << "\n### Front ends: compile latency (ms, warm process, median of "
     << compiles << "; target: total < 5 ms)\n\n"
     << "| filter | front end | to netvm IR | netvm -O2 | to LLVM IR | LLVM "
        "-O2 | code generation and linking | total | pcap_compile | total / "
        "pcap_compile |\n"
     << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (auto &r : runs)
    for (auto [language, m] : {std::pair<const char *, const Phases *>{
                                   "pcap-filter", &r->pcapLatency},
                               {"NetPFL", &r->pflLatency}})
      os << llvm::formatv("| {0} | {1} | {2:f2} | {3:f2} | {4:f2} | {5:f2} | "
                          "{6:f2} | {7:f2} | {8:f3} | {9:f0} |\n",
                          r->filter.name, language, m->frontEnd, m->optimize,
                          m->jit.lowering + m->jit.translation,
                          m->jit.optimization, m->jit.codegen, m->total,
                          r->pcapCompileMs, m->total / r->pcapCompileMs);

  os << "\n### Front ends: code size (operations inside handlers, all "
        "dialects (netvm dialect only); target: -O2 <= 1.2x the "
        "hand-written NetIL's)\n\n"
     << "| filter | BPF instructions | pcap-filter | pcap-filter -O2 | "
        "NetPFL | NetPFL -O2 | NetIL | NetIL -O2 | pcap-filter -O2 / NetIL "
        "-O2 | NetPFL -O2 / NetIL -O2 |\n"
     << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (auto &r : runs) {
    bool netil = r->netil.vm != nullptr;
    auto versus = [&](const Phases &p) {
      return netil ? ratio(p.after.all, r->netilBuild.after.all)
                   : std::string("-");
    };
    os << llvm::formatv(
        "| {0} | {1} | {2} | {3} | {4} | {5} | {6} | {7} | {8} | {9} |\n",
        r->filter.name, r->bpf.bf_len, ops(r->pcapBuild.before),
        ops(r->pcapBuild.after), ops(r->pflBuild.before),
        ops(r->pflBuild.after),
        netil ? ops(r->netilBuild.before) : std::string("-"),
        netil ? ops(r->netilBuild.after) : std::string("-"),
        versus(r->pcapBuild), versus(r->pflBuild));
  }

  bool anyNatural = llvm::any_of(runs, [](auto &r) { return r->natural.vm; });
  if (anyNatural) {
    os << "\n### NetPFL as one would write it (not libpcap's semantics: "
          "tunnels, VLAN tags, MPLS, later headers)\n\n"
       << "| filter | NetPFL | trace | accepted | libpcap accepts | packets "
          "differing | JIT batch ns/packet |\n"
       << "|---|---|---|---:|---:|---:|---:|\n";
    for (auto &r : runs) {
      if (!r->natural.vm)
        continue;
      for (size_t ti = 0; ti < traces.size(); ++ti) {
        const FrontEndRun::PerTrace &p = r->traces[ti];
        os << llvm::formatv("| {0} | {1} | {2} | {3} | {4} | {5} | {6:f2} |\n",
                            r->filter.name, code(r->filter.natural),
                            traces[ti].name, p.naturalAccepted, p.accepted,
                            p.naturalDiffer, p.naturalJit);
      }
    }
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// The optimizer section
//===----------------------------------------------------------------------===//

/// The size of the netvm IR inside handlers: every operation of every
/// dialect (netvm, arith, cf) except `arith.constant` (constants are
/// operands, and -O2 hoists them to the entry block) and the handler itself.
///
/// At -O2, netvm-version-packet-checks versions push handlers: the entry
/// block becomes `cf.cond_br (pkt_len >= N) weights([1000, 1]), ^fast,
/// ^checked`, with ^fast a copy of the handler without its constant-offset
/// packet checks. `fast` counts what a packet long enough for the test
/// runs: the entry block (the test) and the blocks the fast successor
/// reaches; for a handler that is not versioned, all of it.
struct IRSize {
  unsigned total = 0, fast = 0;
  unsigned handlers = 0, versioned = 0;
};

bool countedOp(Operation *op) { return !isa<arith::ConstantOp>(op); }

unsigned countedOps(Block &block) {
  unsigned n = 0;
  for (Operation &op : block)
    op.walk([&](Operation *nested) { n += countedOp(nested); });
  return n;
}

/// The fast successor of the version test that starts `handler`, or null.
Block *versionedFastPath(HandlerOp handler) {
  Region &body = handler.getBody();
  if (body.empty() || body.front().empty())
    return nullptr;
  auto branch = dyn_cast<cf::CondBranchOp>(body.front().back());
  if (!branch)
    return nullptr;
  std::optional<ArrayRef<int32_t>> weights = branch.getBranchWeights();
  if (!weights || weights->size() != 2 || (*weights)[0] <= (*weights)[1])
    return nullptr;
  auto test = branch.getCondition().getDefiningOp<arith::CmpIOp>();
  if (!test || test.getPredicate() != arith::CmpIPredicate::uge ||
      !test.getLhs().getDefiningOp<PacketLengthOp>())
    return nullptr;
  return branch.getTrueDest();
}

/// The size of the handlers of `module` (push handlers only with
/// `pushOnly`).
IRSize irSize(ModuleOp module, bool pushOnly = false) {
  IRSize size;
  module.walk([&](HandlerOp handler) {
    if (pushOnly && handler.getKind() != HandlerKind::Push)
      return;
    ++size.handlers;
    unsigned whole = 0;
    for (Block &block : handler.getBody())
      whole += countedOps(block);
    size.total += whole;
    Block *fast = versionedFastPath(handler);
    if (!fast) {
      size.fast += whole;
      return;
    }
    ++size.versioned;
    Block *entry = &handler.getBody().front();
    llvm::SmallPtrSet<Block *, 32> seen = {entry};
    SmallVector<Block *> work = {fast};
    unsigned path = countedOps(*entry);
    while (!work.empty()) {
      Block *block = work.pop_back_val();
      if (!seen.insert(block).second)
        continue;
      path += countedOps(*block);
      for (Block *next : block->getSuccessors())
        work.push_back(next);
    }
    size.fast += path;
  });
  return size;
}

/// The instructions of the `.push` segment of a NetIL file: lines that are
/// not empty, comments, directives, `equ` definitions, labels or the case
/// lines of a `switch` table (an instruction after a label on the same line
/// counts). `push` of a constant is an instruction; `pushes` counts those
/// (`push` and `push2`).
struct NetILCount {
  unsigned instructions = 0, pushes = 0;
};

/// None if the file cannot be read or has no `.push` segment.
std::optional<NetILCount> netilPushInstructions(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return std::nullopt;
  bool inPush = false, sawPush = false, maybeDefault = false;
  unsigned cases = 0;
  NetILCount n;
  auto isIdentChar = [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '.' || c == '$';
  };
  SmallVector<StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (StringRef line : lines) {
    line = line.split(';').first.trim();
    if (line.empty())
      continue;
    StringRef first = line.take_until([](char c) { return llvm::isSpace(c); });
    if (!inPush) {
      if (first.equals_insensitive("segment") &&
          line.drop_front(first.size()).trim().equals_insensitive(".push"))
        inPush = sawPush = true;
      continue;
    }
    if (line.equals_insensitive("ends")) {
      inPush = false;
      continue;
    }
    if (cases) { // a case of a switch table
      if (--cases == 0)
        maybeDefault = true;
      continue;
    }
    if (maybeDefault) {
      maybeDefault = false;
      if (line.starts_with_insensitive("default") &&
          line.drop_front(7).ltrim().starts_with(":"))
        continue;
    }
    // Labels, each possibly followed by an instruction.
    while (!line.empty() && (llvm::isAlpha(line[0]) || line[0] == '_')) {
      StringRef name = line.take_while(isIdentChar);
      StringRef rest = line.drop_front(name.size()).ltrim();
      if (!rest.starts_with(":"))
        break;
      line = rest.drop_front().trim();
    }
    if (line.empty() || line.starts_with("."))
      continue;
    first = line.take_until([](char c) { return llvm::isSpace(c); });
    StringRef second =
        line.drop_front(first.size()).trim().take_until([](char c) {
          return llvm::isSpace(c);
        });
    if (second.equals_insensitive("equ"))
      continue;
    ++n.instructions;
    if (first.equals_insensitive("push") || first.equals_insensitive("push2"))
      ++n.pushes;
    if (first.equals_insensitive("switch")) {
      unsigned count = 0;
      second.take_while(llvm::isDigit).getAsInteger(10, count);
      cases = count;
      maybeDefault = count == 0;
    }
  }
  if (!sawPush)
    return std::nullopt;
  return n;
}

/// An application or filter, at -O0 and -O2.
struct Sized {
  std::string name;
  IRSize o0, o2;
  double ratio() const { return double(o2.fast) / std::max(1u, o0.total); }
};

/// Size `module` at -O0 (safety passes only) and -O2; false if a pipeline
/// fails.
bool sizeAtLevels(ModuleOp module, Sized &sized, bool pushOnly = false) {
  OwningOpRef<ModuleOp> o0(module.clone());
  if (failed(driver::optimize(*o0, 0)) || failed(driver::optimize(module, 2)))
    return false;
  sized.o0 = irSize(*o0, pushOnly);
  sized.o2 = irSize(module, pushOnly);
  return true;
}

/// Load NetIL files or an application description (errors, and warnings
/// unless `quiet`, to stderr).
OwningOpRef<ModuleOp> loadFiles(MLIRContext &context,
                                llvm::ArrayRef<std::string> files,
                                bool quiet = false) {
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  ScopedDiagnosticHandler dropWarnings(&context, [&](Diagnostic &d) {
    return success(quiet && d.getSeverity() != DiagnosticSeverity::Error);
  });
  return driver::loadApplication(context, sourceMgr, files);
}

/// A front-end filter list: tcpdump expressions or NetPFL filters.
struct FilterList {
  std::string name;
  driver::FilterLanguage language;
  std::vector<std::string> filters;
};

bool readFilterList(const std::string &path, driver::FilterLanguage language,
                    FilterList &list) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    llvm::errs() << "netvm-bench: cannot read " << path << "\n";
    return false;
  }
  list.name = llvm::sys::path::filename(path).str();
  list.language = language;
  SmallVector<StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (StringRef line : lines) {
    if (language == driver::FilterLanguage::PcapFilter)
      line = line.split('#').first; // as with tcpdump -F
    else if (line.trim().starts_with("#"))
      continue;
    else
      line = line.split(" ;; ").first;
    line = line.trim();
    if (!line.empty())
      list.filters.push_back(line.str());
  }
  return true;
}

const char *languageName(driver::FilterLanguage language) {
  return language == driver::FilterLanguage::PcapFilter ? "pcap-filter"
                                                        : "NetPFL";
}

std::string shortened(llvm::StringRef text, size_t max = 100) {
  if (text.size() <= max)
    return code(text);
  return code(text.take_front(max).rtrim()) + " …";
}

/// The median of `v`, the mean of the middle two for an even count (0 if
/// empty).
double evenMedian(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

/// Median, mean, minimum and maximum of the -O2 fast path / -O0 ratios.
struct RatioStats {
  double median = 0, mean = 0, min = 0, max = 0;
};
RatioStats ratioStats(llvm::ArrayRef<const Sized *> sized) {
  std::vector<double> r;
  for (const Sized *s : sized)
    r.push_back(s->ratio());
  RatioStats st;
  if (r.empty())
    return st;
  std::sort(r.begin(), r.end());
  st.median = evenMedian(r);
  for (double x : r)
    st.mean += x;
  st.mean /= r.size();
  st.min = r.front();
  st.max = r.back();
  return st;
}

/// The JIT code of NetIL files at netvm level `netvmLevel` and LLVM level
/// `llvmLevel` (without run counters).
const netvm_app_desc *jitAt(MLIRContext &context, const std::string &path,
                            unsigned netvmLevel, unsigned llvmLevel) {
  native::CodegenOptions codegen;
  codegen.optLevel = llvmLevel;
  codegen.lowering.countHandlerRuns = false;
  codegen.useCache = false; // compile latency: always compile
  return bench::jitFiles(context, {path}, netvmLevel, codegen, "netvm-bench");
}

/// What the interpreter does with one packet: outputs (sink of each) and
/// exception kinds.
std::string outcome(const rt::PacketResult &result) {
  std::string s;
  for (const rt::Output &o : result.outputs)
    s += "sink " + std::to_string(o.sink) + ";";
  for (const rt::ExceptionReport &e : result.exceptions)
    s += std::string("exception ") + e.kindName() + ";";
  return s.empty() ? "nothing" : s;
}

/// NetBee's samples and their hand-written equivalents.
struct NetBeeSample {
  const char *sample;     // samples/nbnetvm/netilsamples/<sample>.netil
  const char *equivalent; // a stem in --filters
};
const NetBeeSample kNetBeeSamples[] = {
    {"ip", "ip"},
    {"ip_dst", "netbee-ip-dst"},
    {"tcp", "netbee-tcp"},
    {"tcp_dst", "netbee-tcp-dst"},
};

/// The filter a NetBee sample was compiled from (its "; Code for filter:"
/// comment), or empty.
std::string netbeeFilterOf(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return "";
  StringRef text = (*buffer)->getBuffer();
  size_t at = text.find("Code for filter: \"");
  if (at == StringRef::npos)
    return "";
  text = text.drop_front(at + strlen("Code for filter: \""));
  return text.take_until([](char c) { return c == '"' || c == '\n'; }).str();
}

/// Packets on which the interpreter, at -O0, gives `a` and `b` different
/// outcomes (outputs or exceptions): every packet of `packets`, and each
/// also with 130.192.16.135 (the address ip_dst looks for) written as the
/// destination of the first and of the second 20-byte IPv4 header after
/// Ethernet (offsets 30 and 50), so that the comparison reaches the
/// samples' accepting paths and their IP-in-IP loops.
bool sameOutcomes(MLIRContext &context, const std::string &name,
                  const std::string &a, const std::string &b,
                  llvm::ArrayRef<const std::vector<rt::TracePacket> *> sets,
                  uint64_t &compared, uint64_t &accepted) {
  OwningOpRef<ModuleOp> ma = loadFiles(context, {a}, /*quiet=*/true),
                        mb = loadFiles(context, {b});
  if (!ma || !mb || failed(driver::optimize(*ma, 0)) ||
      failed(driver::optimize(*mb, 0)))
    return false;
  std::string error;
  rt::EngineOptions options;
  auto ea =
      rt::Engine::interpreter(driver::getApplication(*ma), options, error);
  auto eb =
      ea ? rt::Engine::interpreter(driver::getApplication(*mb), options, error)
         : nullptr;
  if (!ea || !eb) {
    llvm::errs() << "netvm-bench: " << error << "\n";
    return false;
  }
  ea->initialize();
  eb->initialize();
  uint64_t differ = 0;
  const uint8_t target[4] = {130, 192, 16, 135};
  for (const std::vector<rt::TracePacket> *set : sets)
    for (const rt::TracePacket &original : *set)
      for (size_t at : {size_t(0), size_t(30), size_t(50)}) {
        rt::TracePacket p = original;
        if (at) {
          if (p.bytes.size() < at + 4)
            continue;
          std::memcpy(p.bytes.data() + at, target, 4);
        }
        std::string oa = outcome(ea->push(0, p)), ob = outcome(eb->push(0, p));
        ++compared;
        accepted += oa.find("sink") != std::string::npos;
        if (oa != ob && differ++ < 5)
          llvm::errs() << "netvm-bench: " << name << ": a packet of "
                       << p.bytes.size() << " bytes: " << oa << " against "
                       << ob << "\n";
      }
  if (differ)
    llvm::errs() << "netvm-bench: " << name << ": " << differ << " of "
                 << compared << " packets treated differently\n";
  return differ == 0;
}

/// The optimizer's effect (issue 5): the size of the netvm IR at -O0 and
/// -O2 of every bundled application and front-end filter, against the
/// hand-written NetIL and NetBee's NetPFL compiler output, and ns per packet
/// of the paper's filters at -O0 and -O2 against hand-written C. Returns
/// the exit status.
int measureOptimizer(MLIRContext &context, std::vector<Trace> &traces,
                     pcap_t *dead, llvm::raw_ostream &os) {
  std::string examples = examplesDir;
  if (examples.empty())
    examples =
        llvm::sys::path::parent_path(llvm::StringRef(filterDir).rtrim('/'))
            .str();

  // JIT code at -O0 and -O2 must give every packet the C filter's verdict
  // before anything is timed.
  struct Level {
    const char *name;
    unsigned netvm, llvm;
  };
  constexpr size_t numLevels = 3;
  const Level levels[numLevels] = {{"netvm -O0, LLVM -O0", 0, 0},
                                   {"netvm -O0, LLVM -O2", 0, 2},
                                   {"netvm -O2, LLVM -O2", 2, 2}};
  struct TimeRow {
    std::string filter, trace;
    uint64_t accepted;
    double jit[numLevels], handLoop;
  };
  std::vector<TimeRow> timeRows;
  bool failedCheck = false;
  for (const Filter &f : kFilters) {
    std::string path = filterDir + "/" + f.name + ".netil";
    std::vector<std::unique_ptr<Compiled>> jits;
    for (const Level &level : levels) {
      auto c = std::make_unique<Compiled>();
      c->desc = jitAt(context, path, level.netvm, level.llvm);
      if (!instantiate(*c))
        return 1;
      jits.push_back(std::move(c));
    }
    for (Trace &t : traces) {
      Verdicts hand{"hand-written C", std::vector<uint8_t>(t.size())};
      for (size_t i = 0; i < t.size(); ++i)
        hand.of[i] = f.hand(t.packets[i].data, t.packets[i].length) != 0;
      std::vector<Verdicts> peers = {std::move(hand)};
      for (size_t l = 0; l < numLevels; ++l)
        peers.push_back(
            jitVerdicts(std::string("JIT ") + levels[l].name, jits[l]->vm, t));
      if (disagreements(f.name, t, peers)) {
        failedCheck = true;
        continue;
      }
      if (verifyOnly) {
        os << llvm::formatv("optimizer: {0,-12} {1,-16} {2,8} of {3,8} "
                            "packets accepted by C and the JIT at -O0 and "
                            "-O2\n",
                            f.name, t.name, accepted(peers[0]), t.size());
        continue;
      }
      TimeRow row;
      row.filter = f.name;
      row.trace = t.name;
      row.accepted = accepted(peers[0]);
      for (size_t l = 0; l < numLevels; ++l) {
        netvm_instance *vm = jits[l]->vm;
        row.jit[l] = nsPerPacket(
            [&] {
              netvm_instance_push_batch(vm, 0, t.packets.data(), t.size());
            },
            t.size());
      }
      volatile uint64_t sink = 0;
      row.handLoop = nsPerPacket(
          [&] { sink = sink + f.handLoop(t.packets.data(), t.size()); },
          t.size());
      timeRows.push_back(row);
    }
  }

  // NetBee's samples: each must treat every packet as its hand-written
  // equivalent does.
  struct NetBeeRow {
    std::string sample, filter, equivalent;
    std::optional<NetILCount> sampleInsns, equivalentInsns;
    Sized sampleSize, equivalentSize;
    uint64_t compared = 0, accepted = 0;
  };
  std::vector<NetBeeRow> netbee;
  if (!netbeeDir.empty()) {
    std::vector<std::vector<rt::TracePacket>> extra;
    std::vector<const std::vector<rt::TracePacket> *> sets = {
        &traces[0].copies};
    for (const std::string &path : netbeeTraces) {
      Trace t;
      if (!loadTrace(path, t, /*keepCopies=*/true))
        return 1;
      extra.push_back(std::move(t.copies));
    }
    for (auto &e : extra)
      sets.push_back(&e);
    for (const NetBeeSample &s : kNetBeeSamples) {
      NetBeeRow row;
      row.sample = s.sample;
      row.equivalent = s.equivalent;
      std::string samplePath =
          netbeeDir + "/samples/nbnetvm/netilsamples/" + s.sample + ".netil";
      std::string equivalentPath = filterDir + "/" + s.equivalent + ".netil";
      row.filter = netbeeFilterOf(samplePath);
      row.sampleInsns = netilPushInstructions(samplePath);
      row.equivalentInsns = netilPushInstructions(equivalentPath);
      // NetBee's samples end their .init and .pull segments with a value
      // left on the stack (a warning).
      OwningOpRef<ModuleOp> sm = loadFiles(context, {samplePath}, true),
                            em = loadFiles(context, {equivalentPath});
      if (!sm || !em || !sizeAtLevels(*sm, row.sampleSize, /*pushOnly=*/true) ||
          !sizeAtLevels(*em, row.equivalentSize, /*pushOnly=*/true))
        return 1;
      if (!sameOutcomes(context, std::string("NetBee ") + s.sample, samplePath,
                        equivalentPath, sets, row.compared, row.accepted)) {
        failedCheck = true;
        continue;
      }
      if (verifyOnly)
        os << llvm::formatv("optimizer: NetBee {0,-8} and {1}.netil: the same "
                            "outcome on {2} packets ({3} forwarded)\n",
                            s.sample, s.equivalent, row.compared, row.accepted);
      netbee.push_back(row);
    }
  }
  if (failedCheck) {
    llvm::errs() << "netvm-bench: the optimizer section's peers disagree; no "
                    "figures\n";
    return 1;
  }
  if (verifyOnly)
    return 0;

  // Sizes: the bundled applications.
  std::vector<Sized> apps;
  for (const char *pattern : {"filters", "netil", "apps"}) {
    std::string dir = examples + "/" + pattern;
    std::vector<std::string> files;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
         it.increment(ec)) {
      StringRef ext = llvm::sys::path::extension(it->path());
      if (ext == (StringRef(pattern) == "apps" ? ".nvapp" : ".netil"))
        files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const std::string &file : files) {
      Sized s;
      s.name =
          std::string(pattern) + "/" + llvm::sys::path::filename(file).str();
      OwningOpRef<ModuleOp> module = loadFiles(context, {file});
      if (!module || !sizeAtLevels(*module, s)) {
        llvm::errs() << "netvm-bench: cannot compile " << file << "\n";
        return 1;
      }
      apps.push_back(s);
    }
  }

  // The paper's filters against their hand-written NetIL.
  struct PaperRow {
    std::string filter;
    NetILCount insns;
    Sized size;
  };
  std::vector<PaperRow> paper;
  for (const Filter &f : kFilters) {
    std::string path = filterDir + "/" + f.name + ".netil";
    PaperRow row;
    row.filter = f.name;
    std::optional<NetILCount> insns = netilPushInstructions(path);
    OwningOpRef<ModuleOp> module = loadFiles(context, {path});
    if (!insns || !module ||
        !sizeAtLevels(*module, row.size, /*pushOnly=*/true)) {
      llvm::errs() << "netvm-bench: cannot compile " << path << "\n";
      return 1;
    }
    row.insns = *insns;
    paper.push_back(row);
  }

  // The front ends' filter lists.
  std::vector<FilterList> lists;
  for (const std::string &path : pcapExpressionFiles) {
    lists.emplace_back();
    if (!readFilterList(path, driver::FilterLanguage::PcapFilter, lists.back()))
      return 1;
  }
  for (const std::string &path : netpflFilterFiles) {
    lists.emplace_back();
    if (!readFilterList(path, driver::FilterLanguage::NetPFL, lists.back()))
      return 1;
  }
  struct ListResult {
    const FilterList *list;
    std::vector<Sized> sized;
    unsigned failed = 0;
    unsigned libpcapRefuses = 0; // of the failed tcpdump expressions
  };
  std::vector<ListResult> results;
  for (const FilterList &list : lists) {
    ListResult r{&list, {}, 0, 0};
    for (const std::string &text : list.filters) {
      std::string error;
      OwningOpRef<ModuleOp> module =
          compileFilter(context, text, list.language, error);
      Sized s;
      s.name = text;
      if (!module || !sizeAtLevels(*module, s)) {
        struct bpf_program program;
        if (list.language == driver::FilterLanguage::PcapFilter) {
          if (pcap_compile(dead, &program, text.c_str(), 1,
                           PCAP_NETMASK_UNKNOWN) == 0)
            pcap_freecode(&program);
          else
            ++r.libpcapRefuses;
        }
        if (r.failed++ < 3)
          llvm::errs() << "netvm-bench: " << list.name << ": '" << text
                       << "' does not compile: " << error << "\n";
        continue;
      }
      r.sized.push_back(s);
    }
    results.push_back(std::move(r));
  }

  // The tables.
  os << "\n## Optimizer\n\n"
     << "Size: operations inside handlers in the netvm IR, every dialect "
        "(netvm, arith, cf) except `arith.constant`. -O0: after the safety "
        "passes (bounds checks, watchdogs); -O2: the default pipeline. -O2 "
        "versions push handlers (a length test, then a copy without the "
        "constant-offset packet checks, or the checked original): *fast "
        "path* counts the length test and what its fast successor reaches "
        "(the whole handler when it is not versioned).\n";

  os << "\n### Optimizer: bundled applications (all handlers)\n\n"
     << "| application | handlers (versioned at -O2) | -O0 | -O2 | -O2 fast "
        "path | -O2 / -O0 | fast path / -O0 |\n"
     << "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const Sized &s : apps)
    os << llvm::formatv("| {0} | {1} ({2}) | {3} | {4} | {5} | {6} | {7} |\n",
                        s.name, s.o2.handlers, s.o2.versioned, s.o0.total,
                        s.o2.total, s.o2.fast, ratio(s.o2.total, s.o0.total),
                        ratio(s.o2.fast, s.o0.total));

  os << "\n### Optimizer: the paper's filters against the hand-written NetIL "
        "(push handler; target: -O2 <= 1.2x the NetIL instructions)\n\n"
     << "NetIL instructions: the lines of the `.push` segment that are not "
        "empty, comments, directives or labels; each `push` of a constant "
        "counts, where the netvm IR's constants do not, so the last two "
        "columns also compare without them.\n\n"
     << "| filter | NetIL instructions | -O0 | -O2 | -O2 fast path | fast "
        "path / NetIL (<= 1.2) | -O2 / NetIL | NetIL without `push` | fast "
        "path / NetIL without `push` |\n"
     << "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const PaperRow &r : paper) {
    unsigned noPush = r.insns.instructions - r.insns.pushes;
    os << llvm::formatv("| {0} | {1} | {2} | {3} | {4} | {5} | {6} | {7} | "
                        "{8} |\n",
                        r.filter, r.insns.instructions, r.size.o0.total,
                        r.size.o2.total, r.size.o2.fast,
                        ratio(r.size.o2.fast, r.insns.instructions),
                        ratio(r.size.o2.total, r.insns.instructions), noPush,
                        ratio(r.size.o2.fast, noPush));
  }

  if (!results.empty()) {
    os << "\n### Optimizer: front-end filters (summary; ratio: -O2 fast path "
          "/ -O0, per filter)\n\n"
       << "| front end | list | filters | not compiled (libpcap refuses too) "
          "| -O0 median | -O2 median | fast path median | ratio median | mean "
          "| min | max |\n"
       << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    auto medianOf = [](llvm::ArrayRef<const Sized *> sized,
                       unsigned (*get)(const Sized &)) {
      std::vector<double> v;
      for (const Sized *s : sized)
        v.push_back(get(*s));
      return evenMedian(v);
    };
    auto summary = [&](driver::FilterLanguage language, const std::string &name,
                       llvm::ArrayRef<const Sized *> sized, unsigned failed,
                       unsigned refused) {
      RatioStats st = ratioStats(sized);
      std::string notCompiled = std::to_string(failed);
      if (language == driver::FilterLanguage::PcapFilter)
        notCompiled += " (" + std::to_string(refused) + ")";
      os << llvm::formatv(
          "| {0} | {1} | {2} | {3} | {4} | {5} | {6} | {7:f2} | {8:f2} | "
          "{9:f2} | {10:f2} |\n",
          languageName(language), name, sized.size(), notCompiled,
          medianOf(sized, [](const Sized &s) { return s.o0.total; }),
          medianOf(sized, [](const Sized &s) { return s.o2.total; }),
          medianOf(sized, [](const Sized &s) { return s.o2.fast; }), st.median,
          st.mean, st.min, st.max);
    };
    for (driver::FilterLanguage language :
         {driver::FilterLanguage::PcapFilter, driver::FilterLanguage::NetPFL}) {
      std::vector<const Sized *> all;
      unsigned failed = 0, refused = 0, count = 0;
      for (const ListResult &r : results) {
        if (r.list->language != language)
          continue;
        std::vector<const Sized *> sized;
        for (const Sized &s : r.sized)
          sized.push_back(&s);
        summary(language, r.list->name, sized, r.failed, r.libpcapRefuses);
        all.insert(all.end(), sized.begin(), sized.end());
        failed += r.failed;
        refused += r.libpcapRefuses;
        ++count;
      }
      if (count > 1)
        summary(language, "**all**", all, failed, refused);
    }

    os << "\n### Optimizer: the 10 largest front-end filters of each "
          "language (by -O0 size)\n\n"
       << "| front end | filter | -O0 | -O2 | -O2 fast path | fast path / "
          "-O0 |\n"
       << "|---|---|---:|---:|---:|---:|\n";
    for (driver::FilterLanguage language :
         {driver::FilterLanguage::PcapFilter, driver::FilterLanguage::NetPFL}) {
      std::vector<const Sized *> all;
      std::set<std::string> seen;
      for (const ListResult &r : results)
        if (r.list->language == language)
          for (const Sized &s : r.sized)
            if (seen.insert(s.name).second)
              all.push_back(&s);
      std::sort(all.begin(), all.end(), [](const Sized *a, const Sized *b) {
        return a->o0.total != b->o0.total ? a->o0.total > b->o0.total
                                          : a->name < b->name;
      });
      if (all.size() > 10)
        all.resize(10);
      for (const Sized *s : all)
        os << llvm::formatv("| {0} | {1} | {2} | {3} | {4} | {5} |\n",
                            languageName(language), shortened(s->name),
                            s->o0.total, s->o2.total, s->o2.fast,
                            ratio(s->o2.fast, s->o0.total));
    }
  }

  if (!netbee.empty()) {
    auto insns = [](const std::optional<NetILCount> &n) {
      return n ? std::to_string(n->instructions) : std::string("-");
    };
    os << "\n### Optimizer: NetBee's netilsamples (NetPFL compiler output) "
          "against hand-written equivalents (push handler)\n\n"
       << "| sample | NetBee filter | NetBee NetIL instructions | -O0 | -O2 "
          "fast path | hand-written equivalent | its NetIL instructions | its "
          "-O0 | its -O2 fast path | sample - equivalent at -O2 | sample -O2 "
          "/ equivalent NetIL | same outcome (packets, forwarded) |\n"
       << "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n";
    for (const NetBeeRow &r : netbee)
      os << llvm::formatv(
          "| {0}.netil | {1} | {2} | {3} | {4} | filters/{5}.netil | {6} | "
          "{7} | {8} | {9} | {10} | {11} ({12}) |\n",
          r.sample, r.filter.empty() ? std::string("-") : code(r.filter),
          insns(r.sampleInsns), r.sampleSize.o0.total, r.sampleSize.o2.fast,
          r.equivalent, insns(r.equivalentInsns), r.equivalentSize.o0.total,
          r.equivalentSize.o2.fast,
          int(r.sampleSize.o2.fast) - int(r.equivalentSize.o2.fast),
          r.equivalentInsns
              ? ratio(r.sampleSize.o2.fast, r.equivalentInsns->instructions)
              : std::string("-"),
          r.compared, r.accepted);
  }

  os << "\n### Optimizer: ns per packet at -O0 and -O2 against hand-written "
        "C (JIT batch entry; lower is better; target: -O2 / C <= 1.0)\n\n"
     << "| filter | trace | accepted | JIT netvm -O0, LLVM -O0 | JIT netvm "
        "-O0, LLVM -O2 | JIT -O2 | C loop | -O2 / C (<= 1.0) | netvm -O0 / "
        "-O2 (LLVM -O2) | all -O0 / -O2 |\n"
     << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const TimeRow &r : timeRows)
    os << llvm::formatv("| {0} | {1} | {2} | {3:f2} | {4:f2} | {5:f2} | "
                        "{6:f2} | {7} | {8} | {9} |\n",
                        r.filter, r.trace, r.accepted, r.jit[0], r.jit[1],
                        r.jit[2], r.handLoop, ratio(r.jit[2], r.handLoop),
                        ratio(r.jit[1], r.jit[2]), ratio(r.jit[0], r.jit[2]));
  return 0;
}

/// The compile section: for the paper's five filters (NetIL) and the
/// front-end section's tcpdump expressions, the compile latency by phase
/// and the JIT code's ns per packet (batch and per call) with the lean
/// LLVM pipeline and with LLVM's standard -O2 pipeline, side by side in
/// one run; the two codes and the interpreter must agree on every packet.
int measureCompile(MLIRContext &context, std::vector<Trace> &traces,
                   llvm::raw_ostream &os) {
  std::vector<FrontEndFilter> filters;
  if (!frontEndFilters(filters))
    return 1;
  struct Source {
    std::string name, kind, text;
  };
  std::vector<Source> sources;
  if (frontEndPairs.empty())
    for (const Filter &f : kFilters)
      sources.push_back(
          {f.name, "NetIL", filterDir + "/" + std::string(f.name) + ".netil"});
  for (const FrontEndFilter &f : filters)
    sources.push_back({f.name, "tcpdump", f.tcpdump});
  auto compileOne = [&](const Source &src, Phases &p,
                        OwningOpRef<ModuleOp> *keep) {
    return src.kind == "NetIL"
               ? compileFiles(context, {src.text}, p, keep)
               : compileText(context, src.text,
                             driver::FilterLanguage::PcapFilter, p, keep);
  };
  struct Row {
    Source src;
    // lean with the batch entries only (the per-call entries on first
    // use), standard (everything), lean with everything at once
    Phases latency[3];
    struct PerTrace {
      uint64_t accepted = 0;
      double batch[2] = {0, 0}, call[2] = {0, 0};
    };
    std::vector<PerTrace> traces;
  };
  std::vector<Row> rows;
  bool failedCheck = false;
  for (const Source &src : sources) {
    Row row;
    row.src = src;
    Compiled c[2];
    for (int standard = 0; standard < 2; ++standard) {
      standardPipeline = standard;
      eagerEntries =
          standard ? native::JitEntries::All : native::JitEntries::Batch;
      Phases unused;
      c[standard].desc = compileOne(src, unused, &c[standard].module);
      if (!instantiate(c[standard]))
        return 1;
    }
    eagerEntries = native::JitEntries::Batch;
    auto interp = interpreterOf(c[0]);
    if (!interp)
      return 1;
    for (Trace &t : traces) {
      // The lean code's per-call entry is compiled on its first call.
      std::vector<Verdicts> peers = {
          jitVerdicts("lean JIT", c[0].vm, t),
          jitVerdicts("standard JIT", c[1].vm, t),
          jitCallVerdicts("lean JIT per call", c[0].vm, t)};
      if (!t.copies.empty())
        peers.push_back(interpreterVerdicts("interpreter", *interp, t));
      if (disagreements(src.name, t, peers)) {
        failedCheck = true;
        continue;
      }
      Row::PerTrace result;
      result.accepted = accepted(peers[0]);
      if (verifyOnly) {
        os << llvm::formatv("compile: {0,-12} {1,-8} {2,-16} {3,8} of {4,8} "
                            "packets accepted by all peers ({5})\n",
                            src.name, src.kind, t.name, result.accepted,
                            t.size(), peerNames(peers));
      } else {
        // Alternate the two codes, so that both see the same machine.
        for (int standard = 0; standard < 2; ++standard) {
          netvm_instance *vm = c[standard].vm;
          result.batch[standard] = nsPerPacket(
              [&] {
                netvm_instance_push_batch(vm, 0, t.packets.data(), t.size());
              },
              t.size());
          result.call[standard] = nsPerPacket(
              [&] {
                for (netvm_packet &p : t.packets)
                  netvm_instance_push_batch(vm, 0, &p, 1);
              },
              t.size());
        }
      }
      row.traces.push_back(result);
    }
    if (!verifyOnly)
      for (int variant = 0; variant < 3; ++variant) {
        standardPipeline = variant == 1;
        eagerEntries =
            variant == 0 ? native::JitEntries::Batch : native::JitEntries::All;
        if (!compileLatency(
                [&](Phases &p) { return compileOne(src, p, nullptr); },
                row.latency[variant]))
          return 1;
      }
    standardPipeline = false;
    eagerEntries = native::JitEntries::Batch;
    rows.push_back(std::move(row));
  }
  if (failedCheck) {
    llvm::errs() << "netvm-bench: the lean and standard pipelines' code "
                    "disagree; no timings\n";
    return 1;
  }
  if (verifyOnly)
    return 0;

  os << "### Compile latency by LLVM pipeline (ms, warm process, median of "
     << compiles << ", object cache off; target: total < 5 ms)\n\n"
     << "| filter | source | LLVM pipeline | total | to optimized netvm IR "
        "| netvm to LLVM dialect | to LLVM IR | LLVM optimization | code "
        "generation and linking | of which linking | total, CPU time |\n"
     << "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const Row &r : rows)
    for (int variant : {0, 2, 1}) {
      const Phases &m = r.latency[variant];
      std::string name = native::pipelineName(m.jit.pipeline);
      if (m.jit.deferred)
        name += ", batch entries";
      os << llvm::formatv("| {0} | {1} | {2} | {3:f2} | {4:f2} | {5:f2} | "
                          "{6:f2} | {7:f2} | {8:f2} | {9:f2} | {10:f2} |\n",
                          r.src.name, r.src.kind, name, m.total,
                          m.frontEnd + m.optimize, m.jit.lowering,
                          m.jit.translation, m.jit.optimization, m.jit.codegen,
                          m.jit.linking, m.cpu);
    }
  os << "\n### ns per packet by LLVM pipeline (-O2, side by side; lower is "
        "better)\n\n"
     << "| filter | source | trace | accepted | batch, lean | batch, "
        "standard | lean / standard | call, lean | call, standard | lean / "
        "standard |\n"
     << "|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const Row &r : rows)
    for (size_t ti = 0; ti < r.traces.size(); ++ti) {
      const Row::PerTrace &p = r.traces[ti];
      os << llvm::formatv("| {0} | {1} | {2} | {3} | {4:f2} | {5:f2} | {6} | "
                          "{7:f2} | {8:f2} | {9} |\n",
                          r.src.name, r.src.kind, traces[ti].name, p.accepted,
                          p.batch[0], p.batch[1], ratio(p.batch[0], p.batch[1]),
                          p.call[0], p.call[1], ratio(p.call[0], p.call[1]));
    }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(benchCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "netvm-bench - the NetVM paper's filters: JIT vs hand-written C vs "
      "libpcap's bpf_filter vs the interpreter; the pcap-filter and NetPFL "
      "front ends vs libpcap; the optimizer's effect\n");

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
  int status = 0;
  if (section == Section::All || section == Section::Filters)
    status = measureFilters(context, traces, dead, os);
  if ((section == Section::All || section == Section::Compile) &&
      (status == 0 || verifyOnly))
    status |= measureCompile(context, traces, os);
  if ((section == Section::All || section == Section::FrontEnds) &&
      (status == 0 || verifyOnly))
    status |= measureFrontEnds(context, traces, dead, os);
  if ((section == Section::All || section == Section::Optimizer) &&
      (status == 0 || verifyOnly))
    status |= measureOptimizer(context, traces, dead, os);
  pcap_close(dead);
  return status;
}
