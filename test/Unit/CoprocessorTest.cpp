//===- CoprocessorTest.cpp - The virtual coprocessors
//-------------------------===//
//
// The register protocols of the coprocessors of the C runtime (shared by the
// interpreter and native code): lookup, associative, and the string
// coprocessors regexp and stringmatching (on Hyperscan).
//
//===----------------------------------------------------------------------===//

#include "netvm/coprocessor.h"

#include "gtest/gtest.h"

#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {
struct Deleter {
  void operator()(netvm_copro *c) const { netvm_copro_destroy(c); }
};
using Copro = std::unique_ptr<netvm_copro, Deleter>;

Copro make(const char *name) { return Copro(netvm_copro_create(name)); }

uint32_t reg(netvm_copro *c, uint32_t r) {
  uint32_t v = 0;
  EXPECT_TRUE(netvm_copro_read(c, r, &v));
  return v;
}
} // namespace

TEST(Coprocessor, Registry) {
  EXPECT_NE(make("lookup"), nullptr);
  EXPECT_NE(make("associative"), nullptr);
  EXPECT_NE(make("regexp"), nullptr);
  EXPECT_NE(make("stringmatching"), nullptr);
  EXPECT_EQ(make("lookup_ex"), nullptr);
  std::vector<std::string> names;
  for (const char *const *n = netvm_copro_names(); *n; ++n)
    names.push_back(*n);
  EXPECT_EQ(names, (std::vector<std::string>{"associative", "lookup", "regexp",
                                             "stringmatching"}));
  EXPECT_EQ(netvm_copro_num_registers(make("lookup").get()), 3u);
  EXPECT_EQ(netvm_copro_num_registers(make("associative").get()), 20u);
  EXPECT_EQ(netvm_copro_num_registers(make("regexp").get()), 4u);
  EXPECT_EQ(netvm_copro_num_registers(make("stringmatching").get()), 4u);
  EXPECT_STREQ(netvm_copro_name(make("stringmatching").get()),
               "stringmatching");
}

TEST(Coprocessor, LookupExactMatch) {
  Copro c = make("lookup");
  ASSERT_TRUE(netvm_copro_invoke(c.get(), 0));
  // Key [0, 1] -> 7, key [5] -> 9.
  std::vector<std::pair<std::vector<uint32_t>, uint32_t>> entries = {
      {{0, 1}, 7}, {{5}, 9}};
  for (auto &[key, value] : entries) {
    for (uint32_t k : key) {
      ASSERT_TRUE(netvm_copro_write(c.get(), 0, k));
      ASSERT_TRUE(netvm_copro_invoke(c.get(), 1));
    }
    ASSERT_TRUE(netvm_copro_write(c.get(), 0, value));
    ASSERT_TRUE(netvm_copro_invoke(c.get(), 2));
  }
  // A single-word key can be looked up straight from R0.
  ASSERT_TRUE(netvm_copro_write(c.get(), 0, 5));
  ASSERT_TRUE(netvm_copro_invoke(c.get(), 3));
  EXPECT_EQ(reg(c.get(), 0), 9u);
  EXPECT_EQ(reg(c.get(), 1), 1u);
  // Multi-word keys go through add_data.
  for (uint32_t k : {0u, 1u}) {
    ASSERT_TRUE(netvm_copro_write(c.get(), 0, k));
    ASSERT_TRUE(netvm_copro_invoke(c.get(), 1));
  }
  ASSERT_TRUE(netvm_copro_invoke(c.get(), 3));
  EXPECT_EQ(reg(c.get(), 0), 7u);
  // A miss leaves R0 alone and clears R1.
  ASSERT_TRUE(netvm_copro_write(c.get(), 0, 6));
  ASSERT_TRUE(netvm_copro_invoke(c.get(), 3));
  EXPECT_EQ(reg(c.get(), 0), 6u);
  EXPECT_EQ(reg(c.get(), 1), 0u);
}

