//===- Parser.cpp - NetIL lexer and parser
//------------------------------------===//
//
// Reads NetIL source in NetBee's syntax into a netil::Program: segments
// (.ports, .metadata, .coprocessors, .init, .push, .pull, .data), directives,
// `equ` constants with arithmetic expressions, labels, every literal form
// (decimal, hexadecimal, dotted quad, colon quad, strings) and instruction
// operands. Every error carries the source position; after an error the
// parser skips to the next line and goes on, so one run reports them all.
//
//===----------------------------------------------------------------------===//

#include "Parser.h"
#include "AST.h"
#include "Diags.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"

using namespace netvm;
using namespace netvm::netil;
using llvm::SMLoc;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Lexer
//===----------------------------------------------------------------------===//

namespace {
enum class Tok {
  Eof,
  Newline,
  Ident,
  Number,
  String,
  Colon,
  Comma,
  Plus,
  Minus,
  Star,
  Slash,
  LParen,
  RParen,
  Invalid,
};

struct Token {
  Tok kind = Tok::Eof;
  StringRef text;
  uint32_t value = 0; // Number
  std::string str;    // String, unescaped
  SMLoc loc() const { return SMLoc::getFromPointer(text.data()); }
  bool is(Tok k) const { return kind == k; }
  bool isIdent(StringRef s) const { return kind == Tok::Ident && text == s; }
};
} // namespace

static bool isIdentStart(char c) {
  return llvm::isAlpha(c) || c == '_' || c == '.';
}
static bool isIdentChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '.';
}

