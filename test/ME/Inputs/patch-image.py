"""Rewrites parts of a netvm ME image for the tests of bad images.

  patch-image.py IN OUT word BLOCK PC HEX   replace an instruction word
  patch-image.py IN OUT version N           set the format version
  patch-image.py IN OUT flip OFFSET         flip a byte, keep the checksum
  patch-image.py IN OUT truncate LENGTH     keep the first LENGTH bytes

word and version recompute the trailing CRC-32 (the image stays valid
apart from the change); flip and truncate do not.
"""
import struct
import sys
import zlib


def code_word_offset(data, block, pc):
    pos = 16  # magic, version, section count
    count = struct.unpack_from("<I", data, 12)[0]
    seen = 0
    for _ in range(count):
        kind, length = struct.unpack_from("<II", data, pos)
        if kind == 1:
            if seen == block:
                return pos + 8 + 12 + 8 * pc
            seen += 1
        pos += 8 + length
    sys.exit("no such code block")


def main():
    src, dst, mode = sys.argv[1:4]
    data = bytearray(open(src, "rb").read())
    fix_crc = True
    if mode == "word":
        at = code_word_offset(data, int(sys.argv[4]), int(sys.argv[5]))
        struct.pack_into("<Q", data, at, int(sys.argv[6], 16))
    elif mode == "version":
        struct.pack_into("<I", data, 8, int(sys.argv[4]))
    elif mode == "flip":
        data[int(sys.argv[4])] ^= 0xFF
        fix_crc = False
    elif mode == "truncate":
        data = data[: int(sys.argv[4])]
        fix_crc = False
    if fix_crc:
        struct.pack_into("<I", data, len(data) - 4, zlib.crc32(bytes(data[:-4])))
    open(dst, "wb").write(data)


main()
