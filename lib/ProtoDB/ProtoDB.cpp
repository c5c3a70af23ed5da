//===- ProtoDB.cpp - NetPDL protocol database loader ----------------------===//
//
// Reads NetPDL with pugixml into the Node/Expr trees of ProtoDB.h and checks
// them: unknown elements and attributes of the supported subset, bad
// numbers, expressions that do not parse, names of fields, blocks and
// protocols that do not exist, loopctrl outside a loop, block inclusion
// cycles. Every error points at the element or attribute that causes it.
//
//===----------------------------------------------------------------------===//

#include "netvm/ProtoDB/ProtoDB.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"

#include <pugixml.hpp>

#include <algorithm>
#include <deque>
#include <functional>
#include <tuple>

using namespace netvm::protodb;
using llvm::StringRef;

std::string SourceLoc::str() const {
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

const FieldInfo *Protocol::field(StringRef name) const {
  for (const FieldInfo &f : fields)
    if (f.name == name)
      return &f;
  return nullptr;
}

const Protocol *Database::lookup(StringRef name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : it->second;
}

std::vector<std::string> Database::protocolNames() const {
  std::vector<std::string> names;
  for (const auto &p : protocols_)
    names.push_back(p->name);
  return names;
}

std::vector<std::string>
Database::nearest(StringRef name, llvm::ArrayRef<std::string> candidates) {
  // (distance, position, name): sorted, the nearest first and equally near
  // ones in the order given. (Not std::stable_sort: libstdc++ 12's uses
  // the deprecated get_temporary_buffer, which clang warns about.)
  std::vector<std::tuple<unsigned, size_t, std::string>> scored;
  for (const std::string &c : candidates) {
    unsigned d = name.edit_distance(c, /*AllowReplacements=*/true);
    // Close enough to be a typo, or one name a prefix of the other.
    unsigned limit = std::max<unsigned>(2, name.size() / 3);
    if (d <= limit || (name.size() >= 2 && StringRef(c).starts_with(name)))
      scored.emplace_back(d, scored.size(), c);
  }
  llvm::sort(scored);
  std::vector<std::string> out;
  for (auto &[distance, position, candidate] : scored) {
    if (out.size() == 3)
      break;
    if (!llvm::is_contained(out, candidate))
      out.push_back(candidate);
  }
  return out;
}

std::string netvm::protodb::didYouMean(llvm::ArrayRef<std::string> names) {
  if (names.empty())
    return "";
  std::string out = "did you mean ";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i)
      out += i + 1 == names.size() ? " or " : ", ";
    out += "'" + names[i] + "'";
  }
  return out + "?";
}

namespace netvm::protodb {

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

namespace {

class ExprParser {
public:
  ExprParser(StringRef text, SourceLoc at) : text(text), at(std::move(at)) {}

  std::unique_ptr<Expr> parse() {
    auto e = logical();
    skipSpace();
    if (pos < text.size())
      fail("unexpected '" + text.substr(pos, 12).str() + "' in expression");
    return e;
  }

private:
  StringRef text;
  SourceLoc at;
  size_t pos = 0;

  [[noreturn]] void fail(const std::string &message) {
    SourceLoc loc = at;
    loc.column += pos;
    throw LoadError{loc, message};
  }
  SourceLoc here() const {
    SourceLoc loc = at;
    loc.column += pos;
    return loc;
  }
  void skipSpace() {
    while (pos < text.size() && llvm::isSpace(text[pos]))
      ++pos;
  }
  static bool isWordChar(char c) { return llvm::isAlnum(c) || c == '_'; }
  // A keyword operator: a word that is not followed by another word char.
  bool acceptWord(StringRef word) {
    skipSpace();
    if (!text.substr(pos).starts_with(word))
      return false;
    size_t end = pos + word.size();
    if (end < text.size() && isWordChar(text[end]))
      return false;
    pos = end;
    return true;
  }
  bool accept(StringRef symbol) {
    skipSpace();
    if (!text.substr(pos).starts_with(symbol))
      return false;
    pos += symbol.size();
    return true;
  }
  void expect(StringRef symbol) {
    if (!accept(symbol))
      fail("expected '" + symbol.str() + "'");
  }

