/*===- coprocessors.c - NetVM virtual coprocessors ------------------------===*
 *
 * lookup
 *   Registers: R0 data (read/write), R1 valid (read).
 *   Operations:
 *     0 init        empty the table and the pending key
 *     1 add_data    append R0 to the pending key (at most 16 words)
 *     2 add_value   map the pending key to R0, then clear the pending key
 *     3 read_value  look up the pending key, or [R0] if none is pending; on
 *                   a hit R0 = value and R1 = 1, on a miss R1 = 0; the
 *                   pending key is cleared
 *     4 reset       clear the pending key
 *
 * associative
 *   Registers: R0 table (0..15), R1 key length in bytes (0..32), R2 value
 *   length in bytes (0..32; after a lookup the length of the value found,
 *   0 on a miss), R3..R10 key bytes, R11..R19 value bytes, four bytes per
 *   register, most significant first.
 *   Operations:
 *     0 reset   empty every table
 *     1 insert  map the first R1 key bytes to the first R2 value bytes in
 *               table R0, replacing an equal key
 *     2 lookup  find in table R0 the longest inserted key that is a prefix
 *               of the first R1 key bytes; copy its value to R11.. and its
 *               length to R2 (on a miss R2 = 0 and R11.. are zero)
 *
 * regexp and stringmatching are in strings.c.
 *
 *===----------------------------------------------------------------------===*/

#include "internal.h"
#include "netvm/semantics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int netvm_copro_fail(netvm_copro *c, const char *format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(c->error, sizeof(c->error), format, args);
  va_end(args);
  return 0;
}

static int fail(netvm_copro *c, const char *what, uint32_t value) {
  return netvm_copro_fail(c, "%s %u", what, value);
}

/*===- lookup -------------------------------------------------------------===*/

enum { LOOKUP_MAX_KEY = 16 };

struct lookup_entry {
  uint32_t key[LOOKUP_MAX_KEY];
  uint32_t key_length;
  uint32_t value;
  struct lookup_entry *next;
};

struct lookup_state {
  struct lookup_entry **buckets;
  uint32_t num_buckets, num_entries;
  uint32_t pending[LOOKUP_MAX_KEY];
  uint32_t pending_length;
};

static uint32_t lookup_bucket(const struct lookup_state *s, const uint32_t *key,
                              uint32_t length) {
  return netvm_hash_words(key, length) & (s->num_buckets - 1);
}

static void lookup_clear(struct lookup_state *s) {
  uint32_t i;
  for (i = 0; i < s->num_buckets; ++i) {
    struct lookup_entry *e = s->buckets[i];
    while (e) {
      struct lookup_entry *next = e->next;
      free(e);
      e = next;
    }
    s->buckets[i] = NULL;
  }
  s->num_entries = 0;
  s->pending_length = 0;
}

static int lookup_create(netvm_copro *c) {
  struct lookup_state *s = calloc(1, sizeof(*s));
  if (!s)
    return 0;
  s->num_buckets = 64;
  s->buckets = calloc(s->num_buckets, sizeof(*s->buckets));
  if (!s->buckets) {
    free(s);
    return 0;
  }
  c->state = s;
  return 1;
}

static void lookup_destroy(netvm_copro *c) {
  struct lookup_state *s = c->state;
  lookup_clear(s);
  free(s->buckets);
  free(s);
}

static struct lookup_entry *lookup_find(struct lookup_state *s,
                                        const uint32_t *key, uint32_t length) {
  struct lookup_entry *e = s->buckets[lookup_bucket(s, key, length)];
  for (; e; e = e->next)
    if (e->key_length == length &&
        memcmp(e->key, key, length * sizeof(uint32_t)) == 0)
      return e;
  return NULL;
}

/* Double the bucket array when the table gets crowded. */
static void lookup_grow(struct lookup_state *s) {
  uint32_t old = s->num_buckets, i;
  struct lookup_entry **buckets = calloc(2 * old, sizeof(*buckets));
  if (!buckets)
    return; /* keep the longer chains */
  s->num_buckets = 2 * old;
  for (i = 0; i < old; ++i) {
    struct lookup_entry *e = s->buckets[i];
    while (e) {
      struct lookup_entry *next = e->next;
      uint32_t b = lookup_bucket(s, e->key, e->key_length);
      e->next = buckets[b];
      buckets[b] = e;
      e = next;
    }
  }
  free(s->buckets);
  s->buckets = buckets;
}

