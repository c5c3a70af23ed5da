//===- ids-bench.cpp - netvm's IDS against a hand-written one -------------===//
//
// The IDS benchmark of issue 14 (bench/README.md, "IDS"):
//
//   netvm-ids-bench --generate-rules N -o FILE     a rule set
//   netvm-ids-bench --generate-trace N --rules FILE -o FILE   a trace
//   netvm-ids-bench RULES TRACE [--repeat R]       the measurement
//
// The measurement compiles RULES into the netvm IDS (timing each phase),
// builds the hand-written IDS over the same Hyperscan databases (the same
// port groups, fast patterns, literal and pcre databases, compiled with
// the coprocessors' flags), checks that both raise the same alerts on
// every packet of TRACE, then times both over the trace in memory, one
// after the other R times, and prints medians and ratios as Markdown. The
// share of time in string matching is the time the hand-written IDS spends
// inside hs_scan (the same scans the coprocessors make), over each IDS's
// time.
//
//===----------------------------------------------------------------------===//

#include "netvm/Driver/Driver.h"
#include "netvm/Frontend/Snort.h"
#include "netvm/Runtime/Engine.h"
#include "netvm/Target/Native.h"
#include "netvm/io/PacketIO.h"

#include "NetVM/NetVMOps.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <hs/hs.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>

using namespace netvm;
using namespace netvm::snort;
namespace cl = llvm::cl;

static cl::OptionCategory benchCategory("netvm-ids-bench options");
static cl::list<std::string> positional(cl::Positional,
                                        cl::desc("<rules> <trace.pcap>"),
                                        cl::cat(benchCategory));
static cl::opt<unsigned> generateRules("generate-rules",
                                       cl::desc("Write a rule set of N rules"),
                                       cl::init(0), cl::cat(benchCategory));
static cl::opt<unsigned>
    generateTrace("generate-trace",
                  cl::desc("Write a trace of N packets for --rules"),
                  cl::init(0), cl::cat(benchCategory));
static cl::opt<std::string> rulesOption("rules",
                                        cl::desc("The rules of the trace"),
                                        cl::cat(benchCategory));
static cl::opt<std::string> output("o", cl::desc("Output file"),
                                   cl::cat(benchCategory));
static cl::opt<unsigned> seed("seed", cl::desc("Random seed"), cl::init(1),
                              cl::cat(benchCategory));
static cl::opt<unsigned>
    netvmLevel("netvm-opt",
               cl::desc("netvm's optimization level of the IDS (LLVM's is "
                        "-O2 whatever it is)"),
               cl::init(2), cl::cat(benchCategory));
static cl::opt<unsigned> repeat("repeat",
                                cl::desc("Measurements of each IDS (median)"),
                                cl::init(5), cl::cat(benchCategory));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "netvm-ids-bench: error: " << message << "\n";
  return 1;
}

using Clock = std::chrono::steady_clock;
static double seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

//===----------------------------------------------------------------------===//
// Generating rules and traces
//===----------------------------------------------------------------------===//

// Service ports, weighted roughly as in public rule sets (web first).
static const uint16_t servicePorts[] = {80, 80,   80,   80,   8080, 443, 25,
                                        21, 22,   23,   110,  143,  445, 139,
                                        53, 3306, 1433, 3389, 5900, 6667};

namespace {
struct Generator {
  std::mt19937 rng;
  explicit Generator(unsigned seed) : rng(seed) {}
  unsigned below(unsigned n) { return rng() % n; }
  bool chance(double p) {
    return std::uniform_real_distribution<>(0, 1)(rng) < p;
  }

