/* replicas-host.c - replicated pipeline stages and dynamic allocation
 * through runtime.h, checked against a pipeline of one thread per stage:
 * the same events (outputs with their bytes, exceptions, ends of packets)
 * in the same order, the same data memories. Built with the runtime's
 * sources under ThreadSanitizer and AddressSanitizer by
 * sanitized-replicas.test. */
#include "netvm/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const netvm_app_desc netvm_app_rtp;   /* bench/pipeline/rtp.nvapp */
extern const netvm_app_desc netvm_app_watch; /* watch.nvapp */

enum { PACKETS = 6000, MAXLEN = 200 };

typedef struct digest {
  uint64_t hash, outputs, dones, exceptions;
  uint64_t next_sequence; /* outputs and ends come in packet order */
  int out_of_order;
} digest;

static uint64_t mix(uint64_t h, uint64_t v) {
  return (h ^ v) * 0x100000001B3ull;
}

static void on_event(void *user, const netvm_event *ev) {
  digest *d = user;
  uint32_t i;
  if (ev->sequence != NETVM_SEQUENCE_INIT) {
    if (ev->sequence < d->next_sequence)
      d->out_of_order = 1;
    d->next_sequence = ev->sequence;
  }
  d->hash = mix(d->hash, ev->type);
  d->hash = mix(d->hash, ev->index);
  d->hash = mix(d->hash, ev->sequence);
  if (ev->type == NETVM_EVENT_OUTPUT) {
    ++d->outputs;
    for (i = 0; i < ev->xb->length; ++i)
      d->hash = mix(d->hash, ev->xb->packet[i]);
  } else if (ev->type == NETVM_EVENT_DONE) {
    ++d->dones;
    d->hash = mix(d->hash, ev->drops);
  } else {
    ++d->exceptions;
  }
}

static uint8_t bytes[PACKETS][MAXLEN];
static netvm_packet packets[PACKETS];

static void make_packets(void) {
  uint32_t x = 12345, i, k;
  for (i = 0; i < PACKETS; ++i) {
    uint32_t length;
    x = x * 1103515245u + 12345u;
    length = 2 + (x >> 8) % (MAXLEN - 2);
    for (k = 0; k < length; ++k) {
      x = x * 1103515245u + 12345u;
      bytes[i][k] = (uint8_t)(x >> 16);
    }
    if (length > 14 && i % 3) { /* IPv4 by EtherType, for watch */
      bytes[i][12] = 0x08;
      bytes[i][13] = 0x00;
    }
    packets[i].length = length;
  }
}

/* Run every packet through `app` with these stages and replicas (NULL:
 * one thread each), in runs of varying size; events or outputs only. */
static int run(const netvm_app_desc *app, const uint32_t *stage_of,
               const uint32_t *replicas, const netvm_dynamic_policy *dynamic,
               int outputs_only, digest *d, uint8_t *memory, size_t memsize) {
  static uint8_t copy[PACKETS][MAXLEN];
  netvm_runner_options o;
  char error[256];
  netvm_runner *r;
  size_t at = 0, n, size = 0;
  uint32_t pe, k = 0;
  memset(&o, 0, sizeof o);
  o.mode = NETVM_RUN_PIPELINE;
  o.threads = 1;
  o.size = sizeof o;
  o.stage_of_pe = stage_of;
  o.replicas_of_stage = replicas;
  o.dynamic = dynamic;
  r = netvm_runner_create(app, &o, error, sizeof error);
  if (!r) {
    printf("error: %s\n", error);
    return 0;
  }
  memcpy(copy, bytes, sizeof bytes);
  for (n = 0; n < PACKETS; ++n)
    packets[n].data = copy[n];
  memset(d, 0, sizeof *d);
  if (outputs_only)
    netvm_runner_set_output_events(r, on_event, d);
  else
    netvm_runner_set_events(r, on_event, d);
  netvm_runner_init(r);
  while (at < PACKETS) {
    n = (size_t)(1 + (k++ * 37) % 91);
    if (k % 50 == 0)
      n = 1500;
    if (n > PACKETS - at)
      n = PACKETS - at;
    netvm_runner_run(r, 0, packets + at, n);
    at += n;
  }
  for (pe = 0; pe < app->num_pes; ++pe) {
    uint32_t s;
    uint8_t *data = netvm_instance_data(netvm_runner_instance(r, 0), pe, &s);
    if (size + s <= memsize) {
      memcpy(memory + size, data, s);
      size += s;
    }
  }
  netvm_runner_destroy(r);
  return 1;
}

static int check(const char *what, const netvm_app_desc *app,
                 const uint32_t *stage_of, const uint32_t *replicas,
                 const netvm_dynamic_policy *dynamic) {
  digest ref, got;
  uint8_t ref_mem[256] = {0}, got_mem[256] = {0};
  int mode;
  for (mode = 0; mode < 2; ++mode) {
    if (!run(app, stage_of, NULL, NULL, mode, &ref, ref_mem, sizeof ref_mem) ||
        !run(app, stage_of, replicas, dynamic, mode, &got, got_mem,
             sizeof got_mem))
      return 0;
    if (ref.hash != got.hash || ref.outputs != got.outputs ||
        ref.dones != got.dones || got.out_of_order ||
        memcmp(ref_mem, got_mem, sizeof ref_mem)) {
      printf("%s%s: DISAGREES (outputs %llu vs %llu, ends %llu vs %llu%s)\n",
             what, mode ? " (outputs only)" : "",
             (unsigned long long)ref.outputs, (unsigned long long)got.outputs,
             (unsigned long long)ref.dones, (unsigned long long)got.dones,
             got.out_of_order ? ", out of order" : "");
      return 0;
    }
    printf("%s%s: agrees (%llu outputs)\n", what, mode ? " (outputs only)" : "",
           (unsigned long long)got.outputs);
  }
  return 1;
}

int main(void) {
  static const uint32_t rtp_stages[3] = {0, 1, 2}; /* rx, proc, tx */
  static const uint32_t rtp_replicas[3] = {1, 3, 1};
  static const uint32_t watch_stages[2] = {0, 1}; /* classify, hosts */
  static const uint32_t watch_replicas[2] = {2, 2};
  netvm_dynamic_policy busy;
  int ok = 1;
  memset(&busy, 0, sizeof busy);
  busy.workers = 3;
  busy.interval_us = 20;
  busy.queue_up = 2;
  busy.queue_down = 1;
  busy.delay_up_us = 5;
  busy.delay_down_us = 2;
  busy.dwell_us = 30;
  make_packets();
  ok &= check("rtp proc:3", &netvm_app_rtp, rtp_stages, rtp_replicas, NULL);
  ok &= check("rtp dynamic", &netvm_app_rtp, rtp_stages, NULL, &busy);
  ok &=
      check("watch 2:2", &netvm_app_watch, watch_stages, watch_replicas, NULL);
  ok &= check("watch dynamic", &netvm_app_watch, watch_stages, NULL, &busy);
  return ok ? 0 : 1;
}
