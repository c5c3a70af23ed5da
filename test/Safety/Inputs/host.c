/*===- host.c - Edge-case packets through every entry of the runtime -------===*
 *
 * The C host of test/Safety/sanitizers.test, built with AddressSanitizer and
 * UndefinedBehaviorSanitizer and linked with the sanitized runtime
 * (libnetvm-rt-asan.a) and AOT objects of many applications. The driver
 * (sanitizers.py) generates a table of their descriptors (safety_apps,
 * safety_app_names, NULL-terminated).
 *
 *   host NAME TRACE.pcap OUT
 *
 * runs application NAME over the packets of TRACE (a pcap file, read here
 * without libpcap) once per way a host can hand packets to generated code,
 * each with a fresh instance, and writes what happened to OUT.MODE:
 *
 *   tail    netvm_instance_push_batch, one packet at a time, borrowed: the
 *           packet's last byte is the last byte before an inaccessible page
 *           (generated code is not instrumented by ASan; a read or write
 *           past the end faults, and ASan reports the fault with its stack)
 *   head    the same with an inaccessible page right before the packet
 *   copy    netvm_instance_push: the runtime copies the packet (and its
 *           wire length is its captured length)
 *   runner  a runner (run to completion, 2 threads for stateless
 *           applications, 5 packets per claim) with events
 *   batch   one netvm_instance_push_batch call for every packet (each in its
 *           own guarded mapping), nobody listening: the batch entry's fast
 *           loop; only totals
 *   listen  the same with an output callback (the listened loop): every
 *           output (numbered by its exbuf's sequence) and the totals
 *
 * tail, head, copy and runner print each packet's outcome in the format of
 * `netvm-run --results`; batch and listen print totals (per sink, drops,
 * unconnected, exceptions by kind) and, like every mode, the final data
 * and shared memories. If a sanitizer stops the program, it says first
 * which mode and which packets (numbered from 1 in the trace) were running.
 *
 *===----------------------------------------------------------------------===*/

#define _DEFAULT_SOURCE
#include "netvm/runtime.h"

#include <sanitizer/common_interface_defs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern const netvm_app_desc *const safety_apps[];
extern const char *const safety_app_names[];

#define WATCHDOG 1048576u

/* What is running, for the sanitizers' death callback. */
static const char *volatile running_app = "", *volatile running_mode = "setup";
static volatile uint64_t running_first, running_last;

static void on_death(void) {
  fprintf(stderr, "host: application %s, mode %s, packets %llu..%llu\n",
          running_app, running_mode, (unsigned long long)running_first,
          (unsigned long long)running_last);
}

static void running(const char *mode, uint64_t first, uint64_t last) {
  running_mode = mode;
  running_first = first;
  running_last = last;
}

static void die(const char *what, const char *detail) {
  fprintf(stderr, "host: %s%s%s\n", what, detail ? ": " : "",
          detail ? detail : "");
  exit(2);
}

/*===- The trace ----------------------------------------------------------===*/

typedef struct record {
  uint8_t *bytes;
  uint32_t length, wire, seconds, microseconds;
} record;

static record *records;
static size_t num_records;
static uint32_t max_length;

static void read_trace(const char *path) {
  FILE *in = fopen(path, "rb");
  uint32_t header[6];
  size_t capacity = 0;
  if (!in)
    die("cannot open", path);
  if (fread(header, 4, 6, in) != 6 || header[0] != 0xA1B2C3D4u)
    die("not a little-endian microsecond pcap file", path);
  for (;;) {
    uint32_t h[4];
    record r;
    if (fread(h, 4, 4, in) != 4)
      break;
    r.seconds = h[0];
    r.microseconds = h[1];
    r.length = h[2];
    r.wire = h[3];
    r.bytes = malloc(r.length ? r.length : 1);
    if (!r.bytes || fread(r.bytes, 1, r.length, in) != r.length)
      die("truncated record in", path);
    if (num_records == capacity) {
      capacity = capacity ? 2 * capacity : 1024;
      records = realloc(records, capacity * sizeof(*records));
      if (!records)
        die("out of memory", NULL);
    }
    records[num_records++] = r;
    if (r.length > max_length)
      max_length = r.length;
  }
  fclose(in);
}

