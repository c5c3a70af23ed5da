//===- netvm-run.cpp - Run a NetVM application over packets
//-------------------===//
//
// Loads an application (NetIL, .nvapp or .mlir), instantiates it (init
// handlers), feeds it packets from a pcap file or from hexadecimal text and
// reports what came out: per packet with -v, as a per-sink and per-NetPE
// summary otherwise (or JSON), and writes forwarded packets to pcap files
// with -w. Native code from the JIT by default; --engine=interp runs the
// reference interpreter instead, --engine=emu the application compiled for
// the microengines on the ME emulator (with its statistics).
//
//===----------------------------------------------------------------------===//

#include "PacketLines.h"

#include "netvm/Analysis/Partition.h"
#include "netvm/Driver/Driver.h"
#include "netvm/Frontend/PcapFilter.h"
#include "netvm/ProtoDB/ProtoDB.h"
#include "netvm/Runtime/Engine.h"
#include "netvm/Runtime/Split.h"
#include "netvm/Target/ME/AppLayout.h"
#include "netvm/Target/Native.h"
#include "netvm/Transforms/SplitPE.h"
#include "netvm/cache/RunCache.h"
#include "netvm/emu/Emulator.h"
#include "netvm/emu/Options.h"
#include "netvm/emu/StatsJson.h"
#include "netvm/io/PacketIO.h"
#include "netvm/runtime.h"
#ifdef NETVM_HAVE_ME_CODEGEN
#include "netvm/Target/ME/CodeGen.h"
#endif

#include "NetVM/NetVMOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <csignal>
#include <deque>
#include <map>
#include <memory>

using namespace mlir;
using namespace netvm;
namespace cl = llvm::cl;

static cl::OptionCategory runCategory("netvm-run options");

static cl::list<std::string>
    inputs(cl::Positional, cl::ZeroOrMore, cl::cat(runCategory),
           cl::desc("<application: NetIL files (chained in order), one "
                    ".nvapp description, or one .mlir file; or, like "
                    "tcpdump, the words of a filter expression>. The words "
                    "are files only when the first ends in .netil, .nvapp "
                    "or .mlir, whatever exists on disk"));
static cl::opt<std::string> pcapFilter(
    "pcap-filter",
    cl::desc("Run this tcpdump expression (man pcap-filter) instead of an "
             "application: accepted packets leave through sink 'match'. "
             "Words after the options are taken as one too, as tcpdump "
             "does, unless the first ends in .netil, .nvapp or .mlir"),
    cl::value_desc("expression"), cl::cat(runCategory));
static cl::opt<std::string> expressionFile(
    "F",
    cl::desc("Read the tcpdump expression from this file, as tcpdump -F "
             "does ('#' starts a comment); errors give file:line:col"),
    cl::value_desc("file"), cl::Prefix, cl::Grouping, cl::cat(runCategory));
static cl::opt<std::string> pflFilter(
    "pfl",
    cl::desc("Run this NetPFL filter (docs/netpfl.md) instead of an "
             "application: matching packets leave through sink 'match' (or "
             "'portN' after 'returnpacket on port N')"),
    cl::value_desc("filter"), cl::cat(runCategory));
static cl::opt<std::string>
    protoDB("protodb",
            cl::desc("The NetPDL protocol database of --pfl (default: netvm's "
                     "own, see docs/protodb.md)"),
            cl::value_desc("file.xml"), cl::cat(runCategory));
static cl::opt<std::string> pcapInput(
    "r",
    cl::desc(
        "Read packets from a pcap file; with '%s', one file per source (the "
        "name replaces '%s'), merged in time order: each packet enters by its "
        "file's source (files that do not exist are skipped). A tcpdump "
        "expression is compiled for the file's link type (Ethernet, Linux "
        "cooked v1/v2, raw IP, loopback); applications and NetPFL read "
        "Ethernet"),
    cl::value_desc("trace.pcap"), cl::Prefix, cl::Grouping,
    cl::cat(runCategory));
static cl::opt<std::string> hexInput(
    "hex",
    cl::desc("Read packets from a text file: one packet per line, as "
             "whitespace-separated hexadecimal bytes (0x1f or 1f); blank "
             "lines and lines starting with # are skipped"),
    cl::value_desc("packets.txt"), cl::cat(runCategory));
static cl::opt<std::string> liveDevice(
    "i",
    cl::desc("Capture packets live from this network interface through "
             "libpcap (needs root or CAP_NET_RAW); stops after -c packets or "
             "on Ctrl-C"),
    cl::value_desc("interface"), cl::Prefix, cl::Grouping,
    cl::cat(runCategory));
static cl::opt<bool>
    promiscuous("promiscuous",
                cl::desc("With -i: put the interface in promiscuous mode"),
                cl::cat(runCategory));
static cl::list<std::string> hexPackets(
    "hex-packet",
    cl::desc("Read one packet from a file of hexadecimal bytes spread over "
             "any number of lines (NetBee's test vectors); repeatable"),
    cl::value_desc("file"), cl::cat(runCategory));
static cl::opt<std::string>
    sourceName("source",
               cl::desc("Inject packets through this source (default: the "
                        "first source)"),
               cl::value_desc("name"), cl::cat(runCategory));
static cl::opt<bool> verbose("v",
                             cl::desc("Print what happened to every packet, "
                                      "with the bytes of forwarded packets"),
                             cl::Grouping, cl::cat(runCategory));
static cl::opt<std::string> writePattern(
    "w",
    cl::desc("Write forwarded packets to pcap files: '%s' in the name is "
             "replaced by the sink name (one file per sink); without '%s' "
             "the application must have a single sink"),
    cl::value_desc("pattern"), cl::Prefix, cl::Grouping, cl::cat(runCategory));
static cl::opt<uint64_t> maxPackets(
    "c",
    cl::desc("Stop after this many packets: for a filter, packets it "
             "accepts (as tcpdump -c); for an application, packets read"),
    cl::value_desc("count"), cl::Prefix, cl::Grouping, cl::cat(runCategory));
static cl::opt<bool>
    quiet("q",
          cl::desc("A filter: no line per matching packet, only the summary "
                   "(on standard output)"),
          cl::Grouping, cl::cat(runCategory));
static cl::opt<bool>
    linkHeader("e", cl::desc("Packet lines: print the link-layer header too"),
               cl::Grouping, cl::cat(runCategory));
static cl::opt<bool> hexDump(
    "x",
    cl::desc("Packet lines: each packet's bytes in hex from the network "
             "layer on (-xx: from the link layer)"),
    cl::Grouping, cl::cat(runCategory));
static cl::opt<bool> hexAsciiDump(
    "X",
    cl::desc("Packet lines: each packet's bytes in hex and ASCII from the "
             "network layer on (-XX: from the link layer)"),
    cl::Grouping, cl::cat(runCategory));
static cl::opt<bool>
    asciiDump("A", cl::desc("Packet lines: each packet's bytes as ASCII"),
              cl::Grouping, cl::cat(runCategory));
static cl::opt<bool> timeFormat(
    "t",
    cl::desc("Packet lines: -t no time stamp, -tt seconds since 1970, -ttt "
             "since the previous line, -tttt date and time, -ttttt since "
             "the first line (default: the time of day)"),
    cl::Grouping, cl::cat(runCategory));
static cl::opt<bool> lineBuffered(
    "l", cl::desc("Packet lines: flush standard output after every line"),
    cl::Grouping, cl::cat(runCategory));
static cl::opt<bool>
    dumpCode("d",
             cl::desc("Print what the filter or application compiles to (the "
                      "optimized netvm IR, as tcpdump -d prints BPF) and exit"),
             cl::Grouping, cl::cat(runCategory));
// tcpdump's flags that mean nothing for netvm: accepted, so that a tcpdump
// command line runs unchanged, and ignored.
static cl::opt<bool> numeric(
    "n",
    cl::desc("Accepted and ignored (tcpdump -n, -nn): netvm never resolves "
             "addresses or ports to names in its output"),
    cl::Grouping, cl::cat(runCategory));
