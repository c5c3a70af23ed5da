//===- netvm-run.cpp - Run a NetVM application over packets -------------------===//
//
// Loads an application (NetIL, .nvapp or .mlir), instantiates it (init
// handlers), feeds it packets from a pcap file or from hexadecimal text and
// reports what came out: per packet with -v, as a per-sink and per-NetPE
// summary otherwise (or JSON), and writes forwarded packets to pcap files
// with -w. Native code from the JIT by default; --interp runs the reference
// interpreter instead.
//
//===----------------------------------------------------------------------===//

#include "netvm/Driver/Driver.h"
#include "netvm/Runtime/Engine.h"
#include "netvm/io/PacketIO.h"
#include "netvm/Target/Native.h"
#include "netvm/runtime.h"

#include "NetVM/NetVMOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <csignal>
#include <functional>
#include <map>

using namespace mlir;
using namespace netvm;
namespace cl = llvm::cl;

static cl::OptionCategory runCategory("netvm-run options");

static cl::list<std::string>
    inputs(cl::Positional, cl::ZeroOrMore, cl::cat(runCategory),
           cl::desc("<application: NetIL files (chained in order), one "
                    ".nvapp description, or one .mlir file; or, like "
                    "tcpdump, the words of a filter expression>"));
static cl::opt<std::string> pcapFilter(
    "pcap-filter",
    cl::desc("Run this tcpdump expression (man pcap-filter) instead of an "
             "application: accepted packets leave through sink 'match'. "
             "Words after the options that name no file are taken as one "
             "too, as tcpdump does"),
    cl::value_desc("expression"), cl::cat(runCategory));
static cl::opt<std::string> expressionFile(
    "F",
    cl::desc("Read the tcpdump expression from this file, as tcpdump -F "
             "does ('#' starts a comment); errors give file:line:col"),
    cl::value_desc("file"), cl::cat(runCategory));
static cl::opt<std::string> pflFilter(
    "pfl",
    cl::desc("Run this NetPFL filter (docs/netpfl.md) instead of an "
             "application: matching packets leave through sink 'match' (or "
             "'portN' after 'returnpacket on port N')"),
    cl::value_desc("filter"), cl::cat(runCategory));
static cl::opt<std::string> protoDB(
    "protodb",
    cl::desc("The NetPDL protocol database of --pfl (default: netvm's "
             "own, see docs/protodb.md)"),
    cl::value_desc("file.xml"), cl::cat(runCategory));
static cl::opt<std::string>
    pcapInput("r", cl::desc("Read packets from a pcap file"),
              cl::value_desc("trace.pcap"), cl::cat(runCategory));
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
    cl::value_desc("interface"), cl::cat(runCategory));
static cl::opt<bool> promiscuous(
    "promiscuous", cl::desc("With -i: put the interface in promiscuous mode"),
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
                             cl::cat(runCategory));
static cl::opt<std::string> writePattern(
    "w",
    cl::desc("Write forwarded packets to pcap files: '%s' in the name is "
             "replaced by the sink name (one file per sink); without '%s' "
             "the application must have a single sink"),
    cl::value_desc("pattern"), cl::cat(runCategory));
static cl::opt<uint64_t> maxPackets("c",
                                    cl::desc("Stop after this many packets"),
                                    cl::value_desc("count"),
                                    cl::cat(runCategory));
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
static cl::opt<bool> resultsFormat(
    "results",
    cl::desc("Print every packet's outcome and the final memories in the "
             "line format of the standalone runtime (runtime/native/main.c), "
             "for comparing engines: '#N out SINK HEX info HEX', '#N exception "
             "KIND PE HANDLER LOCATION', '#N dropped N', 'data PE HEX'"),
    cl::cat(runCategory));
static cl::opt<bool> dumpData(
    "dump-data",
    cl::desc("Print every NetPE's data memory after the run"),
    cl::cat(runCategory));
static cl::opt<uint64_t> pullCount(
    "pull",
    cl::desc("Pull mode: pull up to this many packets out of every sink fed "
             "by a pull connection, taking packets from the input as the "
             "application asks for them"),
    cl::value_desc("count"), cl::init(0), cl::cat(runCategory));
static cl::opt<bool> useInterpreter(
    "interp",
    cl::desc("Run the reference interpreter instead of native code"),
    cl::init(false), cl::cat(runCategory));
