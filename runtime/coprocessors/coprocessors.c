/*===- coprocessors.c - NetVM virtual coprocessors ------------------------===*
 *
 * lookup
 *   Registers: R0 data (read/write), R1 valid (read), R2 stamp (write).
 *   At most NETVM_LOOKUP_CAPACITY (16384) entries.
 *   Operations:
 *     0 init           empty the table and the pending key
 *     1 add_data       append R0 to the pending key (at most 16 words)
 *     2 add_value      map the pending key to R0 with the stamp R2, then
 *                      clear the pending key; a new key in a full table
 *                      raises the exception
 *     3 read_value     look up the pending key, or [R0] if none is pending;
 *                      on a hit R0 = value and R1 = 1, on a miss R1 = 0;
 *                      the pending key is cleared
 *     4 reset          clear the pending key
 *     5 try_add_value  as add_value, but a new key in a full table is not
 *                      stored and gives R1 = 0 (R1 = 1 when stored)
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

/*===- lookup -------------------------------------------------------------===*
 *
 * Open addressing with linear probing over an index of 32-bit slots, each
 * the high 13 bits of the key's hash (a tag that spares most key
 * comparisons), the key's length - 1 (4 bits) and the entry's position + 1
 * (15 bits: the capacity is 2^14). The index has at least twice as many
 * slots as entries, so probes stay short; deletion shifts the following
 * slots back (no tombstones) and moves the last entry into the hole, so
 * entries stay dense for the control plane's walks. An entry's record is
 * [value, stamp, key words], all records as long as the longest key stored
 * so far: a table of MAC addresses keeps 16 bytes an entry (16384 entries
 * and their index fit in 384 KiB), and a lookup or a store touches one slot
 * and one record. The hashes, which only deletion and growth need, are
 * apart. The capacity is fixed
 * (NETVM_LOOKUP_CAPACITY): the ME back end keeps the same table in SRAM
 * and every engine must refuse the same insertions.
 */

enum {
  LOOKUP_MAX_KEY = NETVM_LOOKUP_MAX_KEY,
  LOOKUP_MIN_SLOTS = 64,
  LOOKUP_INDEX_BITS = 15,                  /* entry + 1 <= 16384 < 2^15 */
  LOOKUP_LENGTH_SHIFT = LOOKUP_INDEX_BITS, /* then key length - 1: 4 bits */
  LOOKUP_RECORD_HEAD = 2                   /* value, stamp */
};
#define LOOKUP_INDEX_MASK ((1u << LOOKUP_INDEX_BITS) - 1)
#define LOOKUP_TAG_MASK (~0u << (LOOKUP_LENGTH_SHIFT + 4))
_Static_assert(NETVM_LOOKUP_CAPACITY < (1u << LOOKUP_INDEX_BITS),
               "slot index field too small for the capacity");

struct lookup_state {
  uint32_t *slots;
  uint32_t mask; /* slots - 1 */
  uint32_t *records;
  uint32_t stride; /* words per record: LOOKUP_RECORD_HEAD + longest key */
  uint32_t *hashes;
  uint32_t num_entries, capacity; /* capacity: entries allocated */
};

/* The pending key lives in the instance's spare registers (beyond R2), so
 * that generated code appends a word in place (netvm/coprocessor.h). */
#define LOOKUP_PENDING(c) ((c)->registers + NETVM_LOOKUP_PENDING_KEY)
#define LOOKUP_PENDING_LENGTH(c) ((c)->registers[NETVM_LOOKUP_PENDING_LENGTH])
_Static_assert(NETVM_LOOKUP_PENDING_KEY + LOOKUP_MAX_KEY <=
                   NETVM_COPRO_MAX_REGISTERS,
               "the pending key fits the spare registers");

/* A multiplicative mix per word and a final avalanche (murmur3's): the
 * keys are MAC and IP addresses, whose low bits vary most. */
