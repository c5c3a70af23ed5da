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
    if (keyword("join")) {
      query = &q;
      parseJoin(q);
      return finish(error, std::move(q));
    }
    if (!keyword("from")) {
      fail(tok, "a query starts with 'from FORMAT' or 'join', found " +
                    describe(tok));
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
    // `from FORMAT` alone relays every message of the format.
    if (tok.kind != Token::End && errors.empty())
      fail(tok, any ? "unexpected " + describe(tok) + " after the query"
                    : "expected 'select' or 'project', found " + describe(tok));
    return finish(error, std::move(q));
  }

private:
  /// join LEFT, RIGHT on LEFT.f == RIGHT.g within N project X.f, ...
  void parseJoin(Query &q) {
    auto j = std::make_unique<Join>();
    const Format *sides[2] = {nullptr, nullptr};
    for (int side = 0; side < 2; ++side) {
      if (side == 1 && !punct(",")) {
        fail(tok, "expected ',' and the second format of the join, found " +
                      describe(tok));
        return;
      }
      if (tok.kind != Token::Word) {
        fail(tok, "expected a format name, found " + describe(tok));
        return;
      }
      sides[side] = schema.format(tok.text);
      if (!sides[side]) {
        fail(tok, "the schema has no format '" + tok.text + "'");
        return;
      }
      if (side == 1 && sides[1] == sides[0]) {
        fail(tok, "a join needs two different formats");
        return;
      }
      advance();
    }
    q.format = sides[0];
    j->right = sides[1];
    // A qualified field of either side: its side (0, 1) and field.
    auto qualified = [&](int &side) -> const Field * {
      if (tok.kind != Token::Word) {
        fail(tok, "expected FORMAT.FIELD, found " + describe(tok));
        return nullptr;
      }
      side = tok.text == sides[0]->name   ? 0
             : tok.text == sides[1]->name ? 1
                                          : -1;
      if (side < 0) {
        fail(tok, "'" + tok.text + "' is not a format of the join");
        return nullptr;
      }
      advance();
      if (!punct(".") || tok.kind != Token::Word) {
        fail(tok, "expected '.' and a field of '" + sides[side]->name +
                      "', found " + describe(tok));
        return nullptr;
      }
      const Field *f = sides[side]->field(tok.text);
      if (!f) {
        fail(tok, "format '" + sides[side]->name + "' has no field '" +
                      tok.text + "'");
        return nullptr;
      }
      advance();
      return f;
    };
    if (!keyword("on")) {
      fail(tok, "expected 'on' and the join's key, found " + describe(tok));
      return;
    }
    int s1 = 0, s2 = 0;
    Token keyTok = tok;
    const Field *k1 = qualified(s1);
    if (!k1)
      return;
    if (!punct("==")) {
      fail(tok, "expected '==' between the keys, found " + describe(tok));
      return;
    }
    const Field *k2 = qualified(s2);
    if (!k2)
      return;
    if (s1 == s2) {
      fail(keyTok, "the key compares a field of each format");
      return;
    }
    if (!k1->isInteger() || !k2->isInteger()) {
      fail(keyTok, "a join's keys are u8, u16 or u32 fields");
      return;
    }
    j->leftKey = s1 == 0 ? k1 : k2;
    j->rightKey = s1 == 0 ? k2 : k1;
    if (!keyword("within")) {
      fail(tok, "expected 'within N' (messages kept per side), found " +
                    describe(tok));
      return;
    }
    if (tok.kind != Token::Number || tok.bad || tok.number == 0 ||
        tok.number > maxJoinWindow || (tok.number & (tok.number - 1))) {
      fail(tok, "the window is a power of two from 1 to " +
                    std::to_string(maxJoinWindow) + ", found " + describe(tok));
      return;
    }
    j->window = tok.number;
    advance();
    if (!keyword("project")) {
      fail(tok, "expected 'project' and the fields of the output, found " +
                    describe(tok));
      return;
    }
    do {
      int side = 0;
      const Field *f = qualified(side);
      if (!f)
        return;
      for (const Join::Item &item : j->fields)
        if (item.field == f) {
          fail(last, "field '" + sides[side]->name + "." + f->name +
                         "' is projected twice");
          return;
        }
      j->fields.push_back({side == 1, f});
    } while (punct(","));
    if (tok.kind != Token::End)
      fail(tok, "unexpected " + describe(tok) + " after the query");
    q.join = std::move(j);
  }

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
    else if (o.outStream)
      os << "  push " << o.outStream << "\n  push " << streamOffset
         << "\n  pstore.32\n";
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
    if (o.outStream)
      os << "  push " << o.outStream << "\n";
    else
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

