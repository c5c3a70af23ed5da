/*===- bridge.h - The hand-written C learning bridge of the benchmark -*- C
 * -*-===*
 *
 * The peer of examples/bridge/bridge.netil: the same rules (docs/
 * applications.md, "A learning bridge") in C, on DPDK's rte_hash for the
 * FIB. Built only when pkg-config finds libdpdk (NETVM_BENCH_HAVE_DPDK).
 *
 *===----------------------------------------------------------------------===*/
#ifndef NETVM_BENCH_BRIDGE_H
#define NETVM_BENCH_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { C_BRIDGE_PORTS = 4, C_BRIDGE_CTL = 4 };

/* A frame leaves through `sink` (0..3: out0..out3, 4: ctl). */
typedef void (*c_bridge_output_fn)(void *user, uint32_t sink,
                                   const uint8_t *frame, uint32_t length);

typedef struct c_bridge c_bridge;

/* Initialise DPDK's EAL once (no huge pages, no devices); 0 on failure. */
int c_bridge_dpdk_init(void);
/* A bridge whose FIB holds at most `capacity` addresses; NULL on failure. */
c_bridge *c_bridge_create(uint32_t capacity, c_bridge_output_fn out,
                          void *user);
void c_bridge_destroy(c_bridge *b);
void c_bridge_push(c_bridge *b, uint32_t port, const uint8_t *frame,
                   uint32_t length, uint32_t now);
/* The bridge's counters, in the layout of bridge.netil's data memory
 * (port states, then filtered, flooded, unlearned, blocked, runts). */
void c_bridge_counters(const c_bridge *b, uint32_t out[5]);
uint32_t c_bridge_fib_size(const c_bridge *b);

/* The inner loop of the lookup benchmark: rte_hash with 8-byte keys. */
typedef struct c_hash c_hash;
c_hash *c_hash_create(uint32_t capacity);
void c_hash_destroy(c_hash *h);
/* 1 if stored. */
int c_hash_add(c_hash *h, const uint32_t key[2], uint32_t value);
/* Sum of the values found for `count` keys (2 words each); misses add 0. */
uint64_t c_hash_lookup_loop(c_hash *h, const uint32_t *keys, size_t count);

#ifdef __cplusplus
}
#endif

#endif
