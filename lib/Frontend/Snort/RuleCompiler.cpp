//===- RuleCompiler.cpp - Snort rules to a NetVM application --------------===//
//
// The IDS as five NetPEs in a chain, after the paper's NetVMSnort:
//
//   decode      Ethernet/IPv4/TCP/UDP/ICMP headers into info memory
//   classify    the port groups of the packet (switches on the ports)
//   fastpattern one stringmatching scan per port group over the payload;
//               every rule whose fast pattern occurs, and the group's rules
//               without content, become candidates (once: an epoch per rule
//               in data memory)
//   verify0...  per candidate, a block of code for its rule: addresses,
//               ports, dsize, flags, then its contents, each a test of its
//               own stringmatching group over its window; 64 rules per
//               NetPE, the packet leaving after the last one it needs
//   pcre        per surviving candidate, its pcre options on the regexp
//               coprocessor; the sids that alert go into info memory and
//               the packet to sink `alert`
//
// The info memory layout is InfoLayout in Snort.h. The code is generated as
// NetIL text, so that the application is an ordinary .nvapp that netc and
// netvm-run also read.
//
//===----------------------------------------------------------------------===//

#include "netvm/Frontend/Snort.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace netvm::snort;

std::optional<unsigned> netvm::snort::fastPattern(const Rule &rule) {
  std::optional<unsigned> best;
  for (unsigned i = 0; i < rule.contents.size(); ++i) {
    const Content &c = rule.contents[i];
    if (c.negated)
      continue;
    if (c.fastPattern)
      return i;
    if (!best || c.bytes.size() > rule.contents[*best].bytes.size())
      best = i;
  }
  return best;
}

/// Ports of at most this many values get port groups; rules with more are
/// generic in their family.
static constexpr unsigned PortGroupLimit = 32;

GroupPlan netvm::snort::planGroups(const std::vector<Rule> &rules) {
  GroupPlan plan;
  // Per family: the rules of each port, and the generic ones.
  std::map<uint16_t, std::vector<unsigned>> dst[2], src[2];
  std::vector<unsigned> generic[4];
  for (unsigned i = 0; i < rules.size(); ++i) {
    const Rule &r = rules[i];
    if (r.protocol == Protocol::IP) {
      for (auto &g : generic)
        g.push_back(i);
      continue;
    }
    if (r.protocol == Protocol::ICMP) {
      generic[2].push_back(i);
      continue;
    }
    unsigned family = r.protocol == Protocol::TCP ? 0 : 1;
    std::optional<std::vector<uint16_t>> ports;
    if (!r.bidirectional &&
        (ports = r.destinationPort.enumerate(PortGroupLimit))) {
      for (uint16_t p : *ports)
        dst[family][p].push_back(i);
    } else if (!r.bidirectional &&
               r.destinationPort.kind == PortSpec::Kind::Any &&
               (ports = r.sourcePort.enumerate(PortGroupLimit))) {
      for (uint16_t p : *ports)
        src[family][p].push_back(i);
    } else {
      generic[family].push_back(i);
    }
  }
  auto addGroup = [&](std::string name, std::vector<unsigned> members,
                      const std::vector<unsigned> &extra) {
    members.insert(members.end(), extra.begin(), extra.end());
    llvm::sort(members);
    PortGroup group;
    group.name = std::move(name);
    for (unsigned i : members) {
      if (auto fp = fastPattern(rules[i]))
        group.fastPatterns.push_back({i, *fp});
      else
        group.contentless.push_back(i);
    }
    plan.groups.push_back(std::move(group));
    return unsigned(plan.groups.size() - 1);
  };
  static const char *const families[] = {"tcp", "udp", "icmp", "ip"};
  for (unsigned f = 0; f < 2; ++f) {
    for (auto &[port, members] : dst[f])
      plan.byDestination[f][port] = addGroup(
          llvm::formatv("{0} dst {1}", families[f], port), members, generic[f]);
    for (auto &[port, members] : src[f])
      plan.bySource[f][port] = addGroup(
          llvm::formatv("{0} src {1}", families[f], port), members, generic[f]);
  }
  for (unsigned f = 0; f < 4; ++f)
    plan.generic[f] =
        addGroup(std::string(families[f]) + " any", generic[f], {});
  return plan;
}

