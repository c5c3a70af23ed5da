/*===- runtime.c - The native runtime of compiled NetVM applications -------===*
 *
 * Implements the netvm_rt_* functions generated code calls (abi.h) and the
 * instance API hosts use (runtime.h). One instance = one netvm_ctx plus the
 * memories, coprocessors, an exchange buffer for incoming packets, a pool of
 * buffers for fan-out clones, and counters. Plain C11.
 *
 *===----------------------------------------------------------------------===*/

#include "netvm/runtime.h"
#include "netvm/semantics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest packet an exchange buffer may hold (exbuf.create). */
#define NETVM_MAX_PACKET 65536u

struct netvm_instance {
  netvm_ctx ctx; /* first: generated code sees only this part */
  const netvm_app_desc *app;
  netvm_pe_state *pes;
  uint8_t **data;
  uint8_t *shared;
  netvm_exbuf input;        /* the buffer packets are pushed in with */
  netvm_exbuf **pool;       /* free clones */
  uint32_t pool_size, pool_capacity;
  uint64_t budget;
  uint64_t sequence;
  netvm_output_fn output;
  void *output_user;
  netvm_exception_fn on_exception;
  void *exception_user;
  netvm_source_fn source;
  void *source_user;
  netvm_counters counters;
  uint64_t *pe_dropped, *pe_exceptions;
  uint64_t *sink_packets, *sink_bytes;
};

static netvm_instance *instance_of(netvm_ctx *ctx) {
  return (netvm_instance *)ctx; /* ctx is the first member */
}

/*===- Exchange buffers ----------------------------------------------------===*/

static int exbuf_reserve(netvm_exbuf *xb, uint32_t length) {
  if (length > xb->capacity) {
    uint32_t capacity = xb->capacity ? xb->capacity : 64;
    uint8_t *grown;
    while (capacity < length)
      capacity *= 2;
    grown = realloc(xb->packet, capacity);
    if (!grown)
      return 0;
    xb->packet = grown;
    xb->capacity = capacity;
  }
  return 1;
}

/* (Re)initialise `xb` with `length` bytes (copied from `bytes`, or zero). */
static int exbuf_fill(netvm_instance *vm, netvm_exbuf *xb, const uint8_t *bytes,
                      uint32_t length) {
  if (!exbuf_reserve(xb, length ? length : 1))
    return 0;
  if (bytes)
    memcpy(xb->packet, bytes, length);
  else
    memset(xb->packet, 0, length);
  xb->length = length;
  if (!xb->info && vm->app->info_size) {
    xb->info = calloc(vm->app->info_size, 1);
    if (!xb->info)
      return 0;
  } else if (xb->info) {
    memset(xb->info, 0, vm->app->info_size);
  }
  xb->info_length = vm->app->info_size;
  xb->flags &= ~(uint32_t)NETVM_XB_NONE;
  return 1;
}

static void exbuf_free(netvm_exbuf *xb) {
  free(xb->packet);
  free(xb->info);
  free(xb);
}

static void release(netvm_instance *vm, netvm_exbuf *xb) {
  if (!(xb->flags & NETVM_XB_CLONE))
    return; /* the input buffer belongs to the instance */
  if (vm->pool_size == vm->pool_capacity) {
    uint32_t capacity = vm->pool_capacity ? 2 * vm->pool_capacity : 8;
    netvm_exbuf **grown = realloc(vm->pool, capacity * sizeof(*grown));
    if (!grown) {
      exbuf_free(xb);
      return;
    }
    vm->pool = grown;
    vm->pool_capacity = capacity;
  }
  vm->pool[vm->pool_size++] = xb;
}

/*===- Called by generated code --------------------------------------------===*/

void netvm_rt_emit(netvm_ctx *ctx, uint32_t sink, netvm_exbuf *xb) {
  netvm_instance *vm = instance_of(ctx);
  vm->sink_packets[sink]++;
  vm->sink_bytes[sink] += xb->length;
  if (vm->output)
    vm->output(vm->output_user, sink, xb);
  release(vm, xb);
}

