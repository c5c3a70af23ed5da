//===- Assembler.cpp - Microengine assembly to images ---------------------===//
//
// Two passes over the source. The first splits every line into labels, a
// directive or an instruction (mnemonic[operands], then tokens such as
// defer[1] or ctx_swap[s1]), defines the symbols, lays out code blocks and
// data, and evaluates what sizes depend on. The second encodes the
// instructions and data values, when every label is known, and checks what
// needs the whole block (defer slots, control-store capacity). Instruction
// syntax comes from the table (MEInstrs.def) through its formats.
//
//===----------------------------------------------------------------------===//

#include "netvm/Target/ME/Assembler.h"
#include "netvm/emu/Isa.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <optional>
#include <tuple>

using namespace netvm::me;

namespace {

/// One operand or argument, trimmed, with the column it starts at.
struct Piece {
  std::string text;
  unsigned col = 0;
};

/// "name[args]" or "name": the instruction and each token after it.
struct Part {
  std::string name;
  unsigned col = 0;
  bool bracketed = false;
  std::vector<Piece> args;
};

struct Statement {
  unsigned line = 0;
  std::vector<Part> parts;
};

struct Block {
  CodeBlock code;
  std::string spec;
  unsigned line = 0, col = 0;
  std::vector<Statement> statements;
};

struct DataItem {
  unsigned width = 0; // 1, 2 or 4 bytes a value; 0 for .space/.align
  uint32_t offset = 0;
  uint32_t bytes = 0; // .space/.align: zero bytes
  unsigned line = 0;
  std::vector<Piece> values;
};

struct DataBlock {
  Memory memory = Memory::Sram;
  uint32_t address = 0, size = 0;
  unsigned line = 0, col = 0;
  std::vector<DataItem> items;
};

struct SymbolDef {
  SymbolKind kind = SymbolKind::Constant;
  uint32_t block = 0;
  int64_t value = 0;
  unsigned line = 0;
};

std::string lower(std::string s) {
  for (char &c : s)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool isIdentStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}
bool isIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

/// A whole-string unsigned decimal, or nullopt.
std::optional<unsigned> parseDecimal(const std::string &s, size_t from = 0) {
  if (from >= s.size() || s.size() - from > 6)
    return std::nullopt;
  unsigned v = 0;
  for (size_t i = from; i < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i])))
      return std::nullopt;
    v = v * 10 + unsigned(s[i] - '0');
  }
  return v;
}

class Assembler {
public:
  Assembler(std::string_view source, std::string fileName,
            const AssemblerOptions &options, std::vector<std::string> &errors)
      : source(source), fileName(std::move(fileName)), options(options),
        errors(errors) {}

  bool run(Image &image);

private:
  // Diagnostics.
  bool error(unsigned line, unsigned col, const std::string &message);
  bool tooManyErrors() const { return errorCount >= options.maxErrors; }

  // Pass 1.
  void firstPass();
  void readSource(std::string_view text, unsigned file);
  void include(unsigned line, const Piece &arg);
  /// "line N" of `line`, or "file:N" when not in the file of `from`.
  std::string lineRef(unsigned line, unsigned from) const;
  void parseLine(unsigned line, std::string text);
  bool splitParts(unsigned line, const std::string &text, size_t pos,
                  std::vector<Part> &parts);
  bool splitArgs(unsigned line, const std::string &text, size_t begin,
                 size_t end, std::vector<Piece> &args);
  void directive(unsigned line, const std::string &name, unsigned col,
                 std::vector<Piece> &args);
  void defineLabel(unsigned line, unsigned col, const std::string &name);
  bool defineSymbol(unsigned line, unsigned col, const std::string &name,
                    SymbolDef def);
  bool parseMeSpec(unsigned line, const std::vector<Piece> &args,
                   uint32_t &mask);
  bool constant(unsigned line, const Piece &piece, int64_t &value);

  // Expressions.
  bool evaluate(unsigned line, const Piece &piece, int64_t &value,
                bool allSymbols);

  // Pass 2.
  void secondPass();
  bool encodeStatement(Block &block, unsigned blockIndex,
                       const Statement &statement, Instr &instr);
  bool parseSource(unsigned line, const Block &block, const Piece &piece,
                   Operand &op, Instr &instr, bool allowImm = true);
  bool parseDest(unsigned line, const Block &block, const Piece &piece,
                 Operand &op);
  bool parseAddress(unsigned line, const Block &block, const Piece &a,
                    const Piece &b, Instr &instr);
  std::optional<Operand> parseRegister(unsigned line, const Block &block,
                                       const Piece &piece, bool &failed);
  bool parseTarget(unsigned line, unsigned blockIndex, const Piece &piece,
                   uint32_t &target);
  bool parseSignal(unsigned line, const Piece &piece, uint8_t &sig);
  bool parseShift(unsigned line, const Piece &piece, Shift &shift,
                  uint8_t &amount);
  bool parseSmall(unsigned line, const Piece &piece, unsigned limit,
                  const char *what, uint8_t &value);
  bool checkArity(unsigned line, const Part &part, size_t min, size_t max);
  void checkBlock(Block &block, unsigned blockIndex);
  void fillData(DataBlock &data, std::vector<uint8_t> &bytes);
  void checkOverlaps();

  std::string_view source;
  std::string fileName;
  const AssemblerOptions &options;
  std::vector<std::string> &errors;
  /// Errors of both passes, printed in source order.
  struct Diagnostic {
    unsigned line, col, order;
    std::string text;
  };
  std::vector<Diagnostic> diagnostics;
  unsigned errorCount = 0;

  /// Lines are numbered across included files: `line` everywhere indexes
  /// this table.
  struct SourceLine {
    unsigned file, number;
  };
  std::vector<SourceLine> lines;
  std::vector<std::string> files;
  std::vector<std::string> includeStack;
  std::vector<Block> blocks;
  std::vector<DataBlock> dataBlocks;
  std::vector<DataInit> dataInits; // filled by the second pass
  std::vector<RingConfig> rings;
  std::vector<unsigned> ringLines;
  std::map<std::string, SymbolDef> symbols;
  std::map<std::string, Operand> regAliases;
  std::map<std::string, uint8_t> sigAliases;
  std::multimap<std::string, const InstrInfo *> mnemonics;
  /// Where the next line goes: a code block, a data block, or nowhere.
  enum class Mode { None, Code, Data } mode = Mode::None;
  unsigned current = 0;
  uint32_t meUsed = 0;
};

} // namespace

bool Assembler::error(unsigned line, unsigned col, const std::string &message) {
  if (errorCount < options.maxErrors)
    diagnostics.push_back(Diagnostic{
        line, col, errorCount,
        files[lines[line].file] + ":" + std::to_string(lines[line].number) +
            ":" + std::to_string(col) + ": error: " + message});
  ++errorCount;
  return false;
}

std::string Assembler::lineRef(unsigned line, unsigned from) const {
  const SourceLine &l = lines[line];
  if (l.file == lines[from].file)
    return "line " + std::to_string(l.number);
  return files[l.file] + ":" + std::to_string(l.number);
}

//===----------------------------------------------------------------------===//
// Pass 1: lines, directives, symbols and layout
//===----------------------------------------------------------------------===//

void Assembler::firstPass() {
  files.push_back(fileName);
  lines.push_back(SourceLine{0, 1}); // for errors about the whole program
  readSource(source, 0);
}

void Assembler::readSource(std::string_view text, unsigned file) {
  size_t pos = 0;
  unsigned number = 0;
  while (pos <= text.size() && !tooManyErrors()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos)
      eol = text.size();
    lines.push_back(SourceLine{file, ++number});
    std::string line(text.substr(pos, eol - pos));
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    parseLine(unsigned(lines.size() - 1), line);
    pos = eol + 1;
  }
}