static cl::opt<bool> noPromiscuous(
    "p",
    cl::desc("Accepted and ignored (tcpdump -p): -i captures without "
             "promiscuous mode unless --promiscuous"),
    cl::Grouping, cl::cat(runCategory));
static cl::opt<uint32_t> snapLength(
    "s",
    cl::desc("Accepted and ignored (tcpdump -s): -r runs the bytes the file "
             "holds, -i captures up to 262144 bytes of each packet"),
    cl::value_desc("snaplen"), cl::Prefix, cl::Grouping, cl::cat(runCategory));
static cl::opt<bool> packetBuffered(
    "U",
    cl::desc("Accepted and ignored (tcpdump -U): -w files are complete "
             "when netvm-run exits"),
    cl::Grouping, cl::cat(runCategory));
static cl::opt<bool> json("json",
                          cl::desc("Print the summary as JSON (with -v, "
                                   "also every packet's outputs)"),
                          cl::cat(runCategory));
static cl::opt<uint64_t> watchdog(
    "watchdog",
    cl::desc("Loop iterations one packet may run, across all the NetPEs it "
             "visits, before the watchdog exception (default 1048576)"),
    cl::init(1u << 20), cl::cat(runCategory));
static cl::opt<uint32_t> infoSize(
    "info-size",
    cl::desc("Info memory size when no NetPE declares more (default 64)"),
    cl::init(64), cl::cat(runCategory));
static cl::opt<std::string> mePlacement(
    "me-placement",
    cl::desc(
        "--engine=emu or split: which MEs receive and run the NetPEs, as netc "
        "--me-placement (e.g. 'rx=2;*3')"),
    cl::value_desc("spec"), cl::cat(runCategory));
static cl::opt<bool> resultsFormat(
    "results",
    cl::desc("Print every packet's outcome and the final memories in the "
             "line format of the standalone runtime (runtime/native/main.c), "
             "for comparing engines: '#N out SINK HEX info HEX', '#N exception "
             "KIND PE HANDLER LOCATION', '#N dropped N', 'data PE HEX'"),
    cl::cat(runCategory));
static cl::opt<bool>
    dumpData("dump-data",
             cl::desc("Print every NetPE's data memory after the run"),
             cl::cat(runCategory));
static cl::opt<uint64_t> pullCount(
    "pull",
    cl::desc("Pull mode: pull up to this many packets out of every sink fed "
             "by a pull connection, taking packets from the input as the "
             "application asks for them"),
    cl::value_desc("count"), cl::init(0), cl::cat(runCategory));
enum class EngineKind { Native, Interpreter, Emulator, Split };
static cl::opt<EngineKind> engineKind(
    "engine", cl::desc("What runs the application (default: native)"),
    cl::values(
        clEnumValN(EngineKind::Native, "native",
                   "native code from the JIT (-j, --pipeline)"),
        clEnumValN(EngineKind::Interpreter, "interp",
                   "the reference interpreter (also --interp)"),
        clEnumValN(EngineKind::Emulator, "emu",
                   "the application compiled for the microengines, on the "
                   "IXP-like ME emulator (docs/me-isa.md): the machine "
                   "options below configure it, --stats-json writes its "
                   "statistics"),
        clEnumValN(EngineKind::Split, "split",
                   "the NetPEs the microengines can run (those before any "
                   "host-only coprocessor) on the ME emulator, the rest "
                   "JIT-compiled on the host, joined where the connections "
                   "are cut (docs/applications.md)")),
    cl::init(EngineKind::Native), cl::cat(runCategory));
static cl::opt<bool> useInterpreter("interp",
                                    cl::desc("The same as --engine=interp"),
                                    cl::init(false), cl::cat(runCategory));
static cl::opt<char> optLevel(
    "O",
    cl::desc("Optimization level -O0..-O3 (default: -O2 for native code and "
             "the emulator; the interpreter runs -O0 IR unless -O is given)"),
    cl::Prefix, cl::Grouping, cl::init('2'), cl::cat(runCategory));
// Registered as "emu-stats-json" and renamed in main(): LLVM's statistics
// own "stats-json" until then (as in netvm-emu).
static cl::opt<std::string> statsJson(
    "emu-stats-json",
    cl::desc(
        "--engine=emu or split: write the emulator's statistics, summed over "
        "its runs, as JSON to this file ('-': standard output), as "
        "netvm-emu --stats-json does"),
    cl::value_desc("file"), cl::cat(runCategory));
static cl::opt<bool>
    compileTime("compile-time",
                cl::desc("Report how long JIT compilation took, by phase"),
                cl::cat(runCategory));
enum class JitEntriesChoice { Auto, All, Batch, PerCall };
static cl::opt<JitEntriesChoice> jitEntries(
    "jit-entries",
    cl::desc("Native code: which entries to compile before the first packet "
             "(the others when first called; docs/native.md)"),
    cl::init(JitEntriesChoice::Auto),
    cl::values(
        clEnumValN(JitEntriesChoice::Auto, "auto",
                   "the per-call entries when the run listens to each packet "
                   "(-w, packet lines, -v, --results), else the batch "
                   "entries (default)"),
        clEnumValN(JitEntriesChoice::All, "all", "all of them at once"),
        clEnumValN(JitEntriesChoice::Batch, "batch",
                   "the batch entries' fast loops"),
        clEnumValN(JitEntriesChoice::PerCall, "per-call",
                   "the per-call entries")),
    cl::cat(runCategory));
static cl::opt<unsigned> threads(
    "j",
    cl::desc("Native code: threads to run packets on (default 1). Stateless "
             "applications get one replica per thread; stateful ones run on "
             "one thread unless --pipeline. Outputs keep the arrival order"),
    cl::value_desc("N"), cl::init(1), cl::Prefix, cl::Grouping,
    cl::cat(runCategory));
static cl::opt<bool> pipeline(
    "pipeline",
    cl::desc("Native code: split the NetPEs into -j stages (one thread "
             "each, in topological order) connected by rings; every NetPE's "
             "state stays on one thread, so stateful applications run in "
             "parallel too"),
    cl::cat(runCategory));
// Pipeline stages with several threads, and dynamic allocation
// (docs/native.md#replicated-stages, #dynamic-allocation).
static cl::opt<std::string> stagesPlan(
    "stages",
    cl::desc("Native code: the pipeline's stages in order, separated by "
             "';', each a comma-separated list of NetPE names, ':N' after "
             "a stage of NetPEs that keep no state to run it on N threads "
             "(outputs keep the arrival order), e.g. 'rx;work:2;tx'. "
             "Implies --pipeline; -j is then not used"),
    cl::value_desc("plan"), cl::cat(runCategory));
static cl::opt<std::string> dynamicPolicy(
    "dynamic", cl::ValueOptional,
    cl::desc("Native code: a pipeline whose stages of NetPEs that keep no "
             "state share a pool of worker threads, moved between them at "
             "run time by queue length and waiting time; optional settings "
             "workers=N,interval=T,queue-up=N,queue-down=N,delay-up=T,"
             "delay-down=T,dwell=T (T: 100us, 2ms). Implies --pipeline; "
             "reports the reallocations on standard error"),
    cl::value_desc("settings"), cl::cat(runCategory));

namespace {
enum class PipelinePlan { Partitioner, Runtime };
} // namespace
static cl::opt<PipelinePlan> pipelinePlan(
    "pipeline-plan",
    cl::desc("Native code, --pipeline without --stages: where the stages "
             "come from"),
    cl::init(PipelinePlan::Partitioner),
    cl::values(clEnumValN(PipelinePlan::Partitioner, "partitioner",
                          "the partitioner's plan for -j threads (the "
                          "default; docs/partitioning.md): stages and "
                          "replicas that balance the estimated costs, "
                          "with a fat NetPE split when that predicts more"),
               clEnumValN(PipelinePlan::Runtime, "runtime",
                          "the runtime's cut of the NetPEs' topological "
                          "order into -j stages of about as many NetPEs")),
    cl::cat(runCategory));

