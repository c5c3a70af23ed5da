//===- SemanticsTest.cpp - Reference semantics of netvm computations
//---------===//
//
// Known-answer tests for the functions in NetVM/Semantics.h, which every
// execution path shares.
//
//===----------------------------------------------------------------------===//

#include "NetVM/Semantics.h"
#include "netvm/runtime.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace netvm;
using namespace netvm::sem;

TEST(Semantics, ByteSwap) {
  EXPECT_EQ(byteSwap(0x11223344u), 0x44332211u);
  EXPECT_EQ(byteSwap(0), 0u);
  EXPECT_EQ(byteSwap(byteSwap(0xDEADBEEFu)), 0xDEADBEEFu);
}

TEST(Semantics, FindBitAndClz) {
  EXPECT_EQ(findBit(0), 0xFFFFFFFFu);
  EXPECT_EQ(findBit(1), 0u);
  EXPECT_EQ(findBit(0x80000000u), 31u);
  EXPECT_EQ(findBit(0x00F00000u), 23u);
  EXPECT_EQ(countLeadingZeros(0), 32u);
  EXPECT_EQ(countLeadingZeros(1), 31u);
  EXPECT_EQ(countLeadingZeros(0xFFFFFFFFu), 0u);
}

TEST(Semantics, BitOps) {
  EXPECT_EQ(bitOp(BitOpKind::Set, 0, 4), 0x10u);
  EXPECT_EQ(bitOp(BitOpKind::Clear, 0xFF, 0), 0xFEu);
  EXPECT_EQ(bitOp(BitOpKind::Flip, 0x10, 4), 0u);
  EXPECT_EQ(bitOp(BitOpKind::Flip, 0x00, 31), 0x80000000u);
  EXPECT_EQ(bitOp(BitOpKind::Test, 0x10, 4), 1u);
  EXPECT_EQ(bitOp(BitOpKind::Test, 0x10, 3), 0u);
  EXPECT_EQ(bitOp(BitOpKind::TestNot, 0x10, 4), 0u);
  EXPECT_EQ(bitOp(BitOpKind::TestNot, 0x10, 3), 1u);
  // Out-of-range indices leave the value alone, for every variant.
  for (BitOpKind k : {BitOpKind::Set, BitOpKind::Clear, BitOpKind::Flip,
                      BitOpKind::Test, BitOpKind::TestNot})
    EXPECT_EQ(bitOp(k, 0x1234, 32), 0x1234u);
}

TEST(Semantics, Shifts) {
  EXPECT_EQ(shiftLeft(1, 33), 2u); // amount taken modulo 32
  EXPECT_EQ(shiftRightLogical(0x80000000u, 31), 1u);
  EXPECT_EQ(shiftRightArith(0x80000000u, 31), 0xFFFFFFFFu);
}

TEST(Semantics, ChecksumRFC1071Example) {
  // The worked example of RFC 1071 section 3: the sum is 0xDDF2.
  const uint8_t data[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(checksum(data, sizeof(data)), 0xDDF2u);
  // An odd trailing byte is padded with zero.
  const uint8_t odd[] = {0x01, 0x02, 0x03};
  EXPECT_EQ(checksum(odd, 3), 0x0402u);
}

TEST(Semantics, ChecksumOfValidIPv4HeaderIsAllOnes) {
  // A real IPv4 header with a correct checksum (0xb861).
  const uint8_t hdr[] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40,
                         0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
                         0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  EXPECT_EQ(checksum(hdr, sizeof(hdr)), 0xFFFFu);
}

TEST(Semantics, ChecksumAdjust) {
  EXPECT_EQ(checksumAdd(0xFFFE, 1), 0xFFFFu);
  EXPECT_EQ(checksumAdd(0xFFFF, 1), 0x0001u); // end-around carry
  // Adding then subtracting a word gives the original sum back.
  for (uint32_t v : {0u, 1u, 0x1234u, 0xFFFFu})
    EXPECT_EQ(checksumSub(checksumAdd(0x4321, v), v) % 0xFFFF,
              0x4321u % 0xFFFF);
}

TEST(Semantics, CrcCheckValues) {
  // The standard "123456789" check values of both algorithms.
  const char *check = "123456789";
  const auto *bytes = reinterpret_cast<const uint8_t *>(check);
  EXPECT_EQ(crc(CrcKind::Crc32, bytes, 9), 0xCBF43926u);
  EXPECT_EQ(crc(CrcKind::Crc32c, bytes, 9), 0xE3069283u);
  const uint8_t word[] = {0x31, 0x32, 0x33, 0x34};
  EXPECT_EQ(crcWord(CrcKind::Crc32, 0x31323334u), crc(CrcKind::Crc32, word, 4));
}

TEST(Semantics, HashIsOverBigEndianWords) {
  const uint8_t bytes[] = {0x01, 0x02, 0x03, 0x04, 0xAA, 0xBB, 0xCC, 0xDD};
  uint32_t words[] = {0x01020304u, 0xAABBCCDDu};
  EXPECT_EQ(hashWords(words), superFastHash(bytes, 8));
  EXPECT_NE(hashWords({0x01020304u}), hashWords({0x04030201u}));
  EXPECT_EQ(superFastHash(bytes, 0), 0u);
}

TEST(Semantics, RandomSequenceIsFixed) {
  uint32_t a = kRandomSeed, b = kRandomSeed;
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(nextRandom(a), nextRandom(b));
  uint32_t s = 1;
  EXPECT_EQ(nextRandom(s), 270369u); // xorshift32 of 1
}

// The runtime's name tables spell exception and handler kinds as the
// dialect's enumerations do (their numbers are tied by static_asserts in
// NetVM/Semantics.h), so every engine reports the same words.
TEST(Semantics, ExceptionAndHandlerNamesMatchTheDialect) {
  static_assert(getMaxEnumValForExceptionKind() + 1 == NETVM_EXC_KINDS);
  static_assert(getMaxEnumValForHandlerKind() + 1 == NETVM_HANDLER_KINDS);
  for (uint32_t k = 0; k < NETVM_EXC_KINDS; ++k)
    EXPECT_EQ(netvm_exception_name(k),
              stringifyExceptionKind(static_cast<ExceptionKind>(k)))
        << "kind " << k;
  for (uint32_t h = 0; h < NETVM_HANDLER_KINDS; ++h)
    EXPECT_EQ(netvm_handler_name(h),
              stringifyHandlerKind(static_cast<HandlerKind>(h)))
        << "handler " << h;
  EXPECT_STREQ(netvm_exception_name(NETVM_EXC_KINDS), "unknown");
  EXPECT_STREQ(netvm_handler_name(NETVM_HANDLER_KINDS), "unknown");
}
