/*===- bridge.c - The hand-written C learning bridge, on rte_hash ---------===*
 *
 * The rules of examples/bridge/bridge.netil, frame by frame: port states,
 * reserved group addresses to ctl, backward learning of unicast sources
 * (MAC -> port and last seen, never more than the capacity), forwarding to
 * the learned port, filtering on the input port, flooding in port order.
 * The FIB is DPDK's rte_hash (6-byte keys, the data pointer holds port and
 * stamp), as a C programmer would write it.
 *
 *===----------------------------------------------------------------------===*/

#include "bridge.h"

#include <rte_eal.h>
#include <rte_hash.h>
#include <rte_jhash.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct c_bridge {
  struct rte_hash *fib;
  uint32_t capacity;
  c_bridge_output_fn out;
  void *user;
  uint8_t state[C_BRIDGE_PORTS];
  uint32_t filtered, flooded, unlearned, blocked, runts;
};

int c_bridge_dpdk_init(void) {
  /* rte_eal_init takes a writable argv. */
  static char args[][24] = {"netvm-bridge-bench",
                            "--no-huge",
                            "--no-pci",
                            "--no-shconf",
                            "--no-telemetry",
                            "-m",
                            "256",
                            "-l",
                            "0",
                            "--log-level=error"};
  enum { ARGC = sizeof(args) / sizeof(args[0]) };
  static char *argv[ARGC + 1];
  static int done;
  int i;
  if (!done) {
    for (i = 0; i < ARGC; ++i)
      argv[i] = args[i];
    done = rte_eal_init(ARGC, argv) >= 0 ? 1 : -1;
  }
  return done == 1;
}

static struct rte_hash *make_hash(uint32_t capacity, uint32_t key_len) {
  static unsigned serial;
  char name[32];
  struct rte_hash_parameters p;
  memset(&p, 0, sizeof(p));
  snprintf(name, sizeof(name), "netvm-bench-%u", serial++);
  p.name = name;
  /* The bridge bounds the FIB itself (rte_hash_count) to the capacity. */
  p.entries = capacity;
  p.key_len = key_len;
  p.hash_func = rte_jhash;
  p.socket_id = 0;
  /* Extendable buckets: every one of `entries` keys fits, as in netvm. */
  p.extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE;
  return rte_hash_create(&p);
}

c_bridge *c_bridge_create(uint32_t capacity, c_bridge_output_fn out,
                          void *user) {
  c_bridge *b = calloc(1, sizeof(*b));
  if (!b)
    return NULL;
  b->fib = make_hash(capacity, 6);
  if (!b->fib) {
    free(b);
    return NULL;
  }
  b->capacity = capacity;
  b->out = out;
  b->user = user;
  return b;
}

void c_bridge_destroy(c_bridge *b) {
  if (!b)
    return;
  rte_hash_free(b->fib);
  free(b);
}

/* Data of a FIB entry: the port in the low byte, the stamp above. */
static inline void *entry_of(uint32_t port, uint32_t now) {
  return (void *)(((uintptr_t)now << 8) | port);
}

void c_bridge_push(c_bridge *b, uint32_t port, const uint8_t *frame,
                   uint32_t length, uint32_t now) {
  const uint8_t *dst = frame, *src = frame + 6;
  void *data;
  uint32_t p;
  if (length < 14) {
    ++b->runts;
    return;
  }
  if (b->state[port] == 2) {
    ++b->blocked;
    return;
  }
  if (dst[0] == 0x01 && dst[1] == 0x80 && dst[2] == 0xC2 && dst[3] == 0 &&
      dst[4] == 0 && dst[5] < 0x10) {
    b->out(b->user, C_BRIDGE_CTL, frame, length);
    return;
  }
  if (b->state[port] != 0) {
    ++b->blocked;
    return;
  }
  if (!(src[0] & 1)) {
    /* Learn: refresh a known address, add a new one while there is room. */
    int32_t at = rte_hash_lookup(b->fib, src);
    if (at >= 0 || rte_hash_count(b->fib) < (int32_t)b->capacity)
      rte_hash_add_key_data(b->fib, src, entry_of(port, now));
    else
      ++b->unlearned;
  }
  if (!(dst[0] & 1) && rte_hash_lookup_data(b->fib, dst, &data) >= 0) {
    uint32_t out = (uint32_t)(uintptr_t)data & 0xff;
    if (out == port) {
      ++b->filtered;
      return;
    }
    if (b->state[out] != 0) {
      ++b->blocked;
      return;
    }
    b->out(b->user, out, frame, length);
    return;
  }
  ++b->flooded;
  for (p = 0; p < C_BRIDGE_PORTS; ++p)
    if (p != port && b->state[p] == 0)
      b->out(b->user, p, frame, length);
}

void c_bridge_counters(const c_bridge *b, uint32_t out[5]) {
  out[0] = b->filtered;
  out[1] = b->flooded;
  out[2] = b->unlearned;
  out[3] = b->blocked;
  out[4] = b->runts;
}

uint32_t c_bridge_fib_size(const c_bridge *b) {
  return (uint32_t)rte_hash_count(b->fib);
}

/* A c_hash is the rte_hash itself. */
c_hash *c_hash_create(uint32_t capacity) {
  return (c_hash *)make_hash(capacity, 8);
}

void c_hash_destroy(c_hash *h) { rte_hash_free((struct rte_hash *)h); }

int c_hash_add(c_hash *h, const uint32_t key[2], uint32_t value) {
  return rte_hash_add_key_data((struct rte_hash *)h, key,
                               (void *)(uintptr_t)value) == 0;
}

uint64_t c_hash_lookup_loop(c_hash *h, const uint32_t *keys, size_t count) {
  uint64_t sum = 0;
  size_t i;
  for (i = 0; i < count; ++i) {
    void *data;
    if (rte_hash_lookup_data((struct rte_hash *)h, keys + 2 * i, &data) >= 0)
      sum += (uintptr_t)data;
  }
  return sum;
}
