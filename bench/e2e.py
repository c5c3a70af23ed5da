#!/usr/bin/env python3
"""netvm-run against tcpdump end to end: `-r TRACE -w OUT EXPR` with the
paper's five filters as tcpdump expressions, side by side in one run with
hyperfine (median wall time of repeated runs), on a large and a small
trace. Checks that every output file is byte-identical to tcpdump's, and
reports peak memory. Prints Markdown (bench/README.md keeps the latest).

Usage: bench/e2e.py BUILD_DIR LARGE.pcap SMALL.pcap [--runs N]
The JIT's compile cache is warmed first (a second run of a filter loads
its object); one row per trace also shows a run with the cache off.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

FILTERS = [
    ("ip", "ip"),
    ("ip-src", "ip src 10.1.1.1"),
    ("ip-tcp", "ip and tcp"),
    ("four-fields", "ip src 10.1.1.1 and ip dst 10.2.2.2 and tcp src port 20 "
                    "and tcp dst port 30"),
    ("four-hosts", "ip src 10.4.4.4 or ip src 10.3.3.3 or ip src 10.2.2.2 or "
                   "ip src 10.1.1.1"),
]


def peak_mb(argv, env):
    """Peak resident memory of one run, in MB (GNU time's figure: a child
    of this Python process would start with its size)."""
    if not os.path.exists("/usr/bin/time"):
        return float("nan")
    err = subprocess.run(["/usr/bin/time", "-f", "%M"] + argv, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True).stderr
    return int(err.strip().splitlines()[-1]) / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("large")
    ap.add_argument("small")
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    if not shutil.which("hyperfine") or not shutil.which("tcpdump"):
        print("(end to end against tcpdump skipped: needs hyperfine and "
              "tcpdump)")
        return 0
    run = os.path.join(args.build, "bin", "netvm-run")
    work = tempfile.mkdtemp(prefix="netvm-e2e-")
    env = dict(os.environ, NETVM_CACHE_DIR=os.path.join(work, "cache"))
    env.pop("NETVM_CACHE", None)
    print("| trace | filter | tcpdump (ms) | netvm-run -j 1 (ms) | "
          "netvm-run -j 2 (ms) | tcpdump / -j 1 | tcpdump / -j 2 | "
          "identical | peak MB tcpdump / netvm |")
    print("|---|---|---:|---:|---:|---:|---:|---|---|")
    for trace_name, trace in (("large", args.large), ("small", args.small)):
        for name, expr in FILTERS:
            out = os.path.join(work, name)
            ref = ["tcpdump", "-r", trace, "-w", out + ".ref", expr]
            j1 = [run, "-r", trace, "-w", out + ".j1", expr]
            j2 = [run, "-r", trace, "-w", out + ".j2", "-j", "2", expr]
            subprocess.run(j1, env=env, stdout=subprocess.DEVNULL,
                           check=True)  # warms the cache
            cmds = [ref, j1, j2]
            if name == "ip-src":
                cmds.append([run, "-r", trace, "-w", out + ".cold", expr])
            report = os.path.join(work, "report.json")
            hf = ["hyperfine", "-N", "-w", "2", "-r", str(args.runs),
                  "--export-json", report]
            for i, c in enumerate(cmds):
                quoted = " ".join("'%s'" % a if " " in a else a for a in c)
                hf.append(("env NETVM_CACHE=off " if i == 3 else "") + quoted)
            subprocess.run(hf, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True)
            med = [r["median"] * 1e3
                   for r in json.load(open(report))["results"]]
            same = all(open(out + ".ref", "rb").read() ==
                       open(out + s, "rb").read() for s in (".j1", ".j2"))
            mem = "%.0f / %.0f" % (peak_mb(ref, env), peak_mb(j1, env))
            print("| %s | `%s` | %.1f | %.1f | %.1f | %.2f | %.2f | %s | %s |"
                  % (trace_name, name, med[0], med[1], med[2],
                     med[0] / med[1], med[0] / med[2],
                     "yes" if same else "**NO**", mem))
            if len(med) > 3:
                print("| %s | `%s`, cache off | | %.1f | | %.2f | | | |"
                      % (trace_name, name, med[3], med[0] / med[3]))
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
