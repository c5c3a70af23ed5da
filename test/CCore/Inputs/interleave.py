#!/usr/bin/env python3
"""interleave.py OUT A B: writes a pcap file of the records of A and B
taken in turn (then the rest of the longer one)."""
import sys

from pcapfile import records


head, a = records(sys.argv[2])
_, b = records(sys.argv[3])
with open(sys.argv[1], "wb") as f:
    f.write(head)
    for i in range(max(len(a), len(b))):
        for side in (a, b):
            if i < len(side):
                f.write(side[i])
