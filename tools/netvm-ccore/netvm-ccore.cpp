//===- netvm-ccore.cpp - The C-CORE layer from the command line -----------===//
//
// A thin tool over the C-CORE libraries (docs/ccore.md):
//   netvm-ccore compile  a query over a schema to a NetIL handler
//   netvm-ccore gen      a reproducible stream of messages, as a pcap file
//   netvm-ccore decode   the messages of a pcap file, field by field
//   netvm-ccore chain    a chain over the MEs and the host, with a hot-swap
//
//===----------------------------------------------------------------------===//

#include "netvm/CCore/Chain.h"
#include "netvm/CCore/Query.h"
#include "netvm/CCore/Transport.h"
#include "netvm/ccore/Message.h"
#include "netvm/io/PacketIO.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>

namespace cl = llvm::cl;
using namespace netvm::ccore;
using netvm::ccore::Format;

static cl::OptionCategory category("netvm-ccore options");
static cl::SubCommand compileCmd("compile",
                                 "Compile a query to a NetIL handler");
static cl::SubCommand genCmd("gen", "Write a stream of messages (pcap)");
static cl::SubCommand decodeCmd("decode", "Print the messages of a pcap file");
static cl::SubCommand
    chainCmd("chain", "Run a chain (an ME stage, a host stage) over "
                      "generated messages on the emulator, with a hot-swap");
static cl::SubCommand
    placeCmd("place", "Place chains on one machine with the resource manager, "
                      "remove some, and print its table of running chains");

static cl::opt<std::string> schemaPath("schema", cl::desc("The schema file"),
                                       cl::value_desc("file.ccs"), cl::Required,
                                       cl::sub(compileCmd), cl::sub(genCmd),
                                       cl::sub(decodeCmd), cl::sub(chainCmd),
                                       cl::sub(placeCmd), cl::cat(category));
static cl::opt<std::string>
    output("o",
           cl::desc("Output file (compile: default standard output; chain: the "
                    "chain's output messages as pcap)"),
           cl::value_desc("file"), cl::sub(compileCmd), cl::sub(genCmd),
           cl::sub(chainCmd), cl::cat(category));

// compile
static cl::opt<std::string> queryText("query", cl::desc("The query text"),
                                      cl::sub(compileCmd), cl::cat(category));
static cl::opt<std::string> queryFile("query-file",
                                      cl::desc("A file holding the query"),
                                      cl::value_desc("file"),
                                      cl::sub(compileCmd), cl::cat(category));
static cl::opt<bool> specialize(
    "specialize",
    cl::desc("Fold the format and the parameters into the code as constants "
             "(default: read them from data memory)"),
    cl::sub(compileCmd), cl::sub(chainCmd), cl::cat(category));
static cl::list<std::string>
    params("param", cl::desc("A parameter's value, name=value (repeatable)"),
           cl::value_desc("name=value"), cl::sub(compileCmd), cl::sub(chainCmd),
           cl::cat(category));
static cl::opt<unsigned>
    projectId("project-id",
              cl::desc("Format id of a projection's output (default: the "
                       "input's id | 0x8000)"),
              cl::init(0), cl::sub(compileCmd), cl::cat(category));
static cl::opt<std::string> peName("name", cl::desc("The NetPE's name"),
                                   cl::init("handler"), cl::sub(compileCmd),
                                   cl::cat(category));

// gen
static cl::opt<std::string>
    formatName("format",
               cl::desc("The format (compile: with --rudp, the reassembler's)"),
               cl::sub(genCmd), cl::sub(decodeCmd), cl::sub(compileCmd),
               cl::cat(category));
static cl::opt<unsigned> rudpPayload(
    "rudp",
    cl::desc("Reliable UDP with fragments of N payload bytes: gen writes the "
             "fragments, chain offers them and reassembles them on the ME "
             "before its first stage, compile (with --format) writes the "
             "reassembler (docs/ccore.md; default 0: none)"),
    cl::value_desc("N"), cl::init(0), cl::sub(genCmd), cl::sub(chainCmd),
    cl::sub(compileCmd), cl::cat(category));
static cl::opt<unsigned>
    rudpLoss("rudp-loss",
             cl::desc("With --rudp: percentage of fragments the network loses "
                      "(default 0)"),
             cl::init(0), cl::sub(genCmd), cl::sub(chainCmd),
             cl::cat(category));
static cl::opt<bool> rudpRetransmit(
    "rudp-retransmit",
    cl::desc("With --rudp: reliable UDP with retransmission (go-back-N: "
             "NACKs, cumulative ACKs, a timeout) instead of loss reporting; "
             "the sender is a host-side model timed by --rate-gbps "
             "(docs/ccore.md, \"Retransmission\"); compile: the "
             "reassembler of that protocol"),
    cl::sub(chainCmd), cl::sub(compileCmd), cl::cat(category));
static cl::opt<unsigned>
    rudpWindow("rudp-window",
               cl::desc("With --rudp-retransmit: messages in flight at most "
                        "(default 8)"),
               cl::init(8), cl::sub(chainCmd), cl::cat(category));
static cl::opt<double> rudpTimeout(
    "rudp-timeout",
    cl::desc("With --rudp-retransmit: emulated us without an ACK before the "
             "oldest unacknowledged message is resent (default 200)"),
    cl::init(200), cl::sub(chainCmd), cl::cat(category));
static cl::opt<unsigned> rudpReorder(
    "rudp-reorder",
    cl::desc("With --rudp-retransmit: percentage of fragments the network "
             "delays behind the next one (default 0)"),
    cl::init(0), cl::sub(chainCmd), cl::cat(category));
static cl::opt<unsigned> rudpControlLoss(
    "rudp-control-loss",
    cl::desc("With --rudp-retransmit: percentage of ACKs and NACKs the return "
             "path loses (default 0)"),
    cl::init(0), cl::sub(chainCmd), cl::cat(category));
