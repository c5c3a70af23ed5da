/*===- strings.c - The regexp and stringmatching coprocessors --------------===*
 *
 * NetBee's two string coprocessors, on Hyperscan in block mode. Both search
 * a byte range of the packet given by copro.exbuf. copro.init reads their
 * patterns from the NetPE's initialised data (the layout is in
 * docs/netil.md, section 7) and compiles them, once: regexp makes one
 * database per pattern, stringmatching one per group of strings, and each
 * instance allocates one scratch space for all of them, so that searching
 * allocates nothing.
 *
 * Registers (both):
 *   R0  in: the pattern (regexp) or group (stringmatching) to search for;
 *       out: the result of the search
 *   R1  in: the offset of the searched range (operations 2 and 4);
 *       out (stringmatching, operation 3): the data word of the string
 *   R2  in: the length of the searched range;
 *       out (operation 3): the end of the match, from the range's start
 *   R3  out (operation 3): the length of the match
 *
 * Operations (both):
 *   0 reset     forget the last search's results
 *   1 match     search [0, R2)
 *   2 match_at  search [R1, R1 + R2)
 *   3 result    a result of the last search (below)
 *   4 test      (netvm) search [R1, R1 + R2) until the first match;
 *               R0 = 1 if there is one, else 0
 *
 * regexp: operations 1 and 2 set R0 to 1 if pattern R0 matches in the
 * range, else 0, and keep the match that ends first (with its leftmost
 * start). Operation 3, when R0 > 0 and a match is kept, decrements R0 and
 * sets R1 = 0, R2 = its end, R3 = its length (0xFFFFFFFF when Hyperscan
 * cannot report starts for that pattern); otherwise it zeroes R1..R3.
 *
 * stringmatching: operations 1 and 2 set R0 to the number of occurrences of
 * the strings of group R0 in the range (at most 1600, NetBee's limit), kept
 * in order of their end, then of the strings' order. Operation 3 requires
 * R0 > 0 and an unread occurrence: it decrements R0 and returns the next
 * one in R1 (its data word), R2 (its end) and R3 (its length).
 *
 *===----------------------------------------------------------------------===*/

#include "internal.h"

#include <hs/hs.h>

#include <stdlib.h>
#include <string.h>

enum {
  STR_MAX_RESULTS = 1600,
  OP_RESET = 0,
  OP_MATCH = 1,
  OP_MATCH_AT = 2,
  OP_RESULT = 3,
  OP_TEST = 4
};

/* R3 after a regexp result whose start Hyperscan does not track. */
#define STR_UNKNOWN_LENGTH 0xFFFFFFFFu

/* A match; offsets are relative to the start of the searched range. */
struct str_result {
  uint32_t start, end;
  uint32_t pattern; /* index among all patterns or strings */
};

struct str_state {
  int initialised;
  /* One per regexp pattern or stringmatching group (NULL: an empty group). */
  hs_database_t **dbs;
  uint32_t num_dbs;
  hs_scratch_t *scratch;
  /* Per pattern or string. */
  uint32_t num_patterns;
  uint8_t *has_start; /* regexp: compiled with HS_FLAG_SOM_LEFTMOST */
  uint32_t *lengths;  /* stringmatching */
  uint32_t *data;     /* stringmatching: the data word */
  /* The last search. */
  int stop_at_first;
  struct str_result *results; /* 1 (regexp) or STR_MAX_RESULTS */
  uint32_t num_results, next_result;
};

/* Forgets every pattern; the instance is as before its first copro.init. */
static void str_clear(struct str_state *s) {
  uint32_t i;
  for (i = 0; i < s->num_dbs; ++i)
    if (s->dbs[i])
      hs_free_database(s->dbs[i]);
  free(s->dbs);
  hs_free_scratch(s->scratch);
  free(s->has_start);
  free(s->lengths);
  free(s->data);
  s->initialised = 0;
  s->dbs = NULL;
  s->num_dbs = 0;
  s->scratch = NULL;
  s->num_patterns = 0;
  s->has_start = NULL;
  s->lengths = NULL;
  s->data = NULL;
  s->num_results = s->next_result = 0;
}

