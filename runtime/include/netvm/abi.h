/*===- abi.h - The C ABI between generated code and the runtime ---*- C -*-===*
 *
 * netvm compiles a NetVM application into native code (JIT or AOT object)
 * whose only contact with the world is this ABI:
 *
 *  - The object exports one application descriptor (netvm_app_desc), named
 *    `netvm_app_<application name>` unless netc is told otherwise. It lists
 *    the NetPEs (memory sizes, initialised data, coprocessors), the sources
 *    and sinks, and the entry points: an init function that runs every init
 *    handler, one function per source that pushes an exchange buffer into
 *    the application, and one function per sink for pull-mode operation.
 *  - Generated code reads and writes the structures below at the offsets the
 *    static assertions fix, and calls the netvm_rt_* functions (implemented
 *    by runtime/native/runtime.c) to hand packets to sinks, count drops and
 *    exceptions, clone exchange buffers and reach coprocessors.
 *
 * All memories are big-endian from the point of view of NetIL; the structures
 * themselves use the host's byte order. Plain C11; the same header serves
 * x86-64 and AArch64 (LP64, little-endian).
 *
 *===----------------------------------------------------------------------===*/

#ifndef NETVM_RUNTIME_ABI_H
#define NETVM_RUNTIME_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "netvm/coprocessor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NETVM_ABI_VERSION 1u

/* Exception kinds: the values of the dialect's ExceptionKind enumeration. */
enum {
  NETVM_EXC_PACKET_BOUNDS = 0,
  NETVM_EXC_INFO_BOUNDS = 1,
  NETVM_EXC_DATA_BOUNDS = 2,
  NETVM_EXC_SHARED_BOUNDS = 3,
  NETVM_EXC_INITDATA_BOUNDS = 4,
  NETVM_EXC_DIVISION_BY_ZERO = 5,
  NETVM_EXC_WATCHDOG = 6,
  NETVM_EXC_COPROCESSOR = 7,
  NETVM_EXC_NO_EXBUF = 8,
  NETVM_EXC_EXIT = 9,
  NETVM_EXC_KINDS = 10
};

/* netvm_exbuf.flags */
enum {
  NETVM_XB_NONE = 1u,  /* no current exchange buffer (deleted, nothing pulled) */
  NETVM_XB_CLONE = 2u  /* a fan-out copy, owned by the runtime's pool */
};

/* An exchange buffer: the packet and its info memory. */
typedef struct netvm_exbuf {
  uint8_t *packet;      /* packet bytes */
  uint32_t length;      /* packet length: the size of packet memory */
  uint32_t capacity;    /* bytes allocated at `packet` */
  uint8_t *info;        /* info memory */
  uint32_t info_length; /* size of info memory (0 when NETVM_XB_NONE) */
  uint32_t seconds;     /* arrival timestamp */
  uint32_t microseconds;
  uint32_t flags;       /* NETVM_XB_* */
  uint64_t sequence;    /* arrival number of the packet it came from */
} netvm_exbuf;

/* The run-time state of one NetPE instance. */
typedef struct netvm_pe_state {
  uint8_t *data;               /* data memory */
  netvm_copro **coprocessors;  /* in the NetPE's declaration order */
  uint32_t random;             /* pseudo-random generator state */
  uint32_t reserved;
  uint64_t runs;               /* handler invocations (if counted) */
  uint64_t sent;               /* pkt.send / pkt.senddup (if counted) */
} netvm_pe_state;

/* The context every generated function receives. The runtime owns it; the
 * fields after `budget` are private to the runtime. */
typedef struct netvm_ctx {
  netvm_pe_state *pes;  /* one per NetPE, in the descriptor's order */
  uint8_t *shared;      /* shared memory */
  int64_t budget;       /* loop iterations left for the current packet */
  void *runtime;        /* the runtime's private state */
} netvm_ctx;

typedef void (*netvm_entry_fn)(netvm_ctx *ctx, netvm_exbuf *xb);
typedef void (*netvm_init_fn)(netvm_ctx *ctx);

typedef struct netvm_pe_desc {
  const char *name;
  uint32_t data_size;
  uint32_t initdata_size;
  const uint8_t *initdata;
  uint32_t num_coprocessors;
  uint32_t reserved;
  const char *const *coprocessors; /* names */
} netvm_pe_desc;

/* Where an exception can be raised, for reports. */
typedef struct netvm_site {
  uint32_t pe;          /* index of the NetPE */
  uint32_t handler;     /* 0 init, 1 push, 2 pull */
  const char *location; /* "file:line:col" of the NetIL instruction */
} netvm_site;

typedef struct netvm_app_desc {
  uint32_t abi_version; /* NETVM_ABI_VERSION */
  uint32_t num_pes;
  const char *name;
  const netvm_pe_desc *pes;
  uint32_t num_sources;
  uint32_t num_sinks;
  const char *const *source_names;
  const char *const *sink_names;
  const netvm_entry_fn *sources;    /* push a packet in through source i */
  const netvm_entry_fn *sink_pulls; /* pull into sink i; NULL if none */
  netvm_init_fn init;               /* runs every init handler, in order */
  uint32_t info_size;               /* info memory of every exchange buffer */
  uint32_t shared_size;
  uint32_t num_sites;
  uint32_t reserved;
  const netvm_site *sites;
} netvm_app_desc;