static cl::list<uint64_t> rudpDrop(
    "rudp-drop",
    cl::desc("With --rudp-retransmit: the network loses the first sending of "
             "fragment K of the stream (counted from 0 over every message's "
             "fragments; repeatable)"),
    cl::value_desc("K"), cl::sub(chainCmd), cl::cat(category));
// chain
static cl::list<std::string> meQueries(
    "me-query",
    cl::desc("The ME stage's query; repeated: a pipeline of handlers, each "
             "reading what the one before sends, each on its own ME stage "
             "(--me-layout)"),
    cl::sub(chainCmd), cl::cat(category));
static cl::opt<std::string> meLayout(
    "me-layout",
    cl::desc("With several --me-query: pipeline (each handler on its own ME, "
             "the back end's pipeline placement; default) or one (all of them "
             "in sequence on one handler ME)"),
    cl::init("pipeline"), cl::sub(chainCmd), cl::cat(category));
static cl::list<std::string> subscribers(
    "subscriber",
    cl::desc("Multicast: a subscriber's channel (stream id) and its own "
             "query; every message goes to every subscriber's handler "
             "(repeatable; instead of --me-query for chain, of --query for "
             "compile)"),
    cl::value_desc("stream:query"), cl::sub(compileCmd), cl::sub(chainCmd),
    cl::cat(category));
static cl::opt<std::string>
    hostQuery("host-query",
              cl::desc("The host stage's query (JIT; default: none)"),
              cl::sub(chainCmd), cl::cat(category));
static cl::opt<std::string> swapMode(
    "swap",
    cl::desc("Hot-swap the ME stage's code during the run: none, spare (the "
             "new code preloaded on an idle ME) or in-place (stop, reload, "
             "restart); default none"),
    cl::init("none"), cl::sub(chainCmd), cl::cat(category));
static cl::opt<unsigned> swapStage(
    "swap-stage",
    cl::desc("With several --me-query as a pipeline: the stage whose code "
             "--swap replaces (1, 2, ...; default 1); through the spare, the "
             "first idle ME after the pipeline takes it"),
    cl::init(1), cl::sub(chainCmd), cl::cat(category));
static cl::opt<uint64_t> swapAt("swap-at",
                                cl::desc("The ME cycle the swap starts "
                                         "(default 100000)"),
                                cl::init(100000), cl::sub(chainCmd),
                                cl::cat(category));
static cl::opt<double> rateGbps(
    "rate-gbps",
    cl::desc("Offer the messages at this line rate (Gbit/s); the receive "
             "side drops what its buffers cannot hold (default 0: "
             "lossless, as fast as the chain takes them); place: each "
             "--add's rate unless it gives its own"),
    cl::init(0), cl::sub(chainCmd), cl::sub(placeCmd), cl::cat(category));
static cl::opt<std::string> placementMode(
    "placement",
    cl::desc("Where the first stage (--me-query or the subscribers) runs: me "
             "(the emulator), host (JIT, the whole chain on a host thread) or "
             "auto (the resource manager's rule, docs/ccore.md; a chain that "
             "fits nowhere is refused with the reason); default me"),
    cl::init("me"), cl::sub(chainCmd), cl::cat(category));
static cl::opt<unsigned>
    busyMEs("busy-mes",
            cl::desc("With --placement=auto: MEs other chains already use "
                     "(default 0)"),
            cl::init(0), cl::sub(chainCmd), cl::cat(category));
static cl::opt<bool>
    noSpare("no-spare",
            cl::desc("With --placement=auto, and place: keep no ME idle for "
                     "hot-swaps"),
            cl::sub(chainCmd), cl::sub(placeCmd), cl::cat(category));
// place
static cl::list<std::string> placeAdd(
    "add",
    cl::desc("Place a chain: its name, optionally where it may go (me, host; "
             "default auto) and its offered rate, then its query "
             "(repeatable; taken in command-line order with --remove); "
             "queries separated by '|' are a pipeline, one ME stage each"),
    cl::value_desc("name[@me|@host][:gbps]=query"), cl::sub(placeCmd),
    cl::cat(category));
static cl::list<std::string>
    placeRemove("remove", cl::desc("Remove a running chain (repeatable)"),
                cl::value_desc("name"), cl::sub(placeCmd), cl::cat(category));
static cl::opt<unsigned>
    hostThreads("host-threads",
                cl::desc("Host threads the manager may give chains "
                         "(default 2)"),
                cl::init(2), cl::sub(placeCmd), cl::cat(category));
static cl::opt<std::string>
    placeJson("json", cl::desc("Write the final table as JSON to this file"),
              cl::value_desc("file.json"), cl::sub(placeCmd),
              cl::cat(category));
static cl::opt<std::string> reportPath(
    "report",
    cl::desc("Write the resource report (per-ME and per-host-thread load, "
             "queues) as JSON to this file"),
    cl::value_desc("file.json"), cl::sub(chainCmd), cl::cat(category));
static cl::list<std::string> reconfigure(
    "reconfigure",
    cl::desc("Change a parameter of the running generic ME stage in place "
             "at an ME cycle, without a code change (repeatable)"),
    cl::value_desc("name=value@cycle"), cl::sub(chainCmd), cl::cat(category));
static cl::opt<std::string> autoSpecialize(
    "auto-specialize",
    cl::desc("Automatic specialization: once the ME stage's format and "
             "parameters have been stable for T (N or Nus: emulated "
             "microseconds; Nmsg: messages the handler took; default 100us), "
             "swap in the specialized form through the spare ME; a "
             "--reconfigure afterwards swaps the generic form back"),
    cl::value_desc("T"), cl::ValueOptional, cl::sub(chainCmd),
    cl::cat(category));
