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
#include "llvm/ADT/MapVector.h"
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
#include <tuple>
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
/// The most parse states (protocol, header counts) the code is specialised
/// for; beyond, header counts are run-time variables.
constexpr size_t kMaxStates = 2000;
constexpr llvm::StringLiteral kRegexp = "regexp";

/// What the filter needs from one protocol.
struct ProtoNeeds {
  bool relevant = false;      // parsed at all
  bool encapsulation = false; // some successor is relevant
  bool count = false;         // header index used
  unsigned maxIndex = 0;      // the largest header index used
  /// The fixed prefix of <format>: the bytes its leading fixed and bit
  /// fields take, and where the fields declared there lie from the
  /// header's start (offset, size).
  uint32_t prefixLen = 0;
  size_t prefixNodes = 0; // leading nodes of <format> that make it
  llvm::StringMap<std::pair<uint32_t, uint32_t>> prefixFields;
  bool tested = false;            // some test of the filter reads this header
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
  /// The parse, specialised by what is known at compile time when a
  /// header has been decoded (see exploreStates()): how many headers of
  /// each protocol a header index names have been seen (capped), and
  /// which states each chain's automaton may be in. One state per
  /// (protocol, counts, automaton states) a packet can reach.
  struct State {
    const Protocol *proto;
    std::vector<uint8_t> after; // capped counts, this header included
    std::vector<uint32_t> may;  // per chain: automaton states possible
    /// Per chain: whether its test is known to hold on every packet that
    /// reaches this state (1), to fail (0), or not known (-1). Only tests
    /// `p%K.field == N` on a header behind, known from the case of the
    /// encapsulation that led here (ethernet%1.type == 0x800 on the way to
    /// IPv4); see pathFacts().
    std::vector<int8_t> facts;
    std::vector<unsigned> next; // states of the successors
    bool live = false;   // this header may complete a chain or an extract
    bool needed = false; // live, or leads to a needed state
  };
  std::vector<State> states;
  std::map<std::tuple<const Protocol *, std::vector<uint8_t>,
                      std::vector<uint32_t>, std::vector<int8_t>>,
           unsigned>
      stateIds;
  /// Counted protocols' slots in State::before/after; empty when the
  /// counts are kept at run time instead (too many states).
  llvm::DenseMap<const Protocol *, unsigned> countSlot;
  bool staticCounts = true;
  bool hopsCheck = true; // the needed states may loop (or run deep)
  unsigned curState = 0;
  std::map<unsigned, Block *> headers;
  std::vector<const Pred *> regexps; // pattern K of the regexp coprocessor
  std::vector<unsigned> pending;
  llvm::DenseMap<const Protocol *, unsigned> layerBit;
  bool tunnels = false;

  // Per header being emitted.
  const Protocol *proto = nullptr;
  /// Per-header versioning: the header's fixed prefix is inside the
  /// captured packet (checked once), so its fields need no checks.
  bool fast = false;
  /// The offset of the field being decoded from the header's start, when
  /// it is a constant (within the fixed prefix).
  std::optional<uint32_t> staticCur;
  /// Offset (from the header's start) of a field of the fixed prefix the
  /// fast path may load without checks, if `name` is one of `size` bytes.
  std::optional<uint32_t> fastField(StringRef name, uint32_t size);
  /// Values fields of the current header must have (by name), once the
  /// early exits are behind; used while emitting its encapsulation.
  using Known = std::map<std::string, std::set<uint32_t>>;
  Known known;
  /// What the formula requires of the fields of header `p` when it has
  /// not been decided false at `p`: std::nullopt when nothing.
  std::optional<Known> requiredValues(const Formula &f, const Protocol &p);
  /// Whether `f` holds given the current state's facts (std::nullopt:
  /// not known at compile time).
  std::optional<bool> factValue(const Formula &f) const;
  /// Whether the format of `p` leaves field `name` as its first declaration
  /// read it when that read `value`: it is declared again only in loops
  /// that leave at once on `value` (IPv6's extension headers, for a next
  /// header that is not one). A test reads a field's first declaration,
  /// the encapsulation its last.
  bool keepsValue(const Protocol &p, StringRef name, uint32_t value);
  /// The chain's test, when it is `p%K.field == N` or `!= N` on the K-th
  /// header of `p` (this one) for a field of at most 4 bytes.
  struct Relation {
    std::string field;
    uint32_t value;
    bool equal; // == rather than !=
  };
  std::optional<Relation> relationOn(size_t chain, const Protocol &p);
  /// Whether the chain's flag is final in the current state: every header
  /// it could match is behind (indexed members only, as chainDead()).
  bool chainFinal(size_t chain) const;
  /// Whether later headers could still change `f` in the current state
  /// (not decided by the facts, and some term not final).
  bool mayChange(const Formula &f) const;
  /// The facts of the states the current state's encapsulation leads to,
  /// by target protocol (from the values of the fields it switches on).
  std::map<const Protocol *, std::vector<int8_t>>
  pathFacts(const Protocol &p, const std::set<const Protocol *> &targets);
  /// The value of a NetPDL expression given `known`, if it is constant.
  std::optional<uint32_t> knownValue(const Expr &e) const;
  /// The values a <switch> may see given `known`; std::nullopt: any.
  std::optional<std::set<uint32_t>> switchValues(const Node &x) const;
  /// The protocols the <nextproto>s of `nodes` that `known` leaves
  /// possible name (emitNode prunes <if> and <switch> the same way).
  void forKnownPaths(const Protocol &p, llvm::ArrayRef<Node> nodes,
                     llvm::SetVector<const Protocol *> &out) const;
  /// The terms (chains) that are true past the early exit of the current
  /// header: those the formula requires whose flag can no longer change.
  std::set<size_t> requiredTrue(const Formula &f);
  /// Whether `name` is declared once in `p`'s format, outside loops (its
  /// value variable then holds the value the filter's tests read).
  static bool declaredOnce(const Protocol &p, StringRef name);
  Block *stopTarget = nullptr; // where a failed decode goes
  struct LoopTargets {
    Block *next, *exit;
  };
  std::vector<LoopTargets> loops;

