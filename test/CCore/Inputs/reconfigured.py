#!/usr/bin/env python3
"""Checks a chain run with parameter changes: reconfigured.py IN OUT LOG
FIELD OFFSET OLD NEW... The log's `reconfigure` lines say after how many
messages each change landed; every message taken before a change must have
been selected with the old value (FIELD at OFFSET > value), after it with
the new one. Prints the split points, the counts and whether the output is
exactly the input selected that way, in order."""
import re
import struct
import sys

from pcapfile import messages


inputs, outputs = messages(sys.argv[1]), messages(sys.argv[2])
log = open(sys.argv[3]).read()
offset = int(sys.argv[4])
limits = [int(v) for v in sys.argv[5:]]
splits = [int(k) for k in re.findall(r"after (\d+) messages", log)]
assert len(splits) == len(limits) - 1, (splits, limits)
bounds = [0] + splits + [len(inputs)]
expected = []
for i, limit in enumerate(limits):
    for m in inputs[bounds[i]:bounds[i + 1]]:
        if struct.unpack_from(">I", m, offset)[0] > limit:
            expected.append(m)
print("splits", " ".join(map(str, splits)), "of", len(inputs))
print("out", len(outputs), "expected", len(expected),
      "same" if outputs == expected else "DIFFERENT")
