/*===- handwritten.h - Hand-written C peers of the benchmark filters -*- C
 * -*-===*/
#ifndef NETVM_BENCH_HANDWRITTEN_H
#define NETVM_BENCH_HANDWRITTEN_H

#include "netvm/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NETVM_BENCH_FILTER(name)                                               \
  int hand_##name(const uint8_t *p, uint32_t len);                             \
  uint64_t hand_loop_##name(const netvm_packet *packets, size_t count);
NETVM_BENCH_FILTER(ip)
NETVM_BENCH_FILTER(ip_src)
NETVM_BENCH_FILTER(ip_tcp)
NETVM_BENCH_FILTER(four_fields)
NETVM_BENCH_FILTER(four_hosts)
#undef NETVM_BENCH_FILTER

#ifdef __cplusplus
}
#endif

#endif