static int lookup_invoke(netvm_copro *c, uint32_t operation) {
  struct lookup_state *s = c->state;
  switch (operation) {
  case 0:
    lookup_clear(s);
    return 1;
  case 1:
    if (s->pending_length == LOOKUP_MAX_KEY)
      return fail(c, "lookup key longer than words:", LOOKUP_MAX_KEY);
    s->pending[s->pending_length++] = c->registers[0];
    return 1;
  case 2: {
    struct lookup_entry *e;
    if (s->pending_length == 0)
      return fail(c, "add_value without a key (use add_data first); value",
                  c->registers[0]);
    e = lookup_find(s, s->pending, s->pending_length);
    if (!e) {
      uint32_t b;
      e = calloc(1, sizeof(*e));
      if (!e)
        return fail(c,
                    "out of memory inserting key of words:", s->pending_length);
      memcpy(e->key, s->pending, s->pending_length * sizeof(uint32_t));
      e->key_length = s->pending_length;
      b = lookup_bucket(s, e->key, e->key_length);
      e->next = s->buckets[b];
      s->buckets[b] = e;
      if (++s->num_entries > 2 * s->num_buckets)
        lookup_grow(s);
    }
    e->value = c->registers[0];
    s->pending_length = 0;
    return 1;
  }
  case 3: {
    struct lookup_entry *e;
    if (s->pending_length == 0)
      s->pending[s->pending_length++] = c->registers[0];
    e = lookup_find(s, s->pending, s->pending_length);
    if (e) {
      c->registers[0] = e->value;
      c->registers[1] = 1;
    } else {
      c->registers[1] = 0;
    }
    s->pending_length = 0;
    return 1;
  }
  case 4:
    s->pending_length = 0;
    return 1;
  default:
    return fail(c, "unknown lookup operation", operation);
  }
}

/*===- associative --------------------------------------------------------===*/

enum {
  ASSOC_TABLES = 16,
  ASSOC_MAX_BYTES = 32,
  ASSOC_KEY_REG = 3,
  ASSOC_VALUE_REG = 11,
  ASSOC_REGS = 20
};

struct assoc_entry {
  uint8_t key[ASSOC_MAX_BYTES], value[ASSOC_MAX_BYTES];
  uint32_t key_length, value_length;
};

struct assoc_table {
  struct assoc_entry *entries;
  uint32_t count, capacity;
};

struct assoc_state {
  struct assoc_table tables[ASSOC_TABLES];
};

static int assoc_create(netvm_copro *c) {
  c->state = calloc(1, sizeof(struct assoc_state));
  return c->state != NULL;
}

static void assoc_destroy(netvm_copro *c) {
  struct assoc_state *s = c->state;
  int i;
  for (i = 0; i < ASSOC_TABLES; ++i)
    free(s->tables[i].entries);
  free(s);
}

/* Gather `length` bytes from registers starting at `reg`. */
static void assoc_bytes(const netvm_copro *c, uint32_t reg, uint32_t length,
                        uint8_t *out) {
  uint32_t i;
  for (i = 0; i < length; ++i)
    out[i] = (uint8_t)(c->registers[reg + i / 4] >> (24 - 8 * (i % 4)));
}

