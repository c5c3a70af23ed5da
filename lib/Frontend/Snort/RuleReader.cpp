//===- RuleReader.cpp - Reading Snort rules -------------------------------===//
//
// A hand-written reader for the subset of Snort 2's rule language listed in
// docs/applications.md: `var`/`ipvar`/`portvar` lines, rule headers with
// address and port lists, and the payload and header options the IDS
// implements. A rule is one logical line (a trailing backslash continues
// it); every character keeps its physical line and column, so that each
// problem is reported where it is. A rule with a problem is skipped whole,
// never loaded in part.
//
//===----------------------------------------------------------------------===//

#include "netvm/Frontend/Snort.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"

#include <hs/hs.h>

using namespace netvm::snort;

/// A list matches when one of its positive elements matches (or it has
/// none) and none of its negated elements excludes the value.
template <typename Spec, typename T>
static bool listMatches(const std::vector<Spec> &elements, T value) {
  bool anyPositive = false, positiveHit = false;
  for (const Spec &e : elements) {
    if (e.negated) {
      if (!e.matches(value))
        return false;
    } else {
      anyPositive = true;
      positiveHit |= e.matches(value);
    }
  }
  return !anyPositive || positiveHit;
}

bool AddressSpec::matches(uint32_t ip) const {
  bool base = true;
  if (kind == Kind::Net) {
    base = (ip & mask) == address;
  } else if (kind == Kind::List) {
    base = listMatches(elements, ip);
  }
  return base != negated;
}

bool PortSpec::matches(uint16_t port) const {
  bool base = true;
  if (kind == Kind::Range) {
    base = port >= low && port <= high;
  } else if (kind == Kind::List) {
    base = listMatches(elements, port);
  }
  return base != negated;
}

std::optional<std::vector<uint16_t>> PortSpec::enumerate(unsigned limit) const {
  if (negated || kind == Kind::Any)
    return std::nullopt;
  std::vector<uint16_t> ports;
  if (kind == Kind::Range) {
    if (unsigned(high) - low + 1 > limit)
      return std::nullopt;
    for (unsigned p = low; p <= high; ++p)
      ports.push_back(p);
    return ports;
  }
  // A list with negated elements: the positive ones, filtered.
  for (const PortSpec &e : elements) {
    if (e.negated)
      continue;
    auto sub = e.enumerate(limit);
    if (!sub)
      return std::nullopt;
    for (uint16_t p : *sub)
      if (matches(p))
        ports.push_back(p);
  }
  llvm::sort(ports);
  ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
  if (ports.size() > limit || ports.empty())
    return std::nullopt;
  return ports;
}

bool Dsize::matches(uint32_t size) const {
  switch (op) {
  case Op::Equal:
    return size == low;
  case Op::Less:
    return size < low;
  case Op::Greater:
    return size > low;
  case Op::Between:
    return size >= low && size <= high;
  }
  return false;
}

bool TcpFlags::matches(uint8_t flags) const {
  uint8_t f = flags & ~ignore;
  switch (mode) {
  case Mode::Exact:
    return f == bits;
  case Mode::All:
    return (f & bits) == bits;
  case Mode::Any:
    return (f & bits) != 0;
  case Mode::Not:
    return (f & bits) == 0;
  }
  return false;
}

llvm::StringRef netvm::snort::actionName(Action action) {
  switch (action) {
  case Action::Alert:
    return "alert";
  case Action::Drop:
    return "drop";
  case Action::Pass:
    return "pass";
  }
  return "";
}

llvm::StringRef netvm::snort::protocolName(Protocol protocol) {
  switch (protocol) {
  case Protocol::TCP:
    return "TCP";
  case Protocol::UDP:
    return "UDP";
  case Protocol::ICMP:
    return "ICMP";
  case Protocol::IP:
    return "IP";
  }
  return "";
}

unsigned RuleReader::errors() const {
  return llvm::count_if(problems,
                        [](const RuleDiagnostic &d) { return !d.unsupported; });
}

unsigned RuleReader::unsupported() const { return problems.size() - errors(); }

