//===- NetPFLInternal.h - What the NetPFL pieces share ----------*- C++ -*-===//
//
// The NetPFL front end is split at its seams: the walk that resolves the
// parse tree against the protocol database into a formula over header
// chains (Walker.cpp); code generation, which parses the packet along
// the database's protocol graph (ProtocolGraph.cpp) and evaluates the
// filter's tests and formula at each header (FilterTests.cpp); and the
// entry, which assembles the application (NetPFL.cpp). This private
// header holds what they share: the resolved filter, the walker and the
// code generator.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_LIB_FRONTEND_NETPFL_NETPFLINTERNAL_H
#define NETVM_LIB_FRONTEND_NETPFL_NETPFLINTERNAL_H

#include "netvm/Frontend/NetPFL.h"

#include "NetVM/NetVMOps.h"
#include "netvm/ProtoDB/ProtoDB.h"

#include "FilterSupport.h"
#include "NetPFLParser.h"
#include "antlr4-runtime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Interfaces/MemorySlotInterfaces.h"
#include "mlir/Transforms/Mem2Reg.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/bit.h"

#include <arpa/inet.h>
#include <hs/hs.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace netvm::netpfl::detail {

namespace arith = mlir::arith;
namespace cf = mlir::cf;
namespace memref = mlir::memref;
using namespace netvm::protodb;
using mlir::Block;
using mlir::Location;
using mlir::LogicalResult;
using mlir::OpBuilder;
using mlir::Operation;
using mlir::Region;
using mlir::Type;
using mlir::Value;
using P = netvm_netpfl::NetPFLParser;
using filter::fail;
using filter::FilterError;
using filter::posOf;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// The filter, resolved
//===----------------------------------------------------------------------===//

/// A field of one header instance (`ip.src`, `ip%2.src`).
struct FieldRef {
  const Protocol *proto = nullptr;
  unsigned index = 0; // 0: the instance being looked at
  const FieldInfo *field = nullptr;
  size_t pos = 0;
};

/// Arithmetic over the fields of one header and constants.
struct Arith {
  enum Kind { Const, Field, Slice, Bytes, BitNot, Binary } kind = Const;
  uint32_t k = 0;             // Const; Slice: offset in the header
  unsigned size = 0;          // Slice
  std::vector<uint8_t> bytes; // Bytes: a MAC or IPv6 address
  FieldRef ref;               // Field; Slice (proto, index)
  char op = 0;                // Binary: + - * < (shl) > (shr) & | ^
  std::shared_ptr<Arith> a, b;
  size_t pos = 0;
};
using ArithP = std::shared_ptr<Arith>;

/// A test on one header: a comparison or a string search.
struct Pred {
  enum Kind { Relation, Contains, Matches } kind = Relation;
  ArithP lhs, rhs;
  arith::CmpIPredicate rel = arith::CmpIPredicate::eq;
  FieldRef field;
  std::string pattern;
  bool caseSensitive = false;
  size_t pos = 0;
};

/// One header the pattern accepts: a protocol, optionally its n-th
/// instance, tunneled, or satisfying a test.
struct Member {
  const Protocol *proto = nullptr;
  unsigned index = 0;
  bool tunneled = false;
  std::shared_ptr<Pred> pred;
};

/// One position of an encapsulation pattern.
struct Element {
  enum Kind { Set, Complement, Any } kind = Set;
  std::vector<Member> members;
  char repeat = 0; // 0, '?', '*', '+'
};

/// A leaf of the formula: "the header chain has, somewhere (or from its
/// start when `anchored`), consecutive headers matching elems[0..n)".
struct Chain {
  std::vector<Element> elems;
  bool anchored = false;
};

struct Formula {
  enum Kind { Leaf, And, Or, Not } kind = Leaf;
  int chain = -1;
  std::vector<Formula> kids;
};

struct Extract {
  FieldRef ref;
};

struct Filter {
  std::optional<Formula> formula; // none: accept every packet
  std::vector<Chain> chains;
  std::optional<uint32_t> port;
  std::vector<Extract> extracts;
};

//===----------------------------------------------------------------------===//
// The parse tree to the filter
//===----------------------------------------------------------------------===//

/// A number of the filter: decimal, or hexadecimal after 0x.
uint32_t parseNumber(antlr4::tree::TerminalNode *tok);

/// Resolves the parse tree against the protocol database into `out`
/// (Walker.cpp).
class Walker {
public:
  Walker(const Database &db, Filter &out) : db(db), out(out) {}

