//===- Decode.cpp - Decode a packet's headers with a NetPDL database ------===//
//
// The host-side reading of a protocol database: walks a packet's captured
// bytes header by header as the database describes them (the same rules
// the NetPFL front end compiles, docs/protodb.md "What a parse does with
// the packet"), and returns where each header and field is. Tools print
// packets from it (netvm-run's tcpdump-like lines); no protocol layout
// lives in them.
//
//===----------------------------------------------------------------------===//

#include "netvm/ProtoDB/ProtoDB.h"

#include "llvm/ADT/bit.h"

#include <optional>

using namespace netvm;
using namespace netvm::protodb;

const DecodedField *DecodedHeader::field(llvm::StringRef name) const {
  for (const DecodedField &f : llvm::reverse(fields))
    if (f.name == name)
      return &f;
  return nullptr;
}

std::optional<uint32_t>
DecodedHeader::value(llvm::StringRef name,
                     llvm::ArrayRef<uint8_t> packet) const {
  const DecodedField *f = field(name);
  if (!f)
    return std::nullopt;
  return f->value(packet);
}

std::optional<uint32_t>
DecodedField::value(llvm::ArrayRef<uint8_t> packet) const {
  if (size == 0 || size > 4 || offset + size > packet.size())
    return std::nullopt;
  uint32_t v = 0;
  for (uint32_t i = 0; i < size; ++i)
    v = v << 8 | packet[offset + i];
  return mask ? (v & mask) >> llvm::countr_zero(mask) : v;
}

namespace {
/// One packet's walk through the database.
class Decoder {
public:
  Decoder(llvm::ArrayRef<uint8_t> packet) : packet(packet) {}

  std::vector<DecodedHeader> run(const Database &db, const Protocol *first,
                                 uint32_t offset) {
    std::vector<DecodedHeader> headers;
    const Protocol *proto = first;
    cur = offset;
    for (unsigned depth = 0; proto && depth < kMaxHeaders; ++depth) {
      header = DecodedHeader();
      header.protocol = proto;
      header.offset = cur;
      protoStart = cur;
      next = nullptr;
      Flow flow = sequence(proto->format);
      header.length = cur - protoStart;
      header.truncated = flow == Flow::Stop;
      if (flow != Flow::Stop)
        sequence(proto->encapsulation); // reads this header's fields
      // startproto has no header of its own.
      if (proto != &db.start())
        headers.push_back(std::move(header));
      proto = next;
    }
    return headers;
  }

private:
  /// How a sequence of nodes ended.
  enum class Flow { Next, Break, Continue, Stop };
  static constexpr unsigned kMaxHeaders = 64, kMaxRounds = 4096;

  Flow sequence(const std::vector<Node> &nodes) {
    for (const Node &n : nodes) {
      Flow flow = node(n);
      if (flow != Flow::Next)
        return flow;
      if (next)
        return Flow::Next; // an <encapsulation> reached its <nextproto>
    }
    return Flow::Next;
  }

  Flow field(const Node &n, uint32_t size) {
    if (uint64_t(cur) + size > packet.size())
      return Flow::Stop;
    header.fields.push_back({n.name, cur, size, n.mask});
    return Flow::Next;
  }

  Flow node(const Node &n) {
    switch (n.kind) {
    case Node::FixedField:
      if (field(n, n.size) == Flow::Stop)
        return Flow::Stop;
      for (const Node &bits : n.children)
        header.fields.push_back({bits.name, cur, bits.size, bits.mask});
      cur += n.size;
      return Flow::Next;
    case Node::BitField:
      if (field(n, n.size) == Flow::Stop)
        return Flow::Stop;
      if (n.last)
        cur += n.size;
      return Flow::Next;
    case Node::VariableField: {
      std::optional<uint32_t> size = eval(n.expr.get());
      if (!size || field(n, *size) == Flow::Stop)
        return Flow::Stop;
      cur += *size;
      return Flow::Next;
    }
    case Node::PaddingField: {
      uint32_t used = cur - protoStart;
      uint32_t pad = n.size ? (n.size - used % n.size) % n.size : 0;
      if (field(n, pad) == Flow::Stop)
        return Flow::Stop;
      cur += pad;
      return Flow::Next;
    }
    case Node::Block:
      return sequence(n.children);
    case Node::IncludeBlock: {
      auto it = header.protocol->blocks.find(n.name);
      return it == header.protocol->blocks.end()
                 ? Flow::Stop
                 : sequence(it->second.children);
    }
    case Node::If: {
      std::optional<uint32_t> v = eval(n.expr.get());
      if (!v)
        return Flow::Stop;
      return sequence(*v ? n.children : n.otherwise);
    }
    case Node::Switch: {
      std::optional<uint32_t> v = eval(n.expr.get());
      if (!v)
        return Flow::Stop;
      for (const Node::Case &c : n.cases)
        if (c.low <= *v && *v <= c.high)
          return sequence(c.body);
      return n.hasDefault ? sequence(n.otherwise) : Flow::Next;
    }
    case Node::Loop:
      return loop(n);
    case Node::LoopCtrl:
      return n.isBreak ? Flow::Break : Flow::Continue;
    case Node::NextProto:
      next = n.target;
      return Flow::Next;
    }
    return Flow::Stop;
  }

