#!/usr/bin/env python3
"""Write variants of a classic pcap file that netvm's readers must take as
libpcap does: the other byte order, nanosecond timestamps, pcapng, a record
longer than the file's snapshot length, a file cut inside a record.

Usage: pcap-variants.py IN.pcap OUT-PREFIX
Writes OUT-PREFIX.{swapped,nsec,pcapng,oversnap,cut}.pcap.
"""
import struct
import sys


def records(data):
    """The classic file's header fields and its records."""
    magic, major, minor, zone, sigfigs, snap, link = struct.unpack_from(
        "<IHHiIII", data, 0)
    assert magic == 0xA1B2C3D4, "a little-endian microsecond file"
    off, out = 24, []
    while off + 16 <= len(data):
        sec, usec, cap, wire = struct.unpack_from("<IIII", data, off)
        out.append((sec, usec, wire, data[off + 16:off + 16 + cap]))
        off += 16 + cap
    return snap, link, out


def classic(fmt, magic, snap, link, recs, frac=lambda u: u):
    parts = [struct.pack(fmt + "IHHiIII", magic, 2, 4, 0, 0, snap, link)]
    for sec, usec, wire, body in recs:
        parts.append(struct.pack(fmt + "IIII", sec, frac(usec), len(body), wire))
        parts.append(body)
    return b"".join(parts)


def pcapng(snap, link, recs):
    def block(kind, body):
        body += b"\0" * (-len(body) % 4)
        n = 12 + len(body)
        return struct.pack("<II", kind, n) + body + struct.pack("<I", n)
    out = [block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)),
           block(1, struct.pack("<HHI", link, 0, snap))]
    for sec, usec, wire, body in recs:
        ts = sec * 1000000 + usec
        out.append(block(6, struct.pack("<IIIII", 0, ts >> 32, ts & 0xFFFFFFFF,
                                        len(body), wire) + body))
    return b"".join(out)


def main():
    data = open(sys.argv[1], "rb").read()
    prefix = sys.argv[2]
    snap, link, recs = records(data)
    variants = {
        "swapped": classic(">", 0xA1B2C3D4, snap, link, recs),
        "nsec": classic("<", 0xA1B23C4D, snap, link, recs,
                        lambda u: u * 1000 + 999),
        "pcapng": pcapng(snap, link, recs),
        # The header says 100 bytes; libpcap cuts longer records to it.
        "oversnap": classic("<", 0xA1B2C3D4, 100, link, recs),
        # Cut in the middle of the last record: libpcap reports it.
        "cut": data[:-7],
    }
    for name, blob in variants.items():
        with open("%s.%s.pcap" % (prefix, name), "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    main()
