//===- FilterSupport.h - What the filter front ends share --------*- C++
//-*-===//
//
// The NetPFL and pcap-filter front ends compile one filter expression into
// the same shape of application and report errors the same way: through
// MLIR's diagnostics, at the file:line:col of the filter's buffer in a
// SourceMgr. This header holds that shared part: errors, ANTLR's syntax
// errors in plain words, the parse, and the application skeleton.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_LIB_FRONTEND_FILTERSUPPORT_H
#define NETVM_LIB_FRONTEND_FILTERSUPPORT_H

#include "NetVM/NetVMOps.h"

#include "antlr4-runtime.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SourceMgr.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace netvm::filter {

/// A note on an error, at a place outside the filter (such as the
/// element of a protocol database that the error comes from).
struct FilterNote {
  std::string file;
  unsigned line = 0, column = 0;
  std::string message;
};

/// An error in the filter text.
struct FilterError {
  /// Where: the index of a character (a code point, as ANTLR counts them)
  /// of the filter.
  size_t offset;
  std::string message;
  std::vector<FilterNote> notes = {};
};

/// Stop compiling with an error at `offset` (or at a parse-tree node).
[[noreturn]] void fail(size_t offset, const std::string &message);
[[noreturn]] void fail(antlr4::ParserRuleContext *at,
                       const std::string &message);
[[noreturn]] void fail(antlr4::tree::TerminalNode *at,
                       const std::string &message);
size_t posOf(antlr4::ParserRuleContext *ctx);
size_t posOf(antlr4::tree::TerminalNode *t);

/// The place of character `offset` (FilterError::offset) of buffer
/// `bufferId`: the buffer's identifier (a file name, or "<expression>"),
/// then the 1-based line and column (in bytes). An offset in the blanks
/// after the last word points just after it, not at a blank line after it.
mlir::FileLineColLoc locationOf(mlir::MLIRContext &context,
                                const llvm::SourceMgr &sourceMgr,
                                unsigned bufferId, size_t offset);

/// Report `e` (an error in buffer `bufferId`) as an MLIR diagnostic, with
/// its notes attached.
void emitFilterError(mlir::MLIRContext &context,
                     const llvm::SourceMgr &sourceMgr, unsigned bufferId,
                     const FilterError &e);

/// How a front end words ANTLR's syntax errors.
struct SyntaxWords {
  /// What the input is called: "filter", "expression".
  llvm::StringRef noun;
  /// What a long list of expected tokens amounts to.
  llvm::StringRef operand;
  /// Said of a token that starts nothing valid where it stands.
  llvm::StringRef notHere;
  /// A description of some sets of expected tokens (the tokens as ANTLR
  /// names them, e.g. "'=='"), if the front end has a better one.
  std::function<std::optional<std::string>(llvm::ArrayRef<llvm::StringRef>)>
      describe;
};

/// Keeps the first syntax error, in plain words.
class SyntaxErrorListener : public antlr4::BaseErrorListener {
public:
  explicit SyntaxErrorListener(const SyntaxWords &words) : words(words) {}
  void syntaxError(antlr4::Recognizer *, antlr4::Token *offending, size_t line,
                   size_t column, const std::string &msg,
                   std::exception_ptr) override;
  std::optional<FilterError> error;

private:
  const SyntaxWords &words;
};

/// Lexes and parses a filter with ANTLR (the grammar's start rule is
/// `program` and its lexer ends with an ERROR_CHAR rule for anything else).
/// How deeply a filter expression may nest.
constexpr unsigned kMaxNesting = 1000;

