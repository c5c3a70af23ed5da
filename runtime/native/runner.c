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
 * on the caller's thread, stage s on thread s. Stage s passes messages to
 * stage s+1 through a single-producer/single-consumer ring: exchange
 * buffers for NetPEs of later stages (netvm_rt_forward), and, when events
 * are wanted, outputs, exceptions and end-of-packet marks, which travel to
 * the last stage and are delivered there. Every ring is FIFO and every
 * stage handles its messages in order, so each NetPE sees packets in
 * arrival order and events leave in the order one instance produces them.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include "internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
  MSG_QUIT       /* the runner is going away */
};

typedef struct message {
  uint32_t type, a, b;
  uint32_t drops, unconnected;
  int64_t budget;
  uint64_t sequence;
  netvm_exbuf xb; /* owned by the slot */
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
  _Alignas(CACHE_LINE) char pad;
} ring;

/* Waiting: spin briefly, then yield, then sleep; a stage thread with nothing
 * to do costs little. */
static void backoff(unsigned *spins) {
  ++*spins;
  if (*spins < 128) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
    return;
  }
  if (*spins < 4096) { /* the other side may share this CPU: let it run */
    sched_yield();
    return;
  }
  {
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
}

/* Make everything filled so far visible to the consumer. */
static void ring_flush(ring *q) {
  atomic_store_explicit(&q->tail, q->filled, memory_order_release);
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
    q->tail_seen = atomic_load_explicit(&q->tail, memory_order_acquire);
    if (q->tail_seen != head)
      break;
    backoff(&spins);
  }
  return &q->slots[head & (RING_SLOTS - 1)];
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

  /* Pipeline. */
  struct netvm_pipeline pipeline;
  uint32_t *stage_of;
  ring *rings; /* rings[s]: stage s to stage s+1 */
  uint32_t stages;
  atomic_uint_fast64_t finished_runs;
  uint64_t runs;
  uint32_t *pending_drops, *pending_unconnected; /* per stage */
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

static void stage_send(netvm_worker *w, message *m);

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
      message *m = ring_reserve(&r->rings[w->stage]);
      m->type = type == NETVM_EVENT_OUTPUT ? MSG_OUTPUT : MSG_EXCEPTION;
      m->a = index;
      m->b = site ? (uint32_t)(site - r->app->sites) + 1 : 0;
      m->sequence = sequence;
      m->xb.flags = 0;
      if (xb && !netvm_exbuf_copy(w, &m->xb, xb))
        abort();
      stage_send(w, m);
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
  if (r->stage_of[to] <= w->stage) {
    netvm_worker_count(w, r->app->pe_push[to](&w->ctx, xb, port), xb);
    return;
  }
  m = ring_reserve(&r->rings[w->stage]);
  m->type = MSG_FORWARD;
  m->a = to;
  m->b = port;
  m->budget = w->ctx.budget;
  m->sequence = xb->sequence;
  m->xb.flags = 0;
  if (!netvm_exbuf_copy(w, &m->xb, xb))
    abort();
  stage_send(w, m);
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

static void stage_send(netvm_worker *w, message *m) {
  (void)m;
  ring_commit(&w->pipeline->runner->rings[w->stage]);
}

/* Pass message `m` (consumed from the previous ring) to the next stage,
 * swapping exchange-buffer storage instead of copying it. */
static void pass_on(netvm_runner *r, uint32_t stage, message *m) {
  message *out = ring_reserve(&r->rings[stage]);
  netvm_exbuf spare = out->xb;
  out->type = m->type;
  out->a = m->a;
  out->b = m->b;
  out->drops = m->drops;
  out->unconnected = m->unconnected;
  out->budget = m->budget;
  out->sequence = m->sequence;
  out->xb = m->xb;
  m->xb = spare;
  ring_commit(&r->rings[stage]);
  if (m->type == MSG_END || m->type == MSG_QUIT)
    ring_flush(&r->rings[stage]);
}

static void *stage_main(void *arg) {
  netvm_worker *w = arg;
  netvm_runner *r = w->pipeline->runner;
  uint32_t s = w->stage;
  int last = s + 1 == r->stages;
  ring *in = &r->rings[s - 1];
  for (;;) {
    message *m = ring_front(in);
    uint32_t type = m->type;
    switch (type) {
    case MSG_FORWARD:
      if (r->stage_of[m->a] != s) {
        pass_on(r, s, m);
        break;
      }
      {
        uint64_t drops = w->drops_total, unconnected = w->unconnected;
        w->sequence = m->sequence;
        w->ctx.budget = m->budget;
        m->xb.flags = (m->xb.flags & NETVM_XB_NONE) | netvm_worker_listened(w);
        netvm_worker_count(w, r->app->pe_push[m->a](&w->ctx, &m->xb, m->b),
                           &m->xb);
        r->pending_drops[s] += (uint32_t)(w->drops_total - drops);
        r->pending_unconnected[s] += (uint32_t)(w->unconnected - unconnected);
      }
      break;
    case MSG_OUTPUT:
      if (last)
        deliver_output(r, m->a, m->sequence, &m->xb);
      else
        pass_on(r, s, m);
      break;
    case MSG_EXCEPTION:
      if (last)
        deliver_exception(r, m->a, m->sequence,
                          m->b ? &r->app->sites[m->b - 1] : NULL);
      else
        pass_on(r, s, m);
      break;
    case MSG_DONE:
      m->drops += r->pending_drops[s];
      m->unconnected += r->pending_unconnected[s];
      r->pending_drops[s] = r->pending_unconnected[s] = 0;
      if (last)
        deliver_done(r, m->sequence, m->drops, m->unconnected);
      else
        pass_on(r, s, m);
      break;
    case MSG_END:
      if (last)
        atomic_store_explicit(&r->finished_runs, m->sequence,
                              memory_order_release);
      else
        pass_on(r, s, m);
      break;
    case MSG_QUIT:
      if (!last)
        pass_on(r, s, m);
      break;
    }
    ring_pop(in);
    if (type == MSG_QUIT)
      break;
  }
  return NULL;
}