static cl::opt<bool> swapSame(
    "swap-same",
    cl::desc("Swap to the same form of the handler (default: generic to "
             "specialized, or back with --specialize)"),
    cl::sub(chainCmd), cl::cat(category));
static cl::opt<uint64_t> count("n", cl::desc("Messages (default 1000)"),
                               cl::init(1000), cl::sub(genCmd),
                               cl::sub(chainCmd), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("Random seed (default 1)"),
                              cl::init(1), cl::sub(genCmd), cl::sub(chainCmd),
                              cl::cat(category));
static cl::list<unsigned>
    streams("stream",
            cl::desc("Stream ids, taken in turn (repeatable; default 1)"),
            cl::sub(genCmd), cl::sub(chainCmd), cl::cat(category));
static cl::list<std::string>
    ranges("range",
           cl::desc("Values of an integer field drawn from [lo, hi] "
                    "(repeatable; default: the whole type)"),
           cl::value_desc("field=lo:hi"), cl::sub(genCmd), cl::sub(chainCmd),
           cl::cat(category));
static cl::opt<unsigned>
    malformed("malformed",
              cl::desc("Percentage of malformed messages: truncated, or "
                       "of another format id (default 0)"),
              cl::init(0), cl::sub(genCmd), cl::sub(chainCmd),
              cl::cat(category));

// decode
static cl::opt<std::string> inputPcap(cl::Positional, cl::desc("<in.pcap>"),
                                      cl::sub(decodeCmd), cl::cat(category));

static int fail(const std::string &message) {
  llvm::errs() << "netvm-ccore: " << message;
  if (message.empty() || message.back() != '\n')
    llvm::errs() << "\n";
  return 1;
}

static bool readFile(const std::string &path, std::string &text) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream s;
  s << in.rdbuf();
  text = s.str();
  return true;
}

static bool parseNumber(llvm::StringRef text, uint32_t &value) {
  unsigned long long v;
  if (text.getAsInteger(0, v) || v > 0xFFFFFFFFull)
    return false;
  value = static_cast<uint32_t>(v);
  return true;
}

static bool parseParams(HandlerOptions &options, std::string &error) {
  for (const std::string &p : params) {
    auto [key, value] = llvm::StringRef(p).split('=');
    uint32_t v;
    if (key.empty() || !parseNumber(value, v)) {
      error = "--param " + p + ": expected name=value (a 32-bit number)";
      return false;
    }
    options.parameters[key.str()] = v;
  }
  return true;
}

/// The NetIL of a query text (named `name` in errors); the parsed query is
/// appended to `parsed` if given.
static bool queryToNetIL(const Schema &schema, const std::string &text,
                         const std::string &name, HandlerOptions options,
                         std::string &netil, std::string &error,
                         std::vector<Query> *parsed = nullptr) {
  std::optional<Query> query = parseQuery(text, name, schema, error);
  if (!query)
    return false;
  if (!parseParams(options, error) || !emitNetIL(*query, options, netil, error))
    return false;
  if (parsed)
    parsed->push_back(std::move(*query));
  return true;
}

/// The --subscriber options.
static bool parseSubscribers(std::vector<Subscriber> &list,
                             std::string &error) {
  for (const std::string &s : subscribers) {
    auto [stream, query] = llvm::StringRef(s).split(':');
    Subscriber sub;
    if (!parseNumber(stream, sub.stream) || sub.stream == 0 || query.empty()) {
      error = "--subscriber=" + s +
              ": expected stream:query with a nonzero 32-bit stream id";
      return false;
    }
    sub.query = query.str();
    list.push_back(sub);
  }
  return true;
}

/// The multicast of --subscriber options, as an application.
static bool multicastApp(const Schema &schema, const HandlerOptions &options,
                         HandlerApp &app, std::vector<Query> &queries,
                         std::string &error) {
  std::vector<Subscriber> list;
  if (!parseSubscribers(list, error))
    return false;
  HandlerOptions o = options;
  if (!parseParams(o, error))
    return false;
  return emitMulticast(schema, list, o, app, queries, error);
}

static int writeText(const std::string &path, const std::string &text) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (ec)
    return fail("cannot write " + path + ": " + ec.message());
  out << text;
  return 0;
}

static int compileMain(const Schema &schema) {
  if (!subscribers.empty()) {
    // A multicast: the .nvapp at -o, its NetIL files beside it.
    if (!queryText.empty() || !queryFile.empty())
      return fail("give either --subscriber or --query/--query-file");
    if (!llvm::StringRef(output).ends_with(".nvapp"))
      return fail("a multicast compiles to an application: -o DIR/NAME.nvapp");
    HandlerOptions options;
    options.specialize = specialize;
    options.name = peName;
    HandlerApp app;
    std::vector<Query> queries;
    std::string error;
    if (!multicastApp(schema, options, app, queries, error))
      return fail(error);
    llvm::StringRef dir = llvm::StringRef(output).rsplit('/').first;
    std::string prefix = dir == output ? "" : dir.str() + "/";
    for (const auto &[file, text] : app.files)
      if (int rc = writeText(prefix + file, text))
        return rc;
    return writeText(output, app.nvapp);
  }
  if (rudpPayload && queryText.empty() && queryFile.empty()) {
    const Format *format = schema.format(formatName);
    if (!format)
      return fail("compile --rudp needs --format, a format of the schema");
    std::string netil, error;
    if (!emitReassembler(*format, rudpPayload, peName, netil, error,
                         rudpRetransmit))
      return fail(error);
    if (output.empty() || output == "-") {
      llvm::outs() << netil;
      return 0;
    }
    return writeText(output, netil);
  }
  if (queryText.empty() == queryFile.empty())
    return fail("give the query with --query or --query-file (one of them)");
  std::string text = queryText, name = "<query>";
  if (!queryFile.empty()) {
    name = queryFile;
    if (!readFile(queryFile, text))
      return fail("cannot read " + queryFile);
  }
  HandlerOptions options;
  options.specialize = specialize;
  options.name = peName;
  if (projectId > 0xFFFF)
    return fail("--project-id must be below 65536");
  options.projectId = static_cast<uint16_t>(projectId);
  std::string netil, error;
  if (!queryToNetIL(schema, text, name, options, netil, error))
    return fail(error);
  if (output.empty() || output == "-") {
    llvm::outs() << netil;
    return 0;
  }
  return writeText(output, netil);
}

