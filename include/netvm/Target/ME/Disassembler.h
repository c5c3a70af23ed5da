//===- Disassembler.h - Microengine image to assembly -----------*- C++ -*-===//
//
// Prints a loadable image as assembly that the assembler turns back into
// the same image: constants, rings, data sections with their labels, and
// every code block with its directives, labels and instructions.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_TARGET_ME_DISASSEMBLER_H
#define NETVM_TARGET_ME_DISASSEMBLER_H

#include "netvm/emu/Image.h"

#include <string>

namespace netvm::me {

struct DisassemblerOptions {
  /// Add each instruction's index and encoding as a comment.
  bool encodings = true;
};

std::string disassemble(const Image &image,
                        const DisassemblerOptions &options = {});

} // namespace netvm::me

#endif // NETVM_TARGET_ME_DISASSEMBLER_H