TEST(Coprocessor, LookupGrowsPastItsFirstBuckets) {
  Copro c = make("lookup");
  for (uint32_t k = 0; k < 5000; ++k) {
    ASSERT_TRUE(netvm_copro_write(c.get(), 0, k));
    ASSERT_TRUE(netvm_copro_invoke(c.get(), 1));
    ASSERT_TRUE(netvm_copro_write(c.get(), 0, k * 3 + 1));
    ASSERT_TRUE(netvm_copro_invoke(c.get(), 2));
  }
  for (uint32_t k = 0; k < 5000; k += 97) {
    ASSERT_TRUE(netvm_copro_write(c.get(), 0, k));
    ASSERT_TRUE(netvm_copro_invoke(c.get(), 3));
    EXPECT_EQ(reg(c.get(), 0), k * 3 + 1);
    EXPECT_EQ(reg(c.get(), 1), 1u);
  }
}

TEST(Coprocessor, LookupErrors) {
  Copro c = make("lookup");
  uint32_t v;
  EXPECT_FALSE(netvm_copro_read(c.get(), 3, &v));
  EXPECT_STREQ(netvm_copro_error(c.get()), "no register 3");
  EXPECT_FALSE(netvm_copro_write(c.get(), 7, 1));
  EXPECT_FALSE(netvm_copro_invoke(c.get(), 9));
  EXPECT_STREQ(netvm_copro_error(c.get()), "unknown lookup operation 9");
  EXPECT_FALSE(netvm_copro_invoke(c.get(), 2)); // add_value without a key
  for (int i = 0; i < 16; ++i)
    ASSERT_TRUE(netvm_copro_invoke(c.get(), 1));
  EXPECT_FALSE(netvm_copro_invoke(c.get(), 1)); // 17-word key
}

TEST(Coprocessor, LookupAbandonForgetsThePendingKey) {
  // Key [3] -> 30. A key half-built ([8]) when the handler raised is
  // abandoned: the next read_value looks up [R0] = [3], not [8, 3].
  Copro c = make("lookup");
  ASSERT_TRUE(netvm_copro_write(c.get(), 0, 3));
  ASSERT_TRUE(netvm_copro_invoke(c.get(), 1));
  ASSERT_TRUE(netvm_copro_write(c.get(), 0, 30));
  ASSERT_TRUE(netvm_copro_invoke(c.get(), 2));
  ASSERT_TRUE(netvm_copro_write(c.get(), 0, 8));
  ASSERT_TRUE(netvm_copro_invoke(c.get(), 1));
  netvm_copro_abandon(c.get());
  ASSERT_TRUE(netvm_copro_write(c.get(), 0, 3));
  ASSERT_TRUE(netvm_copro_invoke(c.get(), 3));
  EXPECT_EQ(reg(c.get(), 1), 1u);
  EXPECT_EQ(reg(c.get(), 0), 30u);
  // Without a pending key, add_value fails after abandon.
  ASSERT_TRUE(netvm_copro_invoke(c.get(), 1));
  netvm_copro_abandon(c.get());
  EXPECT_FALSE(netvm_copro_invoke(c.get(), 2));
  // Other coprocessors accept it (nothing to abandon).
  netvm_copro_abandon(make("associative").get());
  netvm_copro_abandon(nullptr);
}

// Key [k, k ^ 0x5555] -> value with stamp, through `operation` (2 or 5).
static bool store(netvm_copro *c, uint32_t k, uint32_t value, uint32_t stamp,
                  uint32_t operation = 2) {
  EXPECT_TRUE(netvm_copro_write(c, 0, k));
  EXPECT_TRUE(netvm_copro_invoke(c, 1));
  EXPECT_TRUE(netvm_copro_write(c, 0, k ^ 0x5555));
  EXPECT_TRUE(netvm_copro_invoke(c, 1));
  EXPECT_TRUE(netvm_copro_write(c, 0, value));
  EXPECT_TRUE(netvm_copro_write(c, 2, stamp));
  return netvm_copro_invoke(c, operation);
}

// The value of key [k, k ^ 0x5555], or nothing.
static std::optional<uint32_t> find(netvm_copro *c, uint32_t k) {
  EXPECT_TRUE(netvm_copro_write(c, 0, k));
  EXPECT_TRUE(netvm_copro_invoke(c, 1));
  EXPECT_TRUE(netvm_copro_write(c, 0, k ^ 0x5555));
  EXPECT_TRUE(netvm_copro_invoke(c, 1));
  EXPECT_TRUE(netvm_copro_invoke(c, 3));
  if (!reg(c, 1))
    return std::nullopt;
  return reg(c, 0);
}