void Assembler::include(unsigned line, const Piece &arg) {
  const std::string &t = arg.text;
  if (t.size() < 2 || t.front() != '"' || t.back() != '"')
    return (void)error(line, arg.col, "usage: .include \"FILE\"");
  std::string path = t.substr(1, t.size() - 2);
  // Relative to the including file.
  const std::string &from = files[lines[line].file];
  size_t slash = from.rfind('/');
  if (!path.empty() && path[0] != '/' && slash != std::string::npos)
    path = from.substr(0, slash + 1) + path;
  if (includeStack.size() >= 16)
    return (void)error(line, arg.col, ".include nested too deeply");
  for (const std::string &open : includeStack)
    if (open == path)
      return (void)error(line, arg.col, "'" + path + "' includes itself");
  std::string contents, why;
  if (!options.readFile(path, contents, why))
    return (void)error(line, arg.col, why);
  files.push_back(path);
  includeStack.push_back(path);
  readSource(contents, unsigned(files.size() - 1));
  includeStack.pop_back();
}

void Assembler::parseLine(unsigned line, std::string text) {
  // Comments: ';' or '//' to the end of the line.
  size_t cut = std::min(text.find(';'), text.find("//"));
  if (cut != std::string::npos)
    text.resize(cut);
  for (char &c : text)
    if (c == '\t')
      c = ' ';
  for (size_t i = 0; i < text.size(); ++i)
    if (static_cast<unsigned char>(text[i]) < 0x20 ||
        static_cast<unsigned char>(text[i]) >= 0x7f)
      return (void)error(line, unsigned(i) + 1,
                         "unexpected character in the source");
  size_t pos = 0;
  auto skipSpaces = [&] {
    while (pos < text.size() && text[pos] == ' ')
      ++pos;
  };
  // Labels: "name:" at the start, any number of them.
  for (;;) {
    skipSpaces();
    size_t start = pos, end = pos;
    if (end < text.size() && isIdentStart(text[end]) && text[end] != '.') {
      while (end < text.size() && isIdentChar(text[end]))
        ++end;
      size_t colon = end;
      while (colon < text.size() && text[colon] == ' ')
        ++colon;
      if (colon < text.size() && text[colon] == ':') {
        defineLabel(line, unsigned(start) + 1, text.substr(start, end - start));
        pos = colon + 1;
        continue;
      }
    }
    break;
  }
  skipSpaces();
  if (pos == text.size())
    return;
  if (text[pos] == '.') {
    size_t end = pos + 1;
    while (end < text.size() && isIdentChar(text[end]))
      ++end;
    std::string name = lower(text.substr(pos, end - pos));
    std::vector<Piece> args;
    if (!splitArgs(line, text, end, text.size(), args))
      return;
    directive(line, name, unsigned(pos) + 1, args);
    return;
  }
  Statement statement;
  statement.line = line;
  if (!splitParts(line, text, pos, statement.parts))
    return;
  if (mode != Mode::Code)
    return (void)error(line, unsigned(pos) + 1,
                       mode == Mode::Data
                           ? "instruction in a data section; start code with "
                             ".me N"
                           : "instruction outside a code block; start one "
                             "with .me N");
  blocks[current].statements.push_back(std::move(statement));
}

bool Assembler::splitArgs(unsigned line, const std::string &text, size_t begin,
                          size_t end, std::vector<Piece> &args) {
  int depth = 0;
  size_t start = begin;
  auto flush = [&](size_t stop) {
    size_t b = start, e = stop;
    while (b < e && text[b] == ' ')
      ++b;
    while (e > b && text[e - 1] == ' ')
      --e;
    args.push_back(Piece{text.substr(b, e - b), unsigned(b) + 1});
    if (b == e)
      return error(line, unsigned(b) + 1, "empty operand");
    return true;
  };
  bool any = false;
  for (size_t i = begin; i < end; ++i) {
    char c = text[i];
    if (c != ' ')
      any = true;
    if (c == '(' || c == '[')
      ++depth;
    else if (c == ')' || c == ']') {
      if (--depth < 0)
        return error(line, unsigned(i) + 1,
                     std::string("unbalanced '") + c + "'");
    } else if (c == ',' && depth == 0) {
      if (!flush(i))
        return false;
      start = i + 1;
    }
  }
  if (depth != 0)
    return error(line, unsigned(end) + 1, "missing ')' or ']'");
  if (!any)
    return true;
  return flush(end);
}

bool Assembler::splitParts(unsigned line, const std::string &text, size_t pos,
                           std::vector<Part> &parts) {
  for (;;) {
    while (pos < text.size() && text[pos] == ' ')
      ++pos;
    Part part;
    part.col = unsigned(pos) + 1;
    while (pos < text.size() && text[pos] != ' ' && text[pos] != '[' &&
           text[pos] != ',' && text[pos] != ']')
      part.name += text[pos++];
    if (part.name.empty())
      return error(line, unsigned(pos) + 1,
                   parts.empty() ? "expected an instruction"
                                 : "expected a token after ','");
    part.name = lower(part.name);
    while (pos < text.size() && text[pos] == ' ')
      ++pos;
    if (pos < text.size() && text[pos] == '[') {
      part.bracketed = true;
      int depth = 0;
      size_t close = pos;
      for (; close < text.size(); ++close) {
        if (text[close] == '[' || text[close] == '(')
          ++depth;
        else if ((text[close] == ']' || text[close] == ')') && --depth == 0)
          break;
      }
      if (close >= text.size())
        return error(line, unsigned(pos) + 1, "missing ']'");
      if (text[close] != ']')
        return error(line, unsigned(close) + 1, "unbalanced ')'");
      if (!splitArgs(line, text, pos + 1, close, part.args))
        return false;
      pos = close + 1;
    }
    parts.push_back(std::move(part));
    while (pos < text.size() && text[pos] == ' ')
      ++pos;
    if (pos == text.size())
      return true;
    if (text[pos] != ',')
      return error(line, unsigned(pos) + 1,
                   std::string("unexpected '") + text[pos] + "'");
    ++pos;
  }
}

static bool isRegisterName(const std::string &name) {
  if (name.size() >= 2 && (name[0] == 'a' || name[0] == 'b') &&
      parseDecimal(name, 1))
    return true;
  return name.size() >= 2 && name[0] == 's' && parseDecimal(name, 1);
}

bool Assembler::defineSymbol(unsigned line, unsigned col,
                             const std::string &name, SymbolDef def) {
  if (isRegisterName(name))
    return error(line, col, "'" + name + "' is a register name");
  if (regAliases.count(name) || sigAliases.count(name))
    return error(line, col, "'" + name + "' already names a register");
  auto [it, inserted] = symbols.emplace(name, def);
  if (!inserted)
    return error(line, col,
                 "'" + name + "' is already defined (at " +
                     lineRef(it->second.line, line) + ")");
  it->second.line = line;
  return true;
}

void Assembler::defineLabel(unsigned line, unsigned col,
                            const std::string &name) {
  SymbolDef def;
  def.line = line;
  if (mode == Mode::Code) {
    def.kind = SymbolKind::Code;
    def.block = current;
    def.value = int64_t(blocks[current].statements.size());
  } else if (mode == Mode::Data) {
    def.kind = SymbolKind::Data;
    def.block = uint32_t(dataBlocks[current].memory);
    def.value = dataBlocks[current].address + dataBlocks[current].size;
  } else {
    (void)error(line, col,
                "label outside a code block or data section; start one with "
                ".me N or .data MEMORY, ADDRESS");
    return;
  }
  defineSymbol(line, col, name, def);
}

bool Assembler::parseMeSpec(unsigned line, const std::vector<Piece> &args,
                            uint32_t &mask) {
  mask = 0;
  if (args.empty())
    return error(line, 1,
                 ".me needs the ME numbers (.me 0, .me 0-3, .me 1, 5)");
  for (const Piece &arg : args) {
    size_t dash = arg.text.find('-');
    std::optional<unsigned> lo = parseDecimal(arg.text.substr(0, dash));
    std::optional<unsigned> hi = dash == std::string::npos
                                     ? lo
                                     : parseDecimal(arg.text.substr(dash + 1));
    if (!lo || !hi || *hi < *lo)
      return error(line, arg.col,
                   "'" + arg.text +
                       "' is not an ME number or range (N or N-M)");
    for (unsigned me = *lo; me <= *hi; ++me) {
      if (me >= options.machine.numMEs)
        return error(line, arg.col,
                     "ME " + std::to_string(me) +
                         " does not exist (the machine has " +
                         std::to_string(options.machine.numMEs) + " MEs)");
      mask |= 1u << me;
    }
  }
  return true;
}