/// Whether the engine runs a pipeline: --pipeline, unless the partitioner's
/// plan is one stage (run to completion).
static bool ranPipeline = false;

/// --pipeline, or an option that implies it.
static bool pipelined() {
  return pipeline || !stagesPlan.empty() || dynamicPolicy.getNumOccurrences();
}

/// Threads, reallocations and worker time of every pipeline stage, on
/// standard error (--stages with threads, --dynamic).
static void printPipelineStats(const netvm_runner *runner) {
  uint32_t stages = netvm_runner_stages(runner);
  netvm_controller_stats c;
  netvm_runner_controller_stats(runner, &c);
  llvm::errs() << "netvm-run: pipeline: " << stages << " stage"
               << (stages == 1 ? "" : "s");
  if (c.pool)
    llvm::errs() << llvm::formatv(
        ", {0} dynamic with a pool of {1} workers; {2} decisions, {3} "
        "workers moved, controller CPU {4:f1} ms",
        c.stages, c.pool, c.decisions, c.changes, c.cpu_ns / 1e6);
  llvm::errs() << "\n";
  for (uint32_t i = 0; i < stages; ++i) {
    netvm_stage_stats s;
    netvm_runner_stage_stats(runner, i, &s);
    llvm::errs() << llvm::formatv(
        "netvm-run:   stage {0}: {1} of {2} thread{3}{4}, {5:f3} "
        "worker-s (CPU {6:f3} s), {7} messages",
        i, s.workers, s.max_workers, s.max_workers == 1 ? "" : "s",
        s.dynamic ? " (dynamic)" : "", s.worker_ns / 1e9, s.cpu_ns / 1e9,
        s.messages);
    if (s.dynamic)
      llvm::errs() << llvm::formatv(
          "; {0} adds, {1} removes decided, {2} carried out in mean "
          "{3:f1} us, max {4:f1} us",
          s.adds, s.removes, s.reallocations,
          s.reallocations ? s.realloc_ns_total / 1e3 / s.reallocations : 0.0,
          s.realloc_ns_max / 1e3);
    llvm::errs() << "\n";
  }
}

static cl::opt<bool> throughput(
    "throughput",
    cl::desc("Report on standard error how long reading and processing the "
             "packets took, and packets per second"),
    cl::cat(runCategory));
static cl::opt<unsigned> chunkSize(
    "chunk",
    cl::desc("Native code: packets read before they are processed together "
             "(default 65536)"),
    cl::init(65536), cl::Hidden, cl::cat(runCategory));
static cl::opt<unsigned> runnerBatch(
    "runner-batch",
    cl::desc("Native code: packets a thread takes at a time (default 256)"),
    cl::init(0), cl::Hidden, cl::cat(runCategory));

/// Set by SIGINT/SIGTERM during a live capture: stop reading, report.
static volatile int interrupted = 0;
static void onInterrupt(int) { interrupted = 1; }

static void printBytes(llvm::raw_ostream &os, llvm::ArrayRef<uint8_t> bytes) {
  for (size_t i = 0; i < bytes.size(); i += 16) {
    os << "    " << llvm::format_hex_no_prefix(i, 4) << " ";
    for (size_t j = i; j < std::min(bytes.size(), i + 16); ++j)
      os << " " << llvm::format_hex_no_prefix(bytes[j], 2);
    os << "\n";
  }
}

static int fail(const llvm::Twine &message) {
  llvm::errs() << "netvm-run: " << message << "\n";
  return 1;
}

/// What the options say to compile (driver::resolveInput checks it).
static driver::InputOptions inputOptions() {
  driver::InputOptions in;
  in.files = inputs;
  in.expressionWords = true;
  if (pcapFilter.getNumOccurrences())
    in.pcapFilter = pcapFilter;
  if (pflFilter.getNumOccurrences())
    in.pfl = pflFilter;
  if (expressionFile.getNumOccurrences())
    in.filterFile = expressionFile;
  in.filterFileLanguage = driver::FilterLanguage::PcapFilter;
  in.filterFileOption = "-F";
  in.protoDB = protoDB;
  return in;
}

/// The packet input of the options, or null after an error message.
static std::unique_ptr<rt::PacketReader>
openInput(llvm::ArrayRef<std::string> sources) {
  std::string error;
  std::unique_ptr<rt::PacketReader> reader;
  if (!liveDevice.empty()) {
    reader = rt::PacketReader::openLive(liveDevice, promiscuous, error);
    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);
  } else if (llvm::StringRef(pcapInput).contains("%s")) {
    std::vector<std::string> paths;
    for (const std::string &name : sources) {
      std::string path = pcapInput;
      for (size_t at; (at = path.find("%s")) != std::string::npos;)
        path.replace(at, 2, name);
      paths.push_back(llvm::sys::fs::exists(path) ? path : "");
    }
    if (llvm::all_of(paths, [](const std::string &p) { return p.empty(); })) {
      fail("no file matches '" + pcapInput + "' for the sources " +
           llvm::join(sources, ", "));
      return nullptr;
    }
    reader = rt::PacketReader::openPerSource(paths, error);
  } else if (!pcapInput.empty() || !hexInput.empty()) {
    bool hex = !hexInput.empty();
    reader = rt::PacketReader::open(hex ? hexInput : pcapInput, hex, error);
  } else {
    reader = rt::PacketReader::openHexPacketFiles(hexPackets);
  }
  if (!reader)
    fail(error);
  return reader;
}

static void printEmulatorSummary(llvm::raw_ostream &os, const me::Stats &s);
static llvm::json::Object emulatorJson(const me::Stats &s);

namespace {
/// Where results go: sink statistics and pcap files, and the per-packet
/// listings (-v, --json -v, --results).
class Report {
public:
  Report(rt::Engine &engine, llvm::raw_ostream &os)
      : engine(engine), os(os), sinks(engine.sinkNames()) {}

  /// Open the -w files; false after an error message.
  bool openWriters(int linkType, uint32_t snapLength) {
    if (writePattern.empty())
      return true;
    bool perSink = llvm::StringRef(writePattern).contains("%s");
    if (!perSink && sinks.size() != 1) {
      fail("-w '" + writePattern + "' has no '%s' but the application has " +
           llvm::Twine(sinks.size()) +
           " sinks; use a pattern such as 'out-%s.pcap'");
      return false;
    }
    writers.resize(sinks.size());
    for (auto [i, name] : llvm::enumerate(sinks)) {
      std::string path = writePattern, error;
      size_t at;
      while (perSink && (at = path.find("%s")) != std::string::npos)
        path.replace(at, 2, name);
      writers[i] = rt::PcapWriter::create(path, linkType, error, snapLength);
      if (!writers[i]) {
        fail(error);
        return false;
      }
    }
    return true;
  }

  /// Write what left through `sink` to its -w file, if any.
  void write(unsigned sink, const rt::PacketView &packet) {
    if (sink < writers.size() && writers[sink])
      writers[sink]->write(packet);
  }

  void packet(uint64_t number, uint32_t length, const rt::PacketResult &result,
              bool written = false) {
    for (const rt::Output &out : result.outputs)
      if (!written)
        write(out.sink, rt::view(out));
    if (resultsFormat)
      return resultLines(number, result);
    if (!verbose)
      return;
    if (json)
      return jsonPacket(number, length, result);
    os << "#" << number << " (" << length << " bytes):";
    if (result.outputs.empty() && result.exceptions.empty())
      os << (result.unconnected ? " sent to an unconnected port" : " dropped");
    os << "\n";
    for (const rt::Output &out : result.outputs) {
      os << "  -> " << sinks[out.sink] << " (" << out.bytes.size()
         << " bytes)\n";
      printBytes(os, out.bytes);
    }
    for (const rt::ExceptionReport &e : result.exceptions) {
      os << "  exception " << e.kindName() << " in @" << peName(e) << " ("
         << e.handlerName() << " handler) at " << e.location;
      if (!e.detail.empty())
        os << ": " << e.detail;
      os << "\n";
    }
    if (result.drops && (!result.outputs.empty() || !result.exceptions.empty()))
      os << "  dropped " << result.drops << "\n";
  }

