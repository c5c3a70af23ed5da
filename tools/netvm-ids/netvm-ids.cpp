//===- netvm-ids.cpp - An IDS from Snort rules, run by netvm --------------===//
//
// Reads Snort rules (lib/Frontend/Snort), reports each rule it cannot take,
// compiles the rest into a NetVM application, runs it with the JIT or the
// interpreter over a pcap file or a live interface, and prints the alerts
// in Snort's alert_fast line format and, optionally, as JSON lines. The
// application can also be written out (--emit-app) for netc and netvm-run.
//
//===----------------------------------------------------------------------===//

#include "netvm/Driver/Driver.h"
#include "netvm/Frontend/Snort.h"
#include "netvm/Runtime/Engine.h"
#include "netvm/Runtime/Split.h"
#include "netvm/Target/ME/AppLayout.h"
#include "netvm/Target/Native.h"
#include "netvm/emu/Emulator.h"
#include "netvm/io/PacketIO.h"

#include "NetVM/NetVMOps.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <csignal>
#include <ctime>
#include <map>

using namespace netvm;
using namespace netvm::snort;
namespace cl = llvm::cl;

static cl::OptionCategory idsCategory("netvm-ids options");
static cl::list<std::string> ruleFiles(cl::Positional, cl::OneOrMore,
                                       cl::desc("<rules file>..."),
                                       cl::cat(idsCategory));
static cl::opt<std::string> pcapInput("r",
                                      cl::desc("Read packets from a pcap file"),
                                      cl::value_desc("file"),
                                      cl::cat(idsCategory));
static cl::opt<std::string>
    liveDevice("i", cl::desc("Capture from a network interface (root)"),
               cl::value_desc("interface"), cl::cat(idsCategory));
static cl::opt<uint64_t> maxPackets("c", cl::desc("Stop after N packets"),
                                    cl::value_desc("N"), cl::init(0),
                                    cl::cat(idsCategory));
static cl::list<std::string>
    vars("var", cl::desc("Define a rule variable, as a 'var' line does"),
         cl::value_desc("NAME=VALUE"), cl::cat(idsCategory));
static cl::opt<bool> useInterpreter("interp",
                                    cl::desc("Run on the reference interpreter "
                                             "instead of the JIT"),
                                    cl::cat(idsCategory));
enum class EngineKind { Native, Interpreter, Split };
static cl::opt<EngineKind> engineKind(
    "engine", cl::desc("What runs the IDS (default: native)"),
    cl::values(clEnumValN(EngineKind::Native, "native",
                          "native code from the JIT"),
               clEnumValN(EngineKind::Interpreter, "interp",
                          "the reference interpreter (also --interp)"),
               clEnumValN(EngineKind::Split, "split",
                          "decode and classify on the microengines (the "
                          "ME emulator), matching on the host (the JIT); "
                          "--timing adds the emulated figures")),
    cl::init(EngineKind::Native), cl::cat(idsCategory));
static cl::opt<unsigned> optLevel("O", cl::Prefix, cl::init(2),
                                  cl::desc("Optimization level, 0 to 3 "
                                           "(default 2; 0 with --interp)"),
                                  cl::cat(idsCategory));
static cl::opt<std::string>
    alertFile("A",
              cl::desc("Write alert_fast lines here (default: standard "
                       "output; 'none' for none)"),
              cl::value_desc("file"), cl::init("-"), cl::cat(idsCategory));
static cl::opt<std::string> jsonFile("json",
                                     cl::desc("Write every alert as a JSON "
                                              "line here"),
                                     cl::value_desc("file"),
                                     cl::cat(idsCategory));
static cl::opt<std::string>
    emitApp("emit-app",
            cl::desc("Write the application (.nvapp and NetIL) into a "
                     "directory and stop"),
            cl::value_desc("dir"), cl::cat(idsCategory));
static cl::opt<bool> checkOnly("check",
                               cl::desc("Only read the rules and report"),
                               cl::cat(idsCategory));
static cl::opt<bool> stats("timing",
                           cl::desc("Report compile times and packets/s on "
                                    "standard error"),
                           cl::cat(idsCategory));

static cl::opt<unsigned> rulesPerVerifier(
    "rules-per-verifier",
    cl::desc("Rules per verify NetPE (compile time against NetPE hops)"),
    cl::init(64), cl::Hidden, cl::cat(idsCategory));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "netvm-ids: error: " << message << "\n";
  return 1;
}

static volatile int interrupted = 0;
static void onInterrupt(int) { interrupted = 1; }

static double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

