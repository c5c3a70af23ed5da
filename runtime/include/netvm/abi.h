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

#define NETVM_ABI_VERSION 4u

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

/* Handler kinds: the values of the dialect's HandlerKind enumeration
 * (netvm_site.handler). */
enum {
  NETVM_HANDLER_INIT = 0,
  NETVM_HANDLER_PUSH = 1,
  NETVM_HANDLER_PULL = 2,
  NETVM_HANDLER_KINDS = 3
};

/* netvm_exbuf.flags */
enum {
  NETVM_XB_NONE = 1u, /* no current exchange buffer (deleted, nothing pulled) */
  NETVM_XB_CLONE = 2u,    /* a fan-out copy, owned by the runtime's pool */
  NETVM_XB_BORROWED = 4u, /* `packet` belongs to the host (batch entries):
                             the runtime never reallocates or frees it */
  NETVM_XB_LISTENED = 8u  /* the runtime listens (ctx->hooks was set when the
                             buffer came in): its emission or drop goes
                             through netvm_rt_emit / netvm_rt_drop */
};

/* netvm_pe_desc.flags: what a NetPE's push and pull handlers do, as the
 * compiler sees it (init handlers are not counted: they run once per
 * instance). The runtime decides from them whether replicas of an
 * application may process packets in parallel. */
enum {
  NETVM_PE_WRITES_DATA = 1u,    /* stores into / copies into data memory */
  NETVM_PE_COPROCESSORS = 2u,   /* uses a coprocessor (state it may change) */
  NETVM_PE_RANDOM = 4u,         /* draws random numbers (per-NetPE state) */
  NETVM_PE_READS_SHARED = 8u,   /* reads shared memory */
  NETVM_PE_WRITES_SHARED = 16u, /* writes shared memory */
  NETVM_PE_WRITES_INFO = 32u,   /* writes or clears info memory */
  NETVM_PE_PULL = 64u,          /* has pull ports */
  /* State that makes replicas diverge from one instance. */
  NETVM_PE_STATEFUL = NETVM_PE_WRITES_DATA | NETVM_PE_COPROCESSORS |
                      NETVM_PE_RANDOM | NETVM_PE_WRITES_SHARED
};

/* Verdicts: the fate of an exchange buffer, which push handlers return so
 * that their caller counts it (a batch loop keeps the counts in registers).
 * NONE means the runtime has already counted whatever happened. */
#define NETVM_VERDICT_NONE 0u
#define NETVM_VERDICT_SINK 1u          /* SINK + s: left through sink s */
#define NETVM_VERDICT_DROP 0x80000000u /* DROP | pe: dropped by NetPE pe */

/* netvm_app_desc.flags */
enum {
  /* Every delivery to a NetPE (from a source or from another NetPE) goes
   * through netvm_rt_forward, and the descriptor lists every push handler,
   * so that the runtime can put NetPEs on different threads (pipeline
   * mode). */
  NETVM_APP_FORWARDED_LINKS = 1u
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
  uint32_t wire_length; /* length on the wire (>= length for a capture cut
                           short by its snapshot length) */
  uint32_t reserved;
} netvm_exbuf;

/* The run-time state of one NetPE instance. */
typedef struct netvm_pe_state {
  uint8_t *data;              /* data memory */
  netvm_copro **coprocessors; /* in the NetPE's declaration order */
  uint32_t random;            /* pseudo-random generator state */
  uint32_t reserved;
  uint64_t runs; /* handler invocations (if counted) */
  uint64_t sent; /* pkt.send / pkt.senddup (if counted) */
} netvm_pe_state;

/* The context every generated function receives; the runtime owns it. One
 * context runs one packet at a time (each thread has its own). */
typedef struct netvm_ctx {
  netvm_pe_state *pes;  /* one per NetPE, in the descriptor's order */
  uint8_t *shared;      /* shared memory */
  int64_t budget;       /* loop iterations left for the current packet */
  void *runtime;        /* the runtime's private state */
  uint64_t *sink_stats; /* per sink: packets, bytes (2 words each) */
  uint64_t *pe_drops;   /* per NetPE: exchange buffers dropped */
  /* Non-zero: someone listens to emissions and drops. Buffers the runtime
   * hands to generated code then carry NETVM_XB_LISTENED (and batch entries
   * set it), so that those go through netvm_rt_emit / netvm_rt_drop. Zero:
   * generated code returns verdicts, counted in sink_stats and pe_drops. */
  uint32_t hooks;
  uint32_t reserved;
  int64_t budget_reset; /* the budget every packet of a batch starts with */
} netvm_ctx;

/* A packet handed to a batch entry. `data` may be modified in place by the
 * application (packet stores) and must stay valid during the call. */
typedef struct netvm_packet {
  uint8_t *data;
  uint32_t length;
  uint32_t seconds;
  uint32_t microseconds;
  uint32_t wire_length; /* length on the wire; 0: the same as `length` */
} netvm_packet;

typedef void (*netvm_entry_fn)(netvm_ctx *ctx, netvm_exbuf *xb);
typedef void (*netvm_init_fn)(netvm_ctx *ctx);
/* A NetPE's push handler: the exchange buffer arrives on input `port`;
 * returns a verdict (NETVM_VERDICT_*) for the caller to count. */
typedef uint32_t (*netvm_handler_fn)(netvm_ctx *ctx, netvm_exbuf *xb,
                                     uint32_t port);
