"""A UDP echo server over the onload layer's socket API (docs/onload.md,
"Socket API"): every datagram to the port goes back to its sender through
the design's transmit path.

    PYTHONPATH=build/python python examples/onload/echo.py \\
        --design=onloader --port=7 in.pcap out.pcap

reads the frames of in.pcap onto the wire, answers each datagram for the
port, writes the frames that left to out.pcap and prints what it did,
what it cost the host and the session's emulated clock and latencies.
"""

import argparse
import struct
import sys

from netvm import onload


def serve(stack: onload.Stack, port: int) -> int:
    """Echoes every datagram the wire holds for `port`; how many."""
    sock = stack.bind(port)
    echoed = 0
    while (got := sock.recvfrom(2048)) is not None:
        data, sender = got
        sock.send(sender, data)
        echoed += 1
    return echoed


def write_pcap(path: str, frames) -> None:
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for frame in frames:
            f.write(struct.pack("<IIII", 0, 0, len(frame), len(frame)))
            f.write(frame)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--design", default="onloader",
                   help="emu-nic, softnic or onloader (default onloader)")
    p.add_argument("--port", type=int, default=7, help="UDP port (default 7)")
    p.add_argument("input", help="pcap file of received frames")
    p.add_argument("output", help="pcap file for the frames sent back")
    args = p.parse_args(argv)
    stack = onload.Stack(args.design)
    stack.feed(args.input)
    echoed = serve(stack, args.port)
    frames = stack.transmitted()
    write_pcap(args.output, frames)
    stats = stack.stats()
    print(f"{args.design}: echoed {echoed} datagrams, {len(frames)} frames "
          f"left; host cycles {stats['host']['busy_cycles']}, dropped "
          f"{sum(v for k, v in stats['drops'].items())}")
    # The whole session ran on one emulated machine: its clock, and the
    # mean way of a datagram from the wire to recv and of a reply from
    # send to the wire.
    mean = lambda total, n: total // n if n else 0
    print(f"{args.design}: clock {stats['cycles']} cycles; receive latency "
          f"{mean(stats['receive_latency_cycles'], stats['received'])}, "
          f"send latency "
          f"{mean(stats['send_latency_cycles'], stats['transmitted'])} "
          "cycles a datagram")
    return 0


if __name__ == "__main__":
    sys.exit(main())