/* Layout the generated code relies on (byte offsets on LP64 targets). */
#define NETVM_STATIC_ASSERT(c, m) _Static_assert(c, m)
#ifdef __cplusplus
#undef NETVM_STATIC_ASSERT
#define NETVM_STATIC_ASSERT(c, m) static_assert(c, m)
#endif
NETVM_STATIC_ASSERT(offsetof(netvm_exbuf, packet) == 0, "exbuf layout");
NETVM_STATIC_ASSERT(offsetof(netvm_exbuf, length) == 8, "exbuf layout");
NETVM_STATIC_ASSERT(offsetof(netvm_exbuf, capacity) == 12, "exbuf layout");
NETVM_STATIC_ASSERT(offsetof(netvm_exbuf, info) == 16, "exbuf layout");
NETVM_STATIC_ASSERT(offsetof(netvm_exbuf, info_length) == 24, "exbuf layout");
NETVM_STATIC_ASSERT(offsetof(netvm_exbuf, seconds) == 28, "exbuf layout");
NETVM_STATIC_ASSERT(offsetof(netvm_exbuf, microseconds) == 32, "exbuf layout");
NETVM_STATIC_ASSERT(offsetof(netvm_exbuf, flags) == 36, "exbuf layout");
NETVM_STATIC_ASSERT(offsetof(netvm_exbuf, sequence) == 40, "exbuf layout");
NETVM_STATIC_ASSERT(sizeof(netvm_exbuf) == 48, "exbuf layout");
NETVM_STATIC_ASSERT(offsetof(netvm_pe_state, data) == 0, "pe state layout");
NETVM_STATIC_ASSERT(offsetof(netvm_pe_state, coprocessors) == 8,
                    "pe state layout");
NETVM_STATIC_ASSERT(offsetof(netvm_pe_state, random) == 16, "pe state layout");
NETVM_STATIC_ASSERT(offsetof(netvm_pe_state, runs) == 24, "pe state layout");
NETVM_STATIC_ASSERT(offsetof(netvm_pe_state, sent) == 32, "pe state layout");
NETVM_STATIC_ASSERT(sizeof(netvm_pe_state) == 40, "pe state layout");
NETVM_STATIC_ASSERT(offsetof(netvm_ctx, pes) == 0, "ctx layout");
NETVM_STATIC_ASSERT(offsetof(netvm_ctx, shared) == 8, "ctx layout");
NETVM_STATIC_ASSERT(offsetof(netvm_ctx, budget) == 16, "ctx layout");
NETVM_STATIC_ASSERT(sizeof(netvm_pe_desc) == 40, "descriptor layout");
NETVM_STATIC_ASSERT(sizeof(netvm_site) == 16, "descriptor layout");
NETVM_STATIC_ASSERT(offsetof(netvm_app_desc, sites) == 88,
                    "descriptor layout");

/*===- Called by generated code --------------------------------------------===*/

/* The exchange buffer leaves the application through sink `sink`. */
void netvm_rt_emit(netvm_ctx *ctx, uint32_t sink, netvm_exbuf *xb);
/* NetPE `pe` dropped the exchange buffer (netvm.drop). */
void netvm_rt_drop(netvm_ctx *ctx, uint32_t pe, netvm_exbuf *xb);
/* NetPE `pe` is about to discard its current exchange buffer (exbuf.delete,
 * or pkt.receive replacing it); counted as a drop if there is one. */
void netvm_rt_discard(netvm_ctx *ctx, uint32_t pe, const netvm_exbuf *xb);
/* NetPE `pe` sent the exchange buffer to an output port with no
 * connection. */
void netvm_rt_unconnected(netvm_ctx *ctx, uint32_t pe, netvm_exbuf *xb);
/* An exception of kind `kind` at site `site`; the handler then returns. */
void netvm_rt_exception(netvm_ctx *ctx, uint32_t kind, uint32_t site,
                        netvm_exbuf *xb);
/* A copy of `xb` for one branch of a fan-out (pkt.send to several inputs,
 * pkt.senddup). */
netvm_exbuf *netvm_rt_clone(netvm_ctx *ctx, const netvm_exbuf *xb);
/* Make `xb` a fresh, zero-filled exchange buffer of `size` bytes. Returns
 * 0 if the runtime cannot allocate it. */
int netvm_rt_exbuf_create(netvm_ctx *ctx, netvm_exbuf *xb, uint32_t size);
/* Fill `xb` with the next packet of source `source` (pull mode), or set
 * NETVM_XB_NONE when there is none. */
void netvm_rt_pull_source(netvm_ctx *ctx, uint32_t source, netvm_exbuf *xb);

/* Computations too large to inline (semantics.h defines them). */
uint32_t netvm_rt_hash(const uint32_t *words, uint32_t count);
uint32_t netvm_rt_checksum(const uint8_t *data, uint32_t length);
uint32_t netvm_rt_crc(uint32_t kind, const uint8_t *data, uint32_t length);
uint32_t netvm_rt_crc_word(uint32_t kind, uint32_t word);
/* First offset >= `from` (already checked to be inside the packet) where
 * `width` bytes equal `value` in network order, or 0xFFFFFFFF. */
uint32_t netvm_rt_pscan(const uint8_t *packet, uint32_t length, uint32_t from,
                        uint32_t value, uint32_t width);
int32_t netvm_rt_memcmp(const uint8_t *a, const uint8_t *b, uint32_t length);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NETVM_RUNTIME_ABI_H */
