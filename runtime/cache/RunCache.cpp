//===- RunCache.cpp - Compiled applications kept between runs -------------===//
//
// The cache directory, SHA-256, the entries of both caches and pruning
// (see netvm/cache/RunCache.h). Plain C++17 and POSIX: the launcher links it
// without LLVM.
//
//===----------------------------------------------------------------------===//

#include "netvm/cache/RunCache.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace netvm::cache;

//===----------------------------------------------------------------------===//
// SHA-256
//===----------------------------------------------------------------------===//

namespace {
constexpr uint32_t roundConstants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }
} // namespace

Sha256::Sha256() {
  static constexpr uint32_t initial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                          0xa54ff53a, 0x510e527f, 0x9b05688c,
                                          0x1f83d9ab, 0x5be0cd19};
  std::memcpy(state, initial, sizeof state);
}

void Sha256::block(const uint8_t *chunk) {
  uint32_t w[64];
  for (unsigned i = 0; i < 16; ++i)
    w[i] = uint32_t(chunk[4 * i]) << 24 | uint32_t(chunk[4 * i + 1]) << 16 |
           uint32_t(chunk[4 * i + 2]) << 8 | uint32_t(chunk[4 * i + 3]);
  for (unsigned i = 16; i < 64; ++i) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3], e = state[4],
           f = state[5], g = state[6], h = state[7];
  for (unsigned i = 0; i < 64; ++i) {
    uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) +
                  ((e & f) ^ (~e & g)) + roundConstants[i] + w[i];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) +
                  ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
  state[4] += e;
  state[5] += f;
  state[6] += g;
  state[7] += h;
}

void Sha256::update(const void *data, size_t size) {
  const uint8_t *bytes = static_cast<const uint8_t *>(data);
  length += size;
  while (size) {
    if (buffered == 0 && size >= 64) {
      block(bytes);
      bytes += 64;
      size -= 64;
      continue;
    }
    size_t take = std::min(size, 64 - buffered);
    std::memcpy(buffer + buffered, bytes, take);
    buffered += take;
    bytes += take;
    size -= take;
    if (buffered == 64) {
      block(buffer);
      buffered = 0;
    }
  }
}

Digest Sha256::finish() {
  uint64_t bits = length * 8;
  uint8_t pad = 0x80;
  update(&pad, 1);
  pad = 0;
  while (buffered != 56)
    update(&pad, 1);
  uint8_t tail[8];
  for (unsigned i = 0; i < 8; ++i)
    tail[i] = uint8_t(bits >> (56 - 8 * i));
  update(tail, 8);
  Digest out;
  for (unsigned i = 0; i < 8; ++i)
    for (unsigned j = 0; j < 4; ++j)
      out[4 * i + j] = uint8_t(state[i] >> (24 - 8 * j));
  return out;
}

Digest netvm::cache::sha256(const void *data, size_t size) {
  Sha256 hash;
  hash.update(data, size);
  return hash.finish();
}

std::string netvm::cache::toHex(const uint8_t *data, size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string out(2 * size, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = digits[data[i] >> 4];
    out[2 * i + 1] = digits[data[i] & 15];
  }
  return out;
}

//===----------------------------------------------------------------------===//
// The directory and the entries
//===----------------------------------------------------------------------===//

std::string netvm::cache::directory() {
  if (const char *mode = std::getenv("NETVM_CACHE"))
    if (!std::strcmp(mode, "off") || !std::strcmp(mode, "0"))
      return "";
  if (const char *dir = std::getenv("NETVM_CACHE_DIR"); dir && *dir)
    return dir;
  std::string path;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    path = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    path = std::string(home) + "/.cache";
  else
    return "";
  return path + "/netvm/jit";
}

std::string netvm::cache::entryPath(const std::string &dir, const Digest &key,
                                    const char *suffix) {
  return dir + "/" + toHex(key.data(), key.size()) + suffix;
}

