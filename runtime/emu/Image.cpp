//===- Image.cpp - Reading and writing microengine images ----------------===//
//
// The image file: an 8-byte magic, the format version, a section count,
// the sections (kind, byte length, payload) and a CRC-32 of everything
// before it. All integers are little-endian. The reader checks the magic,
// the version, the checksum, every length against what is left and every
// field against its range.
//
//===----------------------------------------------------------------------===//

#include "netvm/emu/Image.h"
#include "netvm/semantics.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <tuple>

using namespace netvm::me;

static const char magic[8] = {'N', 'V', 'M', 'E', 'I', 'M', 'G', '\n'};

enum SectionKind : uint32_t {
  SectionCode = 1,
  SectionData = 2,
  SectionRing = 3,
  SectionSymbol = 4,
  SectionMeta = 5,
};

const char *netvm::me::memoryName(Memory memory) {
  switch (memory) {
  case Memory::Scratch:
    return "scratch";
  case Memory::Sram:
    return "sram";
  case Memory::Dram:
    return "dram";
  }
  return "?";
}

void Image::sortSymbols() {
  std::sort(symbols.begin(), symbols.end(),
            [](const Symbol &x, const Symbol &y) {
              return std::make_tuple(x.kind, x.block, x.value, x.name) <
                     std::make_tuple(y.kind, y.block, y.value, y.name);
            });
}

