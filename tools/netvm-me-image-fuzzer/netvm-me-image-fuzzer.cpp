//===- netvm-me-image-fuzzer.cpp - Fuzz the ME image loader ---------------===//
//
// The input is an image file, read and loaded as netvm-emu reads and loads
// it (me::readImage, Emulator::load on the default machine), then run for
// a few thousand cycles without packets: code that does not decode, bad
// addresses and the like must end in faults, never in a crash. An image
// that reads must write back to what it read.
//
//===----------------------------------------------------------------------===//

#include "netvm/Fuzzing/Fuzzing.h"
#include "netvm/emu/Emulator.h"
#include "netvm/emu/Image.h"

using namespace netvm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  me::Image image;
  std::string error;
  if (!me::readImage(data, size, image, error)) {
    if (error.empty())
      fuzzing::fail("me::readImage failed without reporting an error");
    return 0;
  }
  me::Image reread;
  std::vector<uint8_t> bytes = me::writeImage(image);
  if (!me::readImage(bytes.data(), bytes.size(), reread, error) ||
      me::writeImage(reread) != bytes)
    fuzzing::fail("an image that reads does not write back the same");
  me::MachineConfig config;
  config.maxCycles = 4000;
  config.stallCycles = 1000;
  me::Emulator emulator(config);
  if (!emulator.load(image, error)) {
    if (error.empty())
      fuzzing::fail("Emulator::load failed without reporting an error");
    return 0;
  }
  emulator.run();
  return 0;
}
