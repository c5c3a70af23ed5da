//===- netvm-pcap-diff.cpp - netvm's tcpdump expressions against libpcap ------===//
//
// Compiles tcpdump expressions with netvm's pcap-filter front end (JIT, -O2)
// and with libpcap (pcap_compile, optimized, as tcpdump does), runs both
// over the packets of pcap traces (bpf_filter for libpcap) and reports
// every packet on which they disagree. libpcap defines the language; this
// is how netvm is held to it.
//
//===----------------------------------------------------------------------===//

#include "netvm/Driver/Driver.h"
#include "netvm/Frontend/PcapFilter.h"
#include "netvm/Runtime/PacketIO.h"
#include "netvm/Target/Native.h"
#include "netvm/runtime.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <arpa/inet.h>
#include <pcap/pcap.h>

#include <set>

using namespace mlir;
using namespace netvm;
namespace cl = llvm::cl;

static cl::OptionCategory diffCategory("netvm-pcap-diff options");
static cl::list<std::string> traces("r", cl::desc("A pcap trace (repeatable)"),
                                    cl::value_desc("trace.pcap"),
                                    cl::OneOrMore, cl::cat(diffCategory));
static cl::list<std::string>
    expressionFiles("f",
                    cl::desc("A file of expressions, one per line ('#' "
                             "starts a comment line); repeatable"),
                    cl::value_desc("file"), cl::cat(diffCategory));
static cl::list<std::string> expressions(cl::Positional,
                                         cl::desc("<expression>..."),
                                         cl::cat(diffCategory));
static cl::opt<bool> requireAll(
    "require-all",
    cl::desc("Also fail when netvm refuses an expression libpcap accepts"),
    cl::cat(diffCategory));
