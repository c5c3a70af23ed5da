#!/usr/bin/env python3
"""Write a pcap trace of the frames netvm-pcapgen does not make, for the
netvm-vs-libpcap differential test of tcpdump expressions.

- Ethernet broadcast and multicast destinations; IPv4 multicast, limited and
  directed broadcast destinations; IPv6 multicast destinations;
- IPv6 packets with chains of extension headers (hop-by-hop, destination
  options, routing, fragment, AH) and IPv4 packets with AH, for protochain;
- 802.3 frames with 802.2 LLC headers: STP, NetBEUI, IPX (802.2, raw
  802.3 and SNAP), OSI (CLNP, ES-IS, IS-IS with its PDU types), IP over
  LLC, AppleTalk and AARP over SNAP, with I, S and U control bytes;
- DECnet (long and short data headers, with and without padding), LAT,
  SCA, MOP, AppleTalk, AARP, IPX, PPPoE discovery and loopback EtherTypes;
- some of them behind a VLAN tag or an MPLS label;
- with --pppoe, PPPoE session frames instead (IPv4, IPv6, MPLS or LCP
  inside PPP, sessions 1, 7, 0x1234 and 0xffff), for `pppoes`;
- with --geneve, UDP over IPv4 or IPv6 to port 6081 and a few others with
  a Geneve header (versions 0 and 1, 0 to 3 words of options, VNIs 0, 7,
  0x1234 and 0xffffff) carrying an Ethernet frame (protocol type 0x6558),
  an IPv4 or IPv6 packet, another Geneve packet or something else, for
  `geneve`;

each whole and truncated at random lengths. --link-type LINUX_SLL or RAW
writes the frames' Ethernet headers as Linux cooked headers or leaves them
out (frames that are not IPv4 or IPv6 then go). Frames on which libpcap's
protochain loop would never end (an AH header pointing back at itself) are
left out: bpf_filter would loop forever on them.

The same seed gives the same file.

Usage: gen-packets.py [--seed N] [--count N] [--pppoe | --geneve]
                      [--link-type EN10MB|LINUX_SLL|RAW] -o trace.pcap
"""
import argparse
import random
import struct

HOSTS = ["10.1.1.1", "10.2.2.2", "10.3.3.3", "10.4.4.4", "192.168.0.1",
         "192.168.1.2", "8.8.8.8", "20.1.1.5"]
CAST4 = ["224.0.0.1", "224.0.0.251", "239.255.255.250", "255.255.255.255",
         "10.1.1.255", "10.1.1.0", "0.0.0.0", "192.168.1.255", "223.1.1.1"]
HOSTS6 = ["2001:db8::1", "2001:db8::2", "2001:db8::3", "2001:db8::4"]
CAST6 = ["ff02::1", "ff02::fb", "ff05::2", "fe80::1"]
MACS = ["00:11:22:33:44:55", "00:01:02:03:04:05", "00:aa:bb:cc:dd:ee",
        "ff:ff:ff:ff:ff:ff", "01:00:5e:00:00:01", "33:33:00:00:00:01",
        "01:80:c2:00:00:00", "03:00:00:00:00:01", "09:00:2b:00:00:0f"]
PORTS = [80, 443, 22, 53, 20, 30, 123, 8080]
DECNET = [(1, 2), (10, 5), (1, 1), (63, 1023)]


def mac(text):
    return bytes(int(x, 16) for x in text.split(":"))


def ip4(text):
    return bytes(int(x) for x in text.split("."))


def ip6(text):
    import ipaddress
    return ipaddress.IPv6Address(text).packed


def ethernet(r, ethertype, dst=None):
    d = mac(dst or r.choice(MACS))
    s = mac(r.choice(MACS[:3]))
    return d + s + struct.pack(">H", ethertype)


def transport(r, proto):
    if proto in (6, 17):
        header = struct.pack(">HH", r.choice(PORTS), r.choice(PORTS))
        if proto == 6:
            header += struct.pack(">IIBBHHH", r.getrandbits(32),
                                  r.getrandbits(32), 0x50,
                                  1 << r.randrange(6), 65535, 0, 0)
        else:
            header += struct.pack(">HH", 8 + 16, 0)
        return header + bytes(r.getrandbits(8) for _ in range(16))
    if proto in (1, 58):
        return bytes([r.choice([0, 8, 128, 129, 135]), 0, 0, 0]) + \
            bytes(r.getrandbits(8) for _ in range(20))
    return bytes(r.getrandbits(8) for _ in range(8 + r.randrange(24)))