namespace {
/// NetIL text with fresh labels.
class Writer {
public:
  llvm::raw_string_ostream os;
  explicit Writer(std::string &text) : os(text) {}
  std::string label(llvm::StringRef stem) {
    return (stem + "_" + llvm::Twine(next++)).str();
  }
  Writer &operator<<(const llvm::Twine &line) {
    os << "  " << line << "\n";
    return *this;
  }
  void at(llvm::StringRef label) { os << label << ":\n"; }

private:
  unsigned next = 0;
};

/// `.data` lines for the string coprocessors' layout (little-endian).
class DataWriter {
public:
  std::string text;
  void u16(uint32_t v) { line("dw", v); }
  void u32(uint32_t v) { line("dd", v); }
  void bytes(llvm::StringRef s) {
    for (size_t i = 0; i < s.size(); i += 32) {
      std::string values;
      for (size_t j = i; j < std::min(s.size(), i + 32); ++j)
        values += (j > i ? "," : "") + llvm::utostr(uint8_t(s[j]));
      text += llvm::formatv("  d{0} db {1}\n", n++, values).str();
    }
  }

private:
  unsigned n = 0;
  void line(llvm::StringRef kind, uint32_t v) {
    text += llvm::formatv("  d{0} {1} {2}\n", n++, kind, v).str();
  }
};
} // namespace

static std::string header(llvm::StringRef comment, llvm::StringRef metadata,
                          llvm::StringRef extraOutput = "") {
  std::string extra =
      extraOutput.empty() ? "" : "  push_output " + extraOutput.str() + "\n";
  return llvm::formatv("; {0} (generated by netvm-ids from Snort rules)\n"
                       "segment .ports\n  push_input in\n  push_output out\n"
                       "{3}ends\nsegment .metadata\n  .info_size {1}\n{2}"
                       "ends\n",
                       comment, unsigned(InfoSize), metadata, extra)
      .str();
}

/// decode: drop what is not IPv4 (or is a later fragment, or truncated);
/// write the header fields and the payload's place into info memory.
static std::string decodeNetPE() {
  std::string text = header("decode: Ethernet, IPv4, TCP/UDP/ICMP", "");
  text += R"(segment .push
  .locals 3              ; 0: transport header length, 1: end of the
                         ; datagram, 2: transport header, then payload
  pop
  pbl
  push 34
  jcmp.l drop            ; no room for an IPv4 header
  push 12
  upload.16
  push 0x0800
  jcmp.neq drop
  push 14
  upload.8
  push 4
  ushr
  push 4
  jcmp.neq drop
  push 14
  iplen
  push 14
  add
  locstore 2
  locload 2
  push 34
  jcmp.l drop            ; header length below 20
  push 16
  upload.16
  push 14
  add
  locstore 1             ; end = 14 + total length, at most the packet
  pbl
  locload 1
  jcmp.ge end_ok
  pbl
  locstore 1
end_ok:
  locload 1
  locload 2
  jcmp.l drop            ; truncated IP header
  push 20
  upload.16
  push 0x1FFF
  and
  j.ne drop              ; later fragments are not inspected
  push 23
  upload.8
  dup
  push 4
  istore.8
  push 26
  spload.32
  push 12
  istore.32
  push 30
  spload.32
  push 16
  istore.32
  switch 3:
    6: tcp
    17: udp
    1: icmp
    default: payload
tcp:
  locload 2
  push 20
  add
  locload 1
  jcmp.g drop            ; truncated TCP header
  locload 2
  push 13
  add
  upload.8
  push 5
  istore.8
  locload 2
  push 12
  add
  upload.8
  push 4
  ushr
  push 4
  mul
  dup
  locstore 0             ; header length
  push 20
  jcmp.l drop            ; data offset below 5
  jump ports
udp:
  locload 2
  push 8
  add
  locload 1
  jcmp.g drop
  push 8
  locstore 0
ports:
  locload 2
  upload.16
  push 6
  istore.16
  locload 2
  push 2
  add
  upload.16
  push 8
  istore.16
  locload 2
  locload 0
  add
  locstore 2
  locload 2
  locload 1
  jcmp.g drop            ; options beyond the datagram
  jump payload
icmp:
  locload 2
  push 8
  add
  locload 1
  jcmp.g drop
  locload 2
  push 8
  add
  locstore 2
payload:
  locload 2
  push 0
  istore.16
  locload 1
  locload 2
  sub
  push 2
  istore.16
  pkt.send out
drop:
  ret
ends
)";
  return text;
}