void RuleReader::define(llvm::StringRef name, llvm::StringRef value) {
  variables[name.str()] = value.trim().str();
}

bool RuleReader::readFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    problems.push_back({{path.str(), 0, 0},
                        "cannot read rules: " + buffer.getError().message(),
                        false});
    return false;
  }
  read(path, (*buffer)->getBuffer());
  return true;
}

namespace netvm::snort {
/// Thrown out of the parse of one rule: the rule is skipped.
struct RuleProblem {
  size_t position;
  std::string message;
  bool unsupported;
};

/// One logical line being parsed, with where each of its characters came
/// from.
struct RuleParser {
  RuleReader &reader;
  llvm::StringRef file;
  std::string text;
  std::vector<std::pair<unsigned, unsigned>> where; // per character
  size_t pos = 0;

  Location locate(size_t at) const {
    if (where.empty())
      return {file.str(), 0, 0};
    if (at >= where.size())
      return {file.str(), where.back().first, where.back().second + 1};
    return {file.str(), where[at].first, where[at].second};
  }
  [[noreturn]] void fail(size_t at, const llvm::Twine &message) {
    throw RuleProblem{at, message.str(), false};
  }
  [[noreturn]] void unsupported(size_t at, const llvm::Twine &message) {
    throw RuleProblem{at, message.str(), true};
  }

  void skipSpace() {
    while (pos < text.size() && llvm::isSpace(text[pos]))
      ++pos;
  }
  /// A whitespace-delimited word; brackets keep their spaces.
  std::pair<std::string, size_t> word() {
    skipSpace();
    size_t start = pos;
    int depth = 0;
    while (pos < text.size() &&
           (depth > 0 || (!llvm::isSpace(text[pos]) && text[pos] != '('))) {
      if (text[pos] == '[')
        ++depth;
      else if (text[pos] == ']')
        --depth;
      ++pos;
    }
    return {text.substr(start, pos - start), start};
  }

  void parseLine();
  void parseRule(Rule &rule);
  void parseOptions(Rule &rule);
  void parseOption(Rule &rule, llvm::StringRef name, size_t namePos,
                   llvm::StringRef value, size_t valuePos);
  std::string variable(llvm::StringRef name, size_t at, unsigned depth);
  AddressSpec parseAddress(llvm::StringRef s, size_t at);
  PortSpec parsePort(llvm::StringRef s, size_t at);
};
} // namespace netvm::snort

/// Split a list's inside at top-level commas: (element, its offset).
static std::vector<std::pair<llvm::StringRef, size_t>>
splitList(llvm::StringRef inside) {
  std::vector<std::pair<llvm::StringRef, size_t>> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= inside.size(); ++i) {
    if (i == inside.size() || (inside[i] == ',' && depth == 0)) {
      llvm::StringRef part = inside.slice(start, i);
      size_t lead = part.size() - part.ltrim().size();
      parts.push_back({part.trim(), start + lead});
      start = i + 1;
    } else if (inside[i] == '[') {
      ++depth;
    } else if (inside[i] == ']') {
      --depth;
    }
  }
  return parts;
}

std::string RuleParser::variable(llvm::StringRef name, size_t at,
                                 unsigned depth) {
  if (depth > 16)
    fail(at, "variable $" + name + " refers to itself");
  auto it = reader.variables.find(name);
  if (it == reader.variables.end())
    fail(at, "undefined variable $" + name + " (define it with 'var " + name +
                 " ...' or --var " + name + "=...)");
  return it->second;
}

static bool parseUnsigned(llvm::StringRef s, uint64_t max, uint64_t &value) {
  if (s.empty() || !llvm::all_of(s, llvm::isDigit) || s.size() > 10)
    return false;
  value = std::stoull(s.str());
  return value <= max;
}

