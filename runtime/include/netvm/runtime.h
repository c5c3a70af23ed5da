/*===- runtime.h - Running compiled NetVM applications -------------*- C -*-===*
 *
 * The host side of a compiled application (JIT or AOT): instantiate it from
 * its descriptor (abi.h), push packets in, get forwarded packets out through
 * a callback, and inspect or change its state (the control plane). One
 * instance processes one packet at a time; create one instance per thread,
 * or serialize calls, to use several threads.
 *
 *   const netvm_app_desc *app = &netvm_app_myapp;   // from the AOT object
 *   netvm_instance *vm = netvm_instance_create(app, err, sizeof err);
 *   netvm_instance_set_output(vm, on_packet, user);
 *   netvm_instance_init(vm);                         // init handlers
 *   netvm_instance_push(vm, 0, bytes, length, sec, usec);
 *   ...
 *   netvm_instance_destroy(vm);
 *
 * Plain C11; builds for every target the compiler supports.
 *
 *===----------------------------------------------------------------------===*/

#ifndef NETVM_RUNTIME_RUNTIME_H
#define NETVM_RUNTIME_RUNTIME_H

#include "netvm/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct netvm_instance netvm_instance;

/* A packet leaves the application through sink `sink`. The exchange buffer
 * is only valid during the call. */
typedef void (*netvm_output_fn)(void *user, uint32_t sink,
                                const netvm_exbuf *xb);
/* An exception was raised at descriptor site `site` (NULL if unknown). */
typedef void (*netvm_exception_fn)(void *user, uint32_t kind,
                                   const netvm_site *site);
/* Pull mode: fill `xb` (through netvm_exbuf_assign) with the next packet of
 * source `source`; return 0 when there is none. */
typedef int (*netvm_source_fn)(void *user, uint32_t source, netvm_exbuf *xb);

/* Instantiate `app`: data memory zeroed, coprocessors created. NULL on
 * error, with a message in `error`. */
netvm_instance *netvm_instance_create(const netvm_app_desc *app, char *error,
                                      size_t error_size);
void netvm_instance_destroy(netvm_instance *vm);
const netvm_app_desc *netvm_instance_app(const netvm_instance *vm);

void netvm_instance_set_output(netvm_instance *vm, netvm_output_fn fn,
                               void *user);
void netvm_instance_set_exception_hook(netvm_instance *vm,
                                       netvm_exception_fn fn, void *user);
void netvm_instance_set_source(netvm_instance *vm, netvm_source_fn fn,
                               void *user);
/* Loop iterations each packet may run (default 1048576). */
void netvm_instance_set_watchdog(netvm_instance *vm, uint64_t budget);

/* Run every init handler once. */
void netvm_instance_init(netvm_instance *vm);
/* Push one packet in through source `source` and run it to completion. */
void netvm_instance_push(netvm_instance *vm, uint32_t source,
                         const uint8_t *packet, uint32_t length,
                         uint32_t seconds, uint32_t microseconds);
/* Push `count` packets through source `source` with the application's
 * batch entry: one call, no copies. The application may modify the packets'
 * bytes in place. Outputs and exceptions are reported as with
 * netvm_instance_push. */
void netvm_instance_push_batch(netvm_instance *vm, uint32_t source,
                               netvm_packet *packets, size_t count);
/* Push one packet through source `source` as netvm_instance_push_batch
 * does, its info memory starting as the `info_length` bytes of `info`
 * (then zeros) instead of zeros: a packet that comes from another engine
 * that ran the NetPEs before this source (lib/Runtime's split engine). */
void netvm_instance_push_info(netvm_instance *vm, uint32_t source,
                              netvm_packet *packet, const uint8_t *info,
                              uint32_t info_length);
/* The arrival number the next packet pushed will get: packets are numbered
 * in the order they are pushed, and outputs carry theirs in
 * netvm_exbuf.sequence. */
uint64_t netvm_instance_next_sequence(const netvm_instance *vm);
/* Within an exception hook: the arrival number of the packet whose handler
 * raised the exception (so that a host pushing a batch can tell which). */
uint64_t netvm_instance_exception_sequence(const netvm_instance *vm);
/* Pull one exchange buffer out of sink `sink` (pull connections). Returns 1
 * if one came out. */
int netvm_instance_pull(netvm_instance *vm, uint32_t sink);

/* Copy `length` bytes into `xb`, making it the current exchange buffer
 * (for netvm_source_fn). Returns 0 if memory runs out. */