static inline uint32_t lookup_hash(const uint32_t *key, uint32_t length) {
  uint32_t h = 0x9747b28cu ^ length, i;
  for (i = 0; i < length; ++i) {
    uint32_t k = key[i] * 0xcc9e2d51u;
    k = (k << 15) | (k >> 17);
    h ^= k * 0x1b873593u;
    h = ((h << 13) | (h >> 19)) * 5u + 0xe6546b64u;
  }
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

static inline uint32_t *lookup_record(const struct lookup_state *s,
                                      uint32_t entry) {
  return s->records + (size_t)entry * s->stride;
}

/* The slot bits above the index: hash tag and key length. */
static inline uint32_t lookup_tag(uint32_t hash, uint32_t length) {
  return (hash & LOOKUP_TAG_MASK) | ((length - 1) << LOOKUP_LENGTH_SHIFT);
}

static inline uint32_t lookup_key_length(uint32_t slot) {
  return ((slot >> LOOKUP_LENGTH_SHIFT) & 15) + 1;
}

/* The slot holding `key`, or the empty slot where it would go. */
static inline uint32_t lookup_probe(const struct lookup_state *s,
                                    const uint32_t *key, uint32_t length,
                                    uint32_t hash) {
  uint32_t i = hash & s->mask, tag = lookup_tag(hash, length);
  for (;; i = (i + 1) & s->mask) {
    uint32_t slot = s->slots[i], k;
    const uint32_t *r;
    if (!slot)
      return i;
    if ((slot & ~LOOKUP_INDEX_MASK) != tag)
      continue;
    r = lookup_record(s, (slot & LOOKUP_INDEX_MASK) - 1) + LOOKUP_RECORD_HEAD;
    for (k = 0; k < length && r[k] == key[k]; ++k)
      ;
    if (k == length)
      return i;
  }
}

/* The slot that points at entry `entry`. */
static uint32_t lookup_slot_of(const struct lookup_state *s, uint32_t entry) {
  uint32_t i = s->hashes[entry] & s->mask;
  while ((s->slots[i] & LOOKUP_INDEX_MASK) != entry + 1)
    i = (i + 1) & s->mask;
  return i;
}

static int lookup_resize(struct lookup_state *s, uint32_t num_slots) {
  uint32_t *slots = calloc(num_slots, sizeof(*slots));
  uint32_t i, mask = num_slots - 1;
  if (!slots)
    return 0;
  /* Slots keep their value (tag, length, entry); only positions change. */
  if (s->slots)
    for (i = 0; i <= s->mask; ++i) {
      uint32_t slot = s->slots[i], j;
      if (!slot)
        continue;
      j = s->hashes[(slot & LOOKUP_INDEX_MASK) - 1] & mask;
      while (slots[j])
        j = (j + 1) & mask;
      slots[j] = slot;
    }
  free(s->slots);
  s->slots = slots;
  s->mask = mask;
  return 1;
}

/* Room for `entries` entries of keys up to `key_length` words. */
static int lookup_reserve(struct lookup_state *s, uint32_t entries,
                          uint32_t key_length) {
  uint32_t stride = LOOKUP_RECORD_HEAD + key_length;
  if (stride < s->stride)
    stride = s->stride;
  if (entries > s->capacity || stride != s->stride) {
    uint32_t capacity = s->capacity, i;
    uint32_t *records, *hashes;
    while (capacity < entries)
      capacity = capacity ? 2 * capacity : 64;
    records = malloc((size_t)capacity * stride * sizeof(uint32_t));
    hashes = realloc(s->hashes, capacity * sizeof(uint32_t));
    if (hashes)
      s->hashes = hashes;
    if (!records || !hashes) {
      free(records);
      return 0;
    }
    for (i = 0; i < s->num_entries; ++i)
      memcpy(records + (size_t)i * stride, lookup_record(s, i),
             s->stride * sizeof(uint32_t));
    free(s->records);
    s->records = records;
    s->stride = stride;
    s->capacity = capacity;
  }
  return 1;
}

static void lookup_clear(struct lookup_state *s) {
  memset(s->slots, 0, (s->mask + 1) * sizeof(*s->slots));
  s->num_entries = 0;
}

static int lookup_create(netvm_copro *c) {
  struct lookup_state *s = calloc(1, sizeof(*s));
  if (!s || !lookup_resize(s, LOOKUP_MIN_SLOTS)) {
    free(s);
    return 0;
  }
  c->state = s;
  return 1;
}

static void lookup_destroy(netvm_copro *c) {
  struct lookup_state *s = c->state;
  free(s->slots);
  free(s->records);
  free(s->hashes);
  free(s);
}

/* Remove the entry in slot `i`: shift the slots of the same probe run back
 * into the hole, then move the last entry into the freed position. */
static void lookup_remove_slot(struct lookup_state *s, uint32_t i) {
  uint32_t gone = (s->slots[i] & LOOKUP_INDEX_MASK) - 1;
  uint32_t last = s->num_entries - 1, j;
  for (j = (i + 1) & s->mask; s->slots[j]; j = (j + 1) & s->mask) {
    uint32_t home = s->hashes[(s->slots[j] & LOOKUP_INDEX_MASK) - 1] & s->mask;
    /* Slot j may move to the hole i unless its home lies in (i, j]. */
    if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
      s->slots[i] = s->slots[j];
      i = j;
    }
  }
  s->slots[i] = 0;
  if (gone != last) {
    uint32_t k = lookup_slot_of(s, last);
    s->slots[k] = (s->slots[k] & ~LOOKUP_INDEX_MASK) | (gone + 1);
    memcpy(lookup_record(s, gone), lookup_record(s, last),
           s->stride * sizeof(uint32_t));
    s->hashes[gone] = s->hashes[last];
  }
  --s->num_entries;
}