TEST(Coprocessor, LookupCapacity) {
  Copro c = make("lookup");
  for (uint32_t k = 0; k < NETVM_LOOKUP_CAPACITY; ++k)
    ASSERT_TRUE(store(c.get(), k, k + 1, 0));
  EXPECT_EQ(netvm_lookup_count(c.get()), 16384u);
  // A new key does not fit: add_value raises, try_add_value says R1 = 0.
  EXPECT_FALSE(store(c.get(), 99999, 1, 0));
  EXPECT_STREQ(netvm_copro_error(c.get()), "lookup table full (16384 entries)");
  EXPECT_TRUE(store(c.get(), 99999, 1, 0, 5));
  EXPECT_EQ(reg(c.get(), 1), 0u);
  EXPECT_EQ(find(c.get(), 99999), std::nullopt);
  // Existing keys are still replaced, by both operations.
  EXPECT_TRUE(store(c.get(), 7, 70, 3));
  EXPECT_TRUE(store(c.get(), 8, 80, 3, 5));
  EXPECT_EQ(reg(c.get(), 1), 1u);
  EXPECT_EQ(find(c.get(), 7), 70u);
  EXPECT_EQ(find(c.get(), 8), 80u);
  EXPECT_EQ(netvm_lookup_count(c.get()), 16384u);
  // Room made by a deletion takes one new key.
  uint32_t key[2] = {9, 9 ^ 0x5555};
  EXPECT_EQ(netvm_lookup_delete(c.get(), key, 2), 1);
  EXPECT_EQ(netvm_lookup_delete(c.get(), key, 2), 0);
  EXPECT_TRUE(store(c.get(), 99999, 5, 0));
  EXPECT_EQ(find(c.get(), 99999), 5u);
  EXPECT_EQ(find(c.get(), 9), std::nullopt);
  // init empties it.
  ASSERT_TRUE(netvm_copro_invoke(c.get(), 0));
  EXPECT_EQ(netvm_lookup_count(c.get()), 0u);
  EXPECT_EQ(find(c.get(), 7), std::nullopt);
}

TEST(Coprocessor, LookupAgesByStamp) {
  Copro c = make("lookup");
  for (uint32_t k = 0; k < 100; ++k)
    ASSERT_TRUE(store(c.get(), k, k, /*stamp=*/k));
  ASSERT_TRUE(store(c.get(), 3, 33, 95)); // refreshed
  // At time 100, older than 10: stamps below 90.
  EXPECT_EQ(netvm_lookup_age(c.get(), 100, 10), 89u);
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> left;
  netvm_lookup_entry e;
  for (uint32_t i = 0; netvm_lookup_get(c.get(), i, &e); ++i) {
    ASSERT_EQ(e.key_length, 2u);
    EXPECT_EQ(e.key[1], e.key[0] ^ 0x5555);
    left[e.key[0]] = {e.value, e.stamp};
  }
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> want = {{3, {33, 95}}};
  for (uint32_t k = 90; k < 100; ++k)
    want[k] = {k, k};
  EXPECT_EQ(left, want);
  EXPECT_EQ(netvm_lookup_count(c.get()), 11u);
  // Stamps wrap: at time 5, a stamp of 0xFFFFFFFE is 7 old.
  ASSERT_TRUE(store(c.get(), 500, 1, 0xFFFFFFFEu));
  EXPECT_EQ(netvm_lookup_age(c.get(), 5, 7), 11u);
  EXPECT_EQ(find(c.get(), 500), 1u);
  // Not a lookup coprocessor: nothing.
  Copro a = make("associative");
  EXPECT_EQ(netvm_lookup_count(a.get()), 0u);
  EXPECT_EQ(netvm_lookup_age(a.get(), 0, 0), 0u);
}

