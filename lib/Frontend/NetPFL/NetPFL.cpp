//===- NetPFL.cpp - NetPFL filters to the netvm dialect -------------------===//
//
// The entry of the NetPFL front end, in three steps:
//  1. ANTLR parses the filter (NetPFL.g4); the first syntax error is kept,
//     in plain words, with its offset.
//  2. A walk over the parse tree (Walker.cpp) resolves protocol and field
//     names against the protocol database and builds a boolean formula
//     whose leaves are encapsulation patterns: `tcp.dport == 80` is "some
//     TCP header has dport 80", `tcp in ip in ipv6` is "an IPv6 header
//     directly followed by an IPv4 header directly followed by a TCP
//     header", with NetBee's sets, `any`, repeaters (* + ?), `notin`,
//     header indexes and `tunneled`. Every leaf is a small automaton over
//     the header chain.
//  3. Code generation (ProtocolGraph.cpp, FilterTests.cpp) writes one push
//     handler that parses the packet from `startproto`, header after
//     header, along the database's encapsulation rules, and only towards
//     protocols the filter needs. At each header it decodes the fields it
//     needs (NetPDL <format>), steps the automata of the leaves, then
//     follows <encapsulation>. When the parse ends, the formula decides:
//     send or drop. The generator keeps its state (offsets, field
//     positions, counters, automaton states) in memref.alloca slots;
//     mem2reg turns them into SSA values, so the handler that comes out is
//     plain netvm/arith/cf.
//
// Packet bounds: parsing never reads past the captured bytes; where a
// header's fields run past them, the header is still present but the
// fields that could not be decoded are absent, and a comparison that needs
// an absent field is false.
//
// This file assembles the application and reports errors (FilterError
// exceptions inside the front end) through MLIR diagnostics, at their
// file:line:col in the filter's buffer.
//
//===----------------------------------------------------------------------===//

#include "netvm/Frontend/NetPFL.h"

#include "NetPFLInternal.h"
#include "NetPFLLexer.h"

#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace netvm;
using namespace netvm::netpfl::detail;

namespace {

/// NetPFL's words for ANTLR's syntax errors.
const filter::SyntaxWords kSyntaxWords{
    "filter", "a protocol, a field, a number, an address or '('",
    "this does not make a filter here (a protocol, a comparison such as "
    "'tcp.dport == 80', 'not', '(', 'in', 'and', 'or' or an action)",
    [](llvm::ArrayRef<StringRef> items) -> std::optional<std::string> {
      if (items.size() == 1 && items[0] == "STRING")
        return std::string("a string in double quotes");
      return std::nullopt;
    }};

/// The regexp coprocessor's initialisation data for `patterns`
/// (docs/netil.md, 7.1): little-endian counts and lengths, flag "i"
/// (case-insensitive) unless the filter says casesensitive.
std::vector<int8_t> regexpInitData(llvm::ArrayRef<const Pred *> patterns) {
  std::vector<int8_t> out;
  auto u16 = [&](size_t v) {
    out.push_back(int8_t(v & 0xff));
    out.push_back(int8_t(v >> 8));
  };
  auto bytes = [&](StringRef s) { out.insert(out.end(), s.begin(), s.end()); };
  u16(patterns.size());
  for (const Pred *p : patterns) {
    StringRef flags = p->caseSensitive ? "" : "i";
    u16(flags.size());
    bytes(flags);
    u16(p->pattern.size());
    bytes(p->pattern);
  }
  return out;
}

/// `matches` runs on the regexp coprocessor: the NetPE declares it with
/// the patterns as initialisation data and initialises it in its init
/// handler. Each pattern is checked here with the engine that will run it,
/// so that a bad one is an error at its position, not an exception on
/// every packet.
void addRegexpCoprocessor(OpBuilder &b, Location loc, filter::FilterApp &app,
                          llvm::ArrayRef<const Pred *> patterns) {
  for (const Pred *p : patterns) {
    if (p->pattern.size() > 0xFFFF)
      fail(p->pos, "the regular expression is longer than 65535 bytes");
    if (StringRef(p->pattern).contains('\0'))
      fail(p->pos, "a regular expression cannot hold a NUL byte; write "
                   "\\x00 to match one");
    hs_expr_info_t *info = nullptr;
    hs_compile_error_t *compileError = nullptr;
    unsigned flags = HS_FLAG_ALLOWEMPTY |
                     (p->caseSensitive ? 0u : unsigned(HS_FLAG_CASELESS));
    if (hs_expression_info(p->pattern.c_str(), flags, &info, &compileError) !=
        HS_SUCCESS) {
      std::string why = compileError ? compileError->message : "invalid";
      hs_free_compile_error(compileError);
      fail(p->pos, "bad regular expression: " + why);
    }
    free(info);
  }
  app.pe.setCoprocessorsAttr(b.getStrArrayAttr({kRegexp}));
  app.pe.setInitdataAttr(b.getDenseI8ArrayAttr(regexpInitData(patterns)));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(app.handler);
  auto init = HandlerOp::create(b, loc, HandlerKind::Init);
  b.setInsertionPointToEnd(&init.getBody().front());
  CoproInitOp::create(b, loc, b.getI32Type(), kRegexp, 0);
  RetOp::create(b, loc);
}

} // namespace

OwningOpRef<ModuleOp> netvm::netpfl::compile(MLIRContext &context,
                                             llvm::SourceMgr &sourceMgr,
                                             unsigned bufferId,
                                             const CompileOptions &options) {
  const Database &db =
      options.database ? *options.database : Database::builtin();
  context.loadDialect<NetVMDialect, arith::ArithDialect, cf::ControlFlowDialect,
                      memref::MemRefDialect>();
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(bufferId);
  auto report = [&](const FilterError &e) {
    filter::emitFilterError(context, sourceMgr, bufferId, e);
    return nullptr;
  };
  filter::FilterParser<netvm_netpfl::NetPFLLexer, P> parser(buffer->getBuffer(),
                                                            kSyntaxWords);
  std::optional<FilterError> syntaxError;
  P::ProgramContext *tree = parser.parse(syntaxError);
  if (!tree)
    return report(*syntaxError);

  Filter filter;
  Location loc =
      FileLineColLoc::get(&context, buffer->getBufferIdentifier(), 1, 1);
  OpBuilder b(&context);
  filter::FilterApp app;
  try {
    Walker(db, filter).program(tree);
    std::string out =
        filter.port ? "port" + std::to_string(*filter.port) : "match";
    app = filter::buildFilterApp(b, loc, options.appName, out);
    if (!filter.extracts.empty())
      app.pe.setInfoSize(filter.extracts.size() * kExtractedFieldSize);
    CodeGen gen(b, loc, app.handler.getBody(), db, filter, app.accept,
                app.reject);
    gen.run();
    if (!gen.regexpPatterns().empty())
      addRegexpCoprocessor(b, loc, app, gen.regexpPatterns());
    if (failed(gen.promote(app.handler))) {
      emitError(loc, "internal error: the filter's variables did not become "
                     "SSA values");
      return nullptr;
    }
  } catch (const FilterError &e) {
    return report(e);
  }
  return filter::finishFilterApp(app);
}
