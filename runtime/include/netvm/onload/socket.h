/*===- socket.h - UDP sockets over the onload layer, from C -------*- C -*-===*
 *
 * A program's socket API over one of the onload layer's three designs
 * (docs/onload.md, "Socket API"): open a stack of emu-nic, softnic or
 * onloader on the emulator, bind UDP ports, feed received frames (bytes
 * or a pcap file), recv() datagrams, send() them through the design's
 * transmit path and collect the frames that leave. recv() never waits:
 * with nothing queued it runs the emulator over the frames on the wire,
 * and reports NETVM_ONLOAD_WOULD_BLOCK if that gave the socket nothing.
 * Handles are opaque; every call returns a status, and
 * netvm_onload_error() the message of the stack's last failure.
 *
 * The stack runs an ME image: the assembled program of the design
 * (`netvm-onload --design=D --write-image=FILE`, or netvm_onload_program
 * and the ME assembler; netvm.onload from Python assembles it itself).
 *
 *===----------------------------------------------------------------------===*/

#ifndef NETVM_ONLOAD_SOCKET_H
#define NETVM_ONLOAD_SOCKET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct netvm_onload_stack netvm_onload_stack;

enum netvm_onload_status {
  NETVM_ONLOAD_OK = 0,
  /* recv: nothing for this socket, and nothing more on the wire. */
  NETVM_ONLOAD_WOULD_BLOCK = 1,
  /* A bad argument: an unknown design or socket, a null pointer, a
   * datagram too large for one frame. */
  NETVM_ONLOAD_INVALID = -1,
  /* bind: the port is bound already. */
  NETVM_ONLOAD_IN_USE = -2,
  /* bind: the socket table (the onloader's control blocks in SRAM) is
   * full. */
  NETVM_ONLOAD_NO_SPACE = -3,
  /* A file could not be read. */
  NETVM_ONLOAD_IO = -4,
  /* The emulated stack failed (an ME fault, a call whose run did not
   * finish); the stack stays failed. */
  NETVM_ONLOAD_FAILED = -5
};

/* What netvm_onload_open sets up: the interface's features as
 * netvm-onload's options set them. netvm_onload_options_init fills in the
 * defaults. */
typedef struct netvm_onload_options {
  const char *design;      /* "emu-nic", "softnic" or "onloader" */
  int pipelined_dma;       /* nonzero: double-buffered DMA descriptors */
  int adaptive_updates;    /* nonzero: adaptive HEAD/TAIL updates */
  int combining;           /* nonzero: small messages share a DMA */
  const char *notify;      /* "adaptive", "interrupts" or "polling" */
  int mapping_cache;       /* onloader: keep user-buffer mappings */
  double dma_read_mbps;    /* DMA reads of host memory, MB/s */
  unsigned rx_mes, tx_mes; /* receiving and transmitting MEs */
  uint32_t local_ip;       /* the stack's address, host byte order */
} netvm_onload_options;

/* A received datagram's sender, host byte order. */
typedef struct netvm_onload_address {
  uint32_t ip;
  uint16_t port;
} netvm_onload_address;

/* The host's work, the drops by place and the traffic so far. */
typedef struct netvm_onload_stats {
  uint64_t host_cycles; /* on the model of docs/onload.md, "Cost model" */
  uint64_t interrupts, syscalls, wakeups, polls;
  uint64_t copied_bytes, checksummed_bytes, pio_read_bytes;
  uint64_t protocol_runs, mappings, mapping_hits;
  uint64_t fed, received, received_bytes, truncated, would_block, queued;
  uint64_t sent, sent_bytes, transmitted, transmit_mismatches;
  uint64_t drop_fabric;
  uint64_t drop_me_not_udp, drop_me_fragment, drop_me_checksum,
      drop_me_no_socket, drop_me_malformed;
  uint64_t drop_host_not_udp, drop_host_fragment, drop_host_checksum,
      drop_host_no_socket, drop_host_malformed;
  uint64_t dma_transfers, dma_bytes, tail_updates, head_updates;
  uint64_t runs, cycles; /* machine runs, the emulated clock (cycles) */
  double clock_mhz;
  /* Summed over datagrams received: frame fed to recv's return; over
   * frames transmitted: send to leaving the fabric; the program's own
   * work (netvm_onload_compute). Cycles. */
  uint64_t receive_latency_cycles, send_latency_cycles, compute_cycles;
} netvm_onload_stats;