/// Writes a join's NetIL (docs/ccore.md, "join"). Data memory: words 0
/// and 1 count the messages of each side, 2 is the scan's index, 3 the
/// address of the arriving message's slot, 4 its stream id, 5 where the
/// scan starts; then each side's window of slots, [key, chunk values...]
/// one word each.
class JoinEmitter {
public:
  JoinEmitter(const Query &q, const HandlerOptions &o)
      : q(q), j(*q.join), o(o) {}

  bool emit(std::string &netil, std::string &error) {
    uint16_t id = o.projectId ? o.projectId : uint16_t(q.format->id | 0x4000);
    Format out = projectedFormat(q, id);
    if (out.size - headerBytes > maxProjectBytes) {
      error = "the join's output is " + std::to_string(out.size - headerBytes) +
              " bytes of fields; a handler projects at most " +
              std::to_string(maxProjectBytes);
      return false;
    }
    for (int side = 0; side < 2; ++side)
      for (const Join::Item &item : j.fields)
        if (item.fromRight == bool(side))
          for (uint32_t at = 0; at < item.field->size;) {
            uint32_t n = item.field->size - at >= 4   ? 4
                         : item.field->size - at >= 2 ? 2
                                                      : 1;
            chunks[side].push_back({item.field, at, n, 0});
            at += n;
          }
    // Where each chunk goes in the output: in the projection's order.
    for (int side = 0; side < 2; ++side)
      for (Chunk &c : chunks[side]) {
        std::string name =
            (side ? j.right : q.format)->name + "." + c.field->name;
        c.to = out.field(name)->offset + c.from;
      }
    for (int side = 0; side < 2; ++side) {
      slotBytes[side] = 4 * uint32_t(1 + chunks[side].size());
      base[side] = side ? base[0] + j.window * slotBytes[0] : 32;
    }
    uint32_t dataSize = base[1] + j.window * slotBytes[1];
    std::string firstLine = q.text.substr(0, q.text.find('\n'));
    os << "; C-CORE join handler generated from: " << firstLine << "\n"
       << "segment .ports\n  push_input in\n  push_output out\nends\n\n"
       << "segment .metadata\n  .netpe_name " << o.name << "\n  .datamem_size "
       << dataSize << "\nends\n\n"
       << "segment .push\n  pop\n  pbl\n  push " << headerBytes
       << "\n  jcmp.l done\n"
       << "  push " << formatOffset << "\n  upload.16\n  push " << q.format->id
       << "\n  jcmp.eq side0\n"
       << "  push " << formatOffset << "\n  upload.16\n  push " << j.right->id
       << "\n  jcmp.eq side1\n  ret\n";
    for (int side = 0; side < 2; ++side)
      arrive(side, out);
    os << "done:\n  ret\nends\n";
    netil = os.str();
    return true;
  }

private:
  struct Chunk {
    const Field *field;
    uint32_t from, size, to;
  };
  const Query &q;
  const Join &j;
  const HandlerOptions &o;
  std::ostringstream os;
  std::vector<Chunk> chunks[2];
  uint32_t slotBytes[2] = {0, 0}, base[2] = {0, 0};
  static constexpr uint32_t countWord = 0, indexWord = 8, slotWord = 12,
                            streamWord = 16, startWord = 20;

  void loadWord(uint32_t address) {
    os << "  push " << address << "\n  umload.32\n";
  }
  void storeWord(uint32_t address) {
    os << "  push " << address << "\n  mstore.32\n";
  }
  static const char *loadFor(uint32_t size) {
    return size == 4 ? "spload.32" : size == 2 ? "upload.16" : "upload.8";
  }
  /// Pushes the address of slot ((start + index) mod window) of `side`.
  void scannedSlot(int side) {
    loadWord(startWord);
    loadWord(indexWord);
    os << "  add\n  push " << j.window - 1 << "\n  and\n  push "
       << slotBytes[side] << "\n  mul\n  push " << base[side] << "\n  add\n";
  }

