#!/usr/bin/env python3
"""Checks a resource report (netvm-ccore chain --report) against the
chain's own output: report.py REPORT.json CHAIN.log. Prints what holds."""
import json
import re
import sys

r = json.load(open(sys.argv[1]))
log = open(sys.argv[2]).read()
mes = {m["me"]: m for m in r["mes"]}
print("roles", " ".join(mes[i]["role"] for i in sorted(mes)))
loaded = [m for m in r["mes"] if m["role"] in ("receive", "handler",
                                              "transmit", "spare")]
print("code fits", all(0 < m["code_words"] <= m["control_store"]
                       for m in loaded))
print("utilization", all(0 < m["utilization"] <= 1 for m in r["mes"]
                         if m["role"] in ("receive", "handler", "transmit")))
print("busy+idle=cycles", all(m["busy_cycles"] + m["idle_cycles"] ==
                              r["cycles"] for m in r["mes"]
                              if m["role"] != "idle"))
out = int(re.search(r"messages out\s+(\d+)", log).group(1))
print("messages", r["messages_in"], r["messages_out"] == out)
queues = {q["name"]: q for q in r["queues"]}
work = queues["work"]
print("work ring", work["puts"] == work["gets"], work["max_occupancy"] > 0)
host = r["host_threads"]
m = re.search(r"host stage\s+(\d+) in", log)
print("host thread", len(host), host[0]["messages"] == int(m.group(1))
      if host and m else None)
