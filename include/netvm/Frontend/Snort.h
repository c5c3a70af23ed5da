//===- Snort.h - Snort rules: reader and NetVM IDS compiler -----*- C++ -*-===//
//
// The IDS front end (docs/applications.md, "The IDS"). RuleReader reads a
// documented subset of Snort 2's rule language into Rule values and reports
// every rule or option it cannot take, one by one, at file:line:col.
// planGroups sorts the rules into port groups, each with its fast patterns,
// as Snort's detection engine does; compileRules turns the rules and their
// plan into a NetVM application (decode, classify, fastpattern, verify
// NetPEs of 64 rules each, pcre) given as an .nvapp and NetIL texts that
// driver::load compiles like files.
//
// The matching semantics (which bytes a content searches, how relative
// contents anchor) are written down once, in docs/applications.md; the
// tests' oracle implements them independently.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_FRONTEND_SNORT_H
#define NETVM_FRONTEND_SNORT_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace netvm::snort {

struct Location {
  std::string file;
  unsigned line = 0, column = 0;
};

/// An IPv4 address set: `any`, a CIDR block, or a list of specs, each
/// possibly negated. A list matches when one of its positive elements
/// matches (or it has none) and none of its negated elements does.
struct AddressSpec {
  enum class Kind { Any, Net, List };
  Kind kind = Kind::Any;
  bool negated = false;
  uint32_t address = 0, mask = 0; // Net
  std::vector<AddressSpec> elements;
  bool matches(uint32_t ip) const;
};

/// A port set, built like AddressSpec from ranges [low, high].
struct PortSpec {
  enum class Kind { Any, Range, List };
  Kind kind = Kind::Any;
  bool negated = false;
  uint16_t low = 0, high = 65535; // Range
  std::vector<PortSpec> elements;
  bool matches(uint16_t port) const;
  /// The ports a packet must have to match, if they are few (at most
  /// `limit`) and the spec is positive: the base of port groups.
  std::optional<std::vector<uint16_t>> enumerate(unsigned limit) const;
};

struct Content {
  std::string bytes; // |hex| decoded
  bool nocase = false, negated = false, fastPattern = false;
  std::optional<int32_t> offset, depth, distance, within;
  bool relative() const { return distance || within; }
  Location location;
};

struct Pcre {
  std::string pattern; // between the slashes
  std::string flags;   // Hyperscan letters for the regexp coprocessor
  bool negated = false;
  Location location;
};

struct Dsize {
  enum class Op { Equal, Less, Greater, Between };
  Op op = Op::Equal;
  uint32_t low = 0, high = 0; // Between: inclusive
  bool matches(uint32_t size) const;
};

/// `flags`: the TCP flag bits F S R P A U E C (bit 0 to 7), compared after
/// clearing `ignore` (the optional mask after the comma).
struct TcpFlags {
  enum class Mode { Exact, All, Any, Not };
  Mode mode = Mode::Exact;
  uint8_t bits = 0, ignore = 0;
  bool matches(uint8_t flags) const;
};

enum class Action { Alert, Drop, Pass };
enum class Protocol { TCP, UDP, ICMP, IP };

llvm::StringRef actionName(Action action);
llvm::StringRef protocolName(Protocol protocol);

struct Rule {
  Action action = Action::Alert;
  Protocol protocol = Protocol::IP;
  AddressSpec source, destination;
  PortSpec sourcePort, destinationPort;
  bool bidirectional = false; // <>
  uint32_t sid = 0, rev = 0, priority = 0;
  std::string msg, classtype;
  std::vector<Content> contents;
  std::vector<Pcre> pcres;
  std::optional<Dsize> dsize;
  std::optional<TcpFlags> flags;
  Location location;
};

/// A problem with a rule: `unsupported` for a rule in Snort's language that
/// this IDS does not implement, else an error in the rule's syntax.
struct RuleDiagnostic {
  Location location;
  std::string message;
  bool unsupported = false;
};

