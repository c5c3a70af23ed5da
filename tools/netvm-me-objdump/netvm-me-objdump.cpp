//===- netvm-me-objdump.cpp - Microengine image disassembler -------------===//
//
// Prints a microengine image as assembly that netvm-me-as turns back into
// the same image (with each instruction's index and encoding in comments
// unless --no-encodings).
//
//===----------------------------------------------------------------------===//

#include "netvm/Target/ME/Disassembler.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;
using namespace netvm::me;

static cl::OptionCategory dumpCategory("netvm-me-objdump options");
static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<image>"),
                                      cl::cat(dumpCategory));
static cl::opt<bool> noEncodings(
    "no-encodings",
    cl::desc("Leave out the comments with each instruction's encoding"),
    cl::cat(dumpCategory));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(dumpCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "netvm-me-objdump - print a microengine image as assembly\n\n"
      "  netvm-me-objdump forward.img > forward.s\n");
  std::vector<uint8_t> bytes;
  std::string error;
  Image image;
  if (!readFileBytes(inputFile, bytes, error)) {
    llvm::errs() << "netvm-me-objdump: " << error << "\n";
    return 1;
  }
  if (!readImage(bytes.data(), bytes.size(), image, error)) {
    llvm::errs() << "netvm-me-objdump: " << inputFile << ": " << error << "\n";
    return 1;
  }
  DisassemblerOptions options;
  options.encodings = !noEncodings;
  llvm::outs() << disassemble(image, options);
  return 0;
}