static uint32_t read16(llvm::ArrayRef<uint8_t> info, unsigned at) {
  return uint32_t(info[at]) << 8 | info[at + 1];
}
static uint32_t read32(llvm::ArrayRef<uint8_t> info, unsigned at) {
  return read16(info, at) << 16 | read16(info, at + 2);
}

static std::string dotted(uint32_t ip) {
  return llvm::formatv("{0}.{1}.{2}.{3}", ip >> 24, (ip >> 16) & 255,
                       (ip >> 8) & 255, ip & 255);
}

namespace {
/// Turns the info memory of the packets that reach sink `alert` into
/// alert lines.
class AlertWriter {
public:
  AlertWriter(const std::vector<Rule> &rules, llvm::raw_ostream *fast,
              llvm::raw_ostream *json)
      : rules(rules), fast(fast), json(json) {
    for (unsigned i = 0; i < rules.size(); ++i)
      bySid[rules[i].sid] = i;
  }

  void packet(uint64_t number, const rt::Output &out) {
    llvm::ArrayRef<uint8_t> info = out.info;
    if (info.size() < InfoSize)
      return;
    if (info[InfoOverflow]) {
      ++overflows;
      llvm::errs() << "netvm-ids: warning: packet " << number << ": more than "
                   << unsigned(MaxCandidates)
                   << " candidate rules or 1600 fast-pattern occurrences; "
                      "some rules were not checked\n";
    }
    unsigned count =
        std::min<unsigned>(read16(info, InfoAlerts), MaxCandidates);
    std::vector<unsigned> matched;
    for (unsigned k = 0; k < count; ++k) {
      auto it = bySid.find(read32(info, InfoAlertList + 4 * k));
      if (it != bySid.end())
        matched.push_back(it->second);
    }
    llvm::sort(matched);
    if (!matched.empty())
      ++packets;
    for (unsigned index : matched)
      alert(number, out, rules[index]);
  }

  uint64_t alerts = 0, packets = 0, overflows = 0;

private:
  const std::vector<Rule> &rules;
  llvm::raw_ostream *fast, *json;
  std::map<uint32_t, unsigned> bySid;

  void alert(uint64_t number, const rt::Output &out, const Rule &rule) {
    ++alerts;
    llvm::ArrayRef<uint8_t> info = out.info;
    unsigned proto = info[InfoProtocol];
    bool ports = proto == 6 || proto == 17;
    std::string protoName = proto == 6    ? "TCP"
                            : proto == 17 ? "UDP"
                            : proto == 1
                                ? "ICMP"
                                : llvm::formatv("PROTO:{0:d3}", proto).str();
    std::string src = dotted(read32(info, InfoSource)),
                dst = dotted(read32(info, InfoDestination));
    uint32_t sport = read16(info, InfoSourcePort),
             dport = read16(info, InfoDestPort);
    time_t seconds = out.seconds;
    struct tm tm;
    gmtime_r(&seconds, &tm);
    if (fast) {
      *fast << llvm::formatv("{0:d2}/{1:d2}-{2:d2}:{3:d2}:{4:d2}.{5:d6}  ",
                             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                             tm.tm_sec, out.microseconds);
      if (rule.action == Action::Drop)
        *fast << "[Drop] ";
      *fast << "[**] [1:" << rule.sid << ":" << rule.rev << "] " << rule.msg
            << " [**] ";
      if (!rule.classtype.empty())
        *fast << "[Classification: " << rule.classtype << "] ";
      *fast << "[Priority: " << rule.priority << "] {" << protoName << "} ";
      if (ports)
        *fast << src << ":" << sport << " -> " << dst << ":" << dport << "\n";
      else
        *fast << src << " -> " << dst << "\n";
    }
    if (json) {
      llvm::json::Object o{
          {"timestamp",
           llvm::formatv("{0:d4}-{1:d2}-{2:d2}T{3:d2}:{4:d2}:{5:d2}.{6:d6}Z",
                         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                         tm.tm_hour, tm.tm_min, tm.tm_sec, out.microseconds)
               .str()},
          {"packet", int64_t(number)},
          {"gid", 1},
          {"sid", int64_t(rule.sid)},
          {"rev", int64_t(rule.rev)},
          {"msg", rule.msg},
          {"action", actionName(rule.action)},
          {"proto", protoName},
          {"src_ip", src},
          {"dst_ip", dst}};
      if (ports) {
        o["src_port"] = int64_t(sport);
        o["dst_port"] = int64_t(dport);
      }
      *json << llvm::json::Value(std::move(o)) << "\n";
    }
  }
};
} // namespace

