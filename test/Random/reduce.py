#!/usr/bin/env python3
"""Shrinks a NetIL program (and its packets) that makes engines disagree.

Removes lines of the code segments, and packets, as long as the program
still assembles (the oracle, netvm-run --interp -O0, runs it) and the
problem remains:

  --disagree ENGINE   ENGINE's --results differ from the oracle's
  --fails ENGINE --message TEXT
                      ENGINE exits with an error whose output contains TEXT

Usage: reduce.py --tools DIR PROGRAM.netil PACKETS.pcap --disagree jit-O2
                 [--watchdog N] [--locations] -o SMALL.netil [--pcap-out SMALL.pcap]
Not run by the test suite: a tool for turning a failing seed of
run-random.py into a reproducer.
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "run_random", os.path.join(HERE, "run-random.py"))
rr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rr)


class Problem:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        self.netvm_run = os.path.join(os.path.abspath(args.tools), "netvm-run")
        self.tries = 0

    def run(self, engine, program, packets):
        prog = os.path.join(self.tmp, "try.netil")
        pcap = os.path.join(self.tmp, "try.pcap")
        with open(prog, "w") as f:
            f.write(program)
        rr.write_pcap(pcap, packets)
        cmd = [self.netvm_run, prog, "-r", pcap, "--results",
               "--watchdog", self.args.watchdog, *rr.ENGINES[engine]]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            return None, "timeout"
        return p.returncode, p.stdout + p.stderr

    def holds(self, program, packets):
        self.tries += 1
        a = self.args
        rc, out = self.run(rr.ORACLE, program, packets)
        if rc != 0:
            return False
        if a.fails:
            rc2, out2 = self.run(a.fails, program, packets)
            return rc2 != 0 and a.message in out2
        rc2, out2 = self.run(a.disagree, program, packets)
        if rc2 != 0:
            return False
        return rr.parse_results(out, a.locations) != rr.parse_results(out2, a.locations)


def split_code(text):
    """Lines, and the indexes of those that may be removed: instructions,
    labels and switch cases inside code segments."""
    lines = text.splitlines()
    removable, in_code = [], False
    for i, line in enumerate(lines):
        s = line.split(";")[0].strip()
        if s.startswith("segment"):
            in_code = s.split()[1] in (".push", ".init", ".pull")
        elif s == "ends":
            in_code = False
        elif in_code and s and not s.startswith("."):
            removable.append(i)
    return lines, removable


def ddmin(items, test):
    """Delta debugging: a small sublist of ITEMS for which TEST holds."""
    n = 2
    while len(items) >= 2:
        chunk = max(1, len(items) // n)
        reduced = False
        for start in range(0, len(items), chunk):
            rest = items[:start] + items[start + chunk:]
            if test(rest):
                items, n, reduced = rest, max(n - 1, 2), True
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(items), n * 2)
    return items


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", required=True)
    ap.add_argument("program")
    ap.add_argument("pcap")
    ap.add_argument("--disagree")
    ap.add_argument("--fails")
    ap.add_argument("--message", default="")
    ap.add_argument("--watchdog", default="1000")
    ap.add_argument("--locations", action="store_true")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--pcap-out")
    args = ap.parse_args()
    if bool(args.disagree) == bool(args.fails):
        ap.error("give one of --disagree ENGINE and --fails ENGINE")
    with open(args.program) as f:
        program = f.read()
    packets = rr.read_pcap(args.pcap)
    with tempfile.TemporaryDirectory() as tmp:
        pb = Problem(args, tmp)
        if not pb.holds(program, packets):
            sys.exit("reduce: the problem does not show with these inputs")
        # Packets first (fewer runs later), then lines, then packets again.
        if args.fails and pb.holds(program, packets[:1]):
            packets = packets[:1]
        idx = ddmin(list(range(len(packets))),
                    lambda keep: pb.holds(program, [packets[i] for i in keep]))
        packets = [packets[i] for i in idx]
        for _ in range(3):
            lines, removable = split_code(program)
            before = len(removable)

            def text(keep):
                keep = set(keep)
                return "\n".join(l for i, l in enumerate(lines)
                                 if i not in removable or i in keep) + "\n"
            kept = ddmin(removable, lambda keep: pb.holds(text(keep), packets))
            program = text(kept)
            if len(kept) == before:
                break
        idx = ddmin(list(range(len(packets))),
                    lambda keep: pb.holds(program, [packets[i] for i in keep]))
        packets = [packets[i] for i in idx]
        with open(args.output, "w") as f:
            f.write(program)
        if args.pcap_out:
            rr.write_pcap(args.pcap_out, packets)
        print(f"reduce: {len(split_code(program)[1])} code lines, "
              f"{len(packets)} packet(s) after {pb.tries} runs")


if __name__ == "__main__":
    main()