template <typename Lexer, typename Parser> class FilterParser {
public:
  FilterParser(llvm::StringRef text, const SyntaxWords &words)
      : input(validText(text, badByte)), lexer(&input), tokens(&lexer),
        parser(&tokens), listener(words) {
    lexer.removeErrorListeners();
    lexer.addErrorListener(&listener);
    parser.removeErrorListeners();
    parser.addErrorListener(&listener);
  }

  /// The parse tree, or null with `error` set to the first error in the
  /// text (lexical errors before syntax errors).
  typename Parser::ProgramContext *parse(std::optional<FilterError> &error) {
    // ANTLR's input stream reads UTF-8 only (and throws otherwise).
    if (badByte) {
      error = FilterError{*badByte, "the filter is not valid UTF-8 text"};
      return nullptr;
    }
    tokens.fill();
    if ((error = tooDeep(tokens.getTokens())))
      return nullptr;
    typename Parser::ProgramContext *tree = parser.program();
    for (antlr4::Token *t : tokens.getTokens())
      if (t->getType() == Parser::ERROR_CHAR) {
        error = FilterError{t->getStartIndex(),
                            "syntax error: unexpected character '" +
                                t->getText() + "'"};
        return nullptr;
      }
    if (listener.error) {
      error = listener.error;
      return nullptr;
    }
    return tree;
  }

private:
  /// The parsers, and the walks of their trees, recurse once per level of
  /// nesting: deeper input is refused before it can exhaust the stack.
  static std::optional<FilterError>
  tooDeep(const std::vector<antlr4::Token *> &tokens) {
    // A level per open bracket and per prefix operator ('not', '!',
    // unary '-', '~') that still waits for its operand.
    std::vector<unsigned> open;
    unsigned level = 0;
    for (antlr4::Token *t : tokens) {
      std::string text = t->getText();
      if (text == "(" || text == "[" || text == "{") {
        open.push_back(++level);
      } else if (llvm::StringRef(text).equals_insensitive("not") ||
                 text == "!" || text == "-" || text == "~") {
        ++level;
      } else {
        if ((text == ")" || text == "]" || text == "}") && !open.empty())
          open.pop_back();
        level = open.empty() ? 0 : open.back();
      }
      if (level > kMaxNesting)
        return FilterError{t->getStartIndex(),
                           "the expression nests too deeply (more than " +
                               std::to_string(kMaxNesting) +
                               " levels of parentheses, brackets and "
                               "'not's)"};
    }
    return std::nullopt;
  }

  /// `text`, or nothing with `bad` set to (the character index of) its
  /// first invalid byte when it is not UTF-8.
  static std::string validText(llvm::StringRef text,
                               std::optional<size_t> &bad) {
    size_t offset = 0;
    if (llvm::json::isUTF8(text, &offset))
      return text.str();
    bad = llvm::count_if(text.take_front(offset),
                         [](char c) { return (c & 0xC0) != 0x80; });
    return std::string();
  }

  std::optional<size_t> badByte; // declared before `input`, which uses it
  antlr4::ANTLRInputStream input;
  Lexer lexer;
  antlr4::CommonTokenStream tokens;
  Parser parser;
  SyntaxErrorListener listener;
};

/// A filter application: source `in` → NetPE `filter` (input port `in`,
/// output port `out`) → sink `out`. The NetPE's push handler ends with two
/// blocks, `accept` (send to `out`) and `reject` (drop); the front end
/// fills the entry block.
struct FilterApp {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  PEOp pe;
  HandlerOp handler;
  mlir::Block *accept = nullptr, *reject = nullptr;
};
FilterApp buildFilterApp(mlir::OpBuilder &b, mlir::Location loc,
                         llvm::StringRef appName, llvm::StringRef out);

/// Verify the finished application; an internal error (a diagnostic) and
/// null if it does not.
mlir::OwningOpRef<mlir::ModuleOp> finishFilterApp(FilterApp &app);

/// `l op r` on 32-bit values for the operators both filter languages
/// share: + - * & | ^, and the shifts '<' (left) and '>' (right), where a
/// shift by 32 or more gives 0 as in bpf_filter. Null for any other
/// operator (division and remainder need a language's own zero check).
mlir::Value emitBinary(mlir::OpBuilder &b, mlir::Location loc, char op,
                       mlir::Value l, mlir::Value r);

} // namespace netvm::filter

#endif // NETVM_LIB_FRONTEND_FILTERSUPPORT_H
