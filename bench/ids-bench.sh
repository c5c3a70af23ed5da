#!/usr/bin/env bash
#===- bench/ids-bench.sh - netvm's IDS against a hand-written one ---------===#
#
# Generates (not committed; kept in build/bench/) a rule set of 1000 Snort
# rules and a trace of 1,000,000 packets made for it, both with fixed seeds
# (netvm-ids-bench --generate-rules / --generate-trace; bench/README.md,
# "IDS", says how), then runs netvm-ids-bench: the netvm IDS (JIT -O2, one
# thread) and a hand-written IDS over the same Hyperscan databases, checked
# to raise the same alerts, timed alternately (medians), with the share of
# time in string matching and the rule compile time. Prints Markdown.
#
# With --split instead: the same rules and trace through `netvm-ids` on the
# JIT and split (--engine=split: decode and classify on the ME emulator,
# the rest on the JIT), the alerts checked equal, with end-to-end packets/s
# of each (median of --repeat N runs, default 3) and the emulated figures
# of the ME part (exact).
#
# Usage: bench/ids-bench.sh [--repeat N] [other netvm-ids-bench options]
#        bench/ids-bench.sh --split [--repeat N]
#===----------------------------------------------------------------------===#
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${NETVM_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh" >&2
ninja -C "$build" netvm-ids-bench netvm-ids >&2

out=$build/bench
mkdir -p "$out"
bench=$build/bin/netvm-ids-bench
[[ -s $out/ids-1000.rules ]] ||
  "$bench" --generate-rules 1000 --seed 1 -o "$out/ids-1000.rules"
[[ -s $out/ids-1m.pcap ]] ||
  "$bench" --generate-trace 1000000 --seed 2 --rules "$out/ids-1000.rules" \
    -o "$out/ids-1m.pcap"

echo "## IDS ($(date -u +%Y-%m-%d), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
echo
if [[ ${1:-} != --split ]]; then
  NETVM_CACHE=off "$bench" "$out/ids-1000.rules" "$out/ids-1m.pcap" "$@"
  exit
fi
repeat=3
[[ ${2:-} == --repeat ]] && repeat=$3
ids=$build/bin/netvm-ids
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
declare -A rate
for engine in native split; do
  for ((i = 0; i < repeat; ++i)); do
    NETVM_CACHE=off "$ids" "$out/ids-1000.rules" -r "$out/ids-1m.pcap" \
      --engine=$engine --timing -A none --json "$out/ids-$engine.json" \
      2> "$out/ids-$engine.err"
    sed -n 's/^netvm-ids: \([0-9]*\) packets\/s.*/\1/p' "$out/ids-$engine.err"
  done > "$out/ids-$engine.rates"
  rate[$engine]=$(median < "$out/ids-$engine.rates")
done
cmp -s "$out/ids-native.json" "$out/ids-split.json" ||
  { echo "ids-bench: the split IDS's alerts differ from the JIT's" >&2; exit 1; }
emu=$(sed -n 's/^netvm-ids: microengines: //p' "$out/ids-split.err")
echo "Split run: decode and classify on the ME emulator, the rest on the JIT;"
echo "the alerts ($(wc -l < "$out/ids-split.json") of them) equal the JIT's."
echo
echo "| netvm-ids | packets/s end to end (median of $repeat) | ratio |"
echo "|---|---:|---:|"
echo "| --engine=native (JIT -O2) | ${rate[native]} | 1.00 |"
echo "| --engine=split | ${rate[split]} | $(awk "BEGIN {printf \"%.3f\", ${rate[split]} / ${rate[native]}}") |"
echo
echo "ME part (emulated, exact): $emu"