/// What addresses and ports share: `!`, `$VARIABLE`, `any` and lists;
/// `leaf` parses the rest (an address or a port range).
template <typename Spec, typename Leaf>
static Spec parseSet(RuleParser &p, llvm::StringRef s, size_t at,
                     unsigned depth, llvm::StringRef what, Leaf leaf) {
  Spec spec;
  if (s.consume_front("!")) {
    spec = parseSet<Spec>(p, s.ltrim(), at + 1 + (s.size() - s.ltrim().size()),
                          depth, what, leaf);
    spec.negated = !spec.negated;
    return spec;
  }
  if (s.empty())
    p.fail(at, "expected " + what);
  if (s.starts_with("$")) {
    std::string value = p.variable(s.drop_front(), at, depth + 1);
    try {
      return parseSet<Spec>(p, value, at, depth + 1, what, leaf);
    } catch (RuleProblem &problem) {
      problem.position = at;
      problem.message = "in $" + s.drop_front().str() + " = '" + value +
                        "': " + problem.message;
      throw;
    }
  }
  if (s == "any")
    return spec;
  if (s.starts_with("[")) {
    if (!s.ends_with("]"))
      p.fail(at, "unclosed '[' in " + what + " list");
    spec.kind = Spec::Kind::List;
    for (auto [part, offset] : splitList(s.drop_front().drop_back()))
      spec.elements.push_back(
          parseSet<Spec>(p, part, at + 1 + offset, depth, what, leaf));
    return spec;
  }
  leaf(spec, s, at);
  return spec;
}

AddressSpec RuleParser::parseAddress(llvm::StringRef s, size_t at) {
  return parseSet<AddressSpec>(
      *this, s, at, 0, "an address",
      [&](AddressSpec &spec, llvm::StringRef s, size_t at) {
        if (s.contains(':'))
          unsupported(at, "IPv6 addresses are not supported");
        auto [addr, bits] = s.split('/');
        llvm::SmallVector<llvm::StringRef, 4> octets;
        addr.split(octets, '.');
        uint32_t ip = 0;
        uint64_t v;
        if (octets.size() != 4)
          fail(at,
               "expected an IPv4 address, a list, $VARIABLE or 'any', not '" +
                   s + "'");
        for (llvm::StringRef o : octets) {
          if (!parseUnsigned(o, 255, v))
            fail(at, "bad IPv4 address '" + addr + "'");
          ip = ip << 8 | v;
        }
        uint64_t prefix = 32;
        if (s.contains('/') && !parseUnsigned(bits, 32, prefix))
          fail(at + addr.size() + 1, "bad prefix length '" + bits + "'");
        spec.kind = AddressSpec::Kind::Net;
        spec.mask = prefix == 0 ? 0 : ~uint32_t(0) << (32 - prefix);
        spec.address = ip & spec.mask;
      });
}

PortSpec RuleParser::parsePort(llvm::StringRef s, size_t at) {
  return parseSet<PortSpec>(
      *this, s, at, 0, "a port",
      [&](PortSpec &spec, llvm::StringRef s, size_t at) {
        spec.kind = PortSpec::Kind::Range;
        auto [lowText, highText] = s.split(':');
        uint64_t low = 0, high = 65535;
        if (!lowText.empty() && !parseUnsigned(lowText, 65535, low))
          fail(at, "bad port '" + lowText + "' (expected 0 to 65535)");
        if (!s.contains(':'))
          high = low;
        else if (!highText.empty() && !parseUnsigned(highText, 65535, high))
          fail(at + lowText.size() + 1,
               "bad port '" + highText + "' (expected 0 to 65535)");
        if (low > high)
          fail(at, "empty port range '" + s + "'");
        spec.low = low;
        spec.high = high;
      });
}