static int str_create(netvm_copro *c, uint32_t max_results) {
  struct str_state *s = calloc(1, sizeof(*s));
  if (!s)
    return 0;
  s->results = calloc(max_results, sizeof(*s->results));
  if (!s->results) {
    free(s);
    return 0;
  }
  c->state = s;
  return 1;
}

static void str_destroy(netvm_copro *c) {
  struct str_state *s = c->state;
  str_clear(s);
  free(s->results);
  free(s);
}

/*===- Initialisation data ------------------------------------------------===*/

/* Little-endian integers and byte strings, never past the end. */
struct reader {
  const uint8_t *next;
  size_t left;
};

static int take_bytes(struct reader *r, size_t n, const uint8_t **bytes) {
  if (r->left < n)
    return 0;
  *bytes = r->next;
  r->next += n;
  r->left -= n;
  return 1;
}

static int take_u16(struct reader *r, uint32_t *value) {
  const uint8_t *b;
  if (!take_bytes(r, 2, &b))
    return 0;
  *value = (uint32_t)b[0] | (uint32_t)b[1] << 8;
  return 1;
}

static int take_u32(struct reader *r, uint32_t *value) {
  const uint8_t *b;
  if (!take_bytes(r, 4, &b))
    return 0;
  *value = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
           (uint32_t)b[3] << 24;
  return 1;
}

/* Starts a copro.init: forgets the old patterns, reads the u16 number of
 * databases (of `what`: "pattern" or "group") and makes room for them. */
static int str_begin(netvm_copro *c, struct str_state *s, struct reader *r,
                     const char *what, uint32_t *count) {
  str_clear(s);
  if (!take_u16(r, count))
    return netvm_copro_fail(c,
                            "initialisation data too short for the %s "
                            "count",
                            what);
  s->dbs = calloc(*count ? *count : 1, sizeof(*s->dbs));
  if (!s->dbs)
    return netvm_copro_fail(c, "out of memory for %u %ss", *count, what);
  return 1;
}

/* Appends a database (NULL for an empty group) and grows the scratch space
 * to fit it. */
static int str_add_database(netvm_copro *c, struct str_state *s,
                            hs_database_t *db) {
  s->dbs[s->num_dbs++] = db;
  if (db && hs_alloc_scratch(db, &s->scratch) != HS_SUCCESS)
    return netvm_copro_fail(c, "cannot allocate Hyperscan scratch space");
  return 1;
}

/*===- Searching ----------------------------------------------------------===*/

/* Checks that operation `op` may search database R0 (`what`: "pattern" or
 * "group"). */
static int str_check(netvm_copro *c, const struct str_state *s, uint32_t op,
                     const char *what) {
  if (!s->initialised)
    return netvm_copro_fail(c, "operation %u before copro.init", op);
  if (c->registers[0] >= s->num_dbs)
    return netvm_copro_fail(c, "no %s %u (copro.init gave %u)", what,
                            c->registers[0], s->num_dbs);
  return 1;
}

/* Searches database R0 over the range of operation `op` ([0, R2) or
 * [R1, R1 + R2)) of the packet, calling `on_match` for the matches. */
static int str_search(netvm_copro *c, struct str_state *s, uint32_t op,
                      match_event_handler on_match) {
  static const char empty = 0;
  uint32_t offset = op == OP_MATCH ? 0 : c->registers[1];
  uint32_t length = c->registers[2];
  hs_database_t *db = s->dbs[c->registers[0]];
  const char *data = &empty;
  hs_error_t e;
  s->num_results = s->next_result = 0;
  if (!c->has_packet)
    return netvm_copro_fail(c, "no packet to search (copro.exbuf first)");
  if (offset > c->packet_length || length > c->packet_length - offset)
    return netvm_copro_fail(
        c, "range at offset %u of length %u beyond the %u-byte packet", offset,
        length, c->packet_length);
  if (!db)
    return 1; /* an empty group */
  if (length)
    data = (const char *)c->packet + offset;
  s->stop_at_first = op == OP_TEST;
  e = hs_scan(db, data, length, 0, s->scratch, on_match, s);
  if (e != HS_SUCCESS && e != HS_SCAN_TERMINATED)
    return netvm_copro_fail(c, "Hyperscan scan failed (error %d)", (int)e);
  return 1;
}

