/* host.c - a C host embedding AOT-compiled applications through
 * runtime.h: instances, the control plane (data memory, counters), batch
 * pushes and runners (run to completion on two threads, pipeline), checked
 * against each other. Built and run by control-plane.test. */
#include "netvm/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const netvm_app_desc netvm_app_demux; /* ipv4-demux.netil */
extern const netvm_app_desc netvm_app_watch; /* watch.nvapp */
extern const netvm_app_desc netvm_app_watchp; /* watch.nvapp, --forward-links */

static void on_output(void *user, uint32_t sink, const netvm_exbuf *xb) {
  const netvm_app_desc *app = user;
  printf("out %s %u bytes\n", app->sink_names[sink], xb->length);
}

/* A raw IPv4 header (20 bytes) + 8 bytes of payload, valid checksum. */
static uint32_t ipv4(uint8_t *p, uint8_t protocol, uint32_t src, int good) {
  uint32_t sum = 0, i;
  memset(p, 0, 28);
  p[0] = 0x45;
  p[3] = 28;
  p[8] = 64;
  p[9] = protocol;
  p[12] = src >> 24; p[13] = src >> 16; p[14] = src >> 8; p[15] = src;
  p[16] = 10; p[19] = 9;
  for (i = 0; i < 20; i += 2)
    sum += (uint32_t)p[i] << 8 | p[i + 1];
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  sum = ~sum & 0xffff;
  if (!good)
    sum ^= 1;
  p[10] = sum >> 8;
  p[11] = sum;
  return 28;
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}

/* Ethernet frames for watch: IPv4 from one of four hosts, or ARP. */
static uint32_t frame(uint8_t *p, unsigned i) {
  static const uint32_t hosts[] = {0x0A010101, 0x0A020202, 0x0A030303,
                                   0xC0A80001};
  memset(p, 0, 14);
  if (i % 7 == 3) {
    p[12] = 0x08; p[13] = 0x06;
    memset(p + 14, 0xAA, 28);
    return 42;
  }
  p[12] = 0x08; p[13] = 0x00;
  return 14 + ipv4(p + 14, 6, hosts[(i * 2654435761u) >> 30], 1);
}

/* Events of a runner: checks the order, counts outputs per sink. */
struct tally {
  uint64_t next; /* sequence of the next DONE */
  uint64_t sinks[8];
  int out_of_order;
};
static void on_event(void *user, const netvm_event *ev) {
  struct tally *t = user;
  if (ev->type == NETVM_EVENT_OUTPUT) {
    if (ev->sequence != t->next)
      t->out_of_order = 1;
    t->sinks[ev->index]++;
  } else if (ev->type == NETVM_EVENT_DONE) {
    if (ev->sequence != t->next)
      t->out_of_order = 1;
    t->next = ev->sequence + 1;
  }
}