  /// The '#N ...' lines of --results (also for the init handlers, as #0).
  void resultLines(uint64_t number, const rt::PacketResult &result) {
    for (const rt::Output &out : result.outputs)
      os << "#" << number << " out " << sinks[out.sink] << " "
         << llvm::toHex(out.bytes, true) << " info "
         << llvm::toHex(out.info, true) << "\n";
    for (const rt::ExceptionReport &e : result.exceptions)
      os << "#" << number << " exception " << e.kindName() << " " << peName(e)
         << " " << e.handlerName() << " " << e.location << "\n";
    if (result.drops)
      os << "#" << number << " dropped " << result.drops << "\n";
    if (result.unconnected)
      os << "#" << number << " unconnected " << result.unconnected << "\n";
  }

  void memories() {
    for (auto [i, name] : llvm::enumerate(engine.peNames()))
      os << "data " << name << " " << llvm::toHex(engine.dataMemory(i), true)
         << "\n";
    if (!engine.sharedMemory().empty())
      os << "shared " << llvm::toHex(engine.sharedMemory(), true) << "\n";
  }

  /// The per-sink and per-NetPE summary (or JSON) and --dump-data;
  /// `source` is the source packets went into ("" in pull mode).
  /// A tcpdump expression: a load past the captured bytes is libpcap's way
  /// to reject a packet, not an exception, and the summary counts it with
  /// the dropped packets ("too short").
  void shortPacketsAreRejections() { shortRejected = true; }

  void summary(uint64_t packets, llvm::StringRef source, bool pulled) {
    rt::Counters c = engine.counters();
    uint64_t tooShort = 0;
    if (shortRejected) {
      tooShort = c.exceptions[NETVM_EXC_PACKET_BOUNDS];
      c.exceptions[NETVM_EXC_PACKET_BOUNDS] = 0;
      c.dropped += tooShort;
    }
    auto peCounters = [&](unsigned pe) {
      rt::PECounters p = engine.peCounters(pe);
      // The expression is one NetPE: every short packet is its own.
      if (shortRejected && engine.peNames().size() == 1) {
        p.exceptions -= std::min(p.exceptions, tooShort);
        p.dropped += tooShort;
      }
      return p;
    };
    std::map<std::string, uint64_t> exceptions;
    for (uint32_t k = 0; k < NETVM_EXC_KINDS; ++k)
      if (c.exceptions[k])
        exceptions[netvm_exception_name(k)] = c.exceptions[k];
    if (json) {
      llvm::json::Object sinkObj, excObj, peObj;
      for (auto [i, name] : llvm::enumerate(sinks)) {
        rt::SinkCounters s = engine.sinkCounters(i);
        sinkObj[name] =
            llvm::json::Object{{"packets", static_cast<int64_t>(s.packets)},
                               {"bytes", static_cast<int64_t>(s.bytes)}};
      }
      for (auto &[kind, count] : exceptions)
        excObj[kind] = static_cast<int64_t>(count);
      for (auto [i, name] : llvm::enumerate(engine.peNames())) {
        rt::PECounters p = peCounters(i);
        peObj[name] = llvm::json::Object{
            {"invocations", static_cast<int64_t>(p.runs)},
            {"sent", static_cast<int64_t>(p.sent)},
            {"dropped", static_cast<int64_t>(p.dropped)},
            {"exceptions", static_cast<int64_t>(p.exceptions)}};
      }
      llvm::json::Object top{
          {"packets", static_cast<int64_t>(packets)},
          {"source", source},
          {"sinks", std::move(sinkObj)},
          {"dropped", static_cast<int64_t>(c.dropped)},
          {"too_short", static_cast<int64_t>(tooShort)},
          {"unconnected", static_cast<int64_t>(c.unconnected)},
          {"exceptions", std::move(excObj)},
          {"pes", std::move(peObj)}};
      if (verbose)
        top["results"] = std::move(packetResults);
      if (const me::Stats *emu = engine.emulatorStats())
        top["emulator"] = emulatorJson(*emu);
      os << llvm::formatv("{0:2}", llvm::json::Value(std::move(top))) << "\n";
    } else {
      os << "packets: " << packets;
      if (!source.empty() && !pulled)
        os << " (into source" << (source.contains(", ") ? "s " : " ") << source
           << ")";
      os << "\n";
      for (auto [i, name] : llvm::enumerate(sinks)) {
        rt::SinkCounters s = engine.sinkCounters(i);
        os << llvm::formatv("sink {0,-16} {1,10} packets {2,12} bytes\n", name,
                            s.packets, s.bytes);
      }
      os << llvm::formatv("dropped {0,23}", c.dropped);
      if (tooShort)
        os << " (" << tooShort << " too short for the expression)";
      os << "\n";
      if (c.unconnected)
        os << llvm::formatv("unconnected {0,19}\n", c.unconnected);
      os << llvm::formatv("exceptions {0,20}", c.totalExceptions());
      if (!exceptions.empty()) {
        os << " (";
        bool first = true;
        for (auto &[kind, count] : exceptions) {
          os << (first ? "" : ", ") << kind << " " << count;
          first = false;
        }
        os << ")";
      }
      os << "\n";
      for (auto [i, name] : llvm::enumerate(engine.peNames())) {
        rt::PECounters p = peCounters(i);
        os << llvm::formatv("pe {0,-18} {1,10} runs {2,8} sent {3,8} dropped "
                            "{4,8} exceptions\n",
                            name, p.runs, p.sent, p.dropped, p.exceptions);
      }
      if (const me::Stats *emu = engine.emulatorStats())
        printEmulatorSummary(os, *emu);
    }
    if (dumpData) {
      for (auto [i, name] : llvm::enumerate(engine.peNames())) {
        os << "data memory of @" << name << " (" << engine.dataMemory(i).size()
           << " bytes)\n";
        printBytes(os, engine.dataMemory(i));
      }
      if (!engine.sharedMemory().empty()) {
        os << "shared memory (" << engine.sharedMemory().size() << " bytes)\n";
        printBytes(os, engine.sharedMemory());
      }
    }
  }

  llvm::StringRef peName(const rt::ExceptionReport &e) const {
    llvm::ArrayRef<std::string> pes = engine.peNames();
    return e.pe >= 0 && static_cast<size_t>(e.pe) < pes.size()
               ? llvm::StringRef(pes[e.pe])
               : llvm::StringRef();
  }

private:
  void jsonPacket(uint64_t number, uint32_t length,
                  const rt::PacketResult &result) {
    llvm::json::Array outs, excs;
    for (const rt::Output &out : result.outputs)
      outs.push_back(llvm::json::Object{
          {"sink", sinks[out.sink]},
          {"bytes", llvm::toHex(out.bytes, /*LowerCase=*/true)}});
    for (const rt::ExceptionReport &e : result.exceptions)
      excs.push_back(llvm::json::Object{
          {"kind", e.kindName()}, {"pe", peName(e)}, {"loc", e.location}});
    packetResults.push_back(
        llvm::json::Object{{"packet", static_cast<int64_t>(number)},
                           {"length", static_cast<int64_t>(length)},
                           {"outputs", std::move(outs)},
                           {"exceptions", std::move(excs)},
                           {"dropped", static_cast<int64_t>(result.drops)}});
  }

