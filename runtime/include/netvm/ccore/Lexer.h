//===- Lexer.h - Tokens of the C-CORE schema and query languages -*- C++
//-*-===//
//
// The two small languages of the C-CORE layer (docs/ccore.md) share their
// tokens: words (letters, digits, '_'; a leading '$' makes a parameter),
// numbers (decimal or 0x hexadecimal, 32 bits), punctuation (==, !=, <=, >=
// or one character), '#' comments to the end of the line. Each token keeps
// its line and column for errors.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_CCORE_LEXER_H
#define NETVM_CCORE_LEXER_H

#include <cstdint>
#include <string>

namespace netvm::ccore {

struct Token {
  enum Kind { Word, Parameter, Number, Punct, End } kind = End;
  std::string text;
  uint32_t number = 0;
  /// A number that is malformed or does not fit 32 bits.
  bool bad = false;
  unsigned line = 1, column = 1;

  bool is(Kind k, const char *spelling) const {
    return kind == k && text == spelling;
  }
};

class Lexer {
public:
  explicit Lexer(const std::string &text) : text(text) {}
  /// The next token (End at the end of the text, again and again).
  Token next();

private:
  const std::string &text;
  size_t pos = 0;
  unsigned line = 1, column = 1;

  bool wordChar(size_t at) const;
  void bump();
};

/// "file:line:col: error: message\n".
std::string errorAt(const std::string &file, const Token &at,
                    const std::string &message);

} // namespace netvm::ccore

#endif // NETVM_CCORE_LEXER_H