static bool generateOptions(const Format &format, GenerateOptions &options,
                            std::string &error, bool skipOthers = false) {
  for (const std::string &r : ranges) {
    auto [field, span] = llvm::StringRef(r).split('=');
    if (skipOthers && !format.field(field.str()))
      continue;
    auto [lo, hi] = span.split(':');
    std::pair<uint32_t, uint32_t> b;
    const Field *f = format.field(field.str());
    if (!f || !f->isInteger() || !parseNumber(lo, b.first) ||
        !parseNumber(hi, b.second) || b.first > b.second) {
      error = "--range " + r +
              ": expected field=lo:hi for an integer field, lo <= hi";
      return false;
    }
    options.ranges[field.str()] = b;
  }
  options.count = count;
  options.seed = seed;
  options.malformedPercent = malformed;
  if (!streams.empty())
    options.streams.assign(streams.begin(), streams.end());
  return true;
}

static bool writePcap(const std::string &path,
                      const std::vector<std::vector<uint8_t>> &messages,
                      std::string &error) {
  std::unique_ptr<netvm::rt::PcapWriter> writer =
      netvm::rt::PcapWriter::create(path, /*DLT_EN10MB=*/1, error);
  if (!writer)
    return false;
  uint64_t i = 0;
  for (const std::vector<uint8_t> &m : messages) {
    netvm::rt::TracePacket packet;
    packet.bytes = m;
    packet.wireLength = static_cast<uint32_t>(m.size());
    packet.seconds = static_cast<uint32_t>(i / 1000);
    packet.microseconds = static_cast<uint32_t>(i % 1000) * 1000;
    writer->write(packet);
    ++i;
  }
  return writer->flush(error);
}

/// Replaces `messages` by their reliable-UDP fragments (--rudp,
/// --rudp-loss, --seed).
static bool toFragments(std::vector<std::vector<uint8_t>> &messages,
                        std::string &error) {
  FragmentOptions options;
  options.payload = rudpPayload;
  options.lossPercent = rudpLoss;
  options.seed = seed;
  if (rudpLoss > 100) {
    error = "--rudp-loss is a percentage (0-100)";
    return false;
  }
  std::vector<std::vector<uint8_t>> fragments;
  if (!fragmentMessages(messages, options, fragments, error))
    return false;
  messages = std::move(fragments);
  return true;
}

static int genMain(const Schema &schema) {
  const Format *format = schema.format(formatName);
  if (!format)
    return fail("the schema has no format '" + formatName + "' (--format)");
  GenerateOptions options;
  std::string error;
  if (!generateOptions(*format, options, error))
    return fail(error);
  if (output.empty())
    return fail("gen needs -o FILE");
  std::vector<std::vector<uint8_t>> messages =
      generateMessages(*format, options);
  if (rudpPayload && !toFragments(messages, error))
    return fail(error);
  if (!writePcap(output, messages, error))
    return fail(error);
  return 0;
}

/// The host thread's time and cycles per input message.
static void printHostThread(const ChainRun &run, size_t messages) {
  double n = messages ? double(messages) : 1;
  llvm::outs() << "host thread         "
               << llvm::format("%.1f", double(run.hostNanoseconds) / n)
               << " ns, " << llvm::format("%.1f", double(run.hostCycles) / n)
               << " cycles per message in\n";
}