/// classify: the groups of the packet's ports into info memory.
static std::string classifyNetPE(const GroupPlan &plan) {
  std::string text = header("classify: port groups", "");
  Writer w(text);
  text += "segment .push\n";
  w << "pop";
  w << "push 4" << "uiload.8";
  w << "switch 3:";
  w << "  6: tcp" << "  17: udp" << "  1: icmp" << "  default: other";
  static const char *const names[] = {"tcp", "udp"};
  for (unsigned f = 0; f < 2; ++f) {
    std::string fam = names[f];
    w.at(fam);
    for (int side = 0; side < 2; ++side) {
      const auto &map = side == 0 ? plan.byDestination[f] : plan.bySource[f];
      std::string next = w.label(fam + "_next");
      w << (side == 0 ? "push 8" : "push 6") << "uiload.16";
      w << ("switch " + llvm::Twine(map.size()) + ":");
      std::vector<std::pair<std::string, unsigned>> cases;
      for (auto &[port, group] : map) {
        cases.push_back({w.label(fam + "_g"), group});
        w << ("  " + llvm::Twine(unsigned(port)) + ": " + cases.back().first);
      }
      w << ("  default: " + next);
      for (auto &[label, group] : cases) {
        w.at(label);
        w << ("push " + llvm::Twine(group + 1))
          << ("push " + llvm::Twine(side == 0 ? InfoGroup1 : InfoGroup2))
          << "istore.16" << ("jump " + next);
      }
      w.at(next);
    }
    w << ("push " + llvm::Twine(InfoGroup1)) << "uiload.16";
    w << ("push " + llvm::Twine(InfoGroup2)) << "uiload.16";
    w << "or" << "j.ne send";
    w << ("jump " + fam + "_generic");
  }
  static const char *const generics[] = {"tcp", "udp", "icmp", "other"};
  for (unsigned f = 0; f < 4; ++f) {
    w.at(std::string(generics[f]) + (f < 2 ? "_generic" : ""));
    unsigned g = plan.generic[f];
    if (plan.groups[g].fastPatterns.empty() &&
        plan.groups[g].contentless.empty()) {
      w << "ret";
      continue;
    }
    w << ("push " + llvm::Twine(g + 1)) << ("push " + llvm::Twine(InfoGroup1))
      << "istore.16" << "jump send";
  }
  w.at("send");
  w << "pkt.send out";
  text += "ends\n";
  return text;
}

/// Append rule index (local 3) to the candidates unless it is there
/// already (its epoch in data memory is this packet's, local 0).
static void addCandidate(Writer &w) {
  std::string done = w.label("added"), room = w.label("room");
  w << "locload 3" << "push 4" << "mul" << "push 4" << "add" << "locstore 5";
  w << "locload 5" << "umload.32" << "locload 0" << ("jcmp.eq " + done);
  w << "locload 0" << "locload 5" << "mstore.32";
  w << "locload 4" << ("push " + llvm::Twine(MaxCandidates))
    << ("jcmp.l " + room);
  w << "push 1" << ("push " + llvm::Twine(InfoOverflow)) << "istore.8"
    << ("jump " + done);
  w.at(room);
  w << "locload 3" << "locload 4" << "push 2" << "mul"
    << ("push " + llvm::Twine(InfoCandidateList)) << "add" << "istore.16";
  w << "locload 4" << "inc1" << "locstore 4";
  w.at(done);
}

