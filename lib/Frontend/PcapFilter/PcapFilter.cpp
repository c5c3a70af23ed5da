//===- PcapFilter.cpp - tcpdump expressions to the netvm dialect ----------===//
//
// The entry of the pcap-filter front end, in four steps:
//  1. ANTLR parses the expression (PcapFilter.g4); a listener keeps the
//     first syntax error, in plain words, with its offset.
//  2. A walk over the parse tree (Walker.cpp, Names.cpp) does what
//     libpcap's grammar actions and gencode.c (LinkLayer.cpp,
//     NetworkLayer.cpp, TransportLayer.cpp) do for Ethernet links and
//     builds a predicate tree whose leaves compare packet fields, in the
//     order libpcap evaluates them (Predicates.cpp).
//  3. The tree becomes a decision graph on which the effects of libpcap's
//     optimizer are reproduced (Optimizer.cpp).
//  4. Here, the graph becomes one push handler: short-circuit branches
//     over netvm.load (each with the bounds check that makes a packet too
//     short for a field reject the whole expression, as in bpf_filter),
//     ending in netvm.send @match or netvm.drop.
// Errors are exceptions inside the front end (FilterError), reported
// through MLIR diagnostics at their file:line:col when caught here.
//
//===----------------------------------------------------------------------===//

#include "netvm/Frontend/PcapFilter.h"

#include "PcapFilterInternal.h"
#include "PcapFilterLexer.h"

#include "NetVM/NetVMOps.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace netvm;
using namespace netvm::pcapfilter::detail;

namespace {

//===----------------------------------------------------------------------===//
// Syntax errors
//===----------------------------------------------------------------------===//

bool isComparison(llvm::StringRef token) {
  return llvm::is_contained(
      {"'>='", "'<='", "'!='", "'=='", "'>'", "'<'", "'='"}, token);
}

/// tcpdump expressions' words for ANTLR's syntax errors.
const filter::SyntaxWords kSyntaxWords{
    "expression", "an operand: an address, a number, a name, a protocol or '('",
    "this does not make a term here",
    [](llvm::ArrayRef<llvm::StringRef> items) -> std::optional<std::string> {
      if (llvm::all_of(items, isComparison))
        return "a comparison (=, !=, <, <=, >, >=) after the value";
      return std::nullopt;
    }};

//===----------------------------------------------------------------------===//
// The graph to the netvm dialect
//===----------------------------------------------------------------------===//

class CodeGen {
public:
  CodeGen(OpBuilder &b, Location loc, Region &body, Dag &dag, Block *accept,
          Block *reject)
      : b(b), loc(loc), body(body), dag(dag), accept(accept), reject(reject) {}

  /// The block that runs node `n`.
  Block *blockOf(int n) {
    if (n == Dag::kAccept)
      return accept;
    if (n == Dag::kReject)
      return reject;
    auto it = blocks.find(n);
    if (it != blocks.end())
      return it->second;
    Block *block = newBlock();
    blocks[n] = block;
    pending.push_back(n);
    return block;
  }

  /// Emit node `root` into the current block, then every node it reaches.
  void emit(int root) {
    if (root < 2) {
      cf::BranchOp::create(b, loc, blockOf(root));
      return;
    }
    emitNode(root);
    while (!pending.empty()) {
      int n = pending.back();
      pending.pop_back();
      b.setInsertionPointToEnd(blocks[n]);
      emitNode(n);
    }
  }

  /// Compute (and discard) the operands of test `t`: their loads still
  /// reject a packet too short for them.
  void prologue(int t) {
    val(dag.tests[t].lhs);
    val(dag.tests[t].rhs);
  }

private:
  void emitNode(int n) {
    const Dag::Node &node = dag.nodes[n];
    const Test &t = dag.tests[node.test];
    Value lhs =
        t.lhs->kind == Val::Chain ? chain(*t.lhs, t.rhs->k) : val(t.lhs);
    Value rhs = val(t.rhs);
    Value c;
    if (t.code == Test::JSET) {
      c = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                arith::AndIOp::create(b, loc, lhs, rhs),
                                c32(0));
    } else {
      arith::CmpIPredicate rel = t.code == Test::JEQ ? arith::CmpIPredicate::eq
                                 : t.code == Test::JGT
                                     ? arith::CmpIPredicate::ugt
                                     : arith::CmpIPredicate::uge;
      c = arith::CmpIOp::create(b, loc, rel, lhs, rhs);
    }
    Block *yes = blockOf(node.jt), *no = blockOf(node.jf);
    cf::CondBranchOp::create(b, loc, c, yes, no);
  }