static int chainMain(const Schema &schema) {
  if (meQueries.empty() == subscribers.empty())
    return fail("chain needs --me-query or --subscriber (one of them)");
  if (meLayout != "pipeline" && meLayout != "one")
    return fail("--me-layout=" + meLayout + ": expected pipeline or one");
  bool several = meQueries.size() > 1;
  if (several && (!reconfigure.empty() || autoSpecialize.getNumOccurrences()))
    return fail("--reconfigure and --auto-specialize act on one ME handler; "
                "a chain of several --me-query does not take them "
                "(docs/ccore.md, \"Pipelines of ME stages\")");
  if (swapStage.getNumOccurrences() && (!several || meLayout != "pipeline"))
    return fail("--swap-stage names a stage of a pipeline of several "
                "--me-query");
  std::string meQuery = meQueries.empty() ? std::string() : meQueries.front();
  ChainControl control;
  SwapRequest &swap = control.swap;
  if (swapMode == "spare")
    swap.mode = SwapRequest::Mode::Spare;
  else if (swapMode == "in-place")
    swap.mode = SwapRequest::Mode::InPlace;
  else if (swapMode != "none")
    return fail("--swap=" + swapMode + ": expected none, spare or in-place");
  swap.atCycle = swapAt;
  HandlerOptions first;
  first.specialize = specialize;
  first.name = "me_stage";
  HandlerOptions second = first;
  if (!swapSame)
    second.specialize = !first.specialize;
  std::string error;
  HandlerApp firstApp, secondApp;
  std::vector<Query> queries;
  if (!subscribers.empty()) {
    std::vector<Query> again;
    if (!multicastApp(schema, first, firstApp, queries, error) ||
        !multicastApp(schema, second, secondApp, again, error))
      return fail(error);
  } else if (several) {
    HandlerOptions values = first, other = second;
    std::vector<std::string> texts(meQueries.begin(), meQueries.end());
    std::vector<Query> again;
    bool pipeline = meLayout == "pipeline";
    if (!parseParams(values, error) || !parseParams(other, error) ||
        !emitPipeline(schema, texts, values, pipeline, firstApp, queries,
                      error) ||
        !emitPipeline(schema, texts, other, pipeline, secondApp, again, error))
      return fail(error);
    if (pipeline && swap.mode != SwapRequest::Mode::None) {
      // Only the stage's handler changes form (the reassembler, first
      // with --rudp, has one form); its ME is replaced, and the spare is
      // the first idle ME after the pipeline (receive, the stages and
      // transmit before it).
      size_t handler = swapStage - 1 - (rudpPayload ? 1 : 0);
      HandlerApp mixed = firstApp;
      if (swapStage >= 1 && handler < texts.size())
        mixed.files[handler] = secondApp.files[handler];
      secondApp = std::move(mixed);
      swap.stage = swapStage;
      swap.spareME = unsigned(texts.size()) + 2 + (rudpPayload ? 1 : 0);
    }
  } else {
    std::string netil, nextNetil;
    if (!queryToNetIL(schema, meQuery, "<me-query>", first, netil, error,
                      &queries) ||
        !queryToNetIL(schema, meQuery, "<me-query>", second, nextNetil, error))
      return fail(error);
    firstApp.name = secondApp.name = "me_stage";
    firstApp.files = {{"me_stage.netil", netil}};
    secondApp.files = {{"me_stage.netil", nextNetil}};
  }
  if (rudpPayload) {
    if (queries.front().join)
      return fail("--rudp carries one format; a join reads two");
    if (autoSpecialize.getNumOccurrences() || placementMode != "me")
      return fail("--rudp runs with --placement=me and without "
                  "--auto-specialize");
    if (rudpRetransmit &&
        (swapMode != "none" || !reconfigure.empty() || rateGbps <= 0))
      return fail("--rudp-retransmit needs --rate-gbps (the sender is timed "
                  "by the wire) and runs without --swap and --reconfigure");
    if (rudpLoss > 100 || rudpReorder > 100 || rudpControlLoss > 100)
      return fail("--rudp-loss, --rudp-reorder and --rudp-control-loss are "
                  "percentages (0-100)");
    if (!rudpWindow || rudpTimeout <= 0)
      return fail("--rudp-window and --rudp-timeout must be positive");
    if (!addReassembler(firstApp, *queries.front().format, rudpPayload, error,
                        rudpRetransmit) ||
        !addReassembler(secondApp, *queries.front().format, rudpPayload, error,
                        rudpRetransmit))
      return fail(error);
  } else if (rudpRetransmit) {
    return fail("--rudp-retransmit needs --rudp=N");
  }
  netvm::me::MachineConfig machine;
  if (rateGbps < 0)
    return fail("--rate-gbps must not be negative");
  machine.lineRateGbps = rateGbps;
  if (placementMode != "me" && placementMode != "host" &&
      placementMode != "auto")
    return fail("--placement=" + placementMode + ": expected me, host or auto");
  bool onHost = placementMode == "host";
  if (placementMode == "auto") {
    PlacementRequest request;
    request.rateGbps = rateGbps;
    request.messageBytes = queries.front().format->size;
    request.busyMEs = busyMEs;
    request.keepSpare = !noSpare;
    Placement placed = placeChain(firstApp, request, machine);
    if (placed.where == Placement::Where::Refused)
      return fail("the chain is refused: " + placed.reason);
    llvm::outs() << "placement           " << whereName(placed.where) << ": "
                 << placed.reason << "\n";
    onHost = placed.where == Placement::Where::Host;
  }
  if (onHost && (swap.mode != SwapRequest::Mode::None || !reconfigure.empty()))
    return fail("--swap and --reconfigure act on the MEs; the first stage "
                "runs on the host");
  netvm::me::CompiledApp meStage, next;
  if (!onHost && (!compileForME(firstApp, machine, meStage, error) ||
                  (swap.mode != SwapRequest::Mode::None &&
                   !compileForME(secondApp, machine, next, error))))
    return fail(error);
  swap.next = &next;
  for (const std::string &r : reconfigure) {
    auto [assignment, at] = llvm::StringRef(r).split('@');
    auto [name, value] = assignment.split('=');
    ParamChange change;
    uint32_t cycle;
    if (name.empty() || !parseNumber(value, change.value) ||
        !parseNumber(at, cycle))
      return fail("--reconfigure=" + r +
                  ": expected name=value@cycle (32-bit numbers)");
    if (specialize)
      return fail("--reconfigure needs the generic form of the ME stage (a "
                  "specialized handler has its parameters in its code)");
    // Every handler of the stage that has the parameter.
    if (!parameterChanges(queries, name.str(), change.value, cycle,
                          control.params, error))
      return fail("--reconfigure=" + r + ": " + error);
  }
  if (autoSpecialize.getNumOccurrences()) {
    AutoSpecialize &a = control.autoSpecialize;
    if (specialize || swap.mode != SwapRequest::Mode::None)
      return fail("--auto-specialize starts from the generic form and makes "
                  "its own swaps: no --specialize or --swap");
    if (onHost)
      return fail("--auto-specialize acts on the MEs; the first stage runs "
                  "on the host");
    llvm::StringRef t = autoSpecialize;
    uint32_t n = 0;
    bool messages = t.consume_back("msg");
    if (!messages)
      t.consume_back("us");
    if (!t.empty() && !parseNumber(t, n))
      return fail("--auto-specialize=" + autoSpecialize +
                  ": expected N, Nus (emulated microseconds) or Nmsg");
    if (t.empty() && !autoSpecialize.empty())
      return fail("--auto-specialize=" + autoSpecialize + ": no number");
    a.enabled = true;
    if (messages) {
      a.stableCycles = 0;
      a.stableMessages = n;
    } else if (!t.empty()) {
      a.stableCycles = uint64_t(double(n) * machine.clockMHz);
    }
    HandlerOptions values = first;
    if (!parseParams(values, error))
      return fail(error);
    a.parameters = values.parameters;
    std::vector<Subscriber> list;
    if (!parseSubscribers(list, error))
      return fail(error);
    a.specialize = specializerFor(
        schema,
        meQuery.empty() ? std::nullopt : std::optional<std::string>(meQuery),
        list, values, machine);
  }
  std::unique_ptr<netvm::rt::Engine> host;
  if (!hostQuery.empty()) {
    HandlerOptions h;
    h.specialize = true;
    h.name = "host_stage";
    std::string hostNetil;
    if (!queryToNetIL(schema, hostQuery, "<host-query>", h, hostNetil, error))
      return fail(error);
    host = compileForHost(hostNetil, "host_stage", error);
    if (!host)
      return fail(error);
    host->initialize();
  }
  GenerateOptions options;
  const Format &format = *queries.front().format;
  const Join *join = queries.front().join.get();
  if (join)
    for (const std::string &r : ranges) {
      std::string field = llvm::StringRef(r).split('=').first.str();
      if (!format.field(field) && !join->right->field(field))
        return fail("--range " + r +
                    ": neither format of the join has "
                    "field '" +
                    field + "'");
    }
  if (!generateOptions(format, options, error, /*skipOthers=*/join))
    return fail(error);
  std::vector<std::vector<uint8_t>> messages =
      generateMessages(format, options);
  if (join) {
    // A join's two streams, taken in turn: the right format's messages on
    // the next stream id, from the next seed (ranges of its fields apply).
    GenerateOptions right;
    if (!generateOptions(*join->right, right, error, /*skipOthers=*/true))
      return fail(error);
    right.seed = options.seed + 1;
    for (uint32_t &stream : right.streams)
      ++stream;
    std::vector<std::vector<uint8_t>> left = std::move(messages),
                                      other =
                                          generateMessages(*join->right, right);
    messages.clear();
    for (size_t i = 0; i < left.size(); ++i) {
      messages.push_back(std::move(left[i]));
      messages.push_back(std::move(other[i]));
    }
  }
  size_t messageCount = messages.size();
  if (rudpRetransmit) {
    // The sender model fragments and paces them itself.
    ReliableOptions &r = control.reliable;
    r = reliableOptions(rudpPayload, rudpWindow, rudpTimeout, machine.clockMHz);
    r.lossPercent = rudpLoss;
    r.reorderPercent = rudpReorder;
    r.controlLossPercent = rudpControlLoss;
    r.seed = seed;
    r.dropFirst.assign(rudpDrop.begin(), rudpDrop.end());
  } else if (rudpPayload && !toFragments(messages, error)) {
    return fail(error);
  }
  ChainRun run;
  if (onHost) {
    std::unique_ptr<netvm::rt::Engine> first = compileForHost(firstApp, error);
    if (!first)
      return fail(error);
    first->initialize();
    std::vector<netvm::rt::Engine *> stages = {first.get()};
    if (host)
      stages.push_back(host.get());
    if (!runHostChain(stages, messages, run, error))
      return fail(error);
    llvm::outs() << "messages in         " << messages.size() << "\n"
                 << "first stage (host)  " << run.meRuns << " in, "
                 << run.meSent << " sent, " << run.meDropped << " dropped\n"
                 << "messages out        " << run.outputs.size() << "\n";
    printHostThread(run, messages.size());
    if (!reportPath.empty()) {
      ResourceReport report;
      report.messagesIn = messages.size();
      report.messagesOut = run.outputs.size();
      report.hostThreads.push_back(
          {"chain", run.hostMessages, run.hostNanoseconds, run.hostCycles});
      if (int rc = writeText(reportPath, toJSON(report)))
        return rc;
    }
    if (!output.empty() && !writePcap(output, run.outputs, error))
      return fail(error);
    return 0;
  }
  if (!runChain(meStage, host.get(), messages, machine, control, run, error))
    return fail(error);
  llvm::outs() << "messages in         " << messageCount << "\n";
  if (rudpRetransmit && !run.dataMemory.empty()) {
    RudpCounters c = rudpCounters(run.dataMemory.back());
    const ReliableReport &r = run.reliable;
    double us = double(r.doneCycle) / machine.clockMHz;
    llvm::outs() << "reliable UDP        " << r.fragmentsSent
                 << " fragments sent (" << r.fragmentsResent << " resent, "
                 << r.fragmentsLost << " lost, " << r.fragmentsReordered
                 << " reordered), " << r.messagesResent << " messages resent, "
                 << r.timeouts << " timeouts, " << r.idleGaps << " idle gaps\n"
                 << "receiver            " << c.messagesDelivered
                 << " messages delivered in order, " << c.fragmentsRejected
                 << " fragments rejected (duplicate, late or out of order), "
                 << c.nacksSent << " NACKs, " << c.acksSent << " ACKs sent\n"
                 << "return path         " << run.controlMessages
                 << " control messages, " << r.controlLost << " lost, "
                 << r.nacksReceived << " NACKs and " << r.acksReceived
                 << " ACKs received\n"
                 << "goodput             " << r.acknowledged
                 << " messages acknowledged at cycle " << r.doneCycle << ", "
                 << llvm::format("%.1f",
                                 us ? double(r.messageBytes) * 8 / us : 0.0)
                 << " Mbit/s, "
                 << llvm::format("%.0f",
                                 us ? double(r.acknowledged) * 1e6 / us : 0.0)
                 << " messages/s\n";
  } else if (rudpPayload && !run.dataMemory.empty()) {
    RudpCounters c = rudpCounters(run.dataMemory.back());
    llvm::outs() << "reliable UDP        " << messages.size()
                 << " fragments in, " << c.messagesDelivered
                 << " messages reassembled, " << c.messagesLost
                 << " lost (reported), " << c.fragmentsRejected
                 << " fragments rejected, "
                 << (c.fragmentMask ? "1 message" : "none")
                 << " incomplete at the end\n";
  }
  // Handlers in sequence on one ME: their sends are summed, what left
  // the last one is what the MEs transmitted.
  uint64_t meSent =
      several && run.stages.empty() ? run.fromMEs.size() : run.meSent;
  llvm::outs() << "ME stage            " << run.meRuns << " runs, " << meSent
               << " sent, " << run.meDropped << " dropped\n";
  if (host)
    llvm::outs() << "host stage          " << run.fromMEs.size() << " in, "
                 << run.outputs.size() << " out, " << run.hostDropped
                 << " dropped\n";
  const netvm::me::Stats &st = run.stats;
  double seconds = st.seconds();
  ResourceReport report = resourceReport(run, meStage, control, machine);
  llvm::outs() << "messages out        " << run.outputs.size() << "\n"
               << "receive drops       " << st.packetsDropped << "\n"
               << "emulated time       " << run.cycles << " cycles, "
               << llvm::format("%.1f", run.micros) << " us\n"
               << "throughput          "
               << llvm::format("%.1f", st.bytesReceived * 8 / seconds / 1e6)
               << " Mbit/s in, "
               << llvm::format("%.1f", st.bytesSent * 8 / seconds / 1e6)
               << " Mbit/s out of the MEs, "
               << llvm::format("%.0f", st.packetsReceived / seconds)
               << " messages/s\n";
  // Per ME that took messages from the work ring (the handler, and the
  // ME a swap moved it to).
  for (size_t i = 0; i < run.stages.size(); ++i) {
    // A pipeline: each stage's ME, its share of the run and its cycles
    // per message (every message passes every stage).
    const StageRun &stage = run.stages[i];
    std::string pes;
    for (const std::string &pe : stage.pes)
      pes += (pes.empty() ? "" : ",") + pe;
    llvm::outs() << "stage " << i + 1 << " ME " << stage.me << "        "
                 << llvm::format("%.1f", stage.cyclesPerMessage())
                 << " busy cycles per message, busy "
                 << llvm::format("%.1f", 100 * stage.utilization) << "%, "
                 << stage.runs << " runs, " << stage.sent << " sent, "
                 << stage.dropped << " dropped (" << pes << ")\n";
  }
  for (const MELoad &me : report.mes) {
    if (!me.messages || me.stage)
      continue;
    double n = double(me.messages);
    llvm::outs() << "handler ME " << me.me << "        "
                 << llvm::format("%.1f", double(me.busyCycles) / n)
                 << " busy cycles, "
                 << llvm::format("%.1f", double(me.instructions) / n)
                 << " instructions per message (" << me.messages
                 << " messages)\n";
  }
  if (run.latencyMessages)
    llvm::outs() << "latency             "
                 << llvm::format("%.2f", run.meanLatencyCycles / st.clockMHz)
                 << " us mean, "
                 << llvm::format("%.2f", run.maxLatencyCycles / st.clockMHz)
                 << " us most (arrival to last output, " << run.latencyMessages
                 << " messages)\n";
  if (host)
    printHostThread(run, messageCount);
  if (!reportPath.empty())
    if (int rc = writeText(reportPath, toJSON(report)))
      return rc;
  if (swap.mode != SwapRequest::Mode::None) {
    const SwapReport &r = run.swap;
    double mhz = run.stats.clockMHz;
    if (!r.done)
      llvm::outs() << "swap                not done (the input ended first)\n";
    else
      llvm::outs() << "swap                " << swapMode << ", "
                   << (swap.stage ? "stage " + std::to_string(swap.stage) + ", "
                                  : std::string())
                   << "ME " << r.oldME << " -> ME " << r.newME << "\n"
                   << "  fence at          " << r.fenceCycle << "\n"
                   << "  drained at        " << r.drainedCycle << "\n"
                   << "  started at        " << r.startCycle << "\n"
                   << "  old code took     " << r.oldMessages << " messages\n"
                   << "  downtime          " << r.downtimeCycles()
                   << " cycles, "
                   << llvm::format("%.2f", r.downtimeCycles() / mhz)
                   << " us (last message taken by the old code to the "
                      "first by the new)\n";
  }
  for (const AutoSwapReport &a : run.autoSwaps) {
    const SwapReport &r = a.swap;
    llvm::outs() << "auto-specialize     "
                 << (a.toSpecialized ? "specialized" : "generic") << ", ME "
                 << r.oldME << " -> ME " << r.newME << " at cycle "
                 << r.startCycle << " after " << a.messagesBefore
                 << " messages, downtime " << r.downtimeCycles() << " cycles, "
                 << llvm::format("%.2f", r.downtimeCycles() / st.clockMHz)
                 << " us";
    for (const auto &[name, value] : a.parameters)
      llvm::outs() << ", $" << name << "=" << value;
    if (a.compileMilliseconds > 0)
      llvm::outs() << " (compiled in "
                   << llvm::format("%.0f", a.compileMilliseconds)
                   << " ms host time)";
    llvm::outs() << "\n";
  }
  for (size_t i = 0; i < control.params.size(); ++i) {
    const ParamChange &c = control.params[i];
    const ParamReport &r = run.params[i];
    llvm::outs() << "reconfigure         " << c.name << " = " << c.value;
    if (!r.done) {
      llvm::outs() << " not done (the input ended first)\n";
      continue;
    }
    llvm::outs() << " at cycle " << r.writtenCycle << ", after "
                 << r.messagesBefore << " messages, downtime "
                 << r.downtimeCycles() << " cycles, "
                 << llvm::format("%.2f", r.downtimeCycles() / st.clockMHz)
                 << " us\n";
  }
  if (!output.empty() && !writePcap(output, run.outputs, error))
    return fail(error);
  return 0;
}

