#!/usr/bin/env bash
#===- scripts/run-bridge.sh - The learning bridge on generated traffic ----===#
#
# Installs what is missing, builds, generates multi-port traffic for the
# learning bridge (examples/bridge/traffic.py: 2000 frames, one pcap per
# port, in build/bridge/; not committed) and runs examples/bridge/
# bridge.netil over it with the JIT: each port's frames enter by its own
# source, the frames that leave are written to build/bridge/out-SINK.pcap,
# and the summary and the bridge's counters (data memory) are printed.
# Extra arguments go to netvm-run (--interp for the reference interpreter,
# -v for every frame).
#===----------------------------------------------------------------------===#
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${NETVM_BUILD_DIR:-$root/build}

"$root/scripts/setup.sh" >&2
ninja -C "$build" >&2

out=$build/bridge
mkdir -p "$out"
python3 "$root/examples/bridge/traffic.py" -n 2000 --seed 1 \
  --pcap "$out/in-%s.pcap"
exec "$build/bin/netvm-run" "$root/examples/bridge/bridge.netil" \
  -r "$out/in-%s.pcap" -w "$out/out-%s.pcap" --dump-data "$@"