def ipv4(r, proto, payload, dst=None, src=None):
    ihl = 5 + (r.randrange(3) if r.random() < 0.2 else 0)
    frag = 0x4000 if r.random() < 0.9 else r.choice([0x2000, 0x2001, 0x0010])
    header = struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, 0, r.getrandbits(16),
                         frag, 64, proto, 0,
                         ip4(src or r.choice(HOSTS)),
                         ip4(dst or r.choice(HOSTS)))
    header += b"\x01" * (4 * (ihl - 5))
    total = len(header) + len(payload)
    return header[:2] + struct.pack(">H", total) + header[4:] + payload


def ipv6(r, next_header, payload, dst=None):
    return struct.pack(">IHBB", 0x60000000 | r.getrandbits(20), len(payload),
                       next_header, 64) + ip6(r.choice(HOSTS6)) + \
        ip6(dst or r.choice(HOSTS6)) + payload


def extension(r, kind, next_header):
    """One IPv6 extension header (or AH) of type `kind`."""
    if kind == 44:  # fragment: 8 bytes
        return bytes([next_header, 0]) + struct.pack(
            ">HI", r.choice([0, 1, 8 << 3]), r.getrandbits(32))
    if kind == 51:  # AH: (len + 2) * 4 bytes
        length = r.choice([1, 2, 4])
        return bytes([next_header, length, 0, 0]) + \
            bytes(r.getrandbits(8) for _ in range((length + 2) * 4 - 4))
    length = r.choice([0, 0, 1, 2])  # (len + 1) * 8 bytes
    return bytes([next_header, length]) + \
        bytes(r.getrandbits(8) for _ in range((length + 1) * 8 - 2))


def chain_packet(r):
    """IPv6 with a chain of extension headers, or IPv4 with AH."""
    final = r.choice([6, 17, 58, 59, 50, 6, 17])
    if r.random() < 0.25:
        kinds = [51] * r.randrange(1, 3)
        body = transport(r, final) if final != 59 else b""
        for i in reversed(range(len(kinds))):
            nxt = final if i == len(kinds) - 1 else kinds[i + 1]
            body = extension(r, kinds[i], nxt) + body
        return ethernet(r, 0x0800) + ipv4(r, kinds[0], body)
    kinds = [r.choice([0, 60, 43, 44, 51]) for _ in range(r.randrange(0, 4))]
    body = transport(r, final) if final != 59 else b""
    for i in reversed(range(len(kinds))):
        nxt = final if i == len(kinds) - 1 else kinds[i + 1]
        body = extension(r, kinds[i], nxt) + body
    first = kinds[0] if kinds else final
    return ethernet(r, 0x86DD) + ipv6(r, first, body,
                                      dst=r.choice(HOSTS6 + CAST6))


def cast_packet(r):
    """Broadcast and multicast at the link, IPv4 and IPv6 layers."""
    dst = r.choice(MACS[3:] + MACS[:1])
    if r.random() < 0.5:
        proto = r.choice([6, 17, 1, 2])
        return ethernet(r, 0x0800, dst) + ipv4(
            r, proto, transport(r, proto), dst=r.choice(CAST4 + HOSTS[:2]))
    proto = r.choice([6, 17, 58])
    return ethernet(r, 0x86DD, dst) + ipv6(
        r, proto, transport(r, proto), dst=r.choice(CAST6 + HOSTS6[:1]))


def llc_packet(r):
    """An 802.3 frame with an 802.2 LLC header (length <= 1500)."""
    control = r.choice([0x00, 0x02, 0x10, 0x01, 0x05, 0x09, 0x03, 0x13,
                        0x63, 0x43, 0x0F, 0x6F, 0xE3, 0xAF, 0x87, 0xF3])
    kind = r.randrange(11)
    if kind == 0:  # STP
        llc = bytes([0x42, 0x42, control]) + bytes(35)
    elif kind == 1:  # NetBEUI
        llc = bytes([0xF0, 0xF0, control]) + bytes(r.getrandbits(8)
                                                   for _ in range(30))
    elif kind == 2:  # IPX over 802.2
        llc = bytes([0xE0, 0xE0, 0x03]) + bytes(30)
    elif kind == 3:  # raw 802.3 IPX
        llc = b"\xff\xff" + bytes(28)
    elif kind in (4, 5):  # OSI: CLNP, ES-IS, IS-IS with a PDU type
        nlpid = r.choice([0x81, 0x82, 0x83, 0x83, 0x83])
        pdu = r.choice([15, 16, 17, 18, 20, 24, 25, 26, 27, 1])
        llc = bytes([0xFE, 0xFE, r.choice([0x03, control]), nlpid, 27, 1, 0,
                     pdu]) + bytes(r.getrandbits(8) for _ in range(30))
    elif kind == 6:  # IP over 802.2
        llc = bytes([0x06, 0x06, 0x03]) + ipv4(r, 6, transport(r, 6))
    elif kind in (7, 8):  # SNAP: AppleTalk, AARP, IPX
        org, ptype = r.choice([(0x080007, 0x809B), (0x000000, 0x80F3),
                               (0x000000, 0x8137), (0x000000, 0x809B),
                               (0x080007, 0x80F3), (0x000000, 0x0800)])
        llc = bytes([0xAA, 0xAA, 0x03]) + org.to_bytes(3, "big") + \
            struct.pack(">H", ptype) + bytes(24)
    else:  # some other SAPs
        sap = r.choice([0x00, 0x04, 0x06, 0x42, 0xAA, 0xE0, 0xF0, 0xFE, 0x7E])
        llc = bytes([sap, r.choice([sap, 0x00]), control]) + bytes(30)
    length = len(llc) if r.random() < 0.8 else r.choice([0, 46, 1500])
    return ethernet(r, length) + llc


