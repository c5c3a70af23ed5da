#!/usr/bin/env python3
"""Checks the resource report of a chain run with automatic
specialization: autospecialized.py REPORT.json. Prints the swaps' kinds in
order, whether each one's downtime is at most 30 us, and the busy cycles
per message of the generic code (ME 1) over those of the specialized code
(ME 3) as "faster" when the specialized code takes at most 3/4 of them."""
import json
import sys

report = json.load(open(sys.argv[1]))
swaps = report["swaps"]
print("swaps", " ".join(s["kind"] for s in swaps))
print("downtime", "ok" if all(s["downtime_us"] <= 30 for s in swaps)
      else "TOO LONG")
mes = {m["me"]: m for m in report["mes"]}
generic, special = mes[1], mes[3]
assert generic["messages"] > 0 and special["messages"] > 0, (generic, special)
ratio = special["busy_cycles_per_message"] / generic["busy_cycles_per_message"]
print("taken", generic["messages"] + special["messages"])
print("faster" if ratio <= 0.75 else f"NOT FASTER {ratio:.2f}")
