#!/usr/bin/env python3
"""bench/partition.py - the partitioner's predictions against measurements.

For every bundled application and the NetVM paper's five filters, on the
ME emulator (exact, emulated figures): the cost model is calibrated with
a profile over one trace (netc --profile), the partitioner plans each
number of MEs (netc --target=me --workers N -emit=partition), the image
compiled for that plan runs over another trace on netvm-emu, and the
predicted and measured throughputs are printed side by side with their
error; the outputs of every run are checked against the interpreter's.
With --plot DIR, throughput against MEs (predicted and measured) is drawn
for each application into DIR/partition-<app>.png (matplotlib).

With --host, the same comparison on this machine's threads: the model is
calibrated on the host (netc --target=native --profile), the partitioner
plans 1 and 2 threads (--threads), and netvm-run runs the plan
(--pipeline -j N), run to completion (-j N) and the run-time cut
(--pipeline-plan=runtime) over a generated trace, --repeat times each;
the medians of the processing rate (netvm-run --throughput) are compared
with the prediction, and the outputs with the interpreter's. With
--ids RULES, the IDS netvm-ids makes of those rules is one of the
applications (netvm-ids --emit-app).

With --flow-key, the applications whose state a flow key partitions
(flow-count, and the test inputs heavy.nvapp and light.netil) on 3..8
MEs: their plans replicate them by flow key (the receive MEs deal by
bucket, docs/me-backend.md); the table gives one ME behind the state
token (before), the prediction, the measurement and the speed-up.

Usage: bench/partition.py [--build build] [--packets 5000] [--mes 3,4,6,8]
                          [--plot DIR] [--apps a.netil,b.nvapp]
       bench/partition.py --flow-key [--mes 3,4,5,6,7,8]
       bench/partition.py --host [--threads 1,2] [--repeat 5]
                          [--packets 200000] [--ids examples/ids/example.rules]
Results: bench/README.md ("Partitioning").
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from pcap_packets import packets as payloads  # noqa: E402
CLOCK_MHZ = 600.0


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True,
                          **kw)


def sinks_of(tool, app):
    """The application's sinks in declaration order."""
    mlir = run([tool["netc"], "-O0", app]).stdout
    return re.findall(r"netvm\.sink @([\w.\"-]+)", mlir)


def reference(tool, tmp, app, trace):
    """The sinks of `app` and the interpreter's packets at each."""
    sinks = sinks_of(tool, app)
    ref = os.path.join(tmp, "ref-%s.pcap")
    for s in sinks:
        if os.path.exists(ref % s):
            os.remove(ref % s)
    run([tool["netvm-run"], "--engine=interp", app, "-r", trace, "-w", ref])
    return sinks, [payloads(ref % s) for s in sinks]


def default_apps():
    apps = [os.path.join("examples", "filters", f + ".netil")
            for f in ("ip", "ip-src", "ip-tcp", "four-hosts", "four-fields")]
    for d, ext in (("netil", ".netil"), ("apps", ".nvapp")):
        for f in sorted(os.listdir(os.path.join(ROOT, "examples", d))):
            if f.endswith(ext):
                apps.append(os.path.join("examples", d, f))
    return apps


