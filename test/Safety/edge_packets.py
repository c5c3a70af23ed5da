#!/usr/bin/env python3
"""Edge-case packets for the sanitizer test (sanitizers.py).

Generates, from a seed, a trace of the packets applications get wrong:

  - zero-length packets (nothing captured, with and without a wire length);
  - real frames (Ethernet, VLAN, QinQ, MPLS, LLC, ARP, IPv4 with and without
    options, fragments, IPv6 with extension headers, TCP with options, UDP,
    ICMP, ICMPv6, IP-in-IP, GRE, VXLAN), whole and truncated to every
    length below their size (0 to 64 bytes at least), the truncated
    captures keeping the frame's length on the wire as a pcap record does;
  - random garbage, and real frames with random bytes changed;
  - maximum-length packets: 65535 bytes (the IPv4 limit, the usual snap
    length), 65536 (NETVM_MAX_PACKET, the largest exchange buffer the
    runtime creates) and 262144 (libpcap's largest snap length, the largest
    packet netvm-run reads), well-formed ones and ones whose headers claim
    more than the packet holds (IPv4 total length and header length, TCP
    data offset, UDP length, IPv6 payload length, extension header
    lengths), and captures whose wire length exceeds what was captured, up
    to 2^32 - 1.

Writes a pcap file (microsecond timestamps, packet N at N-1 seconds) and,
with --flat, the same captures with wire lengths equal to captured lengths
(what a host pushing bytes without a wire length, netvm_instance_push,
gives the application).

Usage: edge_packets.py [--seed N] -o trace.pcap [--flat flat.pcap]
"""
import argparse
import random
import struct

MAX_IPV4 = 65535       # IPv4 total length, the usual snap length
MAX_EXBUF = 65536      # runtime/native/internal.h NETVM_MAX_PACKET
MAX_SNAPLEN = 262144   # libpcap's MAXIMUM_SNAPLEN, netvm-run's snap length

MAC_A = bytes.fromhex("001122334455")
MAC_B = bytes.fromhex("00aabbccddee")
IP_WATCHED = bytes([10, 1, 1, 1])
IP_OTHER = bytes([192, 168, 7, 9])
IP6_A = bytes.fromhex("20010db8000000000000000000000001")
IP6_B = bytes.fromhex("20010db8000000000000000000000002")


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def eth(payload, ethertype, dst=MAC_B, src=MAC_A):
    return dst + src + struct.pack("!H", ethertype) + payload


def vlan(payload, ethertype, vid=100):
    return struct.pack("!HH", vid, ethertype) + payload


def mpls(payload, labels):
    out = b""
    for i, label in enumerate(labels):
        bottom = 1 if i == len(labels) - 1 else 0
        out += struct.pack("!I", label << 12 | bottom << 8 | 64)
    return out + payload


def ipv4(payload, proto, src=IP_WATCHED, dst=IP_OTHER, options=b"",
         frag=0x4000, total=None, ihl=None, ttl=64):
    ihl = ihl if ihl is not None else 5 + len(options) // 4
    total = total if total is not None else 20 + len(options) + len(payload)
    header = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, total & 0xFFFF,
                         0x1C26, frag, ttl, proto, 0, src, dst) + options
    header = header[:10] + struct.pack("!H", csum(header)) + header[12:]
    return header + payload


def ipv6(payload, nexthdr, src=IP6_A, dst=IP6_B, plen=None):
    plen = plen if plen is not None else len(payload)
    return struct.pack("!IHBB", 0x60000000, plen & 0xFFFF, nexthdr, 64) + \
        src + dst + payload


def ext6(payload, nexthdr, length8=0, kind="opts"):
    """An IPv6 hop-by-hop/destination/routing extension header of
    (length8 + 1) * 8 bytes."""
    body = bytearray(6 + 8 * length8)
    if kind == "routing":
        body[0] = 0      # routing type
        body[1] = 0      # segments left
    else:                # PadN options over the rest
        at = 0
        while at < len(body):
            n = min(len(body) - at - 2, 255)
            body[at:at + 2] = bytes([1, n])
            at += n + 2
    return bytes([nexthdr, length8]) + bytes(body) + payload