void netvm_rt_drop(netvm_ctx *ctx, uint32_t pe, netvm_exbuf *xb) {
  netvm_instance *vm = instance_of(ctx);
  vm->counters.dropped++;
  if (pe < vm->app->num_pes)
    vm->pe_dropped[pe]++;
  release(vm, xb);
}

void netvm_rt_discard(netvm_ctx *ctx, uint32_t pe, const netvm_exbuf *xb) {
  netvm_instance *vm = instance_of(ctx);
  if (xb->flags & NETVM_XB_NONE)
    return;
  vm->counters.dropped++;
  if (pe < vm->app->num_pes)
    vm->pe_dropped[pe]++;
}

void netvm_rt_unconnected(netvm_ctx *ctx, uint32_t pe, netvm_exbuf *xb) {
  netvm_instance *vm = instance_of(ctx);
  (void)pe;
  vm->counters.unconnected++;
  release(vm, xb);
}

void netvm_rt_exception(netvm_ctx *ctx, uint32_t kind, uint32_t site,
                        netvm_exbuf *xb) {
  netvm_instance *vm = instance_of(ctx);
  const netvm_site *where =
      site < vm->app->num_sites ? &vm->app->sites[site] : NULL;
  if (kind < NETVM_EXC_KINDS)
    vm->counters.exceptions[kind]++;
  if (where && where->pe < vm->app->num_pes)
    vm->pe_exceptions[where->pe]++;
  if (vm->on_exception)
    vm->on_exception(vm->exception_user, kind, where);
  if (xb)
    release(vm, xb);
}

netvm_exbuf *netvm_rt_clone(netvm_ctx *ctx, const netvm_exbuf *xb) {
  netvm_instance *vm = instance_of(ctx);
  netvm_exbuf *copy;
  if (vm->pool_size)
    copy = vm->pool[--vm->pool_size];
  else if (!(copy = calloc(1, sizeof(*copy))))
    abort(); /* out of memory in the middle of a packet: nothing sane left */
  copy->flags = NETVM_XB_CLONE | (xb->flags & NETVM_XB_NONE);
  if (!exbuf_reserve(copy, xb->length ? xb->length : 1))
    abort();
  memcpy(copy->packet, xb->packet, xb->length);
  copy->length = xb->length;
  if (!copy->info && vm->app->info_size &&
      !(copy->info = calloc(vm->app->info_size, 1)))
    abort();
  if (xb->info_length)
    memcpy(copy->info, xb->info, xb->info_length);
  copy->info_length = xb->info_length;
  copy->seconds = xb->seconds;
  copy->microseconds = xb->microseconds;
  copy->sequence = xb->sequence;
  return copy;
}

int netvm_rt_exbuf_create(netvm_ctx *ctx, netvm_exbuf *xb, uint32_t size) {
  netvm_instance *vm = instance_of(ctx);
  if (size > NETVM_MAX_PACKET || !exbuf_fill(vm, xb, NULL, size))
    return 0;
  xb->seconds = xb->microseconds = 0;
  return 1;
}

