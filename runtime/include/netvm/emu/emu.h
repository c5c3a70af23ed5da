/*===- emu.h - Embedding the ME emulator from C ------------------*- C -*-===//
 *
 * Creates, configures and runs the IXP-like network-processor emulator
 * from C (C99 or later, or C++), without the C++ API of Emulator.h:
 *
 *     netvm_emu *emu = netvm_emu_create();
 *     netvm_emu_set_option(emu, "latency", "dram=240");  before loading
 *     netvm_emu_load_file(emu, "forward.img");           an image
 *     netvm_emu_set_input(emu, next_packet, &state);     and/or queue_packet
 *     netvm_emu_set_output(emu, transmitted, &state);
 *     netvm_emu_run(emu, NULL, NULL, 0);
 *     ... netvm_emu_cycles(emu), netvm_emu_stats_json(emu) ...
 *     netvm_emu_destroy(emu);
 *
 * Images are what netvm-me-as writes (docs/me-isa.md, "Image format").
 * Options are netvm-emu's machine options, with the same names and values
 * ("Machine parameters"). An emulator loads one image and runs once.
 *
 * Errors: functions that can fail return 0 on success and -1 (or NULL) on
 * failure, and netvm_emu_error then says why; nothing aborts, and a
 * misuse (a NULL argument, a call out of order) is such an error. Such a
 * call that succeeds leaves the message empty. Not thread-safe: one
 * thread at a time per emulator; distinct emulators are independent.
 *
 *===----------------------------------------------------------------------===*/

#ifndef NETVM_EMU_EMU_H
#define NETVM_EMU_EMU_H

#include <stddef.h>
#include <stdint.h>

#include "netvm/emu/host.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct netvm_emu netvm_emu;

/* A new emulator with the default machine (docs/me-isa.md), or NULL if
 * memory ran out. */
netvm_emu *netvm_emu_create(void);

/* Frees the emulator and everything it holds; NULL is ignored. */
void netvm_emu_destroy(netvm_emu *emu);

/* The message of the last call that failed, or "" after one that
 * succeeded. Valid until the next call on `emu`. With a NULL `emu`, says
 * so. */
const char *netvm_emu_error(const netvm_emu *emu);

/* Frees what netvm_emu_stats_json and netvm_emu_registers return. */
void netvm_emu_free(void *memory);

/*--- Configuration ---------------------------------------------------------*/

/* Sets machine option `name` to `value` (as netvm-emu --NAME=VALUE, e.g.
 * "mes" "2", "latency" "sram=120,dram=240", "ring-overflow" "drop"), before
 * the image is loaded. List options (latency, controller) may be set
 * repeatedly; each setting changes only what it names. 0, or -1 for an
 * unknown option or a bad value (the message says what is allowed). */
int netvm_emu_set_option(netvm_emu *emu, const char *name, const char *value);

/* The machine options: their number, and for each its name, the shape of
 * its value and a one-line description (NULL beyond the last). */
size_t netvm_emu_option_count(void);
const char *netvm_emu_option_name(size_t index);
const char *netvm_emu_option_value(size_t index);
const char *netvm_emu_option_help(size_t index);

/*--- The program -----------------------------------------------------------*/

/* Loads an image from memory (copied; `bytes` may be freed afterwards) or
 * from a file, checks it against the machine and resets it. Once per
 * emulator. 0, or -1 for a damaged or foreign image, one that does not fit
 * the machine (MEs, control store, memories), or a second load. */
int netvm_emu_load_image(netvm_emu *emu, const void *bytes, size_t size);
int netvm_emu_load_file(netvm_emu *emu, const char *path);

/*--- Packets ---------------------------------------------------------------*/

/* Supplies the next packet on the receive side: returns 1 and sets
 * `*bytes` and `*length` (and `*wire_length`, its length on the wire,
 * which is preset to 0: the same as `*length`), 0 at the end of the input,
 * or -1 to end the input with an error (netvm_emu_run then fails). The
 * bytes stay the caller's: the emulator copies them before it calls the
 * function again or returns, so they need only stay valid until then. */
typedef int (*netvm_emu_input_fn)(void *user, const uint8_t **bytes,
                                  size_t *length, uint32_t *wire_length);

/* A packet left transmit port `port` at ME cycle `cycle`. `bytes` (the
 * `length` bytes the ME sent; `wire_length` on the wire) is valid only
 * during the call. */
typedef void (*netvm_emu_output_fn)(void *user, const uint8_t *bytes,
                                    size_t length, uint32_t wire_length,
                                    unsigned port, uint64_t cycle);

