#!/usr/bin/env python3
"""Rewrite a little-endian pcap file as the big-endian host that captured
the same packets would have written it: the file and record headers in
big-endian order, and for DLT_NULL (whose 4-byte address family is in the
capturing host's order) the family swapped too.

Usage: swap-pcap.py in.pcap out.pcap
"""
import struct
import sys


def main():
    data = open(sys.argv[1], "rb").read()
    magic, major, minor, zone, sigfigs, snap, link = struct.unpack(
        "<IHHiIII", data[:24])
    if magic != 0xA1B2C3D4:
        sys.exit("swap-pcap.py: not a little-endian microsecond pcap file")
    out = [struct.pack(">IHHiIII", magic, major, minor, zone, sigfigs, snap,
                       link)]
    at = 24
    while at < len(data):
        sec, usec, caplen, wire = struct.unpack("<IIII", data[at:at + 16])
        packet = data[at + 16:at + 16 + caplen]
        if link == 0 and len(packet) >= 4:
            packet = packet[3::-1] + packet[4:]
        out.append(struct.pack(">IIII", sec, usec, caplen, wire) + packet)
        at += 16 + caplen
    open(sys.argv[2], "wb").write(b"".join(out))


if __name__ == "__main__":
    main()