// Random inserts, replacements and deletions against std::map: deletion
// shifts probe runs back, which must never lose a key.
TEST(Coprocessor, LookupAgreesWithAMap) {
  Copro c = make("lookup");
  std::map<uint32_t, uint32_t> model;
  std::mt19937 rng(7);
  for (int step = 0; step < 200000; ++step) {
    uint32_t k = rng() % 6000, op = rng() % 3;
    if (op == 0) {
      uint32_t key[2] = {k, k ^ 0x5555};
      EXPECT_EQ(netvm_lookup_delete(c.get(), key, 2), model.erase(k) ? 1 : 0);
    } else {
      ASSERT_TRUE(store(c.get(), k, step, 0));
      model[k] = step;
    }
  }
  EXPECT_EQ(netvm_lookup_count(c.get()), model.size());
  for (uint32_t k = 0; k < 6000; ++k) {
    auto it = model.find(k);
    EXPECT_EQ(find(c.get(), k),
              it == model.end() ? std::nullopt : std::optional(it->second))
        << "key " << k;
  }
}

TEST(Coprocessor, AssociativeLongestPrefix) {
  Copro c = make("associative");
  auto insert = [&](uint32_t key, uint32_t keyLen, uint32_t value) {
    ASSERT_TRUE(netvm_copro_write(c.get(), 0, 0));
    ASSERT_TRUE(netvm_copro_write(c.get(), 1, keyLen));
    ASSERT_TRUE(netvm_copro_write(c.get(), 2, 4));
    ASSERT_TRUE(netvm_copro_write(c.get(), 3, key));
    ASSERT_TRUE(netvm_copro_write(c.get(), 11, value));
    ASSERT_TRUE(netvm_copro_invoke(c.get(), 1));
  };
  insert(0xC0A80100, 3, 0x11111111); // 192.168.1/24
  insert(0xC0A80105, 4, 0x22222222); // 192.168.1.5/32
  insert(0, 0, 0x33333333);          // default
  auto lookup = [&](uint32_t key) {
    EXPECT_TRUE(netvm_copro_write(c.get(), 1, 4));
    EXPECT_TRUE(netvm_copro_write(c.get(), 3, key));
    EXPECT_TRUE(netvm_copro_invoke(c.get(), 2));
    return std::make_pair(reg(c.get(), 11), reg(c.get(), 2));
  };
  EXPECT_EQ(lookup(0xC0A80105), std::make_pair(0x22222222u, 4u));
  EXPECT_EQ(lookup(0xC0A80107), std::make_pair(0x11111111u, 4u));
  EXPECT_EQ(lookup(0x0A000001), std::make_pair(0x33333333u, 4u));
  insert(0xC0A80105, 4, 0x44444444); // replaces the /32 entry
  EXPECT_EQ(lookup(0xC0A80105), std::make_pair(0x44444444u, 4u));
  ASSERT_TRUE(netvm_copro_invoke(c.get(), 0)); // reset
  EXPECT_EQ(lookup(0xC0A80105), std::make_pair(0u, 0u));
  ASSERT_TRUE(netvm_copro_write(c.get(), 0, 16));
  EXPECT_FALSE(netvm_copro_invoke(c.get(), 2)); // no table 16
}

//===- regexp and stringmatching ------------------------------------------===//