static int decodeMain(const Schema &schema) {
  std::string error;
  std::unique_ptr<netvm::rt::PacketReader> reader =
      netvm::rt::PacketReader::open(inputPcap, /*hex=*/false, error);
  if (!reader)
    return fail(error);
  netvm::rt::TracePacket packet;
  uint64_t number = 0;
  while (reader->next(packet, error)) {
    ++number;
    netvm::rt::PacketView view;
    view.data = packet.bytes.data();
    view.length = static_cast<uint32_t>(packet.bytes.size());
    llvm::outs() << number << ":";
    std::optional<Header> header = readHeader(view.data, view.length);
    const Format *format = header ? schema.formatById(header->format) : nullptr;
    if (!formatName.empty() && format && format->name != formatName)
      format = nullptr;
    Values values;
    if (!format || !decode(*format, view.data, view.length, values, error)) {
      llvm::outs() << " " << view.length << " bytes, not a message of "
                   << (formatName.empty() ? std::string("the schema")
                                          : "format '" + formatName + "'")
                   << "\n";
      continue;
    }
    llvm::outs() << " stream " << header->stream << " " << format->name;
    for (const Field &f : format->fields) {
      llvm::outs() << " " << f.name << "=";
      const Value &v = values[f.name];
      if (f.isInteger()) {
        llvm::outs() << v.number;
        continue;
      }
      for (uint8_t b : v.bytes)
        llvm::outs() << llvm::format_hex_no_prefix(b, 2);
    }
    llvm::outs() << "\n";
  }
  if (!error.empty())
    return fail(error);
  return 0;
}

