/*===- semantics.h - Reference semantics of NetVM computations -----*- C -*-===*
 *
 * The exact meaning of the NetVM operations that compute more than plain
 * arithmetic: byte swap, bit search and single-bit operations, the hash, the
 * Internet checksum, CRCs and the per-NetPE pseudo-random generator.
 *
 * One definition for every execution path: the compiler's constant folders
 * and the reference interpreter include this header, and the native runtime
 * (linked with JIT-compiled and AOT-compiled code, on x86-64 and AArch64)
 * exports functions built from it. Plain C11, no dependencies.
 *
 *===----------------------------------------------------------------------===*/

#ifndef NETVM_RUNTIME_SEMANTICS_H
#define NETVM_RUNTIME_SEMANTICS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Variants of the single-bit operation (netvm.bit); values match the
 * dialect's BitOpKind enumeration. */
enum {
  NETVM_BIT_SET = 0,
  NETVM_BIT_CLEAR = 1,
  NETVM_BIT_FLIP = 2,
  NETVM_BIT_TEST = 3,
  NETVM_BIT_TESTN = 4
};

/* CRC algorithms (netvm.crc); values match the dialect's CrcKind. */
enum { NETVM_CRC32 = 0, NETVM_CRC32C = 1 };

/* The seed of every NetPE's pseudo-random generator. */
#define NETVM_RANDOM_SEED 2463534242u

static inline uint32_t netvm_bswap32(uint32_t x) {
  return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}

/* Number of leading zero bits (32 for 0). */
static inline uint32_t netvm_clz32(uint32_t x) {
  return x == 0 ? 32u : (uint32_t)__builtin_clz(x);
}

/* Index of the most significant set bit, 0xFFFFFFFF for 0. */
static inline uint32_t netvm_find_bit(uint32_t x) {
  return 31u - netvm_clz32(x);
}

/* set/clear/flip return the word with bit `index` changed; test/testn
 * return 1 or 0. An index of 32 or more leaves the word unchanged. */
static inline uint32_t netvm_bit_op(uint32_t kind, uint32_t x, uint32_t index) {
  uint32_t mask;
  if (index >= 32)
    return x;
  mask = 1u << index;
  switch (kind) {
  case NETVM_BIT_SET:
    return x | mask;
  case NETVM_BIT_CLEAR:
    return x & ~mask;
  case NETVM_BIT_FLIP:
    return x ^ mask;
  case NETVM_BIT_TEST:
    return (x & mask) ? 1u : 0u;
  case NETVM_BIT_TESTN:
    return (x & mask) ? 0u : 1u;
  default:
    return x;
  }
}

/* Paul Hsieh's SuperFastHash over a byte string, with NetBee's final
 * avalanche. */
static inline uint32_t netvm_superfasthash(const uint8_t *data, uint32_t len) {
  uint32_t hash = len, tmp, rem, blocks;
  if (len == 0)
    return 0;
  rem = len & 3;
  for (blocks = len >> 2; blocks > 0; --blocks) {
    hash += (uint32_t)data[0] | ((uint32_t)data[1] << 8);
    tmp = (((uint32_t)data[2] | ((uint32_t)data[3] << 8)) << 11) ^ hash;
    hash = (hash << 16) ^ tmp;
    data += 4;
    hash += hash >> 11;
  }
  switch (rem) {
  case 3:
    hash += (uint32_t)data[0] | ((uint32_t)data[1] << 8);
    hash ^= hash << 16;
    hash ^= (uint32_t)data[2] << 18;
    hash += hash >> 11;
    break;
  case 2:
    hash += (uint32_t)data[0] | ((uint32_t)data[1] << 8);
    hash ^= hash << 11;
    hash += hash >> 17;
    break;
  case 1:
    hash += data[0];
    hash ^= hash << 10;
    hash += hash >> 1;
    break;
  }
  hash ^= hash << 3;
  hash += hash >> 5;
  hash ^= hash << 2;
  hash += hash >> 15;
  hash ^= hash << 10;
  return hash;
}

/* The hash of `n` words, each taken in network byte order (at most 256
 * words are hashed). */
static inline uint32_t netvm_hash_words(const uint32_t *words, uint32_t n) {
  uint8_t bytes[4 * 256];
  uint32_t i;
  if (n > 256)
    n = 256;
  for (i = 0; i < n; ++i) {
    bytes[4 * i] = (uint8_t)(words[i] >> 24);
    bytes[4 * i + 1] = (uint8_t)(words[i] >> 16);
    bytes[4 * i + 2] = (uint8_t)(words[i] >> 8);
    bytes[4 * i + 3] = (uint8_t)words[i];
  }
  return netvm_superfasthash(bytes, 4 * n);
}

/* Fold an accumulator into a 16-bit ones' complement sum. */
static inline uint32_t netvm_fold_checksum(uint64_t sum) {
  while (sum >> 16)
    sum = (sum & 0xffffu) + (sum >> 16);
  return (uint32_t)sum;
}

/* RFC 1071 ones' complement sum of big-endian 16-bit words, folded to 16
 * bits and not complemented (a correct header sums to 0xFFFF). */
static inline uint32_t netvm_checksum(const uint8_t *data, uint32_t len) {
  uint64_t sum = 0;
  uint32_t i = 0;
  for (; i + 1 < len; i += 2)
    sum += ((uint32_t)data[i] << 8) | data[i + 1];
  if (i < len)
    sum += (uint32_t)data[i] << 8;
  return netvm_fold_checksum(sum);
}

static inline uint32_t netvm_checksum_add(uint32_t sum, uint32_t value) {
  return netvm_fold_checksum((uint64_t)(sum & 0xffffu) + (value & 0xffffu));
}

static inline uint32_t netvm_checksum_sub(uint32_t sum, uint32_t value) {
  return netvm_fold_checksum((uint64_t)(sum & 0xffffu) + (~value & 0xffffu));
}

/* Reflected CRC-32 (IEEE 802.3) or CRC-32C, bit at a time: the reference
 * definition, fast enough for packet headers. */
static inline uint32_t netvm_crc(uint32_t kind, const uint8_t *data,
                                 uint32_t len) {
  uint32_t poly = kind == NETVM_CRC32 ? 0xEDB88320u : 0x82F63B78u;
  uint32_t crc = 0xFFFFFFFFu, i;
  int bit;
  for (i = 0; i < len; ++i) {
    crc ^= data[i];
    for (bit = 0; bit < 8; ++bit)
      crc = (crc >> 1) ^ (poly & (0u - (crc & 1u)));
  }
  return crc ^ 0xFFFFFFFFu;
}

/* The CRC of a word's four bytes in network byte order. */
static inline uint32_t netvm_crc_word(uint32_t kind, uint32_t word) {
  uint8_t bytes[4];
  bytes[0] = (uint8_t)(word >> 24);
  bytes[1] = (uint8_t)(word >> 16);
  bytes[2] = (uint8_t)(word >> 8);
  bytes[3] = (uint8_t)word;
  return netvm_crc(kind, bytes, 4);
}

/* Marsaglia's xorshift32: advances `*state` and returns the new value. */
static inline uint32_t netvm_next_random(uint32_t *state) {
  uint32_t x = *state;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  *state = x;
  return x;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NETVM_RUNTIME_SEMANTICS_H */
