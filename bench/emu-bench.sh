#!/usr/bin/env bash
#===- bench/emu-bench.sh - The microengine emulator's benchmark -----------===#
#
# Issue 7: how fast the emulator runs (simulated ME cycles per host second,
# one host thread) and what the emulated machine achieves (packets/s and
# Gbit/s at the configured clock, 600 MHz) on the paper's five filters as
# receive -> filter -> transmit pipelines, as the filter stage grows from
# 1 to 6 microengines (examples/me/par-pipeline.sh). The input is
# lossless (packets wait for receive buffers), so the emulated rate is the
# most the pipeline can process. Prints Markdown; bench/README.md,
# "Microengine emulator (issue 7)", holds the latest figures.
#
# The first section checks the issue's speed target, at least 100 M
# simulated ME cycles per host second, on a trace of realistic sizes:
# netvm-pcapgen's frames (78 bytes on average) padded, 4 in 12 to 512
# bytes and 1 in 12 to 1500, to about 330 bytes on average (IMIX-like).
# Speeds are the median of RUNS runs.
#
# With --multirx it also measures the receive stage spread over 1-3 MEs
# (examples/me/multirx-pipeline.sh) as the last section.
#
# Usage: bench/emu-bench.sh [--multirx] [PACKETS (default 200000)] [RUNS (default 3)]
#===----------------------------------------------------------------------===#
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${NETVM_BUILD_DIR:-$root/build}
multirx=0
if [ "${1:-}" = --multirx ]; then
  multirx=1
  shift
fi
packets=${1:-200000}
runs=${2:-3}
emu=$build/bin/netvm-emu
for tool in "$emu" "$build/bin/netvm-pcapgen"; do
  if [ ! -x "$tool" ]; then
    echo "emu-bench.sh: $tool is missing; build netvm-emu and netvm-pcapgen" >&2
    exit 1
  fi
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trace=$work/trace.pcap
"$build/bin/netvm-pcapgen" -o "$trace" -n "$packets" --seed 3 >/dev/null
# The same packets padded with zero bytes after their headers (captured
# whole; runts and truncated captures stay as they are): about 330 bytes
# on the wire on average. Prints the average.
trace330=$work/trace330.pcap
average330=$(python3 - "$trace" "$trace330" <<'PY'
import random, struct, sys
rng = random.Random(3)
n = total = 0
with open(sys.argv[1], 'rb') as f, open(sys.argv[2], 'wb') as o:
    o.write(f.read(24))
    while True:
        h = f.read(16)
        if len(h) < 16:
            break
        ts, us, incl, orig = struct.unpack('<IIII', h)
        data = f.read(incl)
        r = rng.randrange(12)
        target = 512 if r < 4 else 1500 if r == 4 else 0
        if incl == orig and target > incl:
            data += bytes(target - incl)
            incl = orig = target
        o.write(struct.pack('<IIII', ts, us, incl, orig) + data)
        n += 1
        total += orig
print('%.0f' % (total / max(n, 1)))
PY
)
filters="ip ip-src ip-tcp four-hosts four-fields"

# Median of RUNS: prints "seconds ME-cycles/s chip-cycles/s" (arguments
# after the program go to netvm-emu; TRACE, default the trace above).
speed() {
  local lines=""
  for _ in $(seq "$runs"); do
    local line
    line=$("$emu" "$1" -r "${TRACE:-$trace}" "${@:2}" -q --time 2>&1 >/dev/null | grep '^host:')
    # host: 0.213 s, 41.3 M chip cycles/s, 124.0 M ME-cycles/s (loaded MEs), ...
    lines+="$(echo "$line" | awk '{print $2, $8, $4}')"$'\n'
  done
  printf '%s' "$lines" | sort -n | awk '{a[NR] = $0} END {print a[int((NR + 1) / 2)]}'
}

# Emulated figures from the JSON statistics: "cycles Mpps Gbit/s scratch
# dram busiest" (scratch: the scratch controller's busy fraction and mean
# queue depth, where the ring traffic of every stage meets; dram: the same
# for DRAM, where the packets' transfers meet the filters' reads;
# arguments after the program go to netvm-emu).
emulated() {
  "$emu" "$1" -r "$trace" "${@:2}" --stats-json=- | python3 -c '
import json, sys
s = json.load(sys.stdin)
sec = s["cycles"] / (s["clock_mhz"] * 1e6)
p = s["packets"]
mes = sorted(((m["utilisation"], m["me"]) for m in s["mes"]), reverse=True)
print(s["cycles"], "%.3f" % (p["received"] / sec / 1e6),
      "%.3f" % (p["bytes_received"] * 8 / sec / 1e9),
      "%.0f%%/%.2f" % (100 * s["memory"]["scratch"]["busy"],
                       s["memory"]["scratch"]["mean_queue_depth"]),
      "%.0f%%/%.2f" % (100 * s["memory"]["dram"]["busy"],
                       s["memory"]["dram"]["mean_queue_depth"]),
      "me%d %.0f%%" % (mes[0][1], 100 * mes[0][0]))'
}

