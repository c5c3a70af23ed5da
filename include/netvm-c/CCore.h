/*===- netvm-c/CCore.h - The C-CORE layer's C API for the host side -*- C
 * -*-===*
 *
 * The host side of the C-CORE layer (docs/ccore.md, "The C API") for C
 * programs: message schemas, channels and the classifier, chains of an ME
 * stage (a query, compiled for the emulator's microengines or, placed on
 * the host, JIT-compiled) and an optional host stage, runs over a batch of
 * messages with hot-swaps, reconfigurations and automatic specialization,
 * and the resource report.
 *
 * Conventions: every object is an opaque handle made by a `_create`,
 * `_parse` or `_run` function and released by its `_free` (NULL is
 * accepted there). Every call that can fail returns a netvm_ccore_status;
 * on failure, netvm_ccore_last_error() returns the message of the last
 * failed call of the calling thread (a schema's or a query's errors as
 * "file:line:col: error: ..." lines). No C++ exception crosses the API.
 * Strings and byte arrays returned by a getter stay valid until their
 * handle is freed or changed. Handles are not thread-safe; distinct
 * handles may be used from distinct threads.
 *
 * The library behind it is NetVMCAPICCore (lib/CAPI/CCore.cpp), on the
 * compiler's floor: a chain's handlers are compiled when it is deployed.
 *
 *===----------------------------------------------------------------------===*/

#ifndef NETVM_C_CCORE_H
#define NETVM_C_CCORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum netvm_ccore_status {
  NETVM_CCORE_OK = 0,
  /* A null handle or pointer, a value out of range, or a call out of
   * order (e.g. running a chain that is not deployed). */
  NETVM_CCORE_INVALID_ARGUMENT = 1,
  /* A schema or query text with errors (file:line:col in the message). */
  NETVM_CCORE_PARSE_ERROR = 2,
  /* No such format, stream, channel or parameter. */
  NETVM_CCORE_NOT_FOUND = 3,
  /* A handler does not compile for its side (or the spare's image does
   * not fit the running one). */
  NETVM_CCORE_COMPILE_ERROR = 4,
  /* Placement refused the chain: it fits neither the MEs nor the host. */
  NETVM_CCORE_REFUSED = 5,
  /* A run failed: the machine faulted, a swap could not be made, a host
   * stage failed. */
  NETVM_CCORE_RUN_ERROR = 6
} netvm_ccore_status;

/* The message of the calling thread's last failed call ("" if none). */
const char *netvm_ccore_last_error(void);
/* The name of a status ("ok", "invalid argument", ...). */
const char *netvm_ccore_status_name(netvm_ccore_status status);

/*--- Messages: a list of byte strings -----------------------------------*/

typedef struct netvm_ccore_messages netvm_ccore_messages;

netvm_ccore_status netvm_ccore_messages_create(netvm_ccore_messages **out);
void netvm_ccore_messages_free(netvm_ccore_messages *messages);
/* Appends a copy of `length` bytes. */
netvm_ccore_status netvm_ccore_messages_append(netvm_ccore_messages *messages,
                                               const void *bytes,
                                               size_t length);
size_t netvm_ccore_messages_count(const netvm_ccore_messages *messages);
/* Message `index` (0-based): its bytes and length. */
netvm_ccore_status
netvm_ccore_messages_get(const netvm_ccore_messages *messages, size_t index,
                         const uint8_t **bytes, size_t *length);

/*--- Schemas --------------------------------------------------------------*/

typedef struct netvm_ccore_schema netvm_ccore_schema;

/* Parses a schema (the schema language of docs/ccore.md); `file` names
 * the text in errors. */
netvm_ccore_status netvm_ccore_schema_parse(const char *text, const char *file,
                                            netvm_ccore_schema **out);
netvm_ccore_status netvm_ccore_schema_load(const char *path,
                                           netvm_ccore_schema **out);
void netvm_ccore_schema_free(netvm_ccore_schema *schema);
/* Appends `count` generated messages of `format` to `out` (as
 * `netvm-ccore gen`): integer fields drawn from `ranges` ("field=lo:hi",
 * comma-separated; NULL or "": whole types), stream 1, seed `seed`. */
netvm_ccore_status netvm_ccore_schema_generate(const netvm_ccore_schema *schema,
                                               const char *format,
                                               uint64_t count, uint64_t seed,
                                               const char *ranges,
                                               netvm_ccore_messages *out);

/*--- Channels and the classifier ----------------------------------------*/

typedef struct netvm_ccore_channels netvm_ccore_channels;

/* The schema must outlive the channels. */
netvm_ccore_status netvm_ccore_channels_create(const netvm_ccore_schema *schema,
                                               netvm_ccore_channels **out);
void netvm_ccore_channels_free(netvm_ccore_channels *channels);
/* Opens the channel (source, destination, port, format) if new and binds
 * `stream` to it. */
netvm_ccore_status netvm_ccore_channels_open(netvm_ccore_channels *channels,
                                             uint32_t stream,
                                             const char *source,
                                             const char *destination,
                                             uint16_t port, const char *format);
/* Classifies one message: `*verdict` is "queued", or why not ("short",
 * "unknown-stream", "wrong-format"; counted, never silently lost). */
netvm_ccore_status netvm_ccore_channels_classify(netvm_ccore_channels *channels,
                                                 const void *bytes,
                                                 size_t length,
                                                 const char **verdict);