/* Copies a packet into the input queue of receive port 0 (`wire_length`
 * 0: `length`). Queued packets are received first, in order, then those
 * of the port's input function. Before the run. 0, or -1 (NULL bytes with
 * a length, after the run). */
int netvm_emu_queue_packet(netvm_emu *emu, const uint8_t *bytes, size_t length,
                           uint32_t wire_length);

/* Sets (or with NULL removes) the input function of receive port 0, and
 * the output function (every transmit port). Before the run. 0 or -1. */
int netvm_emu_set_input(netvm_emu *emu, netvm_emu_input_fn fn, void *user);
int netvm_emu_set_output(netvm_emu *emu, netvm_emu_output_fn fn, void *user);

/* The same for receive port `port` (0 to NETVM_EMU_PORTS - 1): ports with
 * input take turns filling the receive buffers, or each delivers at the
 * line rate (docs/me-isa.md, "Receive and transmit"); a received packet's
 * descriptor names its port. -1 also for a port beyond the last. */
#define NETVM_EMU_PORTS 16
int netvm_emu_queue_packet_on(netvm_emu *emu, unsigned port,
                              const uint8_t *bytes, size_t length,
                              uint32_t wire_length);
int netvm_emu_set_port_input(netvm_emu *emu, unsigned port,
                             netvm_emu_input_fn fn, void *user);

/*--- Host code -------------------------------------------------------------*/

/* Attaches host code (runtime/include/netvm/emu/host.h): `fn` runs first at
 * cycle `first_cycle`, then whenever it asks. One host function per emulator,
 * before the run. 0 or -1. */
int netvm_emu_attach_host(netvm_emu *emu, netvm_emu_host_fn fn, void *user,
                          uint64_t first_cycle);

/*--- Running ---------------------------------------------------------------*/

/* Runs the loaded image until the machine is quiescent, every ME stopped
 * or the max-cycles option's limit. `progress`, if not NULL, is called
 * every `progress_cycles` cycles. Faults of the program are results, not
 * errors (netvm_emu_fault_count). 0, or -1 without an image, on a second
 * run, or when the input function returned -1. */
int netvm_emu_run(netvm_emu *emu, void (*progress)(uint64_t cycle, void *user),
                  void *user, uint64_t progress_cycles);

/*--- Results ---------------------------------------------------------------*/

/* The statistics as JSON, exactly as netvm-emu --stats-json writes them
 * (without the final newline): a string to free with netvm_emu_free, or
 * NULL (no image loaded, or no memory). Available after loading; all
 * zero before the run. */
char *netvm_emu_stats_json(netvm_emu *emu);

/* A few statistics directly (0 for a NULL emulator or before loading):
 * the cycles of the run, packets offered to the receive side, received by
 * the MEs, dropped for lack of a receive buffer, sent. */
uint64_t netvm_emu_cycles(const netvm_emu *emu);
uint64_t netvm_emu_packets_offered(const netvm_emu *emu);
uint64_t netvm_emu_packets_received(const netvm_emu *emu);
uint64_t netvm_emu_packets_dropped(const netvm_emu *emu);
uint64_t netvm_emu_packets_sent(const netvm_emu *emu);

/* Why the run stopped ("" before it). */
const char *netvm_emu_stop_reason(const netvm_emu *emu);

/* The faults of the run, and each as text: "ME 0 context 0 pc 2 cycle 599:
 * REASON\n    INSTRUCTION" (NULL beyond the last). Valid until the
 * emulator is destroyed. */
size_t netvm_emu_fault_count(const netvm_emu *emu);
const char *netvm_emu_fault(const netvm_emu *emu, size_t index);

/* Copies `length` bytes of emulated memory at byte `address` to `out`:
 * `memory` is NETVM_EMU_SCRATCH, NETVM_EMU_SRAM or NETVM_EMU_DRAM (host.h;
 * words are big-endian, as the MEs see them). After loading. 0, or -1 for
 * an unknown memory or a range outside it. */
int netvm_emu_read_memory(netvm_emu *emu, unsigned memory, uint32_t address,
                          void *out, size_t length);

/* The registers of every enabled context of every loaded ME, as netvm-emu
 * --dump-regs prints them: a string to free with netvm_emu_free, or NULL
 * (no image loaded). */
char *netvm_emu_registers(netvm_emu *emu);

#ifdef __cplusplus
}
#endif

#endif /* NETVM_EMU_EMU_H */