  rt::Engine &engine;
  llvm::raw_ostream &os;
  llvm::ArrayRef<std::string> sinks;
  std::vector<std::unique_ptr<rt::PcapWriter>> writers;
  llvm::json::Array packetResults; // -v --json
  bool shortRejected = false;
};
} // namespace

/// The engine the options ask for.
static EngineKind selectedEngine() {
  return useInterpreter ? EngineKind::Interpreter : engineKind.getValue();
}

/// The machine options of the emulator (netvm/emu/Options.h), as
/// netvm-emu spells them: --mes=4, --latency=dram=240, ... Made in main()
/// from the option table, before the command line is parsed.
static std::vector<std::unique_ptr<cl::list<std::string>>> machineOptions;

static void registerMachineOptions() {
  static std::deque<std::string> descriptions; // the options point into them
  for (size_t i = 0; i < me::machineOptionCount(); ++i) {
    const me::MachineOptionInfo &info = me::machineOption(i);
    descriptions.push_back(std::string("--engine=emu or split: ") + info.help);
    machineOptions.push_back(std::make_unique<cl::list<std::string>>(
        llvm::StringRef(info.name), cl::desc(descriptions.back()),
        cl::value_desc(info.value), cl::ZeroOrMore, cl::cat(runCategory)));
  }
}

/// The machine of the options; false after an error message.
static bool machineConfig(me::MachineConfig &config) {
  for (const auto &option : machineOptions)
    for (const std::string &value : *option) {
      std::string error;
      if (!me::applyMachineOption(config, option->ArgStr, value, error, "--")) {
        fail(error);
        return false;
      }
    }
  return true;
}

/// Exit status when the ME back end refuses the application (the
/// differential tests tell it from a wrong result).
static constexpr int exitRefused = 3;

/// The roles of the MEs of the last compiled image ("receive", the NetPEs
/// it runs), for the emulator's summary.
static std::map<unsigned, std::string> meRoles;

/// The application compiled for the microengines on the emulator, or null
/// after an error message (`status`: the exit status).
static std::unique_ptr<rt::Engine>
createEmulatorEngine(ModuleOp module, const rt::EngineOptions &options,
                     int &status) {
  me::MachineConfig machine;
#ifdef NETVM_HAVE_ME_CODEGEN
  machine.maxPacketBytes = me::compiledMaxPacketBytes;
#endif
  if (!machineConfig(machine))
    return nullptr;
#ifdef NETVM_HAVE_ME_CODEGEN
  me::CodeGenOptions codegen;
  codegen.machine = machine;
  codegen.defaultInfoSize = infoSize;
  if (!mePlacement.empty()) {
    std::string error;
    if (!me::parsePlacement(mePlacement, codegen.placement, error)) {
      fail("--me-placement: " + error);
      status = exitRefused;
      return nullptr;
    }
  }
  me::CompiledApp compiled;
  if (failed(me::compileApplication(module, codegen, compiled))) {
    fail("the ME back end cannot compile this application (see the errors "
         "above)");
    status = exitRefused;
    return nullptr;
  }
  for (const me::MEReport &r : compiled.report)
    meRoles[r.me] = r.role;
  std::string error;
  std::unique_ptr<rt::Engine> engine =
      rt::Engine::emulator(compiled, options, machine, error);
  if (!engine)
    fail(error);
  return engine;
#else
  (void)module;
  (void)options;
  fail("this netvm-run was built without the ME back end "
       "(lib/Target/ME/CodeGen): --engine=emu is not available");
  status = exitRefused;
  return nullptr;
#endif
}

/// The split engine (netvm/Runtime/Split.h) of the loaded, not optimized
/// `module`, or null after an error message.
static std::unique_ptr<rt::Engine> createSplit(ModuleOp module,
                                               const rt::EngineOptions &options,
                                               unsigned level, int &status) {
#ifdef NETVM_HAVE_ME_CODEGEN
  rt::SplitOptions split;
  split.engine = options;
  split.optLevel = level;
  split.machine.maxPacketBytes = me::compiledMaxPacketBytes;
  if (!machineConfig(split.machine))
    return nullptr;
  split.mePlacement = mePlacement;
  rt::SplitPlan plan;
  std::string error;
  std::unique_ptr<rt::Engine> engine =
      rt::createSplitEngine(module, split, plan, error);
  if (!engine) {
    fail(error);
    status = exitRefused;
    return nullptr;
  }
  llvm::errs() << "netvm-run: note: split: on the microengines: "
               << llvm::join(plan.head, ", ") << "; on the host: "
               << (plan.tail.empty() ? std::string("none")
                                     : llvm::join(plan.tail, ", "))
               << "; cut: "
               << (plan.cuts.empty() ? std::string("none")
                                     : llvm::join(plan.cuts, ", "))
               << "\n";
  return engine;
#else
  (void)module;
  (void)options;
  (void)level;
  fail("this netvm-run was built without the ME back end "
       "(lib/Target/ME/CodeGen): --engine=split is not available");
  status = exitRefused;
  return nullptr;
#endif
}

static double ratio(uint64_t part, uint64_t whole) {
  return whole ? double(part) / double(whole) : 0.0;
}

/// The emulator's summary: cycles, throughput, how busy each ME was.
static void printEmulatorSummary(llvm::raw_ostream &os, const me::Stats &s) {
  double seconds = s.seconds();
  os << llvm::formatv("emulator: {0} cycles ({1:f2} us at {2} MHz), {3} "
                      "packets received, {4} sent",
                      s.cycles, seconds * 1e6, s.clockMHz, s.packetsReceived,
                      s.packetsSent);
  if (seconds > 0)
    os << llvm::formatv(" ({0:f3} Mpps, {1:f3} Gbit/s)",
                        s.packetsSent / seconds / 1e6,
                        s.bytesSent * 8.0 / seconds / 1e9);
  os << "\n";
  for (size_t i = 0; i < s.mes.size(); ++i) {
    const me::MEStats &m = s.mes[i];
    if (!m.loaded)
      continue;
    std::string name = "me" + std::to_string(i);
    auto role = meRoles.find(i);
    if (role != meRoles.end() && !role->second.empty())
      name += " (" + role->second + ")";
    os << llvm::formatv("{0,-24} busy {1,5:f1}% {2,12} instructions\n", name,
                        100 * ratio(m.busyCycles, s.cycles), m.instructions);
  }
}

/// The emulator's summary as a JSON object.
static llvm::json::Object emulatorJson(const me::Stats &s) {
  double seconds = s.seconds();
  llvm::json::Object mes;
  for (size_t i = 0; i < s.mes.size(); ++i) {
    const me::MEStats &m = s.mes[i];
    if (!m.loaded)
      continue;
    llvm::json::Object o{
        {"busy", ratio(m.busyCycles, s.cycles)},
        {"instructions", static_cast<int64_t>(m.instructions)}};
    auto role = meRoles.find(i);
    if (role != meRoles.end())
      o["role"] = role->second;
    mes["me" + std::to_string(i)] = std::move(o);
  }
  return llvm::json::Object{
      {"cycles", static_cast<int64_t>(s.cycles)},
      {"seconds", seconds},
      {"packets_received", static_cast<int64_t>(s.packetsReceived)},
      {"packets_sent", static_cast<int64_t>(s.packetsSent)},
      {"mpps", seconds > 0 ? s.packetsSent / seconds / 1e6 : 0.0},
      {"mes", std::move(mes)}};
}

/// The front cache's key of this run, when the launcher (Launcher.cpp)
/// found no entry for the command line and asks this run to make one
/// ($NETVM_RUN_CACHE_KEY, 64 hexadecimal digits; taken out of the
/// environment in main()).
static std::optional<cache::Digest> frontCacheKey;

