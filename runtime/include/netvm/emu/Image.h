//===- Image.h - Loadable microengine images --------------------*- C++ -*-===//
//
// What the assembler produces and the emulator loads: code blocks (one
// program loaded on a set of MEs, with its context mode and enabled
// contexts), memory initialisation, scratch ring configuration, symbols
// and free-form metadata. The file format is little-endian, versioned and
// checksummed (docs/me-isa.md, "Image format"); reading checks every length
// and field, so a bad file gives a message, never a crash.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_EMU_IMAGE_H
#define NETVM_EMU_IMAGE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace netvm::me {

/// Version of the image format; readers refuse any other.
constexpr uint32_t imageVersion = 1;
/// Most MEs an image can name (the width of a code block's ME mask).
constexpr unsigned maxMEs = 32;

enum class Memory : uint8_t { Scratch = 0, Sram = 1, Dram = 2 };
const char *memoryName(Memory memory);

struct CodeBlock {
  uint32_t meMask = 0;      // the MEs that run this code
  uint8_t ctxMode = 8;      // 8 contexts (16 GPRs per bank) or 4 (32)
  uint8_t ctxEnable = 0xff; // contexts started at reset
  std::vector<uint64_t> words;
};

struct DataInit {
  Memory memory = Memory::Sram;
  uint32_t address = 0;
  std::vector<uint8_t> bytes;
};

struct RingConfig {
  uint8_t ring = 0;
  uint32_t base = 0;      // byte address in scratch
  uint32_t sizeWords = 0; // 128, 256, 512 or 1024
};

enum class SymbolKind : uint8_t { Code = 0, Data = 1, Constant = 2 };

struct Symbol {
  std::string name;
  SymbolKind kind = SymbolKind::Code;
  uint32_t block = 0; // Code: code block index; Data: the Memory
  uint32_t value = 0; // instruction index, byte address or constant
};

struct Image {
  std::vector<CodeBlock> code;
  std::vector<DataInit> data;
  std::vector<RingConfig> rings;
  std::vector<Symbol> symbols; // sorted by (kind, block, value, name)
  std::vector<std::pair<std::string, std::string>> meta;

  /// Sorts the symbols into the canonical order, so that the same program
  /// gives the same bytes however its source was ordered.
  void sortSymbols();
};

std::vector<uint8_t> writeImage(const Image &image);
bool readImage(const uint8_t *data, size_t size, Image &image,
               std::string &error);
/// Whether `data` starts with the image magic.
bool looksLikeImage(const uint8_t *data, size_t size);

bool writeImageFile(const std::string &path, const Image &image,
                    std::string &error);
/// Reads a file whole (images and assembly sources); errors name the file.
bool readFileBytes(const std::string &path, std::vector<uint8_t> &bytes,
                   std::string &error);

} // namespace netvm::me

#endif // NETVM_EMU_IMAGE_H