def measure(tool, tmp, app, mes, profile, trace, sinks, packets, expect):
    """Predicted and measured Mpps of the plan for `mes` MEs, and whether
    the outputs equal the interpreter's."""
    path = os.path.join(ROOT, app)
    common = ["--target=me", "--workers", str(mes), "--profile", profile,
              path]
    plan = run([tool["netc"], "-emit=partition"] + common).stdout
    predicted = float(re.search(r"predicted throughput: ([0-9.]+) Mpps",
                                plan).group(1))
    bottleneck = re.search(r"bottleneck: (.*)", plan).group(1)
    stages = []
    for m in re.finditer(r"^  stage \d+ +(\d+) MEs? .* Mpps  (.*)$", plan,
                         re.M):
        names = m.group(2).replace(" (replicated)", "")
        keyed = " (replicated by flow key)" in names
        names = names.replace(" (replicated by flow key)", "")
        stages.append(f"{names} x{m.group(1)}" + (" by key" if keyed else ""))
    rx = re.search(r"^  receive +(\d+) ME", plan, re.M).group(1)
    image = os.path.join(tmp, "app.img")
    run([tool["netc"], "-o", image] + common)
    outs = [os.path.join(tmp, f"emu-{i}.pcap") for i in range(len(sinks))]
    for o in outs:
        if os.path.exists(o):
            os.remove(o)
    stats = os.path.join(tmp, "stats.json")
    cmd = [tool["netvm-emu"], image, "-r", trace, "--stats-json", stats]
    for o in outs:
        cmd += ["-w", o]
    run(cmd)
    with open(stats) as f:
        cycles = json.load(f)["cycles"]
    measured = packets / (cycles / (CLOCK_MHZ * 1e6)) / 1e6
    equal = [payloads(o) for o in outs] == expect
    return predicted, measured, equal, f"rx {rx}; " + "; ".join(stages), \
        bottleneck


def processing_mpps(tool, app, trace, opts):
    """netvm-run's processing rate (Mpackets/s, --throughput) and the
    threads it reported."""
    r = run([tool["netvm-run"], app, "-r", trace, "--throughput"] + opts)
    m = re.search(r"processing [0-9.]+ ms \(([0-9.]+) Mpackets/s; (\d+) "
                  r"threads?", r.stderr)
    return float(m.group(1)), int(m.group(2))


def outputs_equal(tool, tmp, app, trace, sinks, opts, expect):
    """Whether netvm-run with `opts` writes what the interpreter wrote."""
    pattern = os.path.join(tmp, "host-%s.pcap")
    for s in sinks:
        if os.path.exists(pattern % s):
            os.remove(pattern % s)
    run([tool["netvm-run"], app, "-r", trace, "-w", pattern] + opts)
    return [payloads(pattern % s) for s in sinks] == expect


