#!/usr/bin/env python3
"""Randomized differential test of the optimizer and the native backend.

For each of N seeds, gen-netil.py makes a random NetIL push handler and this
script a set of packets (a netvm-pcapgen trace with malformed frames plus
crafted ones: zero-length, runts, header-sized, all-zero, all-ones, mutated
headers, truncated captures, 1514, 9000 and 65535 bytes), runs the program
over them with every engine and compares, packet by packet, what happened:
the outputs (sink, bytes, info memory), the exceptions (kind, NetPE,
handler; with --locations also the source location), the drops, and the
data and shared memory after the last packet (netvm-run --results):

  interp-O0   netvm-run --interp -O0   (the oracle)
  interp-O2   netvm-run --interp -O2
  jit-O0 .. jit-O3   netvm-run -O0 .. -O3 (native code)
  emu-O2      netvm-run --engine=emu -O2: compiled for the microengines, on
              the ME emulator (only with --emu, or --engines=...,emu-O2;
              with --emu=try a program the ME back end refuses is counted
              as skipped, not as a failure)

On a disagreement it prints the seed, the program and packet files (kept in
the work directory), the packet number, the packet and both results, and
exits 1. The summary line is 'N programs, M packets: all engines agree'.

Usage: run-random.py --tools DIR [-n PROGRAMS] [--first-seed S] [-j JOBS]
                     [--work DIR] [--locations] [--keep] [--avoid CONSTRUCT]
Reproduce one seed: run-random.py --tools DIR --first-seed S -n 1 --keep -v
(with the --avoid options of the run that found it); shrink it with reduce.py.
"""
import argparse
import concurrent.futures
import importlib.util
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "gen_netil", os.path.join(HERE, "gen-netil.py"))
gen_netil = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_netil)

ENGINES = {
    "interp-O0": ["--interp", "-O0"],
    "interp-O2": ["--interp", "-O2"],
    "jit-O0": ["-O0"],
    "jit-O1": ["-O1"],
    "jit-O2": ["-O2"],
    "jit-O3": ["-O3"],
    "emu-O2": ["--engine=emu", "-O2"],
}
# Engines that run only when asked for (--emu, --engines).
OPTIONAL = ("emu-O2",)
# netvm-run's exit status when the ME back end refuses the program.
REFUSED = 3
SKIPPED, SKIPPED_LOCK = [], threading.Lock()
ORACLE = "interp-O0"
STATS, STATS_LOCK = {}, threading.Lock()


# ------------------------------------------------------------------ packets
def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data)[0]
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    pos, packets = 24, []
    while pos + 16 <= len(data):
        sec, usec, caplen, wirelen = struct.unpack_from(end + "IIII", data, pos)
        pos += 16
        packets.append((sec, usec, data[pos:pos + caplen], wirelen))
        pos += caplen
    return packets


def write_pcap(path, packets):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        for sec, usec, data, wirelen in packets:
            f.write(struct.pack("<IIII", sec, usec, len(data), max(wirelen, len(data))))
            f.write(data)


def make_packets(seed, tools, work, count):
    """The packets of one seed: a trace of count packets (20% malformed)
    and crafted ones around it."""
    trace = os.path.join(work, f"seed{seed}.gen.pcap")
    run_tool([os.path.join(tools, "netvm-pcapgen"), "-o", trace, "-n",
              str(count), "--seed", str(seed), "--malformed", "20"])
    base = read_pcap(trace)
    os.unlink(trace)
    r = random.Random(seed * 7919 + 1)
    real = [p[2] for p in base if len(p[2]) >= 34] or [bytes(60)]

    def rnd(n):
        return bytes(r.getrandbits(8) for _ in range(n))

    def ext(prefix, n):
        return (prefix + rnd(max(0, n - len(prefix))))[:n]

    crafted = [b"", rnd(1), rnd(2), ext(r.choice(real), 13),
               ext(r.choice(real), 14), ext(r.choice(real), 15),
               ext(r.choice(real), r.choice([20, 33, 34, 35])),
               ext(r.choice(real), r.choice([37, 38, 53, 54, 55])),
               bytes(64), b"\xff" * 64, rnd(60),
               ext(r.choice(real), 1514), ext(r.choice(real), 9000),
               ext(r.choice(real), 65535)]
    for _ in range(6):                       # mutated headers
        p = bytearray(r.choice(real))
        for _ in range(r.randint(1, 3)):
            i = r.randrange(min(len(p), 60))
            p[i] = r.choice([0, 0xFF, 0x45, 0x4F, 0x40, 0x08, 0x06,
                             r.getrandbits(8)])
        if r.random() < 0.4:
            p[14] = 0x40 | r.randrange(16)  # any IHL
        crafted.append(bytes(p))
    packets = list(base)
    for i, data in enumerate(crafted):
        packets.insert(r.randrange(len(packets) + 1),
                       (1000 + i, r.randrange(1000000), data, len(data)))
    # a truncated capture (wire length beyond the bytes captured)
    sec, usec, data, _ = packets[r.randrange(len(packets))]
    packets.append((sec, usec, data[:r.randrange(len(data) + 1)], len(data) + 10))
    return packets


