/*===- main.c - A standalone program around an AOT-compiled application ----===*
 *
 * Link an object made by `netc -c` with the native runtime and this file to
 * get a program that runs the application over packets:
 *
 *   netc app.netil -c -o app.o
 *   cc -Iruntime/include -DNETVM_APP_SYMBOL=netvm_app_app \
 *      runtime/native/main.c runtime/native/runtime.c runtime/native/runner.c \
 *      runtime/coprocessors/coprocessors.c runtime/coprocessors/strings.c \
 *      app.o -lhs -lpthread -o app
 *
 * or, with the prebuilt runtime (build/lib for the host, build/aarch64 for
 * AArch64) and an object exporting `netvm_app`:
 *
 *   netc app.netil --target=aarch64-linux-gnu -c -o app.o
 * --descriptor=netvm_app
 *   aarch64-linux-gnu-gcc -static app.o build/aarch64/netvm-main.o \
 *      build/aarch64/libnetvm-rt.a -o app
 * It reads packets from standard input, one per line as whitespace-separated
 * hexadecimal bytes (blank lines and lines starting with '#' are skipped),
 * pushes each into source 0 (or the source named by NETVM_SOURCE; a line
 * that starts with "@N " goes into source N, as in netvm-run's), and
 * prints the outcome in the format of `netvm-run --results`:
 *
 *   #N out SINK HEXBYTES info HEXBYTES
 *   #N exception KIND PE HANDLER LOCATION
 *   #N dropped COUNT            (when not zero)
 *   #N unconnected COUNT        (when not zero)
 *   data PE HEXBYTES            (after the last packet)
 *   shared HEXBYTES             (if the application has shared memory)
 *
 * Packet N gets the timestamp N-1 seconds, 0 microseconds, like netvm-run's
 * hexadecimal input.
 *
 *===----------------------------------------------------------------------===*/

#include "netvm/runtime.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef NETVM_APP_SYMBOL
#define NETVM_APP_SYMBOL netvm_app
#endif

extern const netvm_app_desc NETVM_APP_SYMBOL;

static unsigned long long packet_number;

/* Lines of the current packet: outputs first, then exceptions, each in the
 * order they happened (the order netvm-run --results uses). */
struct text {
  char *data;
  size_t length, capacity;
};
static struct text outputs, exceptions;