namespace {
// Initialisation data as a code generator emits it: little-endian integers.
struct InitData {
  std::vector<uint8_t> bytes;
  InitData &u16(uint32_t v) {
    bytes.push_back(static_cast<uint8_t>(v));
    bytes.push_back(static_cast<uint8_t>(v >> 8));
    return *this;
  }
  InitData &u32(uint32_t v) { return u16(v & 0xFFFF).u16(v >> 16); }
  InitData &text(std::string_view s) {
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  // regexp: flag letters and pattern.
  InitData &regexp(std::string_view flags, std::string_view pattern) {
    return u16(flags.size()).text(flags).u16(pattern.size()).text(pattern);
  }
  // stringmatching: one string of a group.
  InitData &string(std::string_view s, bool nocase, uint32_t data) {
    return u16(s.size()).u16(nocase).u32(data).text(s);
  }
};

uint32_t init(netvm_copro *c, const InitData &d) {
  uint32_t status = 99;
  EXPECT_TRUE(netvm_copro_init(c, d.bytes.data(), d.bytes.size(), &status))
      << netvm_copro_error(c);
  return status;
}

// Runs `op` with R0 = k, R1 = offset, R2 = length; returns R0.
uint32_t search(netvm_copro *c, uint32_t op, uint32_t k, uint32_t offset,
                uint32_t length) {
  EXPECT_TRUE(netvm_copro_write(c, 0, k));
  EXPECT_TRUE(netvm_copro_write(c, 1, offset));
  EXPECT_TRUE(netvm_copro_write(c, 2, length));
  EXPECT_TRUE(netvm_copro_invoke(c, op)) << netvm_copro_error(c);
  return reg(c, 0);
}

// Expects operation `op` to fail with `message`.
void expectFailure(netvm_copro *c, uint32_t op, const char *message) {
  EXPECT_FALSE(netvm_copro_invoke(c, op));
  EXPECT_STREQ(netvm_copro_error(c), message);
}

struct Result {
  uint32_t r0, r1, r2, r3;
  bool operator==(const Result &o) const {
    return r0 == o.r0 && r1 == o.r1 && r2 == o.r2 && r3 == o.r3;
  }
};
std::ostream &operator<<(std::ostream &os, const Result &r) {
  return os << "{" << r.r0 << ", " << r.r1 << ", " << r.r2 << ", " << r.r3
            << "}";
}

Result result(netvm_copro *c) {
  EXPECT_TRUE(netvm_copro_invoke(c, 3)) << netvm_copro_error(c);
  return {reg(c, 0), reg(c, 1), reg(c, 2), reg(c, 3)};
}

const std::string kHttp = "xxGET /index.html HTTP/1.1\r\nHOST: Example\r\n";

void attach(netvm_copro *c, std::string_view packet) {
  netvm_copro_attach(c, reinterpret_cast<const uint8_t *>(packet.data()),
                     packet.size());
}
} // namespace

TEST(Coprocessor, RegexpMatchesInRanges) {
  Copro c = make("regexp");
  InitData d;
  d.u16(7)
      .regexp("", "GET /[a-z]+\\.html") // 0
      .regexp("i", "host: *example")    // 1
      .regexp("", "host: *example")     // 2: case-sensitive
      .regexp("", "^GET")               // 3: anchored at the range start
      .regexp("A", "HTTP")              // 4: NetBee's 'A' flag
      .regexp("s", "1\\.1..HOST")       // 5: '.' matches \n only with 's'
      .regexp("", "1\\.1..HOST");       // 6
  EXPECT_EQ(init(c.get(), d), 0u);
  attach(c.get(), kHttp);
  const uint32_t n = kHttp.size();
  // Operation 1: [0, R2); R1 is ignored.
  EXPECT_EQ(search(c.get(), 1, 0, 99, n), 1u);
  EXPECT_EQ(search(c.get(), 1, 1, 0, n), 1u);
  EXPECT_EQ(search(c.get(), 1, 2, 0, n), 0u);
  EXPECT_EQ(search(c.get(), 1, 0, 0, 16), 0u); // ".html" is cut off
  EXPECT_EQ(search(c.get(), 1, 0, 0, 17), 1u); // ... and now complete
  // Operation 2: [R1, R1 + R2); ^ and \A anchor at R1.
  EXPECT_EQ(search(c.get(), 2, 3, 0, n), 0u);
  EXPECT_EQ(search(c.get(), 2, 3, 2, n - 2), 1u);
  EXPECT_EQ(search(c.get(), 2, 4, 18, 4), 1u);
  EXPECT_EQ(search(c.get(), 2, 4, 17, 5), 0u);
  EXPECT_EQ(search(c.get(), 2, 0, 3, n - 3), 0u); // starts inside "GET"
  // The last bytes of the packet, and the empty range at its end.
  EXPECT_EQ(search(c.get(), 2, 1, n - 15, 15), 1u);
  EXPECT_EQ(search(c.get(), 2, 1, n - 15, 12), 0u); // "HOST: Exampl"
  EXPECT_EQ(search(c.get(), 2, 1, n, 0), 0u);
  // DOTALL.
  EXPECT_EQ(search(c.get(), 2, 5, 0, n), 1u);
  EXPECT_EQ(search(c.get(), 2, 6, 0, n), 0u);
  // Operation 4 (netvm): the same answer, for each pattern.
  EXPECT_EQ(search(c.get(), 4, 0, 0, n), 1u);
  EXPECT_EQ(search(c.get(), 4, 2, 0, n), 0u);
  EXPECT_EQ(search(c.get(), 4, 3, 2, 3), 1u);
  EXPECT_EQ(search(c.get(), 4, 1, 0, 30), 0u);
}

TEST(Coprocessor, RegexpResults) {
  Copro c = make("regexp");
  InitData d;
  d.u16(3).regexp("", "b+c").regexp("", "x*").regexp("m", "^a");
  init(c.get(), d);
  attach(c.get(), "abbbcbc\na");
  // The match that ends first, with its leftmost start; offsets from R1.
  EXPECT_EQ(search(c.get(), 2, 0, 1, 8), 1u);
  EXPECT_EQ(result(c.get()), (Result{0, 0, 4, 4}));
  // R0 is now 0: no more results, R1..R3 are zeroed.
  EXPECT_EQ(result(c.get()), (Result{0, 0, 0, 0}));
  // R0 > 0 again reads the kept match again (as NetBee).
  ASSERT_TRUE(netvm_copro_write(c.get(), 0, 1));
  EXPECT_EQ(result(c.get()), (Result{0, 0, 4, 4}));
  EXPECT_EQ(search(c.get(), 2, 0, 6, 3), 0u);
  ASSERT_TRUE(netvm_copro_write(c.get(), 0, 1));
  EXPECT_EQ(result(c.get()), (Result{1, 0, 0, 0}));
  // A pattern matching the empty string matches every range, even an
  // empty one; Hyperscan cannot report its starts.
  EXPECT_EQ(search(c.get(), 2, 1, 9, 0), 1u);
  EXPECT_EQ(result(c.get()), (Result{0, 0, 0, 0xFFFFFFFFu}));
  // Multi-line: ^ after the newline.
  EXPECT_EQ(search(c.get(), 2, 2, 1, 8), 1u);
  EXPECT_EQ(result(c.get()), (Result{0, 0, 8, 1}));
  // Reset forgets the match.
  EXPECT_EQ(search(c.get(), 1, 0, 0, 9), 1u);
  ASSERT_TRUE(netvm_copro_invoke(c.get(), 0));
  ASSERT_TRUE(netvm_copro_write(c.get(), 0, 1));
  EXPECT_EQ(result(c.get()), (Result{1, 0, 0, 0}));
}

TEST(Coprocessor, RegexpErrors) {
  Copro c = make("regexp");
  uint32_t status, v;
  attach(c.get(), "abc");
  EXPECT_FALSE(netvm_copro_read(c.get(), 4, &v));
  EXPECT_STREQ(netvm_copro_error(c.get()), "no register 4");
  expectFailure(c.get(), 1, "operation 1 before copro.init");
  expectFailure(c.get(), 5, "unknown regexp operation 5");
  EXPECT_TRUE(netvm_copro_invoke(c.get(), 0)); // reset needs no patterns
  auto initFails = [&](const InitData &d, const char *message) {
    EXPECT_FALSE(
        netvm_copro_init(c.get(), d.bytes.data(), d.bytes.size(), &status));
    EXPECT_STREQ(netvm_copro_error(c.get()), message);
  };
  initFails(InitData().u16(2).regexp("", "a").regexp("", "(b"),
            "pattern 1: Missing close parenthesis for group started at "
            "index 0.");
  initFails(InitData().u16(1).regexp("", "a(?=b)"),
            "pattern 0: Zero-width assertions are not supported.");
  initFails(InitData().u16(1).regexp("iE", "a"),
            "pattern 0: unsupported flag 0x45");
  initFails(InitData().u16(1).regexp("", std::string_view("a\0b", 3)),
            "pattern 0 contains a NUL byte (write \\x00)");
  initFails(InitData().u16(2).regexp("", "abc").u16(0).u16(5).text("ab"),
            "initialisation data ends inside pattern 1");
  initFails(InitData().text("\x01"),
            "initialisation data too short for the pattern count");
  // A failed copro.init leaves no patterns.
  expectFailure(c.get(), 2, "operation 2 before copro.init");

  init(c.get(), InitData().u16(1).regexp("", "b"));
  EXPECT_TRUE(netvm_copro_write(c.get(), 0, 1));
  expectFailure(c.get(), 2, "no pattern 1 (copro.init gave 1)");
  EXPECT_TRUE(netvm_copro_write(c.get(), 0, 0));
  EXPECT_TRUE(netvm_copro_write(c.get(), 1, 2));
  EXPECT_TRUE(netvm_copro_write(c.get(), 2, 2));
  expectFailure(c.get(), 2,
                "range at offset 2 of length 2 beyond the 3-byte packet");
  EXPECT_TRUE(netvm_copro_write(c.get(), 1, 4));
  EXPECT_TRUE(netvm_copro_write(c.get(), 2, 0));
  expectFailure(c.get(), 4,
                "range at offset 4 of length 0 beyond the 3-byte packet");
  // No wrap-around.
  EXPECT_TRUE(netvm_copro_write(c.get(), 1, 1));
  EXPECT_TRUE(netvm_copro_write(c.get(), 2, 0xFFFFFFFF));
  expectFailure(c.get(), 2,
                "range at offset 1 of length 4294967295 beyond the 3-byte "
                "packet");
  EXPECT_TRUE(netvm_copro_write(c.get(), 2, 4));
  expectFailure(c.get(), 1,
                "range at offset 0 of length 4 beyond the 3-byte packet");
  // Without copro.exbuf there is nothing to search.
  Copro fresh = make("regexp");
  init(fresh.get(), InitData().u16(1).regexp("", "b"));
  expectFailure(fresh.get(), 1, "no packet to search (copro.exbuf first)");
}

TEST(Coprocessor, RegexpReinitReplacesPatterns) {
  Copro c = make("regexp");
  attach(c.get(), "hello world");
  init(c.get(), InitData().u16(1).regexp("", "world"));
  EXPECT_EQ(search(c.get(), 1, 0, 0, 11), 1u);
  init(c.get(), InitData().u16(2).regexp("", "planet").regexp("", "hello"));
  EXPECT_EQ(search(c.get(), 1, 0, 0, 11), 0u);
  EXPECT_EQ(search(c.get(), 1, 1, 0, 11), 1u);
  // An empty packet: an empty range only.
  attach(c.get(), "");
  EXPECT_EQ(search(c.get(), 2, 1, 0, 0), 0u);
}

TEST(Coprocessor, StringmatchingCountsAndResults) {
  Copro c = make("stringmatching");
  InitData d;
  d.u16(3)
      .u16(3) // group 0
      .string("abc", false, 10)
      .string("BC", true, 11)
      .string(std::string_view("\0\x01", 2), false, 12)
      .u16(1) // group 1
      .string("xyz", false, 20)
      .u16(0); // group 2: empty
  EXPECT_EQ(init(c.get(), d), 0u);
  const std::string packet("abcABC\0\x01zbc", 11);
  attach(c.get(), packet);
  // "abc" at 0, "bc" at 1 and 4 (any case), "\0\1" at 6, "bc" at 9.
  EXPECT_EQ(search(c.get(), 1, 0, 0, 11), 5u);
  // In order of end, then of the strings: "abc" before "BC" at end 3.
  EXPECT_EQ(result(c.get()), (Result{4, 10, 3, 3}));
  EXPECT_EQ(result(c.get()), (Result{3, 11, 3, 2}));
  EXPECT_EQ(result(c.get()), (Result{2, 11, 6, 2}));
  EXPECT_EQ(result(c.get()), (Result{1, 12, 8, 2}));
  EXPECT_EQ(result(c.get()), (Result{0, 11, 11, 2}));
  expectFailure(c.get(), 3, "no match result left (R0 = 0, 5 of 5 read)");
  // Offsets are relative to R1; a string cut by the range does not count.
  EXPECT_EQ(search(c.get(), 2, 0, 4, 7), 3u);
  EXPECT_EQ(result(c.get()), (Result{2, 11, 2, 2}));
  EXPECT_EQ(search(c.get(), 2, 0, 1, 1), 0u);
  EXPECT_EQ(search(c.get(), 2, 0, 10, 1), 0u);
  EXPECT_EQ(search(c.get(), 2, 0, 9, 2), 1u);
  EXPECT_EQ(search(c.get(), 2, 0, 11, 0), 0u);
  EXPECT_EQ(search(c.get(), 1, 1, 0, 11), 0u);
  EXPECT_EQ(search(c.get(), 1, 2, 0, 11), 0u);
  // Operation 4 (netvm): 0/1, and operation 3 reads the match it found.
  EXPECT_EQ(search(c.get(), 4, 0, 2, 9), 1u);
  EXPECT_EQ(result(c.get()), (Result{0, 11, 4, 2}));
  expectFailure(c.get(), 3, "no match result left (R0 = 0, 1 of 1 read)");
  EXPECT_EQ(search(c.get(), 4, 1, 0, 11), 0u);
  // Reset forgets the results.
  EXPECT_EQ(search(c.get(), 1, 0, 0, 11), 5u);
  ASSERT_TRUE(netvm_copro_invoke(c.get(), 0));
  expectFailure(c.get(), 3, "no match result left (R0 = 5, 0 of 0 read)");
}

TEST(Coprocessor, StringmatchingCase) {
  Copro c = make("stringmatching");
  InitData d;
  d.u16(2).u16(1).string("Host:", true, 1).u16(1).string("Host:", false, 2);
  init(c.get(), d);
  attach(c.get(), "HOST: a\r\nhost: b\r\nHost: c");
  EXPECT_EQ(search(c.get(), 1, 0, 0, 25), 3u);
  EXPECT_EQ(search(c.get(), 1, 1, 0, 25), 1u);
  EXPECT_EQ(result(c.get()), (Result{0, 2, 23, 5}));
  EXPECT_EQ(search(c.get(), 4, 1, 0, 20), 0u);
}

TEST(Coprocessor, StringmatchingKeepsAtMost1600Matches) {
  Copro c = make("stringmatching");
  init(c.get(), InitData().u16(1).u16(1).string("aa", false, 7));
  const std::string packet(3000, 'a');
  attach(c.get(), packet);
  EXPECT_EQ(search(c.get(), 1, 0, 0, 3000), 1600u);
  EXPECT_EQ(result(c.get()), (Result{1599, 7, 2, 2}));
  EXPECT_EQ(search(c.get(), 1, 0, 0, 100), 99u);
}

TEST(Coprocessor, StringmatchingErrors) {
  Copro c = make("stringmatching");
  uint32_t status;
  attach(c.get(), "abc");
  expectFailure(c.get(), 2, "operation 2 before copro.init");
  expectFailure(c.get(), 7, "unknown stringmatching operation 7");
  auto initFails = [&](const InitData &d, const char *message) {
    EXPECT_FALSE(
        netvm_copro_init(c.get(), d.bytes.data(), d.bytes.size(), &status));
    EXPECT_STREQ(netvm_copro_error(c.get()), message);
  };
  initFails(InitData().u16(1).u16(2).string("a", false, 0).string("", false, 0),
            "string 1 of group 0 is empty");
  initFails(InitData().u16(1).u16(1).u16(4).u16(0).u32(0).text("abc"),
            "initialisation data ends inside string 0 of group 0");
  initFails(InitData().u16(2).u16(1).string("a", false, 0),
            "initialisation data ends before group 1");
  initFails(InitData(), "initialisation data too short for the group count");
  init(c.get(), InitData().u16(1).u16(1).string("b", false, 0));
  EXPECT_TRUE(netvm_copro_write(c.get(), 0, 1));
  expectFailure(c.get(), 4, "no group 1 (copro.init gave 1)");
  EXPECT_EQ(search(c.get(), 2, 0, 0, 3), 1u);
  EXPECT_TRUE(netvm_copro_write(c.get(), 0, 0)); // R0 is now the count
  EXPECT_TRUE(netvm_copro_write(c.get(), 2, 5));
  expectFailure(c.get(), 1,
                "range at offset 0 of length 5 beyond the 3-byte packet");
}