int netvm_exbuf_assign(netvm_instance *vm, netvm_exbuf *xb,
                       const uint8_t *packet, uint32_t length, uint32_t seconds,
                       uint32_t microseconds);

/*===- Control plane
 * --------------------------------------------------------===*/

/* Data memory of NetPE `pe` (read and write it between packets). */
uint8_t *netvm_instance_data(netvm_instance *vm, uint32_t pe, uint32_t *size);
uint8_t *netvm_instance_shared(netvm_instance *vm, uint32_t *size);
/* The instance of coprocessor `name` that NetPE `pe` uses, or NULL (for a
 * lookup table: netvm_lookup_* in coprocessor.h). */
netvm_copro *netvm_instance_coprocessor(netvm_instance *vm, uint32_t pe,
                                        const char *name);

typedef struct netvm_counters {
  uint64_t packets;                     /* pushed in */
  uint64_t dropped;                     /* netvm.drop */
  uint64_t unconnected;                 /* sent to a port with no link */
  uint64_t exceptions[NETVM_EXC_KINDS]; /* by kind */
} netvm_counters;

typedef struct netvm_pe_counters {
  uint64_t runs, sent, dropped, exceptions;
} netvm_pe_counters;

void netvm_instance_counters(const netvm_instance *vm, netvm_counters *out);
void netvm_instance_pe_counters(const netvm_instance *vm, uint32_t pe,
                                netvm_pe_counters *out);
/* Packets and bytes that left through sink `sink`. */
void netvm_instance_sink_counters(const netvm_instance *vm, uint32_t sink,
                                  uint64_t *packets, uint64_t *bytes);
/* The names of exception kinds (NETVM_EXC_*: "packet_bounds", ...) and of
 * handler kinds (NETVM_HANDLER_*: "init", "push", "pull"), as the dialect
 * spells them; "unknown" out of range. */
const char *netvm_exception_name(uint32_t kind);
const char *netvm_handler_name(uint32_t handler);

/*===- Runners: several threads
 * ---------------------------------------------===*
 *
 * A runner processes arrays of packets on several threads and reports what
 * happened in arrival order, as one instance would have:
 *
 *  - NETVM_RUN_TO_COMPLETION: every thread runs whole packets. Applications
 *    whose push handlers keep no state (no data or shared memory writes, no
 *    coprocessors, no random numbers: netvm_pe_desc.flags) get one replica
 *    per thread; the others run on a single thread (the runner says why in
 *    netvm_runner_note), because replicas of a stateful application would
 *    each see only part of the traffic.
 *  - NETVM_RUN_PIPELINE: one instance; its NetPEs are split into stages
 *    (contiguous in topological order), one thread per stage, connected by
 *    single-producer/single-consumer rings. Each NetPE's state is touched
 *    by one thread only, so stateful applications run in parallel too
 *    (NetPEs sharing memory that one of them writes are kept on one
 *    stage). The application must be compiled with
 *    NETVM_APP_FORWARDED_LINKS and use no pull ports. Stages of
 *    stateless NetPEs may run on several threads (replicas_of_stage), or
 *    share a pool of threads that a controller moves between them by
 *    their queues (dynamic); outputs keep the arrival order.
 *
 * Events (outputs, exceptions, the end of each packet) reach the callback
 * one at a time, in packet order and, within a packet, in the order a
 * single instance produces them; possibly on a runner thread. Without a
 * callback nothing is recorded and only counters are kept.
 */

enum { NETVM_RUN_TO_COMPLETION = 0, NETVM_RUN_PIPELINE = 1 };
/* The sequence number of events raised by init handlers. */
#define NETVM_SEQUENCE_INIT UINT64_MAX
enum {
  NETVM_EVENT_OUTPUT = 0,
  NETVM_EVENT_EXCEPTION = 1,
  NETVM_EVENT_DONE = 2
};

typedef struct netvm_event {
  uint32_t type;          /* NETVM_EVENT_* */
  uint32_t index;         /* OUTPUT: the sink; EXCEPTION: the kind */
  uint64_t sequence;      /* the packet, numbered from 0 over the runner */
  const netvm_exbuf *xb;  /* OUTPUT: the packet that left */
  const netvm_site *site; /* EXCEPTION: where (NULL if unknown) */
  uint32_t drops;         /* DONE: buffers of this packet dropped */
  uint32_t unconnected;   /* DONE: sent to ports with no connection */
} netvm_event;
typedef void (*netvm_event_fn)(void *user, const netvm_event *event);

