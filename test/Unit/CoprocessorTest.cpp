//===- CoprocessorTest.cpp - The virtual coprocessors -------------------------===//
//
// The register protocols of the lookup and associative coprocessors of the C
// runtime (shared by the interpreter and native code).
//
//===----------------------------------------------------------------------===//

#include "netvm/coprocessor.h"

#include "gtest/gtest.h"

#include <memory>
#include <string>
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
  EXPECT_EQ(make("regexp"), nullptr);
  std::vector<std::string> names;
  for (const char *const *n = netvm_copro_names(); *n; ++n)
    names.push_back(*n);
  EXPECT_EQ(names, (std::vector<std::string>{"associative", "lookup"}));
  EXPECT_EQ(netvm_copro_num_registers(make("lookup").get()), 2u);
  EXPECT_EQ(netvm_copro_num_registers(make("associative").get()), 20u);
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
  EXPECT_FALSE(netvm_copro_read(c.get(), 2, &v));
  EXPECT_STREQ(netvm_copro_error(c.get()), "no register 2");
  EXPECT_FALSE(netvm_copro_write(c.get(), 7, 1));
  EXPECT_FALSE(netvm_copro_invoke(c.get(), 9));
  EXPECT_STREQ(netvm_copro_error(c.get()), "unknown lookup operation 9");
  EXPECT_FALSE(netvm_copro_invoke(c.get(), 2)); // add_value without a key
  for (int i = 0; i < 16; ++i)
    ASSERT_TRUE(netvm_copro_invoke(c.get(), 1));
  EXPECT_FALSE(netvm_copro_invoke(c.get(), 1)); // 17-word key
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