static void takeFrontCacheKey() {
  const char *hex = std::getenv("NETVM_RUN_CACHE_KEY");
  if (!hex)
    return;
  std::string text = hex;
  unsetenv("NETVM_RUN_CACHE_KEY");
  cache::Digest key;
  if (text.size() != 2 * key.size())
    return;
  for (size_t i = 0; i < key.size(); ++i) {
    unsigned byte;
    if (llvm::StringRef(text).substr(2 * i, 2).getAsInteger(16, byte))
      return;
    key[i] = uint8_t(byte);
  }
  frontCacheKey = key;
}

/// Link the object the JIT ran into a shared object and store it as the
/// front cache's entry for this command line, so that the launcher runs
/// the next one without LLVM. Failures only cost the next run time: they
/// are reported with --compile-time, else ignored.
static void fillFrontCache(const native::JitObject &compiled) {
  std::string dir = cache::directory();
  if (dir.empty())
    return;
  std::string path = cache::entryPath(dir, *frontCacheKey);
  std::string linked = path + ".so" + std::to_string(getpid());
  std::string error;
  if (llvm::Error err = native::linkSharedObject(compiled.object, linked)) {
    error = llvm::toString(std::move(err));
  } else if (auto bytes = llvm::MemoryBuffer::getFile(
                 linked, /*IsText=*/false, /*RequiresNullTerminator=*/false)) {
    cache::writeEntry(path, *frontCacheKey, (*bytes)->getBuffer().str(),
                      compiled.symbol, error);
  } else {
    error = "cannot read " + linked;
  }
  llvm::sys::fs::remove(linked);
  if (!error.empty() && compileTime)
    llvm::errs() << "netvm-run: note: no front cache entry: " << error << "\n";
}

/// The engine of the options for the optimized `module`, or null after an
/// error message (`status`: the exit status).
static std::unique_ptr<rt::Engine> createEngine(ModuleOp module,
                                                ModuleOp loaded, unsigned level,
                                                bool listens, int &status) {
  rt::EngineOptions options;
  options.watchdogBudget = watchdog;
  options.defaultInfoSize = infoSize;
  options.threads = threads;
  options.pipeline = pipelined();
  options.runnerBatch = runnerBatch;
  options.stages = stagesPlan;
  // Without --stages, the pipeline follows the partitioner's plan for -j
  // threads (docs/partitioning.md), not a cut made at run time.
  if (options.pipeline && stagesPlan.empty() &&
      pipelinePlan == PipelinePlan::Partitioner &&
      selectedEngine() == EngineKind::Native) {
    analysis::CostModel model;
    analysis::PartitionOptions po;
    po.workers = std::max(1u, unsigned(threads));
    analysis::Plan plan;
    std::string planError;
    // A fat NetPE that limits the plan may be split (netvm-split-pe): the
    // split application, optimized, replaces the one in `module`.
    SplitPlanner planner;
    planner.optimize = [&](ModuleOp m) {
      return driver::optimize(m, level, nullptr, driver::OptimizeFor::Native);
    };
    if (partitionWithSplit(module, loaded, planner,
                           analysis::CostTarget::Native, po, nullptr, model,
                           plan, planError)) {
      if (!plan.split.empty())
        llvm::errs() << "netvm-run: note: split " << plan.split << "\n";
      options.stages = analysis::toStageSpec(model, plan);
      unsigned used = 0;
      for (const analysis::PlanStage &st : plan.stages)
        used += st.workers;
      // Say why the plan uses fewer threads than asked for.
      if (verbose || used < threads)
        llvm::errs() << "netvm-run: note: pipeline plan for " << threads
                     << " thread" << (threads == 1 ? "" : "s") << ": '"
                     << options.stages << "' (predicted "
                     << llvm::format("%.2f", plan.throughput / 1e6)
                     << " Mpps, bottleneck " << plan.bottleneck << ")\n";
      if (used < threads)
        for (const std::string &note : plan.notes)
          llvm::errs() << "netvm-run: note: " << note << "\n";
      // One stage is the whole application on every thread: the runner's
      // run to completion does that without rings or a dealing thread
      // (unless --dynamic asks for the pipeline's pool of threads). Replicas
      // by flow key share one instance: they need the pipeline.
      bool keyed = plan.stages[0].flowKeyed && plan.stages[0].workers > 1;
      if (plan.stages.size() == 1 && !keyed &&
          !dynamicPolicy.getNumOccurrences()) {
        options.pipeline = false;
        options.threads = plan.stages[0].workers;
        options.stages.clear();
        if (verbose || used < threads)
          llvm::errs() << "netvm-run: note: the plan is one stage: it runs "
                          "to completion on "
                       << options.threads << " thread"
                       << (options.threads == 1 ? "" : "s") << "\n";
      }
    }
  }
  ranPipeline = options.pipeline;
  options.dynamic = dynamicPolicy.getNumOccurrences() > 0;
  options.dynamicPolicy = dynamicPolicy;
  std::string error;
  std::unique_ptr<rt::Engine> engine;
  if (selectedEngine() == EngineKind::Emulator) {
    engine = createEmulatorEngine(module, options, status);
    if (!engine)
      return nullptr;
  } else if (selectedEngine() == EngineKind::Split) {
    engine = createSplit(module, options, level, status);
    if (!engine)
      return nullptr;
  } else if (selectedEngine() == EngineKind::Interpreter) {
    engine =
        rt::Engine::interpreter(driver::getApplication(module), options, error);
  } else {
    native::CodegenOptions codegen;
    codegen.optLevel = level;
    codegen.lowering.defaultInfoSize = infoSize;
    codegen.lowering.forwardLinks = options.pipeline;
    // Compile the entries the run calls: the batch entries' fast loops when
    // nobody listens, else the per-call entries (the batch entries call
    // them for every packet then); the others on first use, if ever.
    switch (jitEntries) {
    case JitEntriesChoice::Auto:
      codegen.eager =
          listens ? native::JitEntries::PerCall : native::JitEntries::Batch;
      break;
    case JitEntriesChoice::All:
      codegen.eager = native::JitEntries::All;
      break;
    case JitEntriesChoice::Batch:
      codegen.eager = native::JitEntries::Batch;
      break;
    case JitEntriesChoice::PerCall:
      codegen.eager = native::JitEntries::PerCall;
      break;
    }
    native::JitObject object;
    bool fill = frontCacheKey && !options.pipeline;
    auto compiled =
        native::jitCompile(module, codegen, fill ? &object : nullptr);
    if (!compiled) {
      fail(llvm::toString(compiled.takeError()));
      return nullptr;
    }
    if (fill)
      fillFrontCache(object);
    if (compileTime) {
      native::CompileTimes t = native::lastCompileTimes();
      std::string pipeline;
      if (t.largeModule)
        pipeline = "; a large module: the short LLVM pipeline";
      else if (!t.cached)
        pipeline = std::string("; the ") + native::pipelineName(t.pipeline) +
                   " LLVM pipeline";
      llvm::errs() << llvm::formatv(
          "compile time: {0:f2} ms (lowering {1:f2}, translation {2:f2}, "
          "LLVM optimization {3:f2}, code generation {4:f2}{5}{6})\n",
          t.total(), t.lowering, t.translation, t.optimization, t.codegen,
          t.setup > 0 ? llvm::formatv(", JIT setup {0:f2}", t.setup).str()
                      : std::string(),
          pipeline +
              (t.deferred
                   ? std::string("; the ") +
                         (codegen.eager == native::JitEntries::Batch
                              ? "per-call entries and slow loops"
                              : "batch entries' fast loops") +
                         llvm::formatv(" on first use ({0} function{1})",
                                       t.deferredFunctions,
                                       t.deferredFunctions == 1 ? "" : "s")
                             .str()
                   : std::string()));
    }
    engine = rt::Engine::native(*compiled, options, error);
  }
  if (!engine) {
    fail(error);
    return nullptr;
  }
  if (!engine->note().empty())
    llvm::errs() << "netvm-run: note: " << engine->note() << "\n";
  return engine;
}