  void arrive(int side, const Format &out) {
    const Format &format = side ? *j.right : *q.format;
    const Field &key = side ? *j.rightKey : *j.leftKey;
    std::string s = std::to_string(side);
    int other = 1 - side;
    os << "side" << s << ":\n  pbl\n  push " << format.size
       << "\n  jcmp.l done\n";
    // Its slot: (count mod window), then the count goes up.
    loadWord(countWord + 4 * side);
    os << "  push " << j.window - 1 << "\n  and\n  push " << slotBytes[side]
       << "\n  mul\n  push " << base[side] << "\n  add\n";
    storeWord(slotWord);
    loadWord(countWord + 4 * side);
    os << "  push 1\n  add\n";
    storeWord(countWord + 4 * side);
    os << "  push " << streamOffset << "\n  spload.32\n";
    storeWord(streamWord);
    // The key and the chunks into the slot.
    os << "  push " << key.offset << "\n  " << loadFor(key.size) << "\n";
    loadWord(slotWord);
    os << "  mstore.32\n";
    for (size_t c = 0; c < chunks[side].size(); ++c) {
      const Chunk &k = chunks[side][c];
      os << "  push " << k.field->offset + k.from << "\n  " << loadFor(k.size)
         << "\n";
      loadWord(slotWord);
      os << "  push " << 4 * (c + 1) << "\n  add\n  mstore.32\n";
    }
    // The other side's window, oldest first: it starts at its count when
    // full, at 0 before.
    loadWord(countWord + 4 * other);
    os << "  push " << j.window << "\n  jcmp.l fresh" << s << "\n";
    loadWord(countWord + 4 * other);
    storeWord(startWord);
    os << "  jump scan" << s << "\nfresh" << s << ":\n  push 0\n";
    storeWord(startWord);
    os << "scan" << s << ":\n  push 0\n";
    storeWord(indexWord);
    os << "loop" << s << ":\n";
    loadWord(indexWord);
    os << "  push " << j.window << "\n  jcmp.ge done\n";
    loadWord(indexWord);
    loadWord(countWord + 4 * other);
    os << "  jcmp.ge done\n";
    scannedSlot(other);
    os << "  umload.32\n";
    loadWord(slotWord);
    os << "  umload.32\n  jcmp.neq next" << s << "\n";
    // A pair: the output from the two slots.
    os << "  push " << out.size << "\n  exbuf.create\n";
    for (int from = 0; from < 2; ++from)
      for (size_t c = 0; c < chunks[from].size(); ++c) {
        const Chunk &k = chunks[from][c];
        if (from == side)
          loadWord(slotWord);
        else
          scannedSlot(from);
        os << "  push " << 4 * (c + 1) << "\n  add\n  umload.32\n  push "
           << k.to << "\n  pstore." << k.size * 8 << "\n";
      }
    loadWord(streamWord);
    os << "  push " << streamOffset << "\n  pstore.32\n  push "
       << (uint32_t(out.id) << 16 | out.size) << "\n  push " << formatOffset
       << "\n  pstore.32\n  pkt.senddup out\n";
    os << "next" << s << ":\n";
    loadWord(indexWord);
    os << "  push 1\n  add\n";
    storeWord(indexWord);
    os << "  jump loop" << s << "\n";
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
  if (query.join) {
    out.name = query.format->name + "_" + query.join->right->name;
    for (const Join::Item &item : query.join->fields) {
      Field f = *item.field;
      f.name = (item.fromRight ? query.join->right : query.format)->name + "." +
               f.name;
      f.offset = at;
      at += f.size;
      out.fields.push_back(f);
    }
    out.size = at;
    return out;
  }
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
  if (query.join) {
    JoinEmitter emitter(query, options);
    return emitter.emit(netil, error);
  }
  Emitter emitter(query, options);
  return emitter.emit(netil, error);
}

bool emitMulticast(const Schema &schema,
                   const std::vector<Subscriber> &subscribers,
                   const HandlerOptions &options, HandlerApp &app,
                   std::vector<Query> &queries, std::string &error) {
  if (subscribers.empty()) {
    error = "a multicast needs at least one subscriber";
    return false;
  }
  app = HandlerApp();
  app.name = options.name;
  queries.clear();
  std::ostringstream nvapp;
  nvapp << "# C-CORE multicast: one message to " << subscribers.size()
        << " subscribers\napplication " << options.name
        << "\nsource in\nsink out\n";
  std::ostringstream edges;
  for (size_t i = 0; i < subscribers.size(); ++i) {
    const Subscriber &s = subscribers[i];
    std::string where = "<subscriber " + std::to_string(i + 1) + ">";
    std::optional<Query> q = parseQuery(s.query, where, schema, error);
    if (!q)
      return false;
    HandlerOptions o = options;
    o.name = options.name + "_" + std::to_string(i + 1);
    o.outStream = s.stream;
    std::string netil;
    if (!emitNetIL(*q, o, netil, error)) {
      error = where + ": " + error;
      return false;
    }
    app.files.emplace_back(o.name + ".netil", std::move(netil));
    nvapp << "pe " << o.name << " = \"" << o.name << ".netil\"\n";
    edges << "in -> " << o.name << ".in\n";
    queries.push_back(std::move(*q));
  }
  for (size_t i = 0; i < subscribers.size(); ++i)
    edges << options.name << "_" << i + 1 << ".out -> out\n";
  nvapp << "\n" << edges.str();
  app.nvapp = nvapp.str();
  return true;
}

std::vector<std::string> splitQueries(const std::string &text) {
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    size_t bar = text.find('|', at);
    std::string part =
        text.substr(at, bar == std::string::npos ? bar : bar - at);
    size_t b = part.find_first_not_of(" \t\r\n"),
           e = part.find_last_not_of(" \t\r\n");
    out.push_back(b == std::string::npos ? "" : part.substr(b, e - b + 1));
    if (bar == std::string::npos)
      return out;
    at = bar + 1;
  }
}