/* Map the pending key to R0 with the stamp R2. Returns 1 if stored, 0 if the
 * key is new and the table full (nothing changes), -1 if out of memory. */
static int lookup_store(netvm_copro *c, struct lookup_state *s) {
  const uint32_t *pending = LOOKUP_PENDING(c);
  uint32_t length = LOOKUP_PENDING_LENGTH(c),
           hash = lookup_hash(pending, length);
  uint32_t i = lookup_probe(s, pending, length, hash), entry;
  uint32_t *r;
  if (s->slots[i]) {
    entry = (s->slots[i] & LOOKUP_INDEX_MASK) - 1;
  } else {
    if (s->num_entries == NETVM_LOOKUP_CAPACITY)
      return 0;
    /* Keep at least two slots per entry. */
    if (2 * (s->num_entries + 1) > s->mask + 1) {
      if (!lookup_resize(s, 2 * (s->mask + 1)))
        return -1;
      i = lookup_probe(s, pending, length, hash);
    }
    if (!lookup_reserve(s, s->num_entries + 1, length))
      return -1;
    entry = s->num_entries++;
    memcpy(lookup_record(s, entry) + LOOKUP_RECORD_HEAD, pending,
           length * sizeof(uint32_t));
    s->hashes[entry] = hash;
    s->slots[i] = lookup_tag(hash, length) | (entry + 1);
  }
  r = lookup_record(s, entry);
  r[0] = c->registers[0];
  r[1] = c->registers[2];
  return 1;
}

/* Operations 2 and 5. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static int lookup_add(netvm_copro *c, struct lookup_state *s,
                      uint32_t operation) {
  uint32_t length = LOOKUP_PENDING_LENGTH(c);
  int stored;
  if (length == 0)
    return fail(c, "add_value without a key (use add_data first); value",
                c->registers[0]);
  stored = lookup_store(c, s);
  LOOKUP_PENDING_LENGTH(c) = 0;
  if (stored < 0)
    return fail(c, "out of memory inserting key of words:", length);
  if (operation == 5) {
    c->registers[1] = (uint32_t)stored;
    return 1;
  }
  if (!stored)
    return netvm_copro_fail(c, "lookup table full (%u entries)",
                            NETVM_LOOKUP_CAPACITY);
  return 1;
}

/* Operation 3. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static int lookup_read(netvm_copro *c, struct lookup_state *s) {
  uint32_t slot, *pending = LOOKUP_PENDING(c);
  if (LOOKUP_PENDING_LENGTH(c) == 0)
    pending[LOOKUP_PENDING_LENGTH(c)++] = c->registers[0];
  slot = s->slots[lookup_probe(s, pending, LOOKUP_PENDING_LENGTH(c),
                               lookup_hash(pending, LOOKUP_PENDING_LENGTH(c)))];
  if (slot) {
    c->registers[0] = lookup_record(s, (slot & LOOKUP_INDEX_MASK) - 1)[0];
    c->registers[1] = 1;
  } else {
    c->registers[1] = 0;
  }
  LOOKUP_PENDING_LENGTH(c) = 0;
  return 1;
}

/* Small, so that add_data, called once per key word, costs few
 * instructions; the table operations are calls of their own. */
