//===- Bytes.h - Big-endian fields and Internet sums ------------*- C++ -*-===//
//
// The byte helpers the host sides of the onload layer share (Stack.cpp,
// Tcp.cpp, TcpSend.cpp). Not installed.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_ONLOAD_BYTES_H
#define NETVM_ONLOAD_BYTES_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace netvm::onload::bytes {

inline void put16(std::vector<uint8_t> &f, size_t at, uint32_t v) {
  f[at] = uint8_t(v >> 8);
  f[at + 1] = uint8_t(v);
}
inline void put32(std::vector<uint8_t> &f, size_t at, uint32_t v) {
  put16(f, at, v >> 16);
  put16(f, at + 2, v);
}
inline uint32_t get16(const uint8_t *p) { return uint32_t(p[0]) << 8 | p[1]; }
inline uint32_t get32(const uint8_t *p) {
  return get16(p) << 16 | get16(p + 2);
}

inline uint32_t fold(uint64_t sum) {
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return uint32_t(sum);
}

/// The 16-bit big-endian words of `p`, summed (an odd last byte padded).
inline uint64_t sum16(const uint8_t *p, size_t length) {
  uint64_t sum = 0;
  for (size_t i = 0; i + 1 < length; i += 2)
    sum += get16(p + i);
  if (length & 1)
    sum += uint32_t(p[length - 1]) << 8;
  return sum;
}

} // namespace netvm::onload::bytes

#endif // NETVM_ONLOAD_BYTES_H
