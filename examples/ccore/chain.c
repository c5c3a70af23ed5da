/* A C-CORE chain from C (docs/ccore.md, "The C API"): a select on the
 * MEs, automatic specialization after 50 us, a parameter change. */
#include <netvm-c/CCore.h>
#include <stdio.h>

static int check(netvm_ccore_status status) {
  if (status != NETVM_CCORE_OK)
    fprintf(stderr, "ccore: %s: %s\n", netvm_ccore_status_name(status),
            netvm_ccore_last_error());
  return status == NETVM_CCORE_OK;
}

int main(int argc, char **argv) {
  netvm_ccore_schema *schema = NULL;
  netvm_ccore_chain *chain = NULL;
  netvm_ccore_messages *in = NULL;
  netvm_ccore_run *run = NULL;
  netvm_ccore_run_stats stats;
  int ok = argc == 2 && check(netvm_ccore_schema_load(argv[1], &schema)) &&
           check(netvm_ccore_chain_create(
               schema, "from flight select price > $limit", &chain)) &&
           check(netvm_ccore_chain_set_param(chain, "limit", 500)) &&
           check(netvm_ccore_chain_deploy(chain)) &&
           check(netvm_ccore_chain_auto_specialize(chain, 50, 0)) &&
           check(netvm_ccore_chain_reconfigure(chain, "limit", 800, 200000)) &&
           check(netvm_ccore_messages_create(&in)) &&
           check(netvm_ccore_schema_generate(schema, "flight", 2000, 1,
                                             "price=0:1000", in)) &&
           check(netvm_ccore_chain_run(chain, in, &run)) &&
           check(netvm_ccore_run_stats_get(run, &stats));
  if (ok)
    printf("%llu messages in, %llu out, %llu swaps, %.1f us\n%s",
           (unsigned long long)stats.messages_in,
           (unsigned long long)stats.messages_out,
           (unsigned long long)stats.swaps, stats.micros,
           netvm_ccore_run_report(run));
  netvm_ccore_run_free(run);
  netvm_ccore_messages_free(in);
  netvm_ccore_chain_free(chain);
  netvm_ccore_schema_free(schema);
  return ok ? 0 : 1;
}
