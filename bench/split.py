#!/usr/bin/env python3
"""Splitting a fat NetPE (netvm-split-pe) on host threads.

examples/apps/fatpe.nvapp is pipeline9 with a fat, stateful NetPE
('tally': a hash loop, a CRC-32C of the frame, a counter in data memory)
that cannot be replicated: the NetVM paper's 60% stage. This runs, over one
trace, netvm-run --throughput in these configurations:

  unsplit -j 1          one thread, run to completion
  unsplit, plan -j 2    --pipeline -j 2: the partitioner's plan (static
                        estimates: it does not split)
  unsplit, cut -j 2     the best cut of the unsplit chain, tally and what
                        follows on the second thread
  split@B -j 2          tally split before block B (netvm-opt
                        --netvm-split-pe block=B), its first half on the
                        first thread, its second half (the counter) on
                        the second
  split@B -j 3          the same with the first stage on two threads
                        (replicated; more threads than this VM's 2 cores)

Each runs --repeat times; the table (stdout) gives the median processing
rate and its ratio to one thread, and the output of every configuration is
checked against the unsplit one (netvm-run --results, names normalised).

  bench/split.py                          # build/, 200,000 packets, 7 runs
  bench/split.py --packets 500000 --repeat 11
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRONT = "eth,version,header,ttl"
BACK = "protocol,ports,flowkey,queue"


def processing_ms(tool, app, trace, opts):
    p = subprocess.run([tool, app, "-r", trace, "--throughput"] + opts,
                       capture_output=True, text=True, check=True)
    m = re.search(r"processing ([0-9.]+) ms", p.stderr)
    if not m:
        sys.exit("split.py: no throughput line from netvm-run:\n" + p.stderr)
    return float(m.group(1))


def normalised(tool, app, trace, opts):
    out = subprocess.run([tool, app, "-r", trace, "--results"] + opts,
                         capture_output=True, text=True, check=True).stdout
    lines = []
    for line in out.splitlines():
        if re.fullmatch(r"data \S+ ", line):
            continue  # the half without data memory
        lines.append(line.replace("tally_2", "tally"))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--packets", type=int, default=200000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--blocks", default="5,6",
                    help="cut blocks of tally's push handler to measure")
    args = ap.parse_args()
    bin_ = os.path.join(args.build, "bin")
    tool = {t: os.path.join(bin_, t)
            for t in ("netc", "netvm-opt", "netvm-run", "netvm-pcapgen")}
    app = os.path.join(ROOT, "examples", "apps", "fatpe.nvapp")
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.pcap")
        subprocess.run([tool["netvm-pcapgen"], "-o", trace, "-n",
                        str(args.packets), "--seed", "7"], check=True,
                       capture_output=True)
        check = os.path.join(tmp, "check.pcap")
        subprocess.run([tool["netvm-pcapgen"], "-o", check, "-n", "2000",
                        "--seed", "19", "--malformed", "50"], check=True,
                       capture_output=True)
        loaded = os.path.join(tmp, "fatpe.mlir")
        subprocess.run([tool["netc"], "-O0", "-emit=mlir",
                        "--mlir-print-debuginfo", app, "-o", loaded],
                       check=True)
        configs = [
            ("unsplit -j 1", app, ["-j", "1"]),
            ("unsplit, plan -j 2", app, ["--pipeline", "-j", "2"]),
            ("unsplit, cut -j 2", app,
             ["--stages", FRONT + ";tally," + BACK]),
        ]
        for block in args.blocks.split(","):
            split = os.path.join(tmp, "split%s.mlir" % block)
            subprocess.run(
                [tool["netvm-opt"], "--mlir-print-debuginfo", loaded, "-o",
                 split, "--pass-pipeline=builtin.module(netvm.application("
                 "netvm-split-pe{pe=tally block=%s}))" % block], check=True)
            configs.append(("split@%s -j 2" % block, split,
                            ["--stages", FRONT + ",tally;tally_2," + BACK]))
            configs.append(("split@%s -j 3" % block, split,
                            ["--stages",
                             FRONT + ",tally:2;tally_2," + BACK]))
        reference = normalised(tool["netvm-run"], app, check, [])
        for name, path, opts in configs:
            if normalised(tool["netvm-run"], path, check, opts) != reference:
                sys.exit("split.py: %s: results differ from the unsplit "
                         "application" % name)
        times = {name: [] for name, _, _ in configs}
        for _ in range(args.repeat):  # interleaved: drift hits all alike
            for name, path, opts in configs:
                times[name].append(
                    processing_ms(tool["netvm-run"], path, trace, opts))
    base = statistics.median(times[configs[0][0]])
    print("| configuration | median processing (ms) | Mpackets/s | vs -j 1 |")
    print("|---|---:|---:|---:|")
    for name, _, _ in configs:
        ms = statistics.median(times[name])
        print("| %s | %.1f | %.2f | %.2f |" %
              (name, ms, args.packets / ms / 1000, base / ms))


if __name__ == "__main__":
    main()
