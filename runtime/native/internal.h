/*===- internal.h - Private structures of the native runtime -------*- C -*-===*
 *
 * Shared by runtime.c (instances, the netvm_rt_* functions) and runner.c
 * (worker threads, pipelines). Not installed: hosts see runtime.h only.
 *
 * An instance owns the application state (data memories, coprocessors,
 * shared memory) and one or more workers. A worker is what one thread
 * needs to run packets through that state: its own netvm_ctx (budget,
 * counters), exchange buffers and clone pool. A plain instance has one
 * worker; in pipeline mode every stage is a worker of the same instance,
 * owning a disjoint set of NetPEs (a replicated stage: several workers,
 * each running all of the stage's stateless NetPEs).
 *
 *===----------------------------------------------------------------------===*/

#ifndef NETVM_RUNTIME_INTERNAL_H
#define NETVM_RUNTIME_INTERNAL_H

#include "netvm/runtime.h"

/* Largest packet an exchange buffer may hold (exbuf.create). */
#define NETVM_MAX_PACKET 65536u

struct netvm_pipeline;
struct netvm_recorder;

typedef struct netvm_worker {
  netvm_ctx ctx; /* first: generated code sees only this part */
  netvm_instance *vm;
  uint32_t stage;          /* pipeline stage (0 outside pipelines) */
  uint32_t slot;           /* of a replicated pipeline stage (else 0) */
  netvm_exbuf input;       /* packets pushed by copy */
  netvm_exbuf scratch;     /* packets pushed in place (batches) */
  uint8_t *spare;          /* packet memory for `scratch` once the */
  uint32_t spare_capacity; /* application replaces its packet */
  netvm_exbuf **pool;      /* free clones */
  uint32_t pool_size, pool_capacity;
  uint64_t *sink_stats; /* 2 per sink, ctx.sink_stats */
  uint64_t *pe_drops;   /* ctx.pe_drops */
  uint64_t *pe_exceptions;
  uint64_t packets, unconnected, drops_total;
  uint64_t exceptions[NETVM_EXC_KINDS];
  uint64_t sequence;               /* of the packet being run (for events) */
  struct netvm_pipeline *pipeline; /* non-NULL in pipeline mode */
  struct netvm_recorder *recorder; /* non-NULL when recording events */
  uint32_t events_wanted;          /* a runner listens to this worker */
} netvm_worker;

struct netvm_instance {
  const netvm_app_desc *app;
  const netvm_entry_fn *sources; /* app->sources, ... (one load less) */
  uint32_t num_sources, info_size;
  netvm_pe_state *pes;
  uint8_t *shared;
  uint64_t budget;
  uint64_t sequence;
  uint64_t exception_sequence; /* of the packet in the exception hook */
  int clear_info;              /* some NetPE writes info memory */
  netvm_output_fn output;
  void *output_user;
  netvm_exception_fn on_exception;
  void *exception_user;
  netvm_source_fn source;
  void *source_user;
  uint32_t num_workers;
  netvm_worker *workers;
};

static inline netvm_worker *netvm_worker_of(netvm_ctx *ctx) {
  return (netvm_worker *)ctx; /* ctx is the first member */
}

/* The flag a buffer entering generated code on worker `w` carries. */
static inline uint32_t netvm_worker_listened(const netvm_worker *w) {
  return w->ctx.hooks ? (uint32_t)NETVM_XB_LISTENED : 0u;
}

/* An instance with `workers` workers (1 for a plain instance). */
netvm_instance *netvm_instance_create_workers(const netvm_app_desc *app,
                                              uint32_t workers, char *error,
                                              size_t error_size);
/* Make `xb` hold a copy of `length` bytes (zero-filled if `bytes` is NULL)
 * with zeroed info memory. */
int netvm_exbuf_fill(netvm_worker *w, netvm_exbuf *xb, const uint8_t *bytes,
                     uint32_t length);
/* Copy everything of `from` into `to` (an owned buffer). */
int netvm_exbuf_copy(netvm_worker *w, netvm_exbuf *to, const netvm_exbuf *from);
void netvm_exbuf_release_storage(netvm_exbuf *xb);
/* Count what a handler returned (NETVM_VERDICT_*) for `xb`. */
void netvm_worker_count(netvm_worker *w, uint32_t verdict,
                        const netvm_exbuf *xb);
/* Give a finished clone back to the worker's pool. */
void netvm_worker_release(netvm_worker *w, netvm_exbuf *xb);
/* Recompute ctx.hooks from the instance's listeners and the worker's mode. */
void netvm_worker_update_hooks(netvm_worker *w);
/* Run `count` packets in place through `source` on worker `w`. */
void netvm_worker_push_batch(netvm_worker *w, uint32_t source,
                             netvm_packet *packets, size_t count);

/* Implemented by runner.c: what the netvm_rt_* functions do for a worker
 * that records events or belongs to a pipeline. Each returns non-zero if it
 * took care of the event. */
int netvm_runner_on_emit(netvm_worker *w, uint32_t sink, netvm_exbuf *xb);
int netvm_runner_on_exception(netvm_worker *w, uint32_t kind,
                              const netvm_site *site);
void netvm_runner_forward(netvm_worker *w, uint32_t to, uint32_t port,
                          netvm_exbuf *xb);

#endif /* NETVM_RUNTIME_INTERNAL_H */
