/*===- runtime.c - The native runtime of compiled NetVM applications -------===*
 *
 * Implements the netvm_rt_* functions generated code calls (abi.h) and the
 * instance API hosts use (runtime.h). An instance owns the memories and
 * coprocessors of one copy of the application and one or more workers (see
 * internal.h); generated code receives a worker's netvm_ctx. Plain C11.
 *
 *===----------------------------------------------------------------------===*/

#include "internal.h"
#include "netvm/semantics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*===- Exchange buffers
 * ----------------------------------------------------===*/

/* Grow the allocation `*memory` of `*capacity` bytes to hold `length`. */
static int grow(uint8_t **memory, uint32_t *capacity, uint32_t length) {
  uint32_t size = *capacity ? *capacity : 64;
  uint8_t *grown;
  if (length <= *capacity)
    return 1;
  while (size < length)
    size *= 2;
  grown = realloc(*memory, size);
  if (!grown)
    return 0;
  *memory = grown;
  *capacity = size;
  return 1;
}

/* Make room for `length` bytes of packet in `xb`. Borrowed packets (the
 * host's memory) are never reallocated: the worker's spare buffer takes
 * their place, and the buffer keeps the BORROWED flag (its packet memory is
 * still not its own). */
static int exbuf_reserve(netvm_worker *w, netvm_exbuf *xb, uint32_t length) {
  if (xb->flags & NETVM_XB_BORROWED) {
    if (!grow(&w->spare, &w->spare_capacity, length))
      return 0;
    xb->packet = w->spare;
    xb->capacity = w->spare_capacity;
    return 1;
  }
  return grow(&xb->packet, &xb->capacity, length);
}

static int exbuf_info(netvm_worker *w, netvm_exbuf *xb) {
  uint32_t size = w->vm->app->info_size;
  if (!xb->info && size && !(xb->info = calloc(size, 1)))
    return 0;
  return 1;
}

int netvm_exbuf_fill(netvm_worker *w, netvm_exbuf *xb, const uint8_t *bytes,
                     uint32_t length) {
  if (!exbuf_reserve(w, xb, length ? length : 1) || !exbuf_info(w, xb))
    return 0;
  if (bytes)
    memmove(xb->packet, bytes, length);
  else
    memset(xb->packet, 0, length);
  xb->length = xb->wire_length = length;
  if (xb->info)
    memset(xb->info, 0, w->vm->app->info_size);
  xb->info_length = w->vm->app->info_size;
  xb->flags &= ~(uint32_t)NETVM_XB_NONE;
  return 1;
}

int netvm_exbuf_copy(netvm_worker *w, netvm_exbuf *to,
                     const netvm_exbuf *from) {
  if (!exbuf_reserve(w, to, from->length ? from->length : 1) ||
      !exbuf_info(w, to))
    return 0;
  memcpy(to->packet, from->packet, from->length);
  to->length = from->length;
  to->wire_length = from->wire_length;
  if (from->info_length)
    memcpy(to->info, from->info, from->info_length);
  to->info_length = from->info_length;
  to->seconds = from->seconds;
  to->microseconds = from->microseconds;
  to->sequence = from->sequence;
  to->flags = (to->flags & (NETVM_XB_CLONE | NETVM_XB_BORROWED)) |
              (from->flags & NETVM_XB_NONE);
  return 1;
}

void netvm_exbuf_release_storage(netvm_exbuf *xb) {
  if (!(xb->flags & NETVM_XB_BORROWED))
    free(xb->packet);
  free(xb->info);
  xb->packet = NULL;
  xb->info = NULL;
  xb->capacity = 0;
}

void netvm_worker_release(netvm_worker *w, netvm_exbuf *xb) {
  if (!(xb->flags & NETVM_XB_CLONE))
    return; /* the worker's own buffers stay where they are */
  if (w->pool_size == w->pool_capacity) {
    uint32_t capacity = w->pool_capacity ? 2 * w->pool_capacity : 8;
    netvm_exbuf **grown = realloc(w->pool, capacity * sizeof(*grown));
    if (!grown) {
      netvm_exbuf_release_storage(xb);
      free(xb);
      return;
    }
    w->pool = grown;
    w->pool_capacity = capacity;
  }
  w->pool[w->pool_size++] = xb;
}

/*===- Called by generated code
 * --------------------------------------------===*/

