"""Checks from netvm-emu's JSON statistics (standard input) that a
multirx-pipeline.sh program received on all of its R receive MEs.

  check-multirx-stats.py R K < stats.json

Each of MEs 0..R-1 must have run and waited for msf[rx] (idle cycles of
reason "rx": it had receives outstanding), with at least a third of the
average receive-ME instruction count (the order the tokens keep is checked
by comparing outputs); the tokens travel by signals, so no scratch ring
beyond the 14 the pipeline uses (0, 2-13) is configured; the K filter MEs
and ME 7 must have run, and no ring overflowed. Prints one line, or what is
wrong (exit 1).
"""
import json
import sys


def main():
    r, k = int(sys.argv[1]), int(sys.argv[2])
    s = json.load(sys.stdin)
    # The statistics list the MEs that have code.
    idle = {"instructions": 0, "idle_cycles": {"rx": 0}}
    mes = {m["me"]: m for m in s["mes"]}
    mes = {i: mes.get(i, dict(idle, me=i)) for i in range(8)}
    errors = []
    rx = [mes[i] for i in range(r)]
    mean = sum(m["instructions"] for m in rx) / r
    for m in rx:
        if m["idle_cycles"]["rx"] == 0:
            errors.append("me%d never waited for msf[rx]" % m["me"])
        if m["instructions"] < mean / 3:
            errors.append("me%d ran %d instructions, the receive MEs %d on "
                          "average" % (m["me"], m["instructions"], mean))
    for i in list(range(r, r + k)) + [7]:
        if mes[i]["instructions"] == 0:
            errors.append("me%d did not run" % i)
    for i in range(r + k, 7):
        if mes[i]["instructions"] != 0:
            errors.append("me%d ran but has no code" % i)
    extra = sorted(set(g["ring"] for g in s["rings"]) - {0} - set(range(2, 14)))
    if extra:
        errors.append("rings %s are configured" % extra)
    if any(g["overflows"] for g in s["rings"]):
        errors.append("a ring overflowed")
    if errors:
        print("multirx %d/%d: %s" % (r, k, "; ".join(errors)))
        sys.exit(1)
    print("multirx %d/%d: %d receive MEs waited for msf[rx], %d of %d "
          "packets received" %
          (r, k, r, s["packets"]["received"], s["packets"]["offered"]))


main()