  void program(P::ProgramContext *ctx);

private:
  const Database &db;
  Filter &out;

  Formula orExpr(P::OrExprContext *ctx);
  Formula andExpr(P::AndExprContext *ctx);
  Formula unaryExpr(P::UnaryExprContext *ctx);

  Element element(P::ChainElementContext *ctx, bool notin);

  const Protocol *protocol(StringRef name, size_t pos);

  /// `name` or `name%N`.
  std::pair<const Protocol *, unsigned> instance(StringRef text, size_t pos);

  FieldRef fieldRef(antlr4::tree::TerminalNode *tok);

  Member member(P::OperandContext *ctx);

  /// Fields wider than 4 bytes compare only for (in)equality with an
  /// address of the same size.
  void checkWide(const Pred &p);

  std::string unquote(antlr4::tree::TerminalNode *tok, bool regexp = false);

  ArithP arith(P::ArithContext *ctx);
};

//===----------------------------------------------------------------------===//
// Code generation (ProtocolGraph.cpp: the parse along the protocol graph;
// FilterTests.cpp: the filter's tests at each header and the verdict)
//===----------------------------------------------------------------------===//

constexpr uint32_t kAbsent = 0xFFFFFFFF;
constexpr llvm::StringLiteral kRegexp = "regexp";

/// What the filter needs from one protocol.
struct ProtoNeeds {
  bool relevant = false;          // parsed at all
  bool encapsulation = false;     // some successor is relevant
  bool count = false;             // header index used
  llvm::StringSet<> recorded;     // fields whose position the filter reads
  llvm::StringSet<> values;       // fields whose value NetPDL expressions read
  std::set<const Node *> skipped; // size loops decoded as one jump
};

class CodeGen {
public:
  CodeGen(OpBuilder &b, Location loc, Region &body, const Database &db,
          const Filter &filter, Block *accept, Block *reject)
      : b(b), loc(loc), body(body), db(db), filter(filter), accept(accept),
        reject(reject) {}

  void run();

  /// The `matches` patterns, in the order of the regexp coprocessor.
  llvm::ArrayRef<const Pred *> regexpPatterns() const { return regexps; }

  /// Promote the generator's variables to SSA values.
  LogicalResult promote(Operation *scope);

private:
  OpBuilder &b;
  Location loc;
  Region &body;
  const Database &db;
  const Filter &filter;
  Block *accept, *reject, *finish = nullptr;
  Type i32;
  Value pktLen;
  std::map<std::string, Value> vars;
  std::map<const Protocol *, ProtoNeeds> needs_;
  std::map<const Protocol *, Block *> headers;
  std::vector<const Pred *> regexps; // pattern K of the regexp coprocessor
  std::vector<const Protocol *> pending;
  llvm::DenseMap<const Protocol *, unsigned> layerBit;
  bool tunnels = false;

  // Per header being emitted.
  const Protocol *proto = nullptr;
  Block *stopTarget = nullptr; // where a failed decode goes
  struct LoopTargets {
    Block *next, *exit;
  };
  std::vector<LoopTargets> loops;

  //===--------------------------------------------------------------------===//
  // What to parse
  //===--------------------------------------------------------------------===//

  void analyse();

  /// Which field values the parse must read, and which size loops it can
  /// jump over: a loop whose fields nothing reads ends where its size
  /// says, so it is one addition.
  void decideValues(const Protocol &p, ProtoNeeds &n);

  static bool parsesFormat(const Protocol &p, const ProtoNeeds &n);

  //===--------------------------------------------------------------------===//
  // Helpers
  //===--------------------------------------------------------------------===//

  Block *newBlock();
  void startBlock(Block *block) { b.setInsertionPointToEnd(block); }
  Value c32(uint32_t v);
  Value var(const std::string &name);
  Value get(Value slot);
  void set(Value slot, Value v);
  Value chainVar(size_t c) { return var("chain." + std::to_string(c)); }
  /// The flag of chain `c`: set once the chain has matched, shared by
  /// the simple chains of one `or` (see groupFlags).
  Value flagVar(size_t c) {
    return var("flag." + std::to_string(flagOf.empty() ? c : flagOf[c]));
  }
  /// A chain of one element that may match at any header ("some header
  /// is an IPv4 header with this source") only ever needs its flag.
  bool simpleChain(size_t c) const {
    return filter.chains[c].elems.size() == 1 && !filter.chains[c].anchored;
  }
  /// The simple chains that are leaves of one `or` share one flag: the
  /// `or` of theirs, which is all the formula asks of them. So a filter
  /// of N alternatives carries one flag through the parse, not N.
  void groupFlags(const Formula &f);
  std::vector<size_t> flagOf;
  std::string fieldVar(const std::string &kind, const std::string &name);
  Value cmp(arith::CmpIPredicate p, Value l, Value r);
  Value toI32(Value bit) { return arith::ExtUIOp::create(b, loc, i32, bit); }
  Value isTrue(Value v);

