#!/usr/bin/env python3
"""Prints 'flightno price' of every message of a pcap file of projected
flight messages (header, then flightno and price, 32 bits each)."""
import struct
import sys

from pcapfile import messages

for message in messages(sys.argv[1]):
    flightno, price = struct.unpack_from(">II", message, 8)
    print(flightno, price)