void netvm_rt_emit(netvm_ctx *ctx, uint32_t sink, netvm_exbuf *xb) {
  netvm_worker *w = netvm_worker_of(ctx);
  netvm_instance *vm = w->vm;
  w->sink_stats[2 * sink]++;
  w->sink_stats[2 * sink + 1] += xb->length;
  if (!((w->pipeline || w->recorder) && netvm_runner_on_emit(w, sink, xb)) &&
      vm->output)
    vm->output(vm->output_user, sink, xb);
  netvm_worker_release(w, xb);
}

void netvm_rt_drop(netvm_ctx *ctx, uint32_t pe, netvm_exbuf *xb) {
  netvm_worker *w = netvm_worker_of(ctx);
  if (pe < w->vm->app->num_pes)
    w->pe_drops[pe]++;
  w->drops_total++;
  netvm_worker_release(w, xb);
}

void netvm_rt_discard(netvm_ctx *ctx, uint32_t pe, const netvm_exbuf *xb) {
  netvm_worker *w = netvm_worker_of(ctx);
  if (xb->flags & NETVM_XB_NONE)
    return;
  if (pe < w->vm->app->num_pes)
    w->pe_drops[pe]++;
  w->drops_total++;
}

void netvm_rt_unconnected(netvm_ctx *ctx, uint32_t pe, netvm_exbuf *xb) {
  netvm_worker *w = netvm_worker_of(ctx);
  (void)pe;
  w->unconnected++;
  netvm_worker_release(w, xb);
}

void netvm_rt_exception(netvm_ctx *ctx, uint32_t kind, uint32_t site,
                        netvm_exbuf *xb) {
  netvm_worker *w = netvm_worker_of(ctx);
  netvm_instance *vm = w->vm;
  const netvm_site *where =
      site < vm->app->num_sites ? &vm->app->sites[site] : NULL;
  if (kind < NETVM_EXC_KINDS)
    w->exceptions[kind]++;
  if (where && where->pe < vm->app->num_pes) {
    uint32_t j;
    w->pe_exceptions[where->pe]++;
    for (j = 0; j < vm->app->pes[where->pe].num_coprocessors; ++j)
      netvm_copro_abandon(vm->pes[where->pe].coprocessors[j]);
  }
  if (!((w->pipeline || w->recorder) &&
        netvm_runner_on_exception(w, kind, where)) &&
      vm->on_exception) {
    /* Set only for the hook: pipeline stages raise exceptions at once. */
    vm->exception_sequence = xb ? xb->sequence : w->sequence;
    vm->on_exception(vm->exception_user, kind, where);
  }
  if (xb)
    netvm_worker_release(w, xb);
}

void netvm_worker_count(netvm_worker *w, uint32_t verdict,
                        const netvm_exbuf *xb) {
  if (verdict == NETVM_VERDICT_NONE)
    return;
  if (verdict & NETVM_VERDICT_DROP) {
    uint32_t pe = verdict & ~NETVM_VERDICT_DROP;
    if (pe < w->vm->app->num_pes)
      w->pe_drops[pe]++;
    w->drops_total++;
    return;
  }
  if (verdict - NETVM_VERDICT_SINK < w->vm->app->num_sinks) {
    uint32_t sink = verdict - NETVM_VERDICT_SINK;
    w->sink_stats[2 * sink]++;
    w->sink_stats[2 * sink + 1] += xb->length;
  }
}

void netvm_rt_forward(netvm_ctx *ctx, uint32_t to, uint32_t port,
                      netvm_exbuf *xb) {
  netvm_worker *w = netvm_worker_of(ctx);
  if (w->pipeline) {
    netvm_runner_forward(w, to, port, xb);
    return;
  }
  netvm_worker_count(w, w->vm->app->pe_push[to](ctx, xb, port), xb);
}

netvm_exbuf *netvm_rt_clone(netvm_ctx *ctx, const netvm_exbuf *xb) {
  netvm_worker *w = netvm_worker_of(ctx);
  netvm_exbuf *copy;
  if (w->pool_size)
    copy = w->pool[--w->pool_size];
  else if (!(copy = calloc(1, sizeof(*copy))))
    abort(); /* out of memory in the middle of a packet: nothing sane left */
  copy->flags = NETVM_XB_CLONE;
  if (!netvm_exbuf_copy(w, copy, xb))
    abort();
  return copy;
}

int netvm_rt_exbuf_create(netvm_ctx *ctx, netvm_exbuf *xb, uint32_t size) {
  netvm_worker *w = netvm_worker_of(ctx);
  if (size > NETVM_MAX_PACKET || !netvm_exbuf_fill(w, xb, NULL, size))
    return 0;
  xb->seconds = xb->microseconds = 0;
  return 1;
}