  /// A loop moves forward at every round and stays in the packet, or it
  /// ends; a size loop leaves the header where its size says.
  Flow loop(const Node &n) {
    bool sized = n.loopKind == Node::SizeLoop;
    bool times = n.loopKind == Node::TimesLoop;
    uint64_t count = 0;
    if (sized || times) {
      std::optional<uint32_t> v = eval(n.expr.get());
      if (!v)
        return Flow::Stop;
      count = *v;
    }
    uint64_t end = uint64_t(cur) + count;
    if (sized && end > packet.size())
      return Flow::Stop;
    // A while loop's condition comes before each round, a do-while's after.
    auto holds = [&](Node::LoopKind when) -> std::optional<bool> {
      if (n.loopKind != when)
        return true;
      std::optional<uint32_t> v = eval(n.expr.get());
      if (!v)
        return std::nullopt;
      return *v != 0;
    };
    for (unsigned round = 0; round < kMaxRounds; ++round) {
      if ((sized && cur >= end) || (times && round >= count))
        break;
      std::optional<bool> more = holds(Node::WhileLoop);
      if (!more)
        return Flow::Stop;
      if (!*more)
        break;
      uint32_t before = cur;
      Flow flow = sequence(n.children);
      if (flow == Flow::Stop)
        return Flow::Stop;
      if (flow == Flow::Break)
        break;
      more = holds(Node::DoWhileLoop);
      if (!more)
        return Flow::Stop;
      if (!*more || (cur == before && !times))
        break;
    }
    if (sized)
      cur = end;
    return Flow::Next;
  }

  std::optional<uint32_t> eval(const Expr *e) {
    if (!e)
      return std::nullopt;
    switch (e->kind) {
    case Expr::Number:
      return e->value;
    case Expr::Field:
      return header.value(e->name, packet);
    case Expr::PacketSlice: {
      std::optional<uint32_t> at = eval(e->lhs.get());
      if (!at)
        return std::nullopt;
      return DecodedField{"", *at, e->value, 0}.value(packet);
    }
    case Expr::CurrentOffset:
      return cur;
    case Expr::ProtoOffset:
      return protoStart;
    case Expr::PacketLength:
      return uint32_t(packet.size());
    case Expr::Unary: {
      std::optional<uint32_t> v = eval(e->lhs.get());
      if (!v)
        return std::nullopt;
      return e->op == Expr::Not ? uint32_t(!*v) : ~*v;
    }
    case Expr::Binary:
      return binary(e);
    }
    return std::nullopt;
  }

  std::optional<uint32_t> binary(const Expr *e) {
    std::optional<uint32_t> l = eval(e->lhs.get());
    if (!l)
      return std::nullopt;
    if (e->op == Expr::And && !*l)
      return 0;
    if (e->op == Expr::Or && *l)
      return 1;
    std::optional<uint32_t> r = eval(e->rhs.get());
    if (!r)
      return std::nullopt;
    uint32_t a = *l, b = *r;
    switch (e->op) {
    case Expr::Add:
      return a + b;
    case Expr::Sub:
      return a - b;
    case Expr::Mul:
      return a * b;
    case Expr::Div:
    case Expr::Mod:
      if (!b)
        return std::nullopt;
      return e->op == Expr::Div ? a / b : a % b;
    case Expr::BitAnd:
      return a & b;
    case Expr::BitOr:
      return a | b;
    case Expr::Eq:
      return a == b;
    case Expr::Ne:
      return a != b;
    case Expr::Lt:
      return a < b;
    case Expr::Le:
      return a <= b;
    case Expr::Gt:
      return a > b;
    case Expr::Ge:
      return a >= b;
    case Expr::And:
    case Expr::Or:
      return b != 0;
    case Expr::BitNot:
    case Expr::Not:
      break;
    }
    return std::nullopt;
  }

  llvm::ArrayRef<uint8_t> packet;
  uint32_t cur = 0, protoStart = 0;
  DecodedHeader header;
  const Protocol *next = nullptr;
};
} // namespace

std::vector<DecodedHeader>
netvm::protodb::decode(const Database &db, llvm::ArrayRef<uint8_t> packet) {
  return Decoder(packet).run(db, &db.start(), 0);
}

std::vector<DecodedHeader>
netvm::protodb::decode(const Database &db, llvm::ArrayRef<uint8_t> packet,
                       const Protocol &first, uint32_t offset) {
  return Decoder(packet).run(db, &first, offset);
}