  Block *newBlock() {
    Block *block = new Block();
    body.push_back(block);
    return block;
  }
  Value c32(uint32_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                        static_cast<int64_t>(v));
  }
  /// Continue only if `ok`; otherwise the filter rejects the packet.
  void require(Value ok) {
    Block *next = newBlock();
    cf::CondBranchOp::create(b, loc, ok, next, reject);
    b.setInsertionPointToEnd(next);
  }
  Value loadByte(uint32_t offset, Type type) {
    return LoadOp::create(b, loc, type, MemSpace::Packet, c32(offset),
                          /*in_bounds=*/false);
  }
  /// BPF's indirect load of `size` bytes at x + k: the sum must not
  /// overflow, and the bytes must be in the packet. Zero-extended to i32.
  Value loadIndexed(Value x, uint32_t k, unsigned size) {
    Value offset = arith::AddIOp::create(b, loc, x, c32(k));
    require(
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, offset, x));
    Value loaded = LoadOp::create(b, loc, b.getIntegerType(8 * size),
                                  MemSpace::Packet, offset,
                                  /*in_bounds=*/false);
    return size == 4 ? loaded
                     : arith::ExtUIOp::create(b, loc, b.getI32Type(), loaded)
                           .getResult();
  }

  /// libpcap's protochain loop (gen_protochain), block by block: A is the
  /// header type, X the offset of the header from the network header.
  /// IPv6 extension headers (hop-by-hop 0, destination options 60,
  /// routing 43, fragment 44) advance X by (length + 1) * 8; an AH header
  /// (51) sets X to (length + 2) * 4 (not added to X, as in libpcap). The
  /// loop ends at type v, at no next header (59) or at any other type.
  Value chain(const Val &v, uint32_t wanted) {
    Type i32 = b.getI32Type();
    uint32_t base = v.k;
    Value a0, x0;
    if (v.ipv6) {
      a0 = arith::ExtUIOp::create(b, loc, i32,
                                  loadByte(base + 6, b.getI8Type()));
      x0 = c32(40);
    } else {
      a0 = arith::ExtUIOp::create(b, loc, i32,
                                  loadByte(base + 9, b.getI8Type()));
      Value first =
          arith::ExtUIOp::create(b, loc, i32, loadByte(base, b.getI8Type()));
      x0 = arith::ShLIOp::create(
          b, loc, arith::AndIOp::create(b, loc, first, c32(0x0F)), c32(2));
    }
    auto blockWith = [&](unsigned args) {
      Block *block = newBlock();
      for (unsigned i = 0; i < args; ++i)
        block->addArgument(i32, loc);
      return block;
    };
    Block *again = blockWith(2), *end = blockWith(1), *ah = blockWith(2),
          *ahBody = blockWith(1);
    cf::BranchOp::create(b, loc, again, ValueRange{a0, x0});

    // again: the types that end the loop, then the ones that go on.
    b.setInsertionPointToEnd(again);
    Value a = again->getArgument(0), x = again->getArgument(1);
    auto is = [&](Value value, uint32_t k) {
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, value,
                                   c32(k));
    };
    auto test = [&](uint32_t k, Block *yes, ValueRange yesArgs) {
      Block *no = newBlock();
      cf::CondBranchOp::create(b, loc, is(a, k), yes, yesArgs, no,
                               ValueRange{});
      b.setInsertionPointToEnd(no);
    };
    test(wanted, end, a);
    test(59, end, a);
    if (v.ipv6) {
      Block *advance = blockWith(1);
      for (uint32_t ext : {0u, 60u, 43u, 44u})
        test(ext, advance, x);
      cf::BranchOp::create(b, loc, ah, ValueRange{a, x});
      // An extension header: its next header and length.
      b.setInsertionPointToEnd(advance);
      Value ax = advance->getArgument(0);
      Value next = loadIndexed(ax, base, 1);
      Value len = loadIndexed(ax, base + 1, 1);
      Value nx = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(
              b, loc, arith::AddIOp::create(b, loc, len, c32(1)), c32(8)),
          ax);
      cf::BranchOp::create(b, loc, again, ValueRange{next, nx});
    } else {
      cf::BranchOp::create(b, loc, ah, ValueRange{a, x});
    }
    // ahcheck: an AH header goes on, anything else ends the loop.
    b.setInsertionPointToEnd(ah);
    cf::CondBranchOp::create(b, loc, is(ah->getArgument(0), 51), ahBody,
                             ValueRange{ah->getArgument(1)}, end,
                             ValueRange{ah->getArgument(0)});
    b.setInsertionPointToEnd(ahBody);
    Value hx = ahBody->getArgument(0);
    Value next = loadIndexed(hx, base, 1);
    Value len = loadIndexed(arith::AddIOp::create(b, loc, hx, c32(1)), base, 1);
    Value nx = arith::MulIOp::create(
        b, loc, arith::AddIOp::create(b, loc, len, c32(2)), c32(4));
    cf::BranchOp::create(b, loc, again, ValueRange{next, nx});

    b.setInsertionPointToEnd(end);
    return end->getArgument(0);
  }
  Value val(const ValP &v) {
    Type i32 = b.getI32Type();
    switch (v->kind) {
    case Val::Const:
      return c32(v->k);
    case Val::WireLen:
      return WireLengthOp::create(b, loc, i32);
    case Val::Neg:
      return arith::SubIOp::create(b, loc, c32(0), val(v->a));
    case Val::Chain:
      llvm_unreachable("protochain values are compared by emitNode");
    case Val::Load: {
      // BPF computes the variable part (index, plus the IPv4 header length
      // for transport fields) with wrapping arithmetic, then checks that
      // adding the constant does not overflow.
      Value variable;
      if (v->index)
        variable = val(v->index);
      if (v->ipHeader) {
        Value first =
            v->ipHeaderIndex
                ? loadIndexed(val(v->ipHeaderIndex), v->ipHeaderAt, 1)
                : arith::ExtUIOp::create(b, loc, i32,
                                         loadByte(v->ipHeaderAt, b.getI8Type()))
                      .getResult();
        Value x = arith::ShLIOp::create(
            b, loc, arith::AndIOp::create(b, loc, first, c32(0x0F)), c32(2));
        variable = variable
                       ? arith::AddIOp::create(b, loc, variable, x).getResult()
                       : x;
      }
      Value offset = c32(v->k);
      if (variable) {
        offset = arith::AddIOp::create(b, loc, variable, offset);
        if (v->index) // x alone (<= 60) cannot overflow
          require(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                        offset, variable));
      }
      Type t = b.getIntegerType(8 * v->size);
      Value loaded = LoadOp::create(b, loc, t, MemSpace::Packet, offset,
                                    /*in_bounds=*/false);
      return v->size == 4
                 ? loaded
                 : arith::ExtUIOp::create(b, loc, i32, loaded).getResult();
    }
    case Val::Select: {
      Value c = condition(v->cond);
      Value l = val(v->a), r = val(v->b);
      return arith::SelectOp::create(b, loc, c, l, r);
    }
    case Val::Binary: {
      Value l = val(v->a), r = val(v->b);
      if (v->op == '/' || v->op == '%') {
        // bpf_filter rejects the packet on a division by zero.
        require(
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, r, c32(0)));
        if (v->op == '/')
          return arith::DivUIOp::create(b, loc, l, r);
        return arith::RemUIOp::create(b, loc, l, r);
      }
      if (Value result = filter::emitBinary(b, loc, v->op, l, r))
        return result;
      break;
    }
    }
    llvm_unreachable("unknown value");
  }

  /// A Select's condition as an i1, every comparison evaluated (its
  /// loads are the ones the test it repeats made on the path that sets
  /// the register).
  Value condition(const PredP &p) {
    switch (p->kind) {
    case Pred::True:
    case Pred::False:
      return arith::ConstantOp::create(b, loc,
                                       b.getBoolAttr(p->kind == Pred::True));
    case Pred::Not:
      return arith::XOrIOp::create(
          b, loc, condition(p->a),
          arith::ConstantOp::create(b, loc, b.getBoolAttr(true)));
    case Pred::And:
      return arith::AndIOp::create(b, loc, condition(p->a), condition(p->b));
    case Pred::Or:
      return arith::OrIOp::create(b, loc, condition(p->a), condition(p->b));
    case Pred::Rel:
      return arith::CmpIOp::create(b, loc, p->rel, val(p->lhs), val(p->rhs));
    }
    llvm_unreachable("unknown predicate");
  }

  OpBuilder &b;
  Location loc;
  Region &body;
  Dag &dag;
  Block *accept, *reject;
  std::map<int, Block *> blocks;
  std::vector<int> pending;
};

} // namespace