bool Assembler::constant(unsigned line, const Piece &piece, int64_t &value) {
  return evaluate(line, piece, value, /*allSymbols=*/false);
}

static std::optional<Memory> memoryByName(const std::string &name) {
  for (Memory m : {Memory::Scratch, Memory::Sram, Memory::Dram})
    if (name == memoryName(m))
      return m;
  return std::nullopt;
}

void Assembler::directive(unsigned line, const std::string &name, unsigned col,
                          std::vector<Piece> &args) {
  auto want = [&](size_t n, const char *usage) {
    if (args.size() == n)
      return true;
    return error(line, col, std::string("usage: ") + usage);
  };
  if (name == ".include") {
    if (!want(1, ".include \"FILE\""))
      return;
    include(line, args[0]);
    return;
  }
  if (name == ".me") {
    uint32_t mask;
    if (!parseMeSpec(line, args, mask)) {
      // Keep reading the block's lines (for their own errors) in a block
      // that loads no ME.
      mask = 0;
    }
    for (unsigned i = 0; i < blocks.size(); ++i)
      if (mask && blocks[i].code.meMask == mask) {
        mode = Mode::Code;
        current = i; // resumes the block
        return;
      }
    if (mask & meUsed)
      return (void)error(line, col,
                         "an ME of '.me' already has code from another .me");
    meUsed |= mask;
    Block block;
    block.code.meMask = mask;
    for (const Piece &arg : args)
      block.spec += (block.spec.empty() ? "" : ", ") + arg.text;
    block.line = line;
    block.col = col;
    blocks.push_back(std::move(block));
    mode = Mode::Code;
    current = unsigned(blocks.size() - 1);
    return;
  }
  if (name == ".ctx_mode" || name == ".ctx_enable") {
    if (mode != Mode::Code)
      return (void)error(line, col, name + " outside a code block");
    bool isMode = name == ".ctx_mode";
    int64_t v;
    if (!want(1, isMode ? ".ctx_mode 4|8" : ".ctx_enable MASK") ||
        !constant(line, args[0], v))
      return;
    CodeBlock &code = blocks[current].code;
    if (isMode) {
      if (v != 4 && v != 8)
        return (void)error(line, args[0].col,
                           "the context mode is 4 or 8 contexts");
      if (!blocks[current].statements.empty())
        return (void)error(line, col,
                           ".ctx_mode must come before the block's first "
                           "instruction");
      code.ctxMode = uint8_t(v);
      if (v == 4)
        code.ctxEnable &= 0x0f;
    } else {
      unsigned limit = code.ctxMode == 8 ? 0xff : 0x0f;
      if (v <= 0 || v > limit)
        return (void)error(line, args[0].col,
                           "context mask must enable some of contexts 0-" +
                               std::to_string(code.ctxMode - 1));
      code.ctxEnable = uint8_t(v);
    }
    return;
  }
  if (name == ".data") {
    if (!want(2, ".data scratch|sram|dram, ADDRESS"))
      return;
    std::optional<Memory> memory = memoryByName(lower(args[0].text));
    if (!memory)
      return (void)error(line, args[0].col,
                         "unknown memory '" + args[0].text +
                             "' (scratch, sram or dram)");
    int64_t address;
    if (!constant(line, args[1], address))
      return;
    if (address < 0 || address > 0xffffffffll)
      return (void)error(line, args[1].col, "address out of range");
    DataBlock data;
    data.memory = *memory;
    data.address = uint32_t(address);
    data.line = line;
    data.col = col;
    dataBlocks.push_back(data);
    mode = Mode::Data;
    current = unsigned(dataBlocks.size() - 1);
    return;
  }
  if (name == ".word" || name == ".half" || name == ".byte" ||
      name == ".space" || name == ".align") {
    if (mode != Mode::Data)
      return (void)error(
          line, col, name + " outside a data section (.data MEMORY, ADDRESS)");
    DataBlock &data = dataBlocks[current];
    DataItem item;
    item.line = line;
    item.offset = data.size;
    if (name == ".space" || name == ".align") {
      int64_t n;
      if (!want(1, name == ".space" ? ".space BYTES" : ".align BYTES") ||
          !constant(line, args[0], n))
        return;
      if (n < 0 || n > (int64_t(1) << 28) ||
          (name == ".align" && (n == 0 || (n & (n - 1)))))
        return (void)error(line, args[0].col,
                           name == ".align" ? "alignment must be a power of two"
                                            : "bad size");
      item.bytes = name == ".space"
                       ? uint32_t(n)
                       : uint32_t((n - (data.address + data.size) % n) % n);
    } else {
      if (args.empty())
        return (void)error(line, col, name + " needs values");
      item.width = name == ".word" ? 4 : name == ".half" ? 2 : 1;
      item.values = args;
      item.bytes = item.width * uint32_t(args.size());
    }
    data.size += item.bytes;
    data.items.push_back(std::move(item));
    return;
  }
  if (name == ".equ") {
    int64_t v;
    if (!want(2, ".equ NAME, VALUE"))
      return;
    const std::string &symbol = args[0].text;
    if (symbol.empty() || !isIdentStart(symbol[0]) ||
        !std::all_of(symbol.begin(), symbol.end(), isIdentChar))
      return (void)error(line, args[0].col, "'" + symbol + "' is not a name");
    if (!constant(line, args[1], v))
      return;
    if (v < -(int64_t(1) << 31) || v > 0xffffffffll)
      return (void)error(line, args[1].col, "value does not fit in 32 bits");
    SymbolDef def;
    def.kind = SymbolKind::Constant;
    def.value = v;
    defineSymbol(line, args[0].col, symbol, def);
    return;
  }
  if (name == ".reg" || name == ".sig") {
    bool isReg = name == ".reg";
    if (!want(2, isReg ? ".reg NAME, REGISTER" : ".sig NAME, sN"))
      return;
    const std::string &alias = args[0].text;
    if (alias.empty() || !isIdentStart(alias[0]) ||
        !std::all_of(alias.begin(), alias.end(), isIdentChar) ||
        isRegisterName(alias))
      return (void)error(line, args[0].col,
                         "'" + alias + "' cannot name a register");
    if (symbols.count(alias) || regAliases.count(alias) ||
        sigAliases.count(alias))
      return (void)error(line, args[0].col,
                         "'" + alias + "' is already defined");
    if (isReg) {
      // Register ranges depend on the block's context mode: check them
      // where the name is used.
      Block any;
      any.code.ctxMode = 4;
      bool failed = false;
      std::optional<Operand> op = parseRegister(line, any, args[1], failed);
      if (failed)
        return;
      if (!op || op->isImm() || op->isNone())
        return (void)error(line, args[1].col,
                           "'" + args[1].text + "' is not a register");
      regAliases[alias] = *op;
    } else {
      uint8_t sig;
      if (parseSignal(line, args[1], sig))
        sigAliases[alias] = sig;
    }
    return;
  }
  if (name == ".ring") {
    int64_t number, base, size;
    if (!want(3, ".ring NUMBER, SCRATCH_ADDRESS, SIZE_IN_WORDS") ||
        !constant(line, args[0], number) || !constant(line, args[1], base) ||
        !constant(line, args[2], size))
      return;
    if (number < 0 || number >= int64_t(numRings))
      return (void)error(line, args[0].col, "rings are numbered 0-15");
    if (size != 128 && size != 256 && size != 512 && size != 1024)
      return (void)error(line, args[2].col,
                         "a ring holds 128, 256, 512 or 1024 words");
    if (base < 0 || base % (size * 4) != 0)
      return (void)error(
          line, args[1].col,
          "a ring's base must be aligned to its size in bytes (" +
              std::to_string(size * 4) + ")");
    if (base + size * 4 > int64_t(options.machine.scratchBytes))
      return (void)error(line, args[1].col,
                         "the ring does not fit in scratch memory (" +
                             std::to_string(options.machine.scratchBytes) +
                             " bytes)");
    for (size_t i = 0; i < rings.size(); ++i) {
      const RingConfig &other = rings[i];
      if (other.ring == number)
        return (void)error(line, args[0].col,
                           "ring " + std::to_string(number) +
                               " is already configured (at " +
                               lineRef(ringLines[i], line) + ")");
      if (base < int64_t(other.base + other.sizeWords * 4) &&
          int64_t(other.base) < base + size * 4)
        return (void)error(line, args[1].col,
                           "the ring overlaps ring " +
                               std::to_string(other.ring) + " (at " +
                               lineRef(ringLines[i], line) + ")");
    }
    rings.push_back(
        RingConfig{uint8_t(number), uint32_t(base), uint32_t(size)});
    ringLines.push_back(line);
    return;
  }
  error(line, col, "unknown directive '" + name + "'");
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

namespace {
/// Precedence climbing over C's integer operators (no assignment, no
/// comparison). Symbols are looked up through `lookup`.
class ExprParser {
public:
  ExprParser(const std::string &text,
             std::function<bool(const std::string &, size_t, int64_t &)> lookup)
      : text(text), lookup(std::move(lookup)) {}

  bool parse(int64_t &value) {
    if (!binary(0, value))
      return false;
    skip();
    if (pos != text.size())
      return fail(pos, "unexpected '" + text.substr(pos, 1) + "'");
    return true;
  }
  std::string message;
  size_t errorPos = 0;

private:
  bool fail(size_t at, std::string why) {
    if (message.empty()) {
      message = std::move(why);
      errorPos = at;
    }
    return false;
  }
  void skip() {
    while (pos < text.size() && text[pos] == ' ')
      ++pos;
  }
  static int precedence(const std::string &op) {
    if (op == "|")
      return 1;
    if (op == "^")
      return 2;
    if (op == "&")
      return 3;
    if (op == "<<" || op == ">>")
      return 4;
    if (op == "+" || op == "-")
      return 5;
    if (op == "*" || op == "/" || op == "%")
      return 6;
    return -1;
  }
  std::string peekOp() {
    skip();
    if (pos + 1 < text.size() &&
        (text.compare(pos, 2, "<<") == 0 || text.compare(pos, 2, ">>") == 0))
      return text.substr(pos, 2);
    if (pos < text.size() &&
        std::string("|^&+-*/%").find(text[pos]) != std::string::npos)
      return text.substr(pos, 1);
    return "";
  }
  bool binary(int minPrec, int64_t &lhs) {
    if (!unary(lhs))
      return false;
    for (;;) {
      std::string op = peekOp();
      int prec = precedence(op);
      if (op.empty() || prec < minPrec)
        return true;
      size_t at = pos;
      pos += op.size();
      int64_t rhs;
      if (!binary(prec + 1, rhs))
        return false;
      if ((op == "/" || op == "%") && rhs == 0)
        return fail(at, "division by zero");
      if ((op == "<<" || op == ">>") && (rhs < 0 || rhs > 63))
        return fail(at, "shift amount out of range");
      if (op == "|")
        lhs |= rhs;
      else if (op == "^")
        lhs ^= rhs;
      else if (op == "&")
        lhs &= rhs;
      else if (op == "<<")
        lhs = int64_t(uint64_t(lhs) << rhs);
      else if (op == ">>")
        lhs >>= rhs;
      else if (op == "+")
        lhs += rhs;
      else if (op == "-")
        lhs -= rhs;
      else if (op == "*")
        lhs *= rhs;
      else if (op == "/")
        lhs /= rhs;
      else
        lhs %= rhs;
      if (lhs > (int64_t(1) << 40) || lhs < -(int64_t(1) << 40))
        return fail(at, "value out of range");
    }
  }
  bool unary(int64_t &value) {
    skip();
    if (pos >= text.size())
      return fail(pos, "expected a value");
    char c = text[pos];
    if (c == '-' || c == '~' || c == '+' || c == '(') {
      // Each level recurses: deep nesting is an error, not a stack
      // overflow.
      if (depth == kMaxDepth)
        return fail(pos, "expression nests too deeply (more than " +
                             std::to_string(kMaxDepth) +
                             " parentheses and unary operators)");
      ++depth;
      bool ok = c == '(' ? parenthesized(value) : (++pos, unary(value));
      --depth;
      if (!ok)
        return false;
      value = c == '-' ? -value : c == '~' ? ~value : value;
      return true;
    }
    if (std::isdigit(static_cast<unsigned char>(c)))
      return number(value);
    if (isIdentStart(c)) {
      size_t start = pos;
      while (pos < text.size() && isIdentChar(text[pos]))
        ++pos;
      std::string name = text.substr(start, pos - start);
      if (!lookup(name, start, value))
        return fail(start, "");
      return true;
    }
    return fail(pos, "unexpected '" + text.substr(pos, 1) + "'");
  }
  bool parenthesized(int64_t &value) {
    ++pos;
    if (!binary(0, value))
      return false;
    skip();
    if (pos >= text.size() || text[pos] != ')')
      return fail(pos, "missing ')'");
    ++pos;
    return true;
  }
  bool number(int64_t &value) {
    size_t start = pos;
    unsigned base = 10;
    if (text.compare(pos, 2, "0x") == 0 || text.compare(pos, 2, "0X") == 0) {
      base = 16;
      pos += 2;
    } else if (text.compare(pos, 2, "0b") == 0 ||
               text.compare(pos, 2, "0B") == 0) {
      base = 2;
      pos += 2;
    }
    uint64_t v = 0;
    size_t digits = 0;
    while (pos < text.size() && isIdentChar(text[pos])) {
      char c = char(std::tolower(static_cast<unsigned char>(text[pos])));
      unsigned d = std::isdigit(static_cast<unsigned char>(c))
                       ? unsigned(c - '0')
                   : (c >= 'a' && c <= 'f') ? unsigned(c - 'a' + 10)
                                            : 99;
      if (d >= base)
        return fail(start,
                    "bad number '" + text.substr(start, pos + 1 - start) + "'");
      v = v * base + d;
      if (v > (uint64_t(1) << 40))
        return fail(start, "number out of range");
      ++pos;
      ++digits;
    }
    if (digits == 0)
      return fail(start, "bad number");
    value = int64_t(v);
    return true;
  }

  const std::string &text;
  std::function<bool(const std::string &, size_t, int64_t &)> lookup;
  size_t pos = 0;
  static constexpr unsigned kMaxDepth = 1000;
  unsigned depth = 0;
};
} // namespace

bool Assembler::evaluate(unsigned line, const Piece &piece, int64_t &value,
                         bool allSymbols) {
  std::string why;
  ExprParser parser(
      piece.text, [&](const std::string &name, size_t, int64_t &v) {
        auto it = symbols.find(name);
        if (it == symbols.end()) {
          why = isRegisterName(name) || regAliases.count(name)
                    ? "register '" + name + "' where a value is expected"
                    : "undefined symbol '" + name + "'" +
                          (allSymbols ? ""
                                      : " (directives use symbols defined "
                                        "above them)");
          return false;
        }
        v = it->second.value;
        return true;
      });
  if (parser.parse(value))
    return true;
  return error(line, piece.col + unsigned(parser.errorPos),
               parser.message.empty() ? why : parser.message);
}

//===----------------------------------------------------------------------===//
// Pass 2: instructions
//===----------------------------------------------------------------------===//

bool Assembler::checkArity(unsigned line, const Part &part, size_t min,
                           size_t max) {
  if (!part.bracketed && max > 0)
    return error(line, part.col, "'" + part.name + "' needs [operands]");
  if (part.args.size() >= min && part.args.size() <= max)
    return true;
  std::string expected =
      min == max ? std::to_string(min)
                 : std::to_string(min) + " to " + std::to_string(max);
  return error(line, part.col,
               "'" + part.name + "' takes " + expected + " operand" +
                   (max == 1 ? "" : "s") + ", not " +
                   std::to_string(part.args.size()));
}

std::optional<Operand> Assembler::parseRegister(unsigned line,
                                                const Block &block,
                                                const Piece &piece,
                                                bool &failed) {
  std::string t = piece.text;
  auto alias = regAliases.find(t);
  Operand op;
  bool found = true;
  unsigned perBank = block.code.ctxMode == 8 ? 16 : 32;
  auto indexed = [&](OperandClass cls, size_t from, unsigned limit,
                     const char *what) -> std::optional<Operand> {
    std::optional<unsigned> n = parseDecimal(t, from);
    if (!n)
      return std::nullopt;
    if (*n >= limit) {
      failed = true;
      error(line, piece.col,
            "'" + t + "' does not exist: " + what +
                (cls == OperandClass::NN
                     ? ""
                     : std::string(" in ") +
                           std::to_string(block.code.ctxMode) +
                           "-context mode"));
      return std::nullopt;
    }
    return Operand::make(cls, *n);
  };
  std::string perBankText = std::to_string(perBank);
  if (alias != regAliases.end())
    op = alias->second;
  else if (t == "--")
    op = Operand::none();
  else if (t.size() > 1 && (t[0] == 'a' || t[0] == 'b') && parseDecimal(t, 1)) {
    bool isA = t[0] == 'a';
    std::string what =
        "a context has " + perBankText + " GPRs in bank " + (isA ? "A" : "B");
    if (auto r = indexed(isA ? OperandClass::GprA : OperandClass::GprB, 1,
                         perBank, what.c_str()))
      return r;
    return std::nullopt;
  } else if (t.compare(0, 2, "$$") == 0 && parseDecimal(t, 2)) {
    std::string what = "a context has " + perBankText + " $$ registers";
    return indexed(OperandClass::XferD, 2, perBank, what.c_str());
  } else if (t[0] == '$' && parseDecimal(t, 1)) {
    std::string what = "a context has " + perBankText + " $ registers";
    return indexed(OperandClass::XferS, 1, perBank, what.c_str());
  } else if (t.compare(0, 2, "n$") == 0 && parseDecimal(t, 2)) {
    return indexed(OperandClass::NN, 2, numNN,
                   "an ME has 128 next-neighbour registers");
  } else if (t.compare(0, 8, "*l$index") == 0 && t.size() >= 9 &&
             (t[8] == '0' || t[8] == '1')) {
    unsigned pointer = unsigned(t[8] - '0');
    std::string rest = t.substr(9);
    if (rest.empty())
      op = Operand::lm(pointer, LmMode::Offset, 0);
    else if (rest == "++")
      op = Operand::lm(pointer, LmMode::PostInc, 0);
    else if (rest == "--")
      op = Operand::lm(pointer, LmMode::PostDec, 0);
    else if (rest.size() > 2 && rest.front() == '[' && rest.back() == ']') {
      std::optional<unsigned> n = parseDecimal(rest.substr(1, rest.size() - 2));
      if (!n || *n > 15) {
        failed = true;
        error(line, piece.col,
              "local-memory offsets are 0-15 words: '" + t + "'");
        return std::nullopt;
      }
      op = Operand::lm(pointer, LmMode::Offset, *n);
    } else
      found = false;
  } else if (t == "*n$index++")
    op = Operand::special(SpecialOperand::NnRing);
  else if (t == "*$index")
    op = Operand::special(SpecialOperand::XferSIndex);
  else if (t == "*$$index")
    op = Operand::special(SpecialOperand::XferDIndex);
  else if (t == "*$index++")
    op = Operand::special(SpecialOperand::XferSIndexInc);
  else if (t == "*$$index++")
    op = Operand::special(SpecialOperand::XferDIndexInc);
  else
    found = false;
  if (!found)
    return std::nullopt;
  // An alias may name a register the block's context mode lacks.
  if (alias != regAliases.end() && op.cls() <= OperandClass::XferD &&
      op.index() >= perBank) {
    failed = true;
    error(line, piece.col,
          "'" + t + "' names " + printOperand(op, 0) +
              ", which does not exist in " +
              std::to_string(block.code.ctxMode) + "-context mode");
    return std::nullopt;
  }
  return op;
}

bool Assembler::parseSource(unsigned line, const Block &block,
                            const Piece &piece, Operand &op, Instr &instr,
                            bool allowImm) {
  bool failed = false;
  if (std::optional<Operand> reg = parseRegister(line, block, piece, failed)) {
    op = *reg;
    return true;
  }
  if (failed)
    return false;
  if (!allowImm) {
    if (piece.text[0] == '*' || piece.text[0] == '$')
      return error(line, piece.col, "'" + piece.text + "' is not a register");
    return error(line, piece.col,
                 "expected a register, not '" + piece.text + "'");
  }
  if (piece.text[0] == '*' || piece.text[0] == '$')
    return error(line, piece.col, "'" + piece.text + "' is not a register");
  int64_t value;
  if (!evaluate(line, piece, value, true))
    return false;
  if (value < 0 || value > 0xffff)
    return error(line, piece.col,
                 "immediate " + piece.text + " (" + std::to_string(value) +
                     ") does not fit in 16 bits unsigned; load it with "
                     "immed[] first");
  if (instr.a.isImm() || instr.b.isImm())
    return error(line, piece.col,
                 "both source operands are immediates; an instruction has "
                 "one immediate field");
  op = Operand::imm();
  instr.imm = uint32_t(value);
  return true;
}

bool Assembler::parseAddress(unsigned line, const Block &block, const Piece &a,
                             const Piece &b, Instr &instr) {
  if (!parseSource(line, block, a, instr.a, instr))
    return false;
  bool failed = false;
  if (!instr.a.isImm() || parseRegister(line, block, b, failed) || failed)
    return !failed && parseSource(line, block, b, instr.b, instr);
  // Two constants: one immediate holds their sum.
  int64_t value;
  if (!evaluate(line, b, value, true))
    return false;
  value += instr.imm;
  if (value < 0 || value > 0xffff)
    return error(line, b.col,
                 "the address " + std::to_string(value) +
                     " does not fit in 16 bits unsigned; put it in a register");
  instr.imm = uint32_t(value);
  instr.b = Operand::none();
  return true;
}

bool Assembler::parseDest(unsigned line, const Block &block, const Piece &piece,
                          Operand &op) {
  bool failed = false;
  if (std::optional<Operand> reg = parseRegister(line, block, piece, failed)) {
    op = *reg;
    return true;
  }
  if (failed)
    return false;
  return error(line, piece.col,
               "expected a destination register, not '" + piece.text + "'");
}

bool Assembler::parseTarget(unsigned line, unsigned blockIndex,
                            const Piece &piece, uint32_t &target) {
  auto it = symbols.find(piece.text);
  int64_t value;
  if (it != symbols.end() && it->second.kind == SymbolKind::Code) {
    if (it->second.block != blockIndex)
      return error(line, piece.col,
                   "label '" + piece.text + "' is in another code block (" +
                       lineRef(it->second.line, line) + ")");
    value = it->second.value;
  } else {
    if (it != symbols.end())
      return error(line, piece.col, "'" + piece.text + "' is not a code label");
    if (isIdentStart(piece.text[0]) &&
        std::all_of(piece.text.begin(), piece.text.end(), isIdentChar))
      return error(line, piece.col, "undefined label '" + piece.text + "'");
    if (!evaluate(line, piece, value, true))
      return false;
  }
  size_t size = blocks[blockIndex].statements.size();
  if (value < 0 || uint64_t(value) >= size)
    return error(line, piece.col,
                 "branch target " + std::to_string(value) +
                     " is outside the block's " + std::to_string(size) +
                     " instructions");
  target = uint32_t(value);
  return true;
}

bool Assembler::parseSignal(unsigned line, const Piece &piece, uint8_t &sig) {
  auto alias = sigAliases.find(piece.text);
  if (alias != sigAliases.end()) {
    sig = alias->second;
    return true;
  }
  std::optional<unsigned> n;
  if (piece.text.size() > 1 && piece.text[0] == 's')
    n = parseDecimal(piece.text, 1);
  if (!n || *n == 0 || *n >= numSignals)
    return error(line, piece.col,
                 "expected a signal s1-s15 or a .sig name, not '" + piece.text +
                     "'");
  sig = uint8_t(*n);
  return true;
}

bool Assembler::parseShift(unsigned line, const Piece &piece, Shift &shift,
                           uint8_t &amount) {
  std::string t;
  for (char c : piece.text)
    if (c != ' ')
      t += char(std::tolower(static_cast<unsigned char>(c)));
  amount = 0;
  if (t == "<<indirect")
    return shift = Shift::LslInd, true;
  if (t == ">>indirect")
    return shift = Shift::LsrInd, true;
  if (t == ">>asrindirect")
    return shift = Shift::AsrInd, true;
  struct Form {
    const char *prefix;
    Shift kind;
  } forms[] = {{">>rot", Shift::Rotr},
               {"<<rot", Shift::Rotr},
               {">>asr", Shift::Asr},
               {"<<", Shift::Lsl},
               {">>", Shift::Lsr}};
  for (const Form &form : forms) {
    size_t n = std::char_traits<char>::length(form.prefix);
    if (t.compare(0, n, form.prefix) != 0)
      continue;
    std::optional<unsigned> v = parseDecimal(t, n);
    if (!v || *v == 0 || *v > 31)
      return error(line, piece.col,
                   "shift amounts are 1-31: '" + piece.text + "'");
    shift = form.kind;
    amount = uint8_t(std::string(form.prefix) == "<<rot" ? 32 - *v : *v);
    return true;
  }
  return error(line, piece.col,
               "expected a shift (<<N, >>N, >>rotN, <<rotN, >>asrN, "
               "<<indirect, >>indirect, >>asr indirect), not '" +
                   piece.text + "'");
}

bool Assembler::parseSmall(unsigned line, const Piece &piece, unsigned limit,
                           const char *what, uint8_t &value) {
  int64_t v;
  if (!evaluate(line, piece, v, true))
    return false;
  if (v < 0 || v >= int64_t(limit))
    return error(line, piece.col,
                 std::string(what) + " must be 0-" + std::to_string(limit - 1) +
                     ", not " + std::to_string(v));
  value = uint8_t(v);
  return true;
}

/// Rows of a mnemonic that share it (alu ops, memory commands).
static const InstrInfo *
findRow(const std::multimap<std::string, const InstrInfo *> &mnemonics,
        const std::string &mnemonic, const std::string &sub) {
  auto [begin, end] = mnemonics.equal_range(mnemonic);
  for (auto it = begin; it != end; ++it)
    if (sub == it->second->sub)
      return it->second;
  return nullptr;
}

static std::string
subsOf(const std::multimap<std::string, const InstrInfo *> &mnemonics,
       const std::string &mnemonic) {
  std::string list;
  auto [begin, end] = mnemonics.equal_range(mnemonic);
  for (auto it = begin; it != end; ++it)
    list += (list.empty() ? "" : ", ") + std::string(it->second->sub);
  return list;
}

bool Assembler::encodeStatement(Block &block, unsigned blockIndex,
                                const Statement &st, Instr &in) {
  unsigned line = st.line;
  const Part &head = st.parts[0];
  const std::vector<Piece> &args = head.args;
  std::string mnemonic = head.name == "alu_shf" ? "alu" : head.name;
  if (!mnemonics.count(mnemonic))
    return error(line, head.col, "unknown instruction '" + head.name + "'");
  const InstrInfo *info = mnemonics.find(mnemonic)->second;
  // Rows selected by a token: the ALU operation or the memory command.
  if (info->format == Format::Alu) {
    size_t want = head.name == "alu_shf" ? 5 : 4;
    if (!checkArity(line, head, want, want))
      return false;
    info = findRow(mnemonics, "alu", lower(args[2].text));
    if (!info)
      return error(line, args[2].col,
                   "unknown ALU operation '" + args[2].text + "' (" +
                       subsOf(mnemonics, "alu") + ")");
  } else if (info->format == Format::Mem) {
    if (!checkArity(line, head, 4, 5))
      return false;
    info = findRow(mnemonics, mnemonic, lower(args[0].text));
    if (!info)
      return error(line, args[0].col,
                   "unknown " + mnemonic + " command '" + args[0].text + "' (" +
                       subsOf(mnemonics, mnemonic) + ")");
  }
  in.op = info->op;
  Format format = info->format;

  // Tokens after the instruction.
  bool deferAllowed = format == Format::Branch || format == Format::BrByte ||
                      format == Format::BrBit || format == Format::BrCtx ||
                      format == Format::BrSignal || format == Format::BrState ||
                      format == Format::Jump || format == Format::Rtn;
  bool any = false;
  for (size_t i = 1; i < st.parts.size(); ++i) {
    const Part &tok = st.parts[i];
    if (tok.name == "defer" && deferAllowed) {
      int64_t n;
      if (!checkArity(line, tok, 1, 1) || !evaluate(line, tok.args[0], n, true))
        return false;
      if (n < 1 || n > 3)
        return error(line, tok.args[0].col,
                     "defer takes 1-3 instructions, not " + std::to_string(n));
      in.defer = uint8_t(n);
    } else if ((tok.name == "sig_done" || tok.name == "ctx_swap") &&
               (format == Format::Mem || format == Format::Hash)) {
      if (in.sigMode != SigMode::None)
        return error(line, tok.col, "a command raises one signal");
      if (!checkArity(line, tok, 1, 1) ||
          !parseSignal(line, tok.args[0], in.sig))
        return false;
      in.sigMode = tok.name == "sig_done" ? SigMode::SigDone : SigMode::CtxSwap;
    } else if (tok.name == "any" && format == Format::CtxArb &&
               !tok.bracketed) {
      any = true;
    } else {
      return error(line, tok.col,
                   "unexpected '" + tok.name + "' after " + head.name);
    }
  }

  switch (format) {
  case Format::None:
    if (head.bracketed)
      return error(line, head.col, "'" + head.name + "' takes no operands");
    return true;
  case Format::CtxArb: {
    if (!checkArity(line, head, 1, numSignals - 1))
      return false;
    std::string first = lower(args[0].text);
    if (first == "voluntary" || first == "kill") {
      if (args.size() != 1 || any)
        return error(line, head.col, "ctx_arb[" + first + "] takes no signals");
      in.field = uint8_t(first == "kill" ? ArbMode::Kill : ArbMode::Voluntary);
      return true;
    }
    for (const Piece &arg : args) {
      uint8_t sig;
      if (!parseSignal(line, arg, sig))
        return false;
      in.sigMask |= uint16_t(1u << sig);
    }
    in.field = uint8_t(any ? ArbMode::Any : ArbMode::All);
    return true;
  }
  case Format::Alu: {
    std::string opName = info->sub;
    if (!parseDest(line, block, args[0], in.dst))
      return false;
    if (head.name == "alu_shf" &&
        !parseShift(line, args[4], in.shift, in.shiftAmount))
      return false;
    if (!parseSource(line, block, args[1], in.a, in) ||
        !parseSource(line, block, args[3], in.b, in))
      return false;
    bool unary = opName == "b" || opName == "~b";
    bool indirect = in.shift >= Shift::LslInd;
    if (in.b.isNone())
      return error(line, args[3].col, "the b operand cannot be --");
    if (indirect) {
      if (!unary)
        return error(line, args[2].col,
                     "an indirect shift takes its amount from the a operand, "
                     "so the operation must be b or ~b");
      if (in.a.isNone())
        return error(line, args[1].col,
                     "an indirect shift needs the amount in the a operand");
    } else if (unary && !in.a.isNone()) {
      return error(line, args[1].col,
                   "ALU operation '" + opName + "' ignores a: write --");
    } else if (!unary && in.a.isNone()) {
      return error(line, args[1].col,
                   "ALU operation '" + opName + "' needs an a operand");
    }
    break;
  }
  case Format::Immed:
  case Format::ImmedHalf: {
    if (!checkArity(line, head, 2, 2) ||
        !parseDest(line, block, args[0], in.dst))
      return false;
    int64_t v;
    if (!evaluate(line, args[1], v, true))
      return false;
    if (format == Format::Immed ? (v < -(int64_t(1) << 31) || v > 0xffffffffll)
                                : (v < 0 || v > 0xffff))
      return error(line, args[1].col,
                   std::string("value does not fit in ") +
                       (format == Format::Immed ? "32" : "16 unsigned") +
                       " bits");
    in.imm = uint32_t(v);
    break;
  }
  case Format::LdField: {
    if (!checkArity(line, head, 3, 4) ||
        !parseDest(line, block, args[0], in.dst))
      return false;
    if (!in.dst.isGpr())
      return error(line, args[0].col,
                   "ld_field writes part of a GPR: the destination must be "
                   "an A or B register");
    const std::string &mask = args[1].text;
    if (mask.size() != 4 || mask.find_first_not_of("01") != std::string::npos ||
        mask == "0000")
      return error(line, args[1].col,
                   "the byte mask is 4 binary digits, byte 3 first (e.g. "
                   "0011), not '" +
                       mask + "'");
    for (char c : mask)
      in.field = uint8_t((in.field << 1) | (c == '1'));
    if (!parseSource(line, block, args[2], in.b, in))
      return false;
    if (args.size() == 4) {
      if (!parseShift(line, args[3], in.shift, in.shiftAmount))
        return false;
      if (in.shift >= Shift::LslInd)
        return error(line, args[3].col, "ld_field has no indirect shift");
    }
    break;
  }
  case Format::ByteAlign:
    if (!checkArity(line, head, 3, 4) ||
        !parseDest(line, block, args[0], in.dst) ||
        !parseSource(line, block, args[1], in.a, in) ||
        !parseSource(line, block, args[2], in.b, in))
      return false;
    in.field = 4;
    if (args.size() == 4 && !parseSmall(line, args[3], 4, "the byte", in.field))
      return false;
    break;
  case Format::Branch:
    if (!checkArity(line, head, 1, 1) ||
        !parseTarget(line, blockIndex, args[0], in.imm))
      return false;
    break;
  case Format::BrByte:
    if (!checkArity(line, head, 4, 4) ||
        !parseSource(line, block, args[0], in.a, in, false) ||
        !parseSmall(line, args[1], 4, "the byte", in.field) ||
        !parseSmall(line, args[2], 256, "the value", in.value) ||
        !parseTarget(line, blockIndex, args[3], in.imm))
      return false;
    break;
  case Format::BrBit:
    if (!checkArity(line, head, 3, 3) ||
        !parseSource(line, block, args[0], in.a, in, false) ||
        !parseSmall(line, args[1], 32, "the bit", in.field) ||
        !parseTarget(line, blockIndex, args[2], in.imm))
      return false;
    break;
  case Format::BrCtx:
    if (!checkArity(line, head, 2, 2) ||
        !parseSmall(line, args[0], block.code.ctxMode, "the context",
                    in.field) ||
        !parseTarget(line, blockIndex, args[1], in.imm))
      return false;
    break;
  case Format::BrSignal:
    if (!checkArity(line, head, 2, 2) ||
        !parseSignal(line, args[0], in.field) ||
        !parseTarget(line, blockIndex, args[1], in.imm))
      return false;
    break;
  case Format::BrState: {
    if (!checkArity(line, head, 2, 2))
      return false;
    std::string name = lower(args[0].text);
    unsigned state = 0;
    while (state < StateCount && stateName(state) != name)
      ++state;
    if (state == StateCount)
      return error(
          line, args[0].col,
          "unknown state '" + args[0].text +
              "' (nn_empty, nn_full, scr_ringN_full, scr_ringN_empty)");
    in.field = uint8_t(state);
    if (!parseTarget(line, blockIndex, args[1], in.imm))
      return false;
    break;
  }
  case Format::Jump:
    if (!checkArity(line, head, 2, 2) ||
        !parseSource(line, block, args[0], in.a, in, false) ||
        !parseTarget(line, blockIndex, args[1], in.imm))
      return false;
    break;
  case Format::Rtn:
    if (!checkArity(line, head, 1, 1) ||
        !parseSource(line, block, args[0], in.a, in, false))
      return false;
    break;
  case Format::CsrRd:
  case Format::CsrWr: {
    bool read = format == Format::CsrRd;
    if (!checkArity(line, head, 2, 2))
      return false;
    const Piece &csrArg = args[read ? 1 : 0];
    std::string name = lower(csrArg.text);
    unsigned csr = 0;
    while (csr < unsigned(Csr::Count) && name != csrName(Csr(csr)))
      ++csr;
    if (csr == unsigned(Csr::Count))
      return error(line, csrArg.col, "unknown CSR '" + csrArg.text + "'");
    if (read ? !csrReadable(Csr(csr)) : !csrWritable(Csr(csr)))
      return error(line, csrArg.col,
                   "CSR " + name + " cannot be " + (read ? "read" : "written"));
    in.csr = uint16_t(csr);
    if (read ? !parseDest(line, block, args[0], in.dst)
             : !parseSource(line, block, args[1], in.a, in))
      return false;
    break;
  }
  case Format::DstSrc:
    if (!checkArity(line, head, 2, 2) ||
        !parseDest(line, block, args[0], in.dst) ||
        !parseSource(line, block, args[1], in.b, in))
      return false;
    break;
  case Format::CamWrite:
    if (!checkArity(line, head, 3, 3) ||
        !parseSource(line, block, args[0], in.a, in) ||
        !parseSource(line, block, args[1], in.b, in) ||
        !parseSmall(line, args[2], 16, "the CAM state", in.field))
      return false;
    break;
  case Format::CamWriteState:
    if (!checkArity(line, head, 2, 2) ||
        !parseSource(line, block, args[0], in.a, in) ||
        !parseSmall(line, args[1], 16, "the CAM state", in.field))
      return false;
    break;
  case Format::Crc: {
    if (!checkArity(line, head, 3, 3))
      return false;
    std::string kind = lower(args[0].text);
    if (kind != "crc_32" && kind != "crc_32c")
      return error(line, args[0].col,
                   "unknown CRC '" + args[0].text + "' (crc_32, crc_32c)");
    in.field = uint8_t(kind == "crc_32" ? CrcKind::Crc32 : CrcKind::Crc32c);
    if (!parseDest(line, block, args[1], in.dst) ||
        !parseSource(line, block, args[2], in.b, in))
      return false;
    break;
  }
  case Format::Mem:
  case Format::Hash: {
    size_t xfer = format == Format::Mem ? 1 : 0;
    if (format == Format::Hash && !checkArity(line, head, 2, 2))
      return false;
    bool noXfer = args[xfer].text == "--" &&
                  (in.op == Op::ScratchIncr || in.op == Op::ScratchDecr ||
                   in.op == Op::SramIncr || in.op == Op::SramDecr);
    if (!noXfer && !parseDest(line, block, args[xfer], in.dst))
      return false;
    bool dram = in.op == Op::DramRead || in.op == Op::DramWrite;
    OperandClass want = dram ? OperandClass::XferD : OperandClass::XferS;
    if (!noXfer && in.dst.cls() != want)
      return error(line, args[xfer].col,
                   std::string("the transfer operand of ") + head.name +
                       " is a " + (dram ? "$$" : "$") + " register");
    if (format == Format::Mem &&
        !parseAddress(line, block, args[2], args[3], in))
      return false;
    in.count = 1;
    size_t countArg = format == Format::Mem ? 4 : 1;
    unsigned limit = dram || in.op == Op::Hash64 ? 8
                     : in.op == Op::MsfRx        ? 6
                     : in.op == Op::MsfTx        ? 4
                     : isAtomic(in.op)           ? 1
                                                 : maxCount;
    if (args.size() > countArg) {
      int64_t n;
      if (!evaluate(line, args[countArg], n, true))
        return false;
      if (n < 1 || n > int64_t(limit))
        return error(
            line, args[countArg].col,
            std::string("the count of ") + head.name +
                (format == Format::Mem ? "[" + std::string(info->sub) + "]"
                                       : std::string()) +
                " is 1-" + std::to_string(limit) +
                (dram || format == Format::Hash ? " (8-byte units)" : ""));
      in.count = uint8_t(n);
    }
    unsigned perCtx = block.code.ctxMode == 8 ? 16 : 32;
    if (!noXfer && in.dst.index() + transferWords(in.op, in.count) > perCtx)
      return error(
          line, args[xfer].col,
          "the command uses " + std::to_string(transferWords(in.op, in.count)) +
              " transfer registers from " + printOperand(in.dst, 0) +
              ", beyond the " + std::to_string(perCtx) + " a context has");
    break;
  }
  }
  if ((info->format == Format::Alu || info->format == Format::ByteAlign ||
       info->format == Format::Mem || info->format == Format::CamWrite)) {
    std::string why = checkSourcePair(in.a, in.b);
    if (!why.empty()) {
      size_t at = info->format == Format::Alu   ? 1
                  : info->format == Format::Mem ? 2
                                                : 0;
      return error(line, args[at].col, why);
    }
  }
  return true;
}

void Assembler::checkBlock(Block &block, unsigned blockIndex) {
  std::vector<Instr> instrs(block.statements.size());
  std::vector<bool> ok(block.statements.size(), false);
  for (size_t i = 0; i < block.statements.size() && !tooManyErrors(); ++i) {
    ok[i] = encodeStatement(block, blockIndex, block.statements[i], instrs[i]);
    if (ok[i])
      block.code.words.push_back(encode(instrs[i]));
    else
      block.code.words.push_back(0);
  }
  for (size_t i = 0; i < instrs.size(); ++i) {
    if (!ok[i] || instrs[i].defer == 0)
      continue;
    const Statement &st = block.statements[i];
    for (unsigned k = 1; k <= instrs[i].defer; ++k) {
      if (i + k >= instrs.size()) {
        error(st.line, st.parts[0].col,
              "defer[" + std::to_string(instrs[i].defer) +
                  "] needs instructions after the branch");
        break;
      }
      if (!ok[i + k])
        break;
      const Instr &slot = instrs[i + k];
      if ((slot.info().flags & Control) || slot.sigMode == SigMode::CtxSwap) {
        error(block.statements[i + k].line,
              block.statements[i + k].parts[0].col,
              "defer slot " + std::to_string(k) + " of the branch at " +
                  lineRef(st.line, block.statements[i + k].line) +
                  " holds an instruction that changes the flow or swaps "
                  "the context");
        break;
      }
    }
  }
  if (block.statements.size() > options.machine.controlStore) {
    const Statement &st = block.statements[options.machine.controlStore];
    error(st.line, st.parts[0].col,
          "the program for .me " + block.spec + " has " +
              std::to_string(block.statements.size()) +
              " instructions; the control store holds " +
              std::to_string(options.machine.controlStore) +
              " (this is the first that does not fit)");
  }
  if (block.statements.empty() && block.code.meMask)
    error(block.line, block.col, "code block without instructions");
}

void Assembler::fillData(DataBlock &data, std::vector<uint8_t> &bytes) {
  bytes.assign(data.size, 0);
  for (DataItem &item : data.items) {
    if (item.width == 0)
      continue;
    uint32_t at = item.offset;
    for (const Piece &piece : item.values) {
      int64_t v;
      if (evaluate(item.line, piece, v, true)) {
        int64_t lo = -(int64_t(1) << (8 * item.width - 1));
        int64_t hi = (int64_t(1) << (8 * item.width)) - 1;
        if (v < lo || v > hi)
          error(item.line, piece.col,
                "value does not fit in " + std::to_string(item.width * 8) +
                    " bits");
        for (unsigned k = 0; k < item.width; ++k)
          bytes[at + k] = uint8_t(uint64_t(v) >> (8 * (item.width - 1 - k)));
      }
      at += item.width;
    }
  }
}

void Assembler::checkOverlaps() {
  for (Memory memory : {Memory::Scratch, Memory::Sram, Memory::Dram}) {
    uint64_t limit = memory == Memory::Scratch ? options.machine.scratchBytes
                     : memory == Memory::Sram  ? options.machine.sramBytes
                                               : options.machine.dramBytes;
    std::vector<const DataBlock *> list;
    for (const DataBlock &data : dataBlocks)
      if (data.memory == memory) {
        list.push_back(&data);
        if (uint64_t(data.address) + data.size > limit)
          error(data.line, data.col,
                std::string("the data does not fit in ") + memoryName(memory) +
                    " (" + std::to_string(limit) + " bytes)");
      }
    std::sort(list.begin(), list.end(),
              [](const DataBlock *x, const DataBlock *y) {
                return x->address != y->address ? x->address < y->address
                                                : x->line < y->line;
              });
    for (size_t i = 1; i < list.size(); ++i)
      if (uint64_t(list[i - 1]->address) + list[i - 1]->size > list[i]->address)
        error(list[i]->line, list[i]->col,
              "the data overlaps the data at " +
                  lineRef(list[i - 1]->line, list[i]->line));
  }
}

void Assembler::secondPass() {
  for (unsigned i = 0; i < blocks.size() && !tooManyErrors(); ++i)
    checkBlock(blocks[i], i);
  for (DataBlock &data : dataBlocks) {
    DataInit init;
    init.memory = data.memory;
    init.address = data.address;
    fillData(data, init.bytes);
    dataInits.push_back(std::move(init));
  }
  checkOverlaps();
}

bool Assembler::run(Image &image) {
  size_t rows;
  const InstrInfo *table = instrTable(rows);
  for (size_t i = 0; i < rows; ++i)
    mnemonics.emplace(table[i].mnemonic, &table[i]);
  firstPass();
  if (!tooManyErrors())
    secondPass();
  if (blocks.empty() && errorCount == 0)
    error(0, 1, "no code: start a code block with .me N");
  if (errorCount) {
    std::sort(diagnostics.begin(), diagnostics.end(),
              [](const Diagnostic &x, const Diagnostic &y) {
                return std::tie(x.line, x.col, x.order) <
                       std::tie(y.line, y.col, y.order);
              });
    for (Diagnostic &d : diagnostics)
      errors.push_back(std::move(d.text));
    if (tooManyErrors())
      errors.push_back(fileName + ": error: too many errors (" +
                       std::to_string(options.maxErrors) + "), stopping");
    return false;
  }

  image = Image();
  for (Block &block : blocks)
    image.code.push_back(block.code);
  for (DataInit &init : dataInits)
    if (!init.bytes.empty())
      image.data.push_back(std::move(init));
  image.rings = rings;
  for (const auto &[name, def] : symbols)
    image.symbols.push_back(
        Symbol{name, def.kind, def.block, uint32_t(def.value)});
  image.sortSymbols();
  image.meta.emplace_back("producer", "netvm-me-as");
  return true;
}

bool netvm::me::readTextFile(const std::string &path, std::string &contents,
                             std::string &error) {
  std::vector<uint8_t> bytes;
  if (!readFileBytes(path, bytes, error))
    return false;
  contents.assign(bytes.begin(), bytes.end());
  return true;
}

bool netvm::me::assemble(std::string_view source, const std::string &fileName,
                         const AssemblerOptions &options, Image &image,
                         std::vector<std::string> &errors) {
  Assembler assembler(source, fileName, options, errors);
  return assembler.run(image);
}
