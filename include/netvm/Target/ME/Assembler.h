//===- Assembler.h - Microengine assembler ----------------------*- C++ -*-===//
//
// Text -> loadable image (netvm/emu/Image.h). The syntax is the one of
// docs/me-isa.md ("Assembly syntax"): IXP-style bracketed instructions,
// labels, comments and directives for code blocks, memory initialisation,
// rings, constants and register names. Every mistake is reported as
// "file:line:col: error: message"; the assembler never stops at the first
// one (up to a limit) and never crashes on bad input.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_TARGET_ME_ASSEMBLER_H
#define NETVM_TARGET_ME_ASSEMBLER_H

#include "netvm/emu/Image.h"
#include "netvm/emu/Machine.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace netvm::me {

/// Reads a whole file; the error names it.
bool readTextFile(const std::string &path, std::string &contents,
                  std::string &error);

struct AssemblerOptions {
  /// Sizes the program is checked against (MEs, control store, memories).
  MachineConfig machine;
  /// Stop after this many errors.
  unsigned maxErrors = 20;
  /// Reads the file of an .include (a path relative to the including
  /// file); on failure sets the message. The default reads from disk.
  std::function<bool(const std::string &path, std::string &contents,
                     std::string &error)>
      readFile = readTextFile;
};

/// Assembles `source`, named `fileName` in messages. On failure returns
/// false with the messages in `errors`.
bool assemble(std::string_view source, const std::string &fileName,
              const AssemblerOptions &options, Image &image,
              std::vector<std::string> &errors);

} // namespace netvm::me

#endif // NETVM_TARGET_ME_ASSEMBLER_H
