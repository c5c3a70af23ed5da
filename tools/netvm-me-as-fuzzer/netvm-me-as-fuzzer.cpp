//===- netvm-me-as-fuzzer.cpp - Fuzz the microengine assembler ------------===//
//
// The input is microengine assembly, assembled as netvm-me-as assembles it
// (me::assemble, for the default machine). A program that assembles must
// write an image that reads back (me::readImage) to the same bytes, and
// that the emulator loads. `.include` reads nothing from the disk (a
// fuzzed path must not read /dev/stdin): every include is a file that
// cannot be read.
//
//===----------------------------------------------------------------------===//

#include "netvm/Fuzzing/Fuzzing.h"
#include "netvm/Target/ME/Assembler.h"
#include "netvm/emu/Emulator.h"

using namespace netvm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  me::AssemblerOptions options;
  options.readFile = [](const std::string &path, std::string &,
                        std::string &error) {
    error = path + ": cannot read (the fuzzer reads no files)";
    return false;
  };
  me::Image image;
  std::vector<std::string> errors;
  if (!me::assemble(fuzzing::asText(data, size), "fuzz.s", options, image,
                    errors)) {
    if (errors.empty())
      fuzzing::fail("me::assemble failed without reporting an error");
    return 0;
  }
  std::vector<uint8_t> bytes = me::writeImage(image);
  me::Image reread;
  std::string error;
  if (!me::readImage(bytes.data(), bytes.size(), reread, error))
    fuzzing::fail("an assembled image does not read back: " + error);
  if (me::writeImage(reread) != bytes)
    fuzzing::fail("an assembled image reads back different");
  me::Emulator emulator(options.machine);
  if (!emulator.load(image, error) && error.empty())
    fuzzing::fail("Emulator::load failed without reporting an error");
  return 0;
}
