#!/usr/bin/env python3
"""Dynamic allocation of pipeline stages: the seed paper's experiment.

Runs bench/pipeline/rtp.nvapp (receive, a heavy stateless process stage,
transmit) with netvm-pipeline-bench over a bursty arrival schedule in three
configurations: the process stage on a fixed allocation sized for the peak,
on a fixed minimal one (one thread), and on a pool that the runtime's
controller moves (--dynamic). Each runs --repeat times; the medians go to
a table (stdout, and pipeline.md in the output directory) and the runs to
pipeline.json. With matplotlib, pipeline-timeline.png draws the process
stage's threads and queue over time for one run of each configuration.

  bench/pipeline.py                      # build/bench-pipeline
  bench/pipeline.py --repeat 5 --peak 2 --out /tmp/p

The trace comes from netvm-pcapgen (nothing is committed). The arrival
rates default to 1.5 and 0.3 times what one process thread handles
(the median of three unpaced runs of the tool, --calibrate), the same for
every run.
"""

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(tool, app, trace, stages, dynamic, args, timeline):
    cmd = [tool, app, "-r", trace, "--stages", stages,
           "--phase-ms", str(args.phase_ms), "--phases", str(args.phases),
           "--timeline", timeline]
    if dynamic is not None:
        cmd.append("--dynamic=" + dynamic if dynamic else "--dynamic")
    if args.high:
        cmd += ["--high", str(args.high)]
    if args.low:
        cmd += ["--low", str(args.low)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def draw(outdir, timelines, phase_ms):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("pipeline.py: no matplotlib (pip install matplotlib): "
              "no figure", file=sys.stderr)
        return None
    fig, axes = plt.subplots(len(timelines), 1, sharex=True,
                             figsize=(8, 2.2 * len(timelines)))
    for ax, (name, path) in zip(axes, timelines):
        with open(path) as f:
            rows = list(csv.DictReader(f))
        t = [float(r["ms"]) for r in rows]
        workers = [int(r["workers"]) for r in rows]
        # The queue: the largest of each 5 ms (a line a sample is a smudge).
        bins = {}
        for r in rows:
            k = int(float(r["ms"]) // 5)
            bins[k] = max(bins.get(k, 0), int(r["queued"]))
        qt = [5 * k for k in sorted(bins)]
        queued = [bins[k] for k in sorted(bins)]
        end = t[-1] if t else 0
        k = 0
        while k * phase_ms < end:
            if k % 2 == 0:
                ax.axvspan(k * phase_ms, (k + 1) * phase_ms, color="0.92")
            k += 1
        ax.step(t, workers, where="post", color="tab:blue")
        ax.set_ylabel("threads", color="tab:blue")
        ax.set_ylim(0, max(workers + [1]) + 0.5)
        ax.set_title(name, fontsize=9, loc="left")
        q = ax.twinx()
        q.step(qt, queued, where="post", color="tab:red", linewidth=0.7)
        q.set_ylabel("queued (max/5 ms)", color="tab:red")
        q.set_ylim(bottom=0)
    axes[-1].set_xlabel("ms (grey: high-load phases)")
    fig.tight_layout()
    png = os.path.join(outdir, "pipeline-timeline.png")
    fig.savefig(png, dpi=72)
    try:  # a few colours are enough: a small file
        from PIL import Image
        Image.open(png).convert("RGB").quantize(colors=16).save(
            png, optimize=True)
    except ImportError:
        pass
    return png


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out", default=None,
                   help="output directory (default BUILD/bench-pipeline)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--peak", type=int, default=2,
                   help="process threads of the peak allocation")
    p.add_argument("--packets", type=int, default=20000,
                   help="packets of the generated trace (reused in turn)")
    p.add_argument("--phase-ms", type=int, default=100)
    p.add_argument("--phases", type=int, default=6)
    p.add_argument("--high", type=float, default=0,
                   help="arrivals/s in high-load phases (default: "
                   "--high-factor times one process thread's rate)")
    p.add_argument("--low", type=float, default=0)
    p.add_argument("--high-factor", type=float, default=1.5)
    p.add_argument("--low-factor", type=float, default=0.3)
    p.add_argument("--dynamic", default="workers=2,interval=100us,"
                   "queue-up=64,queue-down=4,delay-up=300us,"
                   "delay-down=50us,dwell=2ms",
                   help="netvm-run --dynamic settings")
    args = p.parse_args()
    outdir = args.out or os.path.join(args.build, "bench-pipeline")
    os.makedirs(outdir, exist_ok=True)
    bindir = os.path.join(args.build, "bin")
    tool = os.path.join(bindir, "netvm-pipeline-bench")
    app = os.path.join(ROOT, "bench", "pipeline", "rtp.nvapp")
    trace = os.path.join(outdir, "trace.pcap")
    subprocess.run([os.path.join(bindir, "netvm-pcapgen"), "-o", trace,
                    "-n", str(args.packets), "--seed", "7",
                    "--malformed", "0"], check=True,
                   stdout=subprocess.DEVNULL)

    if not args.high or not args.low:
        # One calibration for every run: the rates must be the same.
        rates = sorted(json.loads(subprocess.run(
            [tool, app, "-r", trace, "--calibrate"], check=True,
            capture_output=True, text=True).stdout)["one_thread_pps"]
            for _ in range(3))
        one = rates[1]
        args.high = args.high or round(args.high_factor * one)
        args.low = args.low or round(args.low_factor * one)

    configs = [
        ("fixed peak (%d process threads)" % args.peak,
         "rx;proc:%d;tx" % args.peak, None),
        ("fixed minimal (1 process thread)", "rx;proc;tx", None),
        ("dynamic (pool of %s)" % args.dynamic.split(",")[0].split("=")[1]
         if args.dynamic.startswith("workers=") else "dynamic",
         "rx;proc;tx", args.dynamic),
    ]
    results = {name: [] for name, _, _ in configs}
    timelines = []
    for rep in range(args.repeat):
        for k, (name, stages, dynamic) in enumerate(configs):
            tl = os.path.join(outdir, "timeline-%d-%d.csv" % (k, rep))
            results[name].append(run(tool, app, trace, stages, dynamic,
                                     args, tl))
            if rep == 0:
                timelines.append((name, tl))
    with open(os.path.join(outdir, "pipeline.json"), "w") as f:
        json.dump(results, f, indent=1)

    cols = [("throughput_pps", "throughput (pkt/s)", "{:.0f}"),
            ("seconds", "time (s)", "{:.3f}"),
            ("delay_p50_us", "delay p50 (µs)", "{:.0f}"),
            ("delay_p99_us", "delay p99 (µs)", "{:.0f}"),
            ("cpu_seconds", "CPU-s (all threads)", "{:.3f}"),
            ("stage_worker_seconds", "proc worker-s", "{:.3f}"),
            ("stage_cpu_seconds", "proc CPU-s", "{:.3f}"),
            ("reallocations", "reallocations", "{:.0f}"),
            ("realloc_mean_us", "realloc mean (µs)", "{:.0f}"),
            ("realloc_max_us", "realloc max (µs)", "{:.0f}")]
    first = next(iter(results.values()))[0]
    lines = ["one process thread: %.0f pkt/s; arrivals %.0f (high) / %.0f "
             "(low) pkt/s, %d phases of %d ms; medians of %d runs" %
             (first["one_thread_pps"], first["high_pps"], first["low_pps"],
              args.phases, args.phase_ms, args.repeat), "",
             "| allocation | " + " | ".join(c[1] for c in cols) + " |",
             "|---" * (len(cols) + 1) + "|"]
    for name, runs in results.items():
        cells = [fmt.format(statistics.median(r[key] for r in runs))
                 for key, _, fmt in cols]
        lines.append("| " + name + " | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(outdir, "pipeline.md"), "w") as f:
        f.write(text)
    print(text)
    png = draw(outdir, timelines, args.phase_ms)
    if png:
        print("figure: " + png)


if __name__ == "__main__":
    main()