/* Push `count` packets through one source, one after the other, in a loop
 * compiled together with the application. `xb` is a scratch exchange
 * buffer whose `info` (zeroed, desc->info_size bytes) the caller provides;
 * its `sequence` on entry numbers the first packet. The budget of every
 * packet starts at ctx->budget_reset. */
typedef void (*netvm_batch_fn)(netvm_ctx *ctx, netvm_exbuf *xb,
                               const netvm_packet *packets, uint64_t count);

typedef struct netvm_pe_desc {
  const char *name;
  uint32_t data_size;
  uint32_t initdata_size;
  const uint8_t *initdata;
  uint32_t num_coprocessors;
  uint32_t flags;                  /* NETVM_PE_* */
  const char *const *coprocessors; /* names */
} netvm_pe_desc;

/* Where an exception can be raised, for reports. */
typedef struct netvm_site {
  uint32_t pe;          /* index of the NetPE */
  uint32_t handler;     /* NETVM_HANDLER_* */
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
  uint32_t flags; /* NETVM_APP_* */
  const netvm_site *sites;
  const netvm_batch_fn *batches; /* per source: batch entry */
  /* Per NetPE: its push handler (NULL if none); NULL unless
   * NETVM_APP_FORWARDED_LINKS. */
  const netvm_handler_fn *pe_push;
  /* The NetPEs in a topological order of the push connections (NULL
   * unless NETVM_APP_FORWARDED_LINKS). */
  const uint32_t *pe_order;
  /* Per NetPE: its flow key function, or NULL (the whole array is NULL when
   * no NetPE has one). A NetPE has one when its data memory is partitioned
   * by a key computed from the packet (docs/partitioning.md, "Flow-keyed
   * replicas"): called like its push handler on the exchange buffer about
   * to be delivered to it, with at least 4 bytes of scratch info memory,
   * it writes the packet's bucket there (a big-endian word; 0xFFFFFFFF:
   * the NetPE touches no state for this packet). It reads the packet only,
   * never faults and has no other effect. */
  const netvm_handler_fn *pe_key;
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
NETVM_STATIC_ASSERT(offsetof(netvm_exbuf, wire_length) == 48, "exbuf layout");
NETVM_STATIC_ASSERT(sizeof(netvm_exbuf) == 56, "exbuf layout");
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
NETVM_STATIC_ASSERT(offsetof(netvm_ctx, sink_stats) == 32, "ctx layout");
NETVM_STATIC_ASSERT(offsetof(netvm_ctx, pe_drops) == 40, "ctx layout");
NETVM_STATIC_ASSERT(offsetof(netvm_ctx, hooks) == 48, "ctx layout");
NETVM_STATIC_ASSERT(offsetof(netvm_ctx, budget_reset) == 56, "ctx layout");
NETVM_STATIC_ASSERT(sizeof(netvm_ctx) == 64, "ctx layout");
NETVM_STATIC_ASSERT(offsetof(netvm_packet, length) == 8, "packet layout");
NETVM_STATIC_ASSERT(offsetof(netvm_packet, seconds) == 12, "packet layout");
NETVM_STATIC_ASSERT(offsetof(netvm_packet, microseconds) == 16,
                    "packet layout");
NETVM_STATIC_ASSERT(offsetof(netvm_packet, wire_length) == 20, "packet layout");
NETVM_STATIC_ASSERT(sizeof(netvm_packet) == 24, "packet layout");
NETVM_STATIC_ASSERT(sizeof(netvm_pe_desc) == 40, "descriptor layout");
NETVM_STATIC_ASSERT(sizeof(netvm_site) == 16, "descriptor layout");
NETVM_STATIC_ASSERT(offsetof(netvm_app_desc, sites) == 88, "descriptor layout");
NETVM_STATIC_ASSERT(offsetof(netvm_app_desc, batches) == 96,
                    "descriptor layout");
NETVM_STATIC_ASSERT(offsetof(netvm_app_desc, pe_push) == 104,
                    "descriptor layout");
NETVM_STATIC_ASSERT(offsetof(netvm_app_desc, pe_order) == 112,
                    "descriptor layout");
NETVM_STATIC_ASSERT(offsetof(netvm_app_desc, pe_key) == 120,
                    "descriptor layout");
NETVM_STATIC_ASSERT(sizeof(netvm_app_desc) == 128, "descriptor layout");

/*===- Called by generated code
 * --------------------------------------------===*/

/* The exchange buffer leaves the application through sink `sink` (called
 * for clones and NETVM_XB_LISTENED buffers; otherwise generated code returns
 * a verdict that its caller counts). */
void netvm_rt_emit(netvm_ctx *ctx, uint32_t sink, netvm_exbuf *xb);
/* NetPE `pe` dropped the exchange buffer (netvm.drop); the same rule. */
void netvm_rt_drop(netvm_ctx *ctx, uint32_t pe, netvm_exbuf *xb);
/* NetPE `pe` sends `xb` to input `port` of NetPE `to` (applications
 * compiled with NETVM_APP_FORWARDED_LINKS): the runtime runs the handler
 * now or queues the buffer for the thread that owns `to`. */
void netvm_rt_forward(netvm_ctx *ctx, uint32_t to, uint32_t port,
                      netvm_exbuf *xb);
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