int main(void) {
  char error[256];
  uint8_t packet[64];
  uint32_t size, i;
  netvm_counters c;
  netvm_pe_counters pc;
  uint64_t packets, bytes;

  /* --- One instance and the control plane. */
  netvm_instance *vm = netvm_instance_create(&netvm_app_demux, error,
                                             sizeof error);
  if (!vm) {
    printf("error: %s\n", error);
    return 1;
  }
  netvm_instance_set_output(vm, on_output, (void *)&netvm_app_demux);
  netvm_instance_init(vm);
  uint8_t *data = netvm_instance_data(vm, 0, &size);
  printf("data memory %u bytes\n", size);
  data[0] = 0; data[1] = 0; data[2] = 0x03; data[3] = 0xE8; /* TCP: 1000 */
  netvm_instance_push(vm, 0, packet, ipv4(packet, 6, 0x0A010101, 1), 1, 0);
  netvm_instance_push(vm, 0, packet, ipv4(packet, 17, 0x0A010101, 1), 2, 0);
  netvm_instance_push(vm, 0, packet, ipv4(packet, 6, 0x0A010101, 0), 3, 0);
  printf("tcp counter %u udp counter %u\n", be32(data), be32(data + 4));
  netvm_instance_counters(vm, &c);
  printf("packets %llu dropped %llu\n", (unsigned long long)c.packets,
         (unsigned long long)c.dropped);
  netvm_instance_sink_counters(vm, 4, &packets, &bytes);
  printf("sink %s: %llu packets %llu bytes\n", netvm_app_demux.sink_names[4],
         (unsigned long long)packets, (unsigned long long)bytes);
  netvm_instance_pe_counters(vm, 0, &pc);
  printf("pe runs %llu sent %llu\n", (unsigned long long)pc.runs,
         (unsigned long long)pc.sent);

  /* In place, three packets at once; no listener: counted only. */
  {
    uint8_t a[28], b[28], d[10];
    netvm_packet batch[3] = {{a, 0, 0, 0, 0}, {b, 0, 0, 0, 0}, {d, 10, 0, 0, 0}};
    batch[0].length = ipv4(a, 1, 0x0A020202, 1);
    batch[1].length = ipv4(b, 6, 0x0A020202, 1);
    memset(d, 0, sizeof d);
    netvm_instance_set_output(vm, NULL, NULL);
    netvm_instance_push_batch(vm, 0, batch, 3);
    netvm_instance_counters(vm, &c);
    netvm_instance_sink_counters(vm, 4, &packets, &bytes);
    printf("after batch: packets %llu, tcp counter %u, icmp counter %u, "
           "bad %llu, exceptions %llu\n",
           (unsigned long long)c.packets, be32(data), be32(data + 8),
           (unsigned long long)packets,
           (unsigned long long)c.exceptions[NETVM_EXC_PACKET_BOUNDS]);
  }
  netvm_instance_destroy(vm);

  /* --- Runners on a stateless application agree with one instance. */
  {
    enum { N = 5000 };
    uint8_t *arena = malloc(N * 64);
    netvm_packet *pkts = calloc(N, sizeof(netvm_packet));
    uint64_t expected[8] = {0};
    const netvm_app_desc *apps[2] = {&netvm_app_watch, &netvm_app_watchp};
    uint32_t modes[2] = {NETVM_RUN_TO_COMPLETION, NETVM_RUN_PIPELINE};
    int m;
    for (i = 0; i < N; ++i) {
      pkts[i].data = arena + 64 * i;
      pkts[i].length = frame(pkts[i].data, i);
    }
    vm = netvm_instance_create(&netvm_app_watch, error, sizeof error);
    netvm_instance_init(vm);
    netvm_instance_push_batch(vm, 0, pkts, N);
    for (i = 0; i < netvm_app_watch.num_sinks; ++i)
      netvm_instance_sink_counters(vm, i, &expected[i], &bytes);
    netvm_instance_destroy(vm);
    printf("one instance: ip %llu watched %llu rest %llu other %llu\n",
           (unsigned long long)expected[0], (unsigned long long)expected[1],
           (unsigned long long)expected[2], (unsigned long long)expected[3]);
    for (m = 0; m < 2; ++m) {
      netvm_runner_options o;
      struct tally t;
      netvm_runner *r;
      int same = 1;
      memset(&o, 0, sizeof o);
      memset(&t, 0, sizeof t);
      o.mode = modes[m];
      o.threads = 2;
      o.batch = 16;
      r = netvm_runner_create(apps[m], &o, error, sizeof error);
      if (!r) {
        printf("error: %s\n", error);
        return 1;
      }
      netvm_runner_set_events(r, on_event, &t);
      netvm_runner_init(r);
      netvm_runner_run(r, 0, pkts, N / 2);
      netvm_runner_run(r, 0, pkts + N / 2, N - N / 2);
      for (i = 0; i < apps[m]->num_sinks; ++i) {
        netvm_runner_sink_counters(r, i, &packets, &bytes);
        same &= packets == expected[i] && t.sinks[i] == expected[i];
      }
      netvm_runner_counters(r, &c);
      printf("%s: %u threads, %u replicas, %llu packets, events %s, %s\n",
             m ? "pipeline" : "run to completion", netvm_runner_threads(r),
             netvm_runner_replicas(r), (unsigned long long)c.packets,
             t.out_of_order || t.next != N ? "OUT OF ORDER" : "in order",
             same ? "same counts" : "DIFFERENT COUNTS");
      netvm_runner_destroy(r);
    }
    /* Pipelines need forwarded links. */
    {
      netvm_runner_options o;
      memset(&o, 0, sizeof o);
      o.mode = NETVM_RUN_PIPELINE;
      o.threads = 2;
      if (!netvm_runner_create(&netvm_app_watch, &o, error, sizeof error))
        printf("error: %s\n", error);
    }
    free(arena);
    free(pkts);
  }
  return 0;
}
