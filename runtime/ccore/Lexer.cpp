//===- Lexer.cpp - Tokens of the C-CORE schema and query languages --------===//

#include "netvm/ccore/Lexer.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace netvm::ccore {

bool Lexer::wordChar(size_t at) const {
  return at < text.size() &&
         (std::isalnum(static_cast<unsigned char>(text[at])) ||
          text[at] == '_');
}

void Lexer::bump() {
  if (text[pos] == '\n') {
    ++line;
    column = 1;
  } else {
    ++column;
  }
  ++pos;
}

Token Lexer::next() {
  while (pos < text.size()) {
    if (text[pos] == '#') {
      while (pos < text.size() && text[pos] != '\n')
        bump();
    } else if (std::isspace(static_cast<unsigned char>(text[pos]))) {
      bump();
    } else {
      break;
    }
  }
  Token tok;
  tok.line = line;
  tok.column = column;
  if (pos >= text.size())
    return tok;
  char c = text[pos];
  auto takeWord = [&] {
    while (wordChar(pos)) {
      tok.text += text[pos];
      bump();
    }
  };
  if (c == '$' || std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
    tok.kind = c == '$' ? Token::Parameter : Token::Word;
    if (c == '$')
      bump();
    takeWord();
    return tok;
  }
  if (std::isdigit(static_cast<unsigned char>(c))) {
    tok.kind = Token::Number;
    takeWord();
    errno = 0;
    char *end = nullptr;
    unsigned long long v = std::strtoull(tok.text.c_str(), &end, 0);
    tok.bad = errno != 0 || *end != '\0' || v > 0xFFFFFFFFull;
    tok.number = tok.bad ? 0 : static_cast<uint32_t>(v);
    return tok;
  }
  tok.kind = Token::Punct;
  static const char *twoChar[] = {"==", "!=", "<=", ">="};
  for (const char *op : twoChar)
    if (text.compare(pos, 2, op) == 0) {
      tok.text = op;
      bump();
      bump();
      return tok;
    }
  tok.text = std::string(1, c);
  bump();
  return tok;
}

std::string errorAt(const std::string &file, const Token &at,
                    const std::string &message) {
  return file + ":" + std::to_string(at.line) + ":" +
         std::to_string(at.column) + ": error: " + message + "\n";
}

} // namespace netvm::ccore