def frag6(payload, nexthdr, offset=0, more=0):
    return struct.pack("!BBHI", nexthdr, 0, offset << 3 | more, 0x1234) + \
        payload


def tcp(payload=b"", sport=40000, dport=80, flags=0x18, options=b"",
        doff=None):
    doff = doff if doff is not None else 5 + len(options) // 4
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 2, doff << 4, flags,
                       8192, 0, 0) + options + payload


def udp(payload=b"", sport=5353, dport=53, length=None):
    length = length if length is not None else 8 + len(payload)
    return struct.pack("!HHHH", sport, dport, length & 0xFFFF, 0) + payload


def icmp(payload=b"abcdefgh", kind=8):
    h = struct.pack("!BBHHH", kind, 0, 0, 1, 1) + payload
    return h[:2] + struct.pack("!H", csum(h)) + h[4:]


def pad(frame):
    """Ethernet frames shorter than 60 bytes are padded on the wire."""
    return frame + bytes(max(0, 60 - len(frame)))


HTTP = b"GET /index.html HTTP/1.1\r\nHost: example.org\r\n\r\n"
TCP_OPTIONS = bytes.fromhex("020405b4010303080402080a0000000100000000")


def base_frames():
    """(name, frame): well-formed frames of every kind the bundled
    applications parse."""
    f = []
    f.append(("IPv4/TCP/HTTP", eth(ipv4(tcp(HTTP), 6), 0x0800)))
    f.append(("IPv4/TCP SYN with options", pad(eth(ipv4(
        tcp(flags=0x02, options=TCP_OPTIONS), 6, src=IP_OTHER,
        dst=IP_WATCHED), 0x0800))))
    f.append(("IPv4/UDP/DNS", pad(eth(ipv4(
        udp(b"\x12\x34\x01\x00\x00\x01"), 17), 0x0800))))
    f.append(("IPv4 with 40 bytes of options/UDP", eth(ipv4(
        udp(b"dns?"), 17, options=b"\x01" * 39 + b"\x00"), 0x0800)))
    f.append(("IPv4/ICMP", pad(eth(ipv4(icmp(), 1), 0x0800))))
    f.append(("IPv4 later fragment", pad(eth(ipv4(
        b"fragment-data", 6, frag=0x00B9), 0x0800))))
    f.append(("VLAN/IPv4/TCP", eth(vlan(ipv4(tcp(HTTP, dport=8080), 6),
                                       0x0800), 0x8100)))
    f.append(("QinQ/IPv4/UDP", eth(vlan(vlan(ipv4(udp(b"qinq"), 17), 0x0800,
                                             7), 0x8100, 5), 0x88A8)))
    f.append(("MPLS x3/IPv4/UDP", pad(eth(mpls(ipv4(udp(b"mpls"), 17),
                                               [16, 17, 18]), 0x8847))))
    f.append(("MPLS/IPv4/TCP", pad(eth(mpls(ipv4(tcp(), 6), [16]),
                                       0x8847))))
    # The paper's four-fields filter: 10.1.1.1 to 10.2.2.2, TCP 20 to 30.
    f.append(("IPv4/TCP 20 to 30", pad(eth(ipv4(
        tcp(sport=20, dport=30), 6, dst=bytes([10, 2, 2, 2])), 0x0800))))
    f.append(("IPv6/TCP", eth(ipv6(tcp(HTTP, dport=443), 6), 0x86DD)))
    f.append(("IPv6 hop-by-hop/routing/fragment/UDP", eth(ipv6(ext6(
        ext6(frag6(udp(b"v6"), 17), 44, 1, "routing"), 43, 0), 0), 0x86DD)))
    f.append(("IPv6/ICMPv6", eth(ipv6(icmp(kind=128), 58), 0x86DD)))
    f.append(("IPv6/UDP/DNS", eth(ipv6(udp(b"\x12\x34\x01\x00"), 17),
                                  0x86DD)))
    f.append(("ARP", pad(eth(struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) +
                             MAC_A + IP_WATCHED + bytes(6) + IP_OTHER,
                             0x0806))))
    f.append(("IPv4/IPv4/TCP", eth(ipv4(ipv4(tcp(HTTP), 6, src=IP_OTHER), 4),
                                   0x0800)))
    f.append(("IPv4/GRE/IPv4/UDP", eth(ipv4(struct.pack("!HH", 0, 0x0800) +
                                            ipv4(udp(b"gre"), 17), 47),
                                       0x0800)))
    f.append(("IPv4/UDP/VXLAN/Ethernet/IPv4/TCP", eth(ipv4(udp(
        b"\x08\0\0\0\0\0\x01\0" + eth(ipv4(tcp(HTTP), 6), 0x0800),
        49152, 4789), 17), 0x0800)))
    # 802.3 with LLC/SNAP (a length, not an EtherType).
    llc = b"\xaa\xaa\x03\x00\x00\x00\x08\x00" + ipv4(udp(b"snap"), 17)
    f.append(("802.3/LLC/SNAP/IPv4/UDP", pad(MAC_B + MAC_A +
                                             struct.pack("!H", len(llc)) +
                                             llc)))
    f.append(("1514-byte IPv4/TCP", eth(ipv4(tcp(
        HTTP + b"x" * (1460 - len(HTTP))), 6), 0x0800)))
    f.append(("jumbo IPv4/UDP", eth(ipv4(udp(bytes(range(256)) * 35), 17),
                                    0x0800)))
    return f