  static std::unique_ptr<Expr> binary(Expr::Op op, std::unique_ptr<Expr> l,
                                      std::unique_ptr<Expr> r, SourceLoc loc) {
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Binary;
    e->op = op;
    e->lhs = std::move(l);
    e->rhs = std::move(r);
    e->loc = std::move(loc);
    return e;
  }

  // NetBee's precedence, loosest first: and/or; comparisons; bitwand/bitwor;
  // + -; * div mod; then not and bitwnot (unary()). Binary operators
  // associate to the left.
  struct Operator {
    const char *spelling;
    bool word; // a keyword, not followed by a name character
    Expr::Op op;
  };
  static llvm::ArrayRef<Operator> level(unsigned n) {
    static const Operator logical[] = {{"and", true, Expr::And},
                                       {"or", true, Expr::Or}};
    static const Operator comparison[] = {
        {"==", false, Expr::Eq}, {"!=", false, Expr::Ne},
        {"lt", true, Expr::Lt},  {"le", true, Expr::Le},
        {"gt", true, Expr::Gt},  {"ge", true, Expr::Ge}};
    static const Operator bitwise[] = {{"bitwand", true, Expr::BitAnd},
                                       {"bitwor", true, Expr::BitOr}};
    static const Operator additive[] = {{"+", false, Expr::Add},
                                        {"-", false, Expr::Sub}};
    static const Operator multiplicative[] = {{"*", false, Expr::Mul},
                                              {"div", true, Expr::Div},
                                              {"mod", true, Expr::Mod}};
    static const llvm::ArrayRef<Operator> levels[] = {
        logical, comparison, bitwise, additive, multiplicative};
    return n < std::size(levels) ? levels[n] : llvm::ArrayRef<Operator>();
  }
  std::unique_ptr<Expr> logical() { return binaryLevel(0); }
  std::unique_ptr<Expr> binaryLevel(unsigned n) {
    llvm::ArrayRef<Operator> ops = level(n);
    if (ops.empty())
      return unary();
    auto e = binaryLevel(n + 1);
    for (;;) {
      SourceLoc loc = here();
      const Operator *found = nullptr;
      for (const Operator &o : ops)
        if (o.word ? acceptWord(o.spelling) : accept(o.spelling)) {
          found = &o;
          break;
        }
      if (!found)
        return e;
      e = binary(found->op, std::move(e), binaryLevel(n + 1), loc);
    }
  }
  std::unique_ptr<Expr> unary() {
    SourceLoc loc = here();
    Expr::Op op;
    if (acceptWord("not"))
      op = Expr::Not;
    else if (acceptWord("bitwnot"))
      op = Expr::BitNot;
    else
      return primary();
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Unary;
    e->op = op;
    e->lhs = unary();
    e->loc = loc;
    return e;
  }
  std::unique_ptr<Expr> primary() {
    skipSpace();
    auto e = std::make_unique<Expr>();
    e->loc = here();
    if (pos >= text.size())
      fail("expression ends too early");
    if (accept("(")) {
      e = logical();
      expect(")");
      return e;
    }
    char c = text[pos];
    if (llvm::isDigit(c)) {
      size_t start = pos;
      while (pos < text.size() && isWordChar(text[pos]))
        ++pos;
      StringRef digits = text.slice(start, pos);
      unsigned radix = 10;
      if (digits.starts_with_insensitive("0x")) {
        radix = 16;
        digits = digits.drop_front(2);
      } else if (digits.starts_with_insensitive("0b")) {
        radix = 2;
        digits = digits.drop_front(2);
      }
      uint64_t v;
      if (digits.getAsInteger(radix, v) || v > UINT32_MAX) {
        pos = start;
        fail("bad number '" +
             text.slice(start, start + 2 + digits.size()).str() + "'");
      }
      e->kind = Expr::Number;
      e->value = v;
      return e;
    }
    if (c == '$') {
      size_t start = pos++;
      while (pos < text.size() && isWordChar(text[pos]))
        ++pos;
      StringRef var = text.slice(start, pos);
      if (var == "$currentoffset")
        e->kind = Expr::CurrentOffset;
      else if (var == "$currentprotooffset")
        e->kind = Expr::ProtoOffset;
      else if (var == "$packetlength" || var == "$framelength")
        e->kind = Expr::PacketLength;
      else if (var == "$packet") {
        pos = start;
        fail("$packet is a buffer: read it with buf2int($packet[offset:size])");
      } else {
        pos = start;
        fail("unknown variable '" + var.str() +
             "' (netvm knows $currentoffset, $currentprotooffset, "
             "$packetlength and $framelength)");
      }
      return e;
    }
    if (llvm::isAlpha(c) || c == '_') {
      size_t start = pos;
      while (pos < text.size() && isWordChar(text[pos]))
        ++pos;
      StringRef word = text.slice(start, pos);
      if (word != "buf2int") {
        pos = start;
        if (word == "int2buf" || word == "ascii2int" || word == "hasstring" ||
            word == "extractstring" || word == "ispresent" ||
            word == "changebyteorder" || word == "checklookuptable" ||
            word == "updatelookuptable" || word == "checkasn1type" ||
            word == "debug")
          fail("the NetPDL function '" + word.str() +
               "' is not supported by netvm");
        fail("'" + word.str() +
             "' is not an expression: the value of a field is "
             "buf2int(" +
             word.str() + ")");
      }
      expect("(");
      skipSpace();
      if (accept("$packet")) {
        expect("[");
        e->kind = Expr::PacketSlice;
        e->lhs = logical();
        expect(":");
        skipSpace();
        size_t sizeAt = pos;
        auto size = logical();
        if (size->kind != Expr::Number || size->value < 1 || size->value > 4) {
          pos = sizeAt;
          fail("the size of a $packet slice read by buf2int must be 1, 2, 3 "
               "or 4");
        }
        e->value = size->value;
        expect("]");
      } else {
        size_t nameAt = pos;
        while (pos < text.size() && isWordChar(text[pos]))
          ++pos;
        if (pos == nameAt)
          fail("expected a field name or $packet[offset:size]");
        e->kind = Expr::Field;
        e->name = text.slice(nameAt, pos).str();
        e->loc = at;
        e->loc.column += nameAt;
      }
      expect(")");
      return e;
    }
    fail(std::string("unexpected '") + c + "' in expression");
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// The loader
//===----------------------------------------------------------------------===//

class Loader {
public:
  Loader(StringRef text, StringRef file) : text(text), file(file.str()) {
    lineStarts.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n')
        lineStarts.push_back(i + 1);
  }

  std::unique_ptr<Database> run() {
    pugi::xml_document doc;
    // Keep the text as it is (no EOL normalisation) so that offsets map
    // back to lines and columns.
    pugi::xml_parse_result parsed = doc.load_buffer(
        text.data(), text.size(), pugi::parse_default & ~pugi::parse_eol,
        pugi::encoding_utf8);
    if (!parsed)
      throw LoadError{locAt(parsed.offset),
                      std::string("malformed XML: ") + parsed.description()};
    pugi::xml_node root = doc.document_element();
    if (StringRef(root.name()) != "netpdl")
      throw LoadError{locOf(root), "the root element is <" +
                                       std::string(root.name()) +
                                       ">; a NetPDL database is <netpdl>"};
    db = std::make_unique<Database>();

    // Protocols first, so that <nextproto> can name any of them.
    for (pugi::xml_node p : root.children()) {
      if (p.type() != pugi::node_element)
        continue;
      StringRef tag = p.name();
      if (tag == "visualization")
        continue; // how to print packets: not netvm's business
      if (tag != "protocol")
        throw LoadError{locOf(p), "unexpected <" + tag.str() +
                                      "> in <netpdl> (expected <protocol>)"};
      auto proto = std::make_unique<Protocol>();
      proto->name = required(p, "name");
      if (proto->name.empty() || !llvm::isAlpha(proto->name[0]))
        throw LoadError{attrLoc(p, "name"),
                        "bad protocol name '" + proto->name + "'"};
      proto->longName = p.attribute("longname").as_string();
      proto->loc = locOf(p);
      proto->index = db->protocols_.size();
      if (pugi::xml_attribute layer = p.attribute("layer")) {
        int v;
        if (StringRef(layer.value()).trim().getAsInteger(0, v))
          throw LoadError{attrLoc(p, "layer"), "bad layer '" +
                                                   std::string(layer.value()) +
                                                   "' (an integer)"};
        proto->layer = v;
        explicitLayer.insert(proto.get());
      }
      if (!db->byName_.try_emplace(proto->name, proto.get()).second)
        throw LoadError{proto->loc, "protocol '" + proto->name +
                                        "' is defined twice (" + "first at " +
                                        db->lookup(proto->name)->loc.str() +
                                        ")"};
      xml.push_back(p);
      db->protocols_.push_back(std::move(proto));
    }
    db->start_ = db->lookup("startproto");
    if (!db->start_)
      throw LoadError{locOf(root), "the database has no 'startproto' "
                                   "protocol (where parsing begins)"};
    for (size_t i = 0; i < xml.size(); ++i)
      loadProtocol(*db->protocols_[i], xml[i]);
    if (!db->start_->format.empty())
      throw LoadError{db->start_->loc, "'startproto' has no header: it must "
                                       "not have a <format>"};
    if (db->start_->successors.empty())
      throw LoadError{db->start_->loc,
                      "'startproto' must lead to a protocol (<encapsulation> "
                      "with a <nextproto>)"};
    assignLayers();
    return std::move(db);
  }

private:
  StringRef text;
  std::string file;
  std::vector<size_t> lineStarts;
  std::unique_ptr<Database> db;
  std::vector<pugi::xml_node> xml;
  llvm::DenseSet<const Protocol *> explicitLayer;

  // Per protocol being loaded.
  Protocol *proto = nullptr;
  llvm::StringMap<pugi::xml_node> blockXml;
  llvm::StringSet<> fieldNames;

  SourceLoc locAt(size_t offset) const {
    auto it = std::upper_bound(lineStarts.begin(), lineStarts.end(), offset);
    size_t line = it - lineStarts.begin();
    return SourceLoc{file, unsigned(line),
                     unsigned(offset - lineStarts[line - 1] + 1)};
  }
  /// Where element `n` starts (its '<'; pugixml gives its name).
  SourceLoc locOf(pugi::xml_node n) const {
    ptrdiff_t off = n.offset_debug();
    if (off < 0)
      return locAt(0);
    if (off > 0 && size_t(off) <= text.size() && text[off - 1] == '<')
      --off;
    return locAt(size_t(off));
  }
  // Where the value of attribute `name` of `n` starts in the text (pugixml
  // keeps no offsets for attributes: look for it after the element's).
  SourceLoc attrLoc(pugi::xml_node n, StringRef name) const {
    ptrdiff_t off = n.offset_debug();
    if (off < 0)
      return locOf(n);
    size_t end = text.find('>', off);
    StringRef tag = text.slice(off, end == StringRef::npos ? text.size() : end);
    for (size_t p = tag.find(name); p != StringRef::npos;
         p = tag.find(name, p + 1)) {
      if (p == 0 || !llvm::isSpace(tag[p - 1]))
        continue;
      size_t q = p + name.size();
      while (q < tag.size() && llvm::isSpace(tag[q]))
        ++q;
      if (q >= tag.size() || tag[q] != '=')
        continue;
      ++q;
      while (q < tag.size() && llvm::isSpace(tag[q]))
        ++q;
      if (q < tag.size() && (tag[q] == '"' || tag[q] == '\''))
        ++q;
      return locAt(off + q);
    }
    return locOf(n);
  }

  std::string required(pugi::xml_node n, const char *attr) {
    pugi::xml_attribute a = n.attribute(attr);
    if (!a)
      throw LoadError{locOf(n), "<" + std::string(n.name()) +
                                    "> needs the attribute '" + attr + "'"};
    return a.value();
  }
  uint32_t number(pugi::xml_node n, const char *attr) {
    std::string v = required(n, attr);
    StringRef s = StringRef(v).trim();
    uint64_t x;
    bool bad;
    if (s.starts_with_insensitive("0b"))
      bad = s.drop_front(2).getAsInteger(2, x);
    else
      bad = s.getAsInteger(0, x); // decimal or 0x hex
    if (bad || x > UINT32_MAX)
      throw LoadError{attrLoc(n, attr),
                      "bad number '" + v + "' in " + attr + "=\"...\""};
    return uint32_t(x);
  }
  std::unique_ptr<Expr> expression(pugi::xml_node n, const char *attr) {
    std::string v = required(n, attr);
    SourceLoc at = attrLoc(n, attr);
    auto e = ExprParser(v, at).parse();
    checkFields(*e);
    return e;
  }
  void checkFields(const Expr &e) {
    if (e.kind == Expr::Field && !fieldNames.contains(e.name)) {
      std::vector<std::string> names;
      for (auto &f : fieldNames)
        names.push_back(f.getKey().str());
      std::sort(names.begin(), names.end());
      std::string hint = didYouMean(Database::nearest(e.name, names));
      throw LoadError{e.loc, "protocol '" + proto->name + "' has no field '" +
                                 e.name + "'" +
                                 (hint.empty() ? "" : "; " + hint)};
    }
    if (e.lhs)
      checkFields(*e.lhs);
    if (e.rhs)
      checkFields(*e.rhs);
  }

  // Every element name below <format> that declares a field name, for the
  // expression check (a field may be used before its declaration in the
  // text: e.g. an <if> that tests a field of an included block).
  void collectFieldNames(pugi::xml_node n) {
    for (pugi::xml_node c : n.children()) {
      if (c.type() != pugi::node_element)
        continue;
      if (StringRef(c.name()) == "field" && c.attribute("name"))
        fieldNames.insert(c.attribute("name").value());
      collectFieldNames(c);
    }
  }

  void loadProtocol(Protocol &p, pugi::xml_node x) {
    proto = &p;
    blockXml.clear();
    fieldNames.clear();
    pugi::xml_node format, encap;
    for (pugi::xml_node c : x.children()) {
      if (c.type() != pugi::node_element)
        continue;
      StringRef tag = c.name();
      if (tag == "format" || tag == "encapsulation") {
        pugi::xml_node &slot = tag == "format" ? format : encap;
        if (slot)
          throw LoadError{locOf(c), "protocol '" + p.name + "' has two <" +
                                        tag.str() + "> elements"};
        slot = c;
      } else if (tag == "execute-code" || tag == "visualization") {
        continue; // decoder actions and printing: no effect on filtering
      } else {
        throw LoadError{locOf(c), "unexpected <" + tag.str() +
                                      "> in <protocol> (netvm reads "
                                      "<format> and <encapsulation>)"};
      }
    }
    if (format) {
      collectFieldNames(format);
      pugi::xml_node fields;
      for (pugi::xml_node c : format.children()) {
        if (c.type() != pugi::node_element)
          continue;
        StringRef tag = c.name();
        if (tag == "fields") {
          if (fields)
            throw LoadError{locOf(c), "<format> has two <fields>"};
          fields = c;
        } else if (tag == "block") {
          std::string name = required(c, "name");
          if (!blockXml.try_emplace(name, c).second)
            throw LoadError{locOf(c), "block '" + name +
                                          "' is defined twice in protocol '" +
                                          p.name + "'"};
        } else {
          throw LoadError{locOf(c), "unexpected <" + tag.str() +
                                        "> in <format> (expected <fields> "
                                        "or <block>)"};
        }
      }
      if (!fields)
        throw LoadError{locOf(format), "<format> has no <fields>"};
      for (auto &b : blockXml) {
        Node block;
        block.kind = Node::Block;
        block.name = b.getKey().str();
        block.longName = b.getValue().attribute("longname").as_string();
        block.loc = locOf(b.getValue());
        // Whether a <loopctrl> in a block is inside a loop depends on where
        // the block is included: checkInclusions decides.
        block.children = sequence(b.getValue(), /*inLoop=*/true, false);
        p.blocks.try_emplace(block.name, std::move(block));
      }
      p.format = sequence(fields, false, false);
      checkInclusions(p);
      llvm::StringSet<> seen, visiting;
      collectFieldInfo(p, p.format, seen, visiting);
    }
    if (encap) {
      p.encapsulation = sequence(encap, false, /*encapsulation=*/true);
      collectSuccessors(p, p.encapsulation);
    }
  }

  // A block may include other blocks but not itself, directly or not; a
  // <loopctrl> it contains must end up inside a <loop>.
  void checkInclusions(Protocol &p) {
    llvm::StringSet<> including;
    std::function<void(const std::vector<Node> &, bool)> walk =
        [&](const std::vector<Node> &nodes, bool inLoop) {
          for (const Node &n : nodes) {
            if (n.kind == Node::LoopCtrl && !inLoop)
              throw LoadError{n.loc, "<loopctrl> outside a <loop> (in a "
                                     "block included outside any loop)"};
            if (n.kind == Node::IncludeBlock) {
              if (!including.insert(n.name).second)
                throw LoadError{n.loc, "block '" + n.name +
                                           "' includes itself (directly or "
                                           "through other blocks)"};
              walk(p.blocks.find(n.name)->second.children, inLoop);
              including.erase(n.name);
            }
            bool inner = inLoop || n.kind == Node::Loop;
            walk(n.children, inner);
            walk(n.otherwise, inLoop);
            for (const Node::Case &c : n.cases)
              walk(c.body, inLoop);
          }
        };
    walk(p.format, false);
  }

  void collectFieldInfo(Protocol &p, const std::vector<Node> &nodes,
                        llvm::StringSet<> &seen, llvm::StringSet<> &visiting) {
    for (const Node &n : nodes) {
      if (n.isField() && !n.name.empty() && seen.insert(n.name).second) {
        FieldInfo f;
        f.name = n.name;
        f.longName = n.longName;
        f.kind = n.kind;
        f.size = n.kind == Node::VariableField || n.kind == Node::PaddingField
                     ? 0
                     : n.size;
        f.mask = n.mask;
        p.fields.push_back(std::move(f));
      }
      if (n.kind == Node::IncludeBlock) {
        if (visiting.insert(n.name).second) {
          collectFieldInfo(p, p.blocks.find(n.name)->second.children, seen,
                           visiting);
          visiting.erase(n.name);
        }
        continue;
      }
      collectFieldInfo(p, n.children, seen, visiting);
      collectFieldInfo(p, n.otherwise, seen, visiting);
      for (const Node::Case &c : n.cases)
        collectFieldInfo(p, c.body, seen, visiting);
    }
  }

  void collectSuccessors(Protocol &p, const std::vector<Node> &nodes) {
    for (const Node &n : nodes) {
      if (n.kind == Node::NextProto &&
          !llvm::is_contained(p.successors, n.target))
        p.successors.push_back(n.target);
      collectSuccessors(p, n.children);
      collectSuccessors(p, n.otherwise);
      for (const Node::Case &c : n.cases)
        collectSuccessors(p, c.body);
    }
  }

  std::vector<Node> sequence(pugi::xml_node parent, bool inLoop,
                             bool encapsulation) {
    std::vector<Node> out;
    for (pugi::xml_node c : parent.children()) {
      if (c.type() != pugi::node_element)
        continue;
      out.push_back(element(c, inLoop, encapsulation));
    }
    // NetBee's rule for bit fields: a run of bit fields shares its bytes;
    // the offset moves on after one whose mask covers the lowest bit, or
    // after the last of the run.
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].kind != Node::BitField)
        continue;
      bool nextIsBit = i + 1 < out.size() && out[i + 1].kind == Node::BitField;
      out[i].last = !nextIsBit || (out[i].mask & 1);
    }
    return out;
  }

