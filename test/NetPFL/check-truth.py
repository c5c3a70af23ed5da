#!/usr/bin/env python3
"""Check NetPFL verdicts against what make-trace.py built.

For every line `FILTER ;; PYTHON` of the filters file, runs
`netvm-run --pfl FILTER -r TRACE --results` and compares the packets it
accepts with those for which PYTHON is true of the frame's header chain as
built (truth file of make-trace.py). Truncated frames are skipped: what
they hold depends on where the cut fell (the engines are compared with
each other on them by differential tests).

PYTHON sees H, the chain: a list of [name, fields], outermost first, the
module re, and:
  has(name, pred=None)   some header `name` (whose fields satisfy pred)
  nth(name, n)           the fields of the n-th header `name`, or None
  count(name)            how many headers `name`
  seq(a, b, ...)         consecutive headers named a, b, ... (outer first;
                         a name may be a set {..} or '*' for any header)

Prints one line per filter ("ok FILTER: N of M match") and exits 1 on any
difference, listing the first packets that differ.
"""
import argparse
import json
import re
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netvm-run", required=True)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--truth", required=True)
    ap.add_argument("filters")
    ap.add_argument("--run-option", action="append", default=[],
                    help="one more netvm-run option (repeatable)")
    args = ap.parse_args()
    frames = [json.loads(l) for l in open(args.truth)]
    failures = 0
    for line in open(args.filters):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        flt, _, oracle = line.partition(";;")
        flt, oracle = flt.strip(), oracle.strip()
        p = subprocess.run([args.netvm_run, "--pfl", flt, "-r", args.trace,
                            "--results"] + args.run_option,
                           capture_output=True, text=True)
        if p.returncode:
            print(f"FAIL {flt}: netvm-run failed: {p.stderr.strip()}")
            failures += 1
            continue
        got = set()
        for out in p.stdout.splitlines():
            m = re.match(r"#(\d+) out ", out)
            if m:
                got.add(int(m.group(1)))
        wrong = []
        expected = 0
        checked = 0
        for i, frame in enumerate(frames):
            if frame["cut"]:
                continue
            checked += 1
            H = frame["headers"]

            def has(name, pred=None, H=H):
                return any(h[0] == name and (pred is None or pred(h[1]))
                           for h in H)

            def nth(name, n, H=H):
                hs = [h[1] for h in H if h[0] == name]
                return hs[n - 1] if len(hs) >= n else None

            def count(name, H=H):
                return sum(1 for h in H if h[0] == name)

            def seq(*names, H=H):
                def ok(h, want):
                    if want == "*":
                        return True
                    if isinstance(want, (set, frozenset)):
                        return h[0] in want
                    return h[0] == want
                for s in range(len(H) - len(names) + 1):
                    if all(ok(H[s + k], names[k]) for k in range(len(names))):
                        return True
                return False

            want = bool(eval(oracle, {"has": has, "nth": nth, "count": count,
                                      "seq": seq, "H": H, "re": re}))
            expected += want
            # netvm-run numbers packets from 1.
            if want != ((i + 1) in got):
                wrong.append((i + 1, want))
        if wrong:
            failures += 1
            print(f"FAIL {flt}: {len(wrong)} of {checked} frames differ, e.g.")
            for n, want in wrong[:5]:
                print(f"  #{n}: expected {'accept' if want else 'drop'}: "
                      f"{json.dumps(frames[n - 1]['headers'])}")
        else:
            print(f"ok {flt}: {expected} of {checked} match")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
