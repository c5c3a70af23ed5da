"""The records of a pcap file, for the C-CORE tests' scripts (which run
from this directory, so `from pcapfile import ...` finds it)."""
import struct


def records(path):
    """The file header and every record (its 16-byte header and data)."""
    data = open(path, "rb").read()
    at, out = 24, []
    while at < len(data):
        caplen = struct.unpack_from("<I", data, at + 8)[0]
        out.append(data[at:at + 16 + caplen])
        at += 16 + caplen
    return data[:24], out


def messages(path):
    """Every record's data: the messages."""
    return [record[16:] for record in records(path)[1]]
