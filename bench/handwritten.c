/*===- handwritten.c - The paper's five filters written by hand in C -------===*
 *
 * The peers of the examples/filters NetIL programs in the benchmark: what a
 * careful programmer writes for the same five tcpdump expressions, with the
 * same semantics as libpcap's code for them (a packet too short for a field is
 * rejected; TCP ports are read in first fragments only, after an IPv4
 * header of any length). Built with -O2 like the benchmark says.
 *
 * Each filter comes twice: a function taking one packet (called through a
 * pointer, as the JIT's per-packet entry is) and a loop over an array of
 * packets with the filter inlined (the peer of the JIT's batch entry).
 *
 *===----------------------------------------------------------------------===*/

#include "handwritten.h"

static inline uint32_t be16(const uint8_t *p) {
  return (uint32_t)p[0] << 8 | p[1];
}
static inline uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}

static inline int is_ip(const uint8_t *p, uint32_t len) {
  return len >= 14 && be16(p + 12) == 0x0800;
}

static inline int f_ip(const uint8_t *p, uint32_t len) { return is_ip(p, len); }

static inline int f_ip_src(const uint8_t *p, uint32_t len) {
  return is_ip(p, len) && len >= 30 && be32(p + 26) == 0x0A010101u;
}

static inline int f_ip_tcp(const uint8_t *p, uint32_t len) {
  return is_ip(p, len) && len >= 24 && p[23] == 6;
}

static inline int f_four_fields(const uint8_t *p, uint32_t len) {
  uint32_t tcp;
  if (!is_ip(p, len) || len < 34 || be32(p + 26) != 0x0A010101u ||
      be32(p + 30) != 0x0A020202u || p[23] != 6 || (be16(p + 20) & 0x1FFF))
    return 0;
  tcp = 14 + 4 * (p[14] & 0x0F);
  return tcp + 4 <= len && be16(p + tcp) == 20 && be16(p + tcp + 2) == 30;
}

static inline int f_four_hosts(const uint8_t *p, uint32_t len) {
  uint32_t src;
  if (!is_ip(p, len) || len < 30)
    return 0;
  src = be32(p + 26);
  return src == 0x0A040404u || src == 0x0A030303u || src == 0x0A020202u ||
         src == 0x0A010101u;
}

#define FILTER(name)                                                           \
  int hand_##name(const uint8_t *p, uint32_t len) { return f_##name(p, len); } \
  uint64_t hand_loop_##name(const netvm_packet *packets, size_t count) {       \
    uint64_t accepted = 0;                                                     \
    size_t i;                                                                  \
    for (i = 0; i < count; ++i)                                                \
      accepted += (uint64_t)f_##name(packets[i].data, packets[i].length);      \
    return accepted;                                                           \
  }

FILTER(ip)
FILTER(ip_src)
FILTER(ip_tcp)
FILTER(four_fields)
FILTER(four_hosts)