  Node element(pugi::xml_node x, bool inLoop, bool encapsulation) {
    Node n;
    n.loc = locOf(x);
    StringRef tag = x.name();
    auto fieldsOnly = [&] {
      if (encapsulation)
        throw LoadError{n.loc,
                        "<" + tag.str() + "> cannot appear in <encapsulation>"};
    };
    if (tag == "field") {
      fieldsOnly();
      n.name = required(x, "name");
      n.longName = x.attribute("longname").as_string();
      std::string type = required(x, "type");
      if (type == "fixed") {
        n.kind = Node::FixedField;
        n.size = number(x, "size");
        if (n.size == 0)
          throw LoadError{attrLoc(x, "size"), "a fixed field has a size of "
                                              "at least one byte"};
        // Bit sub-fields of these same bytes.
        for (pugi::xml_node c : x.children()) {
          if (c.type() != pugi::node_element)
            continue;
          Node sub = element(c, inLoop, false);
          if (sub.kind != Node::BitField)
            throw LoadError{sub.loc, "a fixed field can only contain bit "
                                     "fields (its sub-fields)"};
          if (sub.size != n.size)
            throw LoadError{sub.loc, "bit field '" + sub.name + "' has size " +
                                         std::to_string(sub.size) +
                                         " but its fixed field '" + n.name +
                                         "' has size " +
                                         std::to_string(n.size)};
          sub.last = false;
          n.children.push_back(std::move(sub));
        }
      } else if (type == "bit") {
        n.kind = Node::BitField;
        n.size = number(x, "size");
        if (n.size != 1 && n.size != 2 && n.size != 4)
          throw LoadError{attrLoc(x, "size"),
                          "a bit field spans 1, 2 or 4 bytes"};
        n.mask = number(x, "mask");
        uint64_t limit =
            n.size == 4 ? 0xffffffffull : (1ull << (8 * n.size)) - 1;
        if (n.mask == 0 || n.mask > limit)
          throw LoadError{attrLoc(x, "mask"),
                          "mask " + std::string(x.attribute("mask").value()) +
                              " does not fit in " + std::to_string(n.size) +
                              " byte(s)"};
      } else if (type == "variable") {
        n.kind = Node::VariableField;
        n.expr = expression(x, "expr");
      } else if (type == "padding") {
        n.kind = Node::PaddingField;
        n.size = number(x, "align");
        if (n.size == 0)
          throw LoadError{attrLoc(x, "align"), "padding aligns to at least "
                                               "one byte"};
      } else {
        throw LoadError{attrLoc(x, "type"),
                        "field type '" + type +
                            "' is not supported by netvm (supported: fixed, "
                            "bit, variable, padding)"};
      }
      if (n.kind != Node::FixedField)
        for (pugi::xml_node c : x.children())
          if (c.type() == pugi::node_element)
            throw LoadError{locOf(c), "only fixed fields have sub-fields"};
      return n;
    }
    if (tag == "block") {
      fieldsOnly();
      n.kind = Node::Block;
      n.name = x.attribute("name").as_string();
      n.longName = x.attribute("longname").as_string();
      n.children = sequence(x, inLoop, false);
      return n;
    }
    if (tag == "includeblk") {
      fieldsOnly();
      n.kind = Node::IncludeBlock;
      n.name = required(x, "name");
      if (!blockXml.count(n.name)) {
        std::vector<std::string> names;
        for (auto &b : blockXml)
          names.push_back(b.getKey().str());
        std::string hint = didYouMean(Database::nearest(n.name, names));
        throw LoadError{attrLoc(x, "name"),
                        "protocol '" + proto->name + "' has no block '" +
                            n.name + "'" + (hint.empty() ? "" : "; " + hint)};
      }
      return n;
    }
    if (tag == "if") {
      n.kind = Node::If;
      n.expr = expression(x, "expr");
      bool sawTrue = false;
      for (pugi::xml_node c : x.children()) {
        if (c.type() != pugi::node_element)
          continue;
        StringRef ct = c.name();
        if (ct == "if-true" && !sawTrue) {
          sawTrue = true;
          n.children = sequence(c, inLoop, encapsulation);
        } else if (ct == "if-false") {
          n.otherwise = sequence(c, inLoop, encapsulation);
        } else {
          throw LoadError{locOf(c), "unexpected <" + ct.str() +
                                        "> in <if> (expected <if-true> and "
                                        "<if-false>)"};
        }
      }
      if (!sawTrue)
        throw LoadError{n.loc, "<if> without <if-true>"};
      return n;
    }
    if (tag == "switch") {
      n.kind = Node::Switch;
      n.expr = expression(x, "expr");
      for (pugi::xml_node c : x.children()) {
        if (c.type() != pugi::node_element)
          continue;
        StringRef ct = c.name();
        if (ct == "case") {
          Node::Case k;
          k.low = number(c, "value");
          k.high = c.attribute("maxvalue") ? number(c, "maxvalue") : k.low;
          if (k.high < k.low)
            throw LoadError{attrLoc(c, "maxvalue"), "maxvalue is below value"};
          k.body = sequence(c, inLoop, encapsulation);
          n.cases.push_back(std::move(k));
        } else if (ct == "default" && !n.hasDefault) {
          n.hasDefault = true;
          n.otherwise = sequence(c, inLoop, encapsulation);
        } else {
          throw LoadError{locOf(c), "unexpected <" + ct.str() +
                                        "> in <switch> (expected <case> and "
                                        "one <default>)"};
        }
      }
      return n;
    }
    if (tag == "loop") {
      fieldsOnly();
      n.kind = Node::Loop;
      std::string type = required(x, "type");
      if (type == "size")
        n.loopKind = Node::SizeLoop;
      else if (type == "t2r")
        n.loopKind = Node::TimesLoop;
      else if (type == "while")
        n.loopKind = Node::WhileLoop;
      else if (type == "do-while")
        n.loopKind = Node::DoWhileLoop;
      else
        throw LoadError{attrLoc(x, "type"),
                        "loop type '" + type +
                            "' is not one of size, t2r, while, do-while"};
      n.expr = expression(x, "expr");
      n.children = sequence(x, /*inLoop=*/true, false);
      return n;
    }
    if (tag == "loopctrl") {
      fieldsOnly();
      if (!inLoop)
        throw LoadError{n.loc, "<loopctrl> outside a <loop>"};
      n.kind = Node::LoopCtrl;
      std::string type = required(x, "type");
      if (type != "break" && type != "continue")
        throw LoadError{attrLoc(x, "type"),
                        "loopctrl type '" + type +
                            "' is not 'break' or 'continue'"};
      n.isBreak = type == "break";
      return n;
    }
    if (tag == "nextproto") {
      if (!encapsulation)
        throw LoadError{n.loc, "<nextproto> belongs in <encapsulation>"};
      n.kind = Node::NextProto;
      std::string target = required(x, "proto");
      StringRef name = StringRef(target).trim();
      if (!name.consume_front("#"))
        throw LoadError{attrLoc(x, "proto"),
                        "a protocol reference is '#name', not '" + target +
                            "'"};
      n.name = name.str();
      n.target = db->lookup(name);
      if (!n.target) {
        std::string hint =
            didYouMean(Database::nearest(name, db->protocolNames()));
        throw LoadError{attrLoc(x, "proto"),
                        "unknown protocol '" + name.str() + "'" +
                            (hint.empty() ? "" : "; " + hint)};
      }
      return n;
    }
    if (tag == "nextproto-candidate")
      throw LoadError{n.loc, "<nextproto-candidate> (heuristic protocol "
                             "guessing) is not supported by netvm"};
    throw LoadError{n.loc, "unexpected <" + tag.str() + ">" +
                               (encapsulation ? " in <encapsulation>"
                                              : " in a header format")};
  }