static std::string fastpatternNetPE(const std::vector<Rule> &rules,
                                    const GroupPlan &plan) {
  std::string text = header(
      "fastpattern: candidate rules from one scan per port group",
      llvm::formatv("  .datamem_size {0}\n  .use_coprocessor stringmatching\n",
                    4 + 4 * rules.size())
          .str());
  DataWriter data;
  data.u16(plan.groups.size());
  for (const PortGroup &g : plan.groups) {
    data.u16(g.fastPatterns.size());
    for (auto [rule, content] : g.fastPatterns) {
      const Content &c = rules[rule].contents[content];
      data.u16(c.bytes.size());
      data.u16(c.nocase);
      data.u32(rule);
      data.bytes(c.bytes);
    }
  }
  text += "segment .data\n  .byte_order little_endian\n" + data.text + "ends\n";
  text += "segment .init\n  copro.init stringmatching, d0\n  pop\n  ret\n"
          "ends\n";
  text += "segment .push\n";
  Writer w(text);
  // Locals: 0 epoch, 1 group, 2 occurrences left, 3 rule, 4 candidates,
  // 5 address of the rule's epoch.
  w << ".locals 6" << "pop" << "copro.exbuf stringmatching, 0";
  w << "push 0" << "locstore 4";
  w << "push 0" << "umload.32" << "inc1" << "dup" << "push 0" << "mstore.32"
    << "locstore 0";
  for (unsigned scan = 0; scan < 2; ++scan) {
    std::string end = w.label("scanned"), occ = w.label("occurrence"),
                listed = w.label("listed"), full = w.label("all_seen");
    w << ("push " + llvm::Twine(scan == 0 ? InfoGroup1 : InfoGroup2))
      << "uiload.16" << "locstore 1";
    w << "locload 1" << ("j.eq " + end);
    w << "locload 1" << "dec1" << "locstore 1";
    w << "locload 1" << "copro.out stringmatching, 0";
    w << ("push " + llvm::Twine(InfoPayloadOffset)) << "uiload.16"
      << "copro.out stringmatching, 1";
    w << ("push " + llvm::Twine(InfoPayloadLength)) << "uiload.16"
      << "copro.out stringmatching, 2";
    w << "copro.invoke stringmatching, 2" << "copro.in stringmatching, 0"
      << "dup" << "locstore 2";
    w << "push 1600" << ("jcmp.l " + occ);
    w << "push 1" << ("push " + llvm::Twine(InfoOverflow)) << "istore.8";
    w.at(occ);
    w << "locload 2" << ("j.eq " + listed);
    w << "copro.invoke stringmatching, 3" << "copro.in stringmatching, 1"
      << "locstore 3";
    addCandidate(w);
    w << "locload 2" << "dec1" << "locstore 2" << ("jump " + occ);
    w.at(listed);
    std::vector<std::pair<unsigned, std::string>> cases;
    for (unsigned g = 0; g < plan.groups.size(); ++g)
      if (!plan.groups[g].contentless.empty())
        cases.push_back({g, w.label("contentless")});
    w << "locload 1" << ("switch " + llvm::Twine(cases.size()) + ":");
    for (auto &[g, label] : cases)
      w << ("  " + llvm::Twine(g) + ": " + label);
    w << ("  default: " + full);
    for (auto &[g, label] : cases) {
      w.at(label);
      for (unsigned rule : plan.groups[g].contentless) {
        w << ("push " + llvm::Twine(rule)) << "locstore 3";
        addCandidate(w);
      }
      w << ("jump " + full);
    }
    w.at(full);
    w.at(end);
  }
  w << "locload 4" << "j.eq drop";
  w << "locload 4" << ("push " + llvm::Twine(InfoCandidates)) << "istore.16";
  w << "pkt.send out";
  w.at("drop");
  w << "ret";
  text += "ends\n";
  return text;
}

namespace {
/// Code for the header tests of one rule in `verify`: each test jumps to
/// its `yes` or `no` label.
class RuleCode {
public:
  explicit RuleCode(Writer &w) : w(w) {}

  void address(const AddressSpec &spec, unsigned info, const std::string &yes,
               const std::string &no) {
    const std::string &t = spec.negated ? no : yes;
    const std::string &f = spec.negated ? yes : no;
    switch (spec.kind) {
    case AddressSpec::Kind::Any:
      w << ("jump " + t);
      return;
    case AddressSpec::Kind::Net:
      w << ("push " + llvm::Twine(info)) << "siload.32"
        << ("push " + llvm::Twine(spec.mask)) << "and"
        << ("push " + llvm::Twine(spec.address)) << ("jcmp.eq " + t)
        << ("jump " + f);
      return;
    case AddressSpec::Kind::List:
      list(spec.elements, t, f, [&](const AddressSpec &e, auto &y, auto &n) {
        address(e, info, y, n);
      });
      return;
    }
  }

  void port(const PortSpec &spec, unsigned info, const std::string &yes,
            const std::string &no) {
    const std::string &t = spec.negated ? no : yes;
    const std::string &f = spec.negated ? yes : no;
    switch (spec.kind) {
    case PortSpec::Kind::Any:
      w << ("jump " + t);
      return;
    case PortSpec::Kind::Range:
      w << ("push " + llvm::Twine(info)) << "uiload.16";
      if (spec.low == spec.high) {
        w << ("push " + llvm::Twine(unsigned(spec.low))) << ("jcmp.eq " + t)
          << ("jump " + f);
        return;
      }
      w << ("push " + llvm::Twine(unsigned(spec.low))) << ("jcmp.l " + f);
      w << ("push " + llvm::Twine(info)) << "uiload.16"
        << ("push " + llvm::Twine(unsigned(spec.high))) << ("jcmp.le " + t)
        << ("jump " + f);
      return;
    case PortSpec::Kind::List:
      list(spec.elements, t, f,
           [&](const PortSpec &e, auto &y, auto &n) { port(e, info, y, n); });
      return;
    }
  }

