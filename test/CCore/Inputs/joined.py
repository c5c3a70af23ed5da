#!/usr/bin/env python3
"""The expected output of join.test's join, computed from its input:
joined.py IN OUT WINDOW. join flight, baggage on flight.flightno ==
baggage.flightno within WINDOW project flight.flightno, flight.gate,
baggage.tag, baggage.weight: each arriving message is kept in its side's
window (its last WINDOW messages) and paired with every message of the
other side's window with the same flight number, oldest first. Prints the
counts and whether OUT is exactly that, in order."""
import struct
import sys

from pcapfile import messages


window = int(sys.argv[3])
flights, bags, expected = [], [], []
for m in messages(sys.argv[1]):
    if len(m) < 8:
        continue
    stream, fmt = struct.unpack_from(">IH", m, 0)
    if fmt == 1 and len(m) >= 600:
        mine = struct.unpack_from(">IH", m, 8)  # flightno, gate
        flights = (flights + [mine])[-window:]
        pairs = [(mine, b) for b in bags if b[1] == mine[0]]
    elif fmt == 2 and len(m) >= 64:
        mine = struct.unpack_from(">III", m, 8)  # tag, flightno, weight
        bags = (bags + [mine])[-window:]
        pairs = [(f, mine) for f in flights if f[0] == mine[1]]
    else:
        continue
    for f, b in pairs:
        expected.append(struct.pack(">IHHIHII", stream, 0x4001, 22, f[0],
                                    f[1], b[0], b[2]))
out = messages(sys.argv[2])
print("pairs", len(expected), "out", len(out),
      "same" if out == expected else "DIFFERENT")