static int run() {
  auto start = std::chrono::steady_clock::now();
  RuleReader reader;
  for (const std::string &v : vars) {
    auto [name, value] = llvm::StringRef(v).split('=');
    if (name.empty() || !llvm::StringRef(v).contains('='))
      return fail("--var needs NAME=VALUE, not '" + v + "'");
    reader.define(name, value);
  }
  for (const std::string &file : ruleFiles)
    reader.readFile(file);
  for (const RuleDiagnostic &d : reader.diagnostics()) {
    llvm::errs() << d.location.file;
    if (d.location.line)
      llvm::errs() << ":" << d.location.line << ":" << d.location.column;
    llvm::errs() << (d.unsupported ? ": warning: unsupported, rule skipped: "
                                   : ": error: ")
                 << d.message << "\n";
  }
  const std::vector<Rule> &rules = reader.rules();
  llvm::errs() << "netvm-ids: " << rules.size() << " rules loaded, "
               << reader.unsupported() << " unsupported, " << reader.errors()
               << " errors\n";
  double readMs = since(start);
  if (reader.errors())
    return 1;
  if (checkOnly)
    return 0;
  if (rules.empty())
    return fail("no rules to run");

  start = std::chrono::steady_clock::now();
  GroupPlan plan = planGroups(rules);
  CompiledIDS ids = compileRules(rules, plan, "ids", rulesPerVerifier);
  double generateMs = since(start);
  if (!emitApp.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(emitApp))
      return fail(emitApp + ": " + ec.message());
    for (auto &[name, text] : ids.files) {
      llvm::SmallString<128> path(emitApp);
      llvm::sys::path::append(path, name);
      if (llvm::Error e = driver::writeTextFile(path, text))
        return fail(path + ": " + llvm::toString(std::move(e)));
    }
    llvm::errs() << "netvm-ids: wrote " << emitApp << "/" << ids.nvappName
                 << " (" << plan.groups.size() << " port groups)\n";
    return 0;
  }
  if (pcapInput.empty() == liveDevice.empty())
    return fail("give one packet input: -r FILE or -i INTERFACE");

  start = std::chrono::steady_clock::now();
  mlir::DialectRegistry registry;
  driver::registerDialects(registry);
  mlir::MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  driver::DiagnosticPrinter printer(sourceMgr, context, "netvm-ids");
  driver::Input input;
  input.files = {ids.nvappName};
  input.buffers = ids.files;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      driver::load(context, sourceMgr, input);
  if (!module)
    return 1;
  double loadMs = since(start);
  if (useInterpreter && engineKind.getNumOccurrences() &&
      engineKind != EngineKind::Interpreter)
    return fail("--interp and --engine name different engines");
  EngineKind kind = useInterpreter ? EngineKind::Interpreter : engineKind;
  unsigned level =
      kind == EngineKind::Interpreter && optLevel.getNumOccurrences() == 0
          ? 0
          : optLevel;
  if (level > 3)
    return fail("unknown optimization level -O" + llvm::Twine(level));
  start = std::chrono::steady_clock::now();
  // The split engine optimizes each part for its target.
  if (kind != EngineKind::Split && failed(driver::optimize(*module, level)))
    return 1;
  double optimizeMs = since(start);
  start = std::chrono::steady_clock::now();
  rt::EngineOptions options;
  std::string error;
  std::unique_ptr<rt::Engine> engine;
  if (kind == EngineKind::Split) {
    rt::SplitOptions split;
    split.engine = options;
    split.optLevel = level;
    split.machine.maxPacketBytes = me::compiledMaxPacketBytes;
    rt::SplitPlan plan;
    engine = rt::createSplitEngine(*module, split, plan, error);
    if (engine && stats)
      llvm::errs() << "netvm-ids: split: on the microengines: "
                   << llvm::join(plan.head, ", ")
                   << "; on the host: " << llvm::join(plan.tail, ", ") << "\n";
  } else if (kind == EngineKind::Interpreter) {
    engine = rt::Engine::interpreter(driver::getApplication(*module), options,
                                     error);
  } else {
    native::CodegenOptions codegen;
    codegen.optLevel = level;
    auto compiled = native::jitCompile(*module, codegen);
    if (!compiled)
      return fail(llvm::toString(compiled.takeError()));
    engine = rt::Engine::native(*compiled, options, error);
  }
  if (!engine)
    return fail(error);
  rt::PacketResult init = engine->initialize();
  for (const rt::ExceptionReport &e : init.exceptions)
    return fail("the IDS failed to start: " + llvm::Twine(e.kindName()) +
                " in NetPE " + engine->peNames()[e.pe] + ": " + e.detail);
  double jitMs = since(start);
  if (stats)
    llvm::errs() << llvm::formatv(
        "netvm-ids: compile: rules {0:f1} ms, generate {1:f1} ms, assemble "
        "{2:f1} ms, optimize {3:f1} ms, {4} {5:f1} ms ({6} port groups)\n",
        readMs, generateMs, loadMs, optimizeMs,
        kind == EngineKind::Interpreter ? "interpreter setup"
        : kind == EngineKind::Split     ? "ME compile + JIT + coprocessor init"
                                        : "JIT + coprocessor init",
        jitMs, plan.groups.size());

  std::unique_ptr<rt::PacketReader> packets;
  if (!liveDevice.empty()) {
    packets = rt::PacketReader::openLive(liveDevice, false, error);
    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);
  } else {
    packets = rt::PacketReader::open(pcapInput, false, error);
  }
  if (!packets)
    return fail(error);
  if (!rt::checkLinkType(*packets, error))
    return fail(error);

  std::unique_ptr<llvm::ToolOutputFile> fastOut, jsonOut;
  if (alertFile != "none") {
    std::error_code ec;
    fastOut = std::make_unique<llvm::ToolOutputFile>(alertFile, ec,
                                                     llvm::sys::fs::OF_Text);
    if (ec)
      return fail(alertFile + ": " + ec.message());
  }
  if (!jsonFile.empty()) {
    std::error_code ec;
    jsonOut = std::make_unique<llvm::ToolOutputFile>(jsonFile, ec,
                                                     llvm::sys::fs::OF_Text);
    if (ec)
      return fail(jsonFile + ": " + ec.message());
  }
  AlertWriter writer(rules, fastOut ? &fastOut->os() : nullptr,
                     jsonOut ? &jsonOut->os() : nullptr);
  auto deliver = [&](uint64_t number, const netvm_packet &,
                     const rt::PacketResult &result) {
    for (const rt::Output &out : result.outputs)
      writer.packet(number, out);
  };
  rt::StreamFn onPacket = deliver;
  rt::StreamOptions streamOptions;
  streamOptions.maxPackets = maxPackets;
  streamOptions.stop = &interrupted;
  rt::StreamStats streamStats;
  if (!engine->runStream(0, *packets, streamOptions, &onPacket,
                         rt::ResultDetail::Full, streamStats, error))
    return fail(error);
  if (!engine->failure().empty())
    return fail(engine->failure());
  rt::Counters counters = engine->counters();
  llvm::errs() << "netvm-ids: " << streamStats.packets << " packets, "
               << writer.alerts << " alerts on " << writer.packets
               << " packets";
  if (counters.totalExceptions())
    llvm::errs() << ", " << counters.totalExceptions() << " exceptions";
  llvm::errs() << "\n";
  if (stats && streamStats.processSeconds > 0)
    llvm::errs() << llvm::formatv(
        "netvm-ids: {0:f0} packets/s ({1:f3} s processing)\n",
        streamStats.packets / streamStats.processSeconds,
        streamStats.processSeconds);
  if (const me::Stats *emu = engine->emulatorStats(); emu && stats)
    llvm::errs() << llvm::formatv(
        "netvm-ids: microengines: {0} packets in {1} cycles at {2} MHz "
        "({3:f3} Mpps emulated)\n",
        emu->packetsReceived, emu->cycles, emu->clockMHz,
        emu->seconds() > 0 ? emu->packetsReceived / emu->seconds() / 1e6 : 0.0);
  // Every alert reached its file, or the error names it.
  for (llvm::ToolOutputFile *out : {fastOut.get(), jsonOut.get()}) {
    if (!out)
      continue;
    out->os().close();
    if (out->os().has_error()) {
      std::string message =
          out->getFilename().str() + ": " + out->os().error().message();
      out->os().clear_error();
      return fail(message);
    }
    out->keep();
  }
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  driver::configureHelp(idsCategory, /*showMLIROptions=*/false);
  cl::ParseCommandLineOptions(
      argc, argv,
      "netvm-ids - an intrusion detection system from Snort rules\n\n"
      "Reads Snort rules (the subset in docs/applications.md; every rule it\n"
      "cannot take is reported with file:line:col), compiles them into a\n"
      "NetVM application and runs it over packets, printing alerts in\n"
      "Snort's alert_fast format.\n\n"
      "Examples:\n"
      "  netvm-ids rules.rules -r trace.pcap\n"
      "  netvm-ids rules.rules -r trace.pcap --json alerts.json -A none\n"
      "  netvm-ids rules.rules -r trace.pcap --engine=split --timing\n"
      "  netvm-ids rules.rules --var HOME_NET=10.0.0.0/8 -i eth0\n"
      "  netvm-ids rules.rules --emit-app ids/ && netvm-run ids/ids.nvapp "
      "-r trace.pcap\n");
  return run();
}