void netvm_rt_pull_source(netvm_ctx *ctx, uint32_t source, netvm_exbuf *xb) {
  netvm_worker *w = netvm_worker_of(ctx);
  netvm_instance *vm = w->vm;
  if (vm->source && vm->source(vm->source_user, source, xb))
    return;
  xb->flags |= NETVM_XB_NONE;
  xb->length = 0;
  xb->info_length = 0;
  xb->seconds = xb->microseconds = 0;
}

uint32_t netvm_rt_hash(const uint32_t *words, uint32_t count) {
  return netvm_hash_words(words, count);
}
uint32_t netvm_rt_checksum(const uint8_t *data, uint32_t length) {
  return netvm_checksum(data, length);
}
/* CRC-32 and CRC-32C, eight bytes at a time (Intel's slicing-by-8): the
 * same values as semantics.h's bitwise reference, several times faster.
 * crc_tables[kind][k][b] is the CRC register after byte b followed by k
 * zero bytes. Filled once (pthread_once). */
static uint32_t crc_tables[2][8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_fill(void) {
  uint32_t kind, b, k;
  for (kind = 0; kind < 2; ++kind) {
    uint32_t poly = kind == NETVM_CRC32 ? 0xEDB88320u : 0x82F63B78u;
    for (b = 0; b < 256; ++b) {
      uint32_t crc = b;
      int bit;
      for (bit = 0; bit < 8; ++bit)
        crc = (crc >> 1) ^ (poly & (0u - (crc & 1u)));
      crc_tables[kind][0][b] = crc;
    }
    for (k = 1; k < 8; ++k)
      for (b = 0; b < 256; ++b) {
        uint32_t prev = crc_tables[kind][k - 1][b];
        crc_tables[kind][k][b] = (prev >> 8) ^ crc_tables[kind][0][prev & 0xFF];
      }
  }
}

uint32_t netvm_rt_crc(uint32_t kind, const uint8_t *data, uint32_t length) {
  const uint32_t (*t)[256];
  uint32_t crc = 0xFFFFFFFFu;
  if (kind > 1)
    return netvm_crc(kind, data, length);
  pthread_once(&crc_once, crc_fill);
  t = crc_tables[kind];
  for (; length >= 8; data += 8, length -= 8) {
    uint32_t lo = crc ^ ((uint32_t)data[0] | (uint32_t)data[1] << 8 |
                         (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24);
    crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^
          t[4][lo >> 24] ^ t[3][data[4]] ^ t[2][data[5]] ^ t[1][data[6]] ^
          t[0][data[7]];
  }
  for (; length; ++data, --length)
    crc = (crc >> 8) ^ t[0][(crc ^ *data) & 0xFF];
  return crc ^ 0xFFFFFFFFu;
}
uint32_t netvm_rt_crc_word(uint32_t kind, uint32_t word) {
  return netvm_crc_word(kind, word);
}

uint32_t netvm_rt_pscan(const uint8_t *packet, uint32_t length, uint32_t from,
                        uint32_t value, uint32_t width) {
  uint64_t at;
  for (at = from; at + width <= length; ++at) {
    uint32_t v = 0, i;
    for (i = 0; i < width; ++i)
      v = (v << 8) | packet[at + i];
    if (v == value)
      return (uint32_t)at;
  }
  return 0xFFFFFFFFu;
}

int32_t netvm_rt_memcmp(const uint8_t *a, const uint8_t *b, uint32_t length) {
  int c = length ? memcmp(a, b, length) : 0;
  return c < 0 ? -1 : c > 0 ? 1 : 0;
}

/*===- Workers
 * -------------------------------------------------------------===*/

static int worker_init(netvm_instance *vm, netvm_worker *w, uint32_t stage) {
  const netvm_app_desc *app = vm->app;
  w->vm = vm;
  w->stage = stage;
  w->sink_stats = calloc(2 * (size_t)app->num_sinks + 2, sizeof(uint64_t));
  w->pe_drops = calloc(app->num_pes + 1, sizeof(uint64_t));
  w->pe_exceptions = calloc(app->num_pes + 1, sizeof(uint64_t));
  if (!w->sink_stats || !w->pe_drops || !w->pe_exceptions)
    return 0;
  if (app->info_size && !(w->scratch.info = calloc(app->info_size, 1)))
    return 0;
  w->ctx.pes = vm->pes;
  w->ctx.shared = vm->shared;
  w->ctx.runtime = w;
  w->ctx.sink_stats = w->sink_stats;
  w->ctx.pe_drops = w->pe_drops;
  netvm_worker_update_hooks(w);
  return 1;
}

static void worker_destroy(netvm_worker *w) {
  uint32_t i;
  for (i = 0; i < w->pool_size; ++i) {
    netvm_exbuf_release_storage(w->pool[i]);
    free(w->pool[i]);
  }
  free(w->pool);
  free(w->input.packet);
  free(w->input.info);
  free(w->scratch.info);
  free(w->spare);
  free(w->sink_stats);
  free(w->pe_drops);
  free(w->pe_exceptions);
}

void netvm_worker_update_hooks(netvm_worker *w) {
  w->ctx.hooks = (w->vm->output || w->recorder || w->events_wanted) ? 1u : 0u;
}

void netvm_worker_push_batch(netvm_worker *w, uint32_t source,
                             netvm_packet *packets, size_t count) {
  netvm_instance *vm = w->vm;
  const netvm_app_desc *app = vm->app;
  netvm_exbuf *xb = &w->scratch;
  w->packets += count;
  if (source >= app->num_sources) {
    w->unconnected += count;
    return;
  }
  xb->sequence = vm->sequence;
  vm->sequence += count;
  w->ctx.budget_reset = (int64_t)vm->budget;
  app->batches[source](&w->ctx, xb, packets, count);
}

/*===- Instances
 * -----------------------------------------------------------===*/

netvm_instance *netvm_instance_create_workers(const netvm_app_desc *app,
                                              uint32_t workers, char *error,
                                              size_t error_size) {
  netvm_instance *vm;
  uint32_t i, j;
  if (!app || app->abi_version != NETVM_ABI_VERSION) {
    snprintf(error, error_size,
             "the application was compiled for ABI version %u, this runtime "
             "implements version %u",
             app ? app->abi_version : 0u, NETVM_ABI_VERSION);
    return NULL;
  }
  vm = calloc(1, sizeof(*vm));
  if (!vm)
    goto oom;
  vm->app = app;
  vm->budget = 1u << 20;
  vm->sources = app->sources;
  vm->num_sources = app->num_sources;
  vm->info_size = app->info_size;
  for (i = 0; i < app->num_pes; ++i)
    if ((app->pes[i].flags & NETVM_PE_WRITES_INFO) && app->info_size)
      vm->clear_info = 1;
  vm->pes = calloc(app->num_pes ? app->num_pes : 1, sizeof(netvm_pe_state));
  vm->shared = calloc(app->shared_size ? app->shared_size : 1, 1);
  vm->workers = calloc(workers ? workers : 1, sizeof(netvm_worker));
  if (!vm->pes || !vm->shared || !vm->workers)
    goto oom_vm;
  for (i = 0; i < app->num_pes; ++i) {
    const netvm_pe_desc *pe = &app->pes[i];
    netvm_pe_state *st = &vm->pes[i];
    st->random = NETVM_RANDOM_SEED;
    st->data = calloc(pe->data_size ? pe->data_size : 1, 1);
    st->coprocessors =
        calloc(pe->num_coprocessors ? pe->num_coprocessors : 1, sizeof(void *));
    if (!st->data || !st->coprocessors)
      goto oom_vm;
    for (j = 0; j < pe->num_coprocessors; ++j) {
      st->coprocessors[j] = netvm_copro_create(pe->coprocessors[j]);
      if (!st->coprocessors[j]) {
        snprintf(error, error_size,
                 "NetPE '%s' uses coprocessor '%s', which this runtime does "
                 "not provide",
                 pe->name, pe->coprocessors[j]);
        netvm_instance_destroy(vm);
        return NULL;
      }
    }
  }
  for (i = 0; i < (workers ? workers : 1); ++i) {
    ++vm->num_workers;
    if (!worker_init(vm, &vm->workers[i], i))
      goto oom_vm;
  }
  return vm;
oom_vm:
  netvm_instance_destroy(vm);
oom:
  snprintf(error, error_size, "out of memory instantiating the application");
  return NULL;
}

netvm_instance *netvm_instance_create(const netvm_app_desc *app, char *error,
                                      size_t error_size) {
  return netvm_instance_create_workers(app, 1, error, error_size);
}

void netvm_instance_destroy(netvm_instance *vm) {
  uint32_t i, j;
  if (!vm)
    return;
  for (i = 0; vm->pes && i < vm->app->num_pes; ++i) {
    if (vm->pes[i].coprocessors)
      for (j = 0; j < vm->app->pes[i].num_coprocessors; ++j)
        netvm_copro_destroy(vm->pes[i].coprocessors[j]);
    free(vm->pes[i].coprocessors);
    free(vm->pes[i].data);
  }
  for (i = 0; i < vm->num_workers; ++i)
    worker_destroy(&vm->workers[i]);
  free(vm->workers);
  free(vm->pes);
  free(vm->shared);
  free(vm);
}

const netvm_app_desc *netvm_instance_app(const netvm_instance *vm) {
  return vm->app;
}

void netvm_instance_set_output(netvm_instance *vm, netvm_output_fn fn,
                               void *user) {
  uint32_t i;
  vm->output = fn;
  vm->output_user = user;
  for (i = 0; i < vm->num_workers; ++i)
    netvm_worker_update_hooks(&vm->workers[i]);
}
void netvm_instance_set_exception_hook(netvm_instance *vm,
                                       netvm_exception_fn fn, void *user) {
  vm->on_exception = fn;
  vm->exception_user = user;
}
void netvm_instance_set_source(netvm_instance *vm, netvm_source_fn fn,
                               void *user) {
  vm->source = fn;
  vm->source_user = user;
}
void netvm_instance_set_watchdog(netvm_instance *vm, uint64_t budget) {
  vm->budget = budget > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : budget;
}

void netvm_instance_init(netvm_instance *vm) {
  netvm_worker *w = &vm->workers[0];
  w->ctx.budget = (int64_t)vm->budget;
  vm->app->init(&w->ctx);
}

void netvm_instance_push(netvm_instance *vm, uint32_t source,
                         const uint8_t *packet, uint32_t length,
                         uint32_t seconds, uint32_t microseconds) {
  netvm_worker *w = &vm->workers[0];
  netvm_exbuf *xb = &w->input;
  w->packets++;
  xb->flags = netvm_worker_listened(w);
  if (source >= vm->app->num_sources ||
      !netvm_exbuf_fill(w, xb, packet, length)) {
    w->unconnected++;
    return;
  }
  xb->seconds = seconds;
  xb->microseconds = microseconds;
  xb->sequence = w->sequence = vm->sequence++;
  w->ctx.budget = (int64_t)vm->budget;
  vm->app->sources[source](&w->ctx, xb);
}

/* One packet straight into the source's entry, no loop to set up, its
 * info memory zeros or `info`. Everything comes from `vm` and `w`
 * directly: a host calling this per packet pays for few dependent loads. */
static void push_one(netvm_instance *vm, uint32_t source,
                     const netvm_packet *packet, const uint8_t *info,
                     uint32_t info_length) {
  netvm_worker *w = vm->workers;
  netvm_exbuf *xb = &w->scratch;
  w->packets++;
  xb->packet = packet->data;
  xb->length = xb->capacity = packet->length;
  xb->wire_length = packet->wire_length ? packet->wire_length : packet->length;
  xb->seconds = packet->seconds;
  xb->microseconds = packet->microseconds;
  xb->flags = NETVM_XB_BORROWED | netvm_worker_listened(w);
  xb->info_length = vm->info_size;
  if (info) {
    uint32_t n = info_length < vm->info_size ? info_length : vm->info_size;
    memcpy(xb->info, info, n);
    memset(xb->info + n, 0, vm->info_size - n);
  } else if (vm->clear_info) {
    memset(xb->info, 0, vm->info_size);
  }
  xb->sequence = vm->sequence++;
  w->ctx.budget = (int64_t)vm->budget;
  vm->sources[source](&w->ctx, xb);
  if (info && !vm->clear_info) /* later packets expect zeros there */
    memset(xb->info, 0, vm->info_size);
}

void netvm_instance_push_batch(netvm_instance *vm, uint32_t source,
                               netvm_packet *packets, size_t count) {
  if (count == 1 && source < vm->num_sources) {
    push_one(vm, source, packets, NULL, 0);
    return;
  }
  netvm_worker_push_batch(vm->workers, source, packets, count);
}

void netvm_instance_push_info(netvm_instance *vm, uint32_t source,
                              netvm_packet *packet, const uint8_t *info,
                              uint32_t info_length) {
  if (source < vm->num_sources)
    push_one(vm, source, packet, info, info_length);
}

uint64_t netvm_instance_next_sequence(const netvm_instance *vm) {
  return vm->sequence;
}

uint64_t netvm_instance_exception_sequence(const netvm_instance *vm) {
  return vm->exception_sequence;
}

int netvm_instance_pull(netvm_instance *vm, uint32_t sink) {
  netvm_worker *w = &vm->workers[0];
  netvm_exbuf *xb = &w->input;
  uint64_t before;
  if (sink >= vm->app->num_sinks || !vm->app->sink_pulls[sink])
    return 0;
  before = w->sink_stats[2 * sink];
  xb->flags = NETVM_XB_NONE | netvm_worker_listened(w);
  xb->sequence = w->sequence = vm->sequence++;
  w->ctx.budget = (int64_t)vm->budget;
  vm->app->sink_pulls[sink](&w->ctx, xb);
  return w->sink_stats[2 * sink] != before;
}

int netvm_exbuf_assign(netvm_instance *vm, netvm_exbuf *xb,
                       const uint8_t *packet, uint32_t length, uint32_t seconds,
                       uint32_t microseconds) {
  netvm_worker *w = &vm->workers[0];
  if (!netvm_exbuf_fill(w, xb, packet, length))
    return 0;
  xb->seconds = seconds;
  xb->microseconds = microseconds;
  w->packets++;
  return 1;
}

uint8_t *netvm_instance_data(netvm_instance *vm, uint32_t pe, uint32_t *size) {
  if (pe >= vm->app->num_pes) {
    *size = 0;
    return NULL;
  }
  *size = vm->app->pes[pe].data_size;
  return vm->pes[pe].data;
}

netvm_copro *netvm_instance_coprocessor(netvm_instance *vm, uint32_t pe,
                                        const char *name) {
  uint32_t i;
  if (pe >= vm->app->num_pes)
    return NULL;
  for (i = 0; i < vm->app->pes[pe].num_coprocessors; ++i)
    if (strcmp(vm->app->pes[pe].coprocessors[i], name) == 0)
      return vm->pes[pe].coprocessors[i];
  return NULL;
}

uint8_t *netvm_instance_shared(netvm_instance *vm, uint32_t *size) {
  *size = vm->app->shared_size;
  return vm->shared;
}

void netvm_instance_counters(const netvm_instance *vm, netvm_counters *out) {
  uint32_t i, k;
  memset(out, 0, sizeof(*out));
  for (i = 0; i < vm->num_workers; ++i) {
    const netvm_worker *w = &vm->workers[i];
    out->packets += w->packets;
    out->unconnected += w->unconnected;
    for (k = 0; k < vm->app->num_pes; ++k)
      out->dropped += w->pe_drops[k];
    for (k = 0; k < NETVM_EXC_KINDS; ++k)
      out->exceptions[k] += w->exceptions[k];
  }
}

void netvm_instance_pe_counters(const netvm_instance *vm, uint32_t pe,
                                netvm_pe_counters *out) {
  uint32_t i;
  memset(out, 0, sizeof(*out));
  if (pe >= vm->app->num_pes)
    return;
  out->runs = vm->pes[pe].runs;
  out->sent = vm->pes[pe].sent;
  for (i = 0; i < vm->num_workers; ++i) {
    out->dropped += vm->workers[i].pe_drops[pe];
    out->exceptions += vm->workers[i].pe_exceptions[pe];
  }
}

void netvm_instance_sink_counters(const netvm_instance *vm, uint32_t sink,
                                  uint64_t *packets, uint64_t *bytes) {
  uint32_t i;
  *packets = *bytes = 0;
  if (sink >= vm->app->num_sinks)
    return;
  for (i = 0; i < vm->num_workers; ++i) {
    *packets += vm->workers[i].sink_stats[2 * sink];
    *bytes += vm->workers[i].sink_stats[2 * sink + 1];
  }
}

const char *netvm_exception_name(uint32_t kind) {
  static const char *const names[NETVM_EXC_KINDS] = {
      "packet_bounds", "info_bounds",     "data_bounds",
      "shared_bounds", "initdata_bounds", "division_by_zero",
      "watchdog",      "coprocessor",     "no_exbuf",
      "exit"};
  return kind < NETVM_EXC_KINDS ? names[kind] : "unknown";
}

const char *netvm_handler_name(uint32_t handler) {
  static const char *const names[NETVM_HANDLER_KINDS] = {"init", "push",
                                                         "pull"};
  return handler < NETVM_HANDLER_KINDS ? names[handler] : "unknown";
}
