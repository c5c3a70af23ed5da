//===- netvm-me-as.cpp - Microengine assembler ---------------------------===//
//
// Assembles microengine assembly (docs/me-isa.md) into a loadable image for
// netvm-emu. Errors are printed as file:line:col: error: message.
//
//===----------------------------------------------------------------------===//

#include "netvm/Target/ME/Assembler.h"
#include "netvm/emu/Isa.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;
using namespace netvm::me;

static cl::OptionCategory asCategory("netvm-me-as options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<program.s>"),
                                      cl::cat(asCategory));
static cl::opt<std::string> outputFile("o", cl::desc("Output image"),
                                       cl::value_desc("image"),
                                       cl::cat(asCategory));
static cl::opt<unsigned> numMEs("mes",
                                cl::desc("Microengines of the target machine "
                                         "(default 8)"),
                                cl::init(8), cl::cat(asCategory));
static cl::opt<unsigned>
    controlStore("control-store",
                 cl::desc("Control-store capacity in instructions per ME "
                          "(default 4096)"),
                 cl::init(4096), cl::cat(asCategory));

static cl::opt<bool>
    printTable("print-opcode-table",
               cl::desc("Print the instruction table as the Markdown table of "
                        "docs/me-isa.md and exit"),
               cl::cat(asCategory));

/// The opcode table of docs/me-isa.md, straight from MEInstrs.def.
static void printOpcodeTable() {
  llvm::outs()
      << "| opcode | mnemonic | operation | format | cycles | flags |\n"
         "|---|---|---|---|---|---|\n";
  size_t count;
  const InstrInfo *rows = instrTable(count);
  for (size_t i = 0; i < count; ++i) {
    const InstrInfo &row = rows[i];
    std::string flags;
    auto add = [&](uint8_t bit, const char *name) {
      if (row.flags & bit)
        flags += (flags.empty() ? "" : ", ") + std::string(name);
    };
    add(SetsCC, "sets CC");
    add(Control, "control");
    add(ReadsDst, "reads dst");
    add(Swap, "may swap");
    llvm::outs() << "| " << llvm::format("0x%02x", unsigned(row.op)) << " | `"
                 << row.mnemonic << "` | "
                 << (*row.sub ? "`" + std::string(row.sub) + "`" : "") << " | "
                 << formatName(row.format) << " | " << unsigned(row.cycles)
                 << " | " << flags << " |\n";
  }
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(asCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "netvm-me-as - assemble microengine code into an image\n\n"
      "  netvm-me-as forward.s -o forward.img\n");
  if (printTable) {
    printOpcodeTable();
    return 0;
  }
  if (inputFile.empty() || outputFile.empty()) {
    llvm::errs() << "netvm-me-as: give a program and -o IMAGE\n";
    return 1;
  }
  std::vector<uint8_t> source;
  std::string error;
  if (!readFileBytes(inputFile, source, error)) {
    llvm::errs() << "netvm-me-as: " << error << "\n";
    return 1;
  }
  AssemblerOptions options;
  options.machine.numMEs = numMEs;
  options.machine.controlStore = controlStore;
  Image image;
  std::vector<std::string> errors;
  if (!assemble(std::string_view(reinterpret_cast<const char *>(source.data()),
                                 source.size()),
                inputFile, options, image, errors)) {
    for (const std::string &message : errors)
      llvm::errs() << message << "\n";
    return 1;
  }
  if (!writeImageFile(outputFile, image, error)) {
    llvm::errs() << "netvm-me-as: " << error << "\n";
    return 1;
  }
  return 0;
}
