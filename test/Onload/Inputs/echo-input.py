"""Writes a pcap file of 30 UDP frames (Ethernet, IPv4, correct
checksums) for the echo example: to port 7 except every 5th (port 8,
unbound) and every 7th with a bad UDP checksum. Usage: echo-input.py OUT"""

import struct
import sys


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(int.from_bytes(data[i:i + 2], "big")
            for i in range(0, len(data), 2))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


def frame(i):
    src, dst = bytes([10, 9, 0, 1 + i % 3]), bytes([10, 0, 0, 2])
    port = 8 if i % 5 == 4 else 7
    payload = (b"ping %d " % i) * (1 + i % 11)
    ulen = 8 + len(payload)
    ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 1, 0x4000,
                               64, 17, 0, src, dst))
    ip[10:12] = (~csum(bytes(ip)) & 0xffff).to_bytes(2, "big")
    udp = bytearray(struct.pack(">HHHH", 2000 + i, port, ulen, 0)) + payload
    check = ~csum(src + dst + bytes([0, 17]) + ulen.to_bytes(2, "big") +
                  bytes(udp)) & 0xffff or 0xffff
    if i % 7 == 6:
        check ^= 0x5a5a
    udp[6:8] = check.to_bytes(2, "big")
    return bytes(range(2, 14)) + b"\x08\x00" + bytes(ip) + bytes(udp)


with open(sys.argv[1], "wb") as out:
    out.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for i in range(30):
        f = frame(i)
        out.write(struct.pack("<IIII", i, 0, len(f), len(f)) + f)