namespace {
/// Bump when what an entry holds changes. (Format 1 was the front cache's
/// alone; the JIT's object cache had its own header then.)
constexpr uint32_t entryFormat = 2;
constexpr char entryMagic[8] = {'N', 'E', 'T', 'V', 'M', 'C', 'A', 'C'};

/// The end of an entry.
struct Trailer {
  char magic[8];
  uint32_t format;
  uint32_t tagSize;
  uint64_t payloadSize;
  uint8_t key[32];
  uint8_t digest[32]; // SHA-256 of the payload and the tag
};

bool makeDirectories(const std::string &dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) == 0)
    return S_ISDIR(st.st_mode);
  size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0 &&
      !makeDirectories(dir.substr(0, slash)))
    return false;
  return mkdir(dir.c_str(), 0777) == 0 || errno == EEXIST;
}

bool writeAll(int fd, const void *data, size_t size) {
  const char *bytes = static_cast<const char *>(data);
  while (size) {
    ssize_t n = ::write(fd, bytes, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    bytes += n;
    size -= size_t(n);
  }
  return true;
}
} // namespace

bool netvm::cache::writeEntry(const std::string &path, const Digest &key,
                              const std::string &payload,
                              const std::string &tag, std::string &error) {
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0 &&
      !makeDirectories(path.substr(0, slash))) {
    error = "cannot make the directory of " + path + ": " + strerror(errno);
    return false;
  }
  Trailer trailer{};
  std::memcpy(trailer.magic, entryMagic, sizeof entryMagic);
  trailer.format = entryFormat;
  trailer.tagSize = uint32_t(tag.size());
  trailer.payloadSize = payload.size();
  std::memcpy(trailer.key, key.data(), key.size());
  Sha256 hash;
  hash.update(payload);
  hash.update(tag);
  Digest digest = hash.finish();
  std::memcpy(trailer.digest, digest.data(), digest.size());
  std::string temporary = path + ".tmp" + std::to_string(getpid());
  int fd =
      open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = "cannot write " + temporary + ": " + strerror(errno);
    return false;
  }
  bool ok = writeAll(fd, payload.data(), payload.size()) &&
            writeAll(fd, tag.data(), tag.size()) &&
            writeAll(fd, &trailer, sizeof trailer);
  if (!ok)
    error = "cannot write " + temporary + ": " + strerror(errno);
  if (close(fd) != 0 && ok) {
    error = "cannot write " + temporary + ": " + strerror(errno);
    ok = false;
  }
  if (ok && rename(temporary.c_str(), path.c_str()) != 0) {
    error = "cannot rename " + temporary + ": " + strerror(errno);
    ok = false;
  }
  if (!ok) {
    unlink(temporary.c_str());
    return false;
  }
  if (slash != std::string::npos)
    prune(path.substr(0, slash), sizeLimit(), path);
  return true;
}

bool netvm::cache::readFile(const std::string &path, size_t maxSize,
                            std::string &text) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            size_t(st.st_size) <= maxSize;
  if (ok) {
    text.resize(size_t(st.st_size));
    size_t got = 0;
    while (got < text.size()) {
      ssize_t n = read(fd, &text[got], text.size() - got);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      got += size_t(n);
    }
    ok = got == text.size();
  }
  close(fd);
  return ok;
}

namespace {
/// Whether `bytes` is an intact entry for `key`: its payload's size and
/// its tag if so.
bool parseEntry(const std::string &bytes, const Digest &key,
                size_t &payloadSize, std::string &tag) {
  if (bytes.size() < sizeof(Trailer))
    return false;
  Trailer trailer;
  size_t body = bytes.size() - sizeof trailer;
  std::memcpy(&trailer, bytes.data() + body, sizeof trailer);
  if (std::memcmp(trailer.magic, entryMagic, sizeof entryMagic) ||
      trailer.format != entryFormat ||
      std::memcmp(trailer.key, key.data(), key.size()) ||
      trailer.payloadSize > body ||
      body - trailer.payloadSize != trailer.tagSize)
    return false;
  Digest digest = sha256(bytes.data(), body);
  if (std::memcmp(trailer.digest, digest.data(), digest.size()))
    return false;
  payloadSize = trailer.payloadSize;
  tag = bytes.substr(trailer.payloadSize, trailer.tagSize);
  return true;
}

/// The largest entry read: bigger files are not entries.
constexpr size_t kMaxEntry = 64 << 20;
} // namespace