/* Dynamic allocation (netvm_runner_options.dynamic): a pool of worker
 * threads shared by the replicable stages (those whose NetPEs keep no
 * state); a controller thread observes, every `interval_us`, how many
 * messages wait for each such stage and how long the oldest has waited,
 * and moves workers between stages (netvm_dynamic_decide). A stage gains a
 * worker when its queue reaches `queue_up` messages or its oldest message
 * has waited `delay_up_us`; it gives one back when its queue has stayed at
 * most `queue_down` and the age of its oldest message at most
 * `delay_down_us` for `dwell_us`; a stage changes at most once per
 * `dwell_us`. Parked workers sleep on a condition variable. Zero fields
 * take the defaults in brackets. */
typedef struct netvm_dynamic_policy {
  uint32_t workers;       /* pool size [replicable stages + 1] */
  uint32_t interval_us;   /* controller period [100] */
  uint32_t queue_up;      /* messages waiting for a stage [256] */
  uint32_t queue_down;    /* [16] */
  uint32_t delay_up_us;   /* age of the oldest waiting message [500] */
  uint32_t delay_down_us; /* [50] */
  uint32_t dwell_us;      /* least time between changes of a stage [2000] */
  uint32_t reserved;
} netvm_dynamic_policy;

typedef struct netvm_runner_options {
  uint32_t mode;    /* NETVM_RUN_* */
  uint32_t threads; /* threads to use, the caller's included (>= 1) */
  uint32_t batch;   /* packets a thread takes at a time (0: 256) */
  /* sizeof(netvm_runner_options) to use the fields after stage_of_pe
   * (replicas_of_stage, dynamic); 0 (older callers): they are absent. */
  uint32_t size;
  uint64_t watchdog; /* loop iterations per packet (0: 1048576) */
  /* Pipeline: stage of every NetPE, below the number of NetPEs (NULL:
   * automatic). Stages must not decrease along desc->pe_order, and NetPEs
   * sharing memory that one of them writes must be on one stage. */
  const uint32_t *stage_of_pe;
  /* Pipeline: threads of every stage, one entry per stage (needs
   * stage_of_pe; NULL: one each, 0 counts as 1). Only stages whose NetPEs
   * keep no state (netvm_pe_desc.flags & NETVM_PE_STATEFUL clear) may have
   * more than one: packets are dealt to the replicas of a stage a few at a
   * time and put back in arrival order after it, so every sink sees what a
   * single instance produces. A stage whose first NetPE's data memory is
   * partitioned by a flow key (desc->pe_key) and whose other NetPEs keep
   * no state may have several too: each message for that NetPE goes to the
   * replica of its bucket, and the replicas share its data memory. */
  const uint32_t *replicas_of_stage;
  /* Pipeline: move workers between the replicable stages at run time
   * (NULL: a fixed allocation). replicas_of_stage then gives the initial
   * allocation. */
  const netvm_dynamic_policy *dynamic;
} netvm_runner_options;

typedef struct netvm_runner netvm_runner;

netvm_runner *netvm_runner_create(const netvm_app_desc *app,
                                  const netvm_runner_options *options,
                                  char *error, size_t error_size);
void netvm_runner_destroy(netvm_runner *r);
void netvm_runner_set_events(netvm_runner *r, netvm_event_fn fn, void *user);
/* Outputs only: like netvm_runner_set_events, but `fn` receives only the
 * NETVM_EVENT_OUTPUT events (in the same order), and packets run through
 * the batch entry in whole batches, without the per-packet end events: the
 * fastest way to collect what leaves (writing it to a file). Exceptions are
 * counted and go to the instances' exception hooks. */
void netvm_runner_set_output_events(netvm_runner *r, netvm_event_fn fn,
                                    void *user);
/* Run the init handlers (of every replica). */
void netvm_runner_init(netvm_runner *r);
/* Process `count` packets through `source`; returns when all are done and
 * their events delivered. Packets may be modified in place. */
void netvm_runner_run(netvm_runner *r, uint32_t source, netvm_packet *packets,
                      size_t count);
/* Threads actually used, and why fewer than asked (or ""). */
uint32_t netvm_runner_threads(const netvm_runner *r);
const char *netvm_runner_note(const netvm_runner *r);
/* Replica `i` (0 .. replicas-1) for the control plane; a pipeline has one.
 * Counters below are summed over replicas. */
uint32_t netvm_runner_replicas(const netvm_runner *r);
netvm_instance *netvm_runner_instance(netvm_runner *r, uint32_t i);
void netvm_runner_counters(const netvm_runner *r, netvm_counters *out);
void netvm_runner_pe_counters(const netvm_runner *r, uint32_t pe,
                              netvm_pe_counters *out);