def max_length_packets(rng):
    """(what, bytes, wire length): packets at the limits, some whose headers
    claim more than they hold."""
    out = []

    def fill(head, size, filler=b"\0"):
        body = (filler * (size // len(filler) + 1))[:max(0, size - len(head))]
        return (head + body)[:size]

    payload = bytes(MAX_IPV4 - 14 - 20 - 8)
    out.append(("65535-byte IPv4/UDP, lengths exact",
                eth(ipv4(udp(payload), 17), 0x0800), MAX_IPV4))
    head = eth(ipv4(tcp(HTTP, doff=15, options=b"\x01" * 40), 6,
                    options=b"\x01" * 40, total=0xFFFF), 0x0800)
    out.append(("65535-byte IPv4 (total length 0xffff, IHL 15)/TCP (data "
                "offset 15), claiming 14 bytes more",
                fill(head, MAX_IPV4, b"GET / "), MAX_IPV4))
    head = eth(ipv6(ext6(udp(length=0xFFFF), 17, 255), 0, plen=0xFFFF),
               0x86DD)
    out.append(("65535-byte IPv6 (payload length 0xffff)/2048-byte "
                "hop-by-hop/UDP (length 0xffff)", fill(head, MAX_IPV4),
                MAX_IPV4))
    head = eth(vlan(vlan(mpls(ipv4(tcp(b"GET /index.html"), 6,
                                   total=0xFFFF), [20, 21, 22]),
                         0x8847, 9), 0x8100, 8), 0x88A8)
    out.append(("65536-byte QinQ/MPLS x3/IPv4 (total length 0xffff)/TCP/text",
                fill(head, MAX_EXBUF, b"post /a "), MAX_EXBUF))
    head = eth(ipv4(tcp(b"", dport=80), 6, total=0xFFFF), 0x0800)
    tail = b"get /end"
    out.append(("262144-byte IPv4 (total length 0xffff)/TCP port 80, a "
                "request in the last bytes",
                fill(head, MAX_SNAPLEN - len(tail), b"A") + tail,
                MAX_SNAPLEN))
    out.append(("262144-byte IPv6/UDP of 0xff bytes, wire length 2^32-1",
                fill(eth(ipv6(udp(length=0xFFFF), 17, plen=0xFFFF), 0x86DD),
                     MAX_SNAPLEN, b"\xff"), 0xFFFFFFFF))
    out.append(("65535 zero bytes, wire length 2^31", bytes(MAX_IPV4),
                0x80000000))
    out.append(("262144 bytes of 0xff", b"\xff" * MAX_SNAPLEN, MAX_SNAPLEN))
    out.append(("65536 random bytes",
                bytes(rng.getrandbits(8) for _ in range(MAX_EXBUF)),
                MAX_EXBUF))
    head = eth(ipv4(struct.pack("!HH", 0, 0x0800) +
                    ipv4(tcp(HTTP), 6, total=0xFFFF), 47, total=0xFFFF),
               0x0800)
    out.append(("65535-byte IPv4/GRE/IPv4, both total lengths 0xffff",
                fill(head, MAX_IPV4, b"\x45"), MAX_IPV4))
    out.append(("short IPv4/UDP claiming 0xffff bytes, wire length 65535",
                eth(ipv4(udp(b"x", length=0xFFFF), 17, total=0xFFFF),
                    0x0800), MAX_IPV4))
    out.append(("short IPv6 claiming 0xffff bytes, wire length 65549",
                eth(ipv6(b"", 6, plen=0xFFFF), 0x86DD), MAX_IPV4 + 14))
    return out


def random_packets(rng, frames):
    """(what, bytes): garbage and damaged frames."""
    out = []
    for _ in range(150):
        n = rng.choice([1, 2, 13, 14, 15, 33, 34, 54, 60, rng.randrange(200)])
        out.append(("random garbage",
                    bytes(rng.getrandbits(8) for _ in range(n))))
    types = [0x0800, 0x86DD, 0x8100, 0x88A8, 0x8847, 0x0806, 0x0000, 0xFFFF]
    for _ in range(150):
        kind = rng.choice(types)
        n = rng.randrange(0, 120)
        out.append((f"EtherType 0x{kind:04x} and random garbage",
                    MAC_B + MAC_A + struct.pack("!H", kind) +
                    bytes(rng.getrandbits(8) for _ in range(n))))
    for _ in range(100):
        h = bytearray(ipv4(tcp(HTTP), 6))
        for _ in range(rng.randrange(1, 4)):
            h[rng.randrange(20)] = rng.getrandbits(8)
        out.append(("IPv4/TCP with random header bytes, truncated",
                    eth(bytes(h)[:rng.randrange(len(h) + 1)], 0x0800)))
    for _ in range(150):
        name, frame = rng.choice(frames)
        f = bytearray(frame)
        for _ in range(rng.randrange(1, 6)):
            f[rng.randrange(min(len(f), 96))] = rng.getrandbits(8)
        out.append((f"{name} with random bytes changed", bytes(f)))
    return out


def generate(seed):
    """[(captured bytes, wire length, what it is)] in trace order."""
    rng = random.Random(seed)
    frames = base_frames()
    packets = [(b"", 0, "zero-length"),
               (b"", 60, "nothing captured of 60 bytes"),
               (b"", MAX_IPV4, "nothing captured of 65535 bytes")]
    for name, frame in frames:
        packets.append((frame, len(frame), name))
        # Every truncation of the frame's first 64 bytes, then every 4th.
        for k in list(range(0, min(len(frame), 65))) + \
                list(range(68, min(len(frame), 160), 4)):
            packets.append((frame[:k], len(frame),
                            f"{name} cut to {k} of {len(frame)} bytes"))
    packets += [(p, len(p), what) for what, p in random_packets(rng, frames)]
    packets += [(p, wire, what) for what, p, wire in max_length_packets(rng)]
    packets.append((b"", 0, "zero-length"))
    return packets


def write_pcap(path, packets, flat=False):
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0,
                              MAX_SNAPLEN, 1))
        for i, (data, wire, _) in enumerate(packets):
            out.write(struct.pack("<IIII", i, 0, len(data),
                                  len(data) if flat else max(wire, len(data))))
            out.write(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", required=True, help="pcap file to write")
    ap.add_argument("--flat", help="also write them with wire lengths equal "
                    "to captured lengths")
    args = ap.parse_args()
    packets = generate(args.seed)
    write_pcap(args.o, packets)
    if args.flat:
        write_pcap(args.flat, packets, flat=True)


if __name__ == "__main__":
    main()
