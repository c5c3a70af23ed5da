#!/usr/bin/env python3
"""The microengine back end's benchmark (issue 13).

For each of the paper's five filters (examples/filters/*.netil) compiled by
`netc --target=me` and the hand-written program of the same filter
(examples/me/*.s) in the same pipeline layout (receive ME 0, filter ME 1,
transmit ME 2): emulated ME cycles per packet, the filter ME's static
instructions, spills and bank moves, and the compile time to an ME image:
in process (the library through the Python package, netvm.compile(...,
target="me"): NetIL parse, optimizer, instruction selection, allocation,
encoding) and the whole `netc --target=me` process, beside a netc process
that only parses and checks the filter (`netc -emit=none`: start-up with
the shared LLVM and MLIR libraries, MLIR context, parse). Before anything is timed every row checks that
the compiled program transmits the packets the interpreter outputs, byte
for byte. Emulated figures are exact; host times are medians of RUNS.

Then the layouts of several MEs (netc --me-placement): the compiled filter
replicated on K MEs against examples/me/par-pipeline.sh K, and behind R
receive MEs against multirx-pipeline.sh R K, the same MEs on each side.

Prints Markdown; bench/README.md ("Microengine back end") holds the latest
figures.

Usage: bench/me-backend.py [--packets N] [--runs N] [--build DIR]
"""
import argparse
import json
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time

FILTERS = ["ip", "ip-src", "ip-tcp", "four-hosts", "four-fields"]


