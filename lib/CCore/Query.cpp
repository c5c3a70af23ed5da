//===- Query.cpp - C-CORE queries: parser and NetIL emitter ---------------===//
//
// The query form of docs/ccore.md, parsed by recursive descent, and its
// translation to one NetIL NetPE. The predicate becomes short-circuit
// branches (jcmp to a pass and a reject label); a projection loads the
// chosen fields onto the stack, makes a new exchange buffer of the
// projected size and stores them back packed. The generic form reads every
// offset and parameter from data memory, the specialized form has them as
// constants, and everything else is the same code.
//
//===----------------------------------------------------------------------===//

#include "netvm/CCore/Query.h"
#include "netvm/ccore/Lexer.h"

#include <algorithm>
#include <sstream>

namespace netvm::ccore {

namespace {

class QueryParser {
public:
  QueryParser(const std::string &text, const std::string &file,
              const Schema &schema)
      : text(text), file(file), schema(schema), lexer(text) {
    advance();
  }

  std::optional<Query> parse(std::string &error) {
    Query q;
    q.text = text;
    if (!keyword("from")) {
      fail(tok, "a query starts with 'from FORMAT', found " + describe(tok));
      return finish(error, std::move(q));
    }
    if (tok.kind != Token::Word) {
      fail(tok, "expected a format name after 'from', found " + describe(tok));
      return finish(error, std::move(q));
    }
    q.format = schema.format(tok.text);
    if (!q.format) {
      fail(tok, "the schema has no format '" + tok.text + "'");
      return finish(error, std::move(q));
    }
    advance();
    query = &q;
    bool any = false;
    if (keyword("select")) {
      q.select = parseOr();
      any = true;
    }
    if (keyword("project")) {
      any = true;
      do {
        const Field *f = fieldRef();
        if (!f)
          break;
        if (std::find(q.project.begin(), q.project.end(), f->name) !=
            q.project.end())
          fail(last, "field '" + f->name + "' is projected twice");
        q.project.push_back(f->name);
      } while (punct(","));
    }
    if (!any)
      fail(tok, "expected 'select' or 'project', found " + describe(tok));
    else if (tok.kind != Token::End && errors.empty())
      fail(tok, "unexpected " + describe(tok) + " after the query");
    return finish(error, std::move(q));
  }

private:
  const std::string &text, &file;
  const Schema &schema;
  Lexer lexer;
  Query *query = nullptr;
  Token tok, last;
  std::string errors;

  std::optional<Query> finish(std::string &error, Query &&q) {
    if (!errors.empty()) {
      error = errors;
      return std::nullopt;
    }
    return std::move(q);
  }

  void fail(const Token &at, const std::string &message) {
    // One error per place: a broken predicate reports once.
    std::string line = errorAt(file, at, message);
    if (errors.find(line.substr(0, line.find(": error: "))) ==
        std::string::npos)
      errors += line;
  }

  static std::string describe(const Token &t) {
    if (t.kind == Token::End)
      return "the end of the query";
    return std::string("'") + (t.kind == Token::Parameter ? "$" : "") + t.text +
           "'";
  }

  void advance() {
    last = tok;
    tok = lexer.next();
  }

  bool keyword(const char *word) {
    if (tok.is(Token::Word, word)) {
      advance();
      return true;
    }
    return false;
  }
  bool punct(const char *p) {
    if (tok.is(Token::Punct, p)) {
      advance();
      return true;
    }
    return false;
  }

  const Field *fieldRef() {
    if (tok.kind != Token::Word) {
      fail(tok, "expected a field of '" + query->format->name + "', found " +
                    describe(tok));
      return nullptr;
    }
    const Field *f = query->format->field(tok.text);
    if (!f) {
      fail(tok, "format '" + query->format->name + "' has no field '" +
                    tok.text + "'");
      advance();
      return nullptr;
    }
    advance();
    if (std::find(query->reads.begin(), query->reads.end(), f) ==
        query->reads.end())
      query->reads.push_back(f);
    return f;
  }

  std::unique_ptr<Predicate> binary(Predicate::Kind kind,
                                    std::unique_ptr<Predicate> lhs,
                                    std::unique_ptr<Predicate> rhs) {
    auto p = std::make_unique<Predicate>();
    p->kind = kind;
    p->lhs = std::move(lhs);
    p->rhs = std::move(rhs);
    return p;
  }

  std::unique_ptr<Predicate> parseOr() {
    std::unique_ptr<Predicate> lhs = parseAnd();
    while (lhs && keyword("or"))
      lhs = binary(Predicate::Kind::Or, std::move(lhs), parseAnd());
    return lhs && (lhs->kind != Predicate::Kind::Or || lhs->rhs)
               ? std::move(lhs)
               : nullptr;
  }

  std::unique_ptr<Predicate> parseAnd() {
    std::unique_ptr<Predicate> lhs = parseNot();
    while (lhs && keyword("and"))
      lhs = binary(Predicate::Kind::And, std::move(lhs), parseNot());
    return lhs && (lhs->kind != Predicate::Kind::And || lhs->rhs)
               ? std::move(lhs)
               : nullptr;
  }

