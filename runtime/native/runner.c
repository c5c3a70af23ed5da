/*===- runner.c - Running an application on several threads ---------------===*
 *
 * The two ways runtime.h's runners use threads:
 *
 * Run to completion. Packets are cut into chunks; every thread (the
 * caller's included) repeatedly claims the next chunk with an atomic
 * counter and runs it whole through its own replica of the application.
 * With an event callback each chunk records its events in a log, and
 * whichever thread finishes a chunk delivers every finished log that is
 * next in line (under a lock), so events come out in packet order.
 * Stateful applications get a single replica: replicas would each see part
 * of the traffic and their memories would diverge from one instance's.
 *
 * Pipeline. One instance whose NetPEs are split into stages; stage 0 runs
 * on the caller's thread, every other stage on a thread of its own. Stage
 * s passes messages to stage s+1 through single-producer/single-consumer
 * rings: exchange buffers for NetPEs of later stages (netvm_rt_forward),
 * and, when events are wanted, outputs, exceptions and end-of-packet marks,
 * which travel to the last stage and are delivered there. Every ring is
 * FIFO and every stage handles its messages in order, so each NetPE sees
 * packets in arrival order and events leave in the order one instance
 * produces them.
 *
 * Replicated stages. A stage whose NetPEs keep no state may have several
 * slots (workers of the instance), each with a ring in and a ring out. The
 * stage before it deals packets to the slots a few at a time and, when it
 * moves to another slot, puts a SWITCH mark naming that slot into the ring
 * of the one it leaves; the slots pass the marks on, and the stage after
 * reads the slots' rings in turn, moving to the named ring at each mark:
 * it reads messages exactly in the order they were dealt. Those two
 * neighbours must have one slot each, so the runner adds stages with no
 * NetPEs where needed: before a replicated first stage (the caller's
 * thread then only deals packets), after a replicated last stage, and
 * between two replicated stages. Slots of replicated stages run on a pool
 * of threads: a thread takes a slot that is wanted, runs it until a RETIRE
 * mark (or the end), and gives it back.
 *
 * Replicas by flow key. A stage whose first NetPE keeps data memory that a
 * flow key partitions (the descriptor's pe_key) and whose other NetPEs
 * keep none may have several slots too, sharing the instance's data
 * memory: the dealer calls the key function on every message for that
 * NetPE and switches to slot (bucket mod slots), so that each bucket is
 * only ever touched by one slot, in packet order. Such stages keep their
 * slots (the controller does not move them).
 *
 * Dynamic allocation. A controller thread observes the rings of the
 * replicable stages (messages waiting, the age of the oldest), runs the
 * policy (netvm_dynamic_decide, a pure function) and sets each stage's
 * target number of slots; the dealing stage applies it between packets,
 * waking a parked pool thread for a new slot or sending RETIRE to the
 * last slot.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L /* nanosleep, pthread_getcpuclockid */
#define _DEFAULT_SOURCE         /* syscall (the futex of parked threads) */

#include "internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

/*===- Event logs
 * ----------------------------------------------------------===*/

typedef struct record {
  uint32_t type, index;
  uint64_t sequence;
  const netvm_site *site;
  uint32_t drops, unconnected;
  uint32_t length, info_length, seconds, microseconds, flags, wire_length;
  size_t offset; /* packet bytes then info bytes, in the log's data */
} record;

typedef struct event_log {
  record *records;
  size_t count, capacity;
  uint8_t *data;
  size_t size, data_capacity;
} event_log;

static record *log_add(event_log *log, size_t bytes) {
  record *rec;
  if (log->count == log->capacity) {
    size_t capacity = log->capacity ? 2 * log->capacity : 64;
    record *grown = realloc(log->records, capacity * sizeof(*grown));
    if (!grown)
      abort();
    log->records = grown;
    log->capacity = capacity;
  }
  if (log->size + bytes > log->data_capacity) {
    size_t capacity = log->data_capacity ? log->data_capacity : 4096;
    uint8_t *grown;
    while (capacity < log->size + bytes)
      capacity *= 2;
    grown = realloc(log->data, capacity);
    if (!grown)
      abort();
    log->data = grown;
    log->data_capacity = capacity;
  }
  rec = &log->records[log->count++];
  memset(rec, 0, sizeof(*rec));
  rec->offset = log->size;
  log->size += bytes;
  return rec;
}

static void log_free(event_log *log) {
  free(log->records);
  free(log->data);
  memset(log, 0, sizeof(*log));
}

/*===- Rings
 * ---------------------------------------------------------------===*/

enum {
  MSG_FORWARD,   /* xb for input `b` of NetPE `a` */
  MSG_OUTPUT,    /* xb left through sink `a` */
  MSG_EXCEPTION, /* exception `a` at site `b` - 1 (0: unknown) */
  MSG_DONE,      /* packet `sequence` finished on the stages so far */
  MSG_END,       /* the end of one netvm_runner_run */
  MSG_QUIT,      /* the runner is going away */
  MSG_PACKETS,   /* `b` packets at `packets` into source `a` */
  MSG_SWITCH,    /* what follows was dealt to slot `a` */
  MSG_RETIRE     /* the slot is no longer dealt to: give it back */
};

typedef struct message {
  uint32_t type, a, b;
  uint32_t drops, unconnected;
  int64_t budget;
  uint64_t sequence;
  netvm_packet *packets; /* MSG_PACKETS */
  netvm_exbuf xb;        /* owned by the slot */
} message;

#define RING_SLOTS 1024u
#define CACHE_LINE 64

typedef struct ring {
  message *slots;
  /* The consumer's line: its index and what it last saw of the tail. */
  _Alignas(CACHE_LINE) atomic_size_t head; /* next slot to consume */
  size_t tail_seen;
  /* The producer's line: its index and what it last saw of the head, so
   * that each side reads the other's line only when it must. */
  _Alignas(CACHE_LINE) atomic_size_t tail; /* next slot published */
  size_t head_seen;
  size_t filled; /* next slot to fill: published in groups (ring_commit) */
  /* Rings into dynamic stages: when each message was dealt (ns), for the
   * controller's age of the oldest waiting message. */
  atomic_uint_fast64_t *stamps;
  /* A consumer that found the ring empty for a while parks: it sets
   * `parked` and sleeps on `wake` (a futex word) until the producer
   * publishes more and, seeing `parked`, bumps `wake`. A line of its own:
   * the producer reads it at every flush, and it changes only when the
   * consumer parks. */
  _Alignas(CACHE_LINE) atomic_uint parked;
  atomic_uint wake;
  _Alignas(CACHE_LINE) char pad;
} ring;

/* Waiting, in three phases: spin a little (the other side is running and
 * about to publish), then yield a few times (it may share this CPU), then
 * sleep. backoff() sleeps 50 us at a time; ring_front() parks until the
 * producer wakes it (park()). With more threads than CPUs, a waiting thread
 * then leaves its CPU to the threads with work. */
#define SPIN_PAUSES 128u
#define SPIN_YIELDS 16u

static int spin(unsigned *spins) {
  ++*spins;
  if (*spins < SPIN_PAUSES) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
    return 1;
  }
  if (*spins < SPIN_PAUSES + SPIN_YIELDS) {
    sched_yield();
    return 1;
  }
  return 0;
}

