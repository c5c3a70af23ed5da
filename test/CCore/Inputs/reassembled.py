#!/usr/bin/env python3
"""Checks a chain run behind reliable UDP: reassembled.py IN FRAGMENTS OUT
LOG OFFSET LIMIT. IN holds the messages, FRAGMENTS what the network
delivered of their fragments (sequence number k: message k). A message
is delivered if every fragment of it came; one that is incomplete when a
later message's fragment comes is lost, the last one seen may be
incomplete at the end. Prints those counts as the log's "reliable UDP"
line should say them, and whether the output is exactly the delivered
messages with the u32 at OFFSET above LIMIT, in order."""
import re
import struct
import sys

from pcapfile import messages

inputs, fragments = messages(sys.argv[1]), messages(sys.argv[2])
outputs, log = messages(sys.argv[3]), open(sys.argv[4]).read()
offset, limit = int(sys.argv[5]), int(sys.argv[6])
got, counts = {}, {}
for f in fragments:
    seq, index, count = struct.unpack_from(">IHH", f, 4)
    got.setdefault(seq, set()).add(index)
    counts[seq] = count
last = max(got)
complete = [s for s in range(last + 1)
            if s in got and len(got[s]) == counts[s]]
lost = sum(1 for s in range(last) if s not in complete)
pending = "none" if last in complete else "1 message"
print(f"reliable UDP        {len(fragments)} fragments in, {len(complete)} "
      f"messages reassembled, {lost} lost (reported), 0 fragments rejected, "
      f"{pending} incomplete at the end")
line = re.search(r"^reliable UDP .*$", log, re.M).group(0)
print("log", "same" if line == f"reliable UDP        {len(fragments)} fragments in, {len(complete)} messages reassembled, {lost} lost (reported), 0 fragments rejected, {pending} incomplete at the end" else "DIFFERENT: " + line)
expected = [inputs[s] for s in complete
            if struct.unpack_from(">I", inputs[s], offset)[0] > limit]
print("out", len(outputs), "expected", len(expected),
      "same" if outputs == expected else "DIFFERENT")