static cl::opt<std::string> knownFile(
    "known-differences",
    cl::desc("A file of expressions known to disagree on some packets (one "
             "per line): reported, not counted as failures"),
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
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(diffCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "netvm-pcap-diff - tcpdump expressions: netvm against libpcap, packet "
      "by packet\n");

  std::vector<std::string> list(expressions.begin(), expressions.end());
  auto readList = [](const std::string &path,
                     std::vector<std::string> &out) -> bool {
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
  };
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

  std::vector<Packet> packets;
  for (const std::string &path : traces) {
    std::string error;
    auto reader = rt::PacketReader::open(path, false, error);
    if (!reader) {
      llvm::errs() << "netvm-pcap-diff: " << error << "\n";
      return 1;
    }
    if (reader->linkType() != DLT_EN10MB) {
      llvm::errs() << "netvm-pcap-diff: " << path
                   << ": only Ethernet traces are supported\n";
      return 1;
    }
    rt::TracePacket p;
    while (reader->next(p, error))
      packets.push_back({p.bytes, p.wireLength});
    if (!error.empty()) {
      llvm::errs() << "netvm-pcap-diff: " << error << "\n";
      return 1;
    }
  }

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
  // The message of a compile error, without the expression and caret.
  auto firstLine = [](const std::string &error) {
    return llvm::StringRef(error).split('\n').first.trim().str();
  };

  unsigned agree = 0, disagree = 0, unsupported = 0, invalid = 0,
           lenient = 0, knownCount = 0, otherMessage = 0;
  for (const std::string &expr : list) {
    struct bpf_program bpf;
    // libpcap's optimizer refuses expressions it proves reject every
    // packet; those must reject every packet here too.
    bool rejectsAll = false;
    if (pcap_compile(dead, &bpf, expr.c_str(), 1, netmask) != 0) {
      std::string why = llvm::StringRef(pcap_geterr(dead)).trim().str();
      if (why.find("rejects all packets") == std::string::npos) {
        ++invalid;
        // netvm must refuse it too, with the same message.
        std::string error;
        if (pcapfilter::compile(context, expr, options, error)) {
          ++lenient;
          llvm::outs() << "netvm accepts what libpcap rejects: " << expr
                       << " (libpcap: " << why << ")\n";
          continue;
        }
        std::string ours = firstLine(error);
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
      rejectsAll = true;
      static struct bpf_insn reject = BPF_STMT(BPF_RET | BPF_K, 0);
      bpf.bf_len = 1;
      bpf.bf_insns = &reject;
    }
    std::string error;
    OwningOpRef<ModuleOp> module =
        pcapfilter::compile(context, expr, options, error);
    const netvm_app_desc *desc = nullptr;
    if (module && succeeded(driver::optimize(*module, 2))) {
      native::CodegenOptions codegen;
      codegen.countHandlerRuns = false;
      auto compiled = native::jitCompile(*module, codegen);
      if (compiled)
        desc = *compiled;
      else
        error = llvm::toString(compiled.takeError());
    }
    if (!desc) {
      ++unsupported;
      llvm::outs() << "netvm refuses: " << expr << "\n  "
                   << llvm::StringRef(error).split('\n').first << "\n";
      if (!rejectsAll)
        pcap_freecode(&bpf);
      continue;
    }
    char message[256];
    netvm_instance *vm = netvm_instance_create(desc, message, sizeof message);
    if (!vm) {
      llvm::errs() << "netvm-pcap-diff: " << message << "\n";
      return 1;
    }
    netvm_instance_init(vm);
    unsigned mismatches = 0, accepted = 0;
    for (size_t i = 0; i < packets.size(); ++i) {
      Packet &p = packets[i];
      uint64_t before, after, bytes;
      netvm_instance_sink_counters(vm, 0, &before, &bytes);
      netvm_packet np{p.bytes.data(), static_cast<uint32_t>(p.bytes.size()),
                      0, 0, p.wireLength};
      netvm_instance_push_batch(vm, 0, &np, 1);
      netvm_instance_sink_counters(vm, 0, &after, &bytes);
      bool ours = after != before;
      bool theirs = bpf_filter(bpf.bf_insns, p.bytes.data(), p.wireLength,
                               p.bytes.size()) != 0;
      accepted += theirs;
      if (ours == theirs)
        continue;
      if (mismatches++ < 3 && !known.count(expr))
        llvm::outs() << "DISAGREE: " << expr << ": packet " << i + 1 << " ("
                     << p.bytes.size() << " of " << p.wireLength
                     << " bytes): netvm " << (ours ? "accepts" : "rejects")
                     << ", libpcap " << (theirs ? "accepts" : "rejects")
                     << "\n";
    }
    netvm_instance_destroy(vm);
    if (!rejectsAll)
      pcap_freecode(&bpf);
    if (mismatches && known.count(expr)) {
      ++knownCount;
      llvm::outs() << "known difference: " << expr << ": " << mismatches
                   << " of " << packets.size() << " packets\n";
    } else if (mismatches) {
      ++disagree;
      llvm::outs() << "DISAGREE: " << expr << ": " << mismatches << " of "
                   << packets.size() << " packets\n";
    } else {
      if (known.count(expr))
        llvm::outs() << "now agrees (no longer a known difference): "
                     << expr << "\n";
      ++agree;
      if (verbose)
        llvm::outs() << "agree: " << expr << " (" << accepted << " of "
                     << packets.size() << " accepted)\n";
    }
  }
  pcap_close(dead);
  llvm::outs() << llvm::formatv(
      "{0} expressions, {1} packets: {2} agree, {3} disagree ({7} more "
      "known to), {4} refused by netvm, {5} invalid for libpcap ({6} of them "
      "accepted by netvm, {8} refused with another message)\n",
      list.size(), packets.size(), agree, disagree, unsupported, invalid,
      lenient, knownCount, otherMessage);
  return disagree || lenient || (requireAll && unsupported) ||
                 (sameMessages && otherMessage)
             ? 1
             : 0;
}
