#!/usr/bin/env python3
"""python-bench.py - the Python package's costs, in one run.

For each filter, on the same netvm-pcapgen trace:

  - netvm-run -j 1 --throughput: the reference packets/s (packets in
    memory, the runner's batch entry, no events);
  - Instance.run_batch over a list of bytes and over a buffer + offsets,
    and Instance.run_pcap (file reading included): packets/s;
  - Instance.run(bytes) per call, against the filter's own time per packet
    (netvm-run's): the difference is what a call from Python adds.

Prints a Markdown table. Run it with the build tree's Python:

  PYTHONPATH=build/python build/python-env/bin/python bench/python-bench.py
"""

import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]

FILTERS = [
    ("ip-tcp (NetIL)", "netil", ROOT / "examples" / "filters" / "ip-tcp.netil"),
    ("four-fields (NetIL)", "netil",
     ROOT / "examples" / "filters" / "four-fields.netil"),
    ("classify.nvapp (2 NetPEs)", "nvapp",
     ROOT / "examples" / "apps" / "classify.nvapp"),
    ("tcp port 80 (tcpdump)", "pcap-filter", "tcp port 80"),
]


def best(fn, repeat):
    """Fastest of `repeat` runs of fn(), in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def netvm_run_pps(bindir, source, lang, trace, repeat):
    args = [str(bindir / "netvm-run"), "-j", "1", "--throughput", "-r",
            str(trace)]
    if lang == "pcap-filter":
        args += ["--pcap-filter", source]
    else:
        args.insert(1, str(source))
    rates = []
    for _ in range(repeat):
        done = subprocess.run(args, capture_output=True, text=True, check=True)
        m = re.search(r"processing ([0-9.]+) ms", done.stderr)
        packets = int(re.search(r"netvm-run: ([0-9]+) packets",
                                done.stderr).group(1))
        rates.append(packets / (float(m.group(1)) / 1e3))
    return max(rates)


def per_call_ns(inst, packet, calls, repeat):
    run = inst.run

    def loop():
        for _ in range(calls):
            run(packet)

    return best(loop, repeat) / calls * 1e9


def empty_loop_ns(calls, repeat):
    def loop():
        for _ in range(calls):
            pass

    return best(loop, repeat) / calls * 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.environ.get(
        "NETVM_BUILD_DIR", ROOT / "build"), type=pathlib.Path)
    parser.add_argument("-n", "--packets", type=int, default=200000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200000)
    args = parser.parse_args()
    sys.path.insert(0, str(args.build / "python"))
    import netvm  # noqa: E402  (from the build tree)

    bindir = args.build / "bin"
    with tempfile.TemporaryDirectory() as tmp:
        trace = pathlib.Path(tmp) / "bench.pcap"
        subprocess.run([str(bindir / "netvm-pcapgen"), "-n",
                        str(args.packets), "--seed", "1", "-o", str(trace)],
                       check=True, capture_output=True)
        packets = netvm.read_pcap(trace)
        buffer, offsets = netvm.pack(packets)
        n = len(packets)
        # A 64-byte IPv4/TCP frame to port 80: every filter reads its headers.
        frame = bytes.fromhex(
            "001122334455000102030405080045000032000040004006"
            "0000" "0a010101" "0a020202" "0014" "0050") + bytes(28)

        print(f"{n} packets (netvm-pcapgen -n {n} --seed 1); best of "
              f"{args.repeat}; run(): {args.calls} calls of a 64-byte "
              "TCP frame\n")
        print("| filter | netvm-run -j 1 | run_batch (list) | run_batch "
              "(buffer) | run_pcap | batch / netvm-run | run() per call | "
              "filter per packet | run() overhead |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        loop_ns = empty_loop_ns(args.calls, args.repeat)
        for title, lang, source in FILTERS:
            if lang == "pcap-filter":
                app = netvm.compile(source, lang=lang)
            else:
                app = netvm.compile(pathlib.Path(source))
            reference = netvm_run_pps(bindir, source, lang, trace,
                                      args.repeat)
            inst = app.jit()
            listed = n / best(lambda: inst.run_batch(packets), args.repeat)
            buffered = n / best(lambda: inst.run_batch(buffer, offsets),
                                args.repeat)
            pcap = n / best(lambda: inst.run_pcap(trace), args.repeat)
            call = per_call_ns(inst, frame, args.calls, args.repeat) - loop_ns
            filter_ns = 1e9 / reference
            print(f"| {title} | {reference / 1e6:.2f} M/s | "
                  f"{listed / 1e6:.2f} M/s | {buffered / 1e6:.2f} M/s | "
                  f"{pcap / 1e6:.2f} M/s | {buffered / reference:.2f} | "
                  f"{call:.0f} ns | {filter_ns:.0f} ns | "
                  f"{call - filter_ns:.0f} ns |")
        print(f"\n(Python's empty loop, {loop_ns:.0f} ns per iteration, is "
              "subtracted from run().)")


if __name__ == "__main__":
    main()
