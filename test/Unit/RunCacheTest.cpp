//===- RunCacheTest.cpp - SHA-256, cache entries and pruning --------------===//
//
// The run cache's SHA-256 against FIPS 180-4's examples (across block
// boundaries, fed in pieces), and its entries: one written is read back
// with its tag and payload; another key, a changed byte or a cut file do
// not check. Pruning removes the least recently used entries first, and
// only files the caches wrote.
//
//===----------------------------------------------------------------------===//

#include "netvm/cache/RunCache.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>
#include <vector>

using namespace netvm::cache;

namespace {
std::string hexOf(const Digest &d) { return toHex(d.data(), d.size()); }

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void writeAll(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}
} // namespace

TEST(RunCache, Sha256KnownAnswers) {
  EXPECT_EQ(hexOf(sha256("", 0)),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hexOf(sha256("abc", 3)),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::string two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(hexOf(sha256(two.data(), two.size())),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A million 'a's, in pieces that straddle the 64-byte blocks.
  Sha256 hash;
  std::string piece(997, 'a');
  size_t left = 1000000;
  while (left) {
    size_t n = std::min(left, piece.size());
    hash.update(piece.data(), n);
    left -= n;
  }
  EXPECT_EQ(hexOf(hash.finish()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(RunCache, EntriesCheckOrNot) {
  char dir[] = "/tmp/netvm-runcache-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  Digest key = sha256("key", 3), other = sha256("other", 5);
  std::string path = entryPath(std::string(dir) + "/sub", key);
  std::string object(5000, '\0');
  for (size_t i = 0; i < object.size(); ++i)
    object[i] = char(i * 7);
  std::string error, symbol;
  ASSERT_TRUE(writeEntry(path, key, object, "netvm_jit_app_0", error)) << error;
  ASSERT_TRUE(checkEntry(path, key, symbol));
  EXPECT_EQ(symbol, "netvm_jit_app_0");
  // The shared object comes first, unchanged: dlopen reads it in place.
  std::string bytes = readAll(path);
  EXPECT_EQ(bytes.substr(0, object.size()), object);
  EXPECT_FALSE(checkEntry(path, other, symbol));
  for (size_t at :
       {size_t(0), object.size() / 2, object.size() + 3, bytes.size() - 1}) {
    std::string changed = bytes;
    changed[at] ^= 1;
    writeAll(path, changed);
    EXPECT_FALSE(checkEntry(path, key, symbol)) << "byte " << at;
  }
  writeAll(path, bytes.substr(0, bytes.size() - 10));
  EXPECT_FALSE(checkEntry(path, key, symbol));
  writeAll(path, "");
  EXPECT_FALSE(checkEntry(path, key, symbol));
  writeAll(path, bytes);
  EXPECT_TRUE(checkEntry(path, key, symbol));
  std::remove(path.c_str());
  rmdir((std::string(dir) + "/sub").c_str());
  rmdir(dir);
}

TEST(RunCache, ReadEntryGivesThePayload) {
  char dir[] = "/tmp/netvm-runcache-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  Digest key = sha256("object", 6);
  std::string path = entryPath(dir, key, ".o");
  EXPECT_EQ(path.substr(path.size() - 2), ".o");
  std::string object = "\x7f"
                       "ELF and the rest",
              payload, tag, error;
  ASSERT_TRUE(writeEntry(path, key, object, "", error)) << error;
  ASSERT_TRUE(readEntry(path, key, payload, tag));
  EXPECT_EQ(payload, object);
  EXPECT_EQ(tag, "");
  std::remove(path.c_str());
  rmdir(dir);
}

TEST(RunCache, PruneRemovesTheLeastRecentlyUsed) {
  char dir[] = "/tmp/netvm-runcache-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string error, tag, payload(100 << 10, 'x'); // 100 KiB entries
  std::vector<std::string> paths;
  std::vector<Digest> keys;
  for (int i = 0; i < 6; ++i) {
    keys.push_back(sha256(&i, sizeof i));
    paths.push_back(entryPath(dir, keys.back(), i % 2 ? ".o" : ".run"));
    // Under the default limit, with which writeEntry prunes.
    ASSERT_TRUE(writeEntry(paths.back(), keys.back(), payload, "", error))
        << error;
    // Used at second i: entry 0 is the oldest.
    struct timeval times[2] = {{1000 + i, 0}, {1000 + i, 0}};
    ASSERT_EQ(utimes(paths.back().c_str(), times), 0);
  }
  // Entry 1 is used again: it becomes the newest.
  ASSERT_TRUE(checkEntry(paths[1], keys[1], tag));
  // Files the caches did not write are left alone, and a store that died
  // long ago is cleaned up.
  std::string other = std::string(dir) + "/notes.txt";
  writeAll(other, std::string(500 << 10, 'y'));
  std::string aside = paths[2] + ".tmp123";
  writeAll(aside, "half");
  struct timeval old[2] = {{1, 0}, {1, 0}};
  ASSERT_EQ(utimes(aside.c_str(), old), 0);
  // 6 entries of about 100 KiB over a 450 KiB limit: down to 3/4 of it
  // (337 KiB), so the three least recently used go: 0, 2 and 3.
  EXPECT_EQ(prune(dir, 450 << 10), 4u);
  struct stat st;
  EXPECT_NE(stat(paths[0].c_str(), &st), 0);
  EXPECT_EQ(stat(paths[1].c_str(), &st), 0);
  EXPECT_NE(stat(paths[2].c_str(), &st), 0);
  EXPECT_NE(stat(paths[3].c_str(), &st), 0);
  EXPECT_EQ(stat(paths[4].c_str(), &st), 0);
  EXPECT_EQ(stat(paths[5].c_str(), &st), 0);
  EXPECT_EQ(stat(other.c_str(), &st), 0);
  EXPECT_NE(stat(aside.c_str(), &st), 0);
  // Under the limit, nothing goes.
  EXPECT_EQ(prune(dir, 450 << 10), 0u);
  for (const std::string &p : paths)
    std::remove(p.c_str());
  std::remove(other.c_str());
  rmdir(dir);
}

TEST(RunCache, SizeLimitFromTheEnvironment) {
  const char *saved = std::getenv("NETVM_CACHE_MAX_MB");
  std::string old = saved ? saved : "";
  unsetenv("NETVM_CACHE_MAX_MB");
  EXPECT_EQ(sizeLimit(), uint64_t(256) << 20);
  setenv("NETVM_CACHE_MAX_MB", "3", 1);
  EXPECT_EQ(sizeLimit(), uint64_t(3) << 20);
  setenv("NETVM_CACHE_MAX_MB", "0", 1);
  EXPECT_EQ(sizeLimit(), 0u);
  // Not whole numbers: the default, and a warning (once a process).
  testing::internal::CaptureStderr();
  for (const char *bad : {"12MB", "-5", "lots", " 7", "1e3"}) {
    setenv("NETVM_CACHE_MAX_MB", bad, 1);
    EXPECT_EQ(sizeLimit(), uint64_t(256) << 20) << bad;
  }
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "warning: NETVM_CACHE_MAX_MB='12MB' is not a whole number "
                 "of MiB; the cache keeps 256 MiB\n");
  if (saved)
    setenv("NETVM_CACHE_MAX_MB", old.c_str(), 1);
  else
    unsetenv("NETVM_CACHE_MAX_MB");
}
