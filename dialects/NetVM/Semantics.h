//===- Semantics.h - Reference semantics of netvm computations --*- C++ -*-===//
//
// The exact meaning of the netvm operations that compute something beyond
// plain arithmetic: byte swap, bit search and bit ops, the hash, the Internet
// checksum, CRCs and the pseudo-random generator. Folders, the reference
// interpreter and the native runtime all call these functions, so there is
// one definition of each.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_DIALECT_SEMANTICS_H
#define NETVM_DIALECT_SEMANTICS_H

#include "NetVM/NetVMAttributes.h"

#include "llvm/ADT/ArrayRef.h"
#include <cstdint>

namespace netvm::sem {

inline uint32_t byteSwap(uint32_t x) {
  return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) |
         (x << 24);
}

/// Number of leading zero bits (32 for 0).
inline uint32_t countLeadingZeros(uint32_t x) {
  return x == 0 ? 32u : static_cast<uint32_t>(__builtin_clz(x));
}

/// Index of the most significant set bit, 0xFFFFFFFF for 0.
inline uint32_t findBit(uint32_t x) { return 31u - countLeadingZeros(x); }

inline uint32_t bitOp(BitOpKind kind, uint32_t x, uint32_t index) {
  if (index >= 32)
    return x;
  uint32_t mask = 1u << index;
  switch (kind) {
  case BitOpKind::Set:
    return x | mask;
  case BitOpKind::Clear:
    return x & ~mask;
  case BitOpKind::Flip:
    return x ^ mask;
  case BitOpKind::Test:
    return (x & mask) ? 1u : 0u;
  case BitOpKind::TestNot:
    return (x & mask) ? 0u : 1u;
  }
  return x;
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

/// Paul Hsieh's SuperFastHash over a byte string.
inline uint32_t superFastHash(const uint8_t *data, uint32_t len) {
  if (len == 0)
    return 0;
  auto get16 = [](const uint8_t *p) -> uint32_t {
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8);
  };
  uint32_t hash = len;
  uint32_t rem = len & 3;
  for (uint32_t blocks = len >> 2; blocks > 0; --blocks) {
    hash += get16(data);
    uint32_t tmp = (get16(data + 2) << 11) ^ hash;
    hash = (hash << 16) ^ tmp;
    data += 4;
    hash += hash >> 11;
  }
  switch (rem) {
  case 3:
    hash += get16(data);
    hash ^= hash << 16;
    hash ^= static_cast<uint32_t>(data[2]) << 18;
    hash += hash >> 11;
    break;
  case 2:
    hash += get16(data);
    hash ^= hash << 11;
    hash += hash >> 17;
    break;
  case 1:
    hash += data[0];
    hash ^= hash << 10;
    hash += hash >> 1;
    break;
  }
  // Final avalanche, as in NetBee's nvmHash.
  hash ^= hash << 3;
  hash += hash >> 5;
  hash ^= hash << 2;
  hash += hash >> 15;
  hash ^= hash << 10;
  return hash;
}

/// The hash of a sequence of words, each in network byte order.
inline uint32_t hashWords(llvm::ArrayRef<uint32_t> words) {
  uint8_t bytes[4 * 256];
  uint32_t n = 0;
  for (uint32_t w : words.take_front(256)) {
    bytes[n++] = static_cast<uint8_t>(w >> 24);
    bytes[n++] = static_cast<uint8_t>(w >> 16);
    bytes[n++] = static_cast<uint8_t>(w >> 8);
    bytes[n++] = static_cast<uint8_t>(w);
  }
  return superFastHash(bytes, n);
}

/// Fold a 32-bit accumulator into a 16-bit ones' complement sum.
inline uint32_t foldChecksum(uint64_t sum) {
  while (sum >> 16)
    sum = (sum & 0xffffu) + (sum >> 16);
  return static_cast<uint32_t>(sum);
}

/// RFC 1071 ones' complement sum of big-endian 16-bit words (not
/// complemented).
inline uint32_t checksum(const uint8_t *data, uint32_t len) {
  uint64_t sum = 0;
  uint32_t i = 0;
  for (; i + 1 < len; i += 2)
    sum += (static_cast<uint32_t>(data[i]) << 8) | data[i + 1];
  if (i < len)
    sum += static_cast<uint32_t>(data[i]) << 8;
  return foldChecksum(sum);
}

inline uint32_t checksumAdd(uint32_t sum, uint32_t value) {
  return foldChecksum(static_cast<uint64_t>(sum & 0xffffu) +
                      (value & 0xffffu));
}

inline uint32_t checksumSub(uint32_t sum, uint32_t value) {
  return foldChecksum(static_cast<uint64_t>(sum & 0xffffu) +
                      (~value & 0xffffu));
}

/// Reflected CRC-32 variants, bit at a time (the reference, not the fast
/// path).
inline uint32_t crc(CrcKind kind, const uint8_t *data, uint32_t len) {
  uint32_t poly = kind == CrcKind::Crc32 ? 0xEDB88320u : 0x82F63B78u;
  uint32_t crc = 0xFFFFFFFFu;
  for (uint32_t i = 0; i < len; ++i) {
    crc ^= data[i];
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc >> 1) ^ (poly & (0u - (crc & 1u)));
  }
  return crc ^ 0xFFFFFFFFu;
}

inline uint32_t crcWord(CrcKind kind, uint32_t word) {
  uint8_t bytes[4] = {static_cast<uint8_t>(word >> 24),
                      static_cast<uint8_t>(word >> 16),
                      static_cast<uint8_t>(word >> 8),
                      static_cast<uint8_t>(word)};
  return crc(kind, bytes, 4);
}

/// The seed of every NetPE's pseudo-random generator.
constexpr uint32_t kRandomSeed = 2463534242u;

/// Marsaglia's xorshift32: advances `state` and returns the new value.
inline uint32_t nextRandom(uint32_t &state) {
  uint32_t x = state;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  state = x;
  return x;
}

} // namespace netvm::sem

#endif // NETVM_DIALECT_SEMANTICS_H
