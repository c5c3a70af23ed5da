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
#include "netvm/abi.h"
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

// The C ABI numbers exception and handler kinds as the dialect does; the
// runtime's name tables (netvm_exception_name, netvm_handler_name) spell
// them as the enumerations' strings (test/Unit/SemanticsTest.cpp).
#define NETVM_SAME(E, C) (static_cast<uint32_t>(E) == (C))
static_assert(
    NETVM_SAME(ExceptionKind::PacketBounds, NETVM_EXC_PACKET_BOUNDS) &&
        NETVM_SAME(ExceptionKind::InfoBounds, NETVM_EXC_INFO_BOUNDS) &&
        NETVM_SAME(ExceptionKind::DataBounds, NETVM_EXC_DATA_BOUNDS) &&
        NETVM_SAME(ExceptionKind::SharedBounds, NETVM_EXC_SHARED_BOUNDS) &&
        NETVM_SAME(ExceptionKind::InitDataBounds, NETVM_EXC_INITDATA_BOUNDS) &&
        NETVM_SAME(ExceptionKind::DivisionByZero, NETVM_EXC_DIVISION_BY_ZERO) &&
        NETVM_SAME(ExceptionKind::Watchdog, NETVM_EXC_WATCHDOG) &&
        NETVM_SAME(ExceptionKind::Coprocessor, NETVM_EXC_COPROCESSOR) &&
        NETVM_SAME(ExceptionKind::NoExchangeBuffer, NETVM_EXC_NO_EXBUF) &&
        NETVM_SAME(ExceptionKind::Exit, NETVM_EXC_EXIT),
    "ExceptionKind must match the C ABI's NETVM_EXC_*");
static_assert(NETVM_SAME(HandlerKind::Init, NETVM_HANDLER_INIT) &&
                  NETVM_SAME(HandlerKind::Push, NETVM_HANDLER_PUSH) &&
                  NETVM_SAME(HandlerKind::Pull, NETVM_HANDLER_PULL),
              "HandlerKind must match the C ABI's NETVM_HANDLER_*");
#undef NETVM_SAME

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