namespace {
class Writer {
public:
  std::vector<uint8_t> out;
  void u8(uint8_t v) { out.push_back(v); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      out.push_back(uint8_t(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    u32(uint32_t(v));
    u32(uint32_t(v >> 32));
  }
  void bytes(const void *data, size_t n) {
    auto *p = static_cast<const uint8_t *>(data);
    out.insert(out.end(), p, p + n);
  }
  void string(const std::string &s) {
    u32(uint32_t(s.size()));
    bytes(s.data(), s.size());
  }
  /// Starts a section; end() patches its length.
  size_t begin(uint32_t kind) {
    u32(kind);
    u32(0);
    return out.size();
  }
  void end(size_t start) {
    uint32_t length = uint32_t(out.size() - start);
    for (int i = 0; i < 4; ++i)
      out[start - 4 + i] = uint8_t(length >> (8 * i));
  }
};

class Reader {
public:
  Reader(const uint8_t *data, size_t size) : p(data), end(data + size) {}
  bool u8(uint8_t &v) {
    if (left() < 1)
      return false;
    v = *p++;
    return true;
  }
  bool u32(uint32_t &v) {
    if (left() < 4)
      return false;
    v = 0;
    for (int i = 0; i < 4; ++i)
      v |= uint32_t(p[i]) << (8 * i);
    p += 4;
    return true;
  }
  bool u64(uint64_t &v) {
    uint32_t lo, hi;
    if (!u32(lo) || !u32(hi))
      return false;
    v = (uint64_t(hi) << 32) | lo;
    return true;
  }
  bool bytes(std::vector<uint8_t> &v, size_t n) {
    if (left() < n)
      return false;
    v.assign(p, p + n);
    p += n;
    return true;
  }
  bool string(std::string &s) {
    uint32_t n;
    if (!u32(n) || left() < n)
      return false;
    s.assign(reinterpret_cast<const char *>(p), n);
    p += n;
    return true;
  }
  bool skip(size_t n) {
    if (left() < n)
      return false;
    p += n;
    return true;
  }
  size_t left() const { return size_t(end - p); }

private:
  const uint8_t *p, *end;
};
} // namespace

std::vector<uint8_t> netvm::me::writeImage(const Image &image) {
  Writer w;
  w.bytes(magic, sizeof(magic));
  w.u32(imageVersion);
  w.u32(uint32_t(image.code.size() + image.data.size() + image.rings.size() +
                 image.symbols.size() + image.meta.size()));
  for (const CodeBlock &block : image.code) {
    size_t start = w.begin(SectionCode);
    w.u32(block.meMask);
    w.u8(block.ctxMode);
    w.u8(block.ctxEnable);
    w.u8(0);
    w.u8(0);
    w.u32(uint32_t(block.words.size()));
    for (uint64_t word : block.words)
      w.u64(word);
    w.end(start);
  }
  for (const DataInit &data : image.data) {
    size_t start = w.begin(SectionData);
    w.u8(uint8_t(data.memory));
    w.u8(0);
    w.u8(0);
    w.u8(0);
    w.u32(data.address);
    w.u32(uint32_t(data.bytes.size()));
    w.bytes(data.bytes.data(), data.bytes.size());
    w.end(start);
  }
  for (const RingConfig &ring : image.rings) {
    size_t start = w.begin(SectionRing);
    w.u32(ring.ring);
    w.u32(ring.base);
    w.u32(ring.sizeWords);
    w.end(start);
  }
  for (const Symbol &symbol : image.symbols) {
    size_t start = w.begin(SectionSymbol);
    w.u32(uint32_t(symbol.kind));
    w.u32(symbol.block);
    w.u32(symbol.value);
    w.string(symbol.name);
    w.end(start);
  }
  for (const auto &[key, value] : image.meta) {
    size_t start = w.begin(SectionMeta);
    w.string(key);
    w.string(value);
    w.end(start);
  }
  w.u32(netvm_crc(NETVM_CRC32, w.out.data(), uint32_t(w.out.size())));
  return w.out;
}

bool netvm::me::looksLikeImage(const uint8_t *data, size_t size) {
  return size >= sizeof(magic) && std::memcmp(data, magic, sizeof(magic)) == 0;
}

static bool validRingSize(uint32_t words) {
  return words == 128 || words == 256 || words == 512 || words == 1024;
}

bool netvm::me::readImage(const uint8_t *data, size_t size, Image &image,
                          std::string &error) {
  image = Image();
  if (!looksLikeImage(data, size)) {
    error = "not a netvm ME image (bad magic)";
    return false;
  }
  Reader r(data + sizeof(magic), size - sizeof(magic));
  uint32_t version, sections;
  if (!r.u32(version) || !r.u32(sections)) {
    error = "truncated image header";
    return false;
  }
  if (version != imageVersion) {
    error = "image format version " + std::to_string(version) +
            " is not supported (this tool reads version " +
            std::to_string(imageVersion) + "); reassemble the program";
    return false;
  }
  if (size < sizeof(magic) + 12 ||
      netvm_crc(NETVM_CRC32, data, uint32_t(size - 4)) !=
          (uint32_t(data[size - 4]) | uint32_t(data[size - 3]) << 8 |
           uint32_t(data[size - 2]) << 16 | uint32_t(data[size - 1]) << 24)) {
    error = "image checksum mismatch (the file is damaged)";
    return false;
  }
  for (uint32_t i = 0; i < sections; ++i) {
    uint32_t kind, length;
    if (!r.u32(kind) || !r.u32(length) || r.left() < size_t(length) + 4) {
      error = "truncated section " + std::to_string(i);
      return false;
    }
    Reader s(data + (size - r.left()), length);
    r.skip(length);
    std::string what = "section " + std::to_string(i);
    bool ok = true;
    switch (kind) {
    case SectionCode: {
      CodeBlock block;
      uint8_t pad0, pad1;
      uint32_t count;
      ok = s.u32(block.meMask) && s.u8(block.ctxMode) &&
           s.u8(block.ctxEnable) && s.u8(pad0) && s.u8(pad1) && s.u32(count) &&
           s.left() == size_t(count) * 8;
      if (ok &&
          (block.meMask == 0 || (block.ctxMode != 4 && block.ctxMode != 8) ||
           (block.ctxMode == 4 && (block.ctxEnable & 0xf0)) ||
           block.ctxEnable == 0)) {
        error = what + ": bad ME mask, context mode or enabled contexts";
        return false;
      }
      for (uint32_t k = 0; ok && k < count; ++k) {
        uint64_t word;
        ok = s.u64(word);
        block.words.push_back(word);
      }
      image.code.push_back(std::move(block));
      break;
    }
    case SectionData: {
      DataInit init;
      uint8_t memory, pad[3];
      uint32_t count;
      ok = s.u8(memory) && s.u8(pad[0]) && s.u8(pad[1]) && s.u8(pad[2]) &&
           s.u32(init.address) && s.u32(count) && s.bytes(init.bytes, count) &&
           s.left() == 0;
      if (ok && memory > uint8_t(Memory::Dram)) {
        error = what + ": unknown memory " + std::to_string(memory);
        return false;
      }
      init.memory = Memory(memory);
      image.data.push_back(std::move(init));
      break;
    }
    case SectionRing: {
      RingConfig ring;
      uint32_t number;
      ok = s.u32(number) && s.u32(ring.base) && s.u32(ring.sizeWords) &&
           s.left() == 0;
      if (ok && (number >= 16 || !validRingSize(ring.sizeWords) ||
                 ring.base % (ring.sizeWords * 4) != 0)) {
        error = what + ": bad ring configuration";
        return false;
      }
      ring.ring = uint8_t(number);
      image.rings.push_back(ring);
      break;
    }
    case SectionSymbol: {
      Symbol symbol;
      uint32_t kind;
      ok = s.u32(kind) && s.u32(symbol.block) && s.u32(symbol.value) &&
           s.string(symbol.name) && s.left() == 0;
      if (ok && kind > uint32_t(SymbolKind::Constant)) {
        error = what + ": unknown symbol kind " + std::to_string(kind);
        return false;
      }
      symbol.kind = SymbolKind(kind);
      image.symbols.push_back(std::move(symbol));
      break;
    }
    case SectionMeta: {
      std::string key, value;
      ok = s.string(key) && s.string(value) && s.left() == 0;
      image.meta.emplace_back(std::move(key), std::move(value));
      break;
    }
    default:
      error = what + ": unknown section kind " + std::to_string(kind);
      return false;
    }
    if (!ok) {
      error = what + ": malformed contents";
      return false;
    }
  }
  if (r.left() != 4) {
    error = "trailing bytes after the last section";
    return false;
  }
  for (const Symbol &symbol : image.symbols)
    if (symbol.kind == SymbolKind::Code && symbol.block >= image.code.size()) {
      error = "symbol '" + symbol.name + "' names a missing code block";
      return false;
    }
  return true;
}

bool netvm::me::writeImageFile(const std::string &path, const Image &image,
                               std::string &error) {
  std::vector<uint8_t> bytes = writeImage(image);
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file) {
    error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  ok = std::fclose(file) == 0 && ok;
  if (!ok)
    error = "cannot write '" + path + "': " + std::strerror(errno);
  return ok;
}

bool netvm::me::readFileBytes(const std::string &path,
                              std::vector<uint8_t> &bytes, std::string &error) {
  FILE *file = std::fopen(path.c_str(), "rb");
  if (!file) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  bytes.clear();
  uint8_t buffer[65536];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
    bytes.insert(bytes.end(), buffer, buffer + n);
  bool ok = !std::ferror(file);
  std::fclose(file);
  if (!ok)
    error = "cannot read '" + path + "'";
  return ok;
}
