#!/usr/bin/env python3
"""A handler with one switch of N cases, and a trace that probes it.

  gen-large-switch.py DIR N [--uniform]

Writes DIR/switch.mlir: a NetPE whose handler switches on the 32-bit word
at offset 26 (the IPv4 source of an Ethernet frame) over N case values
(multiples of 7 from 1000, so there are gaps between them); case value
number i goes to sink s(sink(i)) (four sinks, 40/30/20/10% of the cases)
through a block whose argument must be that sink's number + 1 (a phi in
LLVM: each such block is also entered from the default path with another
value, and then drops). Every other value is dropped. With --uniform, only
the first sink's block is entered from the default path (for odd values):
the other three get one value on every edge, so the optimizer removes
their arguments, through every case of the switch. Writes DIR/t.pcap: frames whose word is every case value once,
the values next to each one (gaps), and values below the first and above
the last. Prints the packets each sink must get, as netvm-run's summary
lines would count them.
"""
import struct
import sys

out, n = sys.argv[1], int(sys.argv[2])
uniform = "--uniform" in sys.argv[3:]
keys = [1000 + 7 * i for i in range(n)]
sinks = 4

lines = ["module {", "  netvm.application @switch {", "    netvm.source @in"]
lines += [f"    netvm.sink @s{k}" for k in range(sinks)]
lines += ["    netvm.pe @p {", "      netvm.port @in push_input"]
lines += [f"      netvm.port @o{k} push_output" for k in range(sinks)]
lines += ["      netvm.handler push(%port) {",
          "        %c26 = arith.constant 26 : i32",
          "        netvm.check_bounds packet[%c26], 4",
          "        %v = netvm.load packet[%c26] {in_bounds} : i32"]
lines += [f"        %k{k} = arith.constant {k + 1} : i32" for k in range(sinks)]


def sink(i):
    return 0 if i % 10 < 4 else 1 if i % 10 < 7 else 2 if i % 10 < 9 else 3


cases = ",\n".join(f"          {key}: ^s{sink(i)}(%k{sink(i)} : i32)"
                   for i, key in enumerate(keys))
lines += ["        %bad = arith.constant 99 : i32",
          "        cf.switch %v : i32, [", "          default: ^other,", cases,
          "        ]",
          "      ^other:",
          "        %c3 = arith.constant 3 : i32",
          "        %low = arith.andi %v, %c3 : i32",
          "        cf.switch %low : i32, [", "          default: ^drop,"]
if uniform:
    lines += ["          1: ^s0(%bad : i32),", "          3: ^s0(%bad : i32)"]
else:
    lines += ["          0: ^s0(%bad : i32),", "          1: ^s1(%bad : i32),",
              "          2: ^s2(%bad : i32),", "          3: ^s3(%bad : i32)"]
lines += ["        ]",
          "      ^drop:", "        netvm.drop"]
for k in range(sinks):
    lines += [f"      ^s{k}(%a{k}: i32):",
              f"        %ok{k} = arith.cmpi eq, %a{k}, %k{k} : i32",
              f"        cf.cond_br %ok{k}, ^send{k}, ^drop",
              f"      ^send{k}:",
              f"        netvm.send @o{k}"]
lines += ["      }", "    }", "    netvm.connect @in -> @p::@in"]
lines += [f"    netvm.connect @p::@o{k} -> @s{k}" for k in range(sinks)]
lines += ["  }", "}"]
with open(f"{out}/switch.mlir", "w") as f:
    f.write("\n".join(lines) + "\n")

probes = [0, 999, keys[-1] + 1, 0xFFFFFFFF, 0x80000000]
for key in keys:
    probes += [key, key + 1, key - 1]
expected = [0] * sinks
index = {key: i for i, key in enumerate(keys)}
for value in probes:
    if value in index:
        expected[sink(index[value])] += 1
with open(f"{out}/t.pcap", "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for i, value in enumerate(probes):
        frame = (b"\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\x08\x00"
                 + b"\x45" + bytes(11) + struct.pack(">I", value) + bytes(4))
        f.write(struct.pack("<IIII", i, 0, len(frame), len(frame)) + frame)
for k in range(sinks):
    print(f"sink s{k} {expected[k]} packets")
print(f"dropped {len(probes) - sum(expected)}")