void RuleParser::parseLine() {
  pos = 0;
  auto [keyword, keywordPos] = word();
  if (keyword.empty() || keyword[0] == '#')
    return;
  if (keyword == "var" || keyword == "ipvar" || keyword == "portvar") {
    auto [name, namePos] = word();
    skipSpace();
    if (name.empty() || pos >= text.size())
      fail(keywordPos, "expected '" + keyword + " NAME VALUE'");
    reader.define(name, llvm::StringRef(text).substr(pos));
    return;
  }
  Rule rule;
  rule.location = locate(keywordPos);
  if (keyword == "alert")
    rule.action = Action::Alert;
  else if (keyword == "drop")
    rule.action = Action::Drop;
  else if (keyword == "pass")
    rule.action = Action::Pass;
  else if (keyword == "log" || keyword == "reject" || keyword == "sdrop" ||
           keyword == "activate" || keyword == "dynamic")
    unsupported(keywordPos, "rule action '" + keyword + "' is not supported");
  else if (keyword == "include" || keyword == "config" ||
           keyword == "preprocessor" || keyword == "output")
    unsupported(keywordPos, "'" + keyword + "' lines are not supported");
  else
    fail(keywordPos, "expected a rule action (alert, drop, pass) or 'var', "
                     "not '" +
                         keyword + "'");
  parseRule(rule);
  for (const Rule &other : reader.ruleList)
    if (other.sid == rule.sid)
      fail(keywordPos, "sid " + llvm::Twine(rule.sid) +
                           " is already used by the rule at line " +
                           llvm::Twine(other.location.line));
  reader.ruleList.push_back(std::move(rule));
}

void RuleParser::parseRule(Rule &rule) {
  auto [proto, protoPos] = word();
  if (proto == "tcp")
    rule.protocol = Protocol::TCP;
  else if (proto == "udp")
    rule.protocol = Protocol::UDP;
  else if (proto == "icmp")
    rule.protocol = Protocol::ICMP;
  else if (proto == "ip")
    rule.protocol = Protocol::IP;
  else if (proto.empty())
    fail(protoPos, "expected a protocol (tcp, udp, icmp, ip)");
  else if (proto == "http" || proto == "ftp" || proto == "smtp")
    unsupported(protoPos, "protocol '" + proto + "' is not supported");
  else
    fail(protoPos,
         "expected a protocol (tcp, udp, icmp, ip), not '" + proto + "'");
  auto [src, srcPos] = word();
  rule.source = parseAddress(src, srcPos);
  auto [sport, sportPos] = word();
  rule.sourcePort = parsePort(sport, sportPos);
  auto [dir, dirPos] = word();
  if (dir == "<>")
    rule.bidirectional = true;
  else if (dir == "<-")
    unsupported(dirPos, "direction '<-' is not supported (Snort rejects it "
                        "too); write the rule with '->'");
  else if (dir != "->")
    fail(dirPos, "expected '->' or '<>', not '" + dir + "'");
  auto [dst, dstPos] = word();
  rule.destination = parseAddress(dst, dstPos);
  auto [dport, dportPos] = word();
  rule.destinationPort = parsePort(dport, dportPos);
  if (rule.protocol != Protocol::TCP && rule.protocol != Protocol::UDP) {
    if (rule.sourcePort.kind != PortSpec::Kind::Any)
      fail(sportPos, "ports need tcp or udp");
    if (rule.destinationPort.kind != PortSpec::Kind::Any)
      fail(dportPos, "ports need tcp or udp");
  }
  skipSpace();
  if (pos >= text.size() || text[pos] != '(')
    fail(pos, "expected '(' and the rule's options");
  ++pos;
  parseOptions(rule);
}