  std::unique_ptr<Predicate> parseNot() {
    if (keyword("not")) {
      std::unique_ptr<Predicate> inner = parseNot();
      return inner ? binary(Predicate::Kind::Not, std::move(inner), nullptr)
                   : nullptr;
    }
    if (punct("(")) {
      std::unique_ptr<Predicate> inner = parseOr();
      if (!inner)
        return nullptr;
      if (!punct(")")) {
        fail(tok, "expected ')', found " + describe(tok));
        return nullptr;
      }
      return inner;
    }
    Token fieldTok = tok;
    const Field *f = fieldRef();
    if (!f)
      return nullptr;
    if (!f->isInteger()) {
      fail(fieldTok, "field '" + f->name +
                         "' is a bytes field; a select compares u8, u16 "
                         "and u32 fields");
      return nullptr;
    }
    auto p = std::make_unique<Predicate>();
    p->field = f->name;
    static const std::pair<const char *, Predicate::Op> ops[] = {
        {"==", Predicate::Op::Eq}, {"!=", Predicate::Op::Ne},
        {"<", Predicate::Op::Lt},  {"<=", Predicate::Op::Le},
        {">", Predicate::Op::Gt},  {">=", Predicate::Op::Ge}};
    bool found = false;
    for (auto [spelling, op] : ops)
      if (tok.is(Token::Punct, spelling)) {
        p->op = op;
        found = true;
      }
    if (!found) {
      fail(tok, "expected a comparison (== != < <= > >=) after field '" +
                    f->name + "', found " + describe(tok));
      return nullptr;
    }
    advance();
    if (tok.kind == Token::Number) {
      if (tok.bad) {
        fail(tok, "'" + tok.text + "' is not a 32-bit unsigned number");
        return nullptr;
      }
      p->constant = tok.number;
    } else if (tok.kind == Token::Parameter && !tok.text.empty()) {
      p->parameter = tok.text;
      auto &params = query->parameters;
      if (std::find(params.begin(), params.end(), p->parameter) == params.end())
        params.push_back(p->parameter);
    } else {
      fail(tok, "expected a number or a $parameter, found " + describe(tok));
      return nullptr;
    }
    advance();
    return p;
  }
};

/// Writes the handler's NetIL.
class Emitter {
public:
  Emitter(const Query &q, const HandlerOptions &o) : q(q), o(o) {}

  bool emit(std::string &netil, std::string &error) {
    for (const std::string &p : q.parameters)
      if (!o.parameters.count(p)) {
        error = "parameter $" + p + " has no value";
        return false;
      }
    Format out = projectedFormat(q, projectId());
    if (!q.project.empty() && out.size - headerBytes > maxProjectBytes) {
      error = "the projection is " + std::to_string(out.size - headerBytes) +
              " bytes; a handler projects at most " +
              std::to_string(maxProjectBytes);
      return false;
    }
    std::string firstLine = q.text.substr(0, q.text.find('\n'));
    os << "; C-CORE handler (" << (o.specialize ? "specialized" : "generic")
       << ") generated from: " << firstLine << "\n"
       << "segment .ports\n  push_input in\n  push_output out\nends\n\n"
       << "segment .metadata\n  .netpe_name " << o.name << "\n";
    std::vector<uint8_t> data = genericDataMemory(q, o);
    if (!o.specialize)
      os << "  .datamem_size " << data.size() << "\n";
    os << "ends\n\n";
    if (!o.specialize) {
      os << "segment .init\n";
      for (size_t a = 0; a < data.size(); a += 4) {
        uint32_t w = uint32_t(data[a]) << 24 | uint32_t(data[a + 1]) << 16 |
                     uint32_t(data[a + 2]) << 8 | data[a + 3];
        os << "  push " << w << "\n  push " << a << "\n  mstore.32\n";
      }
      os << "  ret\nends\n\n";
    }
    os << "segment .push\n  pop\n"
       << "  pbl                 ; shorter than the format: reject\n";
    word(uint32_t(q.reads.size()) * 4, q.format->size);
    os << "  jcmp.l reject\n  push " << formatOffset << "\n  upload.16\n";
    word(uint32_t(q.reads.size()) * 4 + 4, q.format->id);
    os << "  jcmp.neq reject\n";
    if (q.select) {
      condition(*q.select, "pass", "reject");
      os << "pass:\n";
    }
    if (!q.project.empty())
      project(out);
    os << "  pkt.send out\nreject:\n  ret\nends\n";
    netil = os.str();
    return true;
  }

private:
  const Query &q;
  const HandlerOptions &o;
  std::ostringstream os;
  unsigned labels = 0;

  uint16_t projectId() const {
    return o.projectId ? o.projectId : uint16_t(q.format->id | 0x8000);
  }

  /// Pushes a value the generic form keeps at data memory `address`.
  void word(uint32_t address, uint32_t value) {
    if (o.specialize)
      os << "  push " << value << "\n";
    else
      os << "  push " << address << "\n  umload.32\n";
  }