  /// One direction of the header: source and destination as given
  /// (`swap`: the other way round, for `<>`).
  void direction(const Rule &r, bool swap, const std::string &yes,
                 const std::string &no) {
    unsigned sa = swap ? InfoDestination : InfoSource;
    unsigned da = swap ? InfoSource : InfoDestination;
    unsigned sp = swap ? InfoDestPort : InfoSourcePort;
    unsigned dp = swap ? InfoSourcePort : InfoDestPort;
    std::string l1 = w.label("src"), l2 = w.label("dst"), l3 = w.label("sp");
    address(r.source, sa, l1, no);
    w.at(l1);
    address(r.destination, da, l2, no);
    w.at(l2);
    port(r.sourcePort, sp, l3, no);
    w.at(l3);
    port(r.destinationPort, dp, yes, no);
  }

private:
  Writer &w;

  /// A list: one positive element matches (or there is none), and no
  /// negated one excludes the value.
  template <typename Spec, typename Gen>
  void list(const std::vector<Spec> &elements, const std::string &t,
            const std::string &f, Gen gen) {
    std::string negatives = w.label("excluded");
    bool anyPositive = false;
    for (const Spec &e : elements) {
      if (e.negated)
        continue;
      anyPositive = true;
      std::string next = w.label("alt");
      gen(e, negatives, next);
      w.at(next);
    }
    if (anyPositive)
      w << ("jump " + f);
    w.at(negatives);
    for (const Spec &e : elements) {
      if (!e.negated)
        continue;
      std::string next = w.label("kept");
      gen(e, next, f);
      w.at(next);
    }
    w << ("jump " + t);
  }
};
} // namespace

/// Candidate entries: a rule index, with this bit once a verify NetPE has
/// found the rule's header and contents matching.
static constexpr unsigned Verified = 0x8000;

/// The head of `verify` and `pcre`: every local zeroed, then locals 0 (the
/// candidate), 1 (their number), 2 (a count), 4 and 5 (the payload's offset
/// and length), then label `loop`. For each candidate it jumps to
/// `verified` for entries with the Verified bit if `verified` is given (else
/// drops the bit), then switches on the rule to `ruleN` for the rules of
/// `members` (or to `otherwise`). The loop is left for label `finished`.
static void candidateLoop(Writer &w, llvm::StringRef copro, unsigned locals,
                          llvm::ArrayRef<unsigned> members,
                          llvm::StringRef verified, llvm::StringRef otherwise) {
  w << (".locals " + llvm::Twine(locals)) << "pop"
    << ("copro.exbuf " + copro + ", 0");
  for (unsigned i = 0; i < locals; ++i)
    w << "push 0" << ("locstore " + llvm::Twine(i));
  w << ("push " + llvm::Twine(InfoCandidates)) << "uiload.16" << "locstore 1";
  w << ("push " + llvm::Twine(InfoPayloadOffset)) << "uiload.16"
    << "locstore 4";
  w << ("push " + llvm::Twine(InfoPayloadLength)) << "uiload.16"
    << "locstore 5";
  w.at("loop");
  w << "locload 0" << "locload 1" << "jcmp.ge finished";
  auto entry = [&] {
    w << "locload 0" << "push 2" << "mul"
      << ("push " + llvm::Twine(InfoCandidateList)) << "add" << "uiload.16";
  };
  entry();
  if (!verified.empty()) {
    w << ("push " + llvm::Twine(Verified)) << "and" << ("j.ne " + verified);
    entry();
  } else {
    w << ("push " + llvm::Twine(Verified - 1)) << "and";
  }
  w << ("switch " + llvm::Twine(members.size()) + ":");
  for (unsigned i : members)
    w << ("  " + llvm::Twine(i) + ": rule" + llvm::Twine(i));
  w << ("  default: " + otherwise);
}

bool netvm::snort::anchorsLater(const Rule &rule, unsigned j) {
  for (unsigned k = j + 1; k < rule.contents.size(); ++k) {
    if (rule.contents[k].relative())
      return true;
    if (!rule.contents[k].negated)
      return false;
  }
  return false;
}

