/*===- coprocessor.h - NetVM virtual coprocessors (C API) ----------*- C -*-===*
 *
 * The virtual coprocessors a NetPE can use (paper section 3.1.3): black boxes
 * with numbered 32-bit registers, operations acting on the registers and on
 * internal state, and an optional initialisation from the NetPE's
 * initialised data. The reference interpreter and the native runtime (JIT
 * and AOT code, on every target) use these same implementations. Plain C11.
 *
 * Available coprocessors (register maps in docs/netil.md):
 *   lookup          exact-match table from keys of 1..16 words to a word;
 *   associative     longest-prefix-match table of byte strings (TCAM-like);
 *   regexp          regular expressions over a byte range of the packet;
 *   stringmatching  groups of literal strings over a byte range.
 * The last two run on Hyperscan (x86-64 only: link with -lhs); a runtime
 * built without it (the AArch64 one) does not offer them.
 *
 *===----------------------------------------------------------------------===*/

#ifndef NETVM_RUNTIME_COPROCESSOR_H
#define NETVM_RUNTIME_COPROCESSOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct netvm_copro netvm_copro;

/* How many registers each coprocessor has, and where generated code finds
 * them: every instance starts as netvm_copro_head, so that code compiled
 * by netvm (netvm-to-llvm) reads and writes a register that exists in
 * place, without a call; it calls netvm_copro_read/write only for
 * registers the coprocessor does not have (the `coprocessor` exception).
 * coprocessors.c checks its own layout against this one. */
enum {
  NETVM_LOOKUP_REGISTERS = 3,
  NETVM_ASSOCIATIVE_REGISTERS = 20,
  NETVM_REGEXP_REGISTERS = 4,
  NETVM_STRINGMATCHING_REGISTERS = 4,
  NETVM_COPRO_MAX_REGISTERS = 20,
  /* lookup keeps its pending key in the spare registers of its head: its
   * length in word 3, its words from word 4 (at most 16), so that
   * generated code appends a key word (add_data) without a call. They are
   * not registers a NetPE can name (R3 and up raise). */
  NETVM_LOOKUP_PENDING_LENGTH = 3,
  NETVM_LOOKUP_PENDING_KEY = 4
};

typedef struct netvm_copro_head {
  const void *ops; /* private */
  uint32_t registers[NETVM_COPRO_MAX_REGISTERS];
} netvm_copro_head;

/* A new instance of the coprocessor called `name`, or NULL if there is no
 * such coprocessor. */
netvm_copro *netvm_copro_create(const char *name);
void netvm_copro_destroy(netvm_copro *copro);

/* The names netvm_copro_create accepts, as a NULL-terminated array. */
const char *const *netvm_copro_names(void);

const char *netvm_copro_name(const netvm_copro *copro);
uint32_t netvm_copro_num_registers(const netvm_copro *copro);

/* Each returns 1 on success and 0 on failure; then netvm_copro_error tells
 * why and the NetVM handler raises the `coprocessor` exception. */
int netvm_copro_init(netvm_copro *copro, const uint8_t *data, size_t size,
                     uint32_t *status);
int netvm_copro_read(netvm_copro *copro, uint32_t reg, uint32_t *value);
int netvm_copro_write(netvm_copro *copro, uint32_t reg, uint32_t value);
int netvm_copro_invoke(netvm_copro *copro, uint32_t operation);
/* The exchange buffer the next operations may look at (copro.exbuf); the
 * coprocessor keeps the pointer until the next call. */
void netvm_copro_attach(netvm_copro *copro, const uint8_t *packet,
                        uint32_t length);
const char *netvm_copro_error(const netvm_copro *copro);
/* The handler that was using the coprocessor raised an exception: work in
 * progress is abandoned (the lookup coprocessor forgets its pending key),
 * so that nothing half-built carries to the next packet. Engines call it
 * for every coprocessor of the NetPE that raised. */
void netvm_copro_abandon(netvm_copro *copro);

/*===- lookup: the control plane ------------------------------------------===*
 *
 * A lookup table holds at most NETVM_LOOKUP_CAPACITY entries on every engine
 * (docs/netil.md 7.2). Each entry keeps the stamp R2 held when it was last
 * stored (add_value, try_add_value): a program that writes the packet's
 * time there (tstamp_s) lets the control plane age the table by it. The
 * functions below do nothing (return 0) on another coprocessor; they must
 * not run while the instance processes a packet.
 */

#define NETVM_LOOKUP_CAPACITY 16384u
#define NETVM_LOOKUP_MAX_KEY 16u

typedef struct netvm_lookup_entry {
  uint32_t key[NETVM_LOOKUP_MAX_KEY];
  uint32_t key_length; /* words, 1..16 */
  uint32_t value;
  uint32_t stamp;
} netvm_lookup_entry;

/* Entries in the table. */
uint32_t netvm_lookup_count(const netvm_copro *copro);
/* Entry `index` (0 .. count-1) into `out`; 0 if out of range. The order is
 * the table's own, the same on every host engine for the same history of
 * operations; deleting entries changes it. */
int netvm_lookup_get(const netvm_copro *copro, uint32_t index,
                     netvm_lookup_entry *out);
/* Delete the entry of `key`; 1 if there was one. */
int netvm_lookup_delete(netvm_copro *copro, const uint32_t *key,
                        uint32_t key_length);
/* Delete every entry older than `max_age` at time `now`, that is with
 * now - stamp > max_age in 32-bit unsigned arithmetic (stamps wrap); the
 * number deleted. */
uint32_t netvm_lookup_age(netvm_copro *copro, uint32_t now, uint32_t max_age);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NETVM_RUNTIME_COPROCESSOR_H */
