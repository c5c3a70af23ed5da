#!/usr/bin/env python3
"""bench/alloc.py - dynamic allocation of MEs on bursty input.

The dynamic-allocation paper's experiment on the ME emulator: a receive /
process / transmit pipeline (bench/workloads/process.netil, a fixed cost
per packet, on up to 6 replica MEs between a receive and a transmit ME)
offered a bursty trace at a fixed line rate - phases of minimum-size
frames (many packets per second) alternating with phases of full-size
frames (few) - with the process stage's MEs fixed (sized for the peak, or
one) or moved by the controller (netvm/emu/Allocation.h). Prints the table
of netvm-alloc-bench; with --plot DIR draws the allocation over time and
the packets waiting at each change (DIR/alloc-timeline.png).

Usage: bench/alloc.py [--build build] [--plot DIR] [--line-rate G]
Results: bench/README.md ("Dynamic allocation").
"""

import argparse
import csv
import os
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bursty_pcap(path, phases=6, burst=1500, lull=150):
    """Alternating phases: `burst` 60-byte frames, then `lull` 1514-byte
    frames (UDP over IPv4, varied addresses)."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        n = 0
        for phase in range(phases):
            for size, count in ((60, burst), (1514, lull)):
                for _ in range(count):
                    n += 1
                    ip_len = size - 14
                    eth = bytes.fromhex("001122334455000a0b0c0d0e0800")
                    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, n & 0xffff,
                                     0, 64, 17, 0,
                                     bytes([10, 0, (n >> 8) & 255, n & 255]),
                                     bytes([192, 168, 1, 1]))
                    udp = struct.pack("!HHHH", 1024 + n % 1000, 53,
                                      ip_len - 20, 0)
                    payload = bytes((n + i) & 255
                                    for i in range(size - 42))
                    pkt = eth + ip + udp + payload
                    f.write(struct.pack("<IIII", n // 1000000, n % 1000000,
                                        len(pkt), len(pkt)))
                    f.write(pkt)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--line-rate", default="5.0")
    p.add_argument("--plot", default="")
    args = p.parse_args()
    tool = os.path.join(args.build, "bin", "netvm-alloc-bench")
    app = os.path.join(ROOT, "bench", "workloads", "process.netil")
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "bursty.pcap")
        bursty_pcap(trace)
        timeline = os.path.join(tmp, "timeline.csv")
        r = subprocess.run([tool, app, trace, "--mes", "6", "--line-rate",
                            args.line_rate, "--timeline", timeline],
                           capture_output=True, text=True)
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        if r.returncode:
            return r.returncode
        if args.plot:
            plot(timeline, args.plot)
    return 0


def plot(timeline, directory):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = list(csv.DictReader(open(timeline)))
    us = [float(r["us"]) for r in rows]
    replicas = [int(r["replicas"]) for r in rows]
    waiting = [float(r["waiting"]) for r in rows]
    os.makedirs(directory, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.step(us, replicas, where="post", label="process MEs allocated")
    ax.set_xlabel("emulated time (us)")
    ax.set_ylabel("MEs")
    ax2 = ax.twinx()
    ax2.plot(us, waiting, "r.", markersize=3,
             label="packets waiting (when it changed)")
    ax2.set_ylabel("packets waiting")
    lines = ax.get_legend_handles_labels()
    points = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + points[0], lines[1] + points[1], loc="center right",
              fontsize=8)
    ax.set_title("Dynamic allocation on bursty input (bench/alloc.py)")
    fig.tight_layout()
    out = os.path.join(directory, "alloc-timeline.png")
    fig.savefig(out, dpi=100)
    print(f"plot: {out}")


if __name__ == "__main__":
    sys.exit(main())
