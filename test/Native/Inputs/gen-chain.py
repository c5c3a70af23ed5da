#!/usr/bin/env python3
"""Writes DIR/fw.netil (a NetPE that forwards every packet) and
DIR/chain.nvapp, a chain of N of them from source 'in' to sink 'out'.

Usage: gen-chain.py DIR N"""
import os
import sys

d, n = sys.argv[1], int(sys.argv[2])
with open(os.path.join(d, "fw.netil"), "w") as f:
    f.write("segment .ports\n  push_input in\n  push_output out\nends\n"
            "segment .push\n  pop\n  pkt.send out\nends\n")
with open(os.path.join(d, "chain.nvapp"), "w") as f:
    f.write("application chain\nsource in\nsink out\n")
    for i in range(n):
        f.write(f'pe p{i} = "fw.netil"\n')
    f.write("in -> p0.in\n")
    for i in range(n - 1):
        f.write(f"p{i}.out -> p{i + 1}.in\n")
    f.write(f"p{n - 1}.out -> out\n")