/*===- Guarded packet memory ----------------------------------------------===*/

static size_t page;

/* `length` bytes of accessible memory next to an inaccessible page: after
 * it (head == 0) or before it (head != 0). */
typedef struct guarded {
  uint8_t *map;
  size_t size, body;
} guarded;

static void guarded_map(guarded *g, uint32_t length) {
  g->body = ((size_t)length + page - 1) / page * page;
  if (!g->body)
    g->body = page;
  g->size = g->body + 2 * page;
  g->map = mmap(NULL, g->size, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g->map == MAP_FAILED)
    die("mmap failed", NULL);
  if (mprotect(g->map, page, PROT_NONE) ||
      mprotect(g->map + page + g->body, page, PROT_NONE))
    die("mprotect failed", NULL);
}

static uint8_t *guarded_place(guarded *g, const record *r, int head) {
  uint8_t *at = head ? g->map + page : g->map + page + g->body - r->length;
  if (r->length)
    memcpy(at, r->bytes, r->length);
  return at;
}

static void guarded_unmap(guarded *g) { munmap(g->map, g->size); }

/*===- Output -------------------------------------------------------------===*/

static FILE *out;
static const netvm_app_desc *app;
static uint64_t current; /* packet number, from 1; 0 for init */

static void put_hex(const uint8_t *bytes, uint32_t length) {
  static const char digits[] = "0123456789abcdef";
  char buffer[4096];
  uint32_t i, n = 0;
  for (i = 0; i < length; ++i) {
    buffer[n++] = digits[bytes[i] >> 4];
    buffer[n++] = digits[bytes[i] & 15];
    if (n == sizeof buffer) {
      fwrite(buffer, 1, n, out);
      n = 0;
    }
  }
  fwrite(buffer, 1, n, out);
}

static void put_output(uint64_t number, uint32_t sink, const netvm_exbuf *xb) {
  fprintf(out, "#%llu out %s ", (unsigned long long)number,
          app->sink_names[sink]);
  put_hex(xb->packet, xb->length);
  fputs(" info ", out);
  if (xb->info)
    put_hex(xb->info, xb->info_length);
  fputc('\n', out);
}

static void put_exception(uint64_t number, uint32_t kind,
                          const netvm_site *site) {
  fprintf(out, "#%llu exception %s %s %s %s\n", (unsigned long long)number,
          netvm_exception_name(kind),
          site && site->pe < app->num_pes ? app->pes[site->pe].name : "",
          site ? netvm_handler_name(site->handler) : "",
          site ? site->location : "");
}

static void put_memories(netvm_instance *vm) {
  uint32_t i, size;
  for (i = 0; i < app->num_pes; ++i) {
    uint8_t *data = netvm_instance_data(vm, i, &size);
    fprintf(out, "data %s ", app->pes[i].name);
    put_hex(data, size);
    fputc('\n', out);
  }
  if (app->shared_size) {
    uint8_t *shared = netvm_instance_shared(vm, &size);
    fputs("shared ", out);
    put_hex(shared, size);
    fputc('\n', out);
  }
}

static void put_totals(netvm_instance *vm) {
  netvm_counters c;
  uint32_t i;
  netvm_instance_counters(vm, &c);
  for (i = 0; i < app->num_sinks; ++i) {
    uint64_t packets, bytes;
    netvm_instance_sink_counters(vm, i, &packets, &bytes);
    fprintf(out, "total sink %s %llu %llu\n", app->sink_names[i],
            (unsigned long long)packets, (unsigned long long)bytes);
  }
  fprintf(out, "total dropped %llu\ntotal unconnected %llu\n",
          (unsigned long long)c.dropped, (unsigned long long)c.unconnected);
  for (i = 0; i < NETVM_EXC_KINDS; ++i)
    fprintf(out, "total exception %s %llu\n", netvm_exception_name(i),
            (unsigned long long)c.exceptions[i]);
  fprintf(out, "total packets %llu\n", (unsigned long long)c.packets);
}

