#!/usr/bin/env bash
#===- bench/run.sh - The benchmark, in one command -------------------------===#
#
# Installs and builds what is missing, generates the traces (not committed:
# 65536 packets that stay in cache and 1,000,000 packets, both made by
# netvm-pcapgen with fixed seeds), then runs in one process netvm-bench:
# the paper's five filters as JIT code (batch and per-packet entries)
# against the same filters in C (clang -O2), libpcap's bpf_filter and the
# interpreter, JIT compile latency, and the runner's threads; the filter
# front ends (tcpdump expressions and NetPFL) against libpcap's
# pcap_compile and bpf_filter; the optimizer's effect (the netvm IR's size
# at -O0 and -O2 of every bundled application and of the front ends'
# differential filter lists, ns/packet at -O0 and -O2 against C); and
# finally netvm-run -j 1 / -j 2 end to end, and netvm-run against tcpdump
# -r -w with the five filters (bench/e2e.py, hyperfine); between them
# netvm-bridge-bench, the learning bridge against a C bridge on DPDK's
# rte_hash and the lookup coprocessor against rte_hash. Prints Markdown;
# bench/README.md holds the latest figures.
#
# Usage: bench/run.sh [extra netvm-bench options, e.g. --min-time 1]
#        bench/run.sh --section frontends   # only the front ends (no
#                                           # netvm-run end to end)
#        bench/run.sh --section optimizer --netbee DIR
#             # only the optimizer; with NetBee's samples from the NetBee
#             # checkout DIR (samples/nbnetvm/netilsamples, not committed)
#===----------------------------------------------------------------------===#
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${NETVM_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh" >&2
ninja -C "$build" netvm-bench netvm-bridge-bench netvm-run netvm-pcapgen >&2

traces=$build/bench
mkdir -p "$traces"
[[ -s $traces/small.pcap ]] ||
  "$build/bin/netvm-pcapgen" -n 65536 --seed 7 -o "$traces/small.pcap"
[[ -s $traces/large.pcap ]] ||
  "$build/bin/netvm-pcapgen" -n 1000000 --seed 8 -o "$traces/large.pcap"
[[ -s $traces/tiny.pcap ]] ||
  "$build/bin/netvm-pcapgen" -n 50 --seed 9 -o "$traces/tiny.pcap"
# The optimizer section: the 400 generated tcpdump expressions of the
# front end's differential test, and tunnelled frames (IP-in-IP among
# them) on which NetBee's samples must agree with their equivalents.
[[ -s $traces/pcap-expressions-seed1-400.txt ]] ||
  python3 "$root/test/PcapFilter/gen-expressions.py" --seed 1 --count 400 \
    >"$traces/pcap-expressions-seed1-400.txt"
[[ -s $traces/tunnels.pcap ]] ||
  python3 "$root/test/NetPFL/make-trace.py" -n 20000 --seed 23 --truncate 30 \
    -o "$traces/tunnels.pcap"

echo "## netvm-bench ($(date -u +%Y-%m-%d), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
echo
"$build/bin/netvm-bench" --small "$traces/small.pcap" \
  --large "$traces/large.pcap" --filters "$root/examples/filters" \
  --pipeline-app "$root/examples/apps/watch.nvapp" \
  --examples "$root/examples" \
  --pcap-expressions "$root/test/PcapFilter/edge-cases.txt" \
  --pcap-expressions "$traces/pcap-expressions-seed1-400.txt" \
  --netpfl-filters "$root/test/NetPFL/equivalents.txt" \
  --netpfl-filters "$root/test/NetPFL/truth-filters.txt" \
  --netbee-trace "$traces/tunnels.pcap" "$@"

# --section filters, frontends, optimizer or compile: only that part of
# netvm-bench, and no end-to-end runs.
section=all
args=("$@")
for ((i = 0; i < ${#args[@]}; ++i)); do
  case ${args[i]} in
  --section=* | -section=*) section=${args[i]#*=} ;;
  --section | -section) section=${args[i + 1]:-all} ;;
  esac
done
[[ $section == all ]] || exit 0

# The learning bridge (JIT against C on DPDK's rte_hash) and the lookup
# coprocessor against rte_hash.
echo
"$build/bin/netvm-bridge-bench" "$root/examples/bridge/bridge.netil"

echo
echo "### netvm-run end to end ($traces/large.pcap, 1,000,000 packets)"
echo
echo "| application | options | reading (ms) | processing (ms) | Mpackets/s processing | Mpackets/s end to end |"
echo "|---|---|---:|---:|---:|---:|"
for app in filters/ip.netil netil/flow-hash.netil apps/classify.nvapp; do
  for opts in "-j 1" "-j 2" "--pipeline -j 2"; do
    [[ $app != apps/* && $opts == --pipeline* ]] && continue
    line=$("$build/bin/netvm-run" "$root/examples/$app" -r "$traces/large.pcap" \
      $opts --throughput 2>&1 >/dev/null | grep 'packets: reading')
    read -r packets reading processing < <(echo "$line" |
      sed -E 's/.*: ([0-9]+) packets: reading ([0-9.]+) ms, processing ([0-9.]+) ms.*/\1 \2 \3/')
    awk -v a="$app" -v o="$opts" -v n="$packets" -v r="$reading" -v p="$processing" \
      'BEGIN { printf "| %s | %s | %.1f | %.1f | %.2f | %.2f |\n", a, o, r, p, n / p / 1000, n / (r + p) / 1000 }'
  done
done

echo
echo "### netvm-run against tcpdump end to end (-r TRACE -w OUT EXPR; large: 1,000,000 packets, small: 50)"
echo
python3 "$root/bench/e2e.py" "$build" "$traces/large.pcap" "$traces/tiny.pcap"