  // Protocols without a `layer` attribute get their distance from
  // startproto in the encapsulation graph.
  void assignLayers() {
    llvm::DenseMap<const Protocol *, int> depth;
    std::deque<const Protocol *> queue{db->start_};
    depth[db->start_] = 0;
    while (!queue.empty()) {
      const Protocol *p = queue.front();
      queue.pop_front();
      for (const Protocol *s : p->successors)
        if (depth.try_emplace(s, depth[p] + 1).second)
          queue.push_back(s);
    }
    for (auto &p : db->protocols_)
      if (!explicitLayer.contains(p.get())) {
        auto it = depth.find(p.get());
        p->layer = it == depth.end() ? -1 - int(p->index) : it->second;
      }
  }
};

} // namespace netvm::protodb

std::unique_ptr<Database> Database::parse(StringRef text, StringRef bufferName,
                                          LoadError &error) {
  try {
    return Loader(text, bufferName).run();
  } catch (const LoadError &e) {
    error = e;
    return nullptr;
  }
}

std::unique_ptr<Database> Database::load(StringRef path, LoadError &error) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!buffer) {
    error.loc.file = path.str();
    error.message =
        "cannot read the protocol database: " + buffer.getError().message();
    return nullptr;
  }
  return parse((*buffer)->getBuffer(), path, error);
}

namespace {
#include "BuiltinProtoDB.inc"
} // namespace

StringRef Database::builtinText() { return kBuiltinProtoDB; }

const Database &Database::builtin() {
  static const std::unique_ptr<Database> db = [] {
    LoadError error;
    auto d = parse(builtinText(), "netvm.netpdl.xml", error);
    if (!d)
      llvm::report_fatal_error(
          llvm::Twine("the built-in protocol database is broken: ") +
          error.loc.str() + ": " + error.message);
    return d;
  }();
  return *db;
}