static void backoff(unsigned *spins) {
  if (!spin(spins)) {
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
}

/* Sleep while `*word` is `seen`, at most `ns`: a futex on Linux, a short
 * sleep elsewhere (the caller re-checks either way). */
static void park(atomic_uint *word, unsigned seen, long ns) {
#if defined(__linux__)
  struct timespec ts = {0, ns};
  syscall(SYS_futex, (unsigned *)word, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
#else
  struct timespec ts = {0, ns < 50000 ? ns : 50000};
  (void)word;
  (void)seen;
  nanosleep(&ts, NULL);
#endif
}

static void unpark(atomic_uint *word) {
  atomic_fetch_add_explicit(word, 1, memory_order_release);
#if defined(__linux__)
  syscall(SYS_futex, (unsigned *)word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#endif
}

/* Parked consumers wake at least this often (ns) and look again: a wake-up
 * is an optimisation, never needed for progress. */
#define PARK_NS 2000000L

/* Make everything filled so far visible to the consumer, and wake it if it
 * parked. The fence orders the tail's store before the load of `parked`,
 * as the consumer orders its store of `parked` before its last look at the
 * tail: one of the two sees the other. */
static void ring_flush(ring *q) {
  atomic_store_explicit(&q->tail, q->filled, memory_order_release);
  atomic_thread_fence(memory_order_seq_cst);
  if (atomic_load_explicit(&q->parked, memory_order_relaxed))
    unpark(&q->wake);
}

static message *ring_reserve(ring *q) {
  size_t tail = q->filled;
  unsigned spins = 0;
  while (tail - q->head_seen >= RING_SLOTS) {
    q->head_seen = atomic_load_explicit(&q->head, memory_order_acquire);
    if (tail - q->head_seen < RING_SLOTS)
      break;
    ring_flush(q); /* the consumer may be waiting for what we hold back */
    backoff(&spins);
  }
  return &q->slots[tail & (RING_SLOTS - 1)];
}

/* Messages are published a group at a time: the consumer's cache line of
 * the tail then moves once per group, not once per message. Control
 * messages (end of a run, quit) flush at once. */
#define RING_GROUP 32u
static void ring_commit(ring *q) {
  ++q->filled;
  if (q->filled - atomic_load_explicit(&q->tail, memory_order_relaxed) >=
      RING_GROUP)
    ring_flush(q);
}
static message *ring_front(ring *q) {
  size_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
  unsigned spins = 0;
  while (q->tail_seen == head) {
    unsigned seen;
    q->tail_seen = atomic_load_explicit(&q->tail, memory_order_acquire);
    if (q->tail_seen != head || spin(&spins))
      continue;
    seen = atomic_load_explicit(&q->wake, memory_order_acquire);
    atomic_store_explicit(&q->parked, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    q->tail_seen = atomic_load_explicit(&q->tail, memory_order_acquire);
    if (q->tail_seen == head)
      park(&q->wake, seen, PARK_NS);
    atomic_store_explicit(&q->parked, 0, memory_order_relaxed);
  }
  return &q->slots[head & (RING_SLOTS - 1)];
}
/* Whether a message is waiting (consumer side, without waiting). */
static int ring_ready(ring *q) {
  size_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
  if (q->tail_seen != head)
    return 1;
  q->tail_seen = atomic_load_explicit(&q->tail, memory_order_acquire);
  return q->tail_seen != head;
}
static void ring_pop(ring *q) {
  atomic_store_explicit(
      &q->head, atomic_load_explicit(&q->head, memory_order_relaxed) + 1,
      memory_order_release);
}

/*===- The runner
 * ----------------------------------------------------------===*/

struct netvm_recorder {
  netvm_runner *runner;
  event_log *log; /* NULL: deliver at once */
};

struct netvm_pipeline {
  netvm_runner *runner;
};

/* Slot states (pool threads take WANTED slots). */
enum { SLOT_IDLE, SLOT_WANTED, SLOT_ATTACHING, SLOT_RUNNING };

/* One worker of a pipeline stage. */
typedef struct slot {
  netvm_worker *w;
  atomic_uint state; /* SLOT_*: replicated stages */
  uint32_t pending_drops, pending_unconnected;
  atomic_uint_fast64_t messages; /* taken from rings */
  netvm_pe_state *pes; /* private NetPE counters (replicated stages) */
  /* Under the pool lock: the pending reallocation's decision time (0:
   * none), and the pool thread running the slot. */
  uint64_t add_ns, remove_ns;
  int attached;
  pthread_t thread;
  uint64_t attach_ns, attach_cpu_ns;
} slot;

#define NO_STAGE UINT32_MAX

/* A stage as the runner runs it: the caller's stages, and stages with no
 * NetPEs that deal and merge around replicated ones. */
typedef struct pstage {
  uint32_t logical;   /* the caller's stage, or NO_STAGE */
  uint32_t num_slots; /* > 1 or dynamic: replicated */
  /* A replicated stage whose NetPE `key_pe` keeps state partitioned by a
   * flow key (NO_STAGE: none): the dealer sends every message for that
   * NetPE to the slot of its bucket (bucket mod slots), so that each
   * bucket's state is only ever touched by one slot. */
  uint32_t key_pe;
  int replicated; /* slots run on pool threads */
  int managed;    /* the controller moves workers */
  int deals;      /* the next stage is replicated */
  slot *slots;
  ring *out; /* to the next stage: one per slot of whichever has several */
  uint32_t num_out;
  /* Dealing (deals): the slot dealt to, packets left for it, slots in use
   * (0 .. active-1), the packet being dealt, its time stamp. */
  uint32_t cur, left, active;
  int have_seq;
  uint64_t last_seq, stamp;
  /* Merging (the previous stage is replicated): the ring read now. */
  uint32_t merge_cur;
  /* A thread of its own (not replicated, not the caller's), since when. */
  int has_thread;
  pthread_t tid;
  uint64_t started_ns;
  /* Dynamic: the controller's target, when it was decided, when the
   * stage last changed, since when it has been quiet. */
  atomic_uint target;
  atomic_uint_fast64_t decided_ns;
  uint64_t last_change_ns;
  uint64_t quiet_since_ns; /* below the down thresholds since (0: not) */
  /* Under the pool lock. */
  uint64_t adds, removes, reallocs, realloc_total, realloc_max;
  uint64_t worker_ns, cpu_ns;
} pstage;

typedef struct chunk {
  event_log log;
  atomic_int done;
} chunk;

struct netvm_runner {
  const netvm_app_desc *app;
  uint32_t mode, threads, batch;
  char note[256];
  netvm_event_fn events;
  void *events_user;
  int outputs_only;  /* netvm_runner_set_output_events */
  uint64_t sequence; /* of the next packet */

  /* Run to completion: replicas[i] is used by thread i (0: the caller). */
  netvm_instance **replicas;
  uint32_t num_replicas;
  struct netvm_recorder *recorders; /* one per replica */

  /* Threads 1 .. threads-1 and what they are asked to do. */
  pthread_t *tids;
  uint32_t started;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  uint64_t generation;
  int quit;

  /* The current run_to_completion job. */
  uint32_t source;
  netvm_packet *packets;
  size_t count, num_chunks;
  uint64_t first_sequence;
  /* Claims: the run's generation (high 32 bits) and its next chunk (low
   * 32 bits), so that a thread still looking for work in an earlier run
   * cannot take a chunk of this one. */
  atomic_uint_fast64_t claim;
  atomic_size_t chunks_done;
  chunk *chunks;
  size_t chunk_capacity;
  pthread_mutex_t flush_lock;
  size_t flush_next;

  /* Pipeline: stages as run (ps), the caller's stages. */
  struct netvm_pipeline pipeline;
  uint32_t *stage_of; /* NetPE to index in ps */
  pstage *ps;
  uint32_t stages; /* in ps */
  uint32_t logical_stages;
  uint32_t *ps_of_logical;
  int pipeline_started; /* every thread runs */
  atomic_uint_fast64_t finished_runs;
  uint64_t runs;
  uint64_t run_ns; /* wall time inside netvm_runner_run */

  /* The pool of threads running replicated stages' slots. */
  pthread_t *pool;
  uint32_t pool_size, pool_started;
  pthread_mutex_t pool_lock;
  pthread_cond_t pool_wake;
  int pool_quit;

  /* Dynamic allocation. */
  int dynamic;
  netvm_dynamic_policy policy;
  uint32_t managed;
  pthread_t controller;
  int has_controller;
  pthread_cond_t controller_wake; /* under pool_lock */
  int in_run, controller_quit;
  uint64_t decisions, changes;
};

static void deliver(netvm_runner *r, const netvm_event *ev) {
  if (r->events && (!r->outputs_only || ev->type == NETVM_EVENT_OUTPUT))
    r->events(r->events_user, ev);
}

static void deliver_event(netvm_runner *r, uint32_t type, uint32_t index,
                          uint64_t seq, const netvm_exbuf *xb,
                          const netvm_site *site, uint32_t drops,
                          uint32_t unconnected) {
  netvm_event ev;
  ev.type = type;
  ev.index = index;
  ev.sequence = seq;
  ev.xb = xb;
  ev.site = site;
  ev.drops = drops;
  ev.unconnected = unconnected;
  deliver(r, &ev);
}

static void deliver_output(netvm_runner *r, uint32_t sink, uint64_t seq,
                           const netvm_exbuf *xb) {
  deliver_event(r, NETVM_EVENT_OUTPUT, sink, seq, xb, NULL, 0, 0);
}

static void deliver_exception(netvm_runner *r, uint32_t kind, uint64_t seq,
                              const netvm_site *site) {
  deliver_event(r, NETVM_EVENT_EXCEPTION, kind, seq, NULL, site, 0, 0);
}

static void deliver_done(netvm_runner *r, uint64_t seq, uint32_t drops,
                         uint32_t unconnected) {
  deliver_event(r, NETVM_EVENT_DONE, 0, seq, NULL, NULL, drops, unconnected);
}

static void flush_log(netvm_runner *r, event_log *log) {
  size_t i;
  for (i = 0; i < log->count; ++i) {
    const record *rec = &log->records[i];
    if (rec->type == NETVM_EVENT_OUTPUT) {
      netvm_exbuf xb;
      memset(&xb, 0, sizeof(xb));
      xb.packet = log->data + rec->offset;
      xb.length = xb.capacity = rec->length;
      xb.wire_length = rec->wire_length;
      xb.info = log->data + rec->offset + rec->length;
      xb.info_length = rec->info_length;
      xb.seconds = rec->seconds;
      xb.microseconds = rec->microseconds;
      xb.flags = rec->flags;
      xb.sequence = rec->sequence;
      deliver_output(r, rec->index, rec->sequence, &xb);
    } else if (rec->type == NETVM_EVENT_EXCEPTION) {
      deliver_exception(r, rec->index, rec->sequence, rec->site);
    } else {
      deliver_done(r, rec->sequence, rec->drops, rec->unconnected);
    }
  }
  log->count = 0;
  log->size = 0;
}

/*===- Hooks called by runtime.c
 * -------------------------------------------===*/

static ring *out_ring(netvm_runner *r, netvm_worker *w, uint64_t sequence,
                      uint32_t to, const netvm_exbuf *xb);
static void out_commit(netvm_runner *r, netvm_worker *w, ring *q);

/* An output (xb) or an exception (site) on worker `w`: deliver it now if
 * this thread is where events come out in order, else queue it for the
 * next stage or record it in the current chunk's log. */
static int on_event(netvm_worker *w, uint32_t type, uint32_t index,
                    uint64_t sequence, const netvm_exbuf *xb,
                    const netvm_site *site) {
  netvm_runner *r;
  event_log *log = NULL;
  if (w->pipeline) {
    r = w->pipeline->runner;
    if (!r->events)
      return 1;
    if (r->outputs_only && type != NETVM_EVENT_OUTPUT)
      return 0;
    if (w->stage + 1 < r->stages) {
      ring *q = out_ring(r, w, sequence, NO_STAGE, NULL);
      message *m = ring_reserve(q);
      m->type = type == NETVM_EVENT_OUTPUT ? MSG_OUTPUT : MSG_EXCEPTION;
      m->a = index;
      m->b = site ? (uint32_t)(site - r->app->sites) + 1 : 0;
      m->sequence = sequence;
      m->xb.flags = 0;
      if (xb && !netvm_exbuf_copy(w, &m->xb, xb))
        abort();
      out_commit(r, w, q);
      return 1;
    }
  } else if (w->recorder) {
    r = w->recorder->runner;
    log = w->recorder->log;
    if (r->outputs_only && type != NETVM_EVENT_OUTPUT)
      return 0; /* counted; nobody listens */
  } else {
    return 0;
  }
  if (!log) {
    deliver_event(r, type, index, sequence, xb, site, 0, 0);
  } else {
    size_t bytes = xb ? (size_t)xb->length + xb->info_length : 0;
    record *out = log_add(log, bytes);
    out->type = type;
    out->index = index;
    out->sequence = sequence;
    out->site = site;
    if (xb) {
      out->length = xb->length;
      out->info_length = xb->info_length;
      out->seconds = xb->seconds;
      out->microseconds = xb->microseconds;
      out->flags = xb->flags & NETVM_XB_NONE;
      out->wire_length = xb->wire_length;
      memcpy(log->data + out->offset, xb->packet, xb->length);
      if (xb->info_length)
        memcpy(log->data + out->offset + xb->length, xb->info, xb->info_length);
    }
  }
  return 1;
}

int netvm_runner_on_emit(netvm_worker *w, uint32_t sink, netvm_exbuf *xb) {
  return on_event(w, NETVM_EVENT_OUTPUT, sink, xb->sequence, xb, NULL);
}

int netvm_runner_on_exception(netvm_worker *w, uint32_t kind,
                              const netvm_site *site) {
  return on_event(w, NETVM_EVENT_EXCEPTION, kind, w->sequence, NULL, site);
}

void netvm_runner_forward(netvm_worker *w, uint32_t to, uint32_t port,
                          netvm_exbuf *xb) {
  netvm_runner *r = w->pipeline->runner;
  message *m;
  ring *q;
  if (r->stage_of[to] <= w->stage) {
    netvm_worker_count(w, r->app->pe_push[to](&w->ctx, xb, port), xb);
    return;
  }
  q = out_ring(r, w, xb->sequence, to, xb);
  m = ring_reserve(q);
  m->type = MSG_FORWARD;
  m->a = to;
  m->b = port;
  m->budget = w->ctx.budget;
  m->sequence = xb->sequence;
  m->xb.flags = 0;
  if (!netvm_exbuf_copy(w, &m->xb, xb))
    abort();
  out_commit(r, w, q);
  netvm_worker_release(w, xb);
}

/*===- Run to completion
 * ---------------------------------------------------===*/

/* Run packets [first, first + n) of the current job on worker `w`. */
static void run_packets(netvm_runner *r, netvm_worker *w, size_t first,
                        size_t n, struct netvm_recorder *rec) {
  netvm_instance *vm = w->vm;
  netvm_exbuf *xb = &w->scratch;
  size_t i;
  w->packets += n;
  w->ctx.budget_reset = (int64_t)vm->budget;
  if (!rec) {
    xb->sequence = r->first_sequence + first;
    r->app->batches[r->source](&w->ctx, xb, r->packets + first, n);
    return;
  }
  w->recorder = rec;
  netvm_worker_update_hooks(w);
  if (r->outputs_only) {
    /* Outputs only: the batch entry runs the whole range, outputs go to
     * the log (or out) as they happen, no per-packet end events. */
    w->sequence = xb->sequence = r->first_sequence + first;
    r->app->batches[r->source](&w->ctx, xb, r->packets + first, n);
    n = 0;
  }
  for (i = first; i < first + n; ++i) {
    uint64_t drops = w->drops_total, unconnected = w->unconnected;
    w->sequence = xb->sequence = r->first_sequence + i;
    r->app->batches[r->source](&w->ctx, xb, r->packets + i, 1);
    drops = w->drops_total - drops;
    unconnected = w->unconnected - unconnected;
    if (rec->log) {
      record *done = log_add(rec->log, 0);
      done->type = NETVM_EVENT_DONE;
      done->sequence = w->sequence;
      done->drops = (uint32_t)drops;
      done->unconnected = (uint32_t)unconnected;
    } else {
      deliver_done(r, w->sequence, (uint32_t)drops, (uint32_t)unconnected);
    }
  }
  w->recorder = NULL;
  netvm_worker_update_hooks(w);
}

/* Deliver the logs of finished chunks that are next in line. */
static void flush_ready(netvm_runner *r, int wait) {
  if (wait)
    pthread_mutex_lock(&r->flush_lock);
  else if (pthread_mutex_trylock(&r->flush_lock) != 0)
    return;
  while (r->flush_next < r->num_chunks &&
         atomic_load_explicit(&r->chunks[r->flush_next].done,
                              memory_order_acquire)) {
    flush_log(r, &r->chunks[r->flush_next].log);
    ++r->flush_next;
  }
  pthread_mutex_unlock(&r->flush_lock);
}

/* Work on run `generation`, which has `chunks` chunks. */
static void rtc_work(netvm_runner *r, uint32_t replica, uint64_t generation,
                     size_t chunks) {
  netvm_worker *w = &r->replicas[replica]->workers[0];
  for (;;) {
    uint_fast64_t v = atomic_load(&r->claim);
    size_t c, first, n;
    do {
      if ((v >> 32) != (generation & 0xFFFFFFFFu) ||
          (v & 0xFFFFFFFFu) >= chunks)
        return;
    } while (!atomic_compare_exchange_weak(&r->claim, &v, v + 1));
    c = (size_t)(v & 0xFFFFFFFFu);
    first = c * r->batch;
    n = r->count - first < r->batch ? r->count - first : r->batch;
    if (r->events) {
      struct netvm_recorder *rec = &r->recorders[replica];
      rec->log = &r->chunks[c].log;
      run_packets(r, w, first, n, rec);
      atomic_store_explicit(&r->chunks[c].done, 1, memory_order_release);
      flush_ready(r, 0);
    } else {
      run_packets(r, w, first, n, NULL);
    }
    atomic_fetch_add(&r->chunks_done, 1);
  }
}

static void run_to_completion(netvm_runner *r, uint32_t source,
                              netvm_packet *packets, size_t count) {
  size_t i, chunks = (count + r->batch - 1) / r->batch;
  uint64_t generation = 0;
  int threads = r->num_replicas > 1 && chunks > 1;
  if (chunks > 0xFFFFFFFFu) {
    /* More chunks than a claim counts: run it in parts. */
    size_t part = (size_t)0xFFFFFFFFu * r->batch;
    run_to_completion(r, source, packets, part);
    r->sequence += part;
    run_to_completion(r, source, packets + part, count - part);
    r->sequence -= part;
    return;
  }
  if (threads && r->events && chunks > r->chunk_capacity) {
    chunk *grown = realloc(r->chunks, chunks * sizeof(*grown));
    if (!grown)
      abort();
    memset(grown + r->chunk_capacity, 0,
           (chunks - r->chunk_capacity) * sizeof(*grown));
    r->chunks = grown;
    r->chunk_capacity = chunks;
  }
  for (i = 0; threads && r->events && i < chunks; ++i)
    atomic_store(&r->chunks[i].done, 0);
  /* The job, under the lock the other threads read it with. */
  pthread_mutex_lock(&r->lock);
  r->source = source;
  r->packets = packets;
  r->count = count;
  r->first_sequence = r->sequence;
  r->num_chunks = chunks;
  r->flush_next = 0;
  atomic_store(&r->chunks_done, 0);
  if (threads) {
    generation = ++r->generation;
    atomic_store(&r->claim, (uint_fast64_t)(generation & 0xFFFFFFFFu) << 32);
    pthread_cond_broadcast(&r->wake);
  }
  pthread_mutex_unlock(&r->lock);
  if (!threads) {
    /* One thread: no chunks, events go out as they happen. */
    struct netvm_recorder *rec = &r->recorders[0];
    rec->log = NULL;
    run_packets(r, &r->replicas[0]->workers[0], 0, count,
                r->events ? rec : NULL);
    return;
  }
  rtc_work(r, 0, generation, chunks);
  {
    unsigned spins = 0;
    while (atomic_load(&r->chunks_done) < chunks)
      backoff(&spins);
  }
  if (r->events)
    flush_ready(r, 1);
}

/*===- Pipeline
 * ------------------------------------------------------------===*/

/* Packets a MSG_PACKETS carries, and how many packets (or messages
 * MSG_PACKETS) go to one slot before the next is dealt to. */
#define PACKETS_PER_MESSAGE 4u
#define DEAL 4u

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(pthread_t thread) {
  clockid_t clock;
  struct timespec ts;
  if (pthread_getcpuclockid(thread, &clock) || clock_gettime(clock, &ts))
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void count_realloc(pstage *ps, uint64_t started, uint64_t now) {
  uint64_t took = now > started ? now - started : 0;
  ++ps->reallocs;
  ps->realloc_total += took;
  if (took > ps->realloc_max)
    ps->realloc_max = took;
}

static void send_mark(ring *q, uint32_t type, uint32_t a, uint64_t sequence) {
  message *m = ring_reserve(q);
  m->type = type;
  m->a = a;
  m->drops = m->unconnected = 0;
  m->sequence = sequence;
  ring_commit(q);
  ring_flush(q);
}

/* Messages in ring `q` not yet taken (producer side). */
static size_t ring_used(ring *q) {
  return q->filled - atomic_load_explicit(&q->head, memory_order_acquire);
}

/* Deal what follows to slot `next` of the next stage. */
static void switch_to(pstage *ps, uint32_t next) {
  if (next == ps->cur)
    return;
  send_mark(&ps->out[ps->cur], MSG_SWITCH, next, ps->last_seq);
  ps->cur = next;
}

/* Apply the controller's target for stage `qs` (dealt to by `ps`) between
 * two packets: ask the pool for one slot more, or retire the last one. */
static void follow_target(netvm_runner *r, pstage *ps, pstage *qs) {
  uint32_t target = atomic_load_explicit(&qs->target, memory_order_acquire);
  uint64_t decided =
      atomic_load_explicit(&qs->decided_ns, memory_order_relaxed);
  if (target > ps->active && ps->active < qs->num_slots) {
    slot *s = &qs->slots[ps->active];
    if (atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_IDLE)
      return; /* still finishing its last turn: try again later */
    pthread_mutex_lock(&r->pool_lock);
    s->add_ns = decided;
    atomic_store(&s->state, SLOT_WANTED);
    pthread_cond_broadcast(&r->pool_wake);
    pthread_mutex_unlock(&r->pool_lock);
    ++ps->active;
  } else if (target < ps->active && ps->active > 1) {
    uint32_t last = ps->active - 1;
    if (ps->cur == last) {
      switch_to(ps, 0);
      ps->left = DEAL;
    }
    pthread_mutex_lock(&r->pool_lock);
    qs->slots[last].remove_ns = decided;
    pthread_mutex_unlock(&r->pool_lock);
    send_mark(&ps->out[last], MSG_RETIRE, 0, ps->last_seq);
    --ps->active;
  }
}

/* The ring of the next stage's slot the message of packet `sequence` goes
 * into; between packets, every DEAL packets or when the slot's ring is
 * full, move on to the running slot with the shortest queue. */
static ring *deal(netvm_runner *r, pstage *ps, uint64_t sequence) {
  pstage *qs = ps + 1;
  if (ps->have_seq && sequence == ps->last_seq)
    return &ps->out[ps->cur];
  ps->have_seq = 1;
  ps->last_seq = sequence;
  if (qs->managed) {
    ps->stamp = now_ns();
    follow_target(r, ps, qs);
  }
  if (ps->left == 0 || ring_used(&ps->out[ps->cur]) >= RING_SLOTS) {
    /* The running slot with the fewest messages waiting, the next in
     * turn among equals: round robin when the replicas keep up. */
    uint32_t k, next = ps->cur;
    size_t fewest = SIZE_MAX;
    for (k = 1; k <= ps->active; ++k) {
      uint32_t j = (ps->cur + k) % ps->active;
      size_t used;
      if (j != 0 && atomic_load_explicit(&qs->slots[j].state,
                                         memory_order_acquire) != SLOT_RUNNING)
        continue;
      used = ring_used(&ps->out[j]);
      if (used < fewest) {
        fewest = used;
        next = j;
      }
    }
    switch_to(ps, next);
    ps->left = DEAL;
  }
  --ps->left;
  return &ps->out[ps->cur];
}

/* The bucket of `xb` for flow-keyed NetPE `pe` (its key function on the
 * buffer about to be delivered to it), or UINT32_MAX (no state touched). */
static uint32_t flow_bucket(netvm_runner *r, netvm_worker *w, uint32_t pe,
                            const netvm_exbuf *xb) {
  uint8_t info[8] = {0};
  netvm_exbuf k = *xb;
  k.info = info;
  k.info_length = 4;
  k.flags &= ~(uint32_t)NETVM_XB_LISTENED;
  r->app->pe_key[pe](&w->ctx, &k, 0);
  return (uint32_t)info[0] << 24 | (uint32_t)info[1] << 16 |
         (uint32_t)info[2] << 8 | info[3];
}

/* The slot of a flow-keyed stage a message for NetPE `to` goes to:
 * messages for its keyed NetPE to the slot of their bucket (a fixed slot,
 * 0, where the NetPE touches no state), everything else to the slot dealt
 * to last. */
static ring *deal_keyed(netvm_runner *r, netvm_worker *w, pstage *ps,
                        uint32_t to, const netvm_exbuf *xb) {
  pstage *qs = ps + 1;
  if (xb && to == qs->key_pe) {
    uint32_t bucket = flow_bucket(r, w, to, xb);
    switch_to(ps, bucket == UINT32_MAX ? 0 : bucket % ps->active);
  }
  return &ps->out[ps->cur];
}

static ring *out_ring(netvm_runner *r, netvm_worker *w, uint64_t sequence,
                      uint32_t to, const netvm_exbuf *xb) {
  pstage *ps = &r->ps[w->stage];
  if (ps->deals && ps[1].key_pe != NO_STAGE)
    return deal_keyed(r, w, ps, to, xb);
  if (ps->deals)
    return deal(r, ps, sequence);
  return &ps->out[ps->replicated ? w->slot : 0];
}

static void out_commit(netvm_runner *r, netvm_worker *w, ring *q) {
  if (q->stamps)
    atomic_store_explicit(&q->stamps[q->filled & (RING_SLOTS - 1)],
                          r->ps[w->stage].stamp, memory_order_relaxed);
  ring_commit(q);
}

/* Publish what this slot wrote (before waiting for input). */
static void flush_outs(netvm_runner *r, netvm_worker *w) {
  pstage *ps = &r->ps[w->stage];
  if (w->stage + 1 == r->stages)
    return;
  ring_flush(&ps->out[ps->deals ? ps->cur : ps->replicated ? w->slot : 0]);
}

/* The end, to every slot of the next stage (each slot's thread must see
 * it). */
static void quit_slots(pstage *ps) {
  uint32_t j;
  for (j = 0; j < ps->num_out; ++j)
    send_mark(&ps->out[j], MSG_QUIT, 0, 0);
}

/* Pass message `m` (consumed from the previous ring) to the next stage,
 * swapping exchange-buffer storage instead of copying it. */
static void pass_on(netvm_runner *r, netvm_worker *w, message *m) {
  pstage *ps = &r->ps[w->stage];
  ring *q;
  message *out;
  netvm_exbuf spare;
  if (m->type == MSG_QUIT && ps->deals) {
    quit_slots(ps);
    return;
  }
  q = out_ring(r, w, m->sequence, m->type == MSG_FORWARD ? m->a : NO_STAGE,
               m->type == MSG_FORWARD ? &m->xb : NULL);
  out = ring_reserve(q);
  spare = out->xb;
  out->type = m->type;
  out->a = m->a;
  out->b = m->b;
  out->drops = m->drops;
  out->unconnected = m->unconnected;
  out->budget = m->budget;
  out->sequence = m->sequence;
  out->packets = m->packets;
  out->xb = m->xb;
  m->xb = spare;
  out_commit(r, w, q);
  if (m->type == MSG_END || m->type == MSG_QUIT || m->type == MSG_SWITCH)
    ring_flush(q);
}

/* Send the end of packet `sequence` on, with what stage slot `sl` dropped. */
static void send_done(netvm_runner *r, netvm_worker *w, slot *sl,
                      uint64_t sequence, uint32_t drops, uint32_t unconnected) {
  drops += sl->pending_drops;
  unconnected += sl->pending_unconnected;
  sl->pending_drops = sl->pending_unconnected = 0;
  if (w->stage + 1 == r->stages) {
    deliver_done(r, sequence, drops, unconnected);
  } else {
    ring *q = out_ring(r, w, sequence, NO_STAGE, NULL);
    message *m = ring_reserve(q);
    m->type = MSG_DONE;
    m->sequence = sequence;
    m->drops = drops;
    m->unconnected = unconnected;
    out_commit(r, w, q);
  }
}

/* Packets dealt to a replicated first stage. */
static void run_dealt_packets(netvm_runner *r, netvm_worker *w, slot *sl,
                              message *m) {
  netvm_exbuf *xb = &w->scratch;
  uint32_t i;
  w->ctx.budget_reset = (int64_t)w->vm->budget;
  if (!r->events) {
    xb->sequence = m->sequence;
    r->app->batches[m->a](&w->ctx, xb, m->packets, m->b);
    return;
  }
  for (i = 0; i < m->b; ++i) {
    uint64_t drops = w->drops_total, unconnected = w->unconnected;
    w->sequence = xb->sequence = m->sequence + i;
    r->app->batches[m->a](&w->ctx, xb, m->packets + i, 1);
    send_done(r, w, sl, w->sequence, (uint32_t)(w->drops_total - drops),
              (uint32_t)(w->unconnected - unconnected));
  }
}

/* Run slot `j` of stage `p` until the runner quits (1) or the slot is
 * retired (0). */
static int stage_loop(netvm_runner *r, uint32_t p, uint32_t j) {
  pstage *ps = &r->ps[p], *prev = &r->ps[p - 1];
  slot *sl = &ps->slots[j];
  netvm_worker *w = sl->w;
  int last = p + 1 == r->stages;
  for (;;) {
    ring *in = &prev->out[ps->replicated     ? j
                          : prev->replicated ? ps->merge_cur
                                             : 0];
    message *m;
    uint32_t type;
    if (!ring_ready(in))
      flush_outs(r, w);
    m = ring_front(in);
    type = m->type;
    atomic_store_explicit(
        &sl->messages,
        atomic_load_explicit(&sl->messages, memory_order_relaxed) + 1,
        memory_order_relaxed);
    switch (type) {
    case MSG_FORWARD:
      if (r->stage_of[m->a] != p) {
        pass_on(r, w, m);
        break;
      }
      {
        uint64_t drops = w->drops_total, unconnected = w->unconnected;
        w->sequence = m->sequence;
        w->ctx.budget = m->budget;
        m->xb.flags = (m->xb.flags & NETVM_XB_NONE) | netvm_worker_listened(w);
        netvm_worker_count(w, r->app->pe_push[m->a](&w->ctx, &m->xb, m->b),
                           &m->xb);
        sl->pending_drops += (uint32_t)(w->drops_total - drops);
        sl->pending_unconnected += (uint32_t)(w->unconnected - unconnected);
      }
      break;
    case MSG_PACKETS:
      run_dealt_packets(r, w, sl, m);
      break;
    case MSG_SWITCH:
      /* What this slot dropped of a packet whose later messages went to
       * another slot (flow-keyed dealing) travels with the mark, so that
       * the merger counts it with that packet. */
      if (ps->replicated) {
        m->drops += sl->pending_drops;
        m->unconnected += sl->pending_unconnected;
        sl->pending_drops = sl->pending_unconnected = 0;
        pass_on(r, w, m);
      } else {
        ps->merge_cur = m->a;
        sl->pending_drops += m->drops;
        sl->pending_unconnected += m->unconnected;
      }
      break;
    case MSG_RETIRE:
      ring_pop(in);
      flush_outs(r, w);
      return 0;
    case MSG_OUTPUT:
      if (last)
        deliver_output(r, m->a, m->sequence, &m->xb);
      else
        pass_on(r, w, m);
      break;
    case MSG_EXCEPTION:
      if (last)
        deliver_exception(r, m->a, m->sequence,
                          m->b ? &r->app->sites[m->b - 1] : NULL);
      else
        pass_on(r, w, m);
      break;
    case MSG_DONE:
      send_done(r, w, sl, m->sequence, m->drops, m->unconnected);
      break;
    case MSG_END:
      if (last)
        atomic_store_explicit(&r->finished_runs, m->sequence,
                              memory_order_release);
      else
        pass_on(r, w, m);
      break;
    case MSG_QUIT:
      if (!last)
        pass_on(r, w, m);
      break;
    }
    ring_pop(in);
    if (type == MSG_QUIT)
      return 1;
  }
}

/* A stage with a thread of its own. */
static void *stage_main(void *arg) {
  netvm_worker *w = arg;
  stage_loop(w->pipeline->runner, w->stage, 0);
  return NULL;
}

/* A wanted slot of a replicated stage, marked ATTACHING (under the pool
 * lock), or NULL. */
static slot *take_wanted(netvm_runner *r, uint32_t *stage) {
  uint32_t p, j;
  for (p = 0; p < r->stages; ++p)
    for (j = 0; r->ps[p].replicated && j < r->ps[p].num_slots; ++j) {
      slot *s = &r->ps[p].slots[j];
      if (atomic_load(&s->state) == SLOT_WANTED) {
        atomic_store(&s->state, SLOT_ATTACHING);
        *stage = p;
        return s;
      }
    }
  return NULL;
}

/* A pool thread: run wanted slots; sleep while there are none. */
static void *pool_main(void *arg) {
  netvm_runner *r = arg;
  pthread_t self = pthread_self();
  pthread_mutex_lock(&r->pool_lock);
  for (;;) {
    uint32_t p = 0;
    slot *s;
    int quit;
    while (!r->pool_quit && !(s = take_wanted(r, &p)))
      pthread_cond_wait(&r->pool_wake, &r->pool_lock);
    if (r->pool_quit)
      break;
    s->attached = 1;
    s->thread = self;
    s->attach_ns = now_ns();
    s->attach_cpu_ns = thread_cpu_ns(self);
    if (s->add_ns) {
      count_realloc(&r->ps[p], s->add_ns, s->attach_ns);
      s->add_ns = 0;
    }
    atomic_store_explicit(&s->state, SLOT_RUNNING, memory_order_release);
    pthread_mutex_unlock(&r->pool_lock);
    quit = stage_loop(r, p, s->w->slot);
    pthread_mutex_lock(&r->pool_lock);
    {
      uint64_t now = now_ns();
      pstage *ps = &r->ps[p];
      ps->worker_ns += now - s->attach_ns;
      ps->cpu_ns += thread_cpu_ns(self) - s->attach_cpu_ns;
      if (s->remove_ns) {
        count_realloc(ps, s->remove_ns, now);
        s->remove_ns = 0;
      }
    }
    s->attached = 0;
    atomic_store_explicit(&s->state, SLOT_IDLE, memory_order_release);
    if (quit)
      break;
  }
  pthread_mutex_unlock(&r->pool_lock);
  return NULL;
}

/*===- The controller
 * ------------------------------------------------------===*/

void netvm_dynamic_defaults(netvm_dynamic_policy *p) {
  if (!p->interval_us)
    p->interval_us = 100;
  if (!p->queue_up)
    p->queue_up = 256;
  if (!p->queue_down)
    p->queue_down = 16;
  if (!p->delay_up_us)
    p->delay_up_us = 500;
  if (!p->delay_down_us)
    p->delay_down_us = 50;
  if (!p->dwell_us)
    p->dwell_us = 2000;
}

uint32_t netvm_dynamic_decide(const netvm_dynamic_policy *policy, uint32_t pool,
                              const netvm_dynamic_observation *stages,
                              uint32_t count, uint32_t *targets) {
  uint64_t dwell = (uint64_t)policy->dwell_us * 1000u;
  uint64_t up_ns = (uint64_t)policy->delay_up_us * 1000u;
  uint64_t down_ns = (uint64_t)policy->delay_down_us * 1000u;
  uint32_t i, used = 0, changed = 0;
  for (i = 0; i < count; ++i) {
    targets[i] = stages[i].workers;
    used += stages[i].workers;
  }
  /* Stages that have been quiet for the dwell time give a worker back. */
  for (i = 0; i < count; ++i) {
    const netvm_dynamic_observation *o = &stages[i];
    if (o->workers > 1 && o->since_change_ns >= dwell && o->quiet_ns >= dwell &&
        o->queue <= policy->queue_down && o->oldest_ns <= down_ns) {
      --targets[i];
      --used;
    }
  }
  /* Busy stages get one, the one whose oldest message waited longest
   * first: from the free workers, else from a stage that is not busy. */
  for (;;) {
    uint32_t best = count, k, donor = count;
    for (i = 0; i < count; ++i) {
      const netvm_dynamic_observation *o = &stages[i];
      if (targets[i] != o->workers || o->since_change_ns < dwell ||
          o->workers >= o->max_workers ||
          (o->queue < policy->queue_up && o->oldest_ns < up_ns))
        continue;
      if (best == count || o->oldest_ns > stages[best].oldest_ns ||
          (o->oldest_ns == stages[best].oldest_ns &&
           o->queue > stages[best].queue))
        best = i;
    }
    if (best == count)
      break;
    if (used < pool) {
      ++targets[best];
      ++used;
      continue;
    }
    for (k = 0; k < count; ++k) {
      const netvm_dynamic_observation *o = &stages[k];
      if (k == best || targets[k] != o->workers || o->workers <= 1 ||
          o->since_change_ns < dwell || o->queue >= policy->queue_up ||
          o->oldest_ns >= up_ns)
        continue;
      if (donor == count || o->oldest_ns < stages[donor].oldest_ns)
        donor = k;
    }
    if (donor == count)
      break;
    --targets[donor];
    ++targets[best];
  }
  for (i = 0; i < count; ++i)
    changed += targets[i] != stages[i].workers;
  return changed;
}

/* One look at the dynamic stages and the policy's decision. */
static void control_step(netvm_runner *r) {
  netvm_dynamic_observation obs[64] = {{0}};
  uint32_t targets[64], which[64], n = 0, p, i;
  uint64_t now = now_ns();
  for (p = 1; p < r->stages && n < 64; ++p) {
    pstage *qs = &r->ps[p], *ps = &r->ps[p - 1];
    netvm_dynamic_observation *o = &obs[n];
    uint32_t j;
    if (!qs->managed)
      continue;
    memset(o, 0, sizeof(*o));
    o->workers = atomic_load(&qs->target);
    o->max_workers = qs->num_slots;
    o->since_change_ns = now - qs->last_change_ns;
    for (j = 0; j < ps->num_out; ++j) {
      ring *q = &ps->out[j];
      size_t head = atomic_load_explicit(&q->head, memory_order_acquire);
      size_t tail = atomic_load_explicit(&q->tail, memory_order_acquire);
      if (tail != head) {
        uint64_t at = atomic_load_explicit(&q->stamps[head & (RING_SLOTS - 1)],
                                           memory_order_relaxed);
        o->queue += tail - head;
        if (at && at < now && now - at > o->oldest_ns)
          o->oldest_ns = now - at;
      }
    }
    if (o->queue <= r->policy.queue_down &&
        o->oldest_ns <= (uint64_t)r->policy.delay_down_us * 1000u) {
      if (!qs->quiet_since_ns)
        qs->quiet_since_ns = now;
      o->quiet_ns = now - qs->quiet_since_ns;
    } else {
      qs->quiet_since_ns = 0;
    }
    which[n++] = p;
  }
  ++r->decisions;
  if (!netvm_dynamic_decide(&r->policy, r->pool_size, obs, n, targets))
    return;
  for (i = 0; i < n; ++i) {
    pstage *qs = &r->ps[which[i]];
    if (targets[i] == obs[i].workers)
      continue;
    pthread_mutex_lock(&r->pool_lock);
    if (targets[i] > obs[i].workers)
      qs->adds += targets[i] - obs[i].workers;
    else
      qs->removes += obs[i].workers - targets[i];
    r->changes += targets[i] > obs[i].workers ? targets[i] - obs[i].workers
                                              : obs[i].workers - targets[i];
    pthread_mutex_unlock(&r->pool_lock);
    qs->last_change_ns = now;
    atomic_store_explicit(&qs->decided_ns, now, memory_order_relaxed);
    atomic_store_explicit(&qs->target, targets[i], memory_order_release);
  }
}

static void *controller_main(void *arg) {
  netvm_runner *r = arg;
  struct timespec period;
  period.tv_sec = r->policy.interval_us / 1000000u;
  period.tv_nsec = (long)(r->policy.interval_us % 1000000u) * 1000;
  for (;;) {
    pthread_mutex_lock(&r->pool_lock);
    while (!r->controller_quit && !r->in_run)
      pthread_cond_wait(&r->controller_wake, &r->pool_lock);
    if (r->controller_quit) {
      pthread_mutex_unlock(&r->pool_lock);
      break;
    }
    pthread_mutex_unlock(&r->pool_lock);
    nanosleep(&period, NULL);
    control_step(r);
  }
  return NULL;
}

static void send_control(netvm_runner *r, uint32_t type, uint64_t sequence,
                         uint32_t drops, uint32_t unconnected) {
  netvm_worker *w = &r->replicas[0]->workers[0];
  pstage *ps = &r->ps[0];
  ring *q;
  message *m;
  if (type == MSG_DONE) {
    send_done(r, w, &ps->slots[0], sequence, drops, unconnected);
    return;
  }
  if (type == MSG_QUIT && ps->deals) {
    quit_slots(ps);
    return;
  }
  q = out_ring(r, w, sequence, NO_STAGE, NULL);
  m = ring_reserve(q);
  m->type = type;
  m->sequence = sequence;
  out_commit(r, w, q);
  ring_flush(q);
}

/* Wait until every stage has handled everything sent so far. */
static void pipeline_sync(netvm_runner *r) {
  unsigned spins = 0;
  uint64_t run;
  if (r->stages < 2)
    return;
  run = ++r->runs;
  send_control(r, MSG_END, run, 0, 0);
  while (atomic_load_explicit(&r->finished_runs, memory_order_acquire) != run)
    backoff(&spins);
}

static void run_pipeline(netvm_runner *r, uint32_t source,
                         netvm_packet *packets, size_t count) {
  netvm_instance *vm = r->replicas[0];
  netvm_worker *w = &vm->workers[0];
  netvm_exbuf *xb = &w->scratch;
  size_t i;
  w->packets += count;
  w->ctx.budget_reset = (int64_t)vm->budget;
  if (r->ps[0].logical == NO_STAGE && r->ps[1].key_pe != NO_STAGE) {
    /* The first stage is replicated by flow key: runs of packets of one
     * slot, up to PACKETS_PER_MESSAGE, each dealt to its bucket's slot. */
    pstage *ps = &r->ps[0];
    uint32_t key_pe = r->ps[1].key_pe, next = UINT32_MAX;
    netvm_exbuf k;
    memset(&k, 0, sizeof(k));
    for (i = 0; i < count;) {
      uint32_t first = 0, run = 0;
      while (i + run < count && run < PACKETS_PER_MESSAGE) {
        uint32_t bucket, target;
        if (run == 0 && next != UINT32_MAX) {
          /* The packet that ended the last run: its slot is known. */
          first = next;
          next = UINT32_MAX;
          ++run;
          continue;
        }
        k.packet = packets[i + run].data;
        k.length = k.capacity = packets[i + run].length;
        k.wire_length = packets[i + run].wire_length
                            ? packets[i + run].wire_length
                            : packets[i + run].length;
        k.seconds = packets[i + run].seconds;
        k.microseconds = packets[i + run].microseconds;
        k.sequence = r->sequence + i + run;
        bucket = flow_bucket(r, w, key_pe, &k);
        target = bucket == UINT32_MAX ? 0 : bucket % ps->active;
        if (run == 0) {
          first = target;
        } else if (target != first) {
          next = target;
          break;
        }
        ++run;
      }
      switch_to(ps, first);
      {
        ring *q = &ps->out[ps->cur];
        message *m = ring_reserve(q);
        m->type = MSG_PACKETS;
        m->a = source;
        m->b = run;
        m->packets = packets + i;
        m->sequence = r->sequence + i;
        ps->last_seq = m->sequence;
        out_commit(r, w, q);
      }
      i += run;
    }
  } else if (r->ps[0].logical == NO_STAGE) {
    /* The first stage is replicated: deal the packets to it. */
    for (i = 0; i < count; i += PACKETS_PER_MESSAGE) {
      uint64_t sequence = r->sequence + i;
      ring *q = out_ring(r, w, sequence, NO_STAGE, NULL);
      message *m = ring_reserve(q);
      m->type = MSG_PACKETS;
      m->a = source;
      m->b = (uint32_t)(count - i < PACKETS_PER_MESSAGE ? count - i
                                                        : PACKETS_PER_MESSAGE);
      m->packets = packets + i;
      m->sequence = sequence;
      out_commit(r, w, q);
    }
  } else if (!r->events || r->stages == 1) {
    xb->sequence = r->sequence;
    if (r->events && !r->outputs_only) {
      /* A single stage: events happen in order on this thread. */
      for (i = 0; i < count; ++i) {
        uint64_t drops = w->drops_total, unconnected = w->unconnected;
        w->sequence = xb->sequence = r->sequence + i;
        r->app->batches[source](&w->ctx, xb, packets + i, 1);
        deliver_done(r, w->sequence, (uint32_t)(w->drops_total - drops),
                     (uint32_t)(w->unconnected - unconnected));
      }
    } else {
      r->app->batches[source](&w->ctx, xb, packets, count);
    }
  } else {
    for (i = 0; i < count; ++i) {
      uint64_t drops = w->drops_total, unconnected = w->unconnected;
      w->sequence = xb->sequence = r->sequence + i;
      r->app->batches[source](&w->ctx, xb, packets + i, 1);
      send_control(r, MSG_DONE, w->sequence, (uint32_t)(w->drops_total - drops),
                   (uint32_t)(w->unconnected - unconnected));
    }
  }
  pipeline_sync(r);
}

/*===- Creation and the public API
 * -----------------------------------------===*/

static void *rtc_thread(void *arg) {
  netvm_runner *r = ((void **)arg)[0];
  uint32_t replica = (uint32_t)(uintptr_t)((void **)arg)[1];
  uint64_t seen = 0;
  free(arg);
  for (;;) {
    size_t chunks;
    pthread_mutex_lock(&r->lock);
    while (r->generation == seen && !r->quit)
      pthread_cond_wait(&r->wake, &r->lock);
    seen = r->generation;
    chunks = r->num_chunks; /* of run `seen`: written before it started */
    if (r->quit) {
      pthread_mutex_unlock(&r->lock);
      break;
    }
    pthread_mutex_unlock(&r->lock);
    rtc_work(r, replica, seen, chunks);
  }
  return NULL;
}

/* What makes NetPE `pe` keep state (so that replicas would diverge), or
 * NULL. */
static const char *state_kind(const netvm_pe_desc *pe) {
  uint32_t f = pe->flags & NETVM_PE_STATEFUL;
  return f & NETVM_PE_WRITES_DATA     ? "writes its data memory"
         : f & NETVM_PE_WRITES_SHARED ? "writes shared memory"
         : f & NETVM_PE_COPROCESSORS  ? "uses coprocessors"
         : f & NETVM_PE_RANDOM        ? "draws random numbers"
                                      : NULL;
}

/* Why replicas of `app` would not behave like one instance, or NULL. */
static const char *stateful_reason(const netvm_app_desc *app, char *buffer,
                                   size_t size) {
  uint32_t i;
  for (i = 0; i < app->num_pes; ++i) {
    const char *what = state_kind(&app->pes[i]);
    if (what) {
      snprintf(buffer, size,
               "NetPE '%s' %s: replicas would diverge, so run-to-completion "
               "uses one thread%s",
               app->pes[i].name, what,
               app->pes[i].flags & NETVM_PE_WRITES_SHARED
                   ? ""
                   : " (the pipeline mode can use more)");
      return buffer;
    }
  }
  return NULL;
}

static int touches_shared(const netvm_pe_desc *pe) {
  return (pe->flags & (NETVM_PE_READS_SHARED | NETVM_PE_WRITES_SHARED)) != 0;
}

static int plan_stages(netvm_runner *r, const netvm_runner_options *options,
                       char *error, size_t error_size) {
  const netvm_app_desc *app = r->app;
  uint32_t n = app->num_pes, i, first = n, last = 0, writers = 0;
  if (!(app->flags & NETVM_APP_FORWARDED_LINKS) || !app->pe_order) {
    snprintf(error, error_size,
             "pipeline mode needs the application compiled with forwarded "
             "links (netc --forward-links, netvm-run --pipeline)");
    return 0;
  }
  for (i = 0; i < n; ++i)
    if (app->pes[i].flags & NETVM_PE_PULL) {
      snprintf(error, error_size,
               "pipeline mode does not support pull ports (NetPE '%s')",
               app->pes[i].name);
      return 0;
    }
  /* Shared memory must stay on one thread: the NetPEs that use it, when
   * one of them writes it, go to one stage, and so does every NetPE
   * between them in the topological order (stages may not decrease). */
  for (i = 0; i < n; ++i) {
    const netvm_pe_desc *pe = &app->pes[app->pe_order[i]];
    writers += (pe->flags & NETVM_PE_WRITES_SHARED) != 0;
    if (touches_shared(pe)) {
      first = first < i ? first : i;
      last = i;
    }
  }
  if (!writers)
    first = n; /* reading alone is harmless */
  r->stage_of = calloc(n ? n : 1, sizeof(uint32_t));
  if (!r->stage_of)
    return 0;
  if (options->stage_of_pe) {
    uint32_t max = 0, prev = 0;
    for (i = 0; i < n; ++i) {
      uint32_t s = options->stage_of_pe[app->pe_order[i]];
      if (s < prev) {
        snprintf(error, error_size,
                 "stage %u of NetPE '%s' comes after stage %u of a NetPE "
                 "before it in topological order: stages must not decrease "
                 "along that order",
                 s, app->pes[app->pe_order[i]].name, prev);
        return 0;
      }
      if (s >= n) {
        snprintf(error, error_size,
                 "stage %u of NetPE '%s': there are only %u NetPEs", s,
                 app->pes[app->pe_order[i]].name, n);
        return 0;
      }
      if (first < n && i > first && i <= last &&
          s != options->stage_of_pe[app->pe_order[first]]) {
        snprintf(error, error_size,
                 "NetPEs '%s' and '%s' share memory that one of them "
                 "writes: they must be on the same stage",
                 app->pes[app->pe_order[first]].name,
                 app->pes[app->pe_order[i]].name);
        return 0;
      }
      prev = s;
      max = s > max ? s : max;
    }
    r->stages = max + 1;
    for (i = 0; i < n; ++i)
      r->stage_of[i] = options->stage_of_pe[i];
    return 1;
  }
  {
    /* Contiguous runs of the topological order, as even as possible, the
     * run [first, last] kept whole. Units: NetPEs, that run counting as
     * one. */
    uint32_t units = first < n ? n - (last - first) : n, unit = 0, stages;
    stages = r->threads < units ? r->threads : units;
    if (stages == 0)
      stages = 1;
    for (i = 0; i < n; ++i) {
      r->stage_of[app->pe_order[i]] =
          (uint32_t)((uint64_t)unit * stages / units);
      if (!(first < n && i >= first && i < last))
        ++unit;
    }
    r->stages = stages;
    if (first < n && last > first && stages < r->threads)
      snprintf(r->note, sizeof(r->note),
               "NetPEs '%s' to '%s' share memory and stay on one stage: %u "
               "stage%s",
               app->pes[app->pe_order[first]].name,
               app->pes[app->pe_order[last]].name, stages,
               stages == 1 ? "" : "s");
  }
  return 1;
}

#define MAX_REPLICAS 64u

/* Turn the caller's stages (r->stage_of, r->stages) and their replicas
 * into the stages the runner runs (r->ps), adding the stages with no
 * NetPEs that deal to and merge after replicated ones. */
static int build_stages(netvm_runner *r, const netvm_runner_options *options,
                        char *error, size_t error_size) {
  const netvm_app_desc *app = r->app;
  int extended = options->size >= sizeof(netvm_runner_options);
  const uint32_t *replicas = extended ? options->replicas_of_stage : NULL;
  const netvm_dynamic_policy *dynamic = extended ? options->dynamic : NULL;
  uint32_t L = r->stages, l, i, p, n = 0, total = 0;
  uint32_t *slots = calloc(L, sizeof(uint32_t));
  const char **why = calloc(L, sizeof(char *)); /* a stateful NetPE's name */
  uint32_t *why_pe = calloc(L, sizeof(uint32_t));
  uint32_t *key_pe = calloc(L, sizeof(uint32_t));
  int *managed = calloc(L, sizeof(int));
  int ok = 0;
  if (!slots || !why || !why_pe || !key_pe || !managed)
    goto done;
  if (replicas && !options->stage_of_pe) {
    snprintf(error, error_size,
             "replicas of stages need the stages (stage_of_pe) too");
    goto done;
  }
  /* A stage with state may still be replicated when its only NetPE with
   * state keeps it partitioned by a flow key (a key function, data memory
   * only) and comes first in the stage: no NetPE of the stage sends to
   * it, so the dealer sees every message for it. */
  for (l = 0; l < L; ++l)
    key_pe[l] = NO_STAGE;
  for (i = 0; i < app->num_pes; ++i) {
    uint32_t pe = app->pe_order[i], s = r->stage_of[pe];
    const char *what = state_kind(&app->pes[pe]);
    int first_of_stage = i == 0 || r->stage_of[app->pe_order[i - 1]] != s;
    if (what && !why[s] && key_pe[s] == NO_STAGE && first_of_stage &&
        app->pe_key && app->pe_key[pe] &&
        (app->pes[pe].flags & NETVM_PE_STATEFUL) == NETVM_PE_WRITES_DATA) {
      key_pe[s] = pe;
      continue;
    }
    if (what && !why[s]) {
      why[s] = key_pe[s] != NO_STAGE
                   ? "keeps state too (a stage replicated by flow key may "
                     "hold one NetPE with state)"
               : app->pe_key && app->pe_key[pe] && !first_of_stage
                   ? "writes its data memory by a flow key, but is not the "
                     "first NetPE of its stage (a stage replicated by flow "
                     "key must begin with it)"
                   : what;
      why_pe[s] = pe;
    }
  }
  for (l = 0; l < L; ++l) {
    slots[l] = replicas && replicas[l] ? replicas[l] : 1;
    if (slots[l] > MAX_REPLICAS) {
      snprintf(error, error_size,
               "stage %u: %u threads, at most %u are supported", l, slots[l],
               MAX_REPLICAS);
      goto done;
    }
    if (slots[l] > 1 && why[l]) {
      snprintf(error, error_size,
               "stage %u cannot run on %u threads: NetPE '%s' %s, and "
               "replicas of it would each see only part of the traffic",
               l, slots[l], app->pes[why_pe[l]].name, why[l]);
      goto done;
    }
  }
  if (dynamic) {
    uint32_t pool, initial = 0;
    const char *example = NULL;
    uint32_t example_pe = 0;
    r->policy = *dynamic;
    netvm_dynamic_defaults(&r->policy);
    for (l = 0; l < L; ++l) {
      int has_pe = 0;
      for (i = 0; i < app->num_pes; ++i)
        has_pe |= r->stage_of[i] == l;
      /* Flow-keyed stages keep their slots: moving a bucket to another
       * slot while a packet of it is in flight would break its order. */
      managed[l] = has_pe && !why[l] && key_pe[l] == NO_STAGE;
      r->managed += (uint32_t)managed[l];
      if (why[l] && !example) {
        example = why[l];
        example_pe = why_pe[l];
      } else if (has_pe && !why[l] && key_pe[l] != NO_STAGE && !example) {
        example = "keeps state partitioned by a flow key: its stage keeps a "
                  "fixed number of threads";
        example_pe = key_pe[l];
      }
      if (managed[l])
        initial += slots[l];
    }
    if (!r->managed) {
      snprintf(error, error_size,
               "dynamic allocation needs a stage whose NetPEs keep no state, "
               "and every stage has one that does (NetPE '%s' %s)",
               app->num_pes ? app->pes[example_pe].name : "",
               example ? example : "is missing");
      goto done;
    }
    pool = r->policy.workers ? r->policy.workers : initial + 1;
    if (pool < initial) {
      snprintf(error, error_size,
               "dynamic allocation: a pool of %u worker%s is smaller than "
               "the %u thread%s its %u stage%s start with",
               pool, pool == 1 ? "" : "s", initial, initial == 1 ? "" : "s",
               r->managed, r->managed == 1 ? "" : "s");
      goto done;
    }
    if (pool > MAX_REPLICAS) {
      snprintf(error, error_size,
               "dynamic allocation: %u workers, at most %u are supported", pool,
               MAX_REPLICAS);
      goto done;
    }
    r->policy.workers = pool;
    r->pool_size = pool;
    r->dynamic = 1;
  }
  /* Stages as run: a dealer before a replicated first stage, a merger
   * after a replicated last one and between two replicated ones. */
  r->ps = calloc(2 * L + 1, sizeof(pstage));
  r->ps_of_logical = calloc(L, sizeof(uint32_t));
  if (!r->ps || !r->ps_of_logical)
    goto done;
  for (p = 0; p < 2 * L + 1; ++p)
    r->ps[p].key_pe = NO_STAGE;
  for (l = 0; l < L; ++l) {
    int rep = slots[l] > 1 || managed[l];
    int prev_rep = l > 0 && (slots[l - 1] > 1 || managed[l - 1]);
    if (rep && (l == 0 || prev_rep))
      r->ps[n++].logical = NO_STAGE;
    r->ps_of_logical[l] = n;
    r->ps[n].logical = l;
    r->ps[n].replicated = rep;
    r->ps[n].managed = managed[l];
    r->ps[n].key_pe = rep ? key_pe[l] : NO_STAGE;
    r->ps[n].num_slots =
        managed[l] ? r->pool_size - (r->managed - 1) : slots[l];
    if (managed[l])
      atomic_store(&r->ps[n].target, slots[l]);
    else if (rep)
      r->pool_size += slots[l];
    ++n;
  }
  if (r->ps[n - 1].replicated)
    r->ps[n++].logical = NO_STAGE;
  for (p = 0; p < n; ++p) {
    if (!r->ps[p].num_slots)
      r->ps[p].num_slots = 1;
    total += r->ps[p].num_slots;
  }
  for (i = 0; i < app->num_pes; ++i)
    r->stage_of[i] = r->ps_of_logical[r->stage_of[i]];
  r->logical_stages = L;
  r->stages = n;
  ok = total > 0;
done:
  if (!ok && !error[0])
    snprintf(error, error_size, "out of memory");
  free(slots);
  free(why);
  free(why_pe);
  free(key_pe);
  free(managed);
  return ok;
}

/* Workers, rings and threads of a pipeline. */
static int start_pipeline(netvm_runner *r, char *error, size_t error_size) {
  netvm_instance *vm = r->replicas[0];
  uint32_t p, j, k = 0;
  for (p = 0; p < r->stages; ++p) {
    pstage *ps = &r->ps[p];
    ps->slots = calloc(ps->num_slots, sizeof(slot));
    if (!ps->slots)
      return 0;
    for (j = 0; j < ps->num_slots; ++j) {
      slot *sl = &ps->slots[j];
      netvm_worker *w = &vm->workers[k++];
      sl->w = w;
      w->stage = p;
      w->slot = j;
      w->pipeline = &r->pipeline;
      if (ps->replicated) {
        /* Private counters of runs and sends: the replicas of a NetPE
         * run at once. Its memories are shared, and only read. */
        uint32_t n = r->app->num_pes;
        sl->pes = calloc(n ? n : 1, sizeof(netvm_pe_state));
        if (!sl->pes)
          return 0;
        memcpy(sl->pes, vm->pes, n * sizeof(netvm_pe_state));
        for (n = 0; n < r->app->num_pes; ++n)
          sl->pes[n].runs = sl->pes[n].sent = 0;
        w->ctx.pes = sl->pes;
      }
    }
    if (ps->managed)
      ps->active = atomic_load(&ps->target);
    else
      ps->active = ps->num_slots;
    for (j = 0; ps->replicated && j < ps->active; ++j)
      atomic_store(&ps->slots[j].state, SLOT_WANTED);
  }
  for (p = 0; p + 1 < r->stages; ++p) {
    pstage *ps = &r->ps[p], *qs = &r->ps[p + 1];
    ps->deals = qs->replicated;
    ps->active = ps->deals ? qs->active : ps->active;
    ps->num_out = ps->num_slots > qs->num_slots ? ps->num_slots : qs->num_slots;
    ps->out = calloc(ps->num_out, sizeof(ring));
    if (!ps->out)
      return 0;
    for (j = 0; j < ps->num_out; ++j) {
      if (!(ps->out[j].slots = calloc(RING_SLOTS, sizeof(message))))
        return 0;
      if (qs->managed && !(ps->out[j].stamps = calloc(
                               RING_SLOTS, sizeof(atomic_uint_fast64_t))))
        return 0;
    }
  }
  r->threads = 1 + r->pool_size;
  for (p = 1; p < r->stages; ++p) {
    pstage *ps = &r->ps[p];
    if (ps->replicated)
      continue;
    if (pthread_create(&ps->tid, NULL, stage_main, ps->slots[0].w)) {
      snprintf(error, error_size, "cannot start a pipeline thread");
      return 0;
    }
    ps->has_thread = 1;
    ps->started_ns = now_ns();
    ++r->threads;
  }
  r->pool = calloc(r->pool_size ? r->pool_size : 1, sizeof(pthread_t));
  if (!r->pool)
    return 0;
  for (j = 0; j < r->pool_size; ++j) {
    if (pthread_create(&r->pool[j], NULL, pool_main, r)) {
      snprintf(error, error_size, "cannot start a pool thread");
      return 0;
    }
    r->pool_started = j + 1;
  }
  if (r->dynamic) {
    uint64_t now = now_ns();
    for (p = 0; p < r->stages; ++p)
      r->ps[p].last_change_ns = now;
    if (pthread_create(&r->controller, NULL, controller_main, r)) {
      snprintf(error, error_size, "cannot start the controller thread");
      return 0;
    }
    r->has_controller = 1;
  }
  r->pipeline_started = 1;
  return 1;
}

netvm_runner *netvm_runner_create(const netvm_app_desc *app,
                                  const netvm_runner_options *options,
                                  char *error, size_t error_size) {
  netvm_runner *r = calloc(1, sizeof(*r));
  uint32_t i, workers = 1;
  if (!r) {
    snprintf(error, error_size, "out of memory");
    return NULL;
  }
  r->app = app;
  r->mode = options->mode;
  r->threads = options->threads ? options->threads : 1;
  r->batch = options->batch ? options->batch : 256;
  pthread_mutex_init(&r->lock, NULL);
  pthread_cond_init(&r->wake, NULL);
  pthread_mutex_init(&r->flush_lock, NULL);
  pthread_mutex_init(&r->pool_lock, NULL);
  pthread_cond_init(&r->pool_wake, NULL);
  pthread_cond_init(&r->controller_wake, NULL);
  r->pipeline.runner = r;
  if (error_size)
    error[0] = 0;
  if (app && app->abi_version == NETVM_ABI_VERSION) {
    if (r->mode == NETVM_RUN_PIPELINE) {
      if (!plan_stages(r, options, error, error_size) ||
          !build_stages(r, options, error, error_size))
        goto fail;
      for (i = 0, workers = 0; i < r->stages; ++i)
        workers += r->ps[i].num_slots;
      r->num_replicas = 1;
    } else {
      char reason[256];
      if (r->threads > 1 && stateful_reason(app, reason, sizeof(reason))) {
        snprintf(r->note, sizeof(r->note), "%s", reason);
        r->threads = 1;
      }
      r->num_replicas = r->threads;
    }
  } else {
    r->num_replicas = 1;
  }
  r->replicas = calloc(r->num_replicas, sizeof(*r->replicas));
  r->recorders = calloc(r->num_replicas, sizeof(*r->recorders));
  if (!r->replicas || !r->recorders) {
    snprintf(error, error_size, "out of memory");
    goto fail;
  }
  for (i = 0; i < r->num_replicas; ++i) {
    r->replicas[i] =
        netvm_instance_create_workers(app, workers, error, error_size);
    if (!r->replicas[i])
      goto fail;
    netvm_instance_set_watchdog(
        r->replicas[i], options->watchdog ? options->watchdog : (1u << 20));
    r->recorders[i].runner = r;
  }
  r->tids = calloc(r->threads, sizeof(pthread_t));
  if (!r->tids)
    goto fail;
  if (r->mode == NETVM_RUN_PIPELINE) {
    if (!start_pipeline(r, error, error_size)) {
      if (!error[0])
        snprintf(error, error_size, "out of memory");
      goto fail;
    }
  } else {
    for (i = 1; i < r->num_replicas; ++i) {
      void **arg = malloc(2 * sizeof(void *));
      if (!arg)
        goto fail;
      arg[0] = r;
      arg[1] = (void *)(uintptr_t)i;
      if (pthread_create(&r->tids[i], NULL, rtc_thread, arg)) {
        free(arg);
        snprintf(error, error_size, "cannot start a worker thread");
        goto fail;
      }
      r->started = i;
    }
  }
  return r;
fail:
  netvm_runner_destroy(r);
  return NULL;
}

/* Stop a pipeline's threads and free its stages. */
static void stop_pipeline(netvm_runner *r) {
  uint32_t p, j;
  size_t k;
  if (!r->ps)
    return;
  if (r->has_controller) {
    pthread_mutex_lock(&r->pool_lock);
    r->controller_quit = 1;
    pthread_cond_broadcast(&r->controller_wake);
    pthread_mutex_unlock(&r->pool_lock);
    pthread_join(r->controller, NULL);
  }
  /* The end travels through every stage (one that did not start would
   * never pass it on: then only the pool is stopped, by its flag). */
  if (r->pipeline_started && r->stages > 1)
    send_control(r, MSG_QUIT, 0, 0, 0);
  for (p = 1; p < r->stages; ++p)
    if (r->ps[p].has_thread)
      pthread_join(r->ps[p].tid, NULL);
  pthread_mutex_lock(&r->pool_lock);
  r->pool_quit = 1;
  pthread_cond_broadcast(&r->pool_wake);
  pthread_mutex_unlock(&r->pool_lock);
  for (j = 0; j < r->pool_started; ++j)
    pthread_join(r->pool[j], NULL);
  for (p = 0; p < r->stages; ++p) {
    pstage *ps = &r->ps[p];
    for (j = 0; ps->out && j < ps->num_out; ++j) {
      for (k = 0; ps->out[j].slots && k < RING_SLOTS; ++k)
        netvm_exbuf_release_storage(&ps->out[j].slots[k].xb);
      free(ps->out[j].slots);
      free(ps->out[j].stamps);
    }
    for (j = 0; ps->slots && j < ps->num_slots; ++j)
      free(ps->slots[j].pes);
    free(ps->out);
    free(ps->slots);
  }
  free(r->ps);
  free(r->ps_of_logical);
  free(r->pool);
}

void netvm_runner_destroy(netvm_runner *r) {
  uint32_t i;
  size_t k;
  if (!r)
    return;
  if (r->mode == NETVM_RUN_PIPELINE) {
    stop_pipeline(r);
  } else if (r->started) {
    pthread_mutex_lock(&r->lock);
    r->quit = 1;
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->lock);
    for (i = 1; i <= r->started; ++i)
      pthread_join(r->tids[i], NULL);
  }
  for (i = 0; r->replicas && i < r->num_replicas; ++i)
    netvm_instance_destroy(r->replicas[i]);
  for (k = 0; k < r->chunk_capacity; ++k)
    log_free(&r->chunks[k].log);
  free(r->chunks);
  free(r->replicas);
  free(r->recorders);
  free(r->tids);
  free(r->stage_of);
  pthread_mutex_destroy(&r->lock);
  pthread_cond_destroy(&r->wake);
  pthread_mutex_destroy(&r->flush_lock);
  pthread_mutex_destroy(&r->pool_lock);
  pthread_cond_destroy(&r->pool_wake);
  pthread_cond_destroy(&r->controller_wake);
  free(r);
}

void netvm_runner_set_events(netvm_runner *r, netvm_event_fn fn, void *user) {
  uint32_t i;
  r->events = fn;
  r->events_user = user;
  r->outputs_only = 0;
  if (r->mode != NETVM_RUN_PIPELINE)
    return;
  for (i = 0; i < r->replicas[0]->num_workers; ++i) {
    netvm_worker *w = &r->replicas[0]->workers[i];
    w->events_wanted = fn != NULL;
    netvm_worker_update_hooks(w);
  }
}

void netvm_runner_set_output_events(netvm_runner *r, netvm_event_fn fn,
                                    void *user) {
  netvm_runner_set_events(r, fn, user);
  r->outputs_only = fn != NULL;
}

void netvm_runner_init(netvm_runner *r) {
  uint32_t i;
  for (i = 0; i < r->num_replicas; ++i) {
    netvm_instance *vm = r->replicas[i];
    netvm_worker *w = &vm->workers[0];
    /* Init handlers of replicas other than the first report nothing:
     * they do exactly what the first one does. */
    struct netvm_recorder *rec = &r->recorders[i];
    rec->log = NULL;
    w->sequence = NETVM_SEQUENCE_INIT;
    if (i == 0 && r->events && r->mode != NETVM_RUN_PIPELINE) {
      w->recorder = rec;
      netvm_worker_update_hooks(w);
    }
    netvm_instance_init(vm);
    w->recorder = NULL;
    netvm_worker_update_hooks(w);
  }
  if (r->mode == NETVM_RUN_PIPELINE)
    pipeline_sync(r);
}

void netvm_runner_run(netvm_runner *r, uint32_t source, netvm_packet *packets,
                      size_t count) {
  if (!count)
    return;
  if (source >= r->app->num_sources) {
    netvm_worker *w = &r->replicas[0]->workers[0];
    w->packets += count;
    w->unconnected += count;
    r->sequence += count;
    return;
  }
  if (r->mode == NETVM_RUN_PIPELINE) {
    uint64_t started = now_ns();
    if (r->has_controller) {
      pthread_mutex_lock(&r->pool_lock);
      r->in_run = 1;
      pthread_cond_broadcast(&r->controller_wake);
      pthread_mutex_unlock(&r->pool_lock);
    }
    run_pipeline(r, source, packets, count);
    if (r->has_controller) {
      pthread_mutex_lock(&r->pool_lock);
      r->in_run = 0;
      pthread_mutex_unlock(&r->pool_lock);
    }
    r->run_ns += now_ns() - started;
  } else
    run_to_completion(r, source, packets, count);
  r->sequence += count;
}

uint32_t netvm_runner_threads(const netvm_runner *r) { return r->threads; }
const char *netvm_runner_note(const netvm_runner *r) { return r->note; }
uint32_t netvm_runner_replicas(const netvm_runner *r) {
  return r->num_replicas;
}
netvm_instance *netvm_runner_instance(netvm_runner *r, uint32_t i) {
  return i < r->num_replicas ? r->replicas[i] : NULL;
}

void netvm_runner_counters(const netvm_runner *r, netvm_counters *out) {
  uint32_t i, k;
  memset(out, 0, sizeof(*out));
  for (i = 0; i < r->num_replicas; ++i) {
    netvm_counters c;
    netvm_instance_counters(r->replicas[i], &c);
    out->packets += c.packets;
    out->dropped += c.dropped;
    out->unconnected += c.unconnected;
    for (k = 0; k < NETVM_EXC_KINDS; ++k)
      out->exceptions[k] += c.exceptions[k];
  }
}

void netvm_runner_pe_counters(const netvm_runner *r, uint32_t pe,
                              netvm_pe_counters *out) {
  uint32_t i;
  memset(out, 0, sizeof(*out));
  for (i = 0; i < r->num_replicas; ++i) {
    netvm_pe_counters c;
    netvm_instance_pe_counters(r->replicas[i], pe, &c);
    out->runs += c.runs;
    out->sent += c.sent;
    out->dropped += c.dropped;
    out->exceptions += c.exceptions;
  }
  for (i = 0; r->ps && i < r->stages; ++i) {
    uint32_t j;
    for (j = 0; r->ps[i].replicated && j < r->ps[i].num_slots; ++j)
      if (pe < r->app->num_pes) {
        out->runs += r->ps[i].slots[j].pes[pe].runs;
        out->sent += r->ps[i].slots[j].pes[pe].sent;
      }
  }
}

void netvm_runner_sink_counters(const netvm_runner *r, uint32_t sink,
                                uint64_t *packets, uint64_t *bytes) {
  uint32_t i;
  *packets = *bytes = 0;
  for (i = 0; i < r->num_replicas; ++i) {
    uint64_t p, b;
    netvm_instance_sink_counters(r->replicas[i], sink, &p, &b);
    *packets += p;
    *bytes += b;
  }
}

/*===- Pipeline statistics
 * --------------------------------------------------===*/

uint32_t netvm_runner_stages(const netvm_runner *r) {
  return r->mode == NETVM_RUN_PIPELINE ? r->logical_stages : 0;
}

/* Add stage `p`'s threads to `out` (under the pool lock). */
static void add_stage_stats(const netvm_runner *r, uint32_t p,
                            netvm_stage_stats *out) {
  const pstage *ps = &r->ps[p];
  uint64_t now = now_ns();
  uint32_t j;
  out->adds += ps->adds;
  out->removes += ps->removes;
  out->reallocations += ps->reallocs;
  out->realloc_ns_total += ps->realloc_total;
  if (ps->realloc_max > out->realloc_ns_max)
    out->realloc_ns_max = ps->realloc_max;
  out->worker_ns += ps->worker_ns;
  out->cpu_ns += ps->cpu_ns;
  for (j = 0; j < ps->num_slots; ++j) {
    const slot *sl = &ps->slots[j];
    out->messages += atomic_load_explicit(&((slot *)(uintptr_t)sl)->messages,
                                          memory_order_relaxed);
    if (sl->attached) {
      out->worker_ns += now - sl->attach_ns;
      out->cpu_ns += thread_cpu_ns(sl->thread) - sl->attach_cpu_ns;
    }
  }
  if (ps->has_thread) { /* held for the runner's life */
    out->worker_ns += now - ps->started_ns;
    out->cpu_ns += thread_cpu_ns(ps->tid);
  } else if (!ps->replicated) { /* the caller's, while it runs packets */
    out->worker_ns += r->run_ns;
  }
}

void netvm_runner_stage_stats(const netvm_runner *r, uint32_t stage,
                              netvm_stage_stats *out) {
  netvm_runner *m = (netvm_runner *)(uintptr_t)r; /* the lock */
  uint32_t p, q;
  memset(out, 0, sizeof(*out));
  if (r->mode != NETVM_RUN_PIPELINE || stage >= r->logical_stages)
    return;
  p = r->ps_of_logical[stage];
  for (q = 0; p > 0 && q < r->ps[p - 1].num_out; ++q) {
    ring *in = &r->ps[p - 1].out[q];
    size_t head = atomic_load_explicit(&in->head, memory_order_acquire);
    out->queued += atomic_load_explicit(&in->tail, memory_order_acquire) - head;
  }
  pthread_mutex_lock(&m->pool_lock);
  add_stage_stats(r, p, out);
  /* The stages the runner added to merge after this one count with it
   * (the dealer before a replicated first stage is the caller's). */
  for (q = p + 1; q < r->stages && r->ps[q].logical == NO_STAGE; ++q)
    add_stage_stats(r, q, out);
  pthread_mutex_unlock(&m->pool_lock);
  {
    const pstage *ps = &r->ps[p];
    out->dynamic = (uint32_t)ps->managed;
    out->max_workers = ps->num_slots;
    if (!ps->replicated) {
      out->workers = 1;
    } else {
      uint32_t j;
      for (j = 0; j < ps->num_slots; ++j)
        out->workers +=
            atomic_load(&((slot *)(uintptr_t)&ps->slots[j])->state) !=
            SLOT_IDLE;
    }
  }
}

void netvm_runner_controller_stats(const netvm_runner *r,
                                   netvm_controller_stats *out) {
  netvm_runner *m = (netvm_runner *)(uintptr_t)r;
  memset(out, 0, sizeof(*out));
  if (!r->has_controller)
    return;
  pthread_mutex_lock(&m->pool_lock);
  out->pool = r->pool_size;
  out->stages = r->managed;
  out->decisions = r->decisions;
  out->changes = r->changes;
  pthread_mutex_unlock(&m->pool_lock);
  out->cpu_ns = thread_cpu_ns(r->controller);
}

/*===- Parsing plans and policies
 * ---------------------------------------------===*/

static int parse_uint(const char **p, uint32_t *value) {
  uint64_t v = 0;
  const char *s = *p;
  if (*s < '0' || *s > '9')
    return 0;
  while (*s >= '0' && *s <= '9') {
    v = v * 10 + (uint64_t)(*s++ - '0');
    if (v > 0xFFFFFFFFu)
      return 0;
  }
  *value = (uint32_t)v;
  *p = s;
  return 1;
}

int netvm_parse_stages(const netvm_app_desc *app, const char *spec,
                       uint32_t *stage_of_pe, uint32_t *replicas_of_stage,
                       uint32_t *stages, char *error, size_t error_size) {
  const char *p = spec;
  uint32_t stage = 0, i, n = app->num_pes;
  for (i = 0; i < n; ++i) {
    stage_of_pe[i] = UINT32_MAX;
    replicas_of_stage[i] = 1;
  }
  for (;;) {
    /* A stage: names separated by ',', then ':N' maybe. */
    if (stage >= n) {
      snprintf(error, error_size,
               "'%s': more stages than the %u NetPEs of the application", spec,
               n);
      return 0;
    }
    for (;;) {
      const char *start = p;
      size_t length;
      while (*p == ' ')
        ++p;
      start = p;
      while (*p && *p != ',' && *p != ';' && *p != ':' && *p != ' ')
        ++p;
      length = (size_t)(p - start);
      while (*p == ' ')
        ++p;
      if (!length) {
        snprintf(error, error_size,
                 "'%s': stage %u: expected a NetPE name at '%s'", spec, stage,
                 start);
        return 0;
      }
      for (i = 0; i < n; ++i)
        if (strlen(app->pes[i].name) == length &&
            !strncmp(app->pes[i].name, start, length))
          break;
      if (i == n) {
        size_t used = (size_t)snprintf(
            error, error_size, "'%s': the application has no NetPE '%.*s' (",
            spec, (int)length, start);
        for (i = 0; i < n && used < error_size; ++i)
          used += (size_t)snprintf(error + used, error_size - used, "%s%s",
                                   i ? ", " : "its NetPEs: ", app->pes[i].name);
        if (used < error_size)
          snprintf(error + used, error_size - used, ")");
        return 0;
      }
      if (stage_of_pe[i] != UINT32_MAX) {
        snprintf(error, error_size, "'%s': NetPE '%s' is named twice", spec,
                 app->pes[i].name);
        return 0;
      }
      stage_of_pe[i] = stage;
      if (*p != ',')
        break;
      ++p;
    }
    if (*p == ':') {
      ++p;
      if (!parse_uint(&p, &replicas_of_stage[stage]) ||
          !replicas_of_stage[stage]) {
        snprintf(error, error_size,
                 "'%s': stage %u: expected a number of threads (>= 1) after "
                 "':'",
                 spec, stage);
        return 0;
      }
      while (*p == ' ')
        ++p;
    }
    ++stage;
    if (!*p)
      break;
    if (*p != ';') {
      snprintf(error, error_size, "'%s': expected ';' or ',' at '%s'", spec, p);
      return 0;
    }
    ++p;
  }
  for (i = 0; i < n; ++i)
    if (stage_of_pe[i] == UINT32_MAX) {
      snprintf(error, error_size, "'%s': NetPE '%s' is on no stage", spec,
               app->pes[i].name);
      return 0;
    }
  *stages = stage;
  return 1;
}

int netvm_parse_dynamic_policy(const char *spec, netvm_dynamic_policy *policy,
                               char *error, size_t error_size) {
  static const struct {
    const char *key;
    size_t offset;
    int time;
  } keys[] = {
      {"workers", offsetof(netvm_dynamic_policy, workers), 0},
      {"interval", offsetof(netvm_dynamic_policy, interval_us), 1},
      {"queue-up", offsetof(netvm_dynamic_policy, queue_up), 0},
      {"queue-down", offsetof(netvm_dynamic_policy, queue_down), 0},
      {"delay-up", offsetof(netvm_dynamic_policy, delay_up_us), 1},
      {"delay-down", offsetof(netvm_dynamic_policy, delay_down_us), 1},
      {"dwell", offsetof(netvm_dynamic_policy, dwell_us), 1},
  };
  const char *p = spec;
  while (*p) {
    const char *key = p;
    size_t length, k;
    uint32_t value;
    while (*p && *p != '=' && *p != ',')
      ++p;
    length = (size_t)(p - key);
    for (k = 0; k < sizeof(keys) / sizeof(keys[0]); ++k)
      if (strlen(keys[k].key) == length && !strncmp(keys[k].key, key, length))
        break;
    if (k == sizeof(keys) / sizeof(keys[0]) || *p != '=') {
      snprintf(error, error_size,
               "'%s': unknown setting '%.*s' (workers, interval, queue-up, "
               "queue-down, delay-up, delay-down, dwell)",
               spec, (int)length, key);
      return 0;
    }
    ++p;
    if (!parse_uint(&p, &value)) {
      snprintf(error, error_size, "'%s': '%.*s' needs a number", spec,
               (int)length, key);
      return 0;
    }
    if (keys[k].time && !strncmp(p, "ms", 2)) {
      p += 2;
      value *= 1000u;
    } else if (keys[k].time && !strncmp(p, "us", 2)) {
      p += 2;
    } else if (keys[k].time && *p == 's' && (p[1] == ',' || !p[1])) {
      ++p;
      value *= 1000000u;
    }
    if (*p && *p != ',') {
      snprintf(error, error_size, "'%s': unexpected '%s'", spec, p);
      return 0;
    }
    if (*p)
      ++p;
    *(uint32_t *)((char *)policy + keys[k].offset) = value;
  }
  return 1;
}
