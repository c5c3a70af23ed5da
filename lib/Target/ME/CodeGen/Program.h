//===- Program.h - A machine program before encoding ------------*- C++ -*-===//
//
// The back end's last representation: per code block (a set of MEs),
// instructions with symbolic branch targets and labels, plus the data,
// rings and constants of the image. It is encoded into an Image directly
// and printed as ME assembly that netvm-me-as assembles to the same image.
// Plain C++ on the emulator's ISA (netvm/emu/Isa.h).
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_LIB_TARGET_ME_CODEGEN_PROGRAM_H
#define NETVM_LIB_TARGET_ME_CODEGEN_PROGRAM_H

#include "netvm/emu/Image.h"
#include "netvm/emu/Isa.h"

#include <string>
#include <vector>

namespace netvm::me {

struct Line {
  std::vector<std::string> labels; // before the instruction
  Instr instr;
  std::string target;  // branch target label (branches, jump)
  std::string comment; // printed after the instruction
  bool fixed = false;  // part of a jump table: never removed or moved
  int owner = -1;      // the NetPE whose code it is (AppLayout::codeRanges)
};

struct CodeSection {
  uint32_t meMask = 0;
  uint8_t ctxEnable = 0xff;
  std::string title; // a comment printed above the section
  std::vector<Line> lines;
  std::vector<std::string> pendingLabels; // labels for the next line
};

struct Program {
  std::vector<CodeSection> code;
  std::vector<DataInit> data;
  std::vector<RingConfig> rings;
  /// Comment lines printed at the top of the assembly.
  std::vector<std::string> header;

  /// Resolves labels and encodes; false with a message for a label that
  /// is not defined.
  bool encode(Image &image, std::string &error) const;
  /// The program as assembly (docs/me-isa.md syntax).
  std::string print() const;
};

} // namespace netvm::me

#endif // NETVM_LIB_TARGET_ME_CODEGEN_PROGRAM_H
