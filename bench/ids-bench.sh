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
# Usage: bench/ids-bench.sh [--repeat N] [other netvm-ids-bench options]
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
NETVM_CACHE=off "$bench" "$out/ids-1000.rules" "$out/ids-1m.pcap" "$@"