/// place: the operations in command-line order; each prints one line, a
/// refusal with its reason (not an error: the table stays as it was), and
/// the table after the last one.
static int placeMain(const Schema &schema) {
  netvm::me::MachineConfig machine;
  netvm::ccore::ResourceManager manager(machine, hostThreads, !noSpare);
  std::vector<std::pair<unsigned, std::string>> ops;
  for (unsigned i = 0; i < placeAdd.size(); ++i)
    ops.push_back({placeAdd.getPosition(i), "+" + placeAdd[i]});
  for (unsigned i = 0; i < placeRemove.size(); ++i)
    ops.push_back({placeRemove.getPosition(i), "-" + placeRemove[i]});
  std::sort(ops.begin(), ops.end());
  if (ops.empty())
    return fail("place needs --add (and --remove) operations");
  for (auto &[position, op] : ops) {
    if (op[0] == '-') {
      std::string name = op.substr(1);
      if (!manager.remove(name))
        return fail("--remove " + name + ": no chain of that name is running");
      llvm::outs() << "removed  " << name << "\n";
      continue;
    }
    auto [head, query] = llvm::StringRef(op).drop_front().split('=');
    auto [nameSide, rate] = head.split(':');
    auto [name, side] = nameSide.split('@');
    netvm::ccore::ChainDemand demand;
    if (side == "me")
      demand.side = netvm::ccore::ChainDemand::Side::ME;
    else if (side == "host")
      demand.side = netvm::ccore::ChainDemand::Side::Host;
    else if (!side.empty())
      return fail("--add " + op.substr(1) + ": expected @me or @host");
    demand.rateGbps = rateGbps;
    if (!rate.empty() &&
        (rate.getAsDouble(demand.rateGbps) || demand.rateGbps < 0))
      return fail("--add " + op.substr(1) + ": '" + rate.str() +
                  "' is not a rate in Gbit/s");
    if (name.empty() || query.empty())
      return fail("--add " + op.substr(1) + ": expected name=query");
    HandlerOptions options;
    options.specialize = true;
    options.name = "me_stage";
    std::string error, q = query.str();
    HandlerApp app;
    std::vector<Query> queries;
    // 'Q1 | Q2 | ...': a pipeline of handlers, one ME stage each.
    std::vector<std::string> texts = splitQueries(q);
    if (texts.size() > 1
            ? !emitPipeline(schema, texts, options, true, app, queries, error)
            : !emitHandlerApp(schema, &q, {}, options, app, queries, error))
      return fail(error);
    demand.messageBytes = queries.front().format->size;
    Placement placed = manager.add(name.str(), app, demand, nullptr, q);
    llvm::outs() << (placed.where == Placement::Where::Refused ? "refused  "
                                                               : "placed   ")
                 << name << ": " << placed.reason << "\n";
  }
  llvm::outs() << manager.text();
  if (!placeJson.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream out(placeJson, ec);
    if (ec)
      return fail(placeJson + ": " + ec.message());
    out << manager.toJSON();
  }
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "netvm-ccore: C-CORE message handlers (docs/ccore.md)\n\n"
      "  netvm-ccore compile --schema S.ccs --query 'from F select ...' "
      "[--specialize] [--param p=v]...\n"
      "  netvm-ccore gen --schema S.ccs --format F -n N -o out.pcap\n"
      "  netvm-ccore decode --schema S.ccs in.pcap\n"
      "  netvm-ccore chain --schema S.ccs --me-query Q [--me-query Q2]... "
      "[--host-query Q] "
      "[--swap=spare|in-place] [--auto-specialize[=T]]\n"
      "  netvm-ccore place --schema S.ccs --add 'name=Q' [--remove name]...\n");
  if (!compileCmd && !genCmd && !decodeCmd && !chainCmd && !placeCmd)
    return fail("give a subcommand: compile, gen, decode, chain or place "
                "(see --help)");
  std::string error;
  std::optional<Schema> schema = loadSchema(schemaPath, error);
  if (!schema)
    return fail(error);
  if (compileCmd)
    return compileMain(*schema);
  if (genCmd)
    return genMain(*schema);
  if (chainCmd)
    return chainMain(*schema);
  if (placeCmd)
    return placeMain(*schema);
  return decodeMain(*schema);
}