static cl::opt<char> optLevel(
    "O",
    cl::desc("Optimization level -O0..-O3 (default: -O2 for native code; "
             "the interpreter runs -O0 IR unless -O is given)"),
    cl::Prefix, cl::init('2'), cl::cat(runCategory));
static cl::opt<bool> compileTime(
    "compile-time",
    cl::desc("Report how long JIT compilation took, by phase"),
    cl::cat(runCategory));
static cl::opt<unsigned> threads(
    "j",
    cl::desc("Native code: threads to run packets on (default 1). Stateless "
             "applications get one replica per thread; stateful ones run on "
             "one thread unless --pipeline. Outputs keep the arrival order"),
    cl::value_desc("N"), cl::init(1), cl::Prefix, cl::cat(runCategory));
static cl::opt<bool> pipeline(
    "pipeline",
    cl::desc("Native code: split the NetPEs into -j stages (one thread "
             "each, in topological order) connected by rings; every NetPE's "
             "state stays on one thread, so stateful applications run in "
             "parallel too"),
    cl::cat(runCategory));
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

namespace {
struct SinkStats {
  uint64_t packets = 0, bytes = 0;
  std::unique_ptr<rt::PcapWriter> writer;
};
} // namespace

/// Set by SIGINT/SIGTERM during a live capture: stop reading, report.
static volatile std::sig_atomic_t interrupted = 0;
static void onInterrupt(int) { interrupted = 1; }

static void printBytes(llvm::raw_ostream &os, llvm::ArrayRef<uint8_t> bytes) {
  for (size_t i = 0; i < bytes.size(); i += 16) {
    os << "    " << llvm::format_hex_no_prefix(i, 4) << " ";
    for (size_t j = i; j < std::min(bytes.size(), i + 16); ++j)
      os << " " << llvm::format_hex_no_prefix(bytes[j], 2);
    os << "\n";
  }
}


