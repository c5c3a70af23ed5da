#!/usr/bin/env python3
"""The oracle of a pipeline of handlers over flight messages, written
apart from the compiler: `pipelined.py IN.pcap OUT.pcap PRICE GATE`
checks that OUT holds, byte for byte and in order, the projection
(flightno, price) of every message of IN whose price > PRICE and whose
gate < GATE, as the chain `select price > PRICE | select gate < GATE |
project flightno, price` makes it. Prints the count, exits 1 on the first
difference."""
import struct
import sys

from pcapfile import messages

inputs, outputs = messages(sys.argv[1]), messages(sys.argv[2])
price_limit, gate_limit = int(sys.argv[3]), int(sys.argv[4])
expected = []
for m in inputs:
    stream, fmt, length = struct.unpack_from(">IHH", m, 0)
    flightno, gate = struct.unpack_from(">IH", m, 8)
    price = struct.unpack_from(">I", m, 40)[0]
    if fmt == 1 and len(m) >= 600 and price > price_limit and \
            gate < gate_limit:
        expected.append(struct.pack(">IHHII", stream, 0x8001, 16, flightno,
                                    price))
for i, (want, got) in enumerate(zip(expected, outputs)):
    if want != got:
        print(f"output {i}: expected {want.hex()}, got {got.hex()}")
        sys.exit(1)
if len(expected) != len(outputs):
    print(f"expected {len(expected)} outputs, got {len(outputs)}")
    sys.exit(1)
print(f"{len(outputs)} outputs as expected")
