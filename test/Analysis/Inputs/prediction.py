"""prediction.py PLAN STATS PACKETS BOUND - the plan's predicted throughput
(netc -emit=partition) against the emulator's (netvm-emu --stats-json over
PACKETS packets): prints both and the error, and fails when the error is
larger than BOUND (a fraction)."""

import json
import re
import sys

plan = open(sys.argv[1]).read()
predicted = float(re.search(r"predicted throughput: ([0-9.]+) Mpps",
                            plan).group(1))
stats = json.load(open(sys.argv[2]))
measured = int(sys.argv[3]) / (stats["cycles"] / stats["clock_mhz"])
error = (predicted - measured) / measured
print(f"predicted {predicted:.3f} Mpps, measured {measured:.3f} Mpps, "
      f"error {error * 100:+.1f}%")
sys.exit(abs(error) > float(sys.argv[4]))
