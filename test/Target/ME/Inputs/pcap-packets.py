# packets(path): the captured bytes of each packet of a little-endian pcap
# file (the emulator's timestamps differ from run to run of a layout).
import struct


def packets(path):
    data = open(path, "rb").read()
    out, pos = [], 24
    while pos + 16 <= len(data):
        caplen = struct.unpack("<I", data[pos + 8:pos + 12])[0]
        out.append(data[pos + 16:pos + 16 + caplen])
        pos += 16 + caplen
    return out