  /// Continue only if `ok`, else go to `otherwise`.
  void require(Value ok, Block *otherwise);
  /// Whether [offset, offset + size) lies inside the captured packet.
  Value inPacket(Value offset, Value size);
  /// Big-endian value of 1 to 4 bytes at `offset`, already checked.
  Value loadBytes(Value offset, unsigned size);
  /// Load after a bounds check that goes to `otherwise` when it fails.
  Value checkedLoad(Value offset, unsigned size, Block *otherwise);
  Value fieldValue(Value raw, uint32_t mask);

  //===--------------------------------------------------------------------===//
  // Headers
  //===--------------------------------------------------------------------===//

  Block *headerBlock(const Protocol *p);

  void emitHeader(const Protocol &p);

  //===--------------------------------------------------------------------===//
  // <format> and <encapsulation>
  //===--------------------------------------------------------------------===//

  void emitSequence(const std::vector<Node> &nodes);

  /// Note a decoded field: its position if the filter reads it, its value
  /// if a NetPDL expression does.
  void decoded(const Node &x, Value at, Value size, unsigned loadSize);

  void emitNode(const Node &x);

  void emitLoop(const Node &x, ProtoNeeds &n);

  /// The body of a loop, which must move forward in the packet at every
  /// iteration (so that no database makes a loop that never ends): an
  /// iteration that does not ends the loop, and so does one that leaves
  /// the packet.
  void loopBody(const Node &x, Block *head, Block *exit);

  /// A NetPDL expression of the header being decoded, as an i32.
  Value expr(const Expr &e);
  unsigned logicDepth = 0;

  //===--------------------------------------------------------------------===//
  // The filter's tests, at each header
  //===--------------------------------------------------------------------===//

  /// Whether header `p` (the one just decoded) matches `m`, as an i1.
  Value matches(const Member &m, const Protocol &p);

  /// Whether header `p` matches element `e` (i1), or null when it cannot.
  Value elementMatch(const Element &e, const Protocol &p);

  /// Whether the formula is already true, and already false, given that
  /// the tests true so far stay true and the others may still become
  /// true (Kleene's three-valued logic).
  std::pair<Value, Value> decided(const Formula &f);

  /// Whether chain `c` can no longer become true (i1): nothing is partly
  /// matched, and no header still to come can start a match, because
  /// every element a match may start with names header instances that
  /// are already behind (`ethernet%1` after the first Ethernet header).
  /// Chains that may start at any later header are never dead.
  Value chainDead(size_t c);

  /// Step the automaton of chain `c` over header `p` (false when `p`
  /// cannot change it). State bit j: the last headers matched elements
  /// [0, j).
  bool stepChain(size_t c, const Protocol &p);

  /// States reachable from `states` by skipping optional elements.
  static uint32_t closure(const Chain &chain, uint32_t states);

  /// A test on the header just decoded, as an i1: false when a field it
  /// needs is absent or beyond the captured bytes.
  Value predicate(const Pred &p);

  /// Offset and length of a recorded field; goes to `absent` when the
  /// header had no such field.
  std::pair<Value, Value> fieldPosition(const FieldRef &ref, Block *absent);

  Value arithValue(const Arith &a, Block *absent);

  /// A field of 6 or 16 bytes against an address, as an i1.
  Value wideEqual(const Arith &f, const std::vector<uint8_t> &bytes,
                  Block *absent);

  /// `field contains "text"`: a search over the captured part of the
  /// field, case-insensitive (ASCII) unless `casesensitive`.
  Value stringTest(const Pred &p, Block *absent);

  void extractFields(const Protocol &p);

  Value formula(const Formula &f);
};

} // namespace netvm::netpfl::detail

#endif // NETVM_LIB_FRONTEND_NETPFL_NETPFLINTERNAL_H
