/*===- internal.h - Private structures of the coprocessors ---------*- C -*-===*
 *
 * Shared by coprocessors.c (the registry, the generic register access, lookup
 * and associative) and strings.c (regexp and stringmatching, on Hyperscan).
 * Not installed: hosts see netvm/coprocessor.h only.
 *
 * strings.c needs Hyperscan, which exists for x86-64 only; a runtime built
 * with NETVM_NO_HYPERSCAN defined (the AArch64 one) leaves it out and does
 * not offer its two coprocessors.
 *
 *===----------------------------------------------------------------------===*/

#ifndef NETVM_COPROCESSORS_INTERNAL_H
#define NETVM_COPROCESSORS_INTERNAL_H

#include "netvm/coprocessor.h"

struct copro_ops {
  const char *name;
  uint32_t num_registers;
  int (*create)(netvm_copro *c);
  void (*destroy)(netvm_copro *c);
  /* copro.init; NULL accepts any data with the status 0. */
  int (*init)(netvm_copro *c, const uint8_t *data, size_t size,
              uint32_t *status);
  int (*invoke)(netvm_copro *c, uint32_t operation);
};

struct netvm_copro {
  const struct copro_ops *ops;
  uint32_t registers[NETVM_COPRO_MAX_REGISTERS];
  const uint8_t *packet; /* the packet given by the last copro.exbuf */
  uint32_t packet_length;
  int has_packet; /* copro.exbuf has run (packet may be NULL if empty) */
  void *state;
  char error[192];
};

/* Generated code reads and writes registers at netvm_copro_head's offsets
 * (coprocessor.h). */
#include <stddef.h>
_Static_assert(offsetof(struct netvm_copro, ops) ==
                   offsetof(netvm_copro_head, ops),
               "netvm_copro_head.ops");
_Static_assert(offsetof(struct netvm_copro, registers) ==
                   offsetof(netvm_copro_head, registers),
               "netvm_copro_head.registers");

/* Sets the message netvm_copro_error returns; returns 0 (failure). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int netvm_copro_fail(netvm_copro *c, const char *format, ...);

#ifndef NETVM_NO_HYPERSCAN
extern const struct copro_ops netvm_copro_regexp_ops;
extern const struct copro_ops netvm_copro_stringmatching_ops;
#endif

#endif /* NETVM_COPROCESSORS_INTERNAL_H */