/*===- regexp -------------------------------------------------------------===*/

static int regexp_create(netvm_copro *c) { return str_create(c, 1); }

/* Compiles one expression with the given flags into its own database. */
static hs_error_t regexp_compile(const char *expression, unsigned flags,
                                 unsigned id, hs_database_t **db,
                                 hs_compile_error_t **error) {
  const char *const expressions[1] = {expression};
  return hs_compile_multi(expressions, &flags, &id, 1, HS_MODE_BLOCK, NULL, db,
                          error);
}

/* Compiles pattern `index` from its flag letters and text. */
static int regexp_add(netvm_copro *c, struct str_state *s, uint32_t index,
                      const uint8_t *flags, uint32_t num_flags,
                      const uint8_t *pattern, uint32_t length) {
  unsigned hs_flags = HS_FLAG_ALLOWEMPTY;
  int extended = 0, anchored = 0;
  hs_database_t *db = NULL;
  hs_compile_error_t *error = NULL;
  char *expression;
  size_t n = 0;
  uint32_t i;
  for (i = 0; i < num_flags; ++i) {
    switch (flags[i]) {
    case 'i':
      hs_flags |= HS_FLAG_CASELESS;
      break;
    case 's':
      hs_flags |= HS_FLAG_DOTALL;
      break;
    case 'm':
      hs_flags |= HS_FLAG_MULTILINE;
      break;
    case 'x':
      extended = 1;
      break;
    case 'A':
      anchored = 1;
      break;
    case 'G': /* ungreedy: changes no match, only which one PCRE reports */
    case 'R': /* Snort's modifiers, ignored as NetBee does */
    case 'U':
    case 'B':
      break;
    default:
      return netvm_copro_fail(c, "pattern %u: unsupported flag 0x%02x", index,
                              flags[i]);
    }
  }
  if (memchr(pattern, 0, length))
    return netvm_copro_fail(c, "pattern %u contains a NUL byte (write \\x00)",
                            index);
  /* (?x)\A(?: pattern \n) */
  expression = malloc(length + 16);
  if (!expression)
    return netvm_copro_fail(c, "out of memory compiling pattern %u", index);
  if (extended) {
    memcpy(expression, "(?x)", 4);
    n += 4;
  }
  if (anchored) {
    memcpy(expression + n, "\\A(?:", 5);
    n += 5;
  }
  memcpy(expression + n, pattern, length);
  n += length;
  if (anchored) {
    if (extended)
      expression[n++] = '\n'; /* ends a trailing # comment */
    expression[n++] = ')';
  }
  expression[n] = '\0';

  /* Starts of matches are tracked where Hyperscan can (not for patterns
   * that match the empty string, nor for some large bounded repeats). */
  if (regexp_compile(expression, hs_flags | HS_FLAG_SOM_LEFTMOST, index, &db,
                     &error) == HS_SUCCESS) {
    s->has_start[index] = 1;
  } else {
    hs_free_compile_error(error);
    error = NULL;
    if (regexp_compile(expression, hs_flags, index, &db, &error) !=
        HS_SUCCESS) {
      netvm_copro_fail(c, "pattern %u: %s", index, error->message);
      hs_free_compile_error(error);
      free(expression);
      return 0;
    }
  }
  free(expression);
  return str_add_database(c, s, db);
}

/* u16 count, then per pattern: u16 flag count, the flag letters, u16
 * length, the pattern. */
