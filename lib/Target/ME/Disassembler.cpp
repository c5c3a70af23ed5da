//===- Disassembler.cpp - Microengine image to assembly -------------------===//
//
// The inverse of the assembler: every section of an image becomes the
// directives and instructions that produce it, with the image's symbols as
// labels and constants. Words that do not decode are printed as .word64 so
// that nothing is lost silently (the assembler refuses them: an image that
// holds them did not come from it).
//
//===----------------------------------------------------------------------===//

#include "netvm/Target/ME/Disassembler.h"
#include "netvm/emu/Isa.h"

#include <cinttypes>
#include <cstdio>
#include <map>

using namespace netvm::me;

static std::string meSpec(uint32_t mask) {
  std::string spec;
  for (unsigned me = 0; me < maxMEs; ++me) {
    if (!((mask >> me) & 1))
      continue;
    unsigned last = me;
    while (last + 1 < maxMEs && ((mask >> (last + 1)) & 1))
      ++last;
    spec += (spec.empty() ? "" : ", ") + std::to_string(me) +
            (last > me ? "-" + std::to_string(last) : "");
    me = last;
  }
  return spec;
}

/// Prints `bytes[from, to)` as .word lines (four words a line) and .byte
/// lines for the tail.
static void printBytes(std::string &out, const std::vector<uint8_t> &bytes,
                       size_t from, size_t to) {
  size_t words = (to - from) / 4;
  for (size_t w = 0; w < words; w += 4) {
    out += "    .word ";
    for (size_t k = w; k < words && k < w + 4; ++k) {
      const uint8_t *p = &bytes[from + 4 * k];
      uint32_t v = uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 |
                   uint32_t(p[2]) << 8 | p[3];
      out += (k > w ? ", " : "") + printNumber(v);
    }
    out += "\n";
  }
  if (from + 4 * words < to) {
    out += "    .byte ";
    for (size_t i = from + 4 * words; i < to; ++i)
      out += (i > from + 4 * words ? ", " : "") + printNumber(bytes[i]);
    out += "\n";
  }
}

std::string netvm::me::disassemble(const Image &image,
                                   const DisassemblerOptions &options) {
  std::string out =
      "; netvm ME image, format version " + std::to_string(imageVersion) + "\n";
  for (const auto &[key, value] : image.meta)
    out += "; " + key + ": " + value + "\n";

  // Constants, rings.
  for (const Symbol &s : image.symbols)
    if (s.kind == SymbolKind::Constant)
      out += ".equ " + s.name + ", " + printNumber(s.value) + "\n";
  for (const RingConfig &ring : image.rings)
    out += ".ring " + std::to_string(ring.ring) + ", " +
           printNumber(ring.base) + ", " + std::to_string(ring.sizeWords) +
           "\n";

  // Data, with the labels inside each section; labels outside every
  // section get an empty one.
  std::multimap<std::pair<unsigned, uint32_t>, const Symbol *> dataLabels;
  for (const Symbol &s : image.symbols)
    if (s.kind == SymbolKind::Data)
      dataLabels.emplace(std::make_pair(s.block, s.value), &s);
  for (const DataInit &data : image.data) {
    out += std::string(".data ") + memoryName(data.memory) + ", " +
           printNumber(data.address) + "\n";
    size_t segment = 0;
    for (size_t offset = 0; offset <= data.bytes.size(); ++offset) {
      auto key = std::make_pair(unsigned(data.memory),
                                uint32_t(data.address + offset));
      auto [begin, end] = dataLabels.equal_range(key);
      if (begin == end)
        continue;
      printBytes(out, data.bytes, segment, offset);
      segment = offset;
      for (auto it = begin; it != end; ++it)
        out += it->second->name + ":\n";
      dataLabels.erase(begin, end);
    }
    printBytes(out, data.bytes, segment, data.bytes.size());
  }
  for (const auto &[key, symbol] : dataLabels)
    out += std::string(".data ") + memoryName(Memory(key.first)) + ", " +
           printNumber(key.second) + "\n" + symbol->name + ":\n";

  // Code.
  for (size_t b = 0; b < image.code.size(); ++b) {
    const CodeBlock &block = image.code[b];
    std::multimap<uint32_t, std::string> labels;
    std::map<uint32_t, std::string> firstLabel;
    for (const Symbol &s : image.symbols)
      if (s.kind == SymbolKind::Code && s.block == b) {
        labels.emplace(s.value, s.name);
        firstLabel.emplace(s.value, s.name);
      }
    out += "\n.me " + meSpec(block.meMask) + "\n";
    out += ".ctx_mode " + std::to_string(block.ctxMode) + "\n";
    out += ".ctx_enable " + printNumber(block.ctxEnable) + "\n";
    auto name = [&](uint32_t target) {
      auto it = firstLabel.find(target);
      return it == firstLabel.end() ? std::string() : it->second;
    };
    for (size_t pc = 0; pc <= block.words.size(); ++pc) {
      auto [begin, end] = labels.equal_range(uint32_t(pc));
      for (auto it = begin; it != end; ++it)
        out += it->second + ":\n";
      if (pc == block.words.size())
        break;
      Instr in;
      std::string why, text;
      char comment[48];
      if (decode(block.words[pc], in, why))
        text = printInstr(in, name);
      else
        text = ".word64 " + printNumber(block.words[pc]) + " ; " + why;
      out += "    " + text;
      if (options.encodings) {
        std::snprintf(comment, sizeof(comment), "%4zu: %016" PRIx64, pc,
                      block.words[pc]);
        out += std::string(text.size() < 44 ? 44 - text.size() : 1, ' ') +
               "; " + comment;
      }
      out += "\n";
    }
  }
  return out;
}
