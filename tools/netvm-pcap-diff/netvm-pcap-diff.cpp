//===- netvm-pcap-diff.cpp - netvm's filters against libpcap
//------------------===//
//
// Compiles tcpdump expressions with netvm's pcap-filter front end (JIT, -O2)
// and with libpcap (pcap_compile, optimized, as tcpdump does), runs both
// over the packets of pcap traces (bpf_filter for libpcap) and reports
// every packet on which they disagree. libpcap defines the language; this
// is how netvm is held to it.
//
// With --pfl, every input is a pair `NETPFL ;; TCPDUMP-EXPRESSION`: netvm
// compiles the NetPFL filter (over the built-in protocol database or
// --protodb), libpcap the tcpdump expression, and both must give every
// packet the same verdict.
//
//===----------------------------------------------------------------------===//

#include "netvm/Driver/Driver.h"
#include "netvm/Frontend/PcapFilter.h"
#include "netvm/Target/Native.h"
#include "netvm/io/PacketIO.h"
#include "netvm/runtime.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <arpa/inet.h>
#include <pcap/pcap.h>

#include <set>

using namespace mlir;
using namespace netvm;
namespace cl = llvm::cl;

static cl::OptionCategory diffCategory("netvm-pcap-diff options");
static cl::list<std::string> traces("r", cl::desc("A pcap trace (repeatable)"),
                                    cl::value_desc("trace.pcap"), cl::OneOrMore,
                                    cl::cat(diffCategory));
static cl::list<std::string>
    expressionFiles("f",
                    cl::desc("A file of expressions (with --pfl, of pairs), "
                             "one per line ('#' starts a comment line); "
                             "repeatable"),
                    cl::value_desc("file"), cl::cat(diffCategory));
static cl::list<std::string> expressions(cl::Positional,
                                         cl::desc("<expression>..."),
                                         cl::cat(diffCategory));
static cl::opt<bool> pflMode(
    "pfl",
    cl::desc("NetPFL mode: every expression is a pair 'NETPFL ;; "
             "TCPDUMP-EXPRESSION'; netvm compiles the NetPFL filter, "
             "libpcap the tcpdump expression, and every packet must get "
             "the same verdict from both. Fails on any disagreement, on a "
             "NetPFL filter netvm refuses and on a tcpdump expression "
             "libpcap refuses"),
    cl::cat(diffCategory));
static cl::opt<std::string>
    protoDB("protodb",
            cl::desc("With --pfl: the NetPDL protocol database of the NetPFL "
                     "filters (default: netvm's built-in one)"),
            cl::value_desc("file.xml"), cl::cat(diffCategory));
static cl::opt<bool> requireAll(
    "require-all",
    cl::desc("Also fail when netvm refuses an expression libpcap accepts"),
    cl::cat(diffCategory));
static cl::opt<std::string> knownFile(
    "known-differences",
    cl::desc("A file of expressions (pairs with --pfl) known to disagree on "
             "some packets (one per line): reported, not counted as "
             "failures"),
    cl::value_desc("file"), cl::cat(diffCategory));
static cl::opt<bool> verbose("v", cl::desc("Print every expression's result"),
                             cl::cat(diffCategory));
static cl::opt<bool> sameMessages(
    "same-messages",
    cl::desc("Also fail when netvm refuses an expression with another "
             "message than libpcap's (syntax errors count as the same)"),
    cl::cat(diffCategory));
static cl::opt<std::string> netmaskOption(
    "netmask",
    cl::desc("The netmask pcap_compile and netvm get (for 'ip broadcast'); "
             "none by default (PCAP_NETMASK_UNKNOWN)"),
    cl::value_desc("a.b.c.d"), cl::cat(diffCategory));

