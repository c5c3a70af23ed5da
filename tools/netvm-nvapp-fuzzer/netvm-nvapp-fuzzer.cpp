//===- netvm-nvapp-fuzzer.cpp - Fuzz the .nvapp application parser --------===//
//
// The input is an application description, parsed by the library the
// driver uses for .nvapp files (application::parseDescription), then
// optimized at -O2. The NetIL files a description names come from memory,
// never from the disk (a fuzzed path must not read /dev/stdin): kPrograms
// below, which the seed corpus (test/Fuzz/Inputs/nvapp) names; any other
// path is a file that cannot be read.
//
//===----------------------------------------------------------------------===//

#include "netvm/Frontend/Application.h"
#include "netvm/Fuzzing/Fuzzing.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace netvm;

/// NetIL programs with the port shapes descriptions connect: one push
/// input and output, one input and two outputs, an input only, and a pull
/// input feeding a push output.
static const struct {
  const char *path, *text;
} kPrograms[] = {
    {"fwd.netil", "segment .ports\n  push_input in\n  push_output out\nends\n"
                  "segment .push\n  pop\n  pkt.send out\nends\n"},
    {"split.netil",
     "segment .ports\n  push_input in\n  push_output low\n"
     "  push_output high\nends\n"
     "segment .push\n  pop\n  push 14\n  upload.8\n  push 0x45\n"
     "  jcmp.eq v4\n  pkt.send high\nv4:\n  pkt.send low\nends\n"},
    {"sink.netil", "segment .ports\n  push_input in\nends\n"
                   "segment .push\n  pop\n  ret\nends\n"},
    {"count.netil",
     "segment .ports\n  push_input in\n  push_output out\nends\n"
     "segment .metadata\n  .datamem_size 4\nends\n"
     "segment .push\n  pop\n  push 0\n  umload.32\n  push 1\n  add\n"
     "  push 0\n  mstore.32\n  pkt.send out\nends\n"},
};

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzzing::Session session;
  llvm::SourceMgr &sourceMgr = session.sourceMgr();
  unsigned bufferId = sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(fuzzing::asText(data, size),
                                           "fuzz.nvapp"),
      llvm::SMLoc());
  auto loadFile = [&](llvm::StringRef path,
                      mlir::Location useLoc) -> std::optional<unsigned> {
    for (const auto &program : kPrograms)
      if (path == program.path)
        return sourceMgr.AddNewSourceBuffer(
            llvm::MemoryBuffer::getMemBuffer(program.text, program.path),
            llvm::SMLoc());
    mlir::emitError(useLoc) << "cannot read '" << path << "'";
    return std::nullopt;
  };
  mlir::OwningOpRef<mlir::ModuleOp> module = application::parseDescription(
      session.context(), sourceMgr, bufferId, /*appName=*/"", loadFile);
  if (session.failedWithError(!module, "parsing an application description"))
    return 0;
  session.optimize(*module);
  return 0;
}