/// One NetPE of the verify stage, for the rules of `members`. Candidates
/// of other rules are passed on; the packet leaves through `done` (to the
/// pcre stage) when no candidate is left for a later verify NetPE, else
/// through `out`.
static std::string verifyNetPE(const std::vector<Rule> &rules,
                               llvm::ArrayRef<unsigned> members) {
  // One stringmatching group per distinct (bytes, nocase).
  std::map<std::pair<std::string, bool>, unsigned> groups;
  DataWriter data;
  for (unsigned i : members)
    for (const Content &c : rules[i].contents)
      groups.try_emplace({c.bytes, c.nocase}, groups.size());
  std::vector<const std::pair<const std::pair<std::string, bool>, unsigned> *>
      ordered(groups.size());
  for (auto &entry : groups)
    ordered[entry.second] = &entry;
  data.u16(groups.size());
  for (auto *entry : ordered) {
    data.u16(1);
    data.u16(entry->first.first.size());
    data.u16(entry->first.second);
    data.u32(0);
    data.bytes(entry->first.first);
  }
  std::string text = header("verify: each candidate rule's header and "
                            "contents",
                            "  .use_coprocessor stringmatching\n", "done");
  text += "segment .data\n  .byte_order little_endian\n" + data.text + "ends\n";
  text += "segment .init\n  copro.init stringmatching, d0\n  pop\n  ret\n"
          "ends\n";
  text += "segment .push\n";
  Writer w(text);
  // Locals: 0 candidate, 1 candidates, 2 kept, 3 end of the last match,
  // 4 payload offset, 5 payload length, 6 window start, 7 window end,
  // 8 a candidate is left for a later verify NetPE.
  candidateLoop(w, "stringmatching", 9, members, "keep", "pending");
  w.at("pending");
  w << "push 1" << "locstore 8" << "jump keep";
  for (unsigned i : members) {
    const Rule &r = rules[i];
    w.at("rule" + llvm::Twine(i).str());
    RuleCode code(w);
    static const unsigned protocols[] = {6, 17, 1};
    if (r.protocol != Protocol::IP)
      w << ("push " + llvm::Twine(InfoProtocol)) << "uiload.8"
        << ("push " + llvm::Twine(protocols[unsigned(r.protocol)]))
        << "jcmp.neq fail";
    std::string headerOk = w.label("header");
    if (r.bidirectional) {
      std::string other = w.label("reverse");
      code.direction(r, false, headerOk, other);
      w.at(other);
      code.direction(r, true, headerOk, "fail");
    } else {
      code.direction(r, false, headerOk, "fail");
    }
    w.at(headerOk);
    if (r.dsize) {
      const Dsize &d = *r.dsize;
      w << "locload 5" << ("push " + llvm::Twine(d.low));
      switch (d.op) {
      case Dsize::Op::Equal:
        w << "jcmp.neq fail";
        break;
      case Dsize::Op::Less:
        w << "jcmp.ge fail";
        break;
      case Dsize::Op::Greater:
        w << "jcmp.le fail";
        break;
      case Dsize::Op::Between:
        w << "jcmp.l fail" << "locload 5" << ("push " + llvm::Twine(d.high))
          << "jcmp.g fail";
        break;
      }
    }
    if (r.flags) {
      const TcpFlags &f = *r.flags;
      w << ("push " + llvm::Twine(InfoTcpFlags)) << "uiload.8"
        << ("push " + llvm::Twine(unsigned(uint8_t(~f.ignore)))) << "and";
      switch (f.mode) {
      case TcpFlags::Mode::Exact:
        w << ("push " + llvm::Twine(unsigned(f.bits))) << "jcmp.neq fail";
        break;
      case TcpFlags::Mode::All:
        w << ("push " + llvm::Twine(unsigned(f.bits))) << "and"
          << ("push " + llvm::Twine(unsigned(f.bits))) << "jcmp.neq fail";
        break;
      case TcpFlags::Mode::Any:
        w << ("push " + llvm::Twine(unsigned(f.bits))) << "and" << "j.eq fail";
        break;
      case TcpFlags::Mode::Not:
        w << ("push " + llvm::Twine(unsigned(f.bits))) << "and" << "j.ne fail";
        break;
      }
    }
    std::optional<unsigned> fp = fastPattern(r);
    w << "push 0" << "locstore 3";
    for (unsigned j = 0; j < r.contents.size(); ++j) {
      const Content &c = r.contents[j];
      bool needEnd = anchorsLater(r, j);
      // The fast pattern occurs in the payload, or the rule would not be a
      // candidate: nothing left to check if it has no window.
      if (fp && *fp == j && !c.offset && !c.depth && !c.relative() && !needEnd)
        continue;
      std::string absent = w.label("absent"), next = w.label("next");
      unsigned len = c.bytes.size();
      if (c.relative()) {
        w << "locload 3" << ("push " + llvm::Twine(c.distance.value_or(0)))
          << "add" << "locstore 6";
      } else {
        w << ("push " + llvm::Twine(c.offset.value_or(0))) << "locstore 6";
      }
      if (c.within || c.depth)
        w << "locload 6"
          << ("push " + llvm::Twine(c.within ? *c.within : *c.depth)) << "add"
          << "locstore 7";
      else
        w << "locload 5" << "locstore 7";
      std::string startOk = w.label("start"), endOk = w.label("end");
      w << "locload 6" << "push 0" << ("jcmp.ges " + startOk) << "push 0"
        << "locstore 6";
      w.at(startOk);
      w << "locload 7" << "locload 5" << ("jcmp.les " + endOk) << "locload 5"
        << "locstore 7";
      w.at(endOk);
      w << "locload 7" << "locload 6" << "sub" << ("push " + llvm::Twine(len))
        << ("jcmp.lts " + absent);
      unsigned group = groups.at({c.bytes, c.nocase});
      w << ("push " + llvm::Twine(group)) << "copro.out stringmatching, 0";
      w << "locload 4" << "locload 6" << "add"
        << "copro.out stringmatching, 1";
      w << "locload 7" << "locload 6" << "sub"
        << "copro.out stringmatching, 2";
      if (needEnd && !c.negated) {
        w << "copro.invoke stringmatching, 2" << "copro.in stringmatching, 0"
          << ("j.eq " + absent);
        w << "copro.invoke stringmatching, 3" << "copro.in stringmatching, 2"
          << "locload 6" << "add" << "locstore 3";
      } else {
        w << "copro.invoke stringmatching, 4" << "copro.in stringmatching, 0"
          << ("j.eq " + absent);
      }
      // Found.
      w << ("jump " + (c.negated ? std::string("fail") : next));
      w.at(absent);
      if (!c.negated)
        w << "jump fail";
      w.at(next);
    }
    w << "jump matched";
  }
  // Keep the entry (with the Verified bit when its rule matched).
  w.at("matched");
  w << ("push " + llvm::Twine(Verified)) << "jump store";
  w.at("keep");
  w << "push 0";
  w.at("store");
  w << "locload 0" << "push 2" << "mul"
    << ("push " + llvm::Twine(InfoCandidateList)) << "add" << "uiload.16"
    << "or";
  w << "locload 2" << "push 2" << "mul"
    << ("push " + llvm::Twine(InfoCandidateList)) << "add" << "istore.16";
  w << "locload 2" << "inc1" << "locstore 2";
  w.at("fail");
  w << "locload 0" << "inc1" << "locstore 0" << "jump loop";
  w.at("finished");
  w << "locload 2" << ("push " + llvm::Twine(InfoCandidates)) << "istore.16";
  w << "locload 2" << "j.ne send";
  w << ("push " + llvm::Twine(InfoOverflow)) << "uiload.8" << "j.ne send";
  w << "ret";
  w.at("send");
  w << "locload 8" << "j.eq last";
  w << "pkt.send out";
  w.at("last");
  w << "pkt.send done";
  text += "ends\n";
  return text;
}