void netvm_onload_options_init(netvm_onload_options *options);

/* The ME program of the options' design, as assembly text: *length is its
 * size; at most `capacity` - 1 bytes of it and a terminator go into
 * `buffer` (may be null with `capacity` 0). Assemble it into the image
 * netvm_onload_open takes (netvm/Target/ME/Assembler.h). */
int netvm_onload_program(const netvm_onload_options *options, char *buffer,
                         size_t capacity, size_t *length);

/* Opens a stack running the ME image `image` (`size` bytes, as
 * netvm-onload --write-image writes it). On failure *stack is null and,
 * if `error` is not null, a message of at most `error_size` bytes
 * (terminated) is put there. */
int netvm_onload_open(const netvm_onload_options *options, const void *image,
                      size_t size, netvm_onload_stack **stack, char *error,
                      size_t error_size);
void netvm_onload_close(netvm_onload_stack *stack);

/* The message of the stack's last failed call ("" if none). */
const char *netvm_onload_error(const netvm_onload_stack *stack);

/* A socket bound to UDP port `port` (1-65535): its number in *socket. */
int netvm_onload_bind(netvm_onload_stack *stack, unsigned port, int *socket);

/* Received frames (Ethernet) onto the wire. */
int netvm_onload_feed(netvm_onload_stack *stack, const void *frame,
                      size_t length);
int netvm_onload_feed_pcap(netvm_onload_stack *stack, const char *path);

/* The next datagram of `socket`: at most `capacity` bytes into `buffer`,
 * its full length in *length (larger than `capacity`: truncated, as POSIX
 * UDP does, and counted), its sender in *from (may be null). */
int netvm_onload_recv(netvm_onload_stack *stack, int socket, void *buffer,
                      size_t capacity, size_t *length,
                      netvm_onload_address *from);

/* Sends `length` bytes (at most 1472) from `socket` to `ip`:`port` (host
 * byte order) through the design's transmit path: the host takes it up as
 * the machine runs on (any later call that waits or takes time), and a
 * flush (netvm_onload_flush, _transmitted_count, _stats) waits until it
 * has left. */
int netvm_onload_send(netvm_onload_stack *stack, int socket, uint32_t ip,
                      uint16_t port, const void *data, size_t length);

/* Runs the stack's machine until everything fed has been handled and
 * every datagram sent has left. */
int netvm_onload_flush(netvm_onload_stack *stack);

/* The program's own work between calls: the host processor is busy for
 * `cycles` while the NP goes on (think time on the emulated clock). */
int netvm_onload_compute(netvm_onload_stack *stack, uint64_t cycles);

/* The emulated clock: the cycle the stack's machine stands at (a frame
 * fed now reaches the wire at this cycle). */
int netvm_onload_now(const netvm_onload_stack *stack, uint64_t *cycle);

/* The cycle frame `index` (netvm_onload_transmitted) left the fabric. */
int netvm_onload_transmitted_at(const netvm_onload_stack *stack, size_t index,
                                uint64_t *cycle);

/* Onloader: the datagram count the receiving MEs keep in `socket`'s
 * control block in SRAM (NETVM_ONLOAD_INVALID in other designs). */
int netvm_onload_np_count(const netvm_onload_stack *stack, int socket,
                          uint64_t *count);

/* The frames that left, after a flush: how many, and frame `index` (its
 * bytes stay valid until the stack is closed). */
int netvm_onload_transmitted_count(netvm_onload_stack *stack, size_t *count);
int netvm_onload_transmitted(const netvm_onload_stack *stack, size_t index,
                             const uint8_t **bytes, size_t *length);

/* Flushes, then fills *stats. */
int netvm_onload_stats_get(netvm_onload_stack *stack,
                           netvm_onload_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* NETVM_ONLOAD_SOCKET_H */