void netvm_runner_sink_counters(const netvm_runner *r, uint32_t sink,
                                uint64_t *packets, uint64_t *bytes);

/*===- Pipeline statistics
 * --------------------------------------------------===*/

/* Per stage of a pipeline (stages as stage_of_pe numbers them). */
typedef struct netvm_stage_stats {
  uint32_t workers;     /* threads on the stage now */
  uint32_t max_workers; /* threads it may have */
  uint32_t dynamic;     /* the controller moves workers to and from it */
  uint32_t reserved;
  uint64_t adds, removes; /* controller decisions for this stage */
  /* Reallocations carried out and how long each took: from the decision
   * to the new worker running on the stage (an add) or to the leaving
   * worker having finished what was dealt to it (a remove). */
  uint64_t reallocations;
  uint64_t realloc_ns_total, realloc_ns_max;
  /* Wall-clock time threads were assigned to the stage (worker-seconds
   * times 1e9: a pool thread from taking a slot to giving it back, a
   * stage's own thread since the runner started it, the caller's thread
   * while in netvm_runner_run), and their CPU time there (busy and
   * waiting alike; 0 for the caller's stage). */
  uint64_t worker_ns, cpu_ns;
  uint64_t messages; /* messages the stage's threads took from rings */
  uint64_t queued;   /* messages waiting for the stage now */
} netvm_stage_stats;

typedef struct netvm_controller_stats {
  uint32_t pool;      /* worker threads shared by the dynamic stages */
  uint32_t stages;    /* dynamic stages */
  uint64_t decisions; /* times the policy ran */
  uint64_t changes;   /* workers moved (adds and removes) */
  uint64_t cpu_ns;    /* the controller thread's CPU time */
} netvm_controller_stats;

/* Stages of a pipeline (0 in run-to-completion mode). */
uint32_t netvm_runner_stages(const netvm_runner *r);
void netvm_runner_stage_stats(const netvm_runner *r, uint32_t stage,
                              netvm_stage_stats *out);
/* Zeros without dynamic allocation. */
void netvm_runner_controller_stats(const netvm_runner *r,
                                   netvm_controller_stats *out);

/* Parse a stage plan: stages in order separated by ';', each a
 * comma-separated list of NetPE names, optionally followed by ':N' (N
 * threads for the stage), e.g. "rx;work:2;tx". Fills stage_of_pe (one per
 * NetPE; every NetPE must be named once) and replicas_of_stage (room for
 * one per NetPE), sets *stages; 0 with a message on error. */
int netvm_parse_stages(const netvm_app_desc *app, const char *spec,
                       uint32_t *stage_of_pe, uint32_t *replicas_of_stage,
                       uint32_t *stages, char *error, size_t error_size);
/* Parse "key=value,..." into `policy` (keys: workers, interval, queue-up,
 * queue-down, delay-up, delay-down, dwell; times in microseconds, or with
 * a unit: 5us, 2ms); an empty string leaves it as it is. 0 on error. */
int netvm_parse_dynamic_policy(const char *spec, netvm_dynamic_policy *policy,
                               char *error, size_t error_size);

/* What the controller observes of one dynamic stage. */
typedef struct netvm_dynamic_observation {
  uint32_t workers;         /* allocated now (>= 1) */
  uint32_t max_workers;     /* slots the stage has */
  uint64_t queue;           /* messages waiting */
  uint64_t oldest_ns;       /* age of the oldest waiting (0: none) */
  uint64_t since_change_ns; /* since its allocation last changed */
  /* How long the queue and the age of the oldest have stayed at or below
   * the down thresholds (0: they are above now). */
  uint64_t quiet_ns;
} netvm_dynamic_observation;

/* The controller's policy, a pure function: the new allocation of `count`
 * stages sharing `pool` workers (targets[i] for stages[i], each between 1
 * and max_workers, their sum at most `pool` when the input's sum is).
 * `policy` must have its defaults applied (netvm_dynamic_defaults).
 * Returns how many stages changed. */
uint32_t netvm_dynamic_decide(const netvm_dynamic_policy *policy, uint32_t pool,
                              const netvm_dynamic_observation *stages,
                              uint32_t count, uint32_t *targets);
/* Replace zero fields of `policy` by the defaults (workers stays 0). */
void netvm_dynamic_defaults(netvm_dynamic_policy *policy);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NETVM_RUNTIME_RUNTIME_H */