static void on_output(void *user, uint32_t sink, const netvm_exbuf *xb) {
  (void)user;
  put_output(current, sink, xb);
}

static void on_exception(void *user, uint32_t kind, const netvm_site *site) {
  (void)user;
  put_exception(current, kind, site);
}

/* Outputs of a batch: the exchange buffer's sequence numbers the packet. */
static void on_batch_output(void *user, uint32_t sink, const netvm_exbuf *xb) {
  (void)user;
  put_output(xb->sequence + 1, sink, xb);
}

static void on_quiet_exception(void *user, uint32_t kind,
                               const netvm_site *site) {
  (void)user;
  (void)kind;
  (void)site;
}

static netvm_instance *instance(int listen) {
  char error[256];
  netvm_instance *vm = netvm_instance_create(app, error, sizeof error);
  if (!vm)
    die("cannot instantiate", error);
  netvm_instance_set_watchdog(vm, WATCHDOG);
  if (listen) {
    netvm_instance_set_output(vm, on_output, NULL);
    netvm_instance_set_exception_hook(vm, on_exception, NULL);
  }
  current = 0;
  running("init", 0, 0);
  netvm_instance_init(vm);
  return vm;
}

static FILE *open_out(const char *prefix, const char *mode) {
  char path[4096];
  FILE *f;
  snprintf(path, sizeof path, "%s.%s", prefix, mode);
  if (!(f = fopen(path, "w")))
    die("cannot write", path);
  return f;
}

/*===- The modes ----------------------------------------------------------===*/

/* One packet at a time: tail, head (push_batch of one) and copy (push). */
static void run_single(const char *prefix, const char *mode) {
  int copy = strcmp(mode, "copy") == 0, head = strcmp(mode, "head") == 0;
  netvm_instance *vm;
  guarded g;
  size_t i;
  out = open_out(prefix, mode);
  vm = instance(1);
  guarded_map(&g, max_length);
  for (i = 0; i < num_records; ++i) {
    const record *r = &records[i];
    netvm_counters before, after;
    uint8_t *bytes = guarded_place(&g, r, head);
    current = i + 1;
    running(mode, current, current);
    netvm_instance_counters(vm, &before);
    if (copy) {
      netvm_instance_push(vm, 0, bytes, r->length, r->seconds,
                          r->microseconds);
    } else {
      netvm_packet p;
      memset(&p, 0, sizeof p);
      p.data = bytes;
      p.length = r->length;
      p.wire_length = r->wire;
      p.seconds = r->seconds;
      p.microseconds = r->microseconds;
      netvm_instance_push_batch(vm, 0, &p, 1);
    }
    netvm_instance_counters(vm, &after);
    if (after.dropped != before.dropped)
      fprintf(out, "#%llu dropped %llu\n", (unsigned long long)current,
              (unsigned long long)(after.dropped - before.dropped));
    if (after.unconnected != before.unconnected)
      fprintf(out, "#%llu unconnected %llu\n", (unsigned long long)current,
              (unsigned long long)(after.unconnected - before.unconnected));
  }
  guarded_unmap(&g);
  put_memories(vm);
  netvm_instance_destroy(vm);
  fclose(out);
}

/* Every packet in its own guarded mapping (made once), for the batch
 * modes; its bytes copied afresh, since applications may change them. */
static guarded *maps;

static netvm_packet *batch_packets(void) {
  netvm_packet *packets = calloc(num_records ? num_records : 1,
                                 sizeof(*packets));
  size_t i;
  if (!maps) {
    maps = calloc(num_records ? num_records : 1, sizeof(*maps));
    for (i = 0; maps && i < num_records; ++i)
      guarded_map(&maps[i], records[i].length);
  }
  if (!packets || !maps)
    die("out of memory", NULL);
  for (i = 0; i < num_records; ++i) {
    const record *r = &records[i];
    packets[i].data = guarded_place(&maps[i], r, 0);
    packets[i].length = r->length;
    packets[i].wire_length = r->wire;
    packets[i].seconds = r->seconds;
    packets[i].microseconds = r->microseconds;
  }
  return packets;
}

