//===- Program.cpp - Encoding and printing a machine program --------------===//

#include "Program.h"

#include <map>
#include <sstream>

using namespace netvm::me;

namespace {
/// Label -> instruction index within one section.
std::map<std::string, uint32_t> labelsOf(const CodeSection &section) {
  std::map<std::string, uint32_t> labels;
  for (uint32_t i = 0; i < section.lines.size(); ++i)
    for (const std::string &label : section.lines[i].labels)
      labels[label] = i;
  for (const std::string &label : section.pendingLabels)
    labels[label] = static_cast<uint32_t>(section.lines.size());
  return labels;
}

bool isBranch(const Instr &instr) {
  switch (instr.info().format) {
  case Format::Branch:
  case Format::BrByte:
  case Format::BrBit:
  case Format::BrCtx:
  case Format::BrSignal:
  case Format::BrState:
  case Format::Jump:
    return true;
  default:
    return false;
  }
}
} // namespace

bool Program::encode(Image &image, std::string &error) const {
  image = Image();
  for (uint32_t s = 0; s < code.size(); ++s) {
    const CodeSection &section = code[s];
    std::map<std::string, uint32_t> labels = labelsOf(section);
    CodeBlock block;
    block.meMask = section.meMask;
    block.ctxEnable = section.ctxEnable;
    for (const Line &line : section.lines) {
      Instr instr = line.instr;
      if (isBranch(instr)) {
        auto it = labels.find(line.target);
        if (it == labels.end()) {
          error = "branch to undefined label '" + line.target + "'";
          return false;
        }
        instr.imm = it->second;
      }
      block.words.push_back(me::encode(instr));
    }
    image.code.push_back(std::move(block));
    for (const auto &[name, index] : labels)
      image.symbols.push_back(Symbol{name, SymbolKind::Code, s, index});
  }
  image.data = data;
  image.rings = rings;
  image.sortSymbols();
  image.meta.emplace_back("producer", "netc");
  return true;
}

std::string Program::print() const {
  std::ostringstream os;
  for (const std::string &line : header)
    os << "; " << line << "\n";
  for (const RingConfig &ring : rings)
    os << ".ring " << unsigned(ring.ring) << ", " << printNumber(ring.base)
       << ", " << ring.sizeWords << "\n";
  for (const DataInit &init : data) {
    os << ".data " << memoryName(init.memory) << ", "
       << printNumber(init.address) << "\n";
    for (size_t i = 0; i < init.bytes.size(); i += 16) {
      os << "    .byte ";
      for (size_t j = i; j < init.bytes.size() && j < i + 16; ++j)
        os << (j > i ? ", " : "") << printNumber(init.bytes[j]);
      os << "\n";
    }
  }
  for (const CodeSection &section : code) {
    os << "\n";
    if (!section.title.empty())
      os << "; " << section.title << "\n";
    std::string mes;
    for (unsigned me = 0; me < 32; ++me)
      if (section.meMask & (1u << me))
        mes += (mes.empty() ? "" : ", ") + std::to_string(me);
    os << ".me " << mes << "\n";
    if (section.ctxEnable != 0xff)
      os << ".ctx_enable " << printNumber(section.ctxEnable) << "\n";
    for (const Line &line : section.lines) {
      for (const std::string &label : line.labels)
        os << label << ":\n";
      std::string text =
          printInstr(line.instr, [&](uint32_t) { return line.target; });
      os << "    " << text;
      if (!line.comment.empty())
        os << std::string(text.size() < 40 ? 40 - text.size() : 1, ' ') << "; "
           << line.comment;
      os << "\n";
    }
    for (const std::string &label : section.pendingLabels)
      os << label << ":\n";
  }
  return os.str();
}
