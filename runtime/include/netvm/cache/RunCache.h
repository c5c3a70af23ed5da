//===- RunCache.h - Compiled applications kept between runs -----*- C++ -*-===//
//
// What netvm-run's launcher (tools/netvm-run/Launcher.cpp) and the compiler
// share about the run cache, without LLVM: the cache directory, SHA-256,
// and the entries of the front cache. An entry maps what the user typed
// (hashed into its name) to a shared object linked when it was compiled,
// which the launcher loads with dlopen and runs without LLVM or MLIR
// (docs/native.md, "Startup and the compile cache").
//
// An entry is the shared object, then the descriptor's symbol name, then a
// fixed trailer: magic, format, the key, the sizes and the SHA-256 of all
// that precedes it. The dynamic loader ignores what follows an ELF file's
// last section, so the file is dlopen'ed as it is once the trailer checks.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_CACHE_RUNCACHE_H
#define NETVM_CACHE_RUNCACHE_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace netvm::cache {

using Digest = std::array<uint8_t, 32>;

/// SHA-256 (FIPS 180-4), incrementally.
class Sha256 {
public:
  Sha256();
  void update(const void *data, size_t size);
  void update(const std::string &text) { update(text.data(), text.size()); }
  Digest finish();

private:
  void block(const uint8_t *chunk);
  uint32_t state[8];
  uint8_t buffer[64];
  size_t buffered = 0;
  uint64_t length = 0;
};

Digest sha256(const void *data, size_t size);
/// Lower-case hexadecimal.
std::string toHex(const uint8_t *data, size_t size);

/// The cache directory: $NETVM_CACHE_DIR, else $XDG_CACHE_HOME/netvm/jit,
/// else $HOME/.cache/netvm/jit; empty (no cache) when NETVM_CACHE is "off"
/// or "0", or no directory is known. The JIT's object cache and the front
/// cache share it (different file name suffixes).
std::string directory();

/// The front cache's entry for `key` in `dir`: DIR/HEX.run.
std::string entryPath(const std::string &dir, const Digest &key);

/// Store `sharedObject` (its descriptor exported as `symbol`) as the entry
/// at `path` for `key`: written aside and renamed into place, the
/// directories made as needed. False with `error` set if it could not be.
bool writeEntry(const std::string &path, const Digest &key,
                const std::string &sharedObject, const std::string &symbol,
                std::string &error);

/// The contents of the regular file at `path`, if it has at most `maxSize`
/// bytes and can be read whole.
bool readFile(const std::string &path, size_t maxSize, std::string &text);

/// Whether the file at `path` is a complete, intact entry for `key`; if
/// so, `symbol` is its descriptor's name. An entry cut short, with a byte
/// changed, or made for another key does not check.
bool checkEntry(const std::string &path, const Digest &key,
                std::string &symbol);

} // namespace netvm::cache

#endif // NETVM_CACHE_RUNCACHE_H
