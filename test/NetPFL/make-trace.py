#!/usr/bin/env python3
"""Write a pcap of Ethernet frames with deep encapsulations for NetPFL tests,
and (with --truth) what each frame holds.

Frames: IPv4 (options, fragments), IPv6 with extension headers (hop-by-hop,
routing, destination options, fragment, AH), 802.1Q/802.1ad stacks, MPLS
stacks, IPv4-in-IPv4, IPv6-in-IPv4, IPv4-in-IPv6, GRE (with checksum, key
and sequence fields; carrying IPv4, IPv6, Ethernet or MPLS), VXLAN, ARP,
802.3/LLC, and TCP, UDP, ICMP, ICMPv6 with payloads. With --truncate P,
P percent of the frames are cut at a random length (the truth then only
describes the frame as built, before the cut).

--truth FILE writes one JSON line per frame: {"headers": [[name, {field:
value}], ...], "cut": bool}, the header chain as built, outermost first,
with the fields the tests look at (addresses as strings).

Usage: make-trace.py -n COUNT --seed S [--truncate P] -o out.pcap
       [--truth out.jsonl]
"""
import argparse
import json
import random
import struct


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


class Gen:
    def __init__(self, rng):
        self.r = rng

    def mac(self):
        return bytes([self.r.choice([0x00, 0x02, 0x01])] +
                     [self.r.randrange(256) for _ in range(5)])

    def ip4(self):
        # A few addresses recur so that filters on them match some frames.
        if self.r.random() < 0.5:
            return bytes([10, self.r.randrange(3), self.r.randrange(3),
                          self.r.randrange(1, 4)])
        return bytes([self.r.randrange(1, 224)] +
                     [self.r.randrange(256) for _ in range(3)])

    def ip6(self):
        if self.r.random() < 0.5:
            return bytes.fromhex("20010db8000000000000000000000000")[:15] + \
                bytes([self.r.randrange(1, 4)])
        return bytes([0xfe, 0x80] + [0] * 6 +
                     [self.r.randrange(256) for _ in range(8)])

    def port(self):
        return self.r.choice([80, 443, 53, 22, 8080, 4789,
                              self.r.randrange(1024, 65536)])

    def payload(self):
        words = [b"GET /index.html HTTP/1.1\r\n", b"get /x", b"hello",
                 b"\x00\x01\x02", b"POST /form", b"User-Agent: netvm"]
        data = b"".join(self.r.choice(words) for _ in
                        range(self.r.randrange(0, 3)))
        return data

    # Transport headers: (bytes, chain)
    def transport(self, proto):
        if proto == 6:
            sport, dport = self.port(), self.port()
            flags = self.r.choice([0x02, 0x12, 0x10, 0x18, 0x11, 0x04])
            opts = b""
            if self.r.random() < 0.3:
                opts = b"\x02\x04\x05\xb4\x01\x01\x04\x02"  # MSS, NOP, SACK ok
            hlen = (20 + len(opts)) // 4
            hdr = struct.pack("!HHIIHHHH", sport, dport,
                              self.r.randrange(1 << 32), 0,
                              hlen << 12 | flags, 8192, 0, 0) + opts
            data = self.payload()
            chain = [["tcp", {"sport": sport, "dport": dport,
                              "flags": flags, "hlen": hlen}]]
            if data or True:
                chain.append(["payload", {"data": data.decode("latin-1")}])
            return hdr + data, chain
        if proto == 17:
            sport, dport = self.port(), self.port()
            if dport == 4789 and self.r.random() < 0.8:
                inner, ichain = self.ethernet(depth=1)
                vni = self.r.randrange(1 << 24)
                vx = struct.pack("!B3sI", 0x08, b"\0\0\0", vni << 8)
                body = vx + inner
                chain = [["udp", {"sport": sport, "dport": dport}],
                         ["vxlan", {"vni": vni}]] + ichain
            else:
                if dport == 4789:
                    dport = 4790
                body = self.payload()
                chain = [["udp", {"sport": sport, "dport": dport}],
                         ["payload", {"data": body.decode("latin-1")}]]
            hdr = struct.pack("!HHHH", sport, dport, 8 + len(body), 0)
            return hdr + body, chain
        if proto == 1:
            t = self.r.choice([0, 8, 3, 11])
            return struct.pack("!BBHI", t, 0, 0, self.r.randrange(1 << 32)) + \
                b"ping", [["icmp", {"type": t}]]
        if proto == 58:
            t = self.r.choice([128, 129, 135, 136])
            return struct.pack("!BBH", t, 0, 0) + b"\0" * 4, \
                [["icmp6", {"type": t}]]
        return self.payload(), []

    def l4(self, depth, allow_tunnel=True):
        choices = [6, 6, 17, 17, 1]
        if allow_tunnel and depth < 2:
            choices += [4, 41, 47]
        return self.r.choice(choices)

    def ipv4(self, depth):
        proto = self.l4(depth)
        src, dst = self.ip4(), self.ip4()
        opts = b""
        if self.r.random() < 0.15:
            opts = self.r.choice([b"\x01\x01\x01\x00",          # NOP NOP NOP EOL
                                  b"\x07\x07\x04" + b"\0" * 4 + b"\x00",  # RR
                                  b"\x94\x04\x00\x00"])        # router alert
        frag_off, mf = 0, 0
        r = self.r.random()
        if r < 0.08:
            mf = 1                      # first fragment
        elif r < 0.16:
            frag_off = self.r.randrange(1, 100)  # a later fragment
        ihl = 5 + len(opts) // 4
        if frag_off:
            body, chain = self.payload() + b"fragment", []
        else:
            body, chain = self.inner(proto, depth)
        ttl = self.r.choice([1, 64, 128, 255])
        hdr = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, 20 + len(opts) +
                          len(body), self.r.randrange(65536),
                          mf << 13 | frag_off, ttl, proto, 0, src, dst) + opts
        hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
        return hdr + body, [["ip", {"src": ".".join(map(str, src)),
                                    "dst": ".".join(map(str, dst)),
                                    "proto": proto, "ttl": ttl, "hlen": ihl,
                                    "foffset": frag_off, "mf": mf}]] + chain

    def inner(self, proto, depth):
        if proto == 4:
            return self.ipv4(depth + 1)
        if proto == 41:
            return self.ipv6(depth + 1)
        if proto == 47:
            return self.gre(depth + 1)
        return self.transport(proto)

    def ipv6(self, depth):
        proto = self.l4(depth)
        if proto == 1:
            proto = 58
        src, dst = self.ip6(), self.ip6()
        # Extension headers, each (type, bytes-without-next-header).
        exts = []
        later_fragment = False
        for kind in (0, 43, 60, 44, 51):
            if self.r.random() < 0.12:
                exts.append(kind)
        if 0 in exts:            # hop-by-hop comes first
            exts.remove(0)
            exts.insert(0, 0)
        ext_bytes = []
        for kind in exts:
            if kind in (0, 60):
                n = self.r.randrange(2)
                ext_bytes.append((kind, bytes([n]) + b"\x01\x04" + b"\0" * (4 + 8 * n)))
            elif kind == 43:
                ext_bytes.append((kind, b"\x00\x00\x00" + b"\0" * 4))
            elif kind == 44:
                off = self.r.choice([0, 0, 37])
                later_fragment |= off != 0
                ext_bytes.append((kind, b"\0" + struct.pack("!HI", off << 3 | (off == 0), 7)))
            elif kind == 51:
                ext_bytes.append((kind, b"\x04\0\0" + struct.pack("!II", 1, 2) + b"\0" * 12))
        if later_fragment:
            body, chain = b"later-fragment-bytes", []
        else:
            body, chain = self.inner(proto, depth)
        # Chain the next-header fields.
        types = [k for k, _ in ext_bytes] + [proto]
        blob = b""
        for i, (kind, rest) in enumerate(ext_bytes):
            blob += bytes([types[i + 1]]) + rest
        first = types[0]
        hdr = struct.pack("!IHBB16s16s", 6 << 28, len(blob) + len(body), first,
                          64, src, dst)
        return hdr + blob + body, [["ipv6", {
            "src": ":".join(f"{src[i]:02x}{src[i + 1]:02x}" for i in range(0, 16, 2)),
            "dst": ":".join(f"{dst[i]:02x}{dst[i + 1]:02x}" for i in range(0, 16, 2)),
            "nexthdr": first, "exts": exts,
            "proto": proto, "later_fragment": later_fragment}]] + chain

    def gre(self, depth):
        c, k, s = (self.r.random() < 0.3 for _ in range(3))
        ptype = self.r.choice([0x0800, 0x86DD, 0x6558, 0x8847])
        if ptype == 0x0800:
            body, chain = self.ipv4(depth)
        elif ptype == 0x86DD:
            body, chain = self.ipv6(depth)
        elif ptype == 0x6558:
            body, chain = self.ethernet(depth=2)
        else:
            body, chain = self.mpls(depth)
        hdr = struct.pack("!HH", c << 15 | k << 13 | s << 12, ptype)
        if c:
            hdr += b"\0\0\0\0"
        if k:
            hdr += struct.pack("!I", 42)
        if s:
            hdr += struct.pack("!I", 7)
        return hdr + body, [["gre", {"ptype": ptype, "k": int(k)}]] + chain

    def mpls(self, depth):
        n = self.r.randrange(1, 4)
        inner_v6 = self.r.random() < 0.3
        body, chain = self.ipv6(depth + 1) if inner_v6 else self.ipv4(depth + 1)
        hdr = b""
        labels = []
        for i in range(n):
            label = self.r.choice([16, 100, 1000, self.r.randrange(1 << 20)])
            labels.append(label)
            hdr += struct.pack("!I", label << 12 | (i == n - 1) << 8 | 64)
        return hdr + body, [["mpls", {"label": l}] for l in labels] + chain

    def l3(self, depth):
        r = self.r.random()
        if r < 0.1:
            return 0x0806, *self.arp()
        if r < 0.35:
            return 0x86DD, *self.ipv6(depth)
        if r < 0.42:
            return 0x8847, *self.mpls(depth)
        return 0x0800, *self.ipv4(depth)

    def arp(self):
        op = self.r.choice([1, 2])
        spa, tpa = self.ip4(), self.ip4()
        return struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, op, self.mac(),
                           spa, b"\0" * 6, tpa), \
            [["arp", {"op": op, "spa": ".".join(map(str, spa)),
                      "tpa": ".".join(map(str, tpa))}]]

    def ethernet(self, depth=0):
        dst, src = self.mac(), self.mac()
        r = self.r.random()
        tags = []
        if r < 0.15:
            tags = [self.r.choice([0x8100, 0x88A8])] + \
                ([0x8100] if self.r.random() < 0.4 else [])
        if depth == 0 and self.r.random() < 0.04:
            # 802.3 with an LLC header.
            body = b"\x42\x42\x03" + b"\0" * 35
            return dst + src + struct.pack("!H", len(body)) + body, \
                [["ethernet", {"type": len(body)}], ["llc", {}]]
        etype, body, chain = self.l3(depth)
        vlans = []
        for i in reversed(range(len(tags))):
            vid = self.r.choice([1, 100, 200, self.r.randrange(4096)])
            body = struct.pack("!HH", vid, etype) + body
            vlans.insert(0, ["vlan", {"vlanid": vid, "type": etype}])
            etype = tags[i]
        frame = dst + src + struct.pack("!H", etype) + body
        return frame, [["ethernet", {"type": etype}]] + vlans + chain


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--truncate", type=int, default=0)
    ap.add_argument("-o", required=True)
    ap.add_argument("--truth")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    g = Gen(rng)
    truth = open(args.truth, "w") if args.truth else None
    with open(args.o, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i in range(args.n):
            frame, chain = g.ethernet()
            if len(frame) < 60:
                frame += b"\0" * (60 - len(frame))
            cut = False
            wire = len(frame)
            if rng.randrange(100) < args.truncate:
                frame = frame[:rng.randrange(1, len(frame))]
                cut = True
            out.write(struct.pack("<IIII", 1000 + i, 0, len(frame), wire))
            out.write(frame)
            if truth:
                truth.write(json.dumps({"headers": chain, "cut": cut}) + "\n")


if __name__ == "__main__":
    main()