static void send_control(netvm_runner *r, uint32_t type, uint64_t sequence,
                         uint32_t drops, uint32_t unconnected) {
  message *m = ring_reserve(&r->rings[0]);
  m->type = type;
  m->sequence = sequence;
  m->drops = drops;
  m->unconnected = unconnected;
  ring_commit(&r->rings[0]);
  if (type == MSG_END || type == MSG_QUIT)
    ring_flush(&r->rings[0]);
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
  if (!r->events || r->stages == 1) {
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

/* Why replicas of `app` would not behave like one instance, or NULL. */
static const char *stateful_reason(const netvm_app_desc *app, char *buffer,
                                   size_t size) {
  uint32_t i;
  for (i = 0; i < app->num_pes; ++i) {
    uint32_t f = app->pes[i].flags & NETVM_PE_STATEFUL;
    const char *what = f & NETVM_PE_WRITES_DATA     ? "writes its data memory"
                       : f & NETVM_PE_WRITES_SHARED ? "writes shared memory"
                       : f & NETVM_PE_COPROCESSORS  ? "uses coprocessors"
                       : f & NETVM_PE_RANDOM        ? "draws random numbers"
                                                    : NULL;
    if (what) {
      snprintf(buffer, size,
               "NetPE '%s' %s: replicas would diverge, so run-to-completion "
               "uses one thread%s",
               app->pes[i].name, what,
               f & NETVM_PE_WRITES_SHARED
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
  r->pipeline.runner = r;
  if (app && app->abi_version == NETVM_ABI_VERSION) {
    if (r->mode == NETVM_RUN_PIPELINE) {
      if (!plan_stages(r, options, error, error_size))
        goto fail;
      workers = r->stages;
      r->threads = r->stages;
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
    netvm_instance *vm = r->replicas[0];
    r->pending_drops = calloc(r->stages, sizeof(uint32_t));
    r->pending_unconnected = calloc(r->stages, sizeof(uint32_t));
    r->rings = calloc(r->stages, sizeof(ring));
    if (!r->pending_drops || !r->pending_unconnected || !r->rings)
      goto fail;
    for (i = 0; i + 1 < r->stages; ++i)
      if (!(r->rings[i].slots = calloc(RING_SLOTS, sizeof(message))))
        goto fail;
    for (i = 0; i < r->stages; ++i)
      vm->workers[i].pipeline = &r->pipeline;
    for (i = 1; i < r->stages; ++i) {
      if (pthread_create(&r->tids[i], NULL, stage_main, &vm->workers[i])) {
        snprintf(error, error_size, "cannot start a pipeline thread");
        goto fail;
      }
      r->started = i;
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

void netvm_runner_destroy(netvm_runner *r) {
  uint32_t i;
  size_t k;
  if (!r)
    return;
  if (r->started) {
    if (r->mode == NETVM_RUN_PIPELINE) {
      send_control(r, MSG_QUIT, 0, 0, 0);
    } else {
      pthread_mutex_lock(&r->lock);
      r->quit = 1;
      pthread_cond_broadcast(&r->wake);
      pthread_mutex_unlock(&r->lock);
    }
    for (i = 1; i <= r->started; ++i)
      pthread_join(r->tids[i], NULL);
  }
  if (r->rings) {
    for (i = 0; i + 1 < r->stages; ++i) {
      for (k = 0; r->rings[i].slots && k < RING_SLOTS; ++k)
        netvm_exbuf_release_storage(&r->rings[i].slots[k].xb);
      free(r->rings[i].slots);
    }
    free(r->rings);
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
  free(r->pending_drops);
  free(r->pending_unconnected);
  pthread_mutex_destroy(&r->lock);
  pthread_cond_destroy(&r->wake);
  pthread_mutex_destroy(&r->flush_lock);
  free(r);
}

void netvm_runner_set_events(netvm_runner *r, netvm_event_fn fn, void *user) {
  uint32_t i;
  r->events = fn;
  r->events_user = user;
  r->outputs_only = 0;
  if (r->mode != NETVM_RUN_PIPELINE)
    return;
  for (i = 0; i < r->stages; ++i) {
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
  if (r->mode == NETVM_RUN_PIPELINE)
    run_pipeline(r, source, packets, count);
  else
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