int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  driver::configureHelp(runCategory, /*showMLIROptions=*/false);
  cl::ParseCommandLineOptions(
      argc, argv,
      "netvm-run - run a NetVM application over packets\n\n"
      "Instantiates the application (running its init handlers), pushes\n"
      "every input packet through a source and reports where packets left\n"
      "the application (sinks), what was dropped and every exception.\n\n"
      "Examples:\n"
      "  netvm-run filter.netil -r trace.pcap          per-sink summary\n"
      "  netvm-run filter.netil -r trace.pcap -v       every packet\n"
      "  netvm-run app.nvapp -r in.pcap -w 'out-%s.pcap'\n"
      "  netvm-run test.netil --hex-packet test_1.txt -v\n"
      "  netvm-run filter.netil -r big.pcap -j 2 --throughput   two threads\n"
      "  netvm-run app.nvapp -r big.pcap --pipeline -j 2        NetPEs on "
      "two threads\n"
      "  netvm-run filter.netil -i eth0 -c 1000      live capture (root)\n");

  int inputKinds = !pcapInput.empty() + !hexInput.empty() +
                   !hexPackets.empty() + !liveDevice.empty();
  if (inputKinds != 1) {
    llvm::errs() << "netvm-run: give exactly one packet input: -r FILE, "
                    "--hex FILE, --hex-packet FILE... or -i INTERFACE\n";
    return 1;
  }
  if (threads == 0) {
    llvm::errs() << "netvm-run: -j needs at least one thread\n";
    return 1;
  }
  if ((threads > 1 || pipeline) && (useInterpreter || pullCount > 0)) {
    llvm::errs() << "netvm-run: -j and --pipeline run native code in push "
                    "mode; the interpreter and --pull use one thread\n";
    return 1;
  }
  if (optLevel < '0' || optLevel > '3') {
    llvm::errs() << "netvm-run: unknown optimization level -O" << optLevel
                 << "\n";
    return 1;
  }

  DialectRegistry registry;
  driver::registerDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  // An application from files, or a tcpdump expression (--pcap-filter, or
  // words that name no file, as in `netvm-run -r f.pcap tcp port 80`).
  std::string expression = pflFilter.getNumOccurrences() ? pflFilter
                                                         : pcapFilter;
  bool isPFL = pflFilter.getNumOccurrences() > 0;
  bool fromFile = expressionFile.getNumOccurrences() > 0;
  bool isExpression =
      isPFL || fromFile || pcapFilter.getNumOccurrences() > 0;
  if (isPFL + fromFile + (pcapFilter.getNumOccurrences() > 0) > 1) {
    llvm::errs() << "netvm-run: give one filter: --pfl, --pcap-filter or "
                    "-F\n";
    return 1;
  }
  if (isExpression && !inputs.empty()) {
    llvm::errs() << "netvm-run: "
                 << (isPFL ? "--pfl" : fromFile ? "-F" : "--pcap-filter")
                 << " runs a filter: give no application files or "
                    "expression words with it\n";
    return 1;
  }
  if (!isExpression && inputs.empty()) {
    llvm::errs() << "netvm-run: no application: give NetIL files, an .nvapp "
                    "or .mlir file, or a filter expression\n";
    return 1;
  }
  if (!isExpression && !llvm::sys::fs::exists(inputs.front())) {
    llvm::StringRef first = inputs.front();
    bool looksLikeFile = first.contains('/') || first.ends_with(".netil") ||
                         first.ends_with(".nvapp") || first.ends_with(".mlir");
    if (!looksLikeFile) {
      isExpression = true;
      expression = llvm::join(inputs, " ");
    }
  }
  OwningOpRef<ModuleOp> module;
  if (isExpression) {
    driver::FilterOptions filterOptions;
    filterOptions.language = isPFL ? driver::FilterLanguage::NetPFL
                                   : driver::FilterLanguage::PcapFilter;
    filterOptions.protoDB = protoDB;
    std::string filterError;
    module = fromFile ? driver::compileFilterFile(context, expressionFile,
                                                  filterOptions, filterError)
                      : driver::compileFilter(context, expression,
                                              filterOptions, filterError);
    if (!module) {
      llvm::errs() << "netvm-run: " << filterError << "\n";
      return 1;
    }
  } else {
    module = driver::loadApplication(context, sourceMgr, inputs);
  }
  if (!module)
    return 1;
  unsigned level = optLevel - '0';
  if (useInterpreter && optLevel.getNumOccurrences() == 0)
    level = 0;
  if (failed(driver::optimize(*module, level)))
    return 1;

  rt::EngineOptions options;
  options.watchdogBudget = watchdog;
  options.defaultInfoSize = infoSize;
  std::string error;
  // Native code in push mode runs through a runner (any number of threads);
  // the interpreter and pull mode through an engine, one packet at a time.
  bool runnerMode = !useInterpreter && pullCount == 0;
  std::unique_ptr<rt::Engine> vm;
  const netvm_app_desc *desc = nullptr;
  if (useInterpreter) {
    vm = rt::Engine::interpreter(driver::getApplication(*module), options,
                                 error);
  } else {
    native::CodegenOptions codegen;
    codegen.optLevel = level;
    codegen.lowering.defaultInfoSize = infoSize;
    codegen.lowering.forwardLinks = pipeline;
    auto compiled = native::jitCompile(*module, codegen);
    if (!compiled) {
      llvm::errs() << "netvm-run: " << llvm::toString(compiled.takeError())
                   << "\n";
      return 1;
    }
    desc = *compiled;
    if (compileTime) {
      native::CompileTimes t = native::lastCompileTimes();
      llvm::errs() << llvm::formatv(
          "compile time: {0:f2} ms (lowering {1:f2}, translation {2:f2}, "
          "LLVM optimization {3:f2}, code generation {4:f2})\n",
          t.total(), t.lowering, t.translation, t.optimization, t.codegen);
    }
    if (!runnerMode)
      vm = rt::Engine::native(desc, options, error);
  }
  netvm_runner *runner = nullptr;
  auto destroyRunner = llvm::make_scope_exit([&] {
    netvm_runner_destroy(runner);
  });
  if (runnerMode) {
    netvm_runner_options ro{};
    ro.mode = pipeline ? NETVM_RUN_PIPELINE : NETVM_RUN_TO_COMPLETION;
    ro.threads = threads;
    ro.batch = runnerBatch;
    ro.watchdog = watchdog;
    char message[512] = {0};
    runner = netvm_runner_create(desc, &ro, message, sizeof message);
    if (!runner) {
      llvm::errs() << "netvm-run: " << message << "\n";
      return 1;
    }
    if (*netvm_runner_note(runner))
      llvm::errs() << "netvm-run: note: " << netvm_runner_note(runner)
                   << "\n";
  } else if (!vm) {
    llvm::errs() << "netvm-run: " << error << "\n";
    return 1;
  }

  // Names, counters and memories, whichever way the application runs.
  std::vector<std::string> sourceList, sinkList, peList;
  if (runnerMode) {
    for (uint32_t i = 0; i < desc->num_sources; ++i)
      sourceList.push_back(desc->source_names[i]);
    for (uint32_t i = 0; i < desc->num_sinks; ++i)
      sinkList.push_back(desc->sink_names[i]);
    for (uint32_t i = 0; i < desc->num_pes; ++i)
      peList.push_back(desc->pes[i].name);
  } else {
    sourceList = vm->sourceNames().vec();
    sinkList = vm->sinkNames().vec();
    peList = vm->peNames().vec();
  }
  llvm::ArrayRef<std::string> sources = sourceList, sinks = sinkList,
                              peNames = peList;
  auto peCounters = [&](unsigned pe) -> rt::PECounters {
    if (!runnerMode)
      return vm->counters(pe);
    netvm_pe_counters c;
    netvm_runner_pe_counters(runner, pe, &c);
    return {c.runs, c.sent, c.dropped, c.exceptions};
  };
  auto dataMemory = [&](unsigned pe) -> llvm::ArrayRef<uint8_t> {
    if (!runnerMode)
      return vm->dataMemory(pe);
    uint32_t size = 0;
    uint8_t *data =
        netvm_instance_data(netvm_runner_instance(runner, 0), pe, &size);
    return {data, size};
  };
  auto sharedMemory = [&]() -> llvm::ArrayRef<uint8_t> {
    if (!runnerMode)
      return vm->sharedMemory();
    uint32_t size = 0;
    uint8_t *data = netvm_instance_shared(netvm_runner_instance(runner, 0),
                                          &size);
    return {data, size};
  };

  // Packet input.
  std::unique_ptr<rt::PacketReader> reader;
  if (!liveDevice.empty()) {
    reader = rt::PacketReader::openLive(liveDevice, promiscuous, error);
    if (!reader) {
      llvm::errs() << "netvm-run: " << error << "\n";
      return 1;
    }
    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);
  } else if (!pcapInput.empty() || !hexInput.empty()) {
    bool hex = !hexInput.empty();
    reader = rt::PacketReader::open(hex ? hexInput : pcapInput, hex, error);
    if (!reader) {
      llvm::errs() << "netvm-run: " << error << "\n";
      return 1;
    }
  }
  size_t nextHexPacket = 0;
  uint64_t packetsRead = 0;
  bool inputFailed = false;
  // A live capture had nothing within its read timeout: not the end.
  bool liveTimeout = false;
  auto readPacket = [&](rt::TracePacket &packet) -> bool {
    liveTimeout = false;
    if ((maxPackets && packetsRead >= maxPackets) || interrupted)
      return false;
    if (reader) {
      if (!reader->next(packet, error)) {
        if (reader->timedOut()) {
          liveTimeout = true;
          return false;
        }
        if (!error.empty()) {
          llvm::errs() << "netvm-run: " << error << "\n";
          inputFailed = true;
        }
        return false;
      }
    } else {
      if (nextHexPacket == hexPackets.size())
        return false;
      if (!rt::PacketReader::readHexPacket(hexPackets[nextHexPacket++],
                                           packet, error)) {
        llvm::errs() << "netvm-run: " << error << "\n";
        inputFailed = true;
        return false;
      }
    }
    ++packetsRead;
    return true;
  };
  int linkType = reader ? reader->linkType() : 1 /* DLT_EN10MB */;

  unsigned source = 0;
  if (!sourceName.empty()) {
    auto it = llvm::find(sources, sourceName);
    if (it == sources.end()) {
      llvm::errs() << "netvm-run: the application has no source '"
                   << sourceName << "' (sources: "
                   << llvm::join(sources, ", ") << ")\n";
      return 1;
    }
    source = it - sources.begin();
  } else if (sources.empty() && pullCount == 0) {
    llvm::errs() << "netvm-run: the application has no source to push "
                    "packets into\n";
    return 1;
  }

  std::vector<SinkStats> sinkStats(sinks.size());
  if (!writePattern.empty()) {
    bool perSink = llvm::StringRef(writePattern).contains("%s");
    if (!perSink && sinks.size() != 1) {
      llvm::errs() << "netvm-run: -w '" << writePattern << "' has no '%s' "
                   << "but the application has " << sinks.size()
                   << " sinks; use a pattern such as 'out-%s.pcap'\n";
      return 1;
    }
    for (auto [i, name] : llvm::enumerate(sinks)) {
      std::string path = writePattern;
      if (perSink) {
        size_t at;
        while ((at = path.find("%s")) != std::string::npos)
          path.replace(at, 2, name);
      }
      sinkStats[i].writer = rt::PcapWriter::create(path, linkType, error);
      if (!sinkStats[i].writer) {
        llvm::errs() << "netvm-run: " << error << "\n";
        return 1;
      }
    }
  }
  llvm::raw_ostream &os = llvm::outs();
  llvm::json::Array packetResults; // -v --json
  std::map<std::string, uint64_t> exceptionCounts;
  uint64_t drops = 0, unconnected = 0, packetNo = 0;
  auto account = [&](const rt::PacketResult &result, uint64_t number,
                     size_t length) {
    for (const rt::Output &out : result.outputs) {
      SinkStats &stats = sinkStats[out.sink];
      ++stats.packets;
      stats.bytes += out.bytes.size();
      if (stats.writer) {
        rt::TracePacket packet;
        packet.bytes = out.bytes;
        packet.wireLength = out.bytes.size();
        packet.seconds = out.seconds;
        packet.microseconds = out.microseconds;
        stats.writer->write(packet);
      }
    }
    for (const rt::ExceptionReport &e : result.exceptions)
      ++exceptionCounts[e.kind];
    drops += result.drops;
    unconnected += result.unconnected;
    if (resultsFormat) {
      for (const rt::Output &out : result.outputs)
        os << "#" << number << " out " << sinks[out.sink] << " "
           << llvm::toHex(out.bytes, true) << " info "
           << llvm::toHex(out.info, true) << "\n";
      for (const rt::ExceptionReport &e : result.exceptions)
        os << "#" << number << " exception " << e.kind << " " << e.pe << " "
           << e.handler << " " << e.location << "\n";
      if (result.drops)
        os << "#" << number << " dropped " << result.drops << "\n";
      if (result.unconnected)
        os << "#" << number << " unconnected " << result.unconnected << "\n";
      return;
    }
    if (!verbose)
      return;
    if (json) {
      llvm::json::Array outs, excs;
      for (const rt::Output &out : result.outputs)
        outs.push_back(llvm::json::Object{
            {"sink", sinks[out.sink]},
            {"bytes", llvm::toHex(out.bytes, /*LowerCase=*/true)}});
      for (const rt::ExceptionReport &e : result.exceptions)
        excs.push_back(llvm::json::Object{
            {"kind", e.kind}, {"pe", e.pe}, {"loc", e.location}});
      packetResults.push_back(llvm::json::Object{
          {"packet", static_cast<int64_t>(number)},
          {"length", static_cast<int64_t>(length)},
          {"outputs", std::move(outs)},
          {"exceptions", std::move(excs)},
          {"dropped", static_cast<int64_t>(result.drops)}});
      return;
    }
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
      os << "  exception " << e.kind << " in @" << e.pe << " (" << e.handler
         << " handler) at " << e.location;
      if (!e.detail.empty())
        os << ": " << e.detail;
      os << "\n";
    }
    if (result.drops && (!result.outputs.empty() || !result.exceptions.empty()))
      os << "  dropped " << result.drops << "\n";
  };

  // Runner events: what happened to each packet, in arrival order.
  bool wantEvents = verbose || resultsFormat || !writePattern.empty();
  rt::PacketResult current, initResult;
  rt::PacketBatch chunk;
  uint64_t chunkBase = 0;
  std::function<void(const netvm_event &)> onEvent =
      [&](const netvm_event &ev) {
        rt::PacketResult &result =
            ev.sequence == NETVM_SEQUENCE_INIT ? initResult : current;
        if (ev.type == NETVM_EVENT_OUTPUT) {
          rt::Output out;
          out.sink = ev.index;
          out.bytes.assign(ev.xb->packet, ev.xb->packet + ev.xb->length);
          if (ev.xb->info)
            out.info.assign(ev.xb->info, ev.xb->info + ev.xb->info_length);
          out.seconds = ev.xb->seconds;
          out.microseconds = ev.xb->microseconds;
          result.outputs.push_back(std::move(out));
        } else if (ev.type == NETVM_EVENT_EXCEPTION) {
          rt::ExceptionReport report;
          report.kind = netvm_exception_name(ev.index);
          if (ev.site) {
            static const char *const kinds[] = {"init", "push", "pull"};
            report.pe = ev.site->pe < peNames.size() ? peNames[ev.site->pe]
                                                     : std::string();
            report.handler = ev.site->handler < 3 ? kinds[ev.site->handler]
                                                  : "";
            report.location = ev.site->location;
          }
          result.exceptions.push_back(std::move(report));
        } else {
          current.drops = ev.drops;
          current.unconnected = ev.unconnected;
          account(current, ev.sequence + 1,
                  chunk[ev.sequence - chunkBase].length);
          current = rt::PacketResult();
        }
      };
  auto eventThunk = [](void *user, const netvm_event *ev) {
    (*static_cast<std::function<void(const netvm_event &)> *>(user))(*ev);
  };

  {
    rt::PacketResult init;
    if (runnerMode) {
      netvm_runner_set_events(runner, eventThunk, &onEvent);
      netvm_runner_init(runner);
      init = std::move(initResult);
      if (!wantEvents)
        netvm_runner_set_events(runner, nullptr, nullptr);
    } else {
      init.exceptions = vm->initialize();
    }
    if (resultsFormat)
      account(init, 0, 0);
    for (const rt::ExceptionReport &e : init.exceptions) {
      if (!resultsFormat)
        ++exceptionCounts[e.kind];
      llvm::errs() << "netvm-run: warning: init handler of @" << e.pe
                   << " raised " << e.kind << " at " << e.location
                   << (e.detail.empty() ? "" : ": ") << e.detail << "\n";
    }
  }

  using Clock = std::chrono::steady_clock;
  auto secondsSince = [](Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  double readSeconds = 0, processSeconds = 0;
  if (pullCount > 0) {
    bool exhausted = false;
    vm->setSourcePuller([&](unsigned) -> std::optional<rt::TracePacket> {
      rt::TracePacket packet;
      while (!readPacket(packet)) {
        if (liveTimeout)
          continue;
        exhausted = true;
        return std::nullopt;
      }
      return packet;
    });
    // Pull until the count is reached, nothing comes out, or the input is
    // used up (a pull after that could only spin on empty receives).
    auto start = Clock::now();
    for (unsigned sink = 0; sink < sinks.size() && !exhausted; ++sink)
      for (uint64_t i = 0; i < pullCount && !exhausted; ++i) {
        rt::PacketResult result = vm->pull(sink);
        if (result.outputs.empty() && result.exceptions.empty() &&
            !result.drops)
          break;
        account(result, ++packetNo,
                result.outputs.empty() ? 0 : result.outputs.front().bytes.size());
      }
    processSeconds = secondsSince(start);
  } else if (runnerMode) {
    // Chunks of packets in one arena, each run by the runner's threads.
    rt::TracePacket packet;
    bool more = true;
    while (more) {
      auto start = Clock::now();
      chunk.clear();
      while (chunk.size() < std::max(1u, chunkSize.getValue())) {
        if (!readPacket(packet)) {
          more = liveTimeout; // a quiet link: run what came so far
          break;
        }
        chunk.add(packet);
      }
      readSeconds += secondsSince(start);
      if (chunk.empty())
        continue;
      start = Clock::now();
      chunkBase = packetNo;
      netvm_runner_run(runner, source, chunk.packets(), chunk.size());
      processSeconds += secondsSince(start);
      packetNo += chunk.size();
    }
    // The runner's counters are the totals (events may be off).
    for (unsigned i = 0; i < sinks.size(); ++i)
      netvm_runner_sink_counters(runner, i, &sinkStats[i].packets,
                                 &sinkStats[i].bytes);
    netvm_counters totals;
    netvm_runner_counters(runner, &totals);
    drops = totals.dropped;
    unconnected = totals.unconnected;
    exceptionCounts.clear();
    for (uint32_t k = 0; k < NETVM_EXC_KINDS; ++k)
      if (totals.exceptions[k])
        exceptionCounts[netvm_exception_name(k)] = totals.exceptions[k];
  } else {
    rt::TracePacket packet;
    auto start = Clock::now();
    for (;;) {
      if (!readPacket(packet)) {
        if (liveTimeout)
          continue;
        break;
      }
      size_t length = packet.bytes.size();
      account(vm->push(source, packet), ++packetNo, length);
    }
    processSeconds = secondsSince(start); // reading included
  }
  if (throughput) {
    std::string how =
        runnerMode ? llvm::formatv("{0} thread{1}, {2}",
                                   netvm_runner_threads(runner),
                                   netvm_runner_threads(runner) == 1 ? "" : "s",
                                   pipeline ? "pipeline" : "run to completion")
                         .str()
                   : std::string(useInterpreter ? "interpreter" : "one thread");
    llvm::errs() << llvm::formatv(
        "netvm-run: {0} packets: reading {1:f1} ms, processing {2:f1} ms "
        "({3:f2} Mpackets/s; {4})\n",
        packetNo, readSeconds * 1e3, processSeconds * 1e3,
        processSeconds > 0 ? packetNo / processSeconds / 1e6 : 0.0, how);
  }
  if (inputFailed)
    return 1;

  if (resultsFormat) {
    for (auto [i, name] : llvm::enumerate(peNames))
      os << "data " << name << " " << llvm::toHex(dataMemory(i), true)
         << "\n";
    if (!sharedMemory().empty())
      os << "shared " << llvm::toHex(sharedMemory(), true) << "\n";
    return 0;
  }

  uint64_t exceptions = 0;
  for (auto &[kind, count] : exceptionCounts)
    exceptions += count;

  if (json) {
    llvm::json::Object sinkObj, excObj, peObj;
    for (auto [i, name] : llvm::enumerate(sinks))
      sinkObj[name] = llvm::json::Object{
          {"packets", static_cast<int64_t>(sinkStats[i].packets)},
          {"bytes", static_cast<int64_t>(sinkStats[i].bytes)}};
    for (auto &[kind, count] : exceptionCounts)
      excObj[kind] = static_cast<int64_t>(count);
    for (auto [i, name] : llvm::enumerate(peNames)) {
      rt::PECounters c = peCounters(i);
      peObj[name] = llvm::json::Object{
          {"invocations", static_cast<int64_t>(c.runs)},
          {"sent", static_cast<int64_t>(c.sent)},
          {"dropped", static_cast<int64_t>(c.dropped)},
          {"exceptions", static_cast<int64_t>(c.exceptions)}};
    }
    llvm::json::Object top{
        {"packets", static_cast<int64_t>(packetsRead)},
        {"source", sources.empty() ? "" : sources[source]},
        {"sinks", std::move(sinkObj)},
        {"dropped", static_cast<int64_t>(drops)},
        {"unconnected", static_cast<int64_t>(unconnected)},
        {"exceptions", std::move(excObj)},
        {"pes", std::move(peObj)}};
    if (verbose)
      top["results"] = std::move(packetResults);
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(top))) << "\n";
  } else {
    os << "packets: " << packetsRead;
    if (!sources.empty() && pullCount == 0)
      os << " (into source " << sources[source] << ")";
    os << "\n";
    for (auto [i, name] : llvm::enumerate(sinks))
      os << llvm::formatv("sink {0,-16} {1,10} packets {2,12} bytes\n", name,
                          sinkStats[i].packets, sinkStats[i].bytes);
    os << llvm::formatv("dropped {0,23}\n", drops);
    if (unconnected)
      os << llvm::formatv("unconnected {0,19}\n", unconnected);
    os << llvm::formatv("exceptions {0,20}", exceptions);
    if (!exceptionCounts.empty()) {
      os << " (";
      bool first = true;
      for (auto &[kind, count] : exceptionCounts) {
        os << (first ? "" : ", ") << kind << " " << count;
        first = false;
      }
      os << ")";
    }
    os << "\n";
    for (auto [i, name] : llvm::enumerate(peNames)) {
      rt::PECounters c = peCounters(i);
      os << llvm::formatv("pe {0,-18} {1,10} runs {2,8} sent {3,8} dropped "
                          "{4,8} exceptions\n",
                          name, c.runs, c.sent, c.dropped, c.exceptions);
    }
  }
  if (dumpData) {
    for (auto [i, name] : llvm::enumerate(peNames)) {
      os << "data memory of @" << name << " (" << dataMemory(i).size()
         << " bytes)\n";
      printBytes(os, dataMemory(i));
    }
    if (!sharedMemory().empty()) {
      os << "shared memory (" << sharedMemory().size() << " bytes)\n";
      printBytes(os, sharedMemory());
    }
  }
  return 0;
}