void RuleParser::parseOptions(Rule &rule) {
  bool sawSid = false;
  while (true) {
    skipSpace();
    if (pos >= text.size())
      fail(pos, "expected ')' at the end of the rule");
    if (text[pos] == ')') {
      ++pos;
      skipSpace();
      if (pos < text.size())
        fail(pos, "unexpected text after the rule's ')'");
      break;
    }
    size_t namePos = pos;
    while (pos < text.size() && text[pos] != ':' && text[pos] != ';' &&
           text[pos] != ')')
      ++pos;
    llvm::StringRef name = llvm::StringRef(text).slice(namePos, pos).trim();
    if (name.empty())
      fail(namePos, "expected an option name");
    llvm::StringRef value;
    size_t valuePos = pos;
    if (pos < text.size() && text[pos] == ':') {
      ++pos;
      valuePos = pos;
      bool quoted = false;
      while (pos < text.size() && (quoted || text[pos] != ';')) {
        if (text[pos] == '\\' && pos + 1 < text.size())
          ++pos;
        else if (text[pos] == '"')
          quoted = !quoted;
        ++pos;
      }
      if (quoted || pos >= text.size())
        fail(valuePos,
             "option '" + name + "' does not end with ';' (unclosed quote?)");
      value = llvm::StringRef(text).slice(valuePos, pos);
      size_t lead = value.size() - value.ltrim().size();
      valuePos += lead;
      value = value.trim();
    }
    if (pos >= text.size() || text[pos] != ';')
      fail(pos, "expected ';' after option '" + name + "'");
    ++pos;
    if (name == "sid")
      sawSid = true;
    parseOption(rule, name, namePos, value, valuePos);
  }
  if (!sawSid)
    fail(0, "rule has no sid");
  for (size_t i = 0; i < rule.contents.size(); ++i) {
    const Content &c = rule.contents[i];
    if (c.negated && c.fastPattern)
      fail(0, "a negated content cannot be the fast pattern");
  }
}

/// The bytes of a content's quoted string: |hex| runs and \-escapes.
static std::string decodeContent(RuleParser &p, llvm::StringRef s, size_t at) {
  std::string bytes;
  bool hex = false;
  int pending = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '|') {
      if (hex && pending >= 0)
        p.fail(at + i, "odd number of hex digits in content");
      hex = !hex;
      continue;
    }
    if (hex) {
      if (c == ' ')
        continue;
      if (!llvm::isHexDigit(c))
        p.fail(at + i, "bad hex digit '" + llvm::Twine(c) + "' in content");
      unsigned d = llvm::hexDigitValue(c);
      if (pending < 0) {
        pending = d;
      } else {
        bytes.push_back(char(pending << 4 | d));
        pending = -1;
      }
      continue;
    }
    if (c == '\\') {
      if (i + 1 >= s.size() || !llvm::StringRef("\"\\;:").contains(s[i + 1]))
        p.fail(at + i, "bad escape in content (\\ must be followed by one "
                       "of \" \\ ; :)");
      bytes.push_back(s[++i]);
      continue;
    }
    if (c == '"' || c == ';')
      p.fail(at + i, "'" + llvm::Twine(c) + "' must be escaped in content");
    bytes.push_back(c);
  }
  if (hex)
    p.fail(at + s.size(), "unclosed '|' in content");
  return bytes;
}

/// The inside of a quoted option value, with `!` before the quote allowed.
static llvm::StringRef quoted(RuleParser &p, llvm::StringRef name,
                              llvm::StringRef value, size_t &at,
                              bool &negated) {
  negated = value.consume_front("!");
  if (negated) {
    size_t lead = value.size() - value.ltrim().size();
    at += 1 + lead;
    value = value.ltrim();
  }
  if (value.size() < 2 || !value.starts_with("\"") || !value.ends_with("\""))
    p.fail(at, name + " needs a quoted string");
  ++at;
  return value.drop_front().drop_back();
}

static int32_t number(RuleParser &p, llvm::StringRef name,
                      llvm::StringRef value, size_t at, int64_t min,
                      int64_t max) {
  int64_t v;
  if (value.getAsInteger(10, v) || v < min || v > max)
    p.fail(at, name + " needs a number from " + llvm::Twine(min) + " to " +
                   llvm::Twine(max) + ", not '" + value + "'");
  return int32_t(v);
}

