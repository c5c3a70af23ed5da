//===- RunCache.h - Compiled applications kept between runs -----*- C++ -*-===//
//
// What netvm-run's launcher (tools/netvm-run/Launcher.cpp) and the compiler
// share about the run cache, without LLVM: the cache directory, SHA-256,
// the one entry format of both caches that live in it, and pruning.
//
// - The JIT's object cache (lib/Target/Native) maps the optimized IR and
//   the target to the object code compiled for it: DIR/HEX.o.
// - The front cache maps what the user typed (hashed into its name) to a
//   shared object linked when it was compiled, which the launcher loads
//   with dlopen and runs without LLVM or MLIR: DIR/HEX.run
//   (docs/native.md, "Startup and the compile cache").
//
// An entry is its payload (the object or the shared object), then a tag
// (the descriptor's symbol name, or nothing), then a fixed trailer: magic,
// format, the key, the sizes and the SHA-256 of all that precedes it. The
// dynamic loader ignores what follows an ELF file's last section, so a
// front-cache entry is dlopen'ed as it is once the trailer checks.
//
// Entries are used by modification time: a hit sets it, and a store
// prunes the directory's oldest entries once they pass a size limit.
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

/// The entry for `key` in `dir`: DIR/HEX`suffix` (".run" for the front
/// cache, ".o" for the JIT's object cache).
std::string entryPath(const std::string &dir, const Digest &key,
                      const char *suffix = ".run");

/// Store `payload` and `tag` as the entry at `path` for `key`: written
/// aside and renamed into place, the directories made as needed, then the
/// directory pruned (prune). False with `error` set if it could not be
/// stored.
bool writeEntry(const std::string &path, const Digest &key,
                const std::string &payload, const std::string &tag,
                std::string &error);

/// The contents of the regular file at `path`, if it has at most `maxSize`
/// bytes and can be read whole.
bool readFile(const std::string &path, size_t maxSize, std::string &text);

/// Whether the file at `path` is a complete, intact entry for `key`; if
/// so, `tag` is its tag, and the entry is marked used. An entry cut short,
/// with a byte changed, or made for another key does not check.
bool checkEntry(const std::string &path, const Digest &key, std::string &tag);

/// checkEntry, also handing back the entry's payload.
bool readEntry(const std::string &path, const Digest &key, std::string &payload,
               std::string &tag);

/// The size the entries of a cache directory may take: $NETVM_CACHE_MAX_MB
/// mebibytes (a whole number; at most 2^40), else 256 MiB. A value that is
/// not a whole number gives 256 MiB and a warning on standard error, once
/// a process.
uint64_t sizeLimit();

/// Bring the entries of `dir` (files named HEX.run and HEX.o) to at most
/// three quarters of `limit` bytes, oldest use first, once they take more
/// than `limit`; also remove the temporary files of stores that died more
/// than an hour ago. The entry at `keep` (the one just stored) stays.
/// Returns the number of files removed.
unsigned prune(const std::string &dir, uint64_t limit = sizeLimit(),
               const std::string &keep = "");

} // namespace netvm::cache

#endif // NETVM_CACHE_RUNCACHE_H
