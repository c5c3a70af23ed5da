#!/usr/bin/env python3
"""Prints 'flightno price' of every message of a pcap file of projected
flight messages (header, then flightno and price, 32 bits each)."""
import struct
import sys

data = open(sys.argv[1], "rb").read()
at = 24  # the pcap file header
while at < len(data):
    _, _, caplen, _ = struct.unpack_from("<IIII", data, at)
    at += 16
    message = data[at:at + caplen]
    at += caplen
    flightno, price = struct.unpack_from(">II", message, 8)
    print(flightno, price)