static std::string pcreNetPE(const std::vector<Rule> &rules) {
  DataWriter data;
  std::map<std::pair<std::string, std::string>, unsigned> patterns;
  for (const Rule &r : rules)
    for (const Pcre &p : r.pcres)
      patterns.try_emplace({p.pattern, p.flags}, patterns.size());
  std::vector<std::pair<std::string, std::string>> ordered(patterns.size());
  for (auto &[key, index] : patterns)
    ordered[index] = key;
  data.u16(ordered.size());
  for (auto &[pattern, flags] : ordered) {
    data.u16(flags.size());
    if (!flags.empty())
      data.bytes(flags);
    data.u16(pattern.size());
    if (!pattern.empty())
      data.bytes(pattern);
  }
  std::string text = header("pcre: regular expressions, then the alerts",
                            "  .use_coprocessor regexp\n");
  text += "segment .data\n  .byte_order little_endian\n" + data.text + "ends\n";
  text += "segment .init\n  copro.init regexp, d0\n  pop\n  ret\nends\n";
  text += "segment .push\n";
  Writer w(text);
  // Locals: 0 candidate, 1 candidates, 2 alerts, 3 a pass rule matched,
  // 4 payload offset, 5 payload length, 6 the candidate's sid.
  std::vector<unsigned> all(rules.size());
  for (unsigned i = 0; i < rules.size(); ++i)
    all[i] = i;
  candidateLoop(w, "regexp", 7, all, "", "next");
  for (unsigned i = 0; i < rules.size(); ++i) {
    const Rule &r = rules[i];
    w.at("rule" + llvm::Twine(i).str());
    for (const Pcre &p : r.pcres) {
      w << ("push " + llvm::Twine(patterns.at({p.pattern, p.flags})))
        << "copro.out regexp, 0";
      w << "locload 4" << "copro.out regexp, 1";
      w << "locload 5" << "copro.out regexp, 2";
      w << "copro.invoke regexp, 4" << "copro.in regexp, 0"
        << (p.negated ? "j.ne next" : "j.eq next");
    }
    if (r.action == Action::Pass)
      w << "push 1" << "locstore 3" << "jump next";
    else
      w << ("push " + llvm::Twine(r.sid)) << "locstore 6" << "jump alert";
  }
  w.at("alert");
  w << "locload 2" << ("push " + llvm::Twine(MaxCandidates)) << "jcmp.ge next";
  w << "locload 6" << "locload 2" << "push 4" << "mul"
    << ("push " + llvm::Twine(InfoAlertList)) << "add" << "istore.32";
  w << "locload 2" << "inc1" << "locstore 2";
  w.at("next");
  w << "locload 0" << "inc1" << "locstore 0" << "jump loop";
  w.at("finished");
  w << "locload 3" << "j.ne drop";
  w << "locload 2" << ("push " + llvm::Twine(InfoAlerts)) << "istore.16";
  w << "locload 2" << "j.ne send";
  w << ("push " + llvm::Twine(InfoOverflow)) << "uiload.8" << "j.ne send";
  w.at("drop");
  w << "ret";
  w.at("send");
  w << "pkt.send out";
  text += "ends\n";
  return text;
}