void RuleParser::parseOption(Rule &rule, llvm::StringRef name, size_t namePos,
                             llvm::StringRef value, size_t valuePos) {
  auto lastContent = [&]() -> Content & {
    if (rule.contents.empty())
      fail(namePos, "'" + name + "' must follow a content");
    return rule.contents.back();
  };
  auto noValue = [&] {
    if (!value.empty())
      fail(valuePos, "'" + name + "' takes no value");
  };
  if (name == "msg") {
    bool negated;
    llvm::StringRef inside = quoted(*this, name, value, valuePos, negated);
    if (negated)
      fail(valuePos - 1, "msg cannot be negated");
    rule.msg.clear();
    for (size_t i = 0; i < inside.size(); ++i)
      if (inside[i] == '\\' && i + 1 < inside.size())
        rule.msg.push_back(inside[++i]);
      else
        rule.msg.push_back(inside[i]);
  } else if (name == "sid") {
    rule.sid = number(*this, name, value, valuePos, 1, UINT32_MAX >> 1);
  } else if (name == "rev") {
    rule.rev = number(*this, name, value, valuePos, 0, INT32_MAX);
  } else if (name == "priority") {
    rule.priority = number(*this, name, value, valuePos, 0, INT32_MAX);
  } else if (name == "gid") {
    if (value.trim() != "1")
      unsupported(valuePos, "only gid 1 (text rules) is supported");
  } else if (name == "classtype") {
    rule.classtype = value.str();
  } else if (name == "reference" || name == "metadata") {
    // Information only.
  } else if (name == "content") {
    Content c;
    size_t at = valuePos;
    llvm::StringRef inside = quoted(*this, name, value, at, c.negated);
    c.location = locate(namePos);
    c.bytes = decodeContent(*this, inside, at);
    if (c.bytes.empty())
      fail(valuePos, "empty content");
    if (c.bytes.size() > 65535)
      fail(valuePos, "content longer than 65535 bytes");
    rule.contents.push_back(std::move(c));
  } else if (name == "nocase") {
    noValue();
    lastContent().nocase = true;
  } else if (name == "rawbytes") {
    // No normalization happens, so every content reads the raw bytes.
    noValue();
    lastContent();
  } else if (name == "fast_pattern") {
    if (!value.empty())
      unsupported(valuePos, "fast_pattern options are not supported");
    lastContent().fastPattern = true;
  } else if (name == "offset" || name == "depth" || name == "distance" ||
             name == "within") {
    Content &c = lastContent();
    bool relative = name == "distance" || name == "within";
    if (relative ? (c.offset || c.depth) : (c.distance || c.within))
      fail(namePos, "'" + name + "' cannot be combined with '" +
                        (relative ? "offset/depth" : "distance/within") +
                        "' on one content");
    int32_t v = number(*this, name, value, valuePos,
                       name == "distance" ? -65535 : 0, 65535);
    if ((name == "depth" || name == "within") && v < int32_t(c.bytes.size()))
      fail(valuePos, name + " " + llvm::Twine(v) +
                         " is shorter than the content (" +
                         llvm::Twine(c.bytes.size()) + " bytes)");
    std::optional<int32_t> &slot = name == "offset"     ? c.offset
                                   : name == "depth"    ? c.depth
                                   : name == "distance" ? c.distance
                                                        : c.within;
    if (slot)
      fail(namePos, "'" + name + "' is given twice for one content");
    slot = v;
  } else if (name == "pcre") {
    Pcre pcre;
    size_t at = valuePos;
    llvm::StringRef inside = quoted(*this, name, value, at, pcre.negated);
    pcre.location = locate(namePos);
    if (!inside.starts_with("/"))
      unsupported(at, "pcre must be written /pattern/flags");
    size_t close = inside.rfind('/');
    if (close == 0)
      fail(at, "pcre has no closing '/'");
    pcre.pattern = inside.slice(1, close).str();
    for (size_t i = close + 1; i < inside.size(); ++i) {
      char f = inside[i];
      if (llvm::StringRef("ismxAG").contains(f))
        pcre.flags.push_back(f);
      else if (f == 'B')
        continue; // raw bytes: no normalization happens anyway
      else if (f == 'R')
        unsupported(at + i, "pcre flag 'R' (relative to the last content) "
                            "is not supported");
      else if (llvm::StringRef("UIPHDMCKSYOE").contains(f))
        unsupported(at + i,
                    "pcre flag '" + llvm::Twine(f) + "' is not supported");
      else
        fail(at + i, "unknown pcre flag '" + llvm::Twine(f) + "'");
    }
    std::string expression =
        (pcre.flags.find('x') != std::string::npos ? "(?x)" : "") +
        pcre.pattern;
    unsigned flags = HS_FLAG_ALLOWEMPTY;
    if (pcre.flags.find('i') != std::string::npos)
      flags |= HS_FLAG_CASELESS;
    if (pcre.flags.find('s') != std::string::npos)
      flags |= HS_FLAG_DOTALL;
    if (pcre.flags.find('m') != std::string::npos)
      flags |= HS_FLAG_MULTILINE;
    hs_database_t *db = nullptr;
    hs_compile_error_t *error = nullptr;
    if (hs_compile(expression.c_str(), flags, HS_MODE_BLOCK, nullptr, &db,
                   &error) != HS_SUCCESS) {
      std::string message = error ? error->message : "unknown error";
      hs_free_compile_error(error);
      unsupported(at, "pcre not supported by Hyperscan: " + message);
    }
    hs_free_database(db);
    rule.pcres.push_back(std::move(pcre));
  } else if (name == "dsize") {
    Dsize d;
    llvm::StringRef v = value;
    if (v.contains("<>")) {
      auto [l, h] = v.split("<>");
      d.op = Dsize::Op::Between;
      d.low = number(*this, name, l.trim(), valuePos, 0, 65535);
      d.high = number(*this, name, h.trim(), valuePos, 0, 65535);
      if (d.low > d.high)
        fail(valuePos, "empty dsize range");
    } else {
      if (v.consume_front("<"))
        d.op = Dsize::Op::Less;
      else if (v.consume_front(">"))
        d.op = Dsize::Op::Greater;
      d.low = number(*this, name, v.trim(), valuePos, 0, 65535);
    }
    rule.dsize = d;
  } else if (name == "flags") {
    if (rule.protocol != Protocol::TCP)
      fail(namePos, "flags needs a tcp rule");
    TcpFlags f;
    auto [bits, mask] = value.split(',');
    auto letters = [&](llvm::StringRef s, size_t at, bool modifiers) {
      uint8_t out = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        size_t bit = llvm::StringRef("FSRPAUEC").find(s[i]);
        if (s[i] == '1')
          bit = 7;
        else if (s[i] == '2')
          bit = 6;
        if (bit != llvm::StringRef::npos) {
          out |= 1u << bit;
        } else if (modifiers && s[i] == '0') {
          // No flag set.
        } else if (modifiers && llvm::StringRef("+*!").contains(s[i])) {
          f.mode = s[i] == '+'   ? TcpFlags::Mode::All
                   : s[i] == '*' ? TcpFlags::Mode::Any
                                 : TcpFlags::Mode::Not;
        } else {
          fail(at + i, "unknown TCP flag '" + llvm::Twine(s[i]) + "'");
        }
      }
      return out;
    };
    f.bits = letters(bits.trim(), valuePos, true);
    if (value.contains(','))
      f.ignore = letters(mask.trim(), valuePos + bits.size() + 1, false);
    rule.flags = f;
  } else if (name == "flow" || name == "flowbits" || name == "stream_size") {
    unsupported(namePos, "'" + name +
                             "' needs stream tracking, which this IDS does "
                             "not do");
  } else {
    unsupported(namePos, "option '" + name + "' is not supported");
  }
}

void RuleReader::read(llvm::StringRef name, llvm::StringRef text) {
  RuleParser parser{*this, name, {}, {}};
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    parser.text.clear();
    parser.where.clear();
    while (true) {
      llvm::StringRef line = lines[i].rtrim("\r");
      bool more = line.rtrim().ends_with("\\") && i + 1 < lines.size();
      if (more)
        line = line.rtrim().drop_back();
      for (size_t c = 0; c < line.size(); ++c) {
        parser.text.push_back(line[c]);
        parser.where.push_back({unsigned(i + 1), unsigned(c + 1)});
      }
      if (!more)
        break;
      parser.text.push_back(' ');
      parser.where.push_back({unsigned(i + 1), unsigned(line.size() + 1)});
      ++i;
    }
    try {
      parser.parseLine();
    } catch (const RuleProblem &p) {
      problems.push_back({parser.locate(p.position), p.message, p.unsupported});
    }
  }
}