static int run(int argc, char **argv) {
  if (cl::Option *llvmStats = cl::getRegisteredOptions().lookup("stats-json"))
    llvmStats->setArgStr("llvm-stats-json");
  statsJson.setArgStr("stats-json");
  registerMachineOptions();
  driver::configureHelp(runCategory, /*showMLIROptions=*/false);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "netvm-run (netvm) " NETVM_VERSION "\n"
       << "built with LLVM " LLVM_VERSION_STRING "\n";
  });
  cl::ParseCommandLineOptions(
      argc, argv,
      "netvm-run - run a NetVM application over packets\n\n"
      "Instantiates the application (running its init handlers), pushes\n"
      "every input packet through a source and reports where packets left\n"
      "the application (sinks), what was dropped and every exception.\n\n"
      "Compiled code is kept in $NETVM_CACHE_DIR (default\n"
      "$XDG_CACHE_HOME/netvm/jit or ~/.cache/netvm/jit; NETVM_CACHE=off\n"
      "keeps nothing), the least recently used going once it holds more\n"
      "than $NETVM_CACHE_MAX_MB MiB (default 256). A second run of a\n"
      "tcpdump expression with -w or -q, or of NetIL or .mlir files, over\n"
      "a pcap file starts without the compiler (docs/native.md).\n\n"
      "Examples:\n"
      "  netvm-run filter.netil -r trace.pcap          per-sink summary\n"
      "  netvm-run filter.netil -r trace.pcap -v       every packet\n"
      "  netvm-run app.nvapp -r in.pcap -w 'out-%s.pcap'\n"
      "  netvm-run test.netil --hex-packet test_1.txt -v\n"
      "  netvm-run filter.netil -r big.pcap -j 2 --throughput   two threads\n"
      "  netvm-run app.nvapp -r big.pcap --pipeline -j 2        NetPEs on "
      "two threads\n"
      "  netvm-run app.nvapp -r big.pcap --stages 'rx;work:2;tx'  a stage on "
      "two threads\n"
      "  netvm-run app.nvapp -r big.pcap --stages 'rx;work;tx' --dynamic\n"
      "                                   threads moved between stages\n"
      "  netvm-run app.nvapp -r in.pcap --engine=emu --stats-json=s.json\n"
      "                                   on the ME emulator, with statistics\n"
      "  netvm-run filter.netil -i eth0 -c 1000      live capture (root)\n");

  int inputKinds = dumpCode ? 1
                            : !pcapInput.empty() + !hexInput.empty() +
                                  !hexPackets.empty() + !liveDevice.empty();
  if (inputKinds != 1)
    return fail("give exactly one packet input: -r FILE, --hex FILE, "
                "--hex-packet FILE... or -i INTERFACE");
  if (threads == 0)
    return fail("-j needs at least one thread");
  EngineKind kind = selectedEngine();
  if (useInterpreter && engineKind.getNumOccurrences() &&
      engineKind != EngineKind::Interpreter)
    return fail("--interp and --engine name different engines");
  if ((threads > 1 || pipelined()) &&
      (kind != EngineKind::Native || pullCount > 0))
    return fail("-j and --pipeline (and --stages, --dynamic) run native "
                "code in push mode; the interpreter, the emulator and --pull "
                "use one thread");
  bool emulates = kind == EngineKind::Emulator || kind == EngineKind::Split;
  if (emulates && pullCount > 0)
    return fail("--pull: the ME emulator runs applications in push mode "
                "only (the ME back end has no pull handlers)");
  if (!emulates) {
    if (statsJson.getNumOccurrences())
      return fail("--stats-json reports the ME emulator: use it with "
                  "--engine=emu or split");
    for (const auto &option : machineOptions)
      if (option->getNumOccurrences())
        return fail("--" + option->ArgStr +
                    " configures the ME emulator: use it with --engine=emu "
                    "or split");
  }
  if (optLevel < '0' || optLevel > '3')
    return fail("unknown optimization level -O" +
                std::string(1, optLevel.getValue()));

  std::string error;
  FailureOr<driver::Input> input = driver::resolveInput(inputOptions(), error);
  if (failed(input))
    return fail(error);
  DialectRegistry registry;
  driver::registerDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  // A tcpdump expression is compiled for its capture, as pcap_compile is:
  // the link type and byte order of the trace, and the netmask (tcpdump
  // -r gives 0). The input opens first.
  std::unique_ptr<rt::PacketReader> reader;
  if (input->isPcapFilter() && (!pcapInput.empty() || !liveDevice.empty())) {
    reader = openInput({"in"});
    if (!reader)
      return 1;
    if (!pcapfilter::isSupportedLinkType(reader->linkType())) {
      std::string name = !pcapInput.empty() ? pcapInput : liveDevice;
      return fail(name + ": link type " + rt::linkTypeName(reader->linkType()) +
                  ": netvm compiles tcpdump expressions for Ethernet, Linux "
                  "cooked v1 and v2, raw IP, and BSD and OpenBSD loopback "
                  "frames");
    }
    input->linkType = reader->linkType();
    input->linkSwapped = reader->swapped();
    input->netmask = reader->netmask();
  }
  llvm::SourceMgr sourceMgr;
  driver::DiagnosticPrinter printer(sourceMgr, context, "netvm-run");
  // A compilation that said something (a warning) is not stored in the
  // front cache: a hit would run without saying it.
  context.getDiagEngine().registerHandler([](Diagnostic &) {
    frontCacheKey.reset();
    return failure(); // the printer shows it
  });
  OwningOpRef<ModuleOp> module = driver::load(context, sourceMgr, *input);
  if (!module)
    return 1;
  int appLinkType =
      (*module->getOps<ApplicationOp>().begin()).linkTypeOrEthernet();
  unsigned level = optLevel - '0';
  if (kind == EngineKind::Interpreter && optLevel.getNumOccurrences() == 0)
    level = 0;
  // The pipeline's plan may split a fat NetPE in the application as
  // loaded (createEngine).
  OwningOpRef<ModuleOp> loaded;
  if (pipelined())
    loaded = module->clone();
  // The split engine optimizes each of its parts for its target.
  if ((kind != EngineKind::Split || dumpCode) &&
      failed(driver::optimize(*module, level, nullptr,
                              kind == EngineKind::Emulator
                                  ? driver::OptimizeFor::ME
                                  : driver::OptimizeFor::Native)))
    return 1;
  if (dumpCode) {
    module->print(llvm::outs());
    return 0;
  }
  // A filter's packets either match (leave through a sink) or not: -c
  // counts the matches, as tcpdump -c counts what its filter accepts.
  bool isFilter = input->kind != driver::Input::Kind::Files;
  int status = 1;
  // Whether the runtime listens to every packet (outputs to write, packet
  // lines, results): which entries to compile first.
  bool listens = !writePattern.empty() || verbose || resultsFormat || json ||
                 dumpData || pullCount > 0 || (isFilter && !quiet);
  std::unique_ptr<rt::Engine> engine = createEngine(
      *module, loaded ? *loaded : ModuleOp(), level, listens, status);
  if (!engine)
    return status;
  if (!reader)
    reader = openInput(engine->sourceNames());
  // -r with '%s': one pcap per source, each packet into its own.
  bool perSource = llvm::StringRef(pcapInput).contains("%s");
  if (!reader)
    return 1;
  engine->linkType = appLinkType;
  if (!rt::checkLinkType(*reader, error, engine->linkType)) {
    std::string name = !pcapInput.empty() ? pcapInput : liveDevice;
    return fail(name.empty() ? error : name + ": " + error);
  }

  unsigned source = 0;
  if (!sourceName.empty()) {
    std::optional<unsigned> found = engine->findSource(sourceName);
    if (!found)
      return fail("the application has no source '" + sourceName +
                  "' (sources: " + llvm::join(engine->sourceNames(), ", ") +
                  ")");
    source = *found;
  } else if (engine->sourceNames().empty() && pullCount == 0) {
    return fail("the application has no source to push packets into");
  }

  // A filter prints a line per matching packet on standard output, as
  // tcpdump does, unless its packets go elsewhere or another listing was
  // asked for; the summary then goes to standard error.
  bool lines = isFilter && !quiet && writePattern.empty() && !verbose &&
               !json && !resultsFormat && !dumpData && pullCount == 0;
  std::optional<tools::PacketLines> packetLines;
  if (lines) {
    tools::LineOptions lineOptions;
    lineOptions.timestamps = timeFormat.getNumOccurrences();
    lineOptions.linkHeader = linkHeader;
    lineOptions.hex =
        std::max(hexDump.getNumOccurrences(), hexAsciiDump.getNumOccurrences());
    lineOptions.ascii = hexAsciiDump.getNumOccurrences() > 0;
    lineOptions.asciiOnly = asciiDump;
    lineOptions.linkType = reader->linkType();
    packetLines.emplace(protodb::Database::builtin(), lineOptions);
  }
  // The summary goes where it does not mix with what standard output
  // carries: packet lines, or the pcap file of -w -.
  llvm::raw_ostream &os =
      lines || writePattern == "-" ? llvm::errs() : llvm::outs();
  Report report(*engine, os);
  if (!report.openWriters(reader->linkType(), reader->snapLength()))
    return 1;
  if (isFilter && input->language == driver::FilterLanguage::PcapFilter)
    report.shortPacketsAreRejections();
  rt::PacketResult init = engine->initialize();
  if (!engine->failure().empty())
    return fail(engine->failure());
  if (resultsFormat)
    report.resultLines(0, init);
  for (const rt::ExceptionReport &e : init.exceptions)
    llvm::errs() << "netvm-run: warning: init handler of @" << report.peName(e)
                 << " raised " << e.kindName() << " at " << e.location
                 << (e.detail.empty() ? "" : ": ") << e.detail << "\n";

  rt::StreamStats stats;
  bool inputOk = true;
  if (pullCount > 0) {
    // Pull until the count is reached, nothing comes out, or the input is
    // used up (a pull after that could only spin on empty receives).
    bool exhausted = false;
    engine->setSourcePuller([&](unsigned) -> std::optional<rt::TracePacket> {
      rt::TracePacket packet;
      while (!(maxPackets && stats.packets >= maxPackets) && !interrupted) {
        if (reader->next(packet, error)) {
          ++stats.packets;
          return packet;
        }
        if (!reader->timedOut())
          break;
      }
      inputOk = error.empty();
      exhausted = true;
      return std::nullopt;
    });
    auto start = std::chrono::steady_clock::now();
    uint64_t number = 0;
    for (unsigned sink = 0; sink < engine->sinkNames().size() && !exhausted;
         ++sink)
      for (uint64_t i = 0; i < pullCount && !exhausted; ++i) {
        rt::PacketResult result = engine->pull(sink);
        if (result.outputs.empty() && result.exceptions.empty() &&
            !result.drops)
          break;
        report.packet(++number,
                      result.outputs.empty() ? 0 : result.outputs[0].length,
                      result);
      }
    stats.processSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
  } else {
    rt::StreamOptions streamOptions;
    streamOptions.chunk = chunkSize;
    streamOptions.stop = &interrupted;
    // -w: outputs go to the files as they leave (no per-packet results).
    auto onOutput = [&](unsigned sink, const rt::PacketView &packet) {
      report.write(sink, packet);
    };
    rt::OutputFn outputFn = onOutput;
    if (!writePattern.empty())
      streamOptions.onOutput = &outputFn;
    bool perPacket = verbose || resultsFormat || lines;
    if (isFilter)
      streamOptions.maxMatches = maxPackets;
    else
      streamOptions.maxPackets = maxPackets;
    auto onPacket = [&](uint64_t number, const netvm_packet &packet,
                        const rt::PacketResult &result) {
      report.packet(number, packet.length, result, /*written=*/true);
      if (packetLines && !result.outputs.empty()) {
        packetLines->print(llvm::outs(), packet);
        if (lineBuffered)
          llvm::outs().flush();
      }
    };
    rt::StreamFn fn = onPacket;
    inputOk = engine->runStream(
        source, *reader, streamOptions, perPacket ? &fn : nullptr,
        lines ? rt::ResultDetail::Verdicts : rt::ResultDetail::Full, stats,
        error);
  }
  if (compileTime && selectedEngine() == EngineKind::Native) {
    native::DeferredCompiles deferred = native::deferredCompiles();
    if (deferred.count)
      llvm::errs() << llvm::formatv("compile time: {0} deferred "
                                    "entr{1} compiled on first use, {2:f2} "
                                    "ms\n",
                                    deferred.count,
                                    deferred.count == 1 ? "y" : "ies",
                                    deferred.milliseconds);
  }
  // A read error (a trace cut mid-record) comes after what was read, as
  // with tcpdump: the packets and the summary first, then the error, which
  // names the file.
  std::string inputName = !pcapInput.empty()    ? pcapInput.getValue()
                          : !hexInput.empty()   ? hexInput.getValue()
                          : !liveDevice.empty() ? liveDevice.getValue()
                                                : std::string();
  if (!inputOk && !inputName.empty() &&
      !llvm::StringRef(error).starts_with(inputName + ":"))
    error = inputName + ": " + error;
  // A failure of the engine (the emulated machine faulted) loses results:
  // never report the rest as if it were complete.
  if (!engine->failure().empty())
    return fail(engine->failure());
  if (throughput) {
    std::string how =
        kind == EngineKind::Interpreter ? "interpreter"
        : kind == EngineKind::Emulator  ? "ME emulator"
        : kind == EngineKind::Split     ? "split: ME emulator, then the JIT"
        : pullCount
            ? "one thread"
            : llvm::formatv("{0} thread{1}, {2}", engine->threads(),
                            engine->threads() == 1 ? "" : "s",
                            ranPipeline ? "pipeline" : "run to completion")
                  .str();
    llvm::errs() << llvm::formatv(
        "netvm-run: {0} packets: reading {1:f1} ms, processing {2:f1} ms "
        "({3:f2} Mpackets/s; {4})\n",
        stats.packets, stats.readSeconds * 1e3, stats.processSeconds * 1e3,
        stats.processSeconds > 0 ? stats.packets / stats.processSeconds / 1e6
                                 : 0.0,
        how);
  }
  if (engine->nativeRunner() && (dynamicPolicy.getNumOccurrences() ||
                                 llvm::StringRef(stagesPlan).contains(':')))
    printPipelineStats(engine->nativeRunner());
  if (!statsJson.empty() && engine->emulatorStats()) {
    std::string text = me::statsToJson(*engine->emulatorStats()) + "\n";
    if (statsJson == "-") {
      llvm::outs() << text;
    } else {
      if (llvm::Error e = driver::writeTextFile(statsJson, text))
        return fail("cannot write " + statsJson + ": " +
                    llvm::toString(std::move(e)));
    }
  }
  if (resultsFormat)
    report.memories();
  else
    report.summary(stats.packets,
                   engine->sourceNames().empty() ? std::string()
                   : perSource ? llvm::join(engine->sourceNames(), ", ")
                               : engine->sourceNames()[source],
                   pullCount > 0);
  if (!inputOk) {
    llvm::outs().flush(); // the summary before the error
    return fail(error);
  }
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  takeFrontCacheKey();
  int status = run(argc, argv);
  // Standard output that could not be written (a full disk, a closed
  // pipe) is an ordinary error, and the results are not complete.
  llvm::outs().flush();
  if (std::error_code ec = llvm::outs().error()) {
    llvm::outs().clear_error();
    fail("cannot write standard output: " + ec.message());
    return status ? status : 1;
  }
  return status;
}
