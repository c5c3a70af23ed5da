"""packets(path): the captured bytes of each packet of a little-endian pcap
file, in order ([] for a missing file). Tests and benchmarks compare
outputs by these, as the engines' time stamps may differ from run to run
(the emulator's do between layouts)."""
import os
import struct


def packets(path):
    if not os.path.exists(path):
        return []
    data = open(path, "rb").read()
    out, pos = [], 24
    while pos + 16 <= len(data):
        caplen = struct.unpack("<I", data[pos + 8:pos + 12])[0]
        out.append(data[pos + 16:pos + 16 + caplen])
        pos += 16 + caplen
    return out
