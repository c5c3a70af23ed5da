"""Runs a NetIL filter on the interpreter (netvm-run --interp) and its ME
pipeline on the emulator (netvm-emu) over the same packets and compares
what each sends, byte for byte and in order.

  compare-filter.py TOOLS_DIR FILTER.netil PROGRAM.s (-r TRACE | --hex FILE)

Prints "NAME agrees: S of N packets sent" or says what differs (and exits
1).
"""
import os
import subprocess
import sys
import tempfile


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def main():
    tools, netil, program, flag, packets = sys.argv[1:6]
    name = os.path.splitext(os.path.basename(program))[0]
    with tempfile.TemporaryDirectory() as tmp:
        ref, emu = os.path.join(tmp, "ref.pcap"), os.path.join(tmp, "emu.pcap")
        run(os.path.join(tools, "netvm-run"), "--interp", netil, flag, packets,
            "-w", ref)
        summary = run(os.path.join(tools, "netvm-emu"), program, flag, packets,
                      "-w", emu)
        dumps = []
        for pcap in (ref, emu):
            text = os.path.join(tmp, os.path.basename(pcap) + ".txt")
            run(os.path.join(tools, "netvm-pcapgen"), "--from", pcap, "--hex",
                "-o", text)
            dumps.append(open(text).read().splitlines())
    counts = summary.splitlines()[1]  # packets: N offered, ...
    if dumps[0] != dumps[1]:
        print("%s DISAGREES: the interpreter sends %d packets, the emulator %d"
              " (%s)" % (name, len(dumps[0]), len(dumps[1]), counts))
        sys.exit(1)
    offered = counts.split()[1]
    print("%s agrees: %d of %s packets sent" % (name, len(dumps[0]), offered))


main()
