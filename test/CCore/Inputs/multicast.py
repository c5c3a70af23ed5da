#!/usr/bin/env python3
"""The expected output of the five-subscriber multicast of multicast.test,
computed from its input: multicast.py IN OUT. Prints the counts per
subscriber and whether OUT is exactly the expected messages, in order
(for each input message, its subscribers' copies in subscriber order)."""
import struct
import sys

from pcapfile import messages


def header(stream, fmt, size):
    return struct.pack(">IHH", stream, fmt, size)


expected, counts = [], [0] * 5
for m in messages(sys.argv[1]):
    if len(m) < 600 or struct.unpack_from(">H", m, 4)[0] != 1:
        continue  # every handler drops a malformed message
    flightno, gate = struct.unpack_from(">IH", m, 8)
    price = struct.unpack_from(">I", m, 40)[0]
    copies = [
        header(101, 1, 600) + m[8:],                       # relay
        header(102, 1, 600) + m[8:] if price > 500 else None,
        header(103, 0x8001, 16) + struct.pack(">II", flightno, price),
        header(104, 0x8001, 10) + struct.pack(">H", gate)
        if gate == 12 else None,
        header(105, 1, 600) + m[8:] if price < 300 else None,
    ]
    for i, c in enumerate(copies):
        if c is not None:
            expected.append(c)
            counts[i] += 1
out = messages(sys.argv[2])
print("subscribers", " ".join(map(str, counts)))
print("out", len(out), "expected", len(expected),
      "same" if out == expected else "DIFFERENT")