bool netvm::cache::readEntry(const std::string &path, const Digest &key,
                             std::string &payload, std::string &tag) {
  size_t payloadSize;
  if (!readFile(path, kMaxEntry, payload) ||
      !parseEntry(payload, key, payloadSize, tag))
    return false;
  payload.resize(payloadSize);
  // Mark it used, for prune; a read-only cache is still read.
  (void)utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  return true;
}

bool netvm::cache::checkEntry(const std::string &path, const Digest &key,
                              std::string &tag) {
  std::string payload;
  return readEntry(path, key, payload, tag);
}

//===----------------------------------------------------------------------===//
// Pruning
//===----------------------------------------------------------------------===//

uint64_t netvm::cache::sizeLimit() {
  constexpr uint64_t kDefaultMiB = 256, kMaxMiB = uint64_t(1) << 40;
  const char *text = std::getenv("NETVM_CACHE_MAX_MB");
  if (!text || !*text)
    return kDefaultMiB << 20;
  char *end = nullptr;
  errno = 0;
  unsigned long long mb = std::strtoull(text, &end, 10);
  if (*text >= '0' && *text <= '9' && end && !*end && errno == 0)
    return uint64_t(std::min<unsigned long long>(mb, kMaxMiB)) << 20;
  // A setting that is not a number must not pass unnoticed (the cache
  // would be pruned at a size nobody chose): say so, once a process.
  static bool warned = false;
  if (!warned) {
    warned = true;
    std::fprintf(stderr,
                 "warning: NETVM_CACHE_MAX_MB='%s' is not a whole number of "
                 "MiB; the cache keeps %llu MiB\n",
                 text, static_cast<unsigned long long>(kDefaultMiB));
  }
  return kDefaultMiB << 20;
}

unsigned netvm::cache::prune(const std::string &dir, uint64_t limit,
                             const std::string &keep) {
  DIR *stream = opendir(dir.c_str());
  if (!stream)
    return 0;
  struct Entry {
    std::string path;
    struct timespec used;
    uint64_t size;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  unsigned removed = 0;
  time_t now = time(nullptr);
  auto isHex = [](const std::string &name, size_t count) {
    return name.size() >= count &&
           std::all_of(name.begin(), name.begin() + count, [](char c) {
             return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
  };
  while (struct dirent *d = readdir(stream)) {
    std::string name = d->d_name;
    // HEX.run, HEX.o, and what a store writes aside: HEX.run.tmpPID,
    // HEX.o.tmpPID and netvm-run's HEX.run.soPID.
    if (!isHex(name, 64) || name.size() < 66 || name[64] != '.')
      continue;
    std::string suffix = name.substr(64);
    bool entry = suffix == ".run" || suffix == ".o";
    bool aside = suffix.rfind(".run.", 0) == 0 || suffix.rfind(".o.", 0) == 0;
    if (!entry && !aside)
      continue;
    std::string path = dir + "/" + name;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (aside) {
      if (now - st.st_mtime > 3600 && unlink(path.c_str()) == 0)
        ++removed;
      continue;
    }
    entries.push_back({path, st.st_mtim, uint64_t(st.st_size)});
    total += uint64_t(st.st_size);
  }
  closedir(stream);
  if (total <= limit)
    return removed;
  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec
                                          : a.used.tv_nsec < b.used.tv_nsec;
  });
  uint64_t target = limit / 4 * 3;
  for (const Entry &e : entries) {
    if (total <= target)
      break;
    if (e.path != keep && unlink(e.path.c_str()) == 0) {
      total -= e.size;
      ++removed;
    }
  }
  return removed;
}
