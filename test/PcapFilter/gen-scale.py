#!/usr/bin/env python3
"""Large and deep filters for the scale tests, made at test time.

  gen-scale.py trace OUT.pcap   IPv4, ARP, RARP and IPv6 frames with
                                addresses in 10.0.0.0/22, whole or cut
                                short anywhere (40%), so that which
                                field a filter loads first shows
  gen-scale.py hosts N          host 10.0.0.0 or host 10.0.0.1 or ...
  gen-scale.py pfl N            ip.src == 10.0.0.0 or ... ;; and its
                                tcpdump equivalent (netvm-pcap-diff --pfl)
  gen-scale.py parens N WORD    N nested parentheses around WORD
  gen-scale.py nots N WORD      not not ... WORD
  gen-scale.py andnot N         tcp and not port 0 and not port 1 ...
"""
import random
import struct
import sys


def addr(i):
    return f"10.0.{i // 256}.{i % 256}"


def trace(out, count=3000, seed=1):
    rng = random.Random(seed)
    eth = bytes(6) + bytes([2, 0, 0, 0, 0, 1])
    records = []
    for n in range(count):
        def ip():
            return bytes([10, 0, rng.randrange(0, 5), rng.randrange(0, 256)])
        kind = rng.choice(["ip", "ip", "ip", "arp", "rarp", "ip6"])
        if kind == "ip":
            frame = (eth + b"\x08\x00" +
                     bytes([0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6, 0, 0]) + ip() +
                     ip() + bytes(20))
        elif kind in ("arp", "rarp"):
            frame = (eth + (b"\x08\x06" if kind == "arp" else b"\x80\x35") +
                     bytes([0, 1, 8, 0, 6, 4, 0, 1]) + bytes(6) + ip() +
                     bytes(6) + ip())
        else:
            frame = eth + b"\x86\xdd" + bytes(40)
        caplen = len(frame)
        if rng.random() < 0.4:
            caplen = rng.randrange(12, len(frame))
        records.append(
            struct.pack("<IIII", n, 0, caplen, len(frame)) + frame[:caplen])
    with open(out, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        f.writelines(records)


def main():
    what, args = sys.argv[1], sys.argv[2:]
    if what == "trace":
        trace(args[0])
        return
    n = int(args[0])
    if what == "hosts":
        print(" or ".join(f"host {addr(i)}" for i in range(n)))
    elif what == "pfl":
        print(" or ".join(f"ip.src == {addr(i)}" for i in range(n)) + " ;; " +
              " or ".join(f"ip src {addr(i)}" for i in range(n)))
    elif what == "parens":
        print("(" * n + args[1] + ")" * n)
    elif what == "nots":
        print("not " * n + args[1])
    elif what == "andnot":
        print("tcp" + "".join(f" and not port {i}" for i in range(n)))
    else:
        sys.exit(f"gen-scale.py: unknown '{what}'")


main()