  /// A content as Snort rule sets have them: mostly 6-16 bytes (fast
  /// patterns of web rules: paths, parameters, headers), some binary.
  std::string contentBytes() {
    static const char *const stems[] = {
        "/cgi-bin/",      ".php?",   "User-Agent: ", "cmd=",    "/admin/",
        "select ",        "union ",  "<script",      ".exe",    "passwd",
        "Content-Type: ", "HTTP/1.", "POST ",        "GET ",    "Cookie: ",
        "/wp-",           "eval(",   "%2e%2e",       "base64,", "X-Forwarded-"};
    unsigned length = 4 + below(5) + below(5) + below(8); // 4-20, mean ~11
    std::string s;
    if (chance(0.6))
      s = stems[below(std::size(stems))];
    static const char alphabet[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=";
    while (s.size() < length)
      s += alphabet[below(sizeof(alphabet) - 1)];
    if (chance(0.15)) // binary bytes
      for (char &c : s)
        if (chance(0.5))
          c = char(below(256));
    return s.substr(0, std::max<size_t>(length, 4));
  }
};
} // namespace

/// A content string as rule text: printable bytes as they are, the rest
/// (and the characters Snort reserves) as |hex|.
static std::string quoteContent(llvm::StringRef bytes) {
  std::string out;
  bool hex = false;
  for (unsigned char c : bytes) {
    bool plain =
        c >= 0x20 && c < 0x7f && !llvm::StringRef("\";\\|:").contains(c);
    if (plain == hex) {
      out += '|';
      hex = !hex;
    }
    if (plain)
      out += char(c);
    else
      out += llvm::formatv("{0:X-2} ", unsigned(c)).str();
  }
  if (hex)
    out += '|';
  return out;
}

static int writeRules() {
  Generator g(seed);
  std::string text = "# netvm-ids-bench --generate-rules " +
                     std::to_string(generateRules) + " --seed " +
                     std::to_string(seed) +
                     "\nvar HOME_NET 10.0.0.0/8\nvar EXTERNAL_NET !$HOME_NET\n"
                     "portvar HTTP_PORTS [80,8000,8080,8088]\n";
  for (unsigned i = 0; i < generateRules; ++i) {
    unsigned kind = g.below(100);
    std::string proto = kind < 75   ? "tcp"
                        : kind < 92 ? "udp"
                        : kind < 96 ? "icmp"
                                    : "ip";
    std::string sport = "any", dport = "any";
    if (proto == "tcp" || proto == "udp") {
      unsigned p = g.below(100);
      if (proto == "tcp" && p < 35)
        dport = "$HTTP_PORTS";
      else if (p < 80)
        dport = std::to_string(servicePorts[g.below(std::size(servicePorts))]);
      else if (p < 88)
        sport = std::to_string(servicePorts[g.below(std::size(servicePorts))]);
      else if (p < 92)
        dport = "1024:";
    }
    bool inbound = sport == "any";
    std::string rule =
        llvm::formatv("alert {0} {1} {2} -> {3} {4} (msg:\"bench rule {5}\"; ",
                      proto, inbound ? "$EXTERNAL_NET" : "$HOME_NET", sport,
                      inbound ? "$HOME_NET" : "$EXTERNAL_NET", dport, i);
    unsigned contents = g.chance(0.04) ? 0 : 1 + g.below(2) + g.chance(0.2);
    for (unsigned c = 0; c < contents; ++c) {
      std::string bytes = g.contentBytes();
      rule += "content:\"" + quoteContent(bytes) + "\"; ";
      if (g.chance(0.3))
        rule += "nocase; ";
      if (c == 0 && g.chance(0.2))
        rule += llvm::formatv("offset:{0}; depth:{1}; ", g.below(8),
                              bytes.size() + 8 + g.below(64))
                    .str();
      else if (c > 0 && g.chance(0.5))
        rule += llvm::formatv("distance:{0}; within:{1}; ", g.below(4),
                              bytes.size() + 4 + g.below(100))
                    .str();
    }
    if (g.chance(0.1))
      rule += llvm::formatv("pcre:\"/{0}[0-9]{{2,8}[a-z]/i\"; ",
                            g.chance(0.5) ? "id=" : "token_")
                  .str();
    // Rules without content test rare headers, as scan detectors do.
    if (proto == "tcp" && contents == 0)
      rule += "flags:SF,12; ";
    else if (proto == "tcp" && g.chance(0.05))
      rule += "flags:PA+; ";
    if (contents == 0 && proto != "tcp")
      rule += llvm::formatv("dsize:>{0}; ", 1400 + g.below(100)).str();
    else if (g.chance(0.05))
      rule += llvm::formatv("dsize:>{0}; ", 100 + g.below(900)).str();
    rule += llvm::formatv("sid:{0}; rev:1;)\n", 1000000 + i).str();
    text += rule;
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(output, ec);
  if (ec)
    return fail(output + ": " + ec.message());
  os << text;
  return 0;
}

static void put16(std::vector<uint8_t> &b, size_t at, unsigned v) {
  b[at] = v >> 8;
  b[at + 1] = v;
}
static void put32(std::vector<uint8_t> &b, size_t at, uint32_t v) {
  put16(b, at, v >> 16);
  put16(b, at + 2, v & 0xFFFF);
}

/// The payload of a packet planted for `rule`: its contents where their
/// windows put them, in filler.
static std::string plant(const Rule &rule, Generator &g) {
  std::string payload;
  for (const Content &c : rule.contents) {
    if (c.negated)
      continue;
    size_t at = c.relative() ? payload.size() + std::max(0, *c.distance)
                             : c.offset.value_or(0);
    while (payload.size() < at)
      payload += char('a' + g.below(26));
    payload += c.bytes;
  }
  if (!rule.pcres.empty())
    payload += " id=1234x token_99z";
  return payload;
}

static int writeTrace() {
  RuleReader reader;
  if (!reader.readFile(rulesOption) || reader.errors())
    return fail("cannot use the rules of " + rulesOption);
  const std::vector<Rule> &rules = reader.rules();
  Generator g(seed);
  std::string error;
  auto writer = rt::PcapWriter::create(output, 1, error);
  if (!writer)
    return fail(error);
  static const char filler[] = "abcdefghijklmnopqrstuvwxyz      0123456789\r\n";
  for (unsigned n = 0; n < generateTrace; ++n) {
    unsigned kind = g.below(100);
    unsigned proto = kind < 88 ? 6 : kind < 98 ? 17 : 1;
    uint16_t dport = g.chance(0.7)
                         ? servicePorts[g.below(std::size(servicePorts))]
                         : 1024 + g.below(60000);
    uint16_t sport = 1024 + g.below(60000);
    uint32_t src = 0xC0000000 | g.below(1 << 24),
             dst = 0x0A000000 | g.below(1 << 24);
    if (g.chance(0.3)) { // replies
      std::swap(src, dst);
      std::swap(sport, dport);
    }
    std::string payload;
    unsigned size = g.below(100);
    size = size < 30 ? 0 : size < 80 ? 40 + g.below(260) : 300 + g.below(1100);
    for (unsigned i = 0; i < size; ++i)
      payload += filler[g.below(sizeof(filler) - 1)];
    uint8_t flags = size ? 0x18 : (g.chance(0.3) ? 0x02 : 0x10);
    if (g.chance(0.02) && !rules.empty()) {
      // A packet made to match a rule (mostly; headers are not forced).
      const Rule &r = rules[g.below(rules.size())];
      std::string planted = plant(r, g);
      payload = planted + payload.substr(0, payload.size() / 2);
      proto = r.protocol == Protocol::UDP    ? 17
              : r.protocol == Protocol::ICMP ? 1
                                             : 6;
      if (auto ports = r.destinationPort.enumerate(64))
        dport = (*ports)[g.below(ports->size())];
      if (auto ports = r.sourcePort.enumerate(64))
        sport = (*ports)[g.below(ports->size())];
      if (r.flags)
        flags = r.flags->bits;
    }
    size_t l4 = proto == 6 ? 20 : 8;
    std::vector<uint8_t> b(14 + 20 + l4 + payload.size());
    put16(b, 12, 0x0800);
    b[14] = 0x45;
    put16(b, 16, 20 + l4 + payload.size());
    b[22] = 64;
    b[23] = proto;
    put32(b, 26, src);
    put32(b, 30, dst);
    if (proto != 1) {
      put16(b, 34, sport);
      put16(b, 36, dport);
    } else {
      b[34] = 8;
    }
    if (proto == 6) {
      b[34 + 12] = 0x50;
      b[34 + 13] = flags;
    } else if (proto == 17) {
      put16(b, 38, 8 + payload.size());
    }
    std::copy(payload.begin(), payload.end(), b.begin() + 34 + l4);
    rt::TracePacket packet;
    packet.bytes = std::move(b);
    packet.wireLength = packet.bytes.size();
    packet.seconds = 1700000000 + n / 100000;
    packet.microseconds = (n % 100000) * 10;
    writer->write(packet);
  }
  return writer->flush(error) ? 0 : fail(error);
}

//===----------------------------------------------------------------------===//
// The hand-written IDS
//===----------------------------------------------------------------------===//

namespace {
struct Decoded {
  uint32_t src, dst, offset, length;
  uint16_t sport, dport;
  uint8_t proto, flags;
};

/// The same IDS as the generated application, written directly: decode,
/// port groups by table, one scan of the group's fast patterns, each
/// candidate's rule checked, pcre last. Every Hyperscan database is the
/// coprocessors' (the same patterns, flags and compile calls).
class NativeIDS {
public:
  NativeIDS(const std::vector<Rule> &rules, const GroupPlan &plan)
      : rules(rules), plan(plan), marks(rules.size(), 0) {
    for (auto &table : groupOf)
      table.assign(65536 * 2, 0);
    for (unsigned f = 0; f < 2; ++f) {
      for (auto [port, group] : plan.byDestination[f])
        groupOf[f][port] = group + 1;
      for (auto [port, group] : plan.bySource[f])
        groupOf[f][65536 + port] = group + 1;
    }
    for (const PortGroup &group : plan.groups) {
      std::vector<const char *> strings;
      std::vector<size_t> lengths;
      std::vector<unsigned> flags, ids;
      for (auto [rule, content] : group.fastPatterns) {
        const Content &c = rules[rule].contents[content];
        strings.push_back(c.bytes.data());
        lengths.push_back(c.bytes.size());
        flags.push_back(c.nocase ? HS_FLAG_CASELESS : 0);
        ids.push_back(rule);
      }
      groupDbs.push_back(literals(strings, lengths, flags, ids));
    }
    for (const Rule &r : rules) {
      std::vector<unsigned> ids, pcreIds;
      for (const Content &c : r.contents) {
        auto [it, added] =
            contentIndex.try_emplace({c.bytes, c.nocase}, contentDbs.size());
        if (added) {
          const char *s = c.bytes.data();
          size_t length = c.bytes.size();
          unsigned flag = c.nocase ? HS_FLAG_CASELESS : 0, id = 0;
          contentDbs.push_back(literals({s}, {length}, {flag}, {id}));
        }
        ids.push_back(it->second);
      }
      for (const Pcre &p : r.pcres)
        pcreIds.push_back(pcre(p));
      ruleContents.push_back(std::move(ids));
      rulePcres.push_back(std::move(pcreIds));
    }
  }
  ~NativeIDS() {
    for (auto *list : {&groupDbs, &contentDbs, &pcreDbs})
      for (hs_database_t *db : *list)
        hs_free_database(db);
    hs_free_scratch(scratch);
  }

  /// The sids of the alerts of one packet, in rule order, into `sids`.
  void inspect(const uint8_t *p, uint32_t length, std::vector<uint32_t> &sids) {
    sids.clear();
    Decoded d;
    if (!decode(p, length, d))
      return;
    data = p + d.offset;
    ++epoch;
    candidates.clear();
    unsigned g1 = 0, g2 = 0;
    if (d.proto == 6 || d.proto == 17) {
      const auto &table = groupOf[d.proto == 6 ? 0 : 1];
      g1 = table[d.dport];
      g2 = table[65536 + d.sport];
      if (!g1 && !g2)
        g1 = plan.generic[d.proto == 6 ? 0 : 1] + 1;
    } else {
      g1 = plan.generic[d.proto == 1 ? 2 : 3] + 1;
    }
    for (unsigned g : {g1, g2}) {
      if (!g)
        continue;
      if (hs_database_t *db = groupDbs[g - 1])
        scan(db, data, d.length, onFastPattern);
      for (unsigned rule : plan.groups[g - 1].contentless)
        add(rule);
    }
    candidateCount += candidates.size();
    bool pass = false;
    for (unsigned rule : candidates) {
      if (!check(rule, d))
        continue;
      if (rules[rule].action == Action::Pass)
        pass = true;
      else
        sids.push_back(rule);
    }
    if (pass) {
      sids.clear();
      return;
    }
    std::sort(sids.begin(), sids.end());
    for (uint32_t &s : sids)
      s = rules[s].sid;
  }

  /// Fast-pattern occurrences and candidate rules so far.
  uint64_t occurrences = 0, candidateCount = 0;
  /// Nanoseconds inside hs_scan so far.
  double scanNanoseconds = 0;
  bool timeScans = false;

private:
  const std::vector<Rule> &rules;
  const GroupPlan &plan;
  std::vector<uint16_t> groupOf[2]; // dst ports, then src ports
  std::vector<hs_database_t *> groupDbs, contentDbs, pcreDbs;
  std::map<std::pair<std::string, bool>, unsigned> contentIndex;
  std::map<std::pair<std::string, std::string>, unsigned> pcreIndex;
  std::vector<std::vector<unsigned>> ruleContents, rulePcres;
  hs_scratch_t *scratch = nullptr;
  std::vector<uint32_t> marks;
  uint32_t epoch = 0;
  std::vector<unsigned> candidates;
  const uint8_t *data = nullptr;
  unsigned long long firstEnd = 0;

  hs_database_t *literals(std::vector<const char *> strings,
                          std::vector<size_t> lengths,
                          std::vector<unsigned> flags,
                          std::vector<unsigned> ids) {
    if (strings.empty())
      return nullptr;
    hs_database_t *db = nullptr;
    hs_compile_error_t *error = nullptr;
    if (hs_compile_lit_multi(strings.data(), flags.data(), ids.data(),
                             lengths.data(), strings.size(), HS_MODE_BLOCK,
                             nullptr, &db, &error) != HS_SUCCESS)
      llvm::report_fatal_error(llvm::Twine("hyperscan: ") + error->message);
    hs_alloc_scratch(db, &scratch);
    return db;
  }

  unsigned pcre(const Pcre &p) {
    auto [it, added] =
        pcreIndex.try_emplace({p.pattern, p.flags}, pcreDbs.size());
    if (!added)
      return it->second;
    unsigned flags = HS_FLAG_ALLOWEMPTY;
    std::string expression = p.pattern;
    for (char f : p.flags) {
      if (f == 'i')
        flags |= HS_FLAG_CASELESS;
      else if (f == 's')
        flags |= HS_FLAG_DOTALL;
      else if (f == 'm')
        flags |= HS_FLAG_MULTILINE;
    }
    bool extended = p.flags.find('x') != std::string::npos;
    if (p.flags.find('A') != std::string::npos)
      expression = "\\A(?:" + expression + (extended ? "\n)" : ")");
    if (extended)
      expression = "(?x)" + expression;
    hs_database_t *db = nullptr;
    hs_compile_error_t *error = nullptr;
    if (hs_compile(expression.c_str(), flags | HS_FLAG_SOM_LEFTMOST,
                   HS_MODE_BLOCK, nullptr, &db, &error) != HS_SUCCESS) {
      hs_free_compile_error(error);
      if (hs_compile(expression.c_str(), flags, HS_MODE_BLOCK, nullptr, &db,
                     &error) != HS_SUCCESS)
        llvm::report_fatal_error(llvm::Twine("hyperscan: ") + error->message);
    }
    hs_alloc_scratch(db, &scratch);
    pcreDbs.push_back(db);
    return pcreDbs.size() - 1;
  }

  void scan(hs_database_t *db, const uint8_t *at, uint32_t length,
            match_event_handler handler) {
    static const char empty = 0;
    const char *bytes = length ? reinterpret_cast<const char *>(at) : &empty;
    if (!timeScans) {
      hs_scan(db, bytes, length, 0, scratch, handler, this);
      return;
    }
    auto start = Clock::now();
    hs_scan(db, bytes, length, 0, scratch, handler, this);
    scanNanoseconds +=
        std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  }

  void add(unsigned rule) {
    if (marks[rule] == epoch || candidates.size() >= MaxCandidates)
      return;
    marks[rule] = epoch;
    candidates.push_back(rule);
  }

  static int onFastPattern(unsigned id, unsigned long long, unsigned long long,
                           unsigned, void *self) {
    ++static_cast<NativeIDS *>(self)->occurrences;
    static_cast<NativeIDS *>(self)->add(id);
    return 0;
  }
  static int onFirst(unsigned, unsigned long long, unsigned long long to,
                     unsigned, void *self) {
    static_cast<NativeIDS *>(self)->firstEnd = to;
    return 1; // the first match is the earliest end
  }

  static bool decode(const uint8_t *p, uint32_t length, Decoded &d) {
    if (length < 34 || p[12] != 8 || p[13] != 0 || p[14] >> 4 != 4)
      return false;
    uint32_t t = 14 + (p[14] & 15) * 4;
    uint32_t end = std::min<uint32_t>(14 + (p[16] << 8 | p[17]), length);
    if (t < 34 || end < t || ((p[20] << 8 | p[21]) & 0x1FFF))
      return false;
    d.proto = p[23];
    d.src = p[26] << 24 | p[27] << 16 | p[28] << 8 | p[29];
    d.dst = p[30] << 24 | p[31] << 16 | p[32] << 8 | p[33];
    d.sport = d.dport = d.flags = 0;
    if (d.proto == 6 || d.proto == 17) {
      uint32_t header = 8;
      if (d.proto == 6) {
        if (t + 20 > end)
          return false;
        d.flags = p[t + 13];
        header = (p[t + 12] >> 4) * 4;
        if (header < 20)
          return false;
      } else if (t + 8 > end) {
        return false;
      }
      d.sport = p[t] << 8 | p[t + 1];
      d.dport = p[t + 2] << 8 | p[t + 3];
      t += header;
      if (t > end)
        return false;
    } else if (d.proto == 1) {
      if (t + 8 > end)
        return false;
      t += 8;
    }
    d.offset = t;
    d.length = end - t;
    return true;
  }

  bool header(const Rule &r, uint32_t s, uint32_t d, uint16_t sp,
              uint16_t dp) const {
    return r.source.matches(s) && r.destination.matches(d) &&
           r.sourcePort.matches(sp) && r.destinationPort.matches(dp);
  }

  bool check(unsigned index, const Decoded &d) {
    const Rule &r = rules[index];
    static const uint8_t protocols[] = {6, 17, 1};
    if (r.protocol != Protocol::IP &&
        d.proto != protocols[unsigned(r.protocol)])
      return false;
    if (!header(r, d.src, d.dst, d.sport, d.dport) &&
        !(r.bidirectional && header(r, d.dst, d.src, d.dport, d.sport)))
      return false;
    if (r.dsize && !r.dsize->matches(d.length))
      return false;
    if (r.flags && !r.flags->matches(d.flags))
      return false;
    std::optional<unsigned> fp = fastPattern(r);
    int64_t last = 0;
    for (unsigned j = 0; j < r.contents.size(); ++j) {
      const Content &c = r.contents[j];
      bool needEnd = anchorsLater(r, j);
      if (fp && *fp == j && !c.offset && !c.depth && !c.relative() && !needEnd)
        continue;
      int64_t start =
          c.relative() ? last + c.distance.value_or(0) : c.offset.value_or(0);
      int64_t end = c.within  ? start + *c.within
                    : c.depth ? start + *c.depth
                              : int64_t(d.length);
      start = std::max<int64_t>(start, 0);
      end = std::min<int64_t>(end, d.length);
      bool found = false;
      if (end - start >= int64_t(c.bytes.size())) {
        firstEnd = ~0ull;
        scan(contentDbs[ruleContents[index][j]], data + start, end - start,
             onFirst);
        found = firstEnd != ~0ull;
      }
      if (found == c.negated)
        return false;
      if (found)
        last = start + firstEnd;
    }
    for (unsigned k = 0; k < r.pcres.size(); ++k) {
      firstEnd = ~0ull;
      scan(pcreDbs[rulePcres[index][k]], data, d.length, onFirst);
      if ((firstEnd != ~0ull) == r.pcres[k].negated)
        return false;
    }
    return true;
  }
};
} // namespace

//===----------------------------------------------------------------------===//
// The measurement
//===----------------------------------------------------------------------===//

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static int measure() {
  if (positional.size() != 2)
    return fail("give the rules and the trace (see --help)");
  // Compile: the phases of netvm-ids.
  auto start = Clock::now();
  RuleReader reader;
  reader.readFile(positional[0]);
  if (reader.errors() || reader.unsupported())
    return fail("the rules do not all load");
  const std::vector<Rule> &rules = reader.rules();
  double readTime = seconds(start);
  start = Clock::now();
  GroupPlan plan = planGroups(rules);
  CompiledIDS ids = compileRules(rules, plan);
  double generateTime = seconds(start);
  start = Clock::now();
  mlir::DialectRegistry registry;
  driver::registerDialects(registry);
  mlir::MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  driver::DiagnosticPrinter printer(sourceMgr, context, "netvm-ids-bench");
  driver::Input input;
  input.files = {ids.nvappName};
  input.buffers = ids.files;
  auto module = driver::load(context, sourceMgr, input);
  if (!module)
    return 1;
  double loadTime = seconds(start);
  start = Clock::now();
  if (failed(driver::optimize(*module, netvmLevel)))
    return 1;
  double optimizeTime = seconds(start);
  start = Clock::now();
  native::CodegenOptions codegen;
  codegen.useCache = false;
  auto compiled = native::jitCompile(*module, codegen);
  if (!compiled)
    return fail(llvm::toString(compiled.takeError()));
  double jitTime = seconds(start);
  start = Clock::now();
  std::string error;
  rt::EngineOptions options;
  auto engine = rt::Engine::native(*compiled, options, error);
  if (!engine)
    return fail(error);
  if (!engine->initialize().exceptions.empty())
    return fail("the IDS raised an exception at initialisation");
  double initTime = seconds(start);
  start = Clock::now();
  NativeIDS native(rules, plan);
  double nativeBuildTime = seconds(start);

  // The trace, in memory.
  auto packetReader = rt::PacketReader::open(positional[1], false, error);
  if (!packetReader)
    return fail(error);
  std::vector<rt::TracePacket> trace;
  rt::TracePacket packet;
  while (packetReader->next(packet, error))
    trace.push_back(packet);
  if (!error.empty())
    return fail(error);
  std::vector<netvm_packet> packets(trace.size());
  for (size_t i = 0; i < trace.size(); ++i)
    packets[i] = {trace[i].bytes.data(), uint32_t(trace[i].bytes.size()),
                  trace[i].seconds, trace[i].microseconds, 0};

  // Both IDSes raise the same alerts on every packet.
  std::set<std::pair<size_t, uint32_t>> netvmAlerts, nativeAlerts;
  uint64_t netvmCount = 0;
  auto collect = [&](size_t index, const rt::PacketResult &result) {
    for (const rt::Output &out : result.outputs) {
      unsigned n = out.info[InfoAlerts] << 8 | out.info[InfoAlerts + 1];
      for (unsigned k = 0; k < n; ++k) {
        const uint8_t *s = &out.info[InfoAlertList + 4 * k];
        netvmAlerts.insert(
            {index, uint32_t(s[0]) << 24 | s[1] << 16 | s[2] << 8 | s[3]});
      }
    }
  };
  rt::ResultFn onResult = collect;
  engine->run(0, packets, &onResult, rt::ResultDetail::Full);
  std::vector<uint32_t> sids;
  for (size_t i = 0; i < trace.size(); ++i) {
    native.inspect(packets[i].data, packets[i].length, sids);
    for (uint32_t sid : sids)
      nativeAlerts.insert({i, sid});
  }
  if (netvmAlerts != nativeAlerts)
    return fail(llvm::formatv("the IDSes disagree: netvm {0} alerts, "
                              "hand-written {1}",
                              netvmAlerts.size(), nativeAlerts.size()));

  // Time both, alternately. netvm as netvm-ids runs it: every packet's
  // result delivered, the alerts read from the info memory.
  std::vector<double> netvmTimes, nativeTimes, scanShares;
  for (unsigned r = 0; r < repeat; ++r) {
    netvmCount = 0;
    auto count = [&](size_t, const rt::PacketResult &result) {
      for (const rt::Output &out : result.outputs)
        netvmCount += out.info[InfoAlerts + 1];
    };
    rt::ResultFn onCount = count;
    start = Clock::now();
    engine->run(0, packets, &onCount, rt::ResultDetail::Full);
    netvmTimes.push_back(seconds(start));
    uint64_t nativeCount = 0;
    start = Clock::now();
    for (size_t i = 0; i < trace.size(); ++i) {
      native.inspect(packets[i].data, packets[i].length, sids);
      nativeCount += sids.size();
    }
    nativeTimes.push_back(seconds(start));
    (void)nativeCount;
  }
  // The time inside hs_scan, in a pass of its own (timing every scan costs
  // time too, so the other passes do not).
  native.timeScans = true;
  native.occurrences = native.candidateCount = 0;
  start = Clock::now();
  for (size_t i = 0; i < trace.size(); ++i)
    native.inspect(packets[i].data, packets[i].length, sids);
  double timedPass = seconds(start);
  double scanTime = native.scanNanoseconds / 1e9;
  (void)timedPass;

  double netvmTime = median(netvmTimes), nativeTime = median(nativeTimes);
  size_t n = trace.size();
  llvm::outs() << llvm::formatv(
      "### IDS: {0} rules ({1} port groups), {2} packets, {3} alerts\n\n",
      rules.size(), plan.groups.size(), n, nativeAlerts.size());
  llvm::outs() << "| IDS | packets/s (median of " << repeat
               << ") | ns/packet | ratio to C | time in hs_scan |\n"
                  "|---|---:|---:|---:|---:|\n";
  llvm::outs() << llvm::formatv(
      "| hand-written C++ over Hyperscan | {0:f0} | {1:f1} | 1.00 | {2:f1}% "
      "|\n",
      n / nativeTime, nativeTime / n * 1e9, 100 * scanTime / nativeTime);
  llvm::outs() << llvm::formatv(
      "| netvm IDS, JIT -O2, one thread | {0:f0} | {1:f1} | {2:f2} | "
      "{3:f1}% |\n\n",
      n / netvmTime, netvmTime / n * 1e9, nativeTime / netvmTime,
      100 * scanTime / netvmTime);
  llvm::outs() << llvm::formatv(
      "Per packet: {0:f2} fast-pattern occurrences, {1:f2} candidate rules "
      "(both IDSes check the same candidates).\n\n",
      double(native.occurrences) / n, double(native.candidateCount) / n);
  llvm::outs() << llvm::formatv(
      "Rule compile time ({0} rules): {1:f0} ms in all: read {2:f1} ms, "
      "generate NetIL {3:f1} ms, assemble {4:f0} ms, optimize (-O2) {5:f0} "
      "ms, JIT {6:f0} ms, instantiate (Hyperscan databases) {7:f0} ms; the "
      "hand-written IDS builds its databases in {8:f0} ms.\n",
      rules.size(),
      1e3 * (readTime + generateTime + loadTime + optimizeTime + jitTime +
             initTime),
      1e3 * readTime, 1e3 * generateTime, 1e3 * loadTime, 1e3 * optimizeTime,
      1e3 * jitTime, 1e3 * initTime, 1e3 * nativeBuildTime);
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  driver::configureHelp(benchCategory, /*showMLIROptions=*/false);
  cl::ParseCommandLineOptions(argc, argv,
                              "netvm-ids-bench - netvm's IDS against a "
                              "hand-written one over the same Hyperscan "
                              "databases\n");
  if (generateRules)
    return output.empty() ? fail("-o FILE") : writeRules();
  if (generateTrace)
    return output.empty() || rulesOption.empty() ? fail("--rules and -o")
                                                 : writeTrace();
  return measure();
}
