#!/usr/bin/env python3
"""Check netvm against NetBee's own NetIL programs and test vectors.

Usage: scripts/check-netbee.py NETBEE_DIR [--bin build/bin]

NETBEE_DIR is a checkout of NetBee (https://github.com/joestringer/Netbee).
Every program under src/nbnetvm/test/netvmbench and samples/nbnetvm/netilsamples
must assemble; for each netvmbench test vector test_X.txt with an expected
result_X.txt beside it, the output packet of `netvm-run` must equal the
expected bytes. NetBee's test files hold one packet each, as hexadecimal bytes
spread over any number of lines. Prints one line per check and a summary;
exits non-zero on any failure. NetBee is not part of netvm: this is a
compatibility check to run by hand, not part of the test suite.
"""
import argparse
import json
import pathlib
import subprocess
import sys


def hex_bytes(path):
    return bytes(int(t, 16) for t in path.read_text().split())


def programs_for(test):
    """The programs a test vector belongs to: the only program of its
    directory; or the one whose name starts with the vector's variant
    (test_big0 -> big_switch.asm, test_very_big1 -> very_big_switch.asm);
    or the one named after the directory; or else all of them."""
    progs = sorted(list(test.parent.glob("*.asm")) + list(test.parent.glob("*.netil")))
    if len(progs) <= 1:
        return progs
    variant = test.stem[len("test_"):].rstrip("0123456789")
    by_variant = [p for p in progs if variant and (p.stem == variant or p.stem.startswith(variant + "_"))]
    if by_variant:
        return sorted(by_variant, key=lambda p: -len(p.stem))[:1]
    named = [p for p in progs if p.stem == test.parent.name]
    return named or progs


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("netbee")
    ap.add_argument("--bin", default=str(pathlib.Path(__file__).resolve().parent.parent / "build" / "bin"))
    args = ap.parse_args()
    root = pathlib.Path(args.netbee)
    netc = pathlib.Path(args.bin) / "netc"
    run = pathlib.Path(args.bin) / "netvm-run"
    bench = root / "src/nbnetvm/test/netvmbench"
    samples = root / "samples/nbnetvm/netilsamples"
    programs = sorted(bench.rglob("*.asm")) + sorted(bench.rglob("*.netil")) + \
        sorted(samples.glob("*.asm")) + sorted(samples.glob("*.netil"))
    passed = failed = 0

    def report(ok, what, detail=""):
        nonlocal passed, failed
        passed += ok
        failed += not ok
        print(("PASS " if ok else "FAIL ") + what + (": " + detail if detail else ""))

    for prog in programs:
        p = subprocess.run([str(netc), "-emit=none", str(prog)], capture_output=True, text=True)
        report(p.returncode == 0, f"assemble {prog.relative_to(root)}",
               p.stderr.strip().splitlines()[0] if p.returncode else "")

    for test in sorted(bench.rglob("test_*.txt")):
        result = test.with_name("result_" + test.name[len("test_"):])
        if not result.exists():
            continue
        for prog in programs_for(test):
            p = subprocess.run([str(run), str(prog), "--hex-packet", str(test), "-v", "--json"],
                               capture_output=True, text=True)
            name = f"run {prog.name} on {test.relative_to(root)}"
            if p.returncode != 0:
                report(False, name, p.stderr.strip())
                continue
            res = json.loads(p.stdout)["results"][0]
            want = hex_bytes(result)
            outs = [bytes.fromhex(o["bytes"]) for o in res["outputs"]]
            # An empty result file means the packet is dropped.
            if outs == ([want] if want else []):
                report(True, name)
            else:
                report(False, name, f"expected {want.hex() or 'a drop'} got "
                                    f"{[o.hex() for o in outs]} exceptions {res['exceptions']}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