class RuleReader {
public:
  /// Define a variable as `var`/`ipvar`/`portvar` lines do (the value is
  /// parsed where it is used). Later definitions replace earlier ones.
  void define(llvm::StringRef name, llvm::StringRef value);
  /// Read the rules of a file; false if it cannot be read (the message is
  /// among the diagnostics).
  bool readFile(llvm::StringRef path);
  /// Read rules from text; `name` is the file name diagnostics give.
  void read(llvm::StringRef name, llvm::StringRef text);

  const std::vector<Rule> &rules() const { return ruleList; }
  const std::vector<RuleDiagnostic> &diagnostics() const { return problems; }
  /// Rules skipped: errors, and unsupported rules.
  unsigned errors() const, unsupported() const;

private:
  friend struct RuleParser;
  std::map<std::string, std::string, std::less<>> variables;
  std::vector<Rule> ruleList;
  std::vector<RuleDiagnostic> problems;
};

/// One port group: the rules a packet of the group must be checked
/// against. Rules with content get their fast pattern searched; the others
/// are checked whenever the group is.
struct PortGroup {
  std::string name; // "tcp dst 80", "udp any", ...
  /// (rule index, index of the fast-pattern content in the rule).
  std::vector<std::pair<unsigned, unsigned>> fastPatterns;
  std::vector<unsigned> contentless;
};

/// Port groups, as Snort forms them: for TCP and UDP, one group per
/// destination port that rules name (with the rules of that port and the
/// generic ones), then per source port (rules with any destination port);
/// one generic group per protocol family (TCP, UDP, ICMP, other IP), with
/// the rules whose ports are any or too many. `ip` rules are generic in
/// every family. A packet is checked against the group of its destination
/// port and of its source port, or the generic group of its family if
/// neither exists.
struct GroupPlan {
  std::vector<PortGroup> groups;
  /// Per family (0 TCP, 1 UDP): port -> group index.
  std::map<uint16_t, unsigned> byDestination[2], bySource[2];
  /// Per family (0 TCP, 1 UDP, 2 ICMP, 3 other): the generic group.
  unsigned generic[4] = {0, 0, 0, 0};
};

/// The fast pattern of a rule: the content marked fast_pattern, else its
/// longest non-negated content; none if it has only negated contents.
std::optional<unsigned> fastPattern(const Rule &rule);

/// Whether a content after content `j` of `rule` anchors on its match
/// (distance/within), so that its end must be known.
bool anchorsLater(const Rule &rule, unsigned j);

GroupPlan planGroups(const std::vector<Rule> &rules);

/// Info memory of the IDS application, as the alert sink hands it over
/// (big-endian, as NetIL stores it).
enum InfoLayout : unsigned {
  InfoPayloadOffset = 0, // u16
  InfoPayloadLength = 2, // u16
  InfoProtocol = 4,      // u8
  InfoTcpFlags = 5,      // u8
  InfoSourcePort = 6,    // u16
  InfoDestPort = 8,      // u16
  InfoSource = 12,       // u32
  InfoDestination = 16,  // u32
  InfoGroup1 = 20,       // u16: group + 1, 0 for none
  InfoGroup2 = 22,       // u16
  InfoCandidates = 24,   // u16: number of candidate rules
  InfoOverflow = 26,     // u8: candidates or occurrences were cut short
  InfoAlerts = 28,       // u16: number of sids below
  InfoCandidateList = 32,
  MaxCandidates = 64,
  InfoAlertList = InfoCandidateList + 2 * MaxCandidates, // u32 sids
  InfoSize = InfoAlertList + 4 * MaxCandidates,
};

/// The application: an .nvapp text naming the NetIL texts by file name.
struct CompiledIDS {
  std::string nvappName;
  /// (file name, text): the .nvapp first, then the NetPEs.
  std::vector<std::pair<std::string, std::string>> files;
};

/// Compile `rules` into the IDS application. `name` names the files
/// (`NAME.nvapp`, `NAME-decode.netil`, ...). The rules' code is split over
/// verify NetPEs of `rulesPerVerifier` rules each.
CompiledIDS compileRules(const std::vector<Rule> &rules, const GroupPlan &plan,
                         llvm::StringRef name = "ids",
                         unsigned rulesPerVerifier = 64);

} // namespace netvm::snort

#endif // NETVM_FRONTEND_SNORT_H
