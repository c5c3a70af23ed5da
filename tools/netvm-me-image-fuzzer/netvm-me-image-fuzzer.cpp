//===- netvm-me-image-fuzzer.cpp - Fuzz the ME image loader ---------------===//
//
// The input is an image file, read and loaded as netvm-emu reads and loads
// it (me::readImage, Emulator::load on the default machine), then run for
// a few thousand cycles without packets: code that does not decode, bad
// addresses and the like must end in faults, never in a crash. An image
// that reads must write back to what it read.
//
// An image ends in a CRC-32 of the rest, so almost every mutation of a
// valid image would stop at the checksum. The custom mutator below seals
// seven mutants in eight again (the eighth keeps testing the check), so
// that the fuzzer gets past it to the sections.
//
//===----------------------------------------------------------------------===//

#include "netvm/Fuzzing/Fuzzing.h"
#include "netvm/emu/Emulator.h"
#include "netvm/emu/Image.h"
#include "netvm/semantics.h"

#include <cstring>

using namespace netvm;

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  size = LLVMFuzzerMutate(data, size, maxSize);
  if (size >= 8 && seed % 8 != 0) {
    uint32_t crc = netvm_crc(NETVM_CRC32, data, uint32_t(size - 4));
    uint8_t le[4] = {uint8_t(crc), uint8_t(crc >> 8), uint8_t(crc >> 16),
                     uint8_t(crc >> 24)};
    std::memcpy(data + size - 4, le, 4);
  }
  return size;
}

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