namespace {
struct Packet {
  std::vector<uint8_t> bytes;
  uint32_t wireLength;
};

/// libpcap's program for one expression. An expression libpcap's optimizer
/// proves rejects every packet becomes a program that rejects every
/// packet: netvm must reject them all too.
class LibpcapFilter {
public:
  LibpcapFilter(pcap_t *dead, const std::string &expr, bpf_u_int32 netmask) {
    if (pcap_compile(dead, &program, expr.c_str(), 1, netmask) == 0) {
      compiled = true;
      return;
    }
    error = llvm::StringRef(pcap_geterr(dead)).trim().str();
    if (error.find("rejects all packets") != std::string::npos) {
      static struct bpf_insn reject = BPF_STMT(BPF_RET | BPF_K, 0);
      program.bf_len = 1;
      program.bf_insns = &reject;
      error.clear();
    }
  }
  LibpcapFilter(const LibpcapFilter &) = delete;
  LibpcapFilter &operator=(const LibpcapFilter &) = delete;
  ~LibpcapFilter() {
    if (compiled)
      pcap_freecode(&program);
  }
  /// Whether libpcap accepted the expression (possibly as reject-all);
  /// otherwise error() says why not.
  bool valid() const { return error.empty(); }
  const std::string &why() const { return error; }
  bool accepts(const Packet &p) const {
    return bpf_filter(program.bf_insns, p.bytes.data(), p.wireLength,
                      p.bytes.size()) != 0;
  }

private:
  struct bpf_program program = {};
  bool compiled = false;
  std::string error;
};

/// netvm's code for one filter: -O2, JIT, one instance.
class NetvmFilter {
public:
  /// Compiles `module` (null: the front end refused; `error` says why).
  /// Check valid() afterwards.
  NetvmFilter(OwningOpRef<ModuleOp> module, std::string error)
      : error(std::move(error)) {
    const netvm_app_desc *desc = nullptr;
    if (module && succeeded(driver::optimize(*module, 2))) {
      native::CodegenOptions codegen;
      codegen.lowering.countHandlerRuns = false;
      auto compiled = native::jitCompile(*module, codegen);
      if (compiled)
        desc = *compiled;
      else
        this->error = llvm::toString(compiled.takeError());
    }
    if (!desc)
      return;
    char message[256];
    vm = netvm_instance_create(desc, message, sizeof message);
    if (!vm) {
      this->error = message;
      return;
    }
    netvm_instance_init(vm);
  }
  NetvmFilter(const NetvmFilter &) = delete;
  NetvmFilter &operator=(const NetvmFilter &) = delete;
  ~NetvmFilter() {
    if (vm)
      netvm_instance_destroy(vm);
  }
  bool valid() const { return vm; }
  /// The first line of the reason it is not valid.
  llvm::StringRef why() const {
    return llvm::StringRef(error).split('\n').first;
  }
  /// Whether the filter sends `p` to its sink (the application's only one:
  /// `match`, or `portN` for NetPFL's `returnpacket on port N`).
  bool accepts(Packet &p) {
    uint64_t before, after, bytes;
    netvm_instance_sink_counters(vm, 0, &before, &bytes);
    netvm_packet np{p.bytes.data(), static_cast<uint32_t>(p.bytes.size()), 0, 0,
                    p.wireLength};
    netvm_instance_push_batch(vm, 0, &np, 1);
    netvm_instance_sink_counters(vm, 0, &after, &bytes);
    return after != before;
  }

private:
  netvm_instance *vm = nullptr;
  std::string error;
};

/// Runs netvm's and libpcap's filters over every packet and counts the
/// outcomes for the summary line.
class Comparison {
public:
  Comparison(std::vector<Packet> &packets, const std::set<std::string> &known)
      : packets(packets), known(known) {}

  unsigned agree = 0, disagree = 0, knownCount = 0, trivial = 0, refused = 0;

  /// Compares netvm's `module` (null when the front end refused it, saying
  /// why in `error`) with libpcap's program for `label` (an expression, or
  /// a pair with --pfl).
  void run(OwningOpRef<ModuleOp> module, const std::string &error,
           const LibpcapFilter &theirs, const std::string &label) {
    NetvmFilter ours(std::move(module), error);
    if (!ours.valid()) {
      ++refused;
      llvm::outs() << "netvm refuses: " << label << "\n  " << ours.why()
                   << "\n";
      return;
    }
    bool isKnown = known.count(label);
    unsigned mismatches = 0, accepted = 0;
    for (size_t i = 0; i < packets.size(); ++i) {
      Packet &p = packets[i];
      bool netvm = ours.accepts(p);
      bool libpcap = theirs.accepts(p);
      accepted += libpcap;
      if (netvm == libpcap)
        continue;
      // The first few packets, unless the difference is known.
      if (mismatches++ < 3 && !isKnown)
        llvm::outs() << "DISAGREE: " << label << ": packet " << i + 1 << " ("
                     << p.bytes.size() << " of " << p.wireLength
                     << " bytes): netvm " << (netvm ? "accepts" : "rejects")
                     << ", libpcap " << (libpcap ? "accepts" : "rejects")
                     << "\n";
    }
    if (mismatches && isKnown) {
      ++knownCount;
      llvm::outs() << "known difference: " << label << ": " << mismatches
                   << " of " << packets.size() << " packets\n";
      return;
    }
    if (mismatches) {
      ++disagree;
      llvm::outs() << "DISAGREE: " << label << ": " << mismatches << " of "
                   << packets.size() << " packets\n";
      return;
    }
    if (isKnown)
      llvm::outs() << "now agrees (no longer a known difference): " << label
                   << "\n";
    ++agree;
    trivial += accepted == 0 || accepted == packets.size();
    if (verbose)
      llvm::outs() << "agree: " << label << " (" << accepted << " of "
                   << packets.size() << " accepted)\n";
  }

private:
  std::vector<Packet> &packets;
  const std::set<std::string> &known;
};

bool readList(const std::string &path, std::vector<std::string> &out) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    llvm::errs() << "netvm-pcap-diff: " << path << ": "
                 << buffer.getError().message() << "\n";
    return false;
  }
  llvm::SmallVector<llvm::StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (llvm::StringRef line : lines) {
    line = line.trim();
    if (!line.empty() && !line.starts_with("#"))
      out.push_back(line.str());
  }
  return true;
}

