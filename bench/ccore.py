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
  Table 2  5-way multicast (five subscribers, each a relay on its own
           channel) offered at rising line rates: rate in, rate out,
           messages out, drops, per-message overhead
  Host     host cycles saved per message: the Table 1 chain with its
           select on the MEs against the whole chain on one host thread
           (JIT), the fastest of 5 runs each (host time: measured,
           not emulated, on a shared machine: the fastest run is the one
           least disturbed)
  Figure 3 query throughput on the host (JIT, measured) and on the MEs
           (emulated, lossless) as the message size grows
  Swap     hot-swap downtime of the ME stage (generic to specialized)
           through a spare ME and in place, at several points of a run
  RUDP     reliable UDP: the select behind the reassembler on the ME,
           messages of 600 bytes in fragments of 600, 256 and 100 bytes
  Retx     reliable UDP with retransmission (go-back-N) at 0, 5 and 20%
           fragment loss: fragments sent and resent, NACKs, ACKs,
           timeouts, goodput and messages/s (emulated, from the sender's
           first fragment to the last ACK it received)
  Pipeline the same handlers (a select then a project; two selects then
           a project) in sequence on one handler ME and as a pipeline of
           one ME per handler (the back end's rings between them),
           lossless input: messages/s, per-stage busy cycles per message
           and busy share, and the ratio
  Auto     automatic specialization over time on the Table 3 workload
           (Python API): input throughput per 50 us window while the
           generic handler runs, after the swap to the specialized one,
           back to generic at a parameter change and specialized again

Usage: bench/ccore.py [--build build] [-n MESSAGES] [--plot DIR]
                      [--only-retransmission] [--only-pipeline]
Prints markdown tables; results in bench/README.md ("C-CORE"). With
--plot DIR (needs matplotlib) it draws DIR/ccore-tables.png (Tables 1
and 2: rate out and drops against rate in), DIR/ccore-figure3.png and
DIR/ccore-autospec.png (throughput over time, automatic specialization).
"""

import argparse
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "examples", "ccore", "flights.ccs")

SELECT1 = "from flight select price > $limit"
SELECT5 = ("from flight select price >= $p and bags <= $b and status < $s "
           "and passengers > $n and gate == $g")
PARAMS5 = ["p=100", "b=900", "s=200", "n=10", "g=12"]
RANGES = ["price=0:1000", "gate=10:14", "bags=0:1000", "passengers=0:400"]


MULTICAST = [f"--subscriber={100 + i}:from flight" for i in range(1, 6)]


def chain(tool, query, params, n, extra=(), schema=SCHEMA, ranges=RANGES):
    cmd = [tool, "chain", "--schema", schema, "-n", str(n)]
    if query:
        cmd += ["--me-query", query]
    for p in params:
        cmd += ["--param", p]
    for r in ranges:
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
        "latency": grab(r"latency\s+([\d.]+) us mean"),
        "host_ns": grab(r"host thread\s+([\d.]+) ns"),
        "host_cycles": grab(r"host thread\s+[\d.]+ ns, ([\d.]+) cycles"),
        "in_count": grab(r"messages in\s+(\d+)", int),
        "micros": grab(r"downtime\s+\d+ cycles, ([\d.]+) us"),
        "micros_run": grab(r"emulated time\s+\d+ cycles, ([\d.]+) us"),
        "fragments": grab(r"reliable UDP\s+(\d+) fragments in", int),
        "stages": [(int(me), float(c), float(u)) for me, c, u in re.findall(
            r"stage \d+ ME (\d+)\s+([\d.]+) busy cycles per message, "
            r"busy ([\d.]+)%", text)],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("-n", type=int, default=2000, help="messages per run")
    ap.add_argument("--plot", metavar="DIR",
                    help="draw ccore-tables.png and ccore-figure3.png here")
    ap.add_argument("--only-retransmission", action="store_true",
                    help="run the retransmission table only")
    ap.add_argument("--only-pipeline", action="store_true",
                    help="run the pipeline-of-ME-stages table only")
    args = ap.parse_args()
    tool = os.path.join(args.build, "bin", "netvm-ccore")
    if args.only_retransmission:
        retransmission(tool)
        return
    if args.only_pipeline:
        pipeline(tool, args.n)
        return

    print("### Table 1: select on the MEs, project on the host "
          f"({args.n} messages of 600 bytes, specialized select)\n")
    print("| offered (Gbit/s) | received (Mbit/s) | out of the MEs (Mbit/s) "
          "| receive drops | messages out | handler busy cycles/msg "
          "| overhead (us/msg) |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    table1 = []
    for rate in (0.1, 0.35, 1, 2, 5, 10, 15, 20, 40):
        r = chain(tool, SELECT1, ["limit=500"], args.n,
                  ["--specialize", "--host-query",
                   "from flight project flightno, price",
                   f"--rate-gbps={rate}"])
        table1.append((rate, r))
        print(f"| {rate} | {r['in_mbps']:.1f} | {r['out_mbps']:.1f} | "
              f"{r['drops']} | {r['out']} | {r['busy']:.1f} | "
              f"{r['latency']:.2f} |")

    print("\n### Table 2: 5-way multicast (five relay subscribers, "
          f"{args.n} messages of 600 bytes)\n")
    print("| offered (Gbit/s) | received (Mbit/s) | out (Mbit/s) "
          "| messages in | messages out | receive drops "
          "| handler busy cycles/msg | overhead (us/msg) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    table2 = []
    for rate in (0.05, 0.1, 0.15, 0.2, 0.35, 0.5, 0.6, 0.7, 1, 2):
        r = chain(tool, None, [], args.n,
                  MULTICAST + [f"--rate-gbps={rate}"])
        table2.append((rate, r))
        print(f"| {rate} | {r['in_mbps']:.1f} | {r['out_mbps']:.1f} | "
              f"{r['in_count']} | {r['out']} | {r['drops']} | "
              f"{r['busy']:.1f} | {r['latency']:.2f} |")

    print("\n### Host cycles saved per message (the Table 1 chain, "
          f"{args.n * 5} messages, fastest of 5 runs)\n")
    print("| placement | host ns/msg | host cycles/msg |")
    print("|---|---:|---:|")
    hosted = {}
    for where in ("me", "host"):
        runs = [chain(tool, SELECT1, ["limit=500"], args.n * 5,
                      ["--specialize", "--host-query",
                       "from flight project flightno, price",
                       f"--placement={where}"]) for _ in range(5)]
        ns = min(r["host_ns"] for r in runs)
        cycles = min(r["host_cycles"] for r in runs)
        hosted[where] = (ns, cycles)
        label = ("select on the MEs, project on the host" if where == "me"
                 else "both on the host")
        print(f"| {label} | {ns:.1f} | {cycles:.0f} |")
    print(f"| saved by the MEs | {hosted['host'][0] - hosted['me'][0]:.1f} "
          f"| {hosted['host'][1] - hosted['me'][1]:.0f} |")

    print("\n### Figure 3: query throughput against message size "
          "(select and project, lossless on the MEs; the host the fastest "
          "of 5)\n")
    print("| message bytes | MEs (Mbit/s) | host (Mbit/s) | MEs / host |")
    print("|---:|---:|---:|---:|")
    figure3 = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in (64, 128, 256, 512, 1024, 1500):
            schema = os.path.join(tmp, f"s{size}.ccs")
            with open(schema, "w") as f:
                f.write(f"format m id 1 size {size} {{\n  u32 key;\n"
                        "  u32 price @ 40;\n}\n")
            query = "from m select price > 500 project key, price"
            me = chain(tool, query, [], args.n, ["--specialize"], schema,
                       ["price=0:1000"])
            host = [chain(tool, query, [], args.n * 5,
                          ["--specialize", "--placement=host"], schema,
                          ["price=0:1000"])
                    for _ in range(5)]
            ns = min(r["host_ns"] for r in host)
            host_mbps = size * 8 / ns * 1e3
            figure3.append((size, me["in_mbps"], host_mbps))
            print(f"| {size} | {me['in_mbps']:.0f} | {host_mbps:.0f} | "
                  f"{me['in_mbps'] / host_mbps:.2f} |")
    if args.plot:
        plot(args.plot, table1, table2, figure3)

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

    print("\n### Reliable UDP: the select (1 parameter) behind the "
          "reassembler on the ME (200 messages of 600 bytes, lossless "
          "input)\n")
    print("| fragment payload | fragments | messages/s | Mbit/s of messages "
          "| ME 1 busy cycles/fragment |")
    print("|---|---:|---:|---:|---:|")
    plain = chain(tool, SELECT1, ["limit=500"], 200, ranges=["price=0:1000"])
    seconds = plain["micros_run"] / 1e6
    print(f"| none (no reassembler) | 200 | {200 / seconds:.0f} | "
          f"{200 * 600 * 8 / seconds / 1e6:.0f} | {plain['busy']:.1f} |")
    for payload in (600, 256, 100):
        r = chain(tool, SELECT1, ["limit=500"], 200, [f"--rudp={payload}"],
                  ranges=["price=0:1000"])
        seconds = r["micros_run"] / 1e6
        print(f"| {payload} | {r['fragments']} | {200 / seconds:.0f} | "
              f"{200 * 600 * 8 / seconds / 1e6:.1f} | {r['busy']:.0f} |")

    retransmission(tool)
    pipeline(tool, args.n)
    auto_specialization(args.build, args.plot)


TICKS = """format tick id 3 size 64 {
  u32 seq;
  u32 price;
  bytes pad[48];
}
"""


PROJECT6 = ("from flight project flightno, price, gate, bags, passengers, "
            "departure")
PIPELINES = [
    ("select, project", [SELECT5, PROJECT6]),
    ("select, select, project",
     [SELECT5, "from flight select departure != 7", PROJECT6]),
]


def pipeline(tool, n):
    """One handler ME against a pipeline of one ME per handler."""
    print(f"### Pipelines of ME stages ({n} messages of 600 bytes, "
          "lossless input)\n")
    print("| handlers | form | layout | MEs | messages/s | handler MEs: busy "
          "cycles/msg (busy share) | messages out | ratio |")
    print("|---|---|---|---:|---:|---|---:|---:|")
    for (name, queries), form in [(p, f) for p in PIPELINES
                                  for f in ("generic", "specialized")]:
        base = None
        for layout in ("one", "pipeline"):
            extra = [f"--me-layout={layout}"]
            if form == "specialized":
                extra.append("--specialize")
            for q in queries[1:]:
                extra += ["--me-query", q]
            cmd_out = chain(tool, queries[0], PARAMS5, n, extra)
            stages = cmd_out["stages"]
            if layout == "one":
                base = cmd_out["msgs"]
            mes = 2 + (len(stages) if stages else 1)
            per = ", ".join(f"ME {me}: {c:.1f} ({u:.0f}%)"
                            for me, c, u in stages) if stages else \
                f"ME 1: {cmd_out['busy']:.1f}"
            print(f"| {name} | {form} | {layout} | {mes} | {cmd_out['msgs']:.0f} | "
                  f"{per} | {cmd_out['out']} | "
                  f"{cmd_out['msgs'] / base:.2f} |")
    print()


def retransmission(tool):
    """Reliable UDP with retransmission at 0, 5 and 20% loss."""
    print("\n### Reliable UDP with retransmission (go-back-N, window 8 "
          "messages; a relay behind the reassembler on the ME)\n")
    print("| messages | fragments | offered (Gbit/s) | timeout (us) | loss "
          "| sent | resent | NACKs | ACKs | timeouts | rejected "
          "| goodput (Mbit/s) | messages/s | sent / needed |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:"
          "|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        ticks = os.path.join(tmp, "ticks.ccs")
        with open(ticks, "w") as f:
            f.write(TICKS)
        cases = [(ticks, "tick", 64, 16, 1000, 0.02, 200),
                 (SCHEMA, "flight", 600, 256, 200, 0.01, 1000)]
        for schema, fmt, size, payload, n, gbps, timeout in cases:
            for loss, extra in ((0, ""), (5, ""), (20, ""),
                                (20, "reorder 10%, control loss 10%")):
                args = [f"--rudp={payload}", "--rudp-retransmit",
                        f"--rate-gbps={gbps}", f"--rudp-loss={loss}",
                        f"--rudp-timeout={timeout}"]
                if extra:
                    args += ["--rudp-reorder=10", "--rudp-control-loss=10"]
                cmd = [tool, "chain", "--schema", schema, "-n", str(n),
                       "--me-query", f"from {fmt}"] + args
                out = subprocess.run(cmd, capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit(f"ccore bench: {' '.join(cmd)} failed:\n"
                             f"{out.stderr}")
                t = out.stdout

                def num(pattern):
                    return float(re.search(pattern, t).group(1))
                sent = num(r"(\d+) fragments sent")
                needed = n * -(-size // payload)
                label = f"{loss}%" + (f", {extra}" if extra else "")
                cells = [num(p) for p in (
                    r"\((\d+) resent", r"(\d+) NACKs, ", r"(\d+) ACKs sent",
                    r"(\d+) timeouts", r"(\d+) fragments rejected")]
                goodput = num(r"goodput .*?, ([\d.]+) Mbit/s")
                rate = num(r"Mbit/s, (\d+) messages/s")
                print(f"| {n} x {size} B | {-(-size // payload)} x "
                      f"{payload} B | {gbps} | {timeout} | {label} "
                      f"| {sent:.0f} | "
                      + " | ".join(f"{c:.0f}" for c in cells)
                      + f" | {goodput:.1f} | {rate:.0f} "
                      f"| {sent / needed:.2f} |")


AUTO_WINDOW_US = 50


def auto_specialization(build, plot_dir):
    """Throughput over time with automatic specialization: the Table 3
    select (five parameters) over 8000 messages, lossless input, stable
    period 300 us, $p changed at 1.5 ms. Input messages handled per
    window, from the input number (tag) of each output and its cycle."""
    sys.path.insert(0, os.path.join(build, "python"))
    from netvm import ccore
    schema = ccore.Schema.load(SCHEMA)
    ranges = {r.split("=")[0]: tuple(int(v) for v in r.split("=")[1]
                                     .split(":")) for r in RANGES}
    params = {p.split("=")[0]: int(p.split("=")[1]) for p in PARAMS5}
    messages = schema.generate("flight", 8000, ranges=ranges)
    chain = ccore.Chain(schema, SELECT5, params=params)
    run = chain.run(messages, auto_specialize=True, stable_us=300,
                    reconfigure=[("p", 300, 900000)])
    # What the select must give: $p = 100 for the messages taken before
    # the change, 300 after it.
    split = run.reconfigurations[0]["messages_before"]

    def passes(m, p):
        price, bags, passengers = (struct.unpack_from(">I", m, o)[0]
                                   for o in (40, 28, 24))
        return (price >= p and bags <= params["b"] and m[14] < params["s"]
                and passengers > params["n"]
                and struct.unpack_from(">H", m, 12)[0] == params["g"])
    expected = [m for i, m in enumerate(messages)
                if passes(m, params["p"] if i < split else 300)]
    mhz = run.report["clock_mhz"]
    window = AUTO_WINDOW_US * mhz
    # Inputs handled by the end of each window: the highest input number
    # an output of the window came from.
    handled = {}
    for cycle, tag in zip(run.from_mes_cycles, run.from_mes_tags):
        w = int(cycle // window)
        handled[w] = max(handled.get(w, 0), tag + 1)
    swaps = [(s["start_cycle"], "specialized" if s["to_specialized"]
              else "generic") for s in run.auto_swaps]

    def form(cycle):
        current = "generic"
        for start, kind in swaps:
            if start <= cycle:
                current = kind
        return current

    rows, last = [], 0
    for w in range(max(handled) + 1):
        done = handled.get(w, last)
        mbps = (done - last) * 600 * 8 / AUTO_WINDOW_US
        rows.append((w * AUTO_WINDOW_US, mbps, form((w + 0.5) * window)))
        last = done
    print("\n### Automatic specialization over time (select with 5 "
          "parameters, 8000 messages, lossless input, stable period 300 us, "
          f"$p 100 -> 300 at cycle 900000; {AUTO_WINDOW_US} us windows)\n")
    print("| switch | at (us) | after messages | downtime (us) "
          "| compile (ms, host) |")
    print("|---|---:|---:|---:|---:|")
    for s in run.auto_swaps:
        print(f"| {'to specialized' if s['to_specialized'] else 'to generic'}"
              f" | {s['start_cycle'] / mhz:.0f} | {s['messages_before']} | "
              f"{s['downtime_cycles'] / mhz:.2f} | {s['compile_ms']:.0f} |")
    # Full windows only (the last one is partial).
    full = rows[:-1]
    by_form = {k: [m for _, m, f in full if f == k]
               for k in ("generic", "specialized")}
    g = statistics.median(by_form["generic"])
    sp = statistics.median(by_form["specialized"])
    print("\n| form | windows | median Mbit/s in | min-max |")
    print("|---|---:|---:|---:|")
    for k, v in by_form.items():
        print(f"| {k} | {len(v)} | {statistics.median(v):.0f} | "
              f"{min(v):.0f}-{max(v):.0f} |")
    taken = sum(m["messages"] for m in run.report["mes"])
    print(f"\nspecialized / generic: {sp / g:.2f}x (medians of the "
          "windows); the output is exactly the input selected with $p = 100 "
          f"before message {split} and 300 after it: "
          f"{'yes' if run.outputs == expected else 'NO'}; messages in "
          f"{len(messages)}, taken by the handler {taken}")
    if plot_dir:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        os.makedirs(plot_dir, exist_ok=True)
        fig, ax = plt.subplots(figsize=(7, 3.2))
        ax.step([t for t, _, _ in rows], [m for _, m, _ in rows],
                where="post", label="input handled (Mbit/s)")
        for i, (start, kind) in enumerate(swaps):
            ax.axvline(start / mhz, color="green" if kind == "specialized"
                       else "red", linestyle="--", linewidth=0.8,
                       label=f"swap to {kind}" if i < 2 else None)
        ax.axvline(900000 / mhz, color="gray", linestyle=":",
                   linewidth=0.8, label="$p changed")
        ax.legend(fontsize=7, loc="lower right")
        ax.set_xlabel("emulated time (us)")
        ax.set_ylabel("Mbit/s in")
        ax.set_title("Automatic specialization, Table 3 select "
                     "(5 parameters)", fontsize=9)
        fig.tight_layout()
        fig.savefig(os.path.join(plot_dir, "ccore-autospec.png"), dpi=110)


def plot(directory, table1, table2, figure3):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(directory, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, rows, title, out in (
            (axes[0], table1, "Table 1: select (MEs) + project (host)",
             "out of the MEs"),
            (axes[1], table2, "Table 2: 5-way multicast", "out (5 copies)")):
        offered = [rate * 1000 for rate, _ in rows]
        ax.plot(offered, [r["in_mbps"] for _, r in rows], "o-",
                label="received")
        ax.plot(offered, [r["out_mbps"] for _, r in rows], "s-", label=out)
        ax.set_xscale("log")
        ax.set_xlabel("offered (Mbit/s)")
        ax.set_ylabel("Mbit/s")
        ax.set_title(title, fontsize=9)
        drops = ax.twinx()
        drops.bar(offered, [r["drops"] for _, r in rows],
                  width=[o * 0.15 for o in offered], alpha=0.3, color="red",
                  label="receive drops")
        drops.set_ylabel("receive drops")
        lines = ax.get_legend_handles_labels()
        bars = drops.get_legend_handles_labels()
        ax.legend(lines[0] + bars[0], lines[1] + bars[1], fontsize=7,
                  loc="upper left")
    fig.tight_layout()
    fig.savefig(os.path.join(directory, "ccore-tables.png"), dpi=110)
    fig, ax = plt.subplots(figsize=(6, 3.4))
    sizes = [s for s, _, _ in figure3]
    ax.plot(sizes, [m for _, m, _ in figure3], "o-", label="c-core (MEs)")
    ax.plot(sizes, [h for _, _, h in figure3], "s-", label="g-core (host)")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("query throughput (Mbit/s in)")
    ax.set_title("Figure 3: select + project, host vs c-core", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(directory, "ccore-figure3.png"), dpi=110)


if __name__ == "__main__":
    main()