void netvm_rt_pull_source(netvm_ctx *ctx, uint32_t source, netvm_exbuf *xb) {
  netvm_instance *vm = instance_of(ctx);
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
uint32_t netvm_rt_crc(uint32_t kind, const uint8_t *data, uint32_t length) {
  return netvm_crc(kind, data, length);
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

/*===- Instances -----------------------------------------------------------===*/

netvm_instance *netvm_instance_create(const netvm_app_desc *app, char *error,
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
  vm->pes = calloc(app->num_pes ? app->num_pes : 1, sizeof(netvm_pe_state));
  vm->pe_dropped = calloc(app->num_pes + 1, sizeof(uint64_t));
  vm->pe_exceptions = calloc(app->num_pes + 1, sizeof(uint64_t));
  vm->sink_packets = calloc(app->num_sinks + 1, sizeof(uint64_t));
  vm->sink_bytes = calloc(app->num_sinks + 1, sizeof(uint64_t));
  vm->shared = calloc(app->shared_size ? app->shared_size : 1, 1);
  if (!vm->pes || !vm->pe_dropped || !vm->pe_exceptions || !vm->sink_packets ||
      !vm->sink_bytes || !vm->shared)
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
  vm->ctx.pes = vm->pes;
  vm->ctx.shared = vm->shared;
  vm->ctx.runtime = vm;
  return vm;
oom_vm:
  netvm_instance_destroy(vm);
oom:
  snprintf(error, error_size, "out of memory instantiating the application");
  return NULL;
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
  for (i = 0; i < vm->pool_size; ++i)
    exbuf_free(vm->pool[i]);
  free(vm->pool);
  free(vm->input.packet);
  free(vm->input.info);
  free(vm->pes);
  free(vm->shared);
  free(vm->pe_dropped);
  free(vm->pe_exceptions);
  free(vm->sink_packets);
  free(vm->sink_bytes);
  free(vm);
}

const netvm_app_desc *netvm_instance_app(const netvm_instance *vm) {
  return vm->app;
}

void netvm_instance_set_output(netvm_instance *vm, netvm_output_fn fn,
                               void *user) {
  vm->output = fn;
  vm->output_user = user;
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
  vm->budget = budget;
}

void netvm_instance_init(netvm_instance *vm) {
  vm->ctx.budget = (int64_t)vm->budget;
  vm->app->init(&vm->ctx);
}

void netvm_instance_push(netvm_instance *vm, uint32_t source,
                         const uint8_t *packet, uint32_t length,
                         uint32_t seconds, uint32_t microseconds) {
  netvm_exbuf *xb = &vm->input;
  vm->counters.packets++;
  if (source >= vm->app->num_sources || !exbuf_fill(vm, xb, packet, length)) {
    vm->counters.unconnected++;
    return;
  }
  xb->flags = 0;
  xb->seconds = seconds;
  xb->microseconds = microseconds;
  xb->sequence = vm->sequence++;
  vm->ctx.budget = (int64_t)vm->budget;
  vm->app->sources[source](&vm->ctx, xb);
}

int netvm_instance_pull(netvm_instance *vm, uint32_t sink) {
  netvm_exbuf *xb = &vm->input;
  uint64_t before;
  if (sink >= vm->app->num_sinks || !vm->app->sink_pulls[sink])
    return 0;
  before = vm->sink_packets[sink];
  xb->flags = NETVM_XB_NONE;
  xb->sequence = vm->sequence++;
  vm->ctx.budget = (int64_t)vm->budget;
  vm->app->sink_pulls[sink](&vm->ctx, xb);
  return vm->sink_packets[sink] != before;
}

int netvm_exbuf_assign(netvm_instance *vm, netvm_exbuf *xb,
                       const uint8_t *packet, uint32_t length,
                       uint32_t seconds, uint32_t microseconds) {
  if (!exbuf_fill(vm, xb, packet, length))
    return 0;
  xb->seconds = seconds;
  xb->microseconds = microseconds;
  vm->counters.packets++;
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

uint8_t *netvm_instance_shared(netvm_instance *vm, uint32_t *size) {
  *size = vm->app->shared_size;
  return vm->shared;
}

void netvm_instance_counters(const netvm_instance *vm, netvm_counters *out) {
  *out = vm->counters;
}

void netvm_instance_pe_counters(const netvm_instance *vm, uint32_t pe,
                                netvm_pe_counters *out) {
  memset(out, 0, sizeof(*out));
  if (pe >= vm->app->num_pes)
    return;
  out->runs = vm->pes[pe].runs;
  out->sent = vm->pes[pe].sent;
  out->dropped = vm->pe_dropped[pe];
  out->exceptions = vm->pe_exceptions[pe];
}

void netvm_instance_sink_counters(const netvm_instance *vm, uint32_t sink,
                                  uint64_t *packets, uint64_t *bytes) {
  *packets = sink < vm->app->num_sinks ? vm->sink_packets[sink] : 0;
  *bytes = sink < vm->app->num_sinks ? vm->sink_bytes[sink] : 0;
}

const char *netvm_exception_name(uint32_t kind) {
  static const char *const names[NETVM_EXC_KINDS] = {
      "packet_bounds",  "info_bounds",      "data_bounds", "shared_bounds",
      "initdata_bounds", "division_by_zero", "watchdog",    "coprocessor",
      "no_exbuf",       "exit"};
  return kind < NETVM_EXC_KINDS ? names[kind] : "unknown";
}
