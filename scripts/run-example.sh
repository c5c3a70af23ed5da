#!/usr/bin/env bash
#===- scripts/run-example.sh - The main job on the bundled example --------===#
#
# Installs what is missing, builds, then assembles the bundled two-NetPE
# classifier (examples/apps/classify.nvapp), compiles it to native code with
# the JIT and runs it over the bundled trace (examples/traces/mixed.pcap),
# printing the per-sink (per output port) summary, the per-NetPE counters
# and the protocol counters the application keeps in its data memory. Extra
# arguments go to netvm-run (--interp for the reference interpreter, -v for
# every packet).
#===----------------------------------------------------------------------===#
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${NETVM_BUILD_DIR:-$root/build}

"$root/scripts/setup.sh" >&2
ninja -C "$build" >&2

exec "$build/bin/netvm-run" "$root/examples/apps/classify.nvapp" \
  -r "$root/examples/traces/mixed.pcap" --dump-data "$@"
