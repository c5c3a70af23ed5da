#!/usr/bin/env python3
"""Differential test: every execution path must agree with the interpreter.

Runs one application over packet traces with every engine and compares, per
packet, the sink and bytes (and info memory) of every output, every
exception (kind and location), the drop counts, and the data and shared
memory after the run (the `netvm-run --results` format):

  reference   netvm-run --interp -O0     (the oracle)
  interp-O2   netvm-run --interp -O2     (the optimizer, judged by the oracle)
  jit-O0/1/2/3  netvm-run at each level  (native code, in process)
  jit-j2      netvm-run -j 2 in small chunks (replicas of stateless
              applications, events put back in arrival order)
  pipeline-j2 netvm-run --pipeline -j 2 --pipeline-plan=runtime (the
              NetPEs cut into two stages on two threads; the partitioner's
              plans are tested in test/Runtime and test/Analysis)
  aarch64     netc --target=aarch64-linux-gnu -c, linked with the AArch64
              runtime, run under qemu-aarch64 (with --aarch64)
  emu-O2      netvm-run --engine=emu -O2: compiled for the microengines and
              run on the ME emulator (with --emu=on, or --emu=try, which
              reports an application the ME back end refuses as skipped
              instead of failing; default: $NETVM_DIFF_EMU, else off)
  emu-O2[P]   the same with the ME placement P (--emu-placement P, which
              may be repeated; netvm-run --me-placement)
  split-O2    netvm-run --engine=split -O2: the NetPEs the microengines
              can run on the ME emulator, the rest on the JIT (with
              --split)

Usage: differential.py --tools DIR --build DIR [--aarch64] [--emu=on|try|off]
                       [--emu-placement P]... [--split] APP TRACE...
TRACE is a pcap file or a text file of hex packets (.hex); pcaps are
converted with netvm-pcapgen so that every engine reads the same bytes.
Exits 1 and prints the first differing lines if any engine disagrees.
"""
import argparse
import difflib
import os
import subprocess
import sys
import tempfile


# netvm-run's exit status when the ME back end refuses the application.
REFUSED = 3


class Refused(Exception):
    pass


def run(cmd, stdin=None, refusable=False):
    p = subprocess.run(cmd, stdin=stdin, capture_output=True, text=True)
    if refusable and p.returncode == REFUSED:
        raise Refused(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "")
    if p.returncode != 0:
        sys.exit(f"differential: command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--aarch64", action="store_true")
    ap.add_argument("--watchdog", default="1000")
    ap.add_argument("--emu", choices=("on", "try", "off"),
                    default=os.environ.get("NETVM_DIFF_EMU", "off"),
                    help="also run the application compiled for the "
                         "microengines on the ME emulator ('try': skip it "
                         "when the ME back end refuses the application)")
    ap.add_argument("--emu-placement", action="append", default=[],
                    help="with --emu: also run the emulator with this ME "
                         "placement (netvm-run --me-placement; repeatable)")
    ap.add_argument("--split", action="store_true",
                    help="also run the application split between the ME "
                         "emulator and the JIT (netvm-run --engine=split)")
    ap.add_argument("app")
    ap.add_argument("traces", nargs="+")
    args = ap.parse_args()
    netvm_run = os.path.join(args.tools, "netvm-run")
    netc = os.path.join(args.tools, "netc")
    pcapgen = os.path.join(args.tools, "netvm-pcapgen")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        binary = None
        if args.aarch64:
            obj = os.path.join(tmp, "app.o")
            binary = os.path.join(tmp, "app")
            run([netc, args.app, "--target=aarch64-linux-gnu", "-O2", "-c",
                 "-o", obj, "--descriptor=netvm_app"])
            arm = os.path.join(args.build, "aarch64")
            run(["aarch64-linux-gnu-gcc", "-static", obj,
                 os.path.join(arm, "netvm-main.o"),
                 os.path.join(arm, "libnetvm-rt.a"), "-o", binary])
        for trace in args.traces:
            hexfile = trace
            if not trace.endswith(".hex"):
                hexfile = os.path.join(tmp, os.path.basename(trace) + ".hex")
                run([pcapgen, "--from", trace, "--hex", "-o", hexfile])
            common = [args.app, "--hex", hexfile, "--results",
                      "--watchdog", args.watchdog]
            reference = run([netvm_run, *common, "--interp", "-O0"])
            engines = {
                "interp-O2": lambda: run([netvm_run, *common, "--interp", "-O2"]),
                "jit-O0": lambda: run([netvm_run, *common, "-O0"]),
                "jit-O1": lambda: run([netvm_run, *common, "-O1"]),
                "jit-O2": lambda: run([netvm_run, *common, "-O2"]),
                "jit-O3": lambda: run([netvm_run, *common, "-O3"]),
                "jit-j2": lambda: run([netvm_run, *common, "-j", "2",
                                       "--chunk", "100", "--runner-batch", "4"]),
                "pipeline-j2": lambda: run([netvm_run, *common, "--pipeline",
                                            "--pipeline-plan=runtime",
                                            "-j", "2", "--chunk", "100"]),
            }
            if binary:
                def aarch64(h=hexfile):
                    with open(h) as f:
                        p = subprocess.run(["qemu-aarch64", binary], stdin=f,
                                           capture_output=True, text=True)
                    if p.returncode != 0:
                        sys.exit(f"differential: the AArch64 program failed: {p.stderr}")
                    return p.stdout
                engines["aarch64"] = aarch64
            if args.emu != "off":
                engines["emu-O2"] = lambda: run(
                    [netvm_run, *common, "--engine=emu", "-O2"],
                    refusable=args.emu == "try")
                for spec in args.emu_placement:
                    engines[f"emu-O2[{spec}]"] = lambda spec=spec: run(
                        [netvm_run, *common, "--engine=emu", "-O2",
                         "--me-placement=" + spec],
                        refusable=args.emu == "try")
            if args.split:
                engines["split-O2"] = lambda: run(
                    [netvm_run, *common, "--engine=split", "-O2"])
            packets = sum(1 for line in reference.splitlines() if line.startswith("#"))
            for name, engine in engines.items():
                try:
                    out = engine()
                except Refused as why:
                    print(f"{os.path.basename(trace)}: {name} skipped ({why})")
                    continue
                if out == reference:
                    print(f"{os.path.basename(trace)}: {name} agrees "
                          f"({len(reference.splitlines())} lines, {packets} events)")
                    continue
                failures += 1
                print(f"{os.path.basename(trace)}: {name} DISAGREES with the interpreter:")
                diff = difflib.unified_diff(reference.splitlines(), out.splitlines(),
                                            "interpreter", name, lineterm="", n=1)
                for i, line in enumerate(diff):
                    if i > 40:
                        print("  ...")
                        break
                    print("  " + line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