static int regexp_init(netvm_copro *c, const uint8_t *data, size_t size,
                       uint32_t *status) {
  struct str_state *s = c->state;
  struct reader r = {data, size};
  uint32_t count, i;
  if (!str_begin(c, s, &r, "pattern", &count))
    return 0;
  s->has_start = calloc(count ? count : 1, 1);
  if (!s->has_start) {
    str_clear(s);
    return netvm_copro_fail(c, "out of memory for %u patterns", count);
  }
  for (i = 0; i < count; ++i) {
    uint32_t num_flags, length;
    const uint8_t *flags, *pattern;
    if (!take_u16(&r, &num_flags) || !take_bytes(&r, num_flags, &flags) ||
        !take_u16(&r, &length) || !take_bytes(&r, length, &pattern)) {
      str_clear(s);
      return netvm_copro_fail(c, "initialisation data ends inside pattern %u",
                              i);
    }
    if (!regexp_add(c, s, i, flags, num_flags, pattern, length)) {
      str_clear(s);
      return 0;
    }
  }
  s->num_patterns = count;
  s->initialised = 1;
  *status = 0;
  return 1;
}

/* Keeps the match that ends first, then starts leftmost. */
static int regexp_on_match(unsigned int id, unsigned long long from,
                           unsigned long long to, unsigned int flags,
                           void *context) {
  struct str_state *s = context;
  struct str_result *best = &s->results[0];
  (void)flags;
  if (!s->num_results || to < best->end ||
      (to == best->end && from < best->start)) {
    best->start = (uint32_t)from;
    best->end = (uint32_t)to;
    best->pattern = id;
    s->num_results = 1;
  }
  return s->stop_at_first;
}

static int regexp_invoke(netvm_copro *c, uint32_t op) {
  struct str_state *s = c->state;
  uint32_t *r = c->registers;
  switch (op) {
  case OP_RESET:
    s->num_results = 0;
    return 1;
  case OP_MATCH:
  case OP_MATCH_AT:
  case OP_TEST:
    if (!str_check(c, s, op, "pattern") ||
        !str_search(c, s, op, regexp_on_match))
      return 0;
    r[0] = s->num_results;
    return 1;
  case OP_RESULT:
    if (r[0] > 0 && s->num_results) {
      const struct str_result *m = &s->results[0];
      --r[0];
      r[1] = 0;
      r[2] = m->end;
      r[3] = s->has_start[m->pattern] ? m->end - m->start : STR_UNKNOWN_LENGTH;
    } else {
      r[1] = r[2] = r[3] = 0;
    }
    return 1;
  default:
    return netvm_copro_fail(c, "unknown regexp operation %u", op);
  }
}

const struct copro_ops netvm_copro_regexp_ops = {
    "regexp",    NETVM_REGEXP_REGISTERS, regexp_create, str_destroy,
    regexp_init, regexp_invoke};

/*===- stringmatching -----------------------------------------------------===*/

static int sm_create(netvm_copro *c) { return str_create(c, STR_MAX_RESULTS); }

/* Reads the `count` strings of group `group` (per string: u16 length, u16
 * nocase, u32 data word, the bytes) and compiles them as literals. */
static int sm_add_group(netvm_copro *c, struct str_state *s, uint32_t group,
                        struct reader *r, uint32_t count) {
  const char **strings;
  size_t *lengths;
  unsigned *flags, *ids;
  uint32_t first = s->num_patterns, i, *grown;
  hs_database_t *db = NULL;
  hs_compile_error_t *error = NULL;
  int ok = 1;
  if (count == 0)
    return str_add_database(c, s, NULL);
  strings = calloc(count, sizeof(*strings));
  lengths = calloc(count, sizeof(*lengths));
  flags = calloc(count, sizeof(*flags));
  ids = calloc(count, sizeof(*ids));
  /* Room for this group's strings in the per-string arrays. */
  if ((grown = realloc(s->lengths, (first + count) * sizeof(*grown))))
    s->lengths = grown;
  else
    ok = 0;
  if ((grown = realloc(s->data, (first + count) * sizeof(*grown))))
    s->data = grown;
  else
    ok = 0;
  if (!ok || !strings || !lengths || !flags || !ids) {
    ok = 0;
    netvm_copro_fail(c, "out of memory for group %u", group);
    goto done;
  }
  for (i = 0; i < count; ++i) {
    uint32_t length, nocase, value;
    const uint8_t *bytes;
    ok = take_u16(r, &length) && take_u16(r, &nocase) && take_u32(r, &value) &&
         take_bytes(r, length, &bytes);
    if (!ok) {
      netvm_copro_fail(
          c, "initialisation data ends inside string %u of group %u", i, group);
      goto done;
    }
    if (length == 0) {
      ok = netvm_copro_fail(c, "string %u of group %u is empty", i, group);
      goto done;
    }
    strings[i] = (const char *)bytes;
    lengths[i] = length;
    flags[i] = nocase ? HS_FLAG_CASELESS : 0;
    ids[i] = first + i;
    s->lengths[first + i] = length;
    s->data[first + i] = value;
  }
  s->num_patterns = first + count;
  if (hs_compile_lit_multi(strings, flags, ids, lengths, count, HS_MODE_BLOCK,
                           NULL, &db, &error) != HS_SUCCESS) {
    ok = netvm_copro_fail(c, "group %u: %s", group, error->message);
    hs_free_compile_error(error);
    goto done;
  }
  ok = str_add_database(c, s, db);
done:
  free(strings);
  free(lengths);
  free(flags);
  free(ids);
  return ok;
}

