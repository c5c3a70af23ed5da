#!/usr/bin/env python3
"""Compile each NetPFL filter of a list with netc and run it through
test/Differential/differential.py (every engine against the interpreter).

Usage: run-differential.py --tools DIR --build DIR [--aarch64] FILTERS TRACE...
"""
import argparse
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--aarch64", action="store_true")
    ap.add_argument("filters")
    ap.add_argument("traces", nargs="+")
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    differential = os.path.join(here, "..", "Differential", "differential.py")
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        for n, line in enumerate(open(args.filters)):
            flt = line.strip()
            if not flt or flt.startswith("#"):
                continue
            app = os.path.join(tmp, f"filter{n}.mlir")
            p = subprocess.run([os.path.join(args.tools, "netc"), "--pfl", flt,
                                "-O0", "-o", app], capture_output=True,
                               text=True)
            if p.returncode:
                print(f"FILTER {flt}: netc failed: {p.stderr}")
                status = 1
                continue
            print(f"FILTER {flt}", flush=True)
            cmd = [sys.executable, differential, "--tools", args.tools,
                   "--build", args.build, app, *args.traces]
            if args.aarch64:
                cmd.insert(-1 - len(args.traces), "--aarch64")
            p = subprocess.run(cmd, capture_output=True, text=True)
            sys.stdout.write(p.stdout)
            if p.returncode:
                sys.stdout.write(p.stderr)
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