/// The packets of every trace, which share the first one's link type (the
/// one both compilers compile for).
bool readPackets(std::vector<Packet> &packets) {
  int linkType = -1;
  for (const std::string &path : traces) {
    std::string error;
    auto reader = rt::PacketReader::open(path, false, error);
    if (!reader) {
      llvm::errs() << "netvm-pcap-diff: " << error << "\n";
      return false;
    }
    if (linkType >= 0 && reader->linkType() != linkType) {
      llvm::errs() << "netvm-pcap-diff: " << path << ": link type "
                   << reader->linkType() << " differs from the first trace's ("
                   << linkType << ")\n";
      return false;
    }
    linkType = reader->linkType();
    rt::TracePacket p;
    while (reader->next(p, error))
      packets.push_back({p.bytes, p.wireLength});
    if (!error.empty()) {
      llvm::errs() << "netvm-pcap-diff: " << error << "\n";
      return false;
    }
  }
  return true;
}

/// --pfl: NetPFL filters against the tcpdump expressions beside them.
int comparePairs(MLIRContext &context, pcap_t *dead, bpf_u_int32 netmask,
                 const std::vector<std::string> &pairs,
                 const std::set<std::string> &known,
                 std::vector<Packet> &packets) {
  driver::Input input;
  input.kind = driver::Input::Kind::Filter;
  input.language = driver::FilterLanguage::NetPFL;
  input.protoDB = protoDB;
  Comparison tally(packets, known);
  unsigned invalid = 0;
  for (const std::string &pair : pairs) {
    auto [pfl, tcpdump] = llvm::StringRef(pair).rsplit(";;");
    pfl = pfl.trim();
    tcpdump = tcpdump.trim();
    LibpcapFilter theirs(dead, tcpdump.str(), netmask);
    if (!theirs.valid()) {
      ++invalid;
      llvm::outs() << "libpcap refuses: " << pair << "\n  " << theirs.why()
                   << "\n";
      continue;
    }
    // The first error's message says why netvm refuses it.
    std::string error;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error && error.empty())
        error = diag.str();
      return success();
    });
    input.filter = pfl.str();
    llvm::SourceMgr sourceMgr;
    auto module = driver::load(context, sourceMgr, input);
    tally.run(std::move(module), error, theirs, pair);
  }
  llvm::outs() << llvm::formatv(
      "{0} pairs, {1} packets: {2} agree ({7} of them accepting no packet "
      "or every packet), {3} disagree ({4} more known to), {5} refused by "
      "netvm, {6} invalid for libpcap\n",
      pairs.size(), packets.size(), tally.agree, tally.disagree,
      tally.knownCount, tally.refused, invalid, tally.trivial);
  return tally.disagree || tally.refused || invalid ? 1 : 0;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(diffCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "netvm-pcap-diff - netvm's filters against libpcap, packet by packet\n\n"
      "tcpdump expressions: netvm's pcap-filter front end against libpcap.\n"
      "With --pfl, pairs 'NETPFL ;; TCPDUMP-EXPRESSION': a NetPFL filter\n"
      "against libpcap's verdict on an equivalent tcpdump expression.\n");

  std::vector<std::string> list(expressions.begin(), expressions.end());
  for (const std::string &expressionFile : expressionFiles)
    if (!readList(expressionFile, list))
      return 1;
  std::vector<std::string> knownList;
  if (!knownFile.empty() && !readList(knownFile, knownList))
    return 1;
  std::set<std::string> known(knownList.begin(), knownList.end());
  if (list.empty()) {
    llvm::errs() << "netvm-pcap-diff: no expressions (give some, or -f)\n";
    return 1;
  }
  if (!protoDB.empty() && !pflMode) {
    llvm::errs() << "netvm-pcap-diff: --protodb needs --pfl\n";
    return 1;
  }
  if (pflMode)
    for (const std::string &pair : list)
      if (!llvm::StringRef(pair).contains(";;")) {
        llvm::errs() << "netvm-pcap-diff: not a pair 'NETPFL ;; "
                        "TCPDUMP-EXPRESSION': "
                     << pair << "\n";
        return 1;
      }

  std::vector<Packet> packets;
  if (!readPackets(packets))
    return 1;

  DialectRegistry registry;
  driver::registerDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  // libpcap compiles for the first trace, as tcpdump -r does: some
  // primitives (inbound, ifindex) depend on reading a savefile.
  char pcapError[PCAP_ERRBUF_SIZE];
  pcap_t *dead = pcap_open_offline(traces.front().c_str(), pcapError);
  if (!dead) {
    llvm::errs() << "netvm-pcap-diff: " << pcapError << "\n";
    return 1;
  }
  pcapfilter::CompileOptions options;
  options.linkType = pcap_datalink(dead);
  options.swapped = pcap_is_swapped(dead) == 1;
  if (pflMode && options.linkType != DLT_EN10MB) {
    llvm::errs() << "netvm-pcap-diff: --pfl: NetPFL filters read Ethernet "
                    "frames only\n";
    pcap_close(dead);
    return 1;
  }
  bpf_u_int32 netmask = PCAP_NETMASK_UNKNOWN;
  if (!netmaskOption.empty()) {
    struct in_addr mask;
    if (inet_pton(AF_INET, netmaskOption.c_str(), &mask) != 1) {
      llvm::errs() << "netvm-pcap-diff: bad netmask '" << netmaskOption
                   << "'\n";
      return 1;
    }
    netmask = ntohl(mask.s_addr);
    options.netmask = netmask;
  }
  if (pflMode) {
    int status = comparePairs(context, dead, netmask, list, known, packets);
    pcap_close(dead);
    return status;
  }
  // Compile `expr`; on error, `error` is the message of the first error.
  auto compile = [&](const std::string &expr, std::string &error) {
    llvm::SourceMgr sourceMgr;
    unsigned bufferId = sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(expr, "<expression>"),
        llvm::SMLoc());
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error && error.empty())
        error = diag.str();
      return success();
    });
    return pcapfilter::compile(context, sourceMgr, bufferId, options);
  };

  Comparison tally(packets, known);
  unsigned invalid = 0, lenient = 0, otherMessage = 0;
  for (const std::string &expr : list) {
    LibpcapFilter theirs(dead, expr, netmask);
    if (!theirs.valid()) {
      const std::string &why = theirs.why();
      ++invalid;
      // netvm must refuse it too, with the same message.
      std::string error;
      if (compile(expr, error)) {
        ++lenient;
        llvm::outs() << "netvm accepts what libpcap rejects: " << expr
                     << " (libpcap: " << why << ")\n";
        continue;
      }
      const std::string &ours = error;
      bool bothSyntax = why.find("syntax error") != std::string::npos &&
                        ours.find("syntax error") != std::string::npos;
      if (ours != why && !bothSyntax) {
        ++otherMessage;
        llvm::outs() << "another message: " << expr << "\n  netvm: " << ours
                     << "\n  libpcap: " << why << "\n";
      } else if (verbose) {
        llvm::outs() << "both reject: " << expr << " (" << why << ")\n";
      }
      continue;
    }
    std::string error;
    auto module = compile(expr, error);
    tally.run(std::move(module), error, theirs, expr);
  }
  pcap_close(dead);
  llvm::outs() << llvm::formatv(
      "{0} expressions, {1} packets: {2} agree, {3} disagree ({7} more "
      "known to), {4} refused by netvm, {5} invalid for libpcap ({6} of them "
      "accepted by netvm, {8} refused with another message)\n",
      list.size(), packets.size(), tally.agree, tally.disagree, tally.refused,
      invalid, lenient, tally.knownCount, otherMessage);
  return tally.disagree || lenient || (requireAll && tally.refused) ||
                 (sameMessages && otherMessage)
             ? 1
             : 0;
}