  /// Pushes the offset of byte `extra` of field `f`.
  void fieldOffset(const Field &f, uint32_t extra) {
    if (o.specialize) {
      os << "  push " << f.offset + extra << "\n";
      return;
    }
    size_t index =
        std::find(q.reads.begin(), q.reads.end(), &f) - q.reads.begin();
    word(uint32_t(index) * 4, f.offset);
    if (extra)
      os << "  push " << extra << "\n  add\n";
  }

  static const char *loadFor(uint32_t size) {
    return size == 4 ? "spload.32" : size == 2 ? "upload.16" : "upload.8";
  }

  void load(const Field &f, uint32_t offset, uint32_t size) {
    fieldOffset(f, offset);
    os << "  " << loadFor(size) << "\n";
  }

  void condition(const Predicate &p, const std::string &onTrue,
                 const std::string &onFalse) {
    switch (p.kind) {
    case Predicate::Kind::Not:
      condition(*p.lhs, onFalse, onTrue);
      return;
    case Predicate::Kind::And:
    case Predicate::Kind::Or: {
      std::string next = "c" + std::to_string(labels++);
      if (p.kind == Predicate::Kind::And)
        condition(*p.lhs, next, onFalse);
      else
        condition(*p.lhs, onTrue, next);
      os << next << ":\n";
      condition(*p.rhs, onTrue, onFalse);
      return;
    }
    case Predicate::Kind::Compare:
      break;
    }
    const Field &f = *q.format->field(p.field);
    load(f, 0, f.size);
    if (p.parameter.empty())
      os << "  push " << p.constant << "\n";
    else
      word(parameterAddress(q, p.parameter), o.parameters.at(p.parameter));
    static const char *jumps[] = {"jcmp.eq", "jcmp.neq", "jcmp.l",
                                  "jcmp.le", "jcmp.g",   "jcmp.ge"};
    os << "  " << jumps[static_cast<unsigned>(p.op)] << " " << onTrue
       << "\n  jump " << onFalse << "\n";
  }

  struct Chunk {
    const Field *field;
    uint32_t from, size, to;
  };

  void project(const Format &out) {
    // Every chunk of every projected field onto the stack, the stream id
    // first; then a new buffer and the chunks stored back, last first.
    std::vector<Chunk> chunks;
    for (const std::string &name : q.project) {
      const Field &f = *q.format->field(name);
      uint32_t to = out.field(name)->offset;
      for (uint32_t at = 0; at < f.size;) {
        uint32_t n = f.size - at >= 4 ? 4 : f.size - at >= 2 ? 2 : 1;
        chunks.push_back({&f, at, n, to + at});
        at += n;
      }
    }
    os << "  push " << streamOffset << "\n  spload.32\n";
    for (const Chunk &c : chunks)
      load(*c.field, c.from, c.size);
    os << "  push " << out.size << "\n  exbuf.create\n";
    for (auto c = chunks.rbegin(); c != chunks.rend(); ++c)
      os << "  push " << c->to << "\n  pstore." << c->size * 8 << "\n";
    os << "  push " << streamOffset << "\n  pstore.32\n"
       << "  push " << (uint32_t(out.id) << 16 | out.size) << "\n  push "
       << formatOffset << "\n  pstore.32\n";
  }
};

} // namespace

std::optional<Query> parseQuery(const std::string &text,
                                const std::string &file, const Schema &schema,
                                std::string &error) {
  QueryParser parser(text, file, schema);
  return parser.parse(error);
}

Format projectedFormat(const Query &query, uint16_t id) {
  Format out;
  out.name = query.format->name + "_projected";
  out.id = id;
  uint32_t at = headerBytes;
  for (const std::string &name : query.project) {
    Field f = *query.format->field(name);
    f.offset = at;
    at += f.size;
    out.fields.push_back(f);
  }
  out.size = at;
  return out;
}

uint32_t parameterAddress(const Query &query, const std::string &parameter) {
  size_t index =
      std::find(query.parameters.begin(), query.parameters.end(), parameter) -
      query.parameters.begin();
  return uint32_t(query.reads.size() + 2 + index) * 4;
}

std::vector<uint8_t> genericDataMemory(const Query &query,
                                       const HandlerOptions &options) {
  std::vector<uint32_t> words;
  for (const Field *f : query.reads)
    words.push_back(f->offset);
  words.push_back(query.format->size);
  words.push_back(query.format->id);
  for (const std::string &p : query.parameters) {
    auto it = options.parameters.find(p);
    words.push_back(it == options.parameters.end() ? 0 : it->second);
  }
  std::vector<uint8_t> bytes;
  for (uint32_t w : words)
    for (int s = 24; s >= 0; s -= 8)
      bytes.push_back(uint8_t(w >> s));
  return bytes;
}

bool emitNetIL(const Query &query, const HandlerOptions &options,
               std::string &netil, std::string &error) {
  Emitter emitter(query, options);
  return emitter.emit(netil, error);
}

} // namespace netvm::ccore