def decnet_header(r):
    """A DECnet routing header: short or long, with or without padding, the
    destination and source addresses where libpcap looks for them."""
    long = r.random() < 0.5
    flags = (0x06 if long else 0x02) | r.choice([0, 0x08, 0x20])
    pad = r.random() < 0.4
    body = bytearray(20)
    dst, src = r.choice(DECNET), r.choice(DECNET)

    def put(at, area_node):
        value = (area_node[0] << 10) | area_node[1]
        body[at:at + 2] = value.to_bytes(2, "little")
    put(6 if long else 0, dst)
    put(14 if long else 2, src)
    header = bytes([0x81]) if pad else b""
    return struct.pack("<H", 24) + header + bytes([flags]) + bytes(body)


def ethertype_packet(r):
    """The EtherTypes of libpcap's other protocol names."""
    ethertype = r.choice([0x6003, 0x6003, 0x6003, 0x6004, 0x6007, 0x6001,
                          0x6002, 0x809B, 0x80F3, 0x8137, 0x8863, 0x8864,
                          0x9000])
    payload = decnet_header(r) if ethertype == 0x6003 else bytes(
        r.getrandbits(8) for _ in range(30))
    return ethernet(r, ethertype) + payload


def pppoe_packet(r):
    """A PPPoE session frame: the PPPoE header, then a PPP packet."""
    protocol = r.choice([0x0021, 0x0021, 0x0057, 0x0281, 0xC021])
    if protocol == 0x0021:
        proto = r.choice([6, 17, 1])
        payload = ipv4(r, proto, transport(r, proto))
    elif protocol == 0x0057:
        proto = r.choice([6, 17])
        payload = ipv6(r, proto, transport(r, proto))
    elif protocol == 0x0281:
        proto = r.choice([6, 17])
        label = (r.randrange(1 << 20) << 12) | 0x100 | 64
        payload = struct.pack(">I", label) + ipv4(r, proto, transport(r, proto))
    else:
        payload = bytes(r.getrandbits(8) for _ in range(16))
    ppp = struct.pack(">H", protocol) + payload
    session = r.choice([1, 7, 0x1234, 0xFFFF])
    return ethernet(r, 0x8864) + struct.pack(">BBHH", 0x11, 0, session,
                                             len(ppp)) + ppp


def geneve_payload(r, depth=0):
    """A Geneve header and what it carries: (protocol type, bytes)."""
    kind = r.choice(["ether", "ether", "ip", "ip6", "other"] +
                    (["geneve"] if depth == 0 else []))
    if kind in ("ether", "geneve"):
        protocol = 0x6558
        if kind == "geneve":
            inner = ethernet(r, 0x0800) + ipv4(r, 17, geneve_udp(r, depth + 1))
        else:
            ethertype = r.choice([0x0800, 0x86DD, 0x0806])
            if ethertype == 0x0800:
                proto = r.choice([6, 17, 1])
                inner = ethernet(r, ethertype) + ipv4(r, proto,
                                                      transport(r, proto))
            elif ethertype == 0x86DD:
                proto = r.choice([6, 17, 58])
                inner = ethernet(r, ethertype) + ipv6(r, proto,
                                                      transport(r, proto))
            else:
                inner = ethernet(r, ethertype) + bytes(28)
    elif kind == "ip":
        protocol = 0x0800
        proto = r.choice([6, 17, 1])
        inner = ipv4(r, proto, transport(r, proto))
    elif kind == "ip6":
        protocol = 0x86DD
        proto = r.choice([6, 17])
        inner = ipv6(r, proto, transport(r, proto))
    else:
        protocol = r.choice([0x8847, 0x0806, 0x1234])
        inner = bytes(r.getrandbits(8) for _ in range(24))
    options = r.choice([0, 0, 1, 3])
    version = 0 if r.random() < 0.9 else 1
    vni = r.choice([0, 7, 0x1234, 0xFFFFFF])
    header = struct.pack(">BBHI", version << 6 | options, 0, protocol,
                         vni << 8) + bytes(r.getrandbits(8)
                                           for _ in range(4 * options))
    return header + inner


