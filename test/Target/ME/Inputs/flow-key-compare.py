"""Compares the runs of placement-flow-key.test with the one-ME run: the
packets at the sink (bytes, in order) and the data memory netvm-emu dumps
(its `sram 0x...:` lines)."""
import sys

exec(open(sys.argv[1]).read())
d = sys.argv[2]


def memory(name):
    return [line for line in open(f"{d}/{name}.txt") if line.startswith("sram 0x")]


one_packets, one_memory = packets(f"{d}/one.pcap"), memory("one")
used = sum(1 for line in one_memory if line.split(":")[1].split()[:4] != ["00"] * 4)
print(f"one: {len(one_packets)} packets, {used} buckets used")
for name in ["two", "four", "four1", "two-mut", "four-mut"]:
    same_out = packets(f"{d}/{name}.pcap") == one_packets
    same_mem = memory(name) == one_memory
    print(f"{name}: outputs {'equal' if same_out else 'DIFFER'}, "
          f"data memory {'equal' if same_mem else 'DIFFERS'}")
