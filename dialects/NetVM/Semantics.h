//===- Semantics.h - Reference semantics of netvm computations --*- C++ -*-===//
//
// C++ face of runtime/include/netvm/semantics.h (the one definition of the
// byte swap, bit operations, hash, checksum, CRC and random generator, shared
// with the native runtime), typed with the dialect's enumerations. Folders
// and the reference interpreter use it.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_DIALECT_SEMANTICS_H
#define NETVM_DIALECT_SEMANTICS_H

#include "NetVM/NetVMAttributes.h"
#include "netvm/semantics.h"

#include "llvm/ADT/ArrayRef.h"
#include <cstdint>

namespace netvm::sem {

static_assert(static_cast<uint32_t>(BitOpKind::Set) == NETVM_BIT_SET &&
                  static_cast<uint32_t>(BitOpKind::Clear) == NETVM_BIT_CLEAR &&
                  static_cast<uint32_t>(BitOpKind::Flip) == NETVM_BIT_FLIP &&
                  static_cast<uint32_t>(BitOpKind::Test) == NETVM_BIT_TEST &&
                  static_cast<uint32_t>(BitOpKind::TestNot) == NETVM_BIT_TESTN,
              "BitOpKind must match the runtime's encoding");
static_assert(static_cast<uint32_t>(CrcKind::Crc32) == NETVM_CRC32 &&
                  static_cast<uint32_t>(CrcKind::Crc32c) == NETVM_CRC32C,
              "CrcKind must match the runtime's encoding");

inline uint32_t byteSwap(uint32_t x) { return netvm_bswap32(x); }
inline uint32_t countLeadingZeros(uint32_t x) { return netvm_clz32(x); }
inline uint32_t findBit(uint32_t x) { return netvm_find_bit(x); }
inline uint32_t bitOp(BitOpKind kind, uint32_t x, uint32_t index) {
  return netvm_bit_op(static_cast<uint32_t>(kind), x, index);
}

/// Logical shifts and rotations with the amount taken modulo 32, which is
/// what NetIL programs written for x86 have always observed.
inline uint32_t shiftLeft(uint32_t x, uint32_t n) { return x << (n & 31); }
inline uint32_t shiftRightLogical(uint32_t x, uint32_t n) {
  return x >> (n & 31);
}
inline uint32_t shiftRightArith(uint32_t x, uint32_t n) {
  return static_cast<uint32_t>(static_cast<int32_t>(x) >> (n & 31));
}

inline uint32_t superFastHash(const uint8_t *data, uint32_t len) {
  return netvm_superfasthash(data, len);
}
inline uint32_t hashWords(llvm::ArrayRef<uint32_t> words) {
  return netvm_hash_words(words.data(), static_cast<uint32_t>(words.size()));
}
inline uint32_t checksum(const uint8_t *data, uint32_t len) {
  return netvm_checksum(data, len);
}
inline uint32_t checksumAdd(uint32_t sum, uint32_t value) {
  return netvm_checksum_add(sum, value);
}
inline uint32_t checksumSub(uint32_t sum, uint32_t value) {
  return netvm_checksum_sub(sum, value);
}
inline uint32_t crc(CrcKind kind, const uint8_t *data, uint32_t len) {
  return netvm_crc(static_cast<uint32_t>(kind), data, len);
}
inline uint32_t crcWord(CrcKind kind, uint32_t word) {
  return netvm_crc_word(static_cast<uint32_t>(kind), word);
}

constexpr uint32_t kRandomSeed = NETVM_RANDOM_SEED;
inline uint32_t nextRandom(uint32_t &state) {
  return netvm_next_random(&state);
}

} // namespace netvm::sem

#endif // NETVM_DIALECT_SEMANTICS_H