echo "### Emulator speed on a trace of realistic sizes (the target)"
echo
echo "$packets packets (netvm-pcapgen --seed 3, padded to $average330 bytes on average),"
echo "one host thread, median of $runs; ME-cycles count each loaded ME's cycles;"
echo "the target is 100 M ME-cycles/s."
echo
echo "| pipeline | MEs | host s | M ME-cycles/s | M chip cycles/s | target |"
echo "|---|---:|---:|---:|---:|---|"
"$root/examples/me/par-pipeline.sh" "$root/examples/me/ip-tcp.s" 6 > "$work/ip-tcp-6.s"
"$root/examples/me/multirx-pipeline.sh" "$root/examples/me/ip.s" 2 5 > "$work/ip-rx2.s"
below=0
for p in ip ip-src ip-tcp four-hosts four-fields ip-tcp-6 ip-rx2; do
  case $p in
  ip-tcp-6) file=$work/ip-tcp-6.s name="ip-tcp, 6 filter MEs (par)" mes=8 ;;
  ip-rx2) file=$work/ip-rx2.s name="ip, 2 receive MEs (multirx)" mes=8 ;;
  *) file=$root/examples/me/$p.s name=$p.s mes=3 ;;
  esac
  read -r s me chip < <(TRACE=$trace330 speed "$file")
  met=met
  if awk -v m="$me" 'BEGIN{exit !(m < 100)}'; then
    met="below"
    below=$((below + 1))
  fi
  echo "| $name | $mes | $s | $me | $chip | $met |"
done
echo
if [ "$below" = 0 ]; then
  echo "Target (100 M ME-cycles/s on every pipeline): met."
else
  echo "Target (100 M ME-cycles/s on every pipeline): below on $below pipelines."
fi
echo
echo "### Emulator speed"
echo
echo "$packets packets (netvm-pcapgen --seed 3, 78 bytes on average), one host"
echo "thread, median of $runs; ME-cycles count each loaded ME's cycles."
echo
echo "| pipeline | MEs | host s | M ME-cycles/s | M chip cycles/s |"
echo "|---|---:|---:|---:|---:|"
for f in $filters; do
  read -r s me chip < <(speed "$root/examples/me/$f.s")
  echo "| $f.s | 3 | $s | $me | $chip |"
done
read -r s me chip < <(speed "$work/ip-tcp-6.s")
echo "| ip-tcp, 6 filter MEs | 8 | $s | $me | $chip |"
echo
echo "### Emulated throughput as filter MEs are added"
echo
echo "Packets processed (received) per emulated second at 600 MHz, and the"
echo "offered Gbit/s that is (wire lengths); lossless input. 1 ME is the"
echo "one-filter-ME example (pipeline-rx-tx.inc), 1-6 par are"
echo "par-pipeline.sh programs (receive ME 0, filters 1..K, transmit ME 7)."
echo
echo "| filter | filter MEs | cycles | Mpps | Gbit/s | scratch busy/queue | dram busy/queue | busiest ME |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
for f in $filters; do
  read -r c mpps gbps scratch dram busy < <(emulated "$root/examples/me/$f.s")
  echo "| $f | 1 | $c | $mpps | $gbps | $scratch | $dram | $busy |"
  for k in 1 2 4 6; do
    "$root/examples/me/par-pipeline.sh" "$root/examples/me/$f.s" "$k" > "$work/$f-$k.s"
    read -r c mpps gbps scratch dram busy < <(emulated "$work/$f-$k.s")
    echo "| $f | $k par | $c | $mpps | $gbps | $scratch | $dram | $busy |"
  done
done

if [ "$multirx" = 1 ]; then
  echo
  echo "### Receive on 1-3 microengines"
  echo
  echo "multirx-pipeline.sh programs: receive on MEs 0..R-1, filter on the"
  echo "next 7 - R, transmit on ME 7 (pipeline-multirx-tx.inc). Mpps received"
  echo "per emulated second at 600 MHz; dram: the DRAM controller's busy"
  echo "fraction and mean queue depth (ME reads and the MSF's transfers);"
  echo "host speed median of $runs. rx=N: --latency=rx=N, a receive that takes"
  echo "1 or 2 us instead of 0.3 (so that receive is the bottleneck)."
  echo
  echo "| filter | receive MEs | latency | cycles | Mpps | Gbit/s | dram busy/queue | busiest ME | host s | M ME-cycles/s |"
  echo "|---|---:|---|---:|---:|---:|---:|---|---:|---:|"
  for f in ip ip-tcp; do
    for lat in default rx=600 rx=1200; do
      opts=()
      [ "$lat" = default ] || opts=(--latency="$lat")
      for r in 1 2 3; do
        "$root/examples/me/multirx-pipeline.sh" "$root/examples/me/$f.s" "$r" $((7 - r)) > "$work/$f-rx$r.s"
        read -r c mpps gbps _ dram busy < <(emulated "$work/$f-rx$r.s" "${opts[@]}")
        read -r s me chip < <(speed "$work/$f-rx$r.s" "${opts[@]}")
        echo "| $f | $r | $lat | $c | $mpps | $gbps | $dram | $busy | $s | $me |"
      done
    done
  done
fi