bool netvm::pcapfilter::isSupportedLinkType(int linkType) {
  return Generator().setLinkType(linkType);
}

OwningOpRef<ModuleOp>
netvm::pcapfilter::compile(MLIRContext &context, llvm::SourceMgr &sourceMgr,
                           unsigned bufferId, const CompileOptions &options) {
  context
      .loadDialect<NetVMDialect, arith::ArithDialect, cf::ControlFlowDialect>();
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(bufferId);
  llvm::StringRef expression = buffer->getBuffer();
  auto report = [&](const FilterError &e) {
    filter::emitFilterError(context, sourceMgr, bufferId, e);
    return nullptr;
  };
  filter::FilterParser<netvm_pcapfilter::PcapFilterLexer, P> parser(
      expression, kSyntaxWords);
  std::optional<FilterError> syntaxError;
  P::ProgramContext *tree = parser.parse(syntaxError);
  if (!tree)
    return report(*syntaxError);

  PredP predicate;
  bool optimizing = true;
  try {
    Generator gen;
    if (!gen.setLinkType(options.linkType))
      fail(size_t(0), "link type " + linkDescription(options.linkType) +
                          " is not one netvm compiles tcpdump expressions for "
                          "(Ethernet, Linux cooked v1 and v2, raw IP, BSD and "
                          "OpenBSD loopback)");
    gen.swapped = options.swapped;
    gen.netmask = options.netmask;
    Walker walker(gen);
    predicate = walker.program(tree);
    optimizing = !gen.noOptimize;
    if (optimizing && walker.optimizerError)
      throw *walker.optimizerError;
  } catch (const FilterError &e) {
    return report(e);
  }

  Location loc =
      FileLineColLoc::get(&context, buffer->getBufferIdentifier(), 1, 1);
  OpBuilder b(&context);
  filter::FilterApp app =
      filter::buildFilterApp(b, loc, options.appName, "match");
  if (options.linkType != LINK_EN10MB)
    app.pe->getParentOfType<ApplicationOp>().setLinkType(
        static_cast<uint32_t>(options.linkType));
  Region &body = app.handler.getBody();
  Block *entry = &body.front(), *accept = app.accept, *reject = app.reject;
  b.setInsertionPointToEnd(entry);
  Dag dag;
  dag.optimizing = optimizing;
  int first = dag.compile(predicate, Dag::kAccept, Dag::kReject);
  int root = optimizing ? dag.optimize(first) : first;
  if (dag.exhausted)
    emitWarning(loc) << "the expression is too large for netvm's emulation "
                        "of libpcap's optimizer to finish ("
                     << dag.tests.size()
                     << " distinct tests): packets too short for some of "
                        "the fields it compares may get another verdict "
                        "than libpcap's";
  CodeGen codegen(b, loc, body, dag, accept, reject);
  // libpcap's opt_root: when the first test's two branches end up at the
  // same place (in the optimizer, or already here: `byte 16 < 0 and arp`
  // on raw IP, where `arp` is false), the test goes but its loads stay in
  // front of the next one (unless the whole filter became a constant).
  if (optimizing && dag.lastTest >= 0 && root >= 2 &&
      dag.nodes[root].test != dag.lastTest)
    codegen.prologue(dag.lastTest);
  codegen.emit(root);

  return filter::finishFilterApp(app);
}