CompiledIDS netvm::snort::compileRules(const std::vector<Rule> &rules,
                                       const GroupPlan &plan,
                                       llvm::StringRef name,
                                       unsigned rulesPerVerifier) {
  CompiledIDS ids;
  ids.nvappName = (name + ".nvapp").str();
  std::vector<std::pair<std::string, std::string>> stages = {
      {"decode", decodeNetPE()},
      {"classify", classifyNetPE(plan)},
      {"fastpattern", fastpatternNetPE(rules, plan)}};
  // The rules' own code is split over several NetPEs: compilers (netvm's
  // dataflow passes, LLVM's) take more than linear time in the size of a
  // function. Rules without content come first: they are candidates of
  // every packet of their group, and a packet leaves the verify stage
  // after the last NetPE that has one of its candidates.
  std::vector<unsigned> order;
  for (bool contentless : {true, false})
    for (unsigned i = 0; i < rules.size(); ++i)
      if (!fastPattern(rules[i]) == contentless)
        order.push_back(i);
  unsigned verifiers = 0;
  rulesPerVerifier = std::max(rulesPerVerifier, 1u);
  for (size_t first = 0; first < order.size(); first += rulesPerVerifier)
    stages.push_back(
        {"verify" + std::to_string(verifiers++),
         verifyNetPE(rules,
                     llvm::ArrayRef(order).slice(
                         first, std::min<size_t>(rulesPerVerifier,
                                                 order.size() - first)))});
  stages.push_back({"pcre", pcreNetPE(rules)});
  std::string nvapp =
      "# " + ids.nvappName +
      " - an IDS generated by netvm-ids from Snort rules.\napplication " +
      name.str() + "\nsource wire\nsink alert\n";
  for (auto &stage : stages)
    nvapp +=
        llvm::formatv("pe {0} = \"{1}-{0}.netil\"\n", stage.first, name).str();
  std::string previous = "wire";
  for (auto &stage : stages) {
    nvapp += previous + " -> " + stage.first + ".in\n";
    previous = stage.first + ".out";
  }
  nvapp += previous + " -> alert\n";
  for (unsigned k = 0; k < verifiers; ++k)
    nvapp += llvm::formatv("verify{0}.done -> pcre.in\n", k).str();
  ids.files.push_back({ids.nvappName, nvapp});
  for (auto &stage : stages)
    ids.files.push_back(
        {llvm::formatv("{0}-{1}.netil", name, stage.first).str(),
         std::move(stage.second)});
  return ids;
}
