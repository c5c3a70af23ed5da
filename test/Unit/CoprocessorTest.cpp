//===- CoprocessorTest.cpp - The virtual coprocessors -------------------------===//
//
// The register protocols of the lookup and associative coprocessors.
//
//===----------------------------------------------------------------------===//

#include "netvm/Coprocessor.h"

#include "gtest/gtest.h"

using namespace netvm::rt;

static uint32_t reg(Coprocessor &c, uint32_t r) {
  uint32_t v = 0;
  EXPECT_TRUE(c.read(r, v));
  return v;
}

TEST(Coprocessor, Registry) {
  EXPECT_NE(createCoprocessor("lookup"), nullptr);
  EXPECT_NE(createCoprocessor("associative"), nullptr);
  EXPECT_EQ(createCoprocessor("regexp"), nullptr);
  EXPECT_EQ(availableCoprocessors().size(), 2u);
}

TEST(Coprocessor, LookupExactMatch) {
  auto c = createCoprocessor("lookup");
  ASSERT_TRUE(c->invoke(0));
  // Key [0, 1] -> 7, key [5] -> 9.
  for (auto [key, value] :
       std::vector<std::pair<std::vector<uint32_t>, uint32_t>>{{{0, 1}, 7},
                                                              {{5}, 9}}) {
    for (uint32_t k : key) {
      ASSERT_TRUE(c->write(0, k));
      ASSERT_TRUE(c->invoke(1));
    }
    ASSERT_TRUE(c->write(0, value));
    ASSERT_TRUE(c->invoke(2));
  }
  // A single-word key can be looked up straight from R0.
  ASSERT_TRUE(c->write(0, 5));
  ASSERT_TRUE(c->invoke(3));
  EXPECT_EQ(reg(*c, 0), 9u);
  EXPECT_EQ(reg(*c, 1), 1u);
  // Multi-word keys go through add_data.
  for (uint32_t k : {0u, 1u}) {
    ASSERT_TRUE(c->write(0, k));
    ASSERT_TRUE(c->invoke(1));
  }
  ASSERT_TRUE(c->invoke(3));
  EXPECT_EQ(reg(*c, 0), 7u);
  // A miss leaves R0 alone and clears R1.
  ASSERT_TRUE(c->write(0, 6));
  ASSERT_TRUE(c->invoke(3));
  EXPECT_EQ(reg(*c, 0), 6u);
  EXPECT_EQ(reg(*c, 1), 0u);
}

TEST(Coprocessor, LookupErrors) {
  auto c = createCoprocessor("lookup");
  uint32_t v;
  EXPECT_FALSE(c->read(2, v));
  EXPECT_FALSE(c->write(7, 1));
  EXPECT_FALSE(c->invoke(9));
  EXPECT_FALSE(c->lastError().empty());
  EXPECT_FALSE(c->invoke(2)); // add_value without a key
  for (int i = 0; i < 16; ++i)
    ASSERT_TRUE(c->invoke(1));
  EXPECT_FALSE(c->invoke(1)); // 17-word key
}

TEST(Coprocessor, AssociativeLongestPrefix) {
  auto c = createCoprocessor("associative");
  auto insert = [&](uint32_t key, uint32_t keyLen, uint32_t value) {
    ASSERT_TRUE(c->write(0, 0));
    ASSERT_TRUE(c->write(1, keyLen));
    ASSERT_TRUE(c->write(2, 4));
    ASSERT_TRUE(c->write(3, key));
    ASSERT_TRUE(c->write(11, value));
    ASSERT_TRUE(c->invoke(1));
  };
  insert(0xC0A80100, 3, 0x11111111); // 192.168.1/24
  insert(0xC0A80105, 4, 0x22222222); // 192.168.1.5/32
  insert(0, 0, 0x33333333);          // default
  auto lookup = [&](uint32_t key) {
    EXPECT_TRUE(c->write(1, 4));
    EXPECT_TRUE(c->write(3, key));
    EXPECT_TRUE(c->invoke(2));
    return std::make_pair(reg(*c, 11), reg(*c, 2));
  };
  EXPECT_EQ(lookup(0xC0A80105), std::make_pair(0x22222222u, 4u));
  EXPECT_EQ(lookup(0xC0A80107), std::make_pair(0x11111111u, 4u));
  EXPECT_EQ(lookup(0x0A000001), std::make_pair(0x33333333u, 4u));
  ASSERT_TRUE(c->invoke(0)); // reset
  EXPECT_EQ(lookup(0xC0A80105), std::make_pair(0u, 0u));
  ASSERT_TRUE(c->write(0, 16));
  EXPECT_FALSE(c->invoke(2)); // no table 16
}