/// Split `buffer` into tokens, reporting malformed literals.
static std::vector<Token> tokenize(StringRef buffer, Diags &diags) {
  std::vector<Token> tokens;
  const char *p = buffer.begin(), *end = buffer.end();
  auto make = [&](Tok kind, const char *start, const char *stop) {
    Token t;
    t.kind = kind;
    t.text = StringRef(start, stop - start);
    tokens.push_back(std::move(t));
    return &tokens.back();
  };
  auto isHex2 = [&](const char *q) {
    return q + 1 < end && llvm::isHexDigit(q[0]) && llvm::isHexDigit(q[1]);
  };

  while (p < end) {
    char c = *p;
    if (c == '\n') {
      make(Tok::Newline, p, p + 1);
      ++p;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++p;
      continue;
    }
    if (c == ';') { // comment to end of line
      while (p < end && *p != '\n')
        ++p;
      continue;
    }
    const char *start = p;

    // Colon quad: four groups of two hex digits, e.g. 00:11:22:33.
    if (isHex2(p) && p + 2 < end && p[2] == ':') {
      const char *q = p;
      int groups = 0;
      while (isHex2(q)) {
        ++groups;
        q += 2;
        if (q < end && *q == ':' && isHex2(q + 1))
          ++q;
        else
          break;
      }
      if (groups >= 4 && (q >= end || !isIdentChar(*q))) {
        Token *t = make(Tok::Number, start, q);
        if (groups != 4) {
          diags.lexError(t->loc())
              << "colon notation '" << t->text << "' has " << groups
              << " groups; a NetIL value is 32 bits (4 groups, e.g. "
                 "00:11:22:33)";
          t->kind = Tok::Invalid;
        } else {
          uint32_t v = 0;
          for (int i = 0; i < 4; ++i)
            v = (v << 8) | llvm::hexFromNibbles(start[3 * i], start[3 * i + 1]);
          t->value = v;
        }
        p = q;
        continue;
      }
    }

    if (llvm::isDigit(c)) {
      const char *q = p;
      while (q < end && (isIdentChar(*q)))
        ++q;
      StringRef text(p, q - p);
      Token *t = make(Tok::Number, p, q);
      p = q;
      llvm::SmallVector<StringRef, 4> parts;
      text.split(parts, '.');
      if (parts.size() == 4 && llvm::all_of(parts, [](StringRef part) {
            return !part.empty() && part.size() <= 3 &&
                   llvm::all_of(part, llvm::isDigit);
          })) {
        uint32_t v = 0;
        for (StringRef part : parts) {
          unsigned byte = 0;
          part.getAsInteger(10, byte);
          if (byte > 255) {
            diags.lexError(t->loc())
                << "dotted quad '" << text << "' has a component above 255";
            t->kind = Tok::Invalid;
          }
          v = (v << 8) | (byte & 0xff);
        }
        t->value = v;
        continue;
      }
      uint64_t v = 0;
      bool bad;
      if (text.starts_with_insensitive("0x"))
        bad = text.drop_front(2).getAsInteger(16, v) || text.size() == 2;
      else
        bad = text.getAsInteger(10, v);
      if (bad) {
        diags.lexError(t->loc()) << "invalid numeric literal '" << text
                                 << "' (expected decimal, 0x hexadecimal, a "
                                    "dotted quad or a colon quad)";
        t->kind = Tok::Invalid;
      } else if (v > 0xFFFFFFFFull) {
        diags.lexError(t->loc())
            << "numeric literal '" << text << "' does not fit in 32 bits";
        t->kind = Tok::Invalid;
      }
      t->value = static_cast<uint32_t>(v);
      continue;
    }

    if (isIdentStart(c)) {
      const char *q = p;
      while (q < end && isIdentChar(*q))
        ++q;
      make(Tok::Ident, p, q);
      p = q;
      continue;
    }

    if (c == '"') {
      const char *q = p + 1;
      std::string value;
      bool closed = false;
      while (q < end && *q != '\n') {
        if (*q == '"') {
          closed = true;
          break;
        }
        if (*q == '\\' && q + 1 < end) {
          char e = q[1];
          if ((e == 'x' || e == 'X') && isHex2(q + 2)) {
            value.push_back(
                static_cast<char>(llvm::hexFromNibbles(q[2], q[3])));
            q += 4;
            continue;
          }
          switch (e) {
          case '\\':
            value.push_back('\\');
            break;
          case '"':
            value.push_back('"');
            break;
          case 'n':
            value.push_back('\n');
            break;
          case 't':
            value.push_back('\t');
            break;
          case 'r':
            value.push_back('\r');
            break;
          case '0':
            value.push_back('\0');
            break;
          default:
            diags.lexError(SMLoc::getFromPointer(q))
                << "unknown escape sequence '\\" << e
                << "' (supported: \\xHH \\\\ \\\" \\n \\t \\r \\0)";
          }
          q += 2;
          continue;
        }
        value.push_back(*q++);
      }
      if (!closed) {
        Token *t = make(Tok::Invalid, p, q);
        diags.lexError(t->loc()) << "string is not closed before the end of "
                                    "the line";
        p = q;
        continue;
      }
      Token *t = make(Tok::String, p, q + 1);
      t->str = std::move(value);
      p = q + 1;
      continue;
    }

    Tok kind = Tok::Invalid;
    switch (c) {
    case ':':
      kind = Tok::Colon;
      break;
    case ',':
      kind = Tok::Comma;
      break;
    case '+':
      kind = Tok::Plus;
      break;
    case '-':
      kind = Tok::Minus;
      break;
    case '*':
      kind = Tok::Star;
      break;
    case '/':
      kind = Tok::Slash;
      break;
    case '(':
      kind = Tok::LParen;
      break;
    case ')':
      kind = Tok::RParen;
      break;
    default:
      break;
    }
    Token *t = make(kind, p, p + 1);
    if (kind == Tok::Invalid) {
      if (static_cast<unsigned char>(c) < 0x20 ||
          static_cast<unsigned char>(c) >= 0x7f)
        diags.lexError(t->loc())
            << "invalid character (byte 0x"
            << llvm::utohexstr(static_cast<unsigned char>(c))
            << ") in NetIL source";
      else
        diags.lexError(t->loc())
            << "invalid character '" << c << "' in NetIL source";
    }
    ++p;
  }
  Token eof;
  eof.kind = Tok::Eof;
  eof.text = StringRef(end, 0);
  tokens.push_back(eof);
  return tokens;
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

namespace {
class Parser {
public:
  Parser(Diags &diags, std::vector<Token> tokens)
      : diags(diags), tokens(std::move(tokens)) {}

  Program parseFile();

private:
  const Token &tok() const { return tokens[pos]; }
  const Token &peek(unsigned n = 1) const {
    return tokens[std::min<size_t>(pos + n, tokens.size() - 1)];
  }
  void consume() {
    if (!tok().is(Tok::Eof))
      ++pos;
  }
  bool atLineEnd() const {
    return tok().is(Tok::Newline) || tok().is(Tok::Eof);
  }
  void skipNewlines() {
    while (tok().is(Tok::Newline))
      consume();
  }
  /// Error recovery: drop the rest of the line.
  void skipLine() {
    while (!atLineEnd())
      consume();
  }
  /// Expect the end of the line; complain about trailing tokens.
  bool expectLineEnd(StringRef what) {
    if (atLineEnd())
      return true;
    diags.error(tok().loc())
        << "unexpected '" << tok().text << "' after " << what;
    skipLine();
    return false;
  }
  /// Describe the current token for "expected X, got Y" messages.
  std::string describe(const Token &t) const {
    switch (t.kind) {
    case Tok::Eof:
      return "end of file";
    case Tok::Newline:
      return "end of line";
    default:
      return ("'" + t.text + "'").str();
    }
  }

  bool parseName(std::string &name, SMLoc &loc, StringRef what);
  std::optional<int64_t> parseExpr();
  std::optional<int64_t> parseTerm();
  std::optional<int64_t> parseUnary();
  std::optional<int64_t> parsePrimary();
  std::optional<uint32_t> parseU32(StringRef what);
  std::optional<uint32_t> parseUnsigned(StringRef what, uint64_t max);

  void parseEqu();
  void parseSegment();
  void parsePorts();
  void parseMetadata(bool coprocessorsOnly);
  void parseCode(Handler &handler);
  void parseData();
  bool parseInstruction(Handler &handler);
  bool parseDirectiveInCode(Handler &handler);
  void useCoprocessor(const Token &nameTok);
  bool parseSwitchTable(Instr &instr);
  /// Skip to `ends` (or EOF) after an unrecoverable segment problem.
  void skipSegment();
  bool atEnds() const { return tok().isIdent("ends"); }
  bool endSegment(SMLoc segLoc, StringRef name);

  Diags &diags;
  std::vector<Token> tokens;
  size_t pos = 0;
  Program prog;
  llvm::StringMap<int64_t> constants;
  llvm::StringMap<SMLoc> constantLocs;
  llvm::StringMap<SMLoc> segmentLocs;
  /// Sizes already given in the .metadata segment.
  llvm::StringSet<> metadataGiven;
};
} // namespace

bool Parser::parseName(std::string &name, SMLoc &loc, StringRef what) {
  if (!tok().is(Tok::Ident)) {
    diags.error(tok().loc())
        << "expected " << what << ", got " << describe(tok());
    return false;
  }
  name = tok().text.str();
  loc = tok().loc();
  consume();
  return true;
}

// expr := term (('+' | '-') term)*
std::optional<int64_t> Parser::parseExpr() {
  std::optional<int64_t> lhs = parseTerm();
  while (lhs && (tok().is(Tok::Plus) || tok().is(Tok::Minus))) {
    bool plus = tok().is(Tok::Plus);
    consume();
    std::optional<int64_t> rhs = parseTerm();
    if (!rhs)
      return std::nullopt;
    lhs = static_cast<int64_t>(
        static_cast<uint32_t>(plus ? *lhs + *rhs : *lhs - *rhs));
  }
  return lhs;
}

// term := unary (('*' | '/') unary)*
std::optional<int64_t> Parser::parseTerm() {
  std::optional<int64_t> lhs = parseUnary();
  while (lhs && (tok().is(Tok::Star) || tok().is(Tok::Slash))) {
    bool mul = tok().is(Tok::Star);
    SMLoc opLoc = tok().loc();
    consume();
    std::optional<int64_t> rhs = parseUnary();
    if (!rhs)
      return std::nullopt;
    if (!mul && static_cast<int32_t>(*rhs) == 0) {
      diags.error(opLoc) << "division by zero in constant expression";
      return std::nullopt;
    }
    int32_t a = static_cast<int32_t>(*lhs), b = static_cast<int32_t>(*rhs);
    int64_t r = mul ? static_cast<int64_t>(static_cast<uint32_t>(a) *
                                           static_cast<uint32_t>(b))
                    : (a == INT32_MIN && b == -1 ? a : a / b);
    lhs = static_cast<int64_t>(static_cast<uint32_t>(r));
  }
  return lhs;
}

// unary := '-' unary | primary
std::optional<int64_t> Parser::parseUnary() {
  if (tok().is(Tok::Minus)) {
    consume();
    std::optional<int64_t> v = parseUnary();
    if (!v)
      return std::nullopt;
    return -*v;
  }
  return parsePrimary();
}

// primary := number | constant | '(' expr ')'
std::optional<int64_t> Parser::parsePrimary() {
  const Token &t = tok();
  if (t.is(Tok::Number)) {
    consume();
    return static_cast<int64_t>(t.value);
  }
  if (t.is(Tok::Invalid)) { // already reported by the lexer
    consume();
    return std::nullopt;
  }
  if (t.is(Tok::LParen)) {
    consume();
    std::optional<int64_t> v = parseExpr();
    if (!v)
      return std::nullopt;
    if (!tok().is(Tok::RParen)) {
      diags.error(tok().loc())
          << "expected ')' in expression, got " << describe(tok());
      return std::nullopt;
    }
    consume();
    return v;
  }
  if (t.is(Tok::Ident)) {
    auto it = constants.find(t.text);
    if (it == constants.end()) {
      auto diag = diags.error(t.loc())
                  << "use of undefined constant '" << t.text << "'";
      // A later definition is a common mistake: NetIL constants must be
      // defined before they are used.
      for (size_t i = pos + 1; i + 1 < tokens.size(); ++i)
        if (tokens[i].is(Tok::Ident) && tokens[i].text == t.text &&
            tokens[i + 1].isIdent("equ")) {
          diag.attachNote(diags.loc(tokens[i].loc()))
              << "defined later here; NetIL constants must be defined "
                 "before use";
          break;
        }
      consume();
      return std::nullopt;
    }
    consume();
    return it->second;
  }
  diags.error(t.loc()) << "expected a value, got " << describe(t);
  return std::nullopt;
}

std::optional<uint32_t> Parser::parseU32(StringRef what) {
  SMLoc loc = tok().loc();
  std::optional<int64_t> v = parseExpr();
  if (!v)
    return std::nullopt;
  if (*v < INT32_MIN || *v > static_cast<int64_t>(UINT32_MAX)) {
    diags.error(loc) << what << " " << *v << " does not fit in 32 bits";
    return std::nullopt;
  }
  return static_cast<uint32_t>(*v);
}

std::optional<uint32_t> Parser::parseUnsigned(StringRef what, uint64_t max) {
  SMLoc loc = tok().loc();
  std::optional<int64_t> v = parseExpr();
  if (!v)
    return std::nullopt;
  if (*v < 0 || static_cast<uint64_t>(*v) > max) {
    diags.error(loc) << what << " must be between 0 and " << max << ", not "
                     << *v;
    return std::nullopt;
  }
  return static_cast<uint32_t>(*v);
}

void Parser::parseEqu() {
  const Token &name = tok();
  consume(); // name
  consume(); // equ
  std::optional<int64_t> v = parseExpr();
  if (!v) {
    skipLine();
    return;
  }
  auto [it, inserted] = constants.try_emplace(name.text, *v);
  if (!inserted) {
    auto diag = diags.error(name.loc())
                << "constant '" << name.text << "' is already defined";
    diag.attachNote(diags.loc(constantLocs[name.text]))
        << "previous definition here";
  } else {
    constantLocs[name.text] = name.loc();
  }
  expectLineEnd("the constant's value");
}

Program Parser::parseFile() {
  // File-wide diagnostics point at the start of the file.
  prog.fileLoc = SMLoc::getFromPointer(diags.buffer().begin());
  while (true) {
    skipNewlines();
    const Token &t = tok();
    if (t.is(Tok::Eof))
      break;
    if (t.isIdent("segment")) {
      parseSegment();
      continue;
    }
    if (t.is(Tok::Ident) && peek().isIdent("equ")) {
      parseEqu();
      continue;
    }
    if (!t.is(Tok::Invalid))
      diags.error(t.loc()) << "expected 'segment' or 'NAME equ VALUE' at "
                              "top level, got "
                           << describe(t);
    consume();
    skipLine();
  }
  return std::move(prog);
}

void Parser::skipSegment() {
  while (!tok().is(Tok::Eof) && !atEnds())
    consume();
  if (atEnds())
    consume();
}

bool Parser::endSegment(SMLoc segLoc, StringRef name) {
  if (atEnds()) {
    consume();
    return true;
  }
  diags.error(segLoc) << "segment " << name
                      << " is not closed with 'ends' before the end of the "
                         "file";
  return false;
}

void Parser::parseSegment() {
  consume(); // segment
  if (!tok().is(Tok::Ident)) {
    diags.error(tok().loc()) << "expected a segment name (.ports, "
                                ".metadata, .init, .push, .pull, .data), got "
                             << describe(tok());
    skipSegment();
    return;
  }
  StringRef name = tok().text;
  SMLoc loc = tok().loc();
  consume();
  auto [it, inserted] = segmentLocs.try_emplace(name, loc);
  if (!inserted) {
    auto diag = diags.error(loc) << "segment " << name << " is defined twice";
    diag.attachNote(diags.loc(it->second)) << "first definition here";
    skipSegment();
    return;
  }
  std::optional<HandlerKind> handlerKind =
      llvm::StringSwitch<std::optional<HandlerKind>>(name)
          .Case(".init", HandlerKind::Init)
          .Case(".push", HandlerKind::Push)
          .Case(".pull", HandlerKind::Pull)
          .Default(std::nullopt);
  if (handlerKind) {
    // A segment closed by `ends` with only a trailing comment is fine.
    Handler &h = prog.handlers[static_cast<unsigned>(*handlerKind)].emplace();
    h.kind = *handlerKind;
    h.loc = loc;
    parseCode(h);
    h.endLoc = tok().loc();
    endSegment(loc, name);
    return;
  }
  if (name == ".ports") {
    parsePorts();
  } else if (name == ".metadata") {
    parseMetadata(/*coprocessorsOnly=*/false);
  } else if (name == ".coprocessors") {
    parseMetadata(/*coprocessorsOnly=*/true);
  } else if (name == ".data") {
    parseData();
  } else {
    diags.warning(loc) << "ignoring unknown segment " << name
                       << " (known: .ports, .metadata, .coprocessors, "
                          ".init, .push, .pull, .data)";
    skipSegment();
    return;
  }
  endSegment(loc, name);
}

void Parser::parsePorts() {
  while (true) {
    skipNewlines();
    if (atEnds() || tok().is(Tok::Eof))
      return;
    const Token &kindTok = tok();
    std::optional<PortKind> kind;
    if (kindTok.is(Tok::Ident))
      kind = symbolizePortKind(kindTok.text);
    if (!kind) {
      diags.error(kindTok.loc())
          << "expected a port declaration (push_input, push_output, "
             "pull_input, pull_output), got "
          << describe(kindTok);
      consume();
      skipLine();
      continue;
    }
    consume();
    do {
      PortDecl port;
      port.kind = *kind;
      if (!parseName(port.name, port.loc, "a port name")) {
        skipLine();
        break;
      }
      auto dup = llvm::find_if(
          prog.ports, [&](const PortDecl &p) { return p.name == port.name; });
      if (dup != prog.ports.end()) {
        auto diag = diags.error(port.loc)
                    << "port '" << port.name << "' is declared twice";
        diag.attachNote(diags.loc(dup->loc)) << "first declaration here";
      } else {
        prog.ports.push_back(std::move(port));
      }
      if (!tok().is(Tok::Comma))
        break;
      consume();
    } while (true);
    expectLineEnd("the port declaration");
  }
}

void Parser::useCoprocessor(const Token &nameTok) {
  auto dup = llvm::find_if(prog.coprocessors, [&](const auto &c) {
    return c.first == nameTok.text;
  });
  if (dup != prog.coprocessors.end()) {
    auto diag = diags.error(nameTok.loc())
                << "coprocessor '" << nameTok.text << "' is declared twice";
    diag.attachNote(diags.loc(dup->second)) << "first declaration here";
    return;
  }
  prog.coprocessors.emplace_back(nameTok.text.str(), nameTok.loc());
}

void Parser::parseMetadata(bool coprocessorsOnly) {
  while (true) {
    skipNewlines();
    if (atEnds() || tok().is(Tok::Eof))
      return;
    const Token &d = tok();
    if (d.is(Tok::Ident) && peek().isIdent("equ")) {
      parseEqu();
      continue;
    }
    consume();
    if (d.isIdent(".use_coprocessor") || d.isIdent("use_coprocessor")) {
      if (!tok().is(Tok::Ident)) {
        diags.error(tok().loc())
            << "expected a coprocessor name, got " << describe(tok());
        skipLine();
        continue;
      }
      useCoprocessor(tok());
      consume();
      expectLineEnd("the coprocessor name");
      continue;
    }
    if (coprocessorsOnly) {
      diags.error(d.loc()) << "expected 'use_coprocessor NAME' in the "
                              ".coprocessors segment, got "
                           << describe(d);
      skipLine();
      continue;
    }
    if (d.isIdent(".netpe_name")) {
      std::string name;
      SMLoc loc;
      if (!parseName(name, loc, "a NetPE name")) {
        skipLine();
        continue;
      }
      if (!prog.peName.empty()) {
        auto diag = diags.error(loc) << "NetPE name is given twice";
        diag.attachNote(diags.loc(prog.peNameLoc)) << "first given here";
      } else {
        prog.peName = name;
        prog.peNameLoc = loc;
      }
      expectLineEnd("the NetPE name");
      continue;
    }
    if (d.isIdent(".datamem_size") || d.isIdent(".info_size")) {
      bool isData = d.isIdent(".datamem_size");
      std::optional<uint32_t> &slot = isData ? prog.datamemSize : prog.infoSize;
      SMLoc &slotLoc = isData ? prog.datamemLoc : prog.infoLoc;
      std::optional<uint32_t> v = parseUnsigned(
          isData ? "data memory size" : "info memory size", 64u << 20);
      if (!v) {
        skipLine();
        continue;
      }
      if (slot && metadataGiven.contains(d.text)) {
        auto diag = diags.error(d.loc()) << d.text << " is given twice";
        diag.attachNote(diags.loc(slotLoc)) << "first given here";
      } else if (slot && *slot != *v) {
        // Given first in a code segment (see parseDirectiveInCode).
        auto diag = diags.error(d.loc())
                    << d.text << " " << *v << " conflicts with the size "
                    << *slot << " given before";
        diag.attachNote(diags.loc(slotLoc)) << "the size was given here";
      } else {
        slot = v;
        slotLoc = d.loc();
      }
      metadataGiven.insert(d.text);
      expectLineEnd(d.text);
      continue;
    }
    diags.error(d.loc()) << "unknown directive " << describe(d)
                         << " in .metadata (expected .netpe_name, "
                            ".datamem_size, .info_size, .use_coprocessor)";
    skipLine();
  }
}

void Parser::parseData() {
  bool bigEndian = true;
  skipNewlines();
  if (tok().isIdent(".byte_order")) {
    consume();
    const Token &order = tok();
    if (order.isIdent("big_endian") || order.isIdent("network")) {
      bigEndian = true;
    } else if (order.isIdent("little_endian")) {
      bigEndian = false;
    } else {
      diags.error(order.loc()) << "expected big_endian, little_endian or "
                                  "network after .byte_order, got "
                               << describe(order);
    }
    if (!atLineEnd())
      consume();
    expectLineEnd("the byte order");
  }
  while (true) {
    skipNewlines();
    if (atEnds() || tok().is(Tok::Eof))
      return;
    const Token &label = tok();
    if (!label.is(Tok::Ident) ||
        !(peek().isIdent("db") || peek().isIdent("dw") ||
          peek().isIdent("dd") || peek().isIdent("equ"))) {
      diags.error(label.loc()) << "expected 'LABEL db|dw|dd VALUE' in the "
                                  ".data segment, got "
                               << describe(label);
      consume();
      skipLine();
      continue;
    }
    if (peek().isIdent("equ")) {
      parseEqu();
      continue;
    }
    consume();
    unsigned width = tok().isIdent("db") ? 1 : tok().isIdent("dw") ? 2 : 4;
    consume();
    if (prog.dataLabels.count(label.text))
      diags.error(label.loc())
          << "data label '" << label.text << "' is defined twice";
    else
      prog.dataLabels[label.text] = prog.data.size();
    do {
      if (tok().is(Tok::String)) {
        if (width != 1)
          diags.error(tok().loc()) << "strings are only allowed with db";
        prog.data.insert(prog.data.end(), tok().str.begin(), tok().str.end());
        consume();
      } else {
        SMLoc vloc = tok().loc();
        std::optional<int64_t> v = parseExpr();
        if (!v) {
          skipLine();
          break;
        }
        int64_t lo = width == 4 ? INT32_MIN : -(int64_t(1) << (8 * width - 1));
        int64_t hi = width == 4 ? UINT32_MAX : (int64_t(1) << (8 * width)) - 1;
        if (*v < lo || *v > hi)
          diags.error(vloc)
              << "value " << *v << " does not fit in " << width * 8 << " bits";
        uint32_t u = static_cast<uint32_t>(*v);
        for (unsigned i = 0; i < width; ++i) {
          unsigned shift = bigEndian ? 8 * (width - 1 - i) : 8 * i;
          prog.data.push_back(static_cast<uint8_t>(u >> shift));
        }
      }
      if (!tok().is(Tok::Comma))
        break;
      consume();
    } while (true);
    expectLineEnd("the data value");
  }
}

void Parser::parseCode(Handler &handler) {
  while (true) {
    skipNewlines();
    if (atEnds() || tok().is(Tok::Eof))
      return;
    const Token &t = tok();
    if (t.is(Tok::Ident) && peek().is(Tok::Colon)) {
      // A label; an instruction may follow on the same line.
      auto [it, inserted] =
          handler.labels.try_emplace(t.text, handler.code.size());
      if (!inserted) {
        auto diag = diags.error(t.loc())
                    << "label '" << t.text << "' is defined twice";
        diag.attachNote(diags.loc(handler.labelLocs[t.text]))
            << "first definition here";
      } else {
        handler.labelLocs[t.text] = t.loc();
      }
      consume();
      consume();
      continue;
    }
    if (t.is(Tok::Ident) && peek().isIdent("equ")) {
      parseEqu();
      continue;
    }
    if (t.is(Tok::Ident) && t.text.starts_with(".")) {
      parseDirectiveInCode(handler);
      continue;
    }
    if (!t.is(Tok::Ident)) {
      if (!t.is(Tok::Invalid))
        diags.error(t.loc()) << "expected an instruction, a label or a "
                                "directive, got "
                             << describe(t);
      consume();
      skipLine();
      continue;
    }
    if (parseInstruction(handler))
      expectLineEnd(
          ("the '" + handler.code.back().info->mnemonic + "' instruction")
              .str());
    else
      skipLine();
  }
}

bool Parser::parseDirectiveInCode(Handler &handler) {
  const Token &d = tok();
  consume();
  if (d.isIdent(".maxstacksize") || d.isIdent(".locals")) {
    bool isStack = d.isIdent(".maxstacksize");
    std::optional<uint32_t> v = parseUnsigned(
        isStack ? "maximum stack size" : "number of locals", 1u << 16);
    if (!v) {
      skipLine();
      return false;
    }
    std::optional<uint32_t> &slot = isStack ? handler.maxStack : handler.locals;
    SMLoc &slotLoc = isStack ? handler.maxStackLoc : handler.localsLoc;
    if (slot) {
      auto diag = diags.error(d.loc()) << d.text << " is given twice";
      diag.attachNote(diags.loc(slotLoc)) << "first given here";
    } else {
      slot = v;
      slotLoc = d.loc();
    }
    return expectLineEnd(d.text);
  }
  if (d.isIdent(".datamem_size") || d.isIdent(".datamemsize") ||
      d.isIdent(".info_size")) {
    // NetBee's grammar only accepts these in .metadata, but some of its
    // sample programs put them in .init; accept them there too.
    bool isData = !d.isIdent(".info_size");
    std::optional<uint32_t> v = parseUnsigned("memory size", 64u << 20);
    if (!v) {
      skipLine();
      return false;
    }
    diags.warning(d.loc()) << d.text << " belongs in the .metadata segment"
                           << (d.isIdent(".datamemsize")
                                   ? " (and is spelled .datamem_size)"
                                   : "");
    std::optional<uint32_t> &slot = isData ? prog.datamemSize : prog.infoSize;
    SMLoc &slotLoc = isData ? prog.datamemLoc : prog.infoLoc;
    if (!slot) {
      slot = v;
      slotLoc = d.loc();
    } else if (*slot != *v) {
      auto diag = diags.error(d.loc())
                  << d.text << " " << *v << " conflicts with the size " << *slot
                  << " given before";
      diag.attachNote(diags.loc(slotLoc)) << "the size was given here";
    }
    return expectLineEnd(d.text);
  }
  diags.error(d.loc()) << "unknown directive '" << d.text
                       << "' in a code segment (expected .maxstacksize or "
                          ".locals)";
  skipLine();
  return false;
}

/// The known mnemonic closest to `name`, for "did you mean" hints.
static StringRef closestMnemonic(StringRef name) {
  StringRef best;
  unsigned bestDistance = 3;
  for (const OpcodeInfo &info : allOpcodes()) {
    unsigned d = name.edit_distance_insensitive(info.mnemonic, true, 3);
    if (d < bestDistance) {
      bestDistance = d;
      best = info.mnemonic;
    }
  }
  return best;
}

bool Parser::parseInstruction(Handler &handler) {
  const Token &m = tok();
  const OpcodeInfo *info = lookupOpcode(m.text);
  if (!info) {
    auto diag = diags.error(m.loc()) << "unknown opcode '" << m.text << "'";
    if (StringRef hint = closestMnemonic(m.text); !hint.empty())
      diag << "; did you mean '" << hint << "'?";
    return false;
  }
  if (!info->unsupported.empty()) {
    diags.error(m.loc()) << "'" << m.text << "' is not supported by netvm: "
                         << info->unsupported;
    return false;
  }
  Instr instr;
  instr.info = info;
  instr.loc = m.loc();
  consume();

  auto parseNameOperand = [&](StringRef what) {
    return parseName(instr.name, instr.nameLoc, what);
  };
  auto expectComma = [&]() {
    if (tok().is(Tok::Comma)) {
      consume();
      return true;
    }
    diags.error(tok().loc()) << "expected ',' after the first operand of '"
                             << info->mnemonic << "', got " << describe(tok());
    return false;
  };

  switch (info->operand) {
  case OperandKind::None:
    break;
  case OperandKind::Imm32: {
    if (atLineEnd()) {
      diags.error(tok().loc())
          << "'" << info->mnemonic << "' needs a value operand";
      return false;
    }
    std::optional<uint32_t> v = parseU32("operand");
    if (!v)
      return false;
    instr.imm = *v;
    break;
  }
  case OperandKind::Imm32Pair: {
    std::optional<uint32_t> a = parseU32("operand");
    if (!a || !expectComma())
      return false;
    std::optional<uint32_t> b = parseU32("operand");
    if (!b)
      return false;
    instr.imm = *a;
    instr.imm2 = *b;
    break;
  }
  case OperandKind::Imm8: {
    if (atLineEnd()) {
      diags.error(tok().loc())
          << "'" << info->mnemonic << "' needs an 8-bit operand";
      return false;
    }
    std::optional<uint32_t> v = parseUnsigned("operand", 255);
    if (!v)
      return false;
    instr.imm = *v;
    break;
  }
  case OperandKind::Label:
    if (!parseNameOperand("a label"))
      return false;
    break;
  case OperandKind::OptLabel:
    if (tok().is(Tok::Ident)) {
      diags.warning(tok().loc())
          << "the label operand of '" << info->mnemonic << "' is ignored";
      consume();
    }
    break;
  case OperandKind::PushPort:
  case OperandKind::PullPort:
    if (!parseNameOperand("a port name"))
      return false;
    break;
  case OperandKind::CoproReg: {
    if (!parseNameOperand("a coprocessor name") || !expectComma())
      return false;
    std::optional<uint32_t> v = parseU32("coprocessor register or operation");
    if (!v)
      return false;
    instr.imm = *v;
    break;
  }
  case OperandKind::CoproInit:
    if (!parseNameOperand("a coprocessor name") || !expectComma() ||
        !parseName(instr.dataLabel, instr.dataLoc,
                   "a label of the .data segment"))
      return false;
    break;
  case OperandKind::SwitchTable:
    if (!parseSwitchTable(instr))
      return false;
    break;
  }
  handler.code.push_back(std::move(instr));
  return true;
}

bool Parser::parseSwitchTable(Instr &instr) {
  std::optional<uint32_t> count = parseUnsigned("switch case count", 1u << 20);
  if (!count)
    return false;
  if (!tok().is(Tok::Colon)) {
    diags.error(tok().loc()) << "expected ':' after the case count of "
                                "'switch', got "
                             << describe(tok());
    return false;
  }
  consume();
  while (true) {
    size_t lineStart = pos;
    skipNewlines();
    const Token &t = tok();
    bool isDefault = t.isIdent("default") && peek().is(Tok::Colon);
    bool isValue =
        t.is(Tok::Number) || (t.is(Tok::Minus) && peek().is(Tok::Number));
    if (!isDefault && !isValue) {
      pos = lineStart; // the table ended on the previous line
      break;
    }
    SwitchCase c;
    c.loc = t.loc();
    if (isDefault) {
      consume();
    } else {
      std::optional<uint32_t> v = parseU32("case value");
      if (!v)
        return false;
      c.value = *v;
    }
    if (!tok().is(Tok::Colon)) {
      diags.error(tok().loc()) << "expected ':' after a switch case value, "
                                  "got "
                               << describe(tok());
      return false;
    }
    consume();
    SMLoc labelLoc;
    if (!parseName(c.label, labelLoc, "a label"))
      return false;
    c.loc = labelLoc;
    if (isDefault) {
      if (instr.defaultCase) {
        auto diag = diags.error(t.loc())
                    << "switch has more than one default case";
        diag.attachNote(diags.loc(instr.defaultCase->loc)) << "first here";
        return false;
      }
      instr.defaultCase = std::move(c);
    } else {
      instr.cases.push_back(std::move(c));
    }
    if (!atLineEnd()) {
      diags.error(tok().loc())
          << "unexpected '" << tok().text << "' after a switch case";
      return false;
    }
  }
  if (instr.cases.size() != *count) {
    diags.error(instr.loc) << "switch declares " << *count
                           << " case(s) but lists " << instr.cases.size();
    return false;
  }
  return true;
}

std::optional<Program> netvm::netil::parse(Diags &diags) {
  unsigned before = diags.errorCount();
  Parser parser(diags, tokenize(diags.buffer(), diags));
  Program prog = parser.parseFile();
  if (diags.errorCount() != before)
    return std::nullopt;
  return prog;
}
