#!/usr/bin/env python3
"""bench/ccore.py - the C-CORE layer's experiments on the ME emulator.

The C-CORE paper's tables in emulation (docs/ccore.md), every figure an
emulated one (exact, no repeats needed) from `netvm-ccore chain`:

  Table 1  a select on the MEs and a project on the host (JIT) over
           600-byte flight messages offered at rising line rates: rate
           received, rate out of the MEs, receive drops, handler cycles
  Table 3  the same select handler generic (format and parameters read
           from data memory) and specialized (recompiled with them as
           constants), lossless input: messages/s and the ratio
  Swap     hot-swap downtime of the ME stage (generic to specialized)
           through a spare ME and in place, at several points of a run

Usage: bench/ccore.py [--build build] [-n MESSAGES]
Prints markdown tables; results in bench/README.md ("C-CORE").
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "examples", "ccore", "flights.ccs")

SELECT1 = "from flight select price > $limit"
SELECT5 = ("from flight select price >= $p and bags <= $b and status < $s "
           "and passengers > $n and gate == $g")
PARAMS5 = ["p=100", "b=900", "s=200", "n=10", "g=12"]
RANGES = ["price=0:1000", "gate=10:14", "bags=0:1000", "passengers=0:400"]


def chain(tool, query, params, n, extra=()):
    cmd = [tool, "chain", "--schema", SCHEMA, "--me-query", query, "-n", str(n)]
    for p in params:
        cmd += ["--param", p]
    for r in RANGES:
        cmd += ["--range", r]
    cmd += list(extra)
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"ccore bench: {' '.join(cmd)} failed:\n{out.stderr}")
    text = out.stdout

    def grab(pattern, cast=float):
        m = re.search(pattern, text)
        return cast(m.group(1)) if m else None

    return {
        "in_mbps": grab(r"throughput\s+([\d.]+) Mbit/s in"),
        "out_mbps": grab(r"Mbit/s in, ([\d.]+) Mbit/s out"),
        "msgs": grab(r"Mbit/s out of the MEs, (\d+) messages/s"),
        "drops": grab(r"receive drops\s+(\d+)", int),
        "out": grab(r"messages out\s+(\d+)", int),
        "busy": grab(r"([\d.]+) busy cycles"),
        "instr": grab(r"([\d.]+) instructions per message"),
        "downtime": grab(r"downtime\s+(\d+) cycles", int),
        "micros": grab(r"downtime\s+\d+ cycles, ([\d.]+) us"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("-n", type=int, default=2000, help="messages per run")
    args = ap.parse_args()
    tool = os.path.join(args.build, "bin", "netvm-ccore")

    print("### Table 1: select on the MEs, project on the host "
          f"({args.n} messages of 600 bytes, specialized select)\n")
    print("| offered (Gbit/s) | received (Mbit/s) | out of the MEs (Mbit/s) "
          "| receive drops | messages out | handler busy cycles/msg |")
    print("|---:|---:|---:|---:|---:|---:|")
    for rate in (0.1, 0.35, 1, 2, 5, 10, 15, 20, 40):
        r = chain(tool, SELECT1, ["limit=500"], args.n,
                  ["--specialize", "--host-query",
                   "from flight project flightno, price",
                   f"--rate-gbps={rate}"])
        print(f"| {rate} | {r['in_mbps']:.1f} | {r['out_mbps']:.1f} | "
              f"{r['drops']} | {r['out']} | {r['busy']:.1f} |")

    print("\n### Table 3: generic against specialized "
          f"(lossless input, {args.n} messages)\n")
    print("| handler | form | messages/s | Mbit/s in | busy cycles/msg "
          "| instructions/msg | specialized / generic |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, query, params in (("select, 1 parameter", SELECT1,
                                 ["limit=500"]),
                                ("select, 5 parameters", SELECT5, PARAMS5)):
        g = chain(tool, query, params, args.n)
        s = chain(tool, query, params, args.n, ["--specialize"])
        print(f"| {name} | generic | {g['msgs']:.0f} | {g['in_mbps']:.0f} | "
              f"{g['busy']:.1f} | {g['instr']:.1f} | |")
        print(f"| {name} | specialized | {s['msgs']:.0f} | "
              f"{s['in_mbps']:.0f} | {s['busy']:.1f} | {s['instr']:.1f} | "
              f"{s['msgs'] / g['msgs']:.2f}x |")

    print("\n### Hot-swap downtime (select with 5 parameters, generic to "
          "specialized, lossless input)\n")
    print("| mode | downtime cycles (median, min-max of 5 points) "
          "| downtime us at 600 MHz (median) | messages out |")
    print("|---|---:|---:|---:|")
    for mode in ("spare", "in-place"):
        runs = [chain(tool, SELECT5, PARAMS5, args.n,
                      [f"--swap={mode}", f"--swap-at={at}"])
                for at in (60000, 90000, 120000, 150000, 180000)]
        cycles = [r["downtime"] for r in runs]
        micros = [r["micros"] for r in runs]
        print(f"| {mode} | {statistics.median(cycles):.0f} "
              f"({min(cycles)}-{max(cycles)}) | "
              f"{statistics.median(micros):.2f} | "
              f"{', '.join(str(r['out']) for r in runs)} |")


if __name__ == "__main__":
    main()