static int assoc_invoke(netvm_copro *c, uint32_t operation) {
  struct assoc_state *s = c->state;
  struct assoc_table *t;
  uint8_t key[ASSOC_MAX_BYTES];
  uint32_t table = c->registers[0], key_length = c->registers[1], i;
  if (operation == 0) {
    for (i = 0; i < ASSOC_TABLES; ++i)
      s->tables[i].count = 0;
    return 1;
  }
  if (operation != 1 && operation != 2)
    return fail(c, "unknown associative operation", operation);
  if (table >= ASSOC_TABLES)
    return fail(c, "no associative table", table);
  if (key_length > ASSOC_MAX_BYTES)
    return fail(c, "associative key longer than 32 bytes:", key_length);
  t = &s->tables[table];
  assoc_bytes(c, ASSOC_KEY_REG, key_length, key);

  if (operation == 1) {
    uint32_t value_length = c->registers[2];
    struct assoc_entry *e = NULL;
    if (value_length > ASSOC_MAX_BYTES)
      return fail(c, "associative value longer than 32 bytes:", value_length);
    for (i = 0; i < t->count; ++i)
      if (t->entries[i].key_length == key_length &&
          memcmp(t->entries[i].key, key, key_length) == 0)
        e = &t->entries[i];
    if (!e) {
      if (t->count == t->capacity) {
        uint32_t capacity = t->capacity ? 2 * t->capacity : 8;
        struct assoc_entry *grown =
            realloc(t->entries, capacity * sizeof(*grown));
        if (!grown)
          return fail(c, "out of memory in associative table", table);
        t->entries = grown;
        t->capacity = capacity;
      }
      e = &t->entries[t->count++];
      memset(e, 0, sizeof(*e));
      memcpy(e->key, key, key_length);
      e->key_length = key_length;
    }
    assoc_bytes(c, ASSOC_VALUE_REG, value_length, e->value);
    e->value_length = value_length;
    return 1;
  }

  {
    const struct assoc_entry *best = NULL;
    for (i = 0; i < t->count; ++i) {
      const struct assoc_entry *e = &t->entries[i];
      if (e->key_length > key_length ||
          (best && e->key_length < best->key_length))
        continue;
      if (memcmp(e->key, key, e->key_length) == 0)
        best = e;
    }
    for (i = ASSOC_VALUE_REG; i < ASSOC_REGS; ++i)
      c->registers[i] = 0;
    c->registers[2] = best ? best->value_length : 0;
    if (best)
      for (i = 0; i < best->value_length; ++i)
        c->registers[ASSOC_VALUE_REG + i / 4] |= (uint32_t)best->value[i]
                                                 << (24 - 8 * (i % 4));
  }
  return 1;
}

/*===- Registry and generic operations ------------------------------------===*/

static const struct copro_ops assoc_ops = {
    "associative", ASSOC_REGS, assoc_create, assoc_destroy, NULL, assoc_invoke};
static const struct copro_ops lookup_ops = {
    "lookup", 2, lookup_create, lookup_destroy, NULL, lookup_invoke};

/* In the order of netvm_copro_names. */
static const struct copro_ops *const copro_table[] = {
    &assoc_ops,
    &lookup_ops,
#ifndef NETVM_NO_HYPERSCAN
    &netvm_copro_regexp_ops,
    &netvm_copro_stringmatching_ops,
#endif
};

const char *const *netvm_copro_names(void) {
  static const char *const names[] = {"associative", "lookup",
#ifndef NETVM_NO_HYPERSCAN
                                      "regexp", "stringmatching",
#endif
                                      NULL};
  return names;
}

netvm_copro *netvm_copro_create(const char *name) {
  size_t i;
  for (i = 0; i < sizeof(copro_table) / sizeof(copro_table[0]); ++i) {
    netvm_copro *c;
    if (strcmp(copro_table[i]->name, name) != 0)
      continue;
    c = calloc(1, sizeof(*c));
    if (!c)
      return NULL;
    c->ops = copro_table[i];
    if (!c->ops->create(c)) {
      free(c);
      return NULL;
    }
    return c;
  }
  return NULL;
}

void netvm_copro_destroy(netvm_copro *c) {
  if (!c)
    return;
  c->ops->destroy(c);
  free(c);
}

const char *netvm_copro_name(const netvm_copro *c) { return c->ops->name; }

uint32_t netvm_copro_num_registers(const netvm_copro *c) {
  return c->ops->num_registers;
}

int netvm_copro_init(netvm_copro *c, const uint8_t *data, size_t size,
                     uint32_t *status) {
  c->error[0] = '\0';
  if (c->ops->init)
    return c->ops->init(c, data, size, status);
  /* lookup and associative take no initialisation data: accept, report 0. */
  *status = 0;
  return 1;
}

int netvm_copro_read(netvm_copro *c, uint32_t reg, uint32_t *value) {
  if (reg >= c->ops->num_registers)
    return fail(c, "no register", reg);
  *value = c->registers[reg];
  return 1;
}

int netvm_copro_write(netvm_copro *c, uint32_t reg, uint32_t value) {
  if (reg >= c->ops->num_registers)
    return fail(c, "no register", reg);
  c->registers[reg] = value;
  return 1;
}

int netvm_copro_invoke(netvm_copro *c, uint32_t operation) {
  c->error[0] = '\0';
  return c->ops->invoke(c, operation);
}

void netvm_copro_attach(netvm_copro *c, const uint8_t *packet,
                        uint32_t length) {
  c->packet = packet;
  c->packet_length = length;
  c->has_packet = 1;
}

const char *netvm_copro_error(const netvm_copro *c) { return c->error; }

void netvm_copro_abandon(netvm_copro *c) {
  if (c && c->ops == &lookup_ops)
    ((struct lookup_state *)c->state)->pending_length = 0;
}