# ------------------------------------------------------------------ engines
class ToolError(Exception):
    pass


class Refused(Exception):
    pass


def run_tool(cmd, timeout=300, refusable=False):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ToolError(f"timed out after {timeout} s: {' '.join(cmd)}")
    if refusable and p.returncode == REFUSED:
        raise Refused(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "")
    if p.returncode != 0:
        # the errors, without the assembler's warnings about the program
        errors = [l for l in p.stderr.splitlines()
                  if "warning:" not in l and "note:" not in l
                  and not l.startswith(" ")]
        raise ToolError(f"exit status {p.returncode}: {' '.join(cmd)}\n  "
                        + "\n  ".join(errors[-20:]))
    return p.stdout


def parse_results(text, locations):
    """{packet number: [event lines]}, and the memories at the end."""
    events, memories = {}, []
    for line in text.splitlines():
        if line.startswith("#"):
            number, rest = line[1:].split(" ", 1)
            if rest.startswith("exception ") and not locations:
                rest = " ".join(rest.split(" ")[:4])   # kind, NetPE, handler
            events.setdefault(int(number), []).append(rest)
        elif line.startswith(("data ", "shared ")):
            memories.append(line)
    return events, memories


def clip(text, n=200):
    return text if len(text) <= n else text[:n] + f"...({len(text)} chars)"


# --------------------------------------------------------------------- main
def check_seed(seed, args, work):
    """Returns (number of packets, list of failure reports)."""
    program = os.path.join(work, f"seed{seed}.netil")
    pcap = os.path.join(work, f"seed{seed}.pcap")
    with open(program, "w") as f:
        f.write(gen_netil.generate(seed, args.size, args.avoid))
    packets = make_packets(seed, args.tools, work, args.packets)
    write_pcap(pcap, packets)
    watchdog = args.watchdog or random.Random(seed).choice(["16", "100", "1000"])
    netvm_run = os.path.join(args.tools, "netvm-run")
    common = [program, "-r", pcap, "--results", "--watchdog", watchdog]
    files = f"program {program}, packets {pcap}, --watchdog {watchdog}"
    results = {}
    for name in args.engines:
        try:
            results[name] = parse_results(
                run_tool([netvm_run, *common, *ENGINES[name]], args.timeout,
                         refusable=name in OPTIONAL and args.emu == "try"),
                args.locations)
        except Refused as why:
            with SKIPPED_LOCK:
                SKIPPED.append(f"seed {seed}: {name} skipped ({why})")
        except ToolError as e:
            return len(packets), [f"seed {seed}: {name} failed ({files}): {e}"]
    if args.stats:
        for evs in results[ORACLE][0].values():
            for e in evs:
                words = e.split(" ")
                key = words[0] + (" " + words[1] if words[0] in ("exception", "out") else "")
                with STATS_LOCK:
                    STATS[key] = STATS.get(key, 0) + 1
    if args.corrupt:
        # Self-test of the comparison: pretend one engine lost a packet.
        events = results[args.corrupt][0]
        first = min(events)
        events[first] = events[first] + ["dropped 1 (corrupted by --corrupt)"]
    failures = []
    ref_events, ref_mem = results[ORACLE]
    for name in args.engines:
        if name == ORACLE or name not in results:
            continue
        events, mem = results[name]
        for n in sorted(set(ref_events) | set(events)):
            want, got = ref_events.get(n, []), events.get(n, [])
            if want != got:
                data = packets[n - 1][2]
                failures.append(
                    f"seed {seed}: {name} disagrees with {ORACLE} on packet #{n} "
                    f"({len(data)} bytes: {clip(data.hex(), 120)})\n"
                    f"  {files}\n"
                    + "".join(f"  {ORACLE}: {clip(w)}\n" for w in want or ["(nothing)"])
                    + "".join(f"  {name}: {clip(g)}\n" for g in got or ["(nothing)"]))
                break
        else:
            if mem != ref_mem:
                failures.append(
                    f"seed {seed}: {name} disagrees with {ORACLE} on the memories "
                    f"after the last packet\n  {files}\n"
                    + "".join(f"  {ORACLE}: {clip(w, 400)}\n" for w in ref_mem)
                    + "".join(f"  {name}: {clip(g, 400)}\n" for g in mem))
    return len(packets), failures