def payloads(path):
    """The bytes of the packets of a pcap file (netvm-run -w and the
    emulator may record different wire lengths for truncated packets)."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    out, pos = [], 24
    while pos + 16 <= len(data):
        _, _, caplen, _ = struct.unpack(endian + "IIII", data[pos:pos + 16])
        out.append(data[pos + 16:pos + 16 + caplen])
        pos += 16 + caplen
    return out


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def me1_instructions(objdump, image):
    text = run([objdump, image]).stdout
    count, on = 0, False
    for line in text.splitlines():
        if line.startswith(".me "):
            on = line.strip() == ".me 1"
            continue
        if on and re.match(r"^    [a-z]", line):
            count += 1
    return count


IN_PROCESS = '''
import statistics, sys, time, netvm
src = open(sys.argv[1]).read()
netvm.compile(src, target="me").image  # warm: first-use initialisation
times = []
for _ in range(int(sys.argv[2])):
    start = time.perf_counter()
    netvm.compile(src, target="me").image
    times.append((time.perf_counter() - start) * 1000)
print(statistics.median(times))
'''


def in_process_ms(build, netil, runs):
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
    python = os.path.join(build, "python-env", "bin", "python")
    out = run([python, "-c", IN_PROCESS, netil, str(runs)], env=env).stdout
    return float(out.strip())


# Layouts of several MEs (issue 15): the compiled filter replicated on K
# MEs (--me-placement '*K') against examples/me/par-pipeline.sh K, and
# behind R receive MEs ('rx=R;*K') against multirx-pipeline.sh R K; the
# same number of MEs on each side (R + K + 1).
LAYOUTS = [("par", 1, k) for k in range(1, 7)] + \
    [("multirx", r, 7 - r) for r in (1, 2, 3)]


def layouts(root, tool, tmp, trace, packets):
    print("\nLayouts of several MEs: Mpps (packets in, at 600 MHz) of the "
          "compiled filter on the placement against the hand-written "
          "program with the same MEs; the compiled outputs are the "
          "interpreter's.\n")
    print("| filter | layout | MEs | compiled placement | compiled Mpps "
          "| hand-written Mpps | ratio (>= 1) |")
    print("|---|---|---|---|---|---|---|")
    failed = False
    me_dir = os.path.join(root, "examples", "me")
    for name in FILTERS:
        netil = os.path.join(root, "examples", "filters", name + ".netil")
        ref = os.path.join(tmp, f"{name}-ref.pcap")
        expected = payloads(ref)
        for kind, r, k in LAYOUTS:
            if kind == "par":
                spec = f"*{k}"
                script = [os.path.join(me_dir, "par-pipeline.sh"),
                          os.path.join(me_dir, name + ".s"), str(k)]
                label = f"par K={k}"
            else:
                spec = f"rx={r};*{k}"
                script = [os.path.join(me_dir, "multirx-pipeline.sh"),
                          os.path.join(me_dir, name + ".s"), str(r), str(k)]
                label = f"multirx R={r} K={k}"
            hand_s = os.path.join(tmp, f"{name}-{kind}-{r}-{k}.s")
            with open(hand_s, "w") as f:
                f.write(run(["sh", *script]).stdout)
            hand_img = hand_s[:-2] + ".img"
            run([tool["netvm-me-as"], hand_s, "-o", hand_img])
            image = os.path.join(tmp, f"{name}-{r}-{k}.img")
            run([tool["netc"], "--target=me", "--me-placement=" + spec,
                 netil, "-o", image])
            mpps = {}
            for side, img in (("compiled", image), ("hand", hand_img)):
                out = os.path.join(tmp, f"{name}-{side}-{r}-{k}.pcap")
                stats = run([tool["netvm-emu"], img, "-r", trace, "-w",
                             out]).stdout
                cycles = int(re.search(r"cycles: (\d+)", stats).group(1))
                mpps[side] = packets * 600 / cycles
                if side == "compiled" and payloads(out) != expected:
                    failed = True
                    mpps[side] = float("nan")
            print(f"| {name} | {label} | {r + k + 1} | `{spec}` "
                  f"| {mpps['compiled']:.2f} | {mpps['hand']:.2f} "
                  f"| {mpps['compiled'] / mpps['hand']:.3f} |")
    return failed


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--packets", type=int, default=20000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--build", default=os.environ.get(
        "NETVM_BUILD_DIR", os.path.join(root, "build")))
    args = p.parse_args()
    bin_ = os.path.join(args.build, "bin")
    tool = {t: os.path.join(bin_, t) for t in
            ["netc", "netvm-emu", "netvm-run", "netvm-pcapgen",
             "netvm-me-as", "netvm-me-objdump"]}
    tmp = tempfile.mkdtemp(prefix="me-bench-")
    trace = os.path.join(tmp, "in.pcap")
    run([tool["netvm-pcapgen"], "-o", trace, "-n", str(args.packets)])

    print(f"Trace: {args.packets} packets of netvm-pcapgen; cycles per "
          f"packet are emulated (exact); compile times are medians of "
          f"{4 * args.runs} in-process compiles and of {args.runs} runs of "
          f"the whole netc process.\n")
    startup = []
    for _ in range(args.runs):
        start = time.perf_counter()
        run([tool["netc"], "-emit=none",
             os.path.join(root, "examples", "filters", "ip.netil")])
        startup.append((time.perf_counter() - start) * 1000)
    print(f"A netc process that only parses and checks ip.netil "
          f"(`netc -emit=none`): {statistics.median(startup):.1f} ms.\n")
    print("| filter | cycles/pkt compiled | hand-written | ratio (<= 1.10) "
          "| ME 1 instructions compiled | hand-written | ratio (<= 1.15) "
          "| spills | bank moves | compile in process, ms (< 5) "
          "| netc --target=me process, ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    failed = False
    for name in FILTERS:
        netil = os.path.join(root, "examples", "filters", name + ".netil")
        hand_s = os.path.join(root, "examples", "me", name + ".s")
        image = os.path.join(tmp, name + ".img")
        hand_img = os.path.join(tmp, name + "-hand.img")
        report = run([tool["netc"], "--target=me", netil, "-o", image,
                      "--resource-report"]).stderr
        m = re.search(r"me1 \(.*\): (\d+) of \d+ instructions, (\d+) spills, "
                      r"(\d+) bank moves", report)
        spills, moves = m.group(2), m.group(3)
        run([tool["netvm-me-as"], hand_s, "-o", hand_img])
        # Equal outputs first.
        outs = {}
        for label, img in (("compiled", image), ("hand", hand_img)):
            out = os.path.join(tmp, f"{name}-{label}.pcap")
            stats = run([tool["netvm-emu"], img, "-r", trace, "-w", out]).stdout
            cycles = int(re.search(r"cycles: (\d+)", stats).group(1))
            outs[label] = (cycles, payloads(out))
        ref = os.path.join(tmp, f"{name}-ref.pcap")
        run([tool["netvm-run"], "--engine=interp", netil, "-r", trace,
             "-w", ref])
        if outs["compiled"][1] != payloads(ref):
            print(f"| {name} | outputs differ from the interpreter's | | | | "
                  f"| | | | | |")
            failed = True
            continue
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            run([tool["netc"], "--target=me", netil, "-o", image])
            times.append((time.perf_counter() - start) * 1000)
        inproc = in_process_ms(args.build, netil, 4 * args.runs)
        c, h = outs["compiled"][0], outs["hand"][0]
        ci = me1_instructions(tool["netvm-me-objdump"], image)
        hi = me1_instructions(tool["netvm-me-objdump"], hand_img)
        print(f"| {name} | {c / args.packets:.1f} | {h / args.packets:.1f} "
              f"| {c / h:.3f} | {ci} | {hi} | {ci / hi:.2f} | {spills} "
              f"| {moves} | {inproc:.2f} | {statistics.median(times):.1f} |")

    failed |= layouts(root, tool, tmp, trace, args.packets)

    # Every bundled application: does it compile, its ME 1 size, spills and
    # bank moves, and its emulated cycles per packet through netvm-run
    # --engine=emu, after checking that its results (outputs with bytes and
    # info memory, exceptions, memories) equal the interpreter's.
    apps = sorted(
        [os.path.join("examples", "netil", f)
         for f in os.listdir(os.path.join(root, "examples", "netil"))
         if f.endswith(".netil")] +
        [os.path.join("examples", "apps", f)
         for f in os.listdir(os.path.join(root, "examples", "apps"))
         if f.endswith(".nvapp")])
    small = os.path.join(tmp, "apps.pcap")
    napp = min(args.packets, 5000)
    run([tool["netvm-pcapgen"], "-o", small, "-n", str(napp),
         "--malformed", "5"])
    print(f"\nBundled applications, {napp} packets (5% malformed), "
          "netvm-run --engine=emu:\n")
    print("| application | ME 1 instructions | spills | bank moves "
          "| cycles/pkt | results equal to the interpreter's |")
    print("|---|---|---|---|---|---|")
    for rel in apps:
        path = os.path.join(root, rel)
        r = subprocess.run([tool["netc"], "--target=me", path, "-o",
                            os.path.join(tmp, "app.img"),
                            "--resource-report"], capture_output=True,
                           text=True)
        if r.returncode != 0:
            why = r.stderr.strip().splitlines()[0]
            why = why.split("error: ", 1)[-1]
            print(f"| {rel} | refused: {why} | | | | |")
            continue
        m = re.search(r"me1 \(.*\): (\d+) of \d+ instructions, (\d+) "
                      r"spills, (\d+) bank moves", r.stderr)
        stats_json = os.path.join(tmp, "stats.json")
        emu = run([tool["netvm-run"], "--engine=emu", path, "-r", small,
                   "--results", "--stats-json", stats_json]).stdout
        ref = run([tool["netvm-run"], "--engine=interp", path, "-r", small,
                   "--results"]).stdout
        with open(stats_json) as f:
            cycles = json.load(f)["cycles"]
        equal = emu == ref
        failed |= not equal
        print(f"| {rel} | {m.group(1)} | {m.group(2)} | {m.group(3)} "
              f"| {cycles / napp:.1f} | {'yes' if equal else 'NO'} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