bool emitPipeline(const Schema &schema, const std::vector<std::string> &texts,
                  const HandlerOptions &options, bool pipeline, HandlerApp &app,
                  std::vector<Query> &queries, std::string &error) {
  if (texts.empty()) {
    error = "a pipeline needs at least one handler";
    return false;
  }
  app = HandlerApp();
  app.name = options.name;
  queries.clear();
  std::ostringstream nvapp, edges;
  nvapp << "# C-CORE pipeline of " << texts.size() << " handlers\napplication "
        << options.name << "\nsource in\nsink out\n";
  std::string from = "in";
  uint32_t sends = 0; // the format id the previous handler sends
  for (size_t i = 0; i < texts.size(); ++i) {
    std::string where = "<me-query " + std::to_string(i + 1) + ">";
    std::optional<Query> q = parseQuery(texts[i], where, schema, error);
    if (!q)
      return false;
    if (q->join) {
      error = where + ": a join reads two streams; a pipeline of handlers "
                      "passes one on";
      return false;
    }
    if (i > 0 && q->format->id != sends) {
      const Format *sent = schema.formatById(uint16_t(sends));
      error = where + ": reads format '" + q->format->name + "' (id " +
              std::to_string(q->format->id) + "), but handler " +
              std::to_string(i) + " sends format id " + std::to_string(sends) +
              (sent ? " ('" + sent->name + "')" : " (not in the schema)");
      return false;
    }
    HandlerOptions o = options;
    o.name = options.name + "_" + std::to_string(i + 1);
    // Only the last handler may rename its stream's output format by
    // option; the others keep the schema's ids the next one reads.
    if (i + 1 < texts.size())
      o.projectId = 0;
    std::string netil;
    if (!emitNetIL(*q, o, netil, error)) {
      error = where + ": " + error;
      return false;
    }
    sends =
        q->project.empty()
            ? q->format->id
            : (o.projectId ? o.projectId : uint32_t(q->format->id | 0x8000));
    app.files.emplace_back(o.name + ".netil", std::move(netil));
    nvapp << "pe " << o.name << " = \"" << o.name << ".netil\"\n";
    edges << from << " -> " << o.name << ".in\n";
    from = o.name + ".out";
    if (pipeline)
      app.stages.push_back(o.name);
    queries.push_back(std::move(*q));
  }
  edges << from << " -> out\n";
  nvapp << "\n" << edges.str();
  app.nvapp = nvapp.str();
  return true;
}

bool emitHandlerApp(const Schema &schema, const std::string *query,
                    const std::vector<Subscriber> &subscribers,
                    const HandlerOptions &options, HandlerApp &app,
                    std::vector<Query> &queries, std::string &error) {
  if (!query)
    return emitMulticast(schema, subscribers, options, app, queries, error);
  queries.clear();
  std::optional<Query> q = parseQuery(*query, "<query>", schema, error);
  std::string netil;
  if (!q || !emitNetIL(*q, options, netil, error))
    return false;
  app = HandlerApp();
  app.name = options.name;
  app.files = {{options.name + ".netil", std::move(netil)}};
  queries.push_back(std::move(*q));
  return true;
}

} // namespace netvm::ccore
