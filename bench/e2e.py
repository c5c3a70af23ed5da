#!/usr/bin/env python3
"""netvm-run against tcpdump end to end: `-r TRACE -w OUT EXPR` with the
paper's five filters as tcpdump expressions, side by side in one run with
hyperfine (median wall time of repeated runs), on a large and a small
trace. Checks that every output file is byte-identical to tcpdump's, and
reports peak memory. Prints Markdown (bench/README.md keeps the latest).

Usage: bench/e2e.py BUILD_DIR LARGE.pcap SMALL.pcap [--runs N]
The compile caches are warmed first (a second run of a filter is served
by netvm-run's launcher from the front cache, without LLVM); one row per
trace also shows a run with the cache off (netvm-run-full compiles), and
one a run that fills an empty cache. Then the launcher's own timings on
the small trace (NETVM_RUN_TIMES): the cached compile (key, entry check,
dlopen) and the time from exec to the first output, medians of --runs.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import statistics
import tempfile
import time

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
                # A run that fills an empty cache (compiles, links, stores).
                fill_dir = os.path.join(work, "fill")
                cmds.append(["env", "NETVM_CACHE_DIR=" + fill_dir, run, "-r",
                             trace, "-w", out + ".fill", expr])
            report = os.path.join(work, "report.json")
            med = []
            for i, c in enumerate(cmds):
                # One hyperfine run per command: the fill row empties its
                # cache before every run (--prepare), the others must not.
                quoted = " ".join("'%s'" % a if " " in a else a for a in c)
                hf = ["hyperfine", "-N", "-w", "2", "-r", str(args.runs),
                      "--export-json", report]
                if i == 4:
                    hf += ["--prepare", "rm -rf " + fill_dir]
                hf.append(("env NETVM_CACHE=off " if i == 3 else "") + quoted)
                subprocess.run(hf, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=True)
                med.append(json.load(open(report))["results"][0]["median"]
                           * 1e3)
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
                print("| %s | `%s`, filling an empty cache | | %.1f | | "
                      "%.2f | | | |"
                      % (trace_name, name, med[4], med[0] / med[4]))
    launcher_times(run, args.small, work, env, args.runs)
    shutil.rmtree(work)
    return 0


def launcher_times(run, trace, work, env, runs):
    """The launcher's phases on a cache hit (NETVM_RUN_TIMES): milliseconds
    from main to the loaded entry (the cached compile: key, check, dlopen),
    and from just before the exec to main, the first output and the end;
    interleaved with a C program that only reads the clock (what starting
    any program costs at that moment)."""
    expr = "ip src 10.1.1.1"
    cmd = [run, "-r", trace, "-w", os.path.join(work, "times.pcap"), expr]
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
    probe = os.path.join(work, "probe")
    src = probe + ".c"
    with open(src, "w") as f:
        f.write("#include <stdio.h>\n#include <stdlib.h>\n#include <time.h>\n"
                "int main(void) { struct timespec t;"
                " clock_gettime(CLOCK_MONOTONIC, &t);"
                " long long t0 = atoll(getenv(\"NETVM_RUN_T0\"));"
                " printf(\"%.3f\\n\", (t.tv_sec * 1000000000LL + t.tv_nsec"
                " - t0) / 1e6); return 0; }\n")
    have_probe = subprocess.run(["cc", "-O2", src, "-o", probe]).returncode == 0
    loaded, main, first, end, empty = [], [], [], [], []
    for _ in range(max(runs, 5)):
        e = dict(env, NETVM_RUN_TIMES="1",
                 NETVM_RUN_T0=str(time.monotonic_ns()))
        err = subprocess.run(cmd, env=e, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True).stderr
        line = [l for l in err.splitlines() if "launcher:" in l]
        if not line:
            print("(launcher timings: the run was not a cache hit)")
            return
        fields = dict(f.strip().rsplit(" ", 1) for f in
                      line[0].split("launcher: ")[1].split(" ms from")[0]
                      .split(","))
        loaded.append(float(fields["loaded"]))
        tail = line[0].split("from exec: ")[1]
        main.append(float(tail.split("main ")[1].split(" ms")[0]))
        first.append(float(tail.split("first output ")[1].split(" ms")[0]))
        end.append(float(tail.split("end ")[1].split(" ms")[0]))
        if have_probe:
            e = dict(env, NETVM_RUN_T0=str(time.monotonic_ns()))
            empty.append(float(subprocess.run(
                [probe], env=e, stdout=subprocess.PIPE, text=True).stdout))
    med = statistics.median
    print()
    print("Launcher, small trace, `%s`, cache hit (medians of %d): cached "
          "compile (key, entry check, dlopen) %.2f ms from main; from the "
          "exec (Python's spawn included): main %.2f ms, first output %.2f "
          "ms, end %.2f ms; an empty C program, run in turn with it, "
          "reaches main in %.2f ms."
          % (expr, len(loaded), med(loaded), med(main), med(first), med(end),
             med(empty) if empty else float("nan")))


if __name__ == "__main__":
    sys.exit(main())