/* u16 group count, then per group: u16 string count, the strings. */
static int sm_init(netvm_copro *c, const uint8_t *data, size_t size,
                   uint32_t *status) {
  struct str_state *s = c->state;
  struct reader r = {data, size};
  uint32_t groups, g;
  if (!str_begin(c, s, &r, "group", &groups))
    return 0;
  for (g = 0; g < groups; ++g) {
    uint32_t count;
    if (!take_u16(&r, &count)) {
      str_clear(s);
      return netvm_copro_fail(c, "initialisation data ends before group %u", g);
    }
    if (!sm_add_group(c, s, g, &r, count)) {
      str_clear(s);
      return 0;
    }
  }
  s->initialised = 1;
  *status = 0;
  return 1;
}

/* Keeps every occurrence, up to STR_MAX_RESULTS. */
static int sm_on_match(unsigned int id, unsigned long long from,
                       unsigned long long to, unsigned int flags,
                       void *context) {
  struct str_state *s = context;
  struct str_result *m = &s->results[s->num_results++];
  (void)from;
  (void)flags;
  m->pattern = id;
  m->end = (uint32_t)to;
  m->start = m->end - s->lengths[id];
  return s->stop_at_first || s->num_results == STR_MAX_RESULTS;
}

static int sm_after(const struct str_result *a, const struct str_result *b) {
  return a->end > b->end || (a->end == b->end && a->pattern > b->pattern);
}

/* Hyperscan does not promise an order: sort by end, then string (the
 * matches usually arrive in that order already). */
static void sm_sort(struct str_result *m, uint32_t n) {
  uint32_t i, j;
  for (i = 1; i < n; ++i) {
    struct str_result x = m[i];
    for (j = i; j > 0 && sm_after(&m[j - 1], &x); --j)
      m[j] = m[j - 1];
    m[j] = x;
  }
}

static int sm_invoke(netvm_copro *c, uint32_t op) {
  struct str_state *s = c->state;
  uint32_t *r = c->registers;
  switch (op) {
  case OP_RESET:
    s->num_results = s->next_result = 0;
    return 1;
  case OP_MATCH:
  case OP_MATCH_AT:
  case OP_TEST:
    if (!str_check(c, s, op, "group") || !str_search(c, s, op, sm_on_match))
      return 0;
    sm_sort(s->results, s->num_results);
    r[0] = s->num_results;
    return 1;
  case OP_RESULT: {
    const struct str_result *m;
    if (r[0] == 0 || s->next_result == s->num_results)
      return netvm_copro_fail(c,
                              "no match result left (R0 = %u, %u of %u read)",
                              r[0], s->next_result, s->num_results);
    m = &s->results[s->next_result++];
    --r[0];
    r[1] = s->data[m->pattern];
    r[2] = m->end;
    r[3] = m->end - m->start;
    return 1;
  }
  default:
    return netvm_copro_fail(c, "unknown stringmatching operation %u", op);
  }
}

const struct copro_ops netvm_copro_stringmatching_ops = {
    "stringmatching", NETVM_STRINGMATCHING_REGISTERS,
    sm_create,        str_destroy,
    sm_init,          sm_invoke};