def main():
    ap = argparse.ArgumentParser(
        description="Randomized differential test: random NetIL programs "
                    "and packets, every engine against the interpreter at -O0.")
    ap.add_argument("--tools", required=True, help="the directory of netvm-run and netvm-pcapgen")
    ap.add_argument("-n", "--programs", type=int, default=40)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--packets", type=int, default=24,
                    help="packets of the netvm-pcapgen trace per program (crafted ones come on top)")
    ap.add_argument("--size", choices=sorted(gen_netil.SIZES),
                    help="program size (default: random per seed)")
    ap.add_argument("--watchdog", help="loop budget per packet (default: 16, 100 or 1000 by seed)")
    ap.add_argument("--engines",
                    default=",".join(e for e in ENGINES if e not in OPTIONAL),
                    help="comma-separated engines to run (the oracle always "
                         f"runs; known: {', '.join(ENGINES)})")
    ap.add_argument("--emu", choices=("on", "try", "off"),
                    default=os.environ.get("NETVM_RANDOM_EMU", "off"),
                    help="also run emu-O2, the ME emulator ('try': programs "
                         "the ME back end refuses are skipped, not failures)")
    ap.add_argument("--avoid", action="append", default=[],
                    choices=gen_netil.AVOIDABLE,
                    help="generate no programs with this construct (a known bug)")
    ap.add_argument("--locations", action="store_true",
                    help="also compare the source locations of exceptions")
    ap.add_argument("--work", help="keep programs and packets here (default: a temporary directory)")
    ap.add_argument("--keep", action="store_true", help="keep the files of seeds that agree too")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--max-failures", type=int, default=5)
    ap.add_argument("--corrupt", metavar="ENGINE", help=argparse.SUPPRESS)
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--stats", action="store_true",
                    help="print what happened to the packets (by the oracle)")
    args = ap.parse_args()
    args.engines = [ORACLE] + [e for e in args.engines.split(",") if e and e != ORACLE]
    if args.emu != "off" and "emu-O2" not in args.engines:
        args.engines.append("emu-O2")
    for e in args.engines:
        if e not in ENGINES:
            ap.error(f"unknown engine '{e}' (known: {', '.join(ENGINES)})")
    if args.corrupt and args.corrupt not in args.engines:
        ap.error("--corrupt needs one of the engines")

    work = args.work or tempfile.mkdtemp(prefix="netvm-random-")
    os.makedirs(work, exist_ok=True)
    # Run private copies of the tools: a build in progress elsewhere must
    # not swap them halfway through (the binaries link netvm statically).
    snapshot = os.path.join(work, "tools")
    os.makedirs(snapshot, exist_ok=True)
    # netvm-run is a launcher that runs netvm-run-full beside it.
    for tool in ("netvm-run", "netvm-run-full", "netvm-pcapgen"):
        shutil.copy2(os.path.join(args.tools, tool), os.path.join(snapshot, tool))
    args.tools = snapshot
    lock = threading.Lock()
    failures, total, done = [], 0, 0
    seeds = range(args.first_seed, args.first_seed + args.programs)
    stop = threading.Event()

    def task(seed):
        if stop.is_set():
            return seed, 0, []
        try:
            n, fails = check_seed(seed, args, work)
        except ToolError as e:
            n, fails = 0, [f"seed {seed}: {e}"]
        except gen_netil.GenError as e:
            n, fails = 0, [f"seed {seed}: gen-netil.py failed: {e}"]
        if not fails and not args.keep:
            for ext in (".netil", ".pcap"):
                path = os.path.join(work, f"seed{seed}{ext}")
                if os.path.exists(path):
                    os.unlink(path)
        return seed, n, fails

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for seed, n, fails in pool.map(task, seeds):
            with lock:
                total += n
                done += 1 if n else 0
                if args.verbose:
                    print(f"seed {seed}: {n} packets, "
                          f"{'agree' if not fails else 'DISAGREE'}", flush=True)
                for f in fails:
                    print(f, flush=True)
                failures += fails
                if len(failures) >= args.max_failures:
                    stop.set()
    if args.stats:
        for key, count in sorted(STATS.items(), key=lambda kv: -kv[1]):
            print(f"  {count:7} {key}")
    if SKIPPED:
        if args.verbose:
            for line in SKIPPED:
                print(line)
        print(f"{len(SKIPPED)} program(s) skipped by emu-O2 (refused by the "
              "ME back end)")
    if failures:
        print(f"{done} programs, {total} packets: {len(failures)} disagreement(s); "
              f"files kept in {work}")
        return 1
    if args.keep:
        print(f"files kept in {work}")
    else:
        shutil.rmtree(work if not args.work else snapshot, ignore_errors=True)
    print(f"{done} programs, {total} packets: all engines agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
