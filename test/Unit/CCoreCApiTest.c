/* The C-CORE layer's C API (include/netvm-c/CCore.h) from a C program,
 * compiled as C99: errors and their messages, misuse, channels, a chain
 * on the MEs run plain, with a hot-swap, with automatic specialization and
 * with a parameter change, and the same chain placed on the host.
 * test/CCore/capi.test runs it: CCoreCApiTest SCHEMA.ccs. */
#include <netvm-c/CCore.h>

#include <stdio.h>
#include <string.h>

static int failures = 0;

#define EXPECT(condition)                                                      \
  do {                                                                         \
    if (!(condition)) {                                                        \
      printf("FAILED line %d: %s (%s)\n", __LINE__, #condition,                \
             netvm_ccore_last_error());                                        \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

static const char *TABLE3 =
    "from flight select price >= $p and bags <= $b and status < $s and "
    "passengers > $n and gate == $g";
static const char *TABLE3_RANGES =
    "price=0:1000,gate=10:14,bags=0:1000,passengers=0:400";

static unsigned price(const uint8_t *m) {
  return (unsigned)m[40] << 24 | (unsigned)m[41] << 16 | (unsigned)m[42] << 8 |
         m[43];
}

static unsigned word(const uint8_t *m, unsigned offset, unsigned size) {
  unsigned v = 0, i;
  for (i = 0; i < size; ++i)
    v = v << 8 | m[offset + i];
  return v;
}

/* The Table 3 select with $p = p and the other parameters' values. */
static int passes(const uint8_t *m, unsigned p) {
  return price(m) >= p && word(m, 28, 4) <= 900 && word(m, 14, 1) < 200 &&
         word(m, 24, 4) > 10 && word(m, 12, 2) == 12;
}

/* Whether two message lists hold the same bytes in the same order. */
static int same(const netvm_ccore_messages *a, const netvm_ccore_messages *b) {
  size_t i, n = netvm_ccore_messages_count(a);
  if (n != netvm_ccore_messages_count(b))
    return 0;
  for (i = 0; i < n; ++i) {
    const uint8_t *x, *y;
    size_t lx, ly;
    netvm_ccore_messages_get(a, i, &x, &lx);
    netvm_ccore_messages_get(b, i, &y, &ly);
    if (lx != ly || memcmp(x, y, lx) != 0)
      return 0;
  }
  return 1;
}

static netvm_ccore_chain *table3(const netvm_ccore_schema *schema) {
  netvm_ccore_chain *chain = NULL;
  EXPECT(netvm_ccore_chain_create(schema, TABLE3, &chain) == NETVM_CCORE_OK);
  netvm_ccore_chain_set_param(chain, "p", 100);
  netvm_ccore_chain_set_param(chain, "b", 900);
  netvm_ccore_chain_set_param(chain, "s", 200);
  netvm_ccore_chain_set_param(chain, "n", 10);
  netvm_ccore_chain_set_param(chain, "g", 12);
  return chain;
}

static void errors(const netvm_ccore_schema *schema) {
  netvm_ccore_schema *bad = NULL;
  netvm_ccore_chain *chain = NULL;
  netvm_ccore_run *run = NULL;
  netvm_ccore_messages *in = NULL;
  EXPECT(netvm_ccore_schema_parse("format f id 1 {\n  u9 x;\n}\n", "bad.ccs",
                                  &bad) == NETVM_CCORE_PARSE_ERROR);
  EXPECT(bad == NULL);
  printf("schema error: %s\n", netvm_ccore_last_error());
  EXPECT(netvm_ccore_schema_parse(NULL, "x", &bad) ==
         NETVM_CCORE_INVALID_ARGUMENT);
  printf("null: %s\n", netvm_ccore_last_error());
  netvm_ccore_messages_create(&in);
  EXPECT(netvm_ccore_chain_create(schema, "from flight select pric > 1",
                                  &chain) == NETVM_CCORE_OK);
  EXPECT(netvm_ccore_chain_run(chain, in, &run) ==
         NETVM_CCORE_INVALID_ARGUMENT);
  printf("order: %s\n", netvm_ccore_last_error());
  EXPECT(netvm_ccore_chain_deploy(chain) == NETVM_CCORE_PARSE_ERROR);
  printf("query error: %s\n", netvm_ccore_last_error());
  netvm_ccore_chain_free(chain);
  chain = table3(schema);
  EXPECT(netvm_ccore_chain_deploy(chain) == NETVM_CCORE_OK);
  EXPECT(netvm_ccore_chain_set_param(chain, "p", 1) ==
         NETVM_CCORE_INVALID_ARGUMENT);
  EXPECT(netvm_ccore_chain_reconfigure(chain, "limit", 1, 10) ==
         NETVM_CCORE_NOT_FOUND);
  printf("parameter: %s\n", netvm_ccore_last_error());
  EXPECT(netvm_ccore_chain_swap(chain, "sideways", 10) ==
         NETVM_CCORE_INVALID_ARGUMENT);
  EXPECT(netvm_ccore_chain_auto_specialize(chain, 10, 0) == NETVM_CCORE_OK);
  EXPECT(netvm_ccore_chain_swap(chain, "spare", 10) ==
         NETVM_CCORE_INVALID_ARGUMENT);
  printf("swap: %s\n", netvm_ccore_last_error());
  netvm_ccore_chain_free(chain);
  /* Placement: 1 Tbit/s of 600-byte messages fits neither side. */
  chain = table3(schema);
  netvm_ccore_chain_set_rate(chain, 1000);
  netvm_ccore_chain_set_placement(chain, "auto", 0, 1);
  EXPECT(netvm_ccore_chain_deploy(chain) == NETVM_CCORE_REFUSED);
  printf("refused: %s\n", netvm_ccore_last_error());
  netvm_ccore_chain_free(chain);
  netvm_ccore_messages_free(in);
}

static void channels(const netvm_ccore_schema *schema) {
  netvm_ccore_channels *ch = NULL;
  netvm_ccore_messages *in = NULL, *queued = NULL;
  const char *verdict = NULL;
  const uint8_t *m;
  size_t length;
  netvm_ccore_messages_create(&in);
  netvm_ccore_messages_create(&queued);
  EXPECT(netvm_ccore_channels_create(schema, &ch) == NETVM_CCORE_OK);
  EXPECT(netvm_ccore_channels_open(ch, 1, "atlanta", "paris", 7000, "flight") ==
         NETVM_CCORE_OK);
  EXPECT(netvm_ccore_channels_open(ch, 2, "a", "b", 1, "plane") ==
         NETVM_CCORE_NOT_FOUND);
  netvm_ccore_schema_generate(schema, "flight", 3, 1, NULL, in);
  netvm_ccore_messages_get(in, 0, &m, &length);
  EXPECT(netvm_ccore_channels_classify(ch, m, length, &verdict) ==
         NETVM_CCORE_OK);
  printf("classify: %s", verdict);
  netvm_ccore_channels_classify(ch, m, 4, &verdict);
  printf(", %s\n", verdict);
  EXPECT(netvm_ccore_channels_take(ch, "flight", queued) == NETVM_CCORE_OK);
  EXPECT(netvm_ccore_messages_count(queued) == 1);
  netvm_ccore_channels_free(ch);
  netvm_ccore_messages_free(in);
  netvm_ccore_messages_free(queued);
}

static void chains(const netvm_ccore_schema *schema) {
  netvm_ccore_chain *chain = table3(schema), *host = table3(schema);
  netvm_ccore_messages *in = NULL;
  netvm_ccore_run *plain = NULL, *swapped = NULL, *autorun = NULL,
                  *changed = NULL, *onhost = NULL;
  netvm_ccore_run_stats stats;
  const netvm_ccore_messages *out;
  uint64_t before = 0;
  size_t i, j, n;
  int exact = 1;
  netvm_ccore_messages_create(&in);
  EXPECT(netvm_ccore_schema_generate(schema, "flight", 1000, 1, TABLE3_RANGES,
                                     in) == NETVM_CCORE_OK);
  EXPECT(netvm_ccore_chain_deploy(chain) == NETVM_CCORE_OK);
  printf("where: %s\n", netvm_ccore_chain_where(chain));
  EXPECT(netvm_ccore_chain_run(chain, in, &plain) == NETVM_CCORE_OK);
  netvm_ccore_run_stats_get(plain, &stats);
  printf("plain: %llu in, %llu out, %llu swaps\n",
         (unsigned long long)stats.messages_in,
         (unsigned long long)stats.messages_out,
         (unsigned long long)stats.swaps);
  EXPECT(stats.messages_out > 0 && stats.messages_out < 1000);

  EXPECT(netvm_ccore_chain_swap(chain, "spare", 60000) == NETVM_CCORE_OK);
  EXPECT(netvm_ccore_chain_run(chain, in, &swapped) == NETVM_CCORE_OK);
  netvm_ccore_run_stats_get(swapped, &stats);
  printf(
      "swap: %llu swaps, same output: %d\n", (unsigned long long)stats.swaps,
      same(netvm_ccore_run_outputs(plain), netvm_ccore_run_outputs(swapped)));

  EXPECT(netvm_ccore_chain_clear_control(chain) == NETVM_CCORE_OK);
  EXPECT(netvm_ccore_chain_auto_specialize(chain, 40, 0) == NETVM_CCORE_OK);
  EXPECT(netvm_ccore_chain_run(chain, in, &autorun) == NETVM_CCORE_OK);
  netvm_ccore_run_stats_get(autorun, &stats);
  printf("auto: %llu swaps, same output: %d, report: %s\n",
         (unsigned long long)stats.swaps,
         same(netvm_ccore_run_outputs(plain), netvm_ccore_run_outputs(autorun)),
         strstr(netvm_ccore_run_report(autorun), "\"kind\": \"specialize\"")
             ? "specialize"
             : "none");
  EXPECT(stats.last_downtime_cycles > 0 &&
         stats.last_downtime_cycles < 30 * 600);

  /* $p from 100 to 700 at cycle 150000: the generic code comes back for
   * it; every message after the change is selected with the new value. */
  EXPECT(netvm_ccore_chain_reconfigure(chain, "p", 700, 150000) ==
         NETVM_CCORE_OK);
  EXPECT(netvm_ccore_chain_run(chain, in, &changed) == NETVM_CCORE_OK);
  netvm_ccore_run_stats_get(changed, &stats);
  EXPECT(netvm_ccore_run_reconfiguration(changed, 0, &before) ==
         NETVM_CCORE_OK);
  EXPECT(netvm_ccore_run_reconfiguration(changed, 1, &before) ==
         NETVM_CCORE_NOT_FOUND);
  /* The output: every input before the split that passes with $p = 100,
   * every one after it that passes with $p = 700, in order. */
  out = netvm_ccore_run_outputs(changed);
  n = netvm_ccore_messages_count(out);
  for (i = 0, j = 0; i < netvm_ccore_messages_count(in); ++i) {
    const uint8_t *m, *o;
    size_t length, lo;
    netvm_ccore_messages_get(in, i, &m, &length);
    if (!passes(m, i < before ? 100 : 700))
      continue;
    if (j >= n || netvm_ccore_messages_get(out, j, &o, &lo) != NETVM_CCORE_OK ||
        lo != length || memcmp(o, m, lo) != 0)
      exact = 0;
    ++j;
  }
  if (j != n)
    exact = 0;
  printf("change: %llu swaps, %llu reconfigurations, split after %llu, "
         "exact: %d\n",
         (unsigned long long)stats.swaps,
         (unsigned long long)stats.reconfigurations, (unsigned long long)before,
         exact);
  EXPECT(before > 0 && before < 1000 && exact);

  netvm_ccore_chain_set_placement(host, "host", 0, 1);
  EXPECT(netvm_ccore_chain_deploy(host) == NETVM_CCORE_OK);
  printf("host: %s", netvm_ccore_chain_where(host));
  EXPECT(netvm_ccore_chain_auto_specialize(host, 10, 0) ==
         NETVM_CCORE_INVALID_ARGUMENT);
  EXPECT(netvm_ccore_chain_run(host, in, &onhost) == NETVM_CCORE_OK);
  printf(", same output: %d\n",
         same(netvm_ccore_run_outputs(plain), netvm_ccore_run_outputs(onhost)));

  netvm_ccore_run_free(plain);
  netvm_ccore_run_free(swapped);
  netvm_ccore_run_free(autorun);
  netvm_ccore_run_free(changed);
  netvm_ccore_run_free(onhost);
  netvm_ccore_messages_free(in);
  netvm_ccore_chain_free(chain);
  netvm_ccore_chain_free(host);
}

int main(int argc, char **argv) {
  netvm_ccore_schema *schema = NULL;
  if (argc != 2 ||
      netvm_ccore_schema_load(argv[1], &schema) != NETVM_CCORE_OK) {
    printf("usage: CCoreCApiTest SCHEMA.ccs (%s)\n", netvm_ccore_last_error());
    return 1;
  }
  errors(schema);
  channels(schema);
  chains(schema);
  netvm_ccore_schema_free(schema);
  printf("%d failures\n", failures);
  return failures != 0;
}