  //===--------------------------------------------------------------------===//
  // What to parse
  //===--------------------------------------------------------------------===//

  void analyse();

  /// The reachable states and which of them are needed: a header is
  /// parsed only if it, or a header after it, can still change the
  /// verdict or an extracted field. Returns false when there are more
  /// than `limit` states.
  bool exploreStates(size_t limit);

  /// The header index of the header being emitted, as an i32 (a constant
  /// when the counts are static).
  Value countOf(const Protocol &p);
  /// Whether the count of `p` can equal `index` here; std::nullopt when
  /// it is only known at run time.
  std::optional<bool> countIs(const Protocol &p, unsigned index);

  /// The fixed prefix of a protocol's <format> (ProtoNeeds::prefixLen).
  static void fixedPrefix(const Protocol &p, ProtoNeeds &n);

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
  /// Comparisons and i1 logic, folded when their operands are constants
  /// (header counts are, when static).
  Value cmp(arith::CmpIPredicate p, Value l, Value r);
  Value andI1(Value l, Value r);
  Value orI1(Value l, Value r);
  Value notI1(Value v);
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

  /// The block of the header of `p` that follows the current one (or the
  /// first one), or `finish` when it is not needed.
  Block *headerBlock(const Protocol *p);
  /// The block of state `id`, or `finish` when it is not needed.
  Block *stateBlock(unsigned id);

  void emitHeader(unsigned id);

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
  /// The tests of simple chains at the current header, by flag: an `or`
  /// of i1 tests that flushFlags adds to the flag.
  llvm::MapVector<Value, Value> pendingFlags;
  void flushFlags();

  /// States reachable from `states` by skipping optional elements.
  static uint32_t closure(const Chain &chain, uint32_t states);

  /// A test on the header just decoded, as an i1: false when a field it
  /// needs is absent or beyond the captured bytes.
  Value predicate(const Pred &p);

  /// `field REL constant` and `field == address`, the shape of most terms,
  /// or null for other tests: the field is checked and read once per
  /// header (fieldChunks), so such a term is a comparison and adds no
  /// block. A thousand alternatives on one field then read it once.
  Value fieldRelation(const Pred &p);

  /// Whether the field of `ref` is present with `size` bytes inside the
  /// capture (i1), and its value in chunks of at most 4 bytes: loaded when
  /// it is, 0 when it is not. The first request at a header step emits the
  /// checks and the loads into slots; later requests of the step read the
  /// slots.
  std::pair<Value, llvm::SmallVector<Value>> fieldChunks(const FieldRef &ref,
                                                         unsigned size);
  /// The slots of fieldChunks at the current step (emptied by stepAll):
  /// the presence flag, then the chunks.
  std::map<std::string, llvm::SmallVector<Value>> fieldMemo;

  /// Offset and length of a recorded field; goes to `absent` when the
  /// header had no such field.
  std::pair<Value, Value> fieldPosition(const FieldRef &ref, Block *absent);

  Value arithValue(const Arith &a, Block *absent);

  /// `field contains "text"`: a search over the captured part of the
  /// field, case-insensitive (ASCII) unless `casesensitive`.
  Value stringTest(const Pred &p, Block *absent);

  void extractFields(const Protocol &p);

  Value formula(const Formula &f);
};

} // namespace netvm::netpfl::detail

#endif // NETVM_LIB_FRONTEND_NETPFL_NETPFLINTERNAL_H