/* All packets through the batch entry: fast (nobody listens) or listened
 * (outputs reported). Packets go in batches of 1, 2, 3, ... 64, 1, ... so
 * that batch boundaries fall everywhere. */
static void run_batch(const char *prefix, const char *mode) {
  int listen = strcmp(mode, "listen") == 0;
  netvm_packet *packets = batch_packets();
  netvm_instance *vm;
  size_t done = 0, n = 1;
  char error[256];
  out = open_out(prefix, mode);
  vm = netvm_instance_create(app, error, sizeof error);
  if (!vm)
    die("cannot instantiate", error);
  netvm_instance_set_watchdog(vm, WATCHDOG);
  netvm_instance_set_exception_hook(vm, on_quiet_exception, NULL);
  if (listen)
    netvm_instance_set_output(vm, on_batch_output, NULL);
  running("init", 0, 0);
  netvm_instance_init(vm);
  while (done < num_records) {
    size_t count = num_records - done < n ? num_records - done : n;
    running(mode, done + 1, done + count);
    netvm_instance_push_batch(vm, 0, packets + done, count);
    done += count;
    n = n % 64 + 1;
  }
  put_totals(vm);
  put_memories(vm);
  netvm_instance_destroy(vm);
  free(packets);
  fclose(out);
}

/* A runner with events: per-packet results like the single modes (the
 * runner numbers packets from 0 over all its runs). */
static void on_event(void *user, const netvm_event *e) {
  uint64_t number = e->sequence == NETVM_SEQUENCE_INIT ? 0 : e->sequence + 1;
  (void)user;
  if (e->type == NETVM_EVENT_OUTPUT) {
    put_output(number, e->index, e->xb);
  } else if (e->type == NETVM_EVENT_EXCEPTION) {
    put_exception(number, e->index, e->site);
  } else {
    if (e->drops)
      fprintf(out, "#%llu dropped %u\n", (unsigned long long)number, e->drops);
    if (e->unconnected)
      fprintf(out, "#%llu unconnected %u\n", (unsigned long long)number,
              e->unconnected);
  }
}

static void run_runner(const char *prefix) {
  netvm_packet *packets = batch_packets();
  netvm_runner_options options;
  netvm_runner *r;
  char error[256];
  out = open_out(prefix, "runner");
  memset(&options, 0, sizeof options);
  options.mode = NETVM_RUN_TO_COMPLETION;
  options.threads = 2;
  options.batch = 5;
  options.watchdog = WATCHDOG;
  r = netvm_runner_create(app, &options, error, sizeof error);
  if (!r)
    die("cannot create a runner", error);
  netvm_runner_set_events(r, on_event, NULL);
  running("init", 0, 0);
  netvm_runner_init(r);
  /* Two runs, to cross the end of a run too. */
  running("runner", 1, num_records / 2);
  netvm_runner_run(r, 0, packets, num_records / 2);
  running("runner", num_records / 2 + 1, num_records);
  netvm_runner_run(r, 0, packets + num_records / 2,
                   num_records - num_records / 2);
  put_memories(netvm_runner_instance(r, 0));
  netvm_runner_destroy(r);
  free(packets);
  fclose(out);
}

int main(int argc, char **argv) {
  size_t i;
  if (argc != 4)
    die("usage: host NAME TRACE.pcap OUT", NULL);
  page = (size_t)sysconf(_SC_PAGESIZE);
  for (i = 0; safety_apps[i]; ++i)
    if (strcmp(safety_app_names[i], argv[1]) == 0)
      break;
  if (!safety_apps[i])
    die("no application named", argv[1]);
  app = safety_apps[i];
  running_app = argv[1];
  __sanitizer_set_death_callback(on_death);
  read_trace(argv[2]);
  run_single(argv[3], "tail");
  run_single(argv[3], "head");
  run_single(argv[3], "copy");
  run_batch(argv[3], "batch");
  run_batch(argv[3], "listen");
  run_runner(argv[3]);
  for (i = 0; i < num_records; ++i) {
    if (maps)
      guarded_unmap(&maps[i]);
    free(records[i].bytes);
  }
  free(maps);
  free(records);
  return 0;
}