def host(args, tool, apps):
    """Predictions for host threads against netvm-run's measurements."""
    threads = [int(n) for n in args.threads.split(",")]
    failed = False
    rows, cuts = [], []
    with tempfile.TemporaryDirectory() as tmp:
        profile = os.path.join(tmp, "profile.pcap")
        trace = os.path.join(tmp, "trace.pcap")
        run([tool["netvm-pcapgen"], "-o", profile, "-n", "20000",
             "--seed", "7", "--malformed", "5"])
        run([tool["netvm-pcapgen"], "-o", trace, "-n", str(args.packets),
             "--malformed", "5"])
        if args.ids:
            ids = os.path.join(tmp, "ids")
            run([tool["netvm-ids"], os.path.join(ROOT, args.ids),
                 "--emit-app", ids])
            apps = apps + [os.path.join(ids, "ids.nvapp")]
        print(f"Profile: 20000 packets of netvm-pcapgen (seed 7), the "
              f"median prediction of 3 profiles; measured on "
              f"{args.packets} others: netvm-run --throughput (processing), "
              f"median of {args.repeat} runs; {os.cpu_count()} CPUs, load "
              f"average {os.getloadavg()[0]:.1f} at the start.\n")
        print("| application | threads | plan | predicted Mpps "
              "| measured Mpps | error | within 15% | -j N Mpps "
              "| run-time cut Mpps | plan / cut | outputs = interpreter |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for app in apps:
            path = os.path.join(ROOT, app)
            name = app if not path.startswith(tmp) else "ids (" + \
                args.ids + ")"
            sinks, expect = reference(tool, tmp, path, trace)
            for n in threads:
                # The profile is a measurement too: the median of three.
                plans = sorted(
                    (float(re.search(r"predicted throughput: ([0-9.]+) Mpps",
                                     p).group(1)), p)
                    for p in (run([tool["netc"], "-emit=partition",
                                   "--target=native", "--workers", str(n),
                                   "--profile", profile, path]).stdout
                              for _ in range(3)))
                pred, plan = plans[1]
                spec = re.search(r"^run as: (.*)$", plan, re.M)
                spec = spec.group(1) if spec else "?"
                configs = {"plan": ["--pipeline", f"-j{n}"],
                           "rtc": [f"-j{n}"],
                           "cut": ["--pipeline", f"-j{n}",
                                   "--pipeline-plan=runtime"]}
                meas = {k: [] for k in configs}
                for _ in range(args.repeat):
                    for k, opts in configs.items():
                        meas[k].append(processing_mpps(tool, path, trace,
                                                       opts)[0])
                med = {k: statistics.median(v) for k, v in meas.items()}
                equal = all(outputs_equal(tool, tmp, path, trace, sinks,
                                          configs[k], expect)
                            for k in ("plan", "cut"))
                failed |= not equal
                err = (pred - med["plan"]) / med["plan"] * 100
                rows.append(abs(err) <= 15)
                cuts.append(med["plan"] >= med["cut"])
                print(f"| {name} | {n} | {spec} | {pred:.2f} "
                      f"| {med['plan']:.2f} | {err:+.1f}% "
                      f"| {'met' if abs(err) <= 15 else 'missed'} "
                      f"| {med['rtc']:.2f} | {med['cut']:.2f} "
                      f"| {med['plan'] / med['cut']:.2f} "
                      f"| {'yes' if equal else 'NO'} |", flush=True)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    print(f"within 15%: {sum(rows)} of {len(rows)} plans; the plan at "
          f"least as fast as the run-time cut (medians): {sum(cuts)} of "
          f"{len(cuts)}")
    return 1 if failed else 0


def me_traces(tool, tmp, packets, note=""):
    """The profile's trace (2000 packets, seed 7) and the measured one, in
    `tmp`; says so."""
    profile = os.path.join(tmp, "profile.pcap")
    trace = os.path.join(tmp, "trace.pcap")
    run([tool["netvm-pcapgen"], "-o", profile, "-n", "2000", "--seed", "7",
         "--malformed", "5"])
    run([tool["netvm-pcapgen"], "-o", trace, "-n", str(packets),
         "--malformed", "5"])
    print(f"Profile: 2000 packets of netvm-pcapgen (seed 7); measured on "
          f"{packets} others; netvm-emu, {CLOCK_MHZ:.0f} MHz.{note}\n")
    return profile, trace


FLOW_KEYED = ["examples/netil/flow-count.netil",
              "examples/apps/flow-count.nvapp",
              "test/Analysis/Inputs/flowkey/heavy.nvapp",
              "test/Analysis/Inputs/flowkey/light.netil"]


def flow_key(args, tool, apps):
    """Flow-keyed replicas on the MEs: each application's plan for 3..8 MEs
    (replicated by flow key where that pays) against one ME behind the
    state token (the plan for 3 MEs before, measured once: more MEs did not
    help it), predicted and measured."""
    mes = [int(n) for n in args.mes.split(",")]
    failed = False
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        profile, trace = me_traces(tool, tmp, args.packets,
                                   " Before: one ME behind the state token "
                                   "(every number of MEs gave that before "
                                   "dealing by flow key).")
        print("| application | MEs | plan (receive MEs; stages x MEs) "
              "| before Mpps | predicted Mpps | measured Mpps | error "
              "| after / before | bottleneck | outputs = interpreter |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for app in apps:
            path = os.path.join(ROOT, app)
            sinks, expect = reference(tool, tmp, path, trace)
            before = None
            for n in mes:
                pred, meas, equal, plan, neck = measure(
                    tool, tmp, app, n, profile, trace, sinks, args.packets,
                    expect)
                if before is None:
                    before = meas
                failed |= not equal
                err = (pred - meas) / meas * 100
                errors.append(abs(err))
                print(f"| {app} | {n} | {plan} | {before:.3f} | {pred:.3f} "
                      f"| {meas:.3f} | {err:+.1f}% | {meas / before:.2f}x "
                      f"| {neck} | {'yes' if equal else 'NO'} |", flush=True)
    print(f"\nwithin 15%: {sum(e <= 15 for e in errors)} of {len(errors)} "
          f"plans; largest error {max(errors):.1f}%")
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--packets", type=int, default=5000)
    p.add_argument("--mes", default="3,4,6,8")
    p.add_argument("--apps", default="")
    p.add_argument("--plot", default="")
    p.add_argument("--flow-key", action="store_true",
                   help="the flow-keyed applications on the MEs: before "
                        "(one ME behind the state token) and after "
                        "(replicas dealt by flow key), 3..8 MEs")
    p.add_argument("--host", action="store_true",
                   help="host threads instead of the ME emulator")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--ids", default="",
                   help="--host: Snort rules whose IDS to add")
    args = p.parse_args()
    tool = {t: os.path.join(args.build, "bin", t)
            for t in ("netc", "netvm-emu", "netvm-run", "netvm-pcapgen",
                      "netvm-ids")}
    if args.flow_key:
        if "--mes" not in sys.argv:
            args.mes = "3,4,5,6,7,8"
        return flow_key(args, tool,
                        args.apps.split(",") if args.apps else FLOW_KEYED)
    apps = args.apps.split(",") if args.apps else default_apps()
    if args.host:
        if "--packets" not in sys.argv:
            args.packets = 200000
        return host(args, tool, apps)
    mes = [int(n) for n in args.mes.split(",")]
    failed = False
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        profile, trace = me_traces(tool, tmp, args.packets)
        print("| application | MEs | plan (receive MEs; stages x MEs) "
              "| predicted Mpps | measured Mpps | error | bottleneck "
              "| outputs = interpreter |")
        print("|---|---|---|---|---|---|---|---|")
        for app in apps:
            path = os.path.join(ROOT, app)
            r = subprocess.run([tool["netc"], "--target=me", "-emit=none",
                                path], capture_output=True, text=True)
            if r.returncode:
                why = r.stderr.strip().splitlines()[0].split("error: ")[-1]
                print(f"| {app} | | refused: {why} | | | | | |")
                continue
            sinks, expect = reference(tool, tmp, path, trace)
            for n in mes:
                try:
                    pred, meas, equal, plan, neck = measure(
                        tool, tmp, app, n, profile, trace, sinks,
                        args.packets, expect)
                except subprocess.CalledProcessError as e:
                    why = (e.stderr or "").strip().splitlines()
                    print(f"| {app} | {n} | failed: "
                          f"{why[0] if why else e} | | | | | |")
                    failed = True
                    continue
                failed |= not equal
                err = (pred - meas) / meas * 100
                results.setdefault(app, []).append((n, pred, meas))
                print(f"| {app} | {n} | {plan} | {pred:.3f} | {meas:.3f} "
                      f"| {err:+.1f}% | {neck} | "
                      f"{'yes' if equal else 'NO'} |")
    if args.plot and results:
        plot(results, args.plot)
    return 1 if failed else 0


def plot(results, directory):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(directory, exist_ok=True)
    for app, rows in results.items():
        rows.sort()
        fig, ax = plt.subplots(figsize=(5, 3.2))
        ax.plot([r[0] for r in rows], [r[1] for r in rows], "o--",
                label="predicted")
        ax.plot([r[0] for r in rows], [r[2] for r in rows], "s-",
                label="measured (emulator)")
        ax.set_xlabel("microengines")
        ax.set_ylabel("Mpps")
        ax.set_ylim(bottom=0)
        ax.set_title(os.path.basename(app))
        ax.legend()
        fig.tight_layout()
        name = os.path.splitext(os.path.basename(app))[0]
        fig.savefig(os.path.join(directory, f"partition-{name}.png"),
                    dpi=100)
        plt.close(fig)
    print(f"\nplots: {directory}/partition-*.png")


if __name__ == "__main__":
    sys.exit(main())