/* Moves the queue of `format` (arrival order) to the end of `out`. */
netvm_ccore_status netvm_ccore_channels_take(netvm_ccore_channels *channels,
                                             const char *format,
                                             netvm_ccore_messages *out);

/*--- Chains ---------------------------------------------------------------*/

typedef struct netvm_ccore_chain netvm_ccore_chain;
typedef struct netvm_ccore_run netvm_ccore_run;

/* A chain whose first stage is `me_query` (over `schema`, which must
 * outlive it). Set it up, then deploy it. */
netvm_ccore_status netvm_ccore_chain_create(const netvm_ccore_schema *schema,
                                            const char *me_query,
                                            netvm_ccore_chain **out);
void netvm_ccore_chain_free(netvm_ccore_chain *chain);
/* Before deploying: a parameter's value, the host stage's query (JIT),
 * the specialized form from the start, the offered line rate in Gbit/s (0:
 * lossless), and the placement: "me" (default), "host" or "auto" (the
 * resource manager's rule, with `busy_mes` MEs used by other chains and a
 * spare kept if `keep_spare`). */
netvm_ccore_status netvm_ccore_chain_set_param(netvm_ccore_chain *chain,
                                               const char *name,
                                               uint32_t value);
netvm_ccore_status netvm_ccore_chain_set_host_query(netvm_ccore_chain *chain,
                                                    const char *query);
netvm_ccore_status netvm_ccore_chain_set_specialized(netvm_ccore_chain *chain,
                                                     int specialized);
netvm_ccore_status netvm_ccore_chain_set_rate(netvm_ccore_chain *chain,
                                              double gbps);
netvm_ccore_status netvm_ccore_chain_set_placement(netvm_ccore_chain *chain,
                                                   const char *placement,
                                                   unsigned busy_mes,
                                                   int keep_spare);
/* Compiles the chain where the placement puts its first stage.
 * NETVM_CCORE_REFUSED (with the reason) if it fits nowhere. */
netvm_ccore_status netvm_ccore_chain_deploy(netvm_ccore_chain *chain);
/* Where the first stage runs ("me" or "host") and why. */
const char *netvm_ccore_chain_where(const netvm_ccore_chain *chain);
const char *netvm_ccore_chain_placement_reason(const netvm_ccore_chain *chain);

/* The handler manager's actions for the following runs (ME stage only;
 * they stay until netvm_ccore_chain_clear_control):
 *  - swap: at ME cycle `at_cycle`, hot-swap to the other form (generic <->
 *    specialized) "spare" (through the spare ME 3) or "in-place";
 *  - reconfigure: at `at_cycle`, parameter `name` := `value` in place
 *    (generic form; with automatic specialization, the generic form comes
 *    back for it);
 *  - auto-specialize: swap in the specialized form once the format and
 *    parameters have been stable `stable_us` emulated microseconds and
 *    `stable_messages` messages (docs/ccore.md). */
netvm_ccore_status netvm_ccore_chain_swap(netvm_ccore_chain *chain,
                                          const char *mode, uint64_t at_cycle);
netvm_ccore_status netvm_ccore_chain_reconfigure(netvm_ccore_chain *chain,
                                                 const char *name,
                                                 uint32_t value,
                                                 uint64_t at_cycle);
netvm_ccore_status netvm_ccore_chain_auto_specialize(netvm_ccore_chain *chain,
                                                     double stable_us,
                                                     uint64_t stable_messages);
netvm_ccore_status netvm_ccore_chain_clear_control(netvm_ccore_chain *chain);

/* Runs `messages` through the deployed chain on a fresh emulator (or the
 * host thread) with the actions above. */
netvm_ccore_status netvm_ccore_chain_run(netvm_ccore_chain *chain,
                                         const netvm_ccore_messages *messages,
                                         netvm_ccore_run **out);
void netvm_ccore_run_free(netvm_ccore_run *run);

/* What a run did (emulated figures, except the host stage's time). */
typedef struct netvm_ccore_run_stats {
  uint64_t messages_in, messages_out, receive_drops;
  uint64_t me_runs, me_sent, me_dropped, host_dropped;
  uint64_t cycles;
  double micros;
  /* Hot-swaps made (the requested one and automatic specialization's),
   * and the last one's downtime in cycles. */
  uint64_t swaps, last_downtime_cycles;
  /* Reconfigurations that landed. */
  uint64_t reconfigurations;
} netvm_ccore_run_stats;

netvm_ccore_status netvm_ccore_run_stats_get(const netvm_ccore_run *run,
                                             netvm_ccore_run_stats *stats);
/* Reconfiguration `index` (in the order of the calls; one per handler a
 * multicast's change reached): the messages the handler took before it
 * landed (they saw the old value). NETVM_CCORE_NOT_FOUND if there is no
 * such change or it did not land (the input ended first). */
netvm_ccore_status netvm_ccore_run_reconfiguration(const netvm_ccore_run *run,
                                                   size_t index,
                                                   uint64_t *messages_before);
/* What left the chain, in order. */
const netvm_ccore_messages *netvm_ccore_run_outputs(const netvm_ccore_run *run);
/* The resource report as one JSON object (docs/ccore.md, "Resource
 * manager"): per ME, queue and host thread, and the swaps. */
const char *netvm_ccore_run_report(const netvm_ccore_run *run);

#ifdef __cplusplus
}
#endif

#endif /* NETVM_C_CCORE_H */