static int lookup_invoke(netvm_copro *c, uint32_t operation) {
  struct lookup_state *s = c->state;
  switch (operation) {
  case 0:
    lookup_clear(s);
    LOOKUP_PENDING_LENGTH(c) = 0;
    return 1;
  case 1: /* (generated code does this in place, calling only when full) */
    if (LOOKUP_PENDING_LENGTH(c) == LOOKUP_MAX_KEY)
      return fail(c, "lookup key longer than words:", LOOKUP_MAX_KEY);
    LOOKUP_PENDING(c)[LOOKUP_PENDING_LENGTH(c)++] = c->registers[0];
    return 1;
  case 2:
  case 5:
    return lookup_add(c, s, operation);
  case 3:
    return lookup_read(c, s);
  case 4:
    LOOKUP_PENDING_LENGTH(c) = 0;
    return 1;
  default:
    return fail(c, "unknown lookup operation", operation);
  }
}

static const struct copro_ops lookup_ops = {
    "lookup", NETVM_LOOKUP_REGISTERS, lookup_create, lookup_destroy,
    NULL,     lookup_invoke};

/*===- lookup: the control plane
 * -------------------------------------------===*/

static struct lookup_state *lookup_of(const netvm_copro *c) {
  return c && c->ops == &lookup_ops ? c->state : NULL;
}

uint32_t netvm_lookup_count(const netvm_copro *c) {
  const struct lookup_state *s = lookup_of(c);
  return s ? s->num_entries : 0;
}

int netvm_lookup_get(const netvm_copro *c, uint32_t index,
                     netvm_lookup_entry *out) {
  const struct lookup_state *s = lookup_of(c);
  const uint32_t *r;
  if (!s || index >= s->num_entries)
    return 0;
  r = lookup_record(s, index);
  memset(out, 0, sizeof(*out));
  out->key_length = lookup_key_length(s->slots[lookup_slot_of(s, index)]);
  memcpy(out->key, r + LOOKUP_RECORD_HEAD, out->key_length * sizeof(uint32_t));
  out->value = r[0];
  out->stamp = r[1];
  return 1;
}

int netvm_lookup_delete(netvm_copro *c, const uint32_t *key,
                        uint32_t key_length) {
  struct lookup_state *s = lookup_of(c);
  uint32_t i;
  if (!s || key_length == 0 || key_length > LOOKUP_MAX_KEY)
    return 0;
  i = lookup_probe(s, key, key_length, lookup_hash(key, key_length));
  if (!s->slots[i])
    return 0;
  lookup_remove_slot(s, i);
  return 1;
}

uint32_t netvm_lookup_age(netvm_copro *c, uint32_t now, uint32_t max_age) {
  struct lookup_state *s = lookup_of(c);
  uint32_t removed = 0, i = 0;
  if (!s)
    return 0;
  while (i < s->num_entries) {
    if (now - lookup_record(s, i)[1] > max_age) {
      /* The last entry moves into position i: look at i again. */
      lookup_remove_slot(s, lookup_slot_of(s, i));
      ++removed;
    } else {
      ++i;
    }
  }
  return removed;
}

/*===- associative --------------------------------------------------------===*/

enum {
  ASSOC_TABLES = 16,
  ASSOC_MAX_BYTES = 32,
  ASSOC_KEY_REG = 3,
  ASSOC_VALUE_REG = 11,
  ASSOC_REGS = NETVM_ASSOCIATIVE_REGISTERS
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
    LOOKUP_PENDING_LENGTH(c) = 0;
}
