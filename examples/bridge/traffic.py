#!/usr/bin/env python3
"""Multi-port Ethernet traffic for the learning bridge (bridge.netil).

Hosts sit behind the bridge's ports and talk to each other: mostly unicast
between known hosts, with broadcasts, multicasts, frames to addresses that
never send (flooded for ever), frames to the reserved bridge group address
(BPDUs), runts, frames with a group source address, and hosts that move to
another port now and then. Packet k has the time stamp k seconds.

  traffic.py -n 2000 --seed 1 --pcap 'in-%s.pcap'   one pcap per port
                                                    (in0 .. in3)
  traffic.py -n 2000 --seed 1 --hex trace.hex       '@PORT hex bytes' lines
                                                    (netvm-run --hex)

The same module is imported by the tests and the benchmark: generate()
returns the frames as (port, bytes) pairs.
"""
import argparse
import random
import struct

BROADCAST = b"\xff" * 6
BPDU_DST = bytes.fromhex("0180c2000000")


def mac(n: int) -> bytes:
    """A locally administered unicast address."""
    return bytes([0x02, 0x00]) + struct.pack(">I", n)


def colliding_mac(n: int, collide: int) -> bytes:
    """Host n's address when hosts come in groups of `collide` whose lookup
    keys (bytes 0-1 and 2-5 of the address, two words) have one hash
    (AppLayout.h's meLookupHash before the mask: the MEs' CAM tag)."""
    def rot5(x):
        return ((x << 5) | (x >> 27)) & 0xFFFFFFFF
    group, member = divmod(n - 1, collide)
    high = 0x0200 + 2 * member
    low = (group + 1) ^ rot5(0x0200) ^ rot5(high)
    return struct.pack(">HI", high, low)


def generate(count: int, seed: int = 1, ports: int = 4, hosts: int = 24,
             move_every: int = 150, collide: int = 0):
    """`count` frames as a list of (input port, frame bytes)."""
    rng = random.Random(seed)
    address = (lambda n: colliding_mac(n, collide)) if collide else mac
    where = {h: rng.randrange(ports) for h in range(1, hosts + 1)}
    frames = []
    for k in range(count):
        if move_every and k and k % move_every == 0:
            h = rng.randrange(1, hosts + 1)
            where[h] = (where[h] + 1 + rng.randrange(ports - 1)) % ports
        src = rng.randrange(1, hosts + 1)
        port = where[src]
        kind = rng.random()
        if kind < 0.01:
            frames.append((port, bytes(rng.randrange(14))))  # runt
            continue
        if kind < 0.10:
            dst = BROADCAST
        elif kind < 0.15:
            dst = bytes([0x01, 0x00, 0x5E, 0x00, 0x00, rng.randrange(256)])
        elif kind < 0.25:
            dst = mac(0x10000 + rng.randrange(8))  # never a source
        elif kind < 0.27:
            dst = BPDU_DST[:5] + bytes([rng.randrange(3)])
        else:
            dst = address(rng.randrange(1, hosts + 1))
        source = address(src)
        if rng.random() < 0.01:
            source = bytes([0x03]) + source[1:]  # a group source address
        payload = bytes(rng.randrange(256)
                        for _ in range(46 + rng.randrange(40)))
        frames.append((port, dst + source + b"\x08\x00" + payload))
    return frames


def write_pcap(path: str, packets):
    """`packets`: (seconds, bytes) pairs, in time order."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for seconds, data in packets:
            f.write(struct.pack("<IIII", seconds, 0, len(data), len(data)))
            f.write(data)


def write_per_port(pattern: str, frames, ports: int = 4):
    """One pcap per port, `pattern` with '%s' replaced by in0, in1, ..."""
    for p in range(ports):
        write_pcap(pattern.replace("%s", f"in{p}"),
                   [(k, data) for k, (port, data) in enumerate(frames)
                    if port == p])


def write_hex(path: str, frames):
    with open(path, "w") as f:
        for port, data in frames:
            f.write(f"@{port} {data.hex(' ') if data else ''}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=2000, help="frames (default 2000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hosts", type=int, default=24)
    ap.add_argument("--move-every", type=int, default=150,
                    help="a host moves every N frames (0: never)")
    ap.add_argument("--collide", type=int, default=0,
                    help="hosts in groups of N whose FIB keys hash alike")
    ap.add_argument("--pcap", help="per-port pcaps: a name with '%%s'")
    ap.add_argument("--hex", help="one hex file with '@PORT' prefixes")
    args = ap.parse_args()
    if not args.pcap and not args.hex:
        ap.error("give --pcap PATTERN and/or --hex FILE")
    if args.pcap and "%s" not in args.pcap:
        ap.error("--pcap needs '%s' in the name (one file per port)")
    frames = generate(args.n, args.seed, hosts=args.hosts,
                      move_every=args.move_every, collide=args.collide)
    if args.pcap:
        write_per_port(args.pcap, frames)
    if args.hex:
        write_hex(args.hex, frames)


if __name__ == "__main__":
    main()
