#!/usr/bin/env python3
"""The emulator engine against the interpreter on lists of filters.

For each filter of the given files (tcpdump expressions, or NetPFL with
--pfl; '#' starts a comment line), runs netvm-run --results with the
interpreter (-O0, the oracle) and with --engine=emu (compiled for the
microengines, -O2) over a trace, and prints one line per filter: 'agrees',
'refused' (the ME back end does not compile it yet: its message follows)
or 'DISAGREES' with the first differing lines. The last line counts them.

Usage: emu-expressions.py --tools DIR [--pfl] LIST... TRACE
"""
import argparse
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", required=True)
    ap.add_argument("--pfl", action="store_true")
    ap.add_argument("lists", nargs="+")
    args = ap.parse_args()
    *lists, trace = args.lists
    run = f"{args.tools}/netvm-run"
    counts = {"agrees": 0, "refused": 0, "DISAGREES": 0}
    for path in lists:
        for line in open(path):
            expr = line.strip()
            if not expr or expr.startswith("#"):
                continue
            flag = ["--pfl", expr] if args.pfl else ["--", expr]
            ref = subprocess.run([run, "--engine=interp", "-r", trace,
                                  "--results", *flag],
                                 capture_output=True, text=True)
            if ref.returncode != 0:
                continue  # an expression the front end rejects
            emu = subprocess.run([run, "--engine=emu", "-r", trace,
                                  "--results", *flag],
                                 capture_output=True, text=True)
            if emu.returncode == 3:
                counts["refused"] += 1
                why = emu.stderr.strip().splitlines()
                print(f"refused: {expr}: {why[0] if why else ''}")
                continue
            if emu.returncode != 0 or emu.stdout != ref.stdout:
                counts["DISAGREES"] += 1
                print(f"DISAGREES: {expr}")
                a, b = ref.stdout.splitlines(), emu.stdout.splitlines()
                for x, y in zip(a, b):
                    if x != y:
                        print(f"  interp: {x}\n  emu:    {y}")
                        break
                print("  " + emu.stderr.strip()[:300])
                continue
            counts["agrees"] += 1
            print(f"agrees: {expr}")
    print(", ".join(f"{v} {k}" for k, v in counts.items()))
    return 1 if counts["DISAGREES"] else 0


if __name__ == "__main__":
    sys.exit(main())