def geneve_udp(r, depth=0):
    """A UDP header, mostly to the Geneve port, and a Geneve packet."""
    payload = geneve_payload(r, depth)
    port = 6081 if r.random() < 0.85 else r.choice([6082, 4789, 53])
    return struct.pack(">HHHH", r.choice(PORTS), port, 8 + len(payload),
                       0) + payload


def geneve_packet(r):
    """Geneve over UDP over IPv4 or IPv6 on Ethernet."""
    if r.random() < 0.6:
        return ethernet(r, 0x0800) + ipv4(r, 17, geneve_udp(r))
    return ethernet(r, 0x86DD) + ipv6(r, 17, geneve_udp(r))


def encapsulate(r, frame):
    """Put a VLAN tag or an MPLS label between the Ethernet header and the
    rest (for IP frames only in the MPLS case)."""
    ethertype = struct.unpack(">H", frame[12:14])[0]
    if r.random() < 0.5 or ethertype not in (0x0800, 0x86DD):
        return frame[:12] + struct.pack(">HH", 0x8100, r.randrange(4096)) + \
            frame[12:]
    label = (r.randrange(1 << 20) << 12) | 0x100 | 64
    return frame[:12] + struct.pack(">HI", 0x8847, label) + frame[14:]


def chain_loops(frame):
    """Whether libpcap's protochain loop (for the IPv4 or the IPv6 reading
    of `frame`, after 0, 1 or 2 VLAN tags or MPLS labels) never ends."""
    for base in (14, 18, 22):
        for a, x in ((base + 9, None), (base + 6, 40)):
            if a >= len(frame):
                continue
            if x is None:
                if base >= len(frame):
                    continue
                x = 4 * (frame[base] & 15)
            value, seen = frame[a], set()
            while True:
                if value == 59 or (value, x) in seen:
                    return (value, x) in seen
                seen.add((value, x))
                if value in (0, 60, 43, 44):
                    if base + x + 1 >= len(frame):
                        break
                    value, x = frame[base + x], (frame[base + x + 1] + 1) * 8 + x
                elif value == 51:
                    if base + x + 1 >= len(frame):
                        break
                    value, x = frame[base + x], (frame[base + x + 1] + 2) * 4
                else:
                    break
    return False


LINK_TYPES = {"EN10MB": 1, "LINUX_SLL": 113, "RAW": 101}


def relink(r, frame, link):
    """`frame` (Ethernet) with the link-layer header of `link`, or None."""
    if link == "EN10MB":
        return frame
    ethertype = struct.unpack(">H", frame[12:14])[0]
    if link == "RAW":
        return frame[14:] if ethertype in (0x0800, 0x86DD) else None
    # Linux cooked v1: packet type, ARPHRD_ETHER, the source address.
    return struct.pack(">HHH", r.choice([0, 4]), 1, 6) + frame[6:12] + \
        b"\0\0" + frame[12:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=3000)
    kind = ap.add_mutually_exclusive_group()
    kind.add_argument("--pppoe", action="store_true")
    kind.add_argument("--geneve", action="store_true")
    ap.add_argument("--link-type", choices=sorted(LINK_TYPES),
                    default="EN10MB")
    ap.add_argument("-o", required=True)
    args = ap.parse_args()
    r = random.Random(args.seed)
    makers = [chain_packet, chain_packet, cast_packet, llc_packet,
              llc_packet, ethertype_packet]
    if args.pppoe:
        makers = [pppoe_packet]
    if args.geneve:
        makers = [geneve_packet]
    frames = []
    while len(frames) < args.count:
        frame = r.choice(makers)(r)
        if r.random() < 0.15:
            frame = encapsulate(r, frame)
        frame = relink(r, frame.ljust(60, b"\0"), args.link_type)
        if frame is None:
            continue
        wire = len(frame)
        if r.random() < 0.3:  # a truncated capture
            frame = frame[:r.randrange(len(frame))]
        if chain_loops(frame):
            continue
        frames.append((frame, wire))
    with open(args.o, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144,
                              LINK_TYPES[args.link_type]))
        for i, (frame, wire) in enumerate(frames):
            out.write(struct.pack("<IIII", 1700000000 + i // 1000,
                                  (i % 1000) * 1000, len(frame), wire))
            out.write(frame)


if __name__ == "__main__":
    main()