static void append(struct text *t, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
static void append(struct text *t, const char *format, ...) {
  va_list args;
  int n;
  va_start(args, format);
  n = vsnprintf(NULL, 0, format, args);
  va_end(args);
  if (t->length + (size_t)n + 1 > t->capacity) {
    size_t capacity = t->capacity ? t->capacity : 256;
    while (capacity < t->length + (size_t)n + 1)
      capacity *= 2;
    t->data = realloc(t->data, capacity);
    if (!t->data) {
      fputs("netvm: out of memory\n", stderr);
      exit(1);
    }
    t->capacity = capacity;
  }
  va_start(args, format);
  vsnprintf(t->data + t->length, n + 1, format, args);
  va_end(args);
  t->length += (size_t)n;
}

static void append_hex(struct text *t, const uint8_t *bytes, uint32_t length) {
  uint32_t i;
  for (i = 0; i < length; ++i)
    append(t, "%02x", bytes[i]);
}

static void flush(struct text *t) {
  if (t->length)
    fwrite(t->data, 1, t->length, stdout);
  t->length = 0;
}

/* The callbacks read the descriptor itself: it is const, their user data
   pointer is not. */
static void on_output(void *user, uint32_t sink, const netvm_exbuf *xb) {
  const netvm_app_desc *app = &NETVM_APP_SYMBOL;
  append(&outputs, "#%llu out %s ", packet_number, app->sink_names[sink]);
  append_hex(&outputs, xb->packet, xb->length);
  append(&outputs, " info ");
  append_hex(&outputs, xb->info, xb->info_length);
  append(&outputs, "\n");
}

static void on_exception(void *user, uint32_t kind, const netvm_site *site) {
  const netvm_app_desc *app = &NETVM_APP_SYMBOL;
  if (site)
    append(&exceptions, "#%llu exception %s %s %s %s\n", packet_number,
           netvm_exception_name(kind), app->pes[site->pe].name,
           netvm_handler_name(site->handler), site->location);
  else
    append(&exceptions, "#%llu exception %s\n", packet_number,
           netvm_exception_name(kind));
}

/* Parse one line of hex bytes; returns the length, or -1 on a bad token. */
static long parse_line(char *line, uint8_t *out, size_t capacity) {
  long n = 0;
  char *token = strtok(line, " \t\r\n");
  for (; token; token = strtok(NULL, " \t\r\n")) {
    char *end;
    unsigned long v;
    if (token[0] == '0' && (token[1] == 'x' || token[1] == 'X'))
      token += 2;
    v = strtoul(token, &end, 16);
    if (*end || end == token || v > 0xff || (size_t)n == capacity)
      return -1;
    out[n++] = (uint8_t)v;
  }
  return n;
}

int main(void) {
  const netvm_app_desc *app = &NETVM_APP_SYMBOL;
  char error[256];
  static char line[1 << 20];
  static uint8_t packet[1 << 18];
  uint32_t source = 0, i;
  netvm_counters before, after;
  const char *wanted = getenv("NETVM_SOURCE");
  netvm_instance *vm = netvm_instance_create(app, error, sizeof error);
  if (!vm) {
    fprintf(stderr, "netvm: %s\n", error);
    return 1;
  }
  if (wanted) {
    for (source = 0; source < app->num_sources; ++source)
      if (strcmp(app->source_names[source], wanted) == 0)
        break;
    if (source == app->num_sources) {
      fprintf(stderr, "netvm: no source '%s'\n", wanted);
      return 1;
    }
  }
  netvm_instance_set_output(vm, on_output, NULL);
  netvm_instance_set_exception_hook(vm, on_exception, NULL);
  netvm_instance_init(vm);
  flush(&outputs);
  flush(&exceptions);
  while (fgets(line, sizeof line, stdin)) {
    char *p = line;
    long length;
    uint32_t into = source;
    while (isspace((unsigned char)*p))
      ++p;
    if (!*p || *p == '#')
      continue;
    if (*p == '@') { /* "@N": the packet enters by source N */
      char *end;
      unsigned long n = strtoul(p + 1, &end, 10);
      if (end == p + 1 || n >= app->num_sources) {
        fprintf(stderr, "netvm: line %llu: no source '%.*s'\n",
                packet_number + 1, (int)strcspn(p, " \t\r\n"), p);
        return 1;
      }
      into = (uint32_t)n;
      p = end;
    }
    length = parse_line(p, packet, sizeof packet);
    if (length < 0) {
      fprintf(stderr, "netvm: line %llu is not a packet of hex bytes\n",
              packet_number + 1);
      return 1;
    }
    ++packet_number;
    netvm_instance_counters(vm, &before);
    netvm_instance_push(vm, into, packet, (uint32_t)length,
                        (uint32_t)(packet_number - 1), 0);
    netvm_instance_counters(vm, &after);
    flush(&outputs);
    flush(&exceptions);
    if (after.dropped != before.dropped)
      printf("#%llu dropped %llu\n", packet_number,
             (unsigned long long)(after.dropped - before.dropped));
    if (after.unconnected != before.unconnected)
      printf("#%llu unconnected %llu\n", packet_number,
             (unsigned long long)(after.unconnected - before.unconnected));
  }
  for (i = 0; i < app->num_pes; ++i) {
    uint32_t size;
    uint8_t *data = netvm_instance_data(vm, i, &size);
    append(&outputs, "data %s ", app->pes[i].name);
    append_hex(&outputs, data, size);
    append(&outputs, "\n");
  }
  if (app->shared_size) {
    uint32_t size;
    uint8_t *shared = netvm_instance_shared(vm, &size);
    append(&outputs, "shared ");
    append_hex(&outputs, shared, size);
    append(&outputs, "\n");
  }
  flush(&outputs);
  netvm_instance_destroy(vm);
  return 0;
}
