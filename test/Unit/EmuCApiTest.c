/*===- EmuCApiTest.c - The emulator's C API, from C ----------------------===//
 *
 * Compiled as C99, so it also proves that runtime/include/netvm/emu/emu.h is C.
 * test/ME/capi.test assembles the images and runs this program:
 *
 *   EmuCApiTest FORWARD.img HOST-FORWARD.img FAULT.img
 *
 * (examples/me/forward.s, examples/me/host-forward.s and
 * test/ME/Inputs/capi-fault.s). It checks option handling, every misuse
 * it can think of, a forwarder's output against its input, the scalar
 * statistics against the JSON, host code in C moving packets between
 * rings, memory reads, registers and faults, and prints a few values for
 * FileCheck. Exit status 1 if any check failed.
 *
 *===----------------------------------------------------------------------===*/

#include "netvm/emu/emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* The call failed and the error message contains `text`. */
#define EXPECT_ERROR(call, emu, text)                                          \
  do {                                                                         \
    int status_ = (call);                                                      \
    const char *message_ = netvm_emu_error(emu);                               \
    if (status_ != -1 || !strstr(message_, text)) {                            \
      fprintf(stderr,                                                          \
              "%s:%d: %s: expected -1 and an error with '%s', got "            \
              "%d '%s'\n",                                                     \
              __FILE__, __LINE__, #call, text, status_, message_);             \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

static unsigned char *readAll(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  unsigned char *data;
  long length;
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  length = ftell(f);
  fseek(f, 0, SEEK_SET);
  data = malloc(length > 0 ? (size_t)length : 1);
  *size = fread(data, 1, (size_t)length, f);
  fclose(f);
  return data;
}

/* The unsigned number after "KEY": in `json` (the first occurrence after
 * `from`, if given). */
static unsigned long long jsonNumber(const char *json, const char *from,
                                     const char *key) {
  char pattern[64];
  const char *at = from ? strstr(json, from) : json;
  snprintf(pattern, sizeof(pattern), "\"%s\": ", key);
  at = at ? strstr(at, pattern) : NULL;
  return at ? strtoull(at + strlen(pattern), NULL, 10) : ~0ull;
}

/*--- Packets ----------------------------------------------------------------*/

enum { PACKETS = 40, QUEUED = 8, MAX_BYTES = 1514 };

static unsigned char packets[PACKETS][MAX_BYTES];
static size_t lengths[PACKETS];

static void makePackets(void) {
  size_t i, k;
  for (i = 0; i < PACKETS; ++i) {
    lengths[i] = 60 + (i * 97) % (MAX_BYTES - 60);
    for (k = 0; k < lengths[i]; ++k)
      packets[i][k] = (unsigned char)(i * 31 + k * 7);
  }
}

/* The input function: packets QUEUED.. (the first ones are queued). */
struct Input {
  size_t next;
};

static int nextPacket(void *user, const uint8_t **bytes, size_t *length,
                      uint32_t *wire_length) {
  struct Input *in = user;
  if (in->next == PACKETS)
    return 0;
  *bytes = packets[in->next];
  *length = lengths[in->next];
  *wire_length = (uint32_t)lengths[in->next] + 4; /* with an FCS */
  ++in->next;
  return 1;
}

/* The output function: checks each packet against the input. */
struct Output {
  size_t count;
  int mismatches;
  uint64_t lastCycle;
};

static void transmitted(void *user, const uint8_t *bytes, size_t length,
                        uint32_t wire_length, unsigned port, uint64_t cycle) {
  struct Output *out = user;
  size_t i = out->count++;
  uint32_t wire = (uint32_t)lengths[i] + (i < QUEUED ? 0 : 4);
  if (i >= PACKETS || length != lengths[i] ||
      memcmp(bytes, packets[i], length) != 0 || wire_length != wire ||
      port != 0 || cycle < out->lastCycle)
    ++out->mismatches;
  out->lastCycle = cycle;
}

static void countProgress(uint64_t cycle, void *user) {
  (void)cycle;
  ++*(unsigned *)user;
}

/*--- Host code --------------------------------------------------------------*/

/* Moves entries of three words from ring 4 to ring 5 (the descriptors of
 * host-forward.s) every 500 cycles; detaches after the end marker. */
struct Relay {
  uint32_t entry[3];
  int holding;
  unsigned moved;
};

static uint64_t relay(netvm_emu_host *host, void *user) {
  struct Relay *r = user;
  for (;;) {
    if (!r->holding) {
      if (netvm_emu_host_ring_count(host, 4) < 3 ||
          netvm_emu_host_ring_get(host, 4, r->entry, 3) != 0)
        return 500;
      r->holding = 1;
    }
    if (netvm_emu_host_ring_put(host, 5, r->entry, 3) != 0)
      return 500;
    r->holding = 0;
    ++r->moved;
    if (r->entry[0] == 0xffffffffu)
      return 0;
  }
}

/*--- Tests ------------------------------------------------------------------*/

static void testOptions(void) {
  netvm_emu *emu = netvm_emu_create();
  size_t i, count = netvm_emu_option_count();
  int sawLatency = 0;
  EXPECT(emu != NULL);
  EXPECT(count >= 11);
  for (i = 0; i < count; ++i) {
    EXPECT(netvm_emu_option_name(i) && netvm_emu_option_value(i) &&
           netvm_emu_option_help(i) && *netvm_emu_option_help(i));
    if (strcmp(netvm_emu_option_name(i), "latency") == 0)
      sawLatency = 1;
  }
  EXPECT(sawLatency);
  EXPECT(netvm_emu_option_name(count) == NULL);
  EXPECT(netvm_emu_option_help(count) == NULL);

  EXPECT(netvm_emu_set_option(emu, "mes", "2") == 0);
  EXPECT(strcmp(netvm_emu_error(emu), "") == 0);
  EXPECT(netvm_emu_set_option(emu, "latency", "sram=120,dram=240") == 0);
  EXPECT(netvm_emu_set_option(emu, "controller", "dram=0/0") == 0);
  EXPECT(netvm_emu_set_option(emu, "ring-overflow", "drop") == 0);
  EXPECT(netvm_emu_set_option(emu, "host-cost", "100/10") == 0);
  EXPECT(netvm_emu_set_option(emu, "clock-mhz", "400") == 0);
  EXPECT_ERROR(netvm_emu_set_option(emu, "nope", "1"), emu,
               "unknown option 'nope' (one of mes, control-store");
  EXPECT_ERROR(netvm_emu_set_option(emu, "mes", "0"), emu,
               "bad mes '0' (an integer 1-32)");
  EXPECT_ERROR(netvm_emu_set_option(emu, "mes", "eight"), emu, "bad mes");
  EXPECT_ERROR(netvm_emu_set_option(emu, "latency", "sram=1,flash=3"), emu,
               "bad latency 'flash=3' (UNIT=CYCLES, UNIT one of scratch");
  EXPECT_ERROR(netvm_emu_set_option(emu, "controller", "dram=4"), emu,
               "bad controller 'dram=4' (UNIT=CMD/BPC");
  EXPECT_ERROR(netvm_emu_set_option(emu, "ring-overflow", "explode"), emu,
               "(fault or drop)");
  EXPECT_ERROR(netvm_emu_set_option(emu, "clock-mhz", "-5"), emu,
               "a number > 0");
  EXPECT_ERROR(netvm_emu_set_option(emu, "mes", NULL), emu, "NULL");
  EXPECT_ERROR(netvm_emu_set_option(emu, NULL, "1"), emu, "NULL");
  printf("option error: %s\n", netvm_emu_error(emu));
  EXPECT_ERROR(netvm_emu_set_option(NULL, "mes", "1"), NULL, "NULL");
  netvm_emu_destroy(emu);
  netvm_emu_destroy(NULL);
}

static void testMisuse(const char *imagePath, const char *twoMEs) {
  netvm_emu *emu = netvm_emu_create();
  size_t size = 0;
  unsigned char *image = readAll(imagePath, &size), *damaged;
  unsigned char word[4];
  uint8_t byte = 0;

  EXPECT(image != NULL && size > 16);
  EXPECT_ERROR(netvm_emu_run(emu, NULL, NULL, 0), emu,
               "before an image is loaded");
  EXPECT(netvm_emu_stats_json(emu) == NULL);
  EXPECT(netvm_emu_registers(emu) == NULL);
  EXPECT_ERROR(netvm_emu_read_memory(emu, NETVM_EMU_SCRATCH, 0, word, 4), emu,
               "before an image is loaded");
  EXPECT(netvm_emu_cycles(emu) == 0 && netvm_emu_fault_count(emu) == 0);
  EXPECT_ERROR(netvm_emu_load_image(emu, NULL, 10), emu, "NULL");
  EXPECT_ERROR(netvm_emu_load_file(emu, NULL), emu, "NULL");
  EXPECT_ERROR(netvm_emu_load_image(emu, "hello", 5), emu,
               "not a microengine image");
  EXPECT_ERROR(netvm_emu_load_file(emu, "/nonexistent/x.img"), emu,
               "/nonexistent/x.img");
  damaged = malloc(size);
  memcpy(damaged, image, size);
  damaged[size / 2] ^= 0x40;
  EXPECT_ERROR(netvm_emu_load_image(emu, damaged, size), emu, "damaged");
  printf("damaged: %s\n", netvm_emu_error(emu));
  EXPECT_ERROR(netvm_emu_load_image(emu, image, size / 2), emu, "");
  EXPECT_ERROR(netvm_emu_queue_packet(emu, NULL, 4, 0), emu, "NULL");
  EXPECT(netvm_emu_queue_packet(emu, &byte, 0, 0) == 0);
  EXPECT_ERROR(netvm_emu_attach_host(emu, NULL, NULL, 0), emu, "NULL");
  EXPECT(netvm_emu_attach_host(emu, relay, NULL, 0) == 0);
  EXPECT_ERROR(netvm_emu_attach_host(emu, relay, NULL, 0), emu,
               "already attached");

  EXPECT(netvm_emu_load_image(emu, image, size) == 0);
  EXPECT_ERROR(netvm_emu_load_image(emu, image, size), emu, "already loaded");
  EXPECT_ERROR(netvm_emu_load_file(emu, imagePath), emu, "already loaded");
  EXPECT_ERROR(netvm_emu_set_option(emu, "mes", "1"), emu,
               "after the image was loaded");
  EXPECT_ERROR(netvm_emu_read_memory(emu, 3, 0, word, 4), emu,
               "unknown memory 3");
  EXPECT_ERROR(netvm_emu_read_memory(emu, NETVM_EMU_SCRATCH, 0x4000, word, 4),
               emu, "outside scratch");
  EXPECT_ERROR(netvm_emu_read_memory(emu, NETVM_EMU_DRAM, 0, NULL, 4), emu,
               "NULL");
  EXPECT_ERROR(netvm_emu_queue_packet_on(emu, NETVM_EMU_PORTS, &byte, 1, 0),
               emu, "receive port 16 does not exist (0-15)");
  EXPECT_ERROR(netvm_emu_set_port_input(emu, 99, nextPacket, NULL), emu,
               "receive port 99");
  free(damaged);
  free(image);
  netvm_emu_destroy(emu);

  /* An image for more MEs than the machine has. */
  emu = netvm_emu_create();
  EXPECT(netvm_emu_set_option(emu, "mes", "1") == 0);
  EXPECT_ERROR(netvm_emu_load_file(emu, twoMEs), emu, "the machine has 1");
  printf("too few MEs: %s\n", netvm_emu_error(emu));
  netvm_emu_destroy(emu);

  /* NULL emulators. */
  EXPECT(netvm_emu_run(NULL, NULL, NULL, 0) == -1);
  EXPECT(netvm_emu_load_file(NULL, imagePath) == -1);
  EXPECT(netvm_emu_stats_json(NULL) == NULL);
  EXPECT(netvm_emu_cycles(NULL) == 0);
  EXPECT(netvm_emu_fault(NULL, 0) == NULL);
  EXPECT(strstr(netvm_emu_error(NULL), "NULL") != NULL);
}

/* The forwarder: packets out as they came in; the scalar statistics are the
 * JSON's. Returns the cycles. */
static uint64_t testForward(const char *imagePath, const char *latency) {
  netvm_emu *emu = netvm_emu_create();
  struct Input in = {QUEUED};
  struct Output out = {0, 0, 0};
  unsigned progressCalls = 0;
  size_t size = 0, i;
  unsigned char *image = readAll(imagePath, &size);
  char *json;
  uint64_t cycles;

  if (latency)
    EXPECT(netvm_emu_set_option(emu, "latency", latency) == 0);
  EXPECT(netvm_emu_load_image(emu, image, size) == 0);
  free(image); /* the emulator keeps a copy */
  for (i = 0; i < QUEUED; ++i)
    EXPECT(netvm_emu_queue_packet(emu, packets[i], lengths[i], 0) == 0);
  EXPECT(netvm_emu_set_input(emu, nextPacket, &in) == 0);
  EXPECT(netvm_emu_set_output(emu, transmitted, &out) == 0);
  EXPECT(netvm_emu_run(emu, countProgress, &progressCalls, 1000) == 0);
  EXPECT(strcmp(netvm_emu_error(emu), "") == 0);

  EXPECT(out.count == PACKETS && out.mismatches == 0);
  EXPECT(progressCalls > 0);
  cycles = netvm_emu_cycles(emu);
  EXPECT(cycles >= out.lastCycle && cycles > 0);
  EXPECT(netvm_emu_packets_offered(emu) == PACKETS);
  EXPECT(netvm_emu_packets_received(emu) == PACKETS);
  EXPECT(netvm_emu_packets_sent(emu) == PACKETS);
  EXPECT(netvm_emu_packets_dropped(emu) == 0);
  EXPECT(netvm_emu_fault_count(emu) == 0);
  EXPECT(*netvm_emu_stop_reason(emu) != 0);

  json = netvm_emu_stats_json(emu);
  EXPECT(json != NULL);
  if (json) {
    EXPECT(jsonNumber(json, NULL, "cycles") == cycles);
    EXPECT(jsonNumber(json, "\"packets\"", "offered") == PACKETS);
    EXPECT(jsonNumber(json, "\"packets\"", "received") == PACKETS);
    EXPECT(jsonNumber(json, "\"packets\"", "sent") == PACKETS);
    EXPECT(jsonNumber(json, "\"packets\"", "dropped") == 0);
    EXPECT(strstr(json, "\"faults\": []") != NULL);
    netvm_emu_free(json);
  }

  /* Once only. */
  EXPECT_ERROR(netvm_emu_run(emu, NULL, NULL, 0), emu, "already run");
  EXPECT_ERROR(netvm_emu_queue_packet(emu, packets[0], 60, 0), emu,
               "after the run");
  EXPECT_ERROR(netvm_emu_set_input(emu, NULL, NULL), emu, "after the run");
  EXPECT_ERROR(netvm_emu_attach_host(emu, relay, NULL, 0), emu,
               "after the run");
  netvm_emu_destroy(emu);
  return cycles;
}

static int failingInput(void *user, const uint8_t **bytes, size_t *length,
                        uint32_t *wire_length) {
  (void)user;
  (void)bytes;
  (void)length;
  (void)wire_length;
  return -1;
}

static void testFailingInput(const char *imagePath) {
  netvm_emu *emu = netvm_emu_create();
  EXPECT(netvm_emu_load_file(emu, imagePath) == 0);
  EXPECT(netvm_emu_set_input(emu, failingInput, NULL) == 0);
  EXPECT_ERROR(netvm_emu_run(emu, NULL, NULL, 0), emu,
               "the input function failed");
  netvm_emu_destroy(emu);
}

static void testHost(const char *imagePath) {
  netvm_emu *emu = netvm_emu_create();
  struct Input in = {QUEUED};
  struct Output out = {0, 0, 0};
  struct Relay r = {{0, 0, 0}, 0, 0};
  size_t i;
  char *json;

  EXPECT(netvm_emu_load_file(emu, imagePath) == 0);
  for (i = 0; i < QUEUED; ++i)
    EXPECT(netvm_emu_queue_packet(emu, packets[i], lengths[i], 0) == 0);
  EXPECT(netvm_emu_set_input(emu, nextPacket, &in) == 0);
  EXPECT(netvm_emu_set_output(emu, transmitted, &out) == 0);
  EXPECT(netvm_emu_attach_host(emu, relay, &r, 0) == 0);
  EXPECT(netvm_emu_run(emu, NULL, NULL, 0) == 0);
  EXPECT(out.count == PACKETS && out.mismatches == 0);
  EXPECT(r.moved == PACKETS + 1); /* and the marker */
  EXPECT(netvm_emu_fault_count(emu) == 0);
  json = netvm_emu_stats_json(emu);
  EXPECT(json != NULL);
  if (json) {
    EXPECT(jsonNumber(json, "\"host\"", "gets") == PACKETS + 1);
    EXPECT(jsonNumber(json, "\"host\"", "puts") == PACKETS + 1);
    EXPECT(jsonNumber(json, "\"host\"", "words") == 6 * (PACKETS + 1));
    printf("host: %llu gets, %llu puts\n", jsonNumber(json, "\"host\"", "gets"),
           jsonNumber(json, "\"host\"", "puts"));
    netvm_emu_free(json);
  }
  netvm_emu_destroy(emu);
}

/* Packets on receive port 5 only: the forwarder receives them all. */
static void countSent(void *user, const uint8_t *bytes, size_t length,
                      uint32_t wire_length, unsigned port, uint64_t cycle) {
  (void)bytes, (void)wire_length, (void)port, (void)cycle;
  *(size_t *)user += length;
}

static void testPorts(const char *imagePath) {
  netvm_emu *emu = netvm_emu_create();
  size_t bytes = 0;
  struct Input in = {PACKETS - 2};
  char *json;
  EXPECT(netvm_emu_load_file(emu, imagePath) == 0);
  EXPECT(netvm_emu_queue_packet_on(emu, 5, packets[0], lengths[0], 0) == 0);
  EXPECT(netvm_emu_set_port_input(emu, 5, nextPacket, &in) == 0);
  EXPECT(netvm_emu_set_output(emu, countSent, &bytes) == 0);
  EXPECT(netvm_emu_run(emu, NULL, NULL, 0) == 0);
  EXPECT(netvm_emu_packets_sent(emu) == 3);
  EXPECT(bytes == lengths[0] + lengths[PACKETS - 2] + lengths[PACKETS - 1]);
  json = netvm_emu_stats_json(emu);
  EXPECT(json && jsonNumber(json, "\"packets\"", "received") == 3);
  netvm_emu_free(json);
  netvm_emu_destroy(emu);
}

static void testFault(const char *imagePath) {
  netvm_emu *emu = netvm_emu_create();
  unsigned char word[4] = {0, 0, 0, 0};
  char *registers;

  EXPECT(netvm_emu_load_file(emu, imagePath) == 0);
  EXPECT(netvm_emu_run(emu, NULL, NULL, 0) == 0);
  EXPECT(netvm_emu_fault_count(emu) == 1);
  EXPECT(netvm_emu_fault(emu, 1) == NULL);
  if (netvm_emu_fault(emu, 0))
    printf("fault: %s\n", netvm_emu_fault(emu, 0));
  EXPECT(netvm_emu_read_memory(emu, NETVM_EMU_SRAM, 0x100, word, 4) == 0);
  printf("sram 0x100: %02x %02x %02x %02x\n", word[0], word[1], word[2],
         word[3]);
  registers = netvm_emu_registers(emu);
  EXPECT(registers != NULL && strstr(registers, "me0.ctx0") != NULL);
  netvm_emu_free(registers);
  netvm_emu_destroy(emu);
}

int main(int argc, char **argv) {
  uint64_t cycles, slower;
  if (argc != 4) {
    fprintf(stderr, "usage: %s FORWARD.img HOST-FORWARD.img FAULT.img\n",
            argv[0]);
    return 2;
  }
  makePackets();
  testOptions();
  testMisuse(argv[1], argv[2]);
  cycles = testForward(argv[1], NULL);
  slower = testForward(argv[1], "rx=400");
  printf("forward: %d packets, %s cycles with a slower receive\n", PACKETS,
         slower > cycles ? "more" : "no more");
  testFailingInput(argv[1]);
  testPorts(argv[1]);
  testHost(argv[2]);
  testFault(argv[3]);
  printf("%d failures\n", failures);
  return failures ? 1 : 0;
}
