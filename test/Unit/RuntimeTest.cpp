//===- RuntimeTest.cpp - The native runtime against the reference
//-----------===//
//
// The runtime's fast versions of the reference computations (semantics.h)
// must give the same values on every input.
//
//===----------------------------------------------------------------------===//

#include "netvm/abi.h"
#include "netvm/semantics.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <random>
#include <vector>

TEST(Runtime, CrcMatchesTheBitwiseReference) {
  std::mt19937 rng(7);
  std::vector<uint8_t> data(300);
  for (uint8_t &b : data)
    b = static_cast<uint8_t>(rng());
  for (uint32_t kind : {0u, 1u})
    for (uint32_t offset = 0; offset < 8; ++offset)
      for (uint32_t length = 0; length + offset <= data.size(); length += 7)
        ASSERT_EQ(netvm_rt_crc(kind, data.data() + offset, length),
                  netvm_crc(kind, data.data() + offset, length))
            << "kind " << kind << " offset " << offset << " length " << length;
}

TEST(Runtime, CrcKnownAnswers) {
  const uint8_t text[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(netvm_rt_crc(0, text, 9), 0xCBF43926u); // CRC-32 check value
  EXPECT_EQ(netvm_rt_crc(1, text, 9), 0xE3069283u); // CRC-32C check value
  EXPECT_EQ(netvm_rt_crc(0, text, 0), 0u);
}
