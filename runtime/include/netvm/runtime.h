/*===- runtime.h - Running compiled NetVM applications -------------*- C -*-===*
 *
 * The host side of a compiled application (JIT or AOT): instantiate it from
 * its descriptor (abi.h), push packets in, get forwarded packets out through
 * a callback, and inspect or change its state (the control plane). One
 * instance processes one packet at a time; create one instance per thread,
 * or serialize calls, to use several threads.
 *
 *   const netvm_app_desc *app = &netvm_app_myapp;   // from the AOT object
 *   netvm_instance *vm = netvm_instance_create(app, err, sizeof err);
 *   netvm_instance_set_output(vm, on_packet, user);
 *   netvm_instance_init(vm);                         // init handlers
 *   netvm_instance_push(vm, 0, bytes, length, sec, usec);
 *   ...
 *   netvm_instance_destroy(vm);
 *
 * Plain C11; builds for every target the compiler supports.
 *
 *===----------------------------------------------------------------------===*/

#ifndef NETVM_RUNTIME_RUNTIME_H
#define NETVM_RUNTIME_RUNTIME_H

#include "netvm/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct netvm_instance netvm_instance;

/* A packet leaves the application through sink `sink`. The exchange buffer
 * is only valid during the call. */
typedef void (*netvm_output_fn)(void *user, uint32_t sink,
                                const netvm_exbuf *xb);
/* An exception was raised at descriptor site `site` (NULL if unknown). */
typedef void (*netvm_exception_fn)(void *user, uint32_t kind,
                                   const netvm_site *site);
/* Pull mode: fill `xb` (through netvm_exbuf_assign) with the next packet of
 * source `source`; return 0 when there is none. */
typedef int (*netvm_source_fn)(void *user, uint32_t source, netvm_exbuf *xb);

/* Instantiate `app`: data memory zeroed, coprocessors created. NULL on
 * error, with a message in `error`. */
netvm_instance *netvm_instance_create(const netvm_app_desc *app, char *error,
                                      size_t error_size);
void netvm_instance_destroy(netvm_instance *vm);
const netvm_app_desc *netvm_instance_app(const netvm_instance *vm);

void netvm_instance_set_output(netvm_instance *vm, netvm_output_fn fn,
                               void *user);
void netvm_instance_set_exception_hook(netvm_instance *vm,
                                       netvm_exception_fn fn, void *user);
void netvm_instance_set_source(netvm_instance *vm, netvm_source_fn fn,
                               void *user);
/* Loop iterations each packet may run (default 1048576). */
void netvm_instance_set_watchdog(netvm_instance *vm, uint64_t budget);

/* Run every init handler once. */
void netvm_instance_init(netvm_instance *vm);
/* Push one packet in through source `source` and run it to completion. */
void netvm_instance_push(netvm_instance *vm, uint32_t source,
                         const uint8_t *packet, uint32_t length,
                         uint32_t seconds, uint32_t microseconds);
/* Pull one exchange buffer out of sink `sink` (pull connections). Returns 1
 * if one came out. */
int netvm_instance_pull(netvm_instance *vm, uint32_t sink);

/* Copy `length` bytes into `xb`, making it the current exchange buffer
 * (for netvm_source_fn). Returns 0 if memory runs out. */
int netvm_exbuf_assign(netvm_instance *vm, netvm_exbuf *xb,
                       const uint8_t *packet, uint32_t length,
                       uint32_t seconds, uint32_t microseconds);

/*===- Control plane --------------------------------------------------------===*/

/* Data memory of NetPE `pe` (read and write it between packets). */
uint8_t *netvm_instance_data(netvm_instance *vm, uint32_t pe, uint32_t *size);
uint8_t *netvm_instance_shared(netvm_instance *vm, uint32_t *size);

typedef struct netvm_counters {
  uint64_t packets;                       /* pushed in */
  uint64_t dropped;                       /* netvm.drop */
  uint64_t unconnected;                   /* sent to a port with no link */
  uint64_t exceptions[NETVM_EXC_KINDS];   /* by kind */
} netvm_counters;

typedef struct netvm_pe_counters {
  uint64_t runs, sent, dropped, exceptions;
} netvm_pe_counters;

void netvm_instance_counters(const netvm_instance *vm, netvm_counters *out);
void netvm_instance_pe_counters(const netvm_instance *vm, uint32_t pe,
                                netvm_pe_counters *out);
/* Packets and bytes that left through sink `sink`. */
void netvm_instance_sink_counters(const netvm_instance *vm, uint32_t sink,
                                  uint64_t *packets, uint64_t *bytes);
const char *netvm_exception_name(uint32_t kind);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NETVM_RUNTIME_RUNTIME_H */
