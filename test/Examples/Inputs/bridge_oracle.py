#!/usr/bin/env python3
"""A reference learning bridge, written straight from the rules of
examples/bridge/bridge.netil's header (no lookup coprocessor, no NetVM): the
oracle of the bridge's tests.

As a program it checks netvm-run's outputs: it generates the traffic of
examples/bridge/traffic.py, runs this model over it and compares, sink by
sink and packet by packet, the pcaps netvm-run wrote with -w 'DIR/out-%s.pcap'
(and the counters in data memory, from netvm-run --results' 'data' line).

  bridge_oracle.py --check DIR -n 2000 --seed 1 [--dump FILE]
"""
import argparse
import os
import struct
import sys

FORWARDING, BLOCKING, DISABLED = 0, 1, 2
CAPACITY = 16384


class Bridge:
    def __init__(self, ports: int = 4, capacity: int = CAPACITY):
        self.ports = ports
        self.capacity = capacity
        self.state = [FORWARDING] * ports
        self.fib = {}  # MAC bytes -> (port, last seen)
        self.counters = dict(filtered=0, flooded=0, unlearned=0, blocked=0,
                             runts=0)

    def push(self, port: int, frame: bytes, now: int):
        """The (sink name, frame) pairs that leave, in order."""
        if len(frame) < 14:
            self.counters["runts"] += 1
            return []
        if self.state[port] == DISABLED:
            self.counters["blocked"] += 1
            return []
        dst, src = frame[0:6], frame[6:12]
        if dst[:5] == b"\x01\x80\xc2\x00\x00" and dst[5] < 0x10:
            return [("ctl", frame)]
        if self.state[port] != FORWARDING:
            self.counters["blocked"] += 1
            return []
        if not src[0] & 1:
            if src in self.fib or len(self.fib) < self.capacity:
                self.fib[src] = (port, now)
            else:
                self.counters["unlearned"] += 1
        if not dst[0] & 1 and dst in self.fib:
            out = self.fib[dst][0]
            if out == port:
                self.counters["filtered"] += 1
                return []
            if self.state[out] != FORWARDING:
                self.counters["blocked"] += 1
                return []
            return [(f"out{out}", frame)]
        self.counters["flooded"] += 1
        return [(f"out{p}", frame) for p in range(self.ports)
                if p != port and self.state[p] == FORWARDING]

    def age(self, now: int, max_age: int):
        old = [m for m, (_, seen) in self.fib.items()
               if (now - seen) % 2**32 > max_age]
        for m in old:
            del self.fib[m]
        return len(old)

    def data_memory(self) -> bytes:
        c = self.counters
        return bytes(self.state) + struct.pack(
            ">5I", c["filtered"], c["flooded"], c["unlearned"], c["blocked"],
            c["runts"])


def key_of(mac: bytes):
    """The lookup key the bridge stores for a MAC: two words."""
    return (int.from_bytes(mac[:2], "big"), int.from_bytes(mac[2:], "big"))


def read_pcap(path: str):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data)[0]
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    frames, at = [], 24
    while at < len(data):
        _, _, caplen, _ = struct.unpack_from(end + "IIII", data, at)
        frames.append(data[at + 16:at + 16 + caplen])
        at += 16 + caplen
    return frames


def main():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                    "..", "examples", "bridge"))
    import traffic
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", required=True, help="directory of out-*.pcap")
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dump", help="a file with netvm-run --results' "
                    "'data bridge HEX' line to check")
    args = ap.parse_args()
    bridge = Bridge()
    expected = {f"out{p}": [] for p in range(4)}
    expected["ctl"] = []
    for k, (port, frame) in enumerate(traffic.generate(args.n, args.seed)):
        for sink, out in bridge.push(port, frame, k):
            expected[sink].append(out)
    failures = 0
    for sink, frames in expected.items():
        path = os.path.join(args.check, f"out-{sink}.pcap")
        got = read_pcap(path) if os.path.exists(path) else []
        if got == frames:
            print(f"{sink}: {len(frames)} frames agree")
            continue
        failures += 1
        first = next((i for i, (a, b) in enumerate(zip(got, frames))
                      if a != b), min(len(got), len(frames)))
        print(f"{sink}: DIFFERS: {len(got)} frames, the oracle {len(frames)};"
              f" first difference at frame {first}")
    if args.dump:
        want = bridge.data_memory().hex()
        lines = [l.split() for l in open(args.dump) if l.startswith("data ")]
        text = lines[0][2] if lines and len(lines[0]) == 3 else "nothing"
        if want == text:
            print("data memory agrees: " + " ".join(
                f"{k} {v}" for k, v in bridge.counters.items()))
        else:
            failures += 1
            print(f"data memory DIFFERS: the oracle's {want} not in {text}")
    print(f"fib: {len(bridge.fib)} addresses")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
