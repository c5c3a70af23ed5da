//===- FilterSupport.cpp - What the filter front ends share ---------------===//

#include "FilterSupport.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;
using namespace netvm;
using namespace netvm::filter;
using llvm::StringRef;

void filter::fail(size_t offset, const std::string &message) {
  throw FilterError{offset, message};
}
void filter::fail(antlr4::ParserRuleContext *at, const std::string &message) {
  fail(posOf(at), message);
}
void filter::fail(antlr4::tree::TerminalNode *at, const std::string &message) {
  fail(posOf(at), message);
}
size_t filter::posOf(antlr4::ParserRuleContext *ctx) {
  return ctx ? ctx->getStart()->getStartIndex() : 0;
}
size_t filter::posOf(antlr4::tree::TerminalNode *t) {
  return t->getSymbol()->getStartIndex();
}

FileLineColLoc filter::locationOf(MLIRContext &context,
                                  const llvm::SourceMgr &sourceMgr,
                                  unsigned bufferId, size_t offset) {
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(bufferId);
  StringRef text = buffer->getBuffer();
  // From ANTLR's character index to a byte offset: skip `offset` UTF-8
  // sequences.
  size_t byte = 0;
  for (size_t seen = 0; byte < text.size(); ++byte)
    if ((text[byte] & 0xC0) != 0x80 && seen++ == offset)
      break;
  offset = byte;
  // An error at the end points just after the last word, not at a blank
  // line after it.
  offset = std::min(offset, text.rtrim().size());
  auto [line, column] = sourceMgr.getLineAndColumn(
      llvm::SMLoc::getFromPointer(text.data() + offset), bufferId);
  return FileLineColLoc::get(&context, buffer->getBufferIdentifier(), line,
                             column);
}

void filter::emitFilterError(MLIRContext &context,
                             const llvm::SourceMgr &sourceMgr,
                             unsigned bufferId, const FilterError &e) {
  InFlightDiagnostic diag =
      emitError(locationOf(context, sourceMgr, bufferId, e.offset), e.message);
  for (const FilterNote &note : e.notes)
    diag.attachNote(
        FileLineColLoc::get(&context, note.file, note.line, note.column))
        << note.message;
}

// ANTLR's wording, made plainer: "expecting {a, b, ...}" becomes a short
// list, or a description when it would be long; a token that starts no
// alternative is said to make nothing valid where it stands.
void SyntaxErrorListener::syntaxError(antlr4::Recognizer *,
                                      antlr4::Token *offending, size_t,
                                      size_t column, const std::string &msg,
                                      std::exception_ptr) {
  if (error)
    return;
  StringRef m(msg);
  bool atEnd = offending && offending->getType() == antlr4::Token::EOF;
  std::string what =
      atEnd ? "the " + words.noun.str() + " ends too early"
            : "unexpected '" + (offending ? offending->getText() : "") + "'";
  // What was expected, from ANTLR's token names.
  auto expectedList = [&](StringRef expected) {
    llvm::SmallVector<StringRef> items;
    expected.split(items, ", ");
    std::optional<std::string> described;
    if (words.describe)
      described = words.describe(items);
    return described             ? *described
           : expected == "<EOF>" ? "the end of the " + words.noun.str()
           : items.size() > 6    ? words.operand.str()
           : items.size() == 1   ? expected.str()
                                 : "one of " + expected.str();
  };
  std::string text = msg;
  size_t at = m.find("expecting ");
  if (at != StringRef::npos) {
    text = what + ": expected " + expectedList(m.substr(at + 10).trim("{} "));
  } else if (m.starts_with("missing ") && m.contains(" at ")) {
    text = what + ": expected " +
           expectedList(m.drop_front(8).split(" at ").first.trim("{} "));
  } else if (m.starts_with("no viable alternative") ||
             m.starts_with("mismatched input") ||
             m.starts_with("extraneous input")) {
    text = atEnd ? what : what + ": " + words.notHere.str();
  }
  error = FilterError{offending ? offending->getStartIndex() : column,
                      "syntax error: " + text};
}

FilterApp filter::buildFilterApp(OpBuilder &b, Location loc, StringRef appName,
                                 StringRef out) {
  MLIRContext *context = b.getContext();
  FilterApp f;
  f.module = ModuleOp::create(loc);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(f.module->getBody());
  auto app = ApplicationOp::create(b, loc, appName);
  b.setInsertionPointToEnd(app.getBodyBlock());
  SourceOp::create(b, loc, "in");
  SinkOp::create(b, loc, out);
  f.pe = PEOp::create(b, loc, "filter");
  auto ref = [&](StringRef peName, StringRef port) {
    return SymbolRefAttr::get(context, peName,
                              {FlatSymbolRefAttr::get(context, port)});
  };
  ConnectOp::create(b, loc, FlatSymbolRefAttr::get(context, "in"),
                    ref("filter", "in"));
  ConnectOp::create(b, loc, ref("filter", out),
                    FlatSymbolRefAttr::get(context, out));

  b.setInsertionPointToEnd(f.pe.getBodyBlock());
  PortOp::create(b, loc, "in", PortKind::PushInput);
  PortOp::create(b, loc, out, PortKind::PushOutput);
  f.handler = HandlerOp::create(b, loc, HandlerKind::Push);
  Region &body = f.handler.getBody();
  f.accept = new Block();
  f.reject = new Block();
  body.push_back(f.accept);
  body.push_back(f.reject);
  b.setInsertionPointToEnd(f.accept);
  SendOp::create(b, loc, out);
  b.setInsertionPointToEnd(f.reject);
  DropOp::create(b, loc);
  return f;
}

OwningOpRef<ModuleOp> filter::finishFilterApp(FilterApp &app) {
  if (failed(verify(*app.module))) {
    emitError(app.module->getLoc(),
              "internal error: the generated code does not verify");
    return nullptr;
  }
  return std::move(app.module);
}

mlir::Value netvm::filter::emitBinary(mlir::OpBuilder &b, mlir::Location loc,
                                      char op, mlir::Value l, mlir::Value r) {
  namespace arith = mlir::arith;
  switch (op) {
  case '+':
    return arith::AddIOp::create(b, loc, l, r);
  case '-':
    return arith::SubIOp::create(b, loc, l, r);
  case '*':
    return arith::MulIOp::create(b, loc, l, r);
  case '&':
    return arith::AndIOp::create(b, loc, l, r);
  case '|':
    return arith::OrIOp::create(b, loc, l, r);
  case '^':
    return arith::XOrIOp::create(b, loc, l, r);
  case '<':
  case '>': {
    auto c32 = [&](uint32_t v) {
      return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
    };
    mlir::Value big =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, r, c32(32));
    mlir::Value safe = arith::AndIOp::create(b, loc, r, c32(31));
    mlir::Value shifted =
        op == '<' ? arith::ShLIOp::create(b, loc, l, safe).getResult()
                  : arith::ShRUIOp::create(b, loc, l, safe).getResult();
    return arith::SelectOp::create(b, loc, big, c32(0), shifted);
  }
  default:
    return nullptr;
  }
}
