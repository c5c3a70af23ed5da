#!/usr/bin/env python3
"""Generate tcpdump expressions for the netvm-vs-libpcap differential test.

Primitives cover the language netvm's pcap-filter front end supports
(protocols, hosts, networks, ports, port ranges, protocol numbers and
names, lengths, Ethernet addresses, broadcast and multicast, protochain,
LLC, the link-level protocols, packet accessors and arithmetic), with the
addresses and ports netvm-pcapgen and gen-packets.py put in their traces,
and names every system has (localhost, /etc/services and /etc/protocols
entries), combined with and/or/not,
parentheses and bare operands that inherit qualifiers. The same seed gives
the same list.

Usage: gen-expressions.py [--seed N] [--count N]
"""
import argparse
import random

HOSTS = ["10.1.1.1", "10.2.2.2", "10.3.3.3", "10.4.4.4", "192.168.0.1",
         "192.168.1.2", "8.8.8.8", "20.1.1.5"]
NETS = ["10.0.0.0/8", "192.168.0.0/16", "10.1.1.0/24", "0.0.0.0/0",
        "192.168.1.0/24", "10.2.0.0 mask 255.255.0.0", "10", "192.168",
        "10.1.1"]
HOSTS6 = ["2001:db8::1", "2001:db8::2", "2001:db8::3", "2001:db8::4"]
NETS6 = ["2001:db8::/32", "2001:db8::/64", "2001:db8::/127", "::/0"]
PORTS = ["80", "443", "22", "53", "20", "30", "123", "8080"]
RANGES = ["20-30", "1-1024", "440-450", "8000-9000", "30-20"]
MACS = ["00:11:22:33:44:55", "00:01:02:03:04:05", "00:aa:bb:cc:dd:ee",
        "ff:ff:ff:ff:ff:ff"]
PROTOS = ["ip", "ip6", "arp", "rarp", "tcp", "udp", "icmp", "icmp6", "sctp",
          "igmp", "ah", "esp", "pim", "vrrp"]
DIRS = ["", "src ", "dst ", "src or dst ", "src and dst "]
RELS = [">", "<", ">=", "<=", "=", "==", "!="]


def host(r):
    q = r.choice(["", "", "ip ", "arp ", "rarp "])
    return f"{q}{r.choice(DIRS)}host {r.choice(HOSTS)}"


def net(r):
    q = r.choice(["", "ip ", "arp "])
    return f"{q}{r.choice(DIRS)}net {r.choice(NETS)}"


def host6(r):
    if r.random() < 0.5:
        return f"{r.choice(['', 'ip6 '])}{r.choice(DIRS)}host {r.choice(HOSTS6)}"
    return f"{r.choice(DIRS)}net {r.choice(NETS6)}"


def port(r):
    q = r.choice(["", "tcp ", "udp ", "sctp "])
    if r.random() < 0.25:
        return f"{q}{r.choice(DIRS)}portrange {r.choice(RANGES)}"
    return f"{q}{r.choice(DIRS)}port {r.choice(PORTS)}"


def proto_number(r):
    return r.choice(["ip proto 6", "ip proto 17", "ip proto 1", "ip6 proto 6",
                     "ip6 proto 17", "ip6 proto 58", "proto 6", "proto 17",
                     "ip proto \\tcp", "ip proto \\udp", "ether proto 0x800",
                     "ether proto 0x86dd", "ether proto 0x806",
                     "ip proto 47", "proto 132"])


def proto_name(r):
    return r.choice(["ip proto \\tcp", "proto \\udp", "ip proto \\icmp",
                     "ip6 proto \\ipv6-icmp", "proto \\ipv6-frag",
                     "ip proto \\gre", "ether proto \\ip",
                     "ether proto \\ip6", "ether proto \\arp",
                     "ether proto \\aarp", "ether proto \\atalk",
                     "ether proto \\ipx", "ether proto \\iso",
                     "ether proto \\stp", "ether proto \\netbeui",
                     "ether proto \\decnet", "ether proto \\lat",
                     "ether proto \\loopback", "ether proto 6",
                     "ether proto 0x42", "ether proto 0xfe",
                     "ether proto 0xe0", "ether proto 0xaa", "ether proto 4",
                     "iso proto \\isis", "iso proto \\clnp",
                     "iso proto 0x82", "isis proto 17", "isis proto 24"])


def port_name(r):
    q = r.choice(["", "tcp ", "udp "])
    if r.random() < 0.3:
        return f"{q}{r.choice(DIRS)}portrange {r.choice(['ftp-http', 'ssh-https', 'ftp-data-ssh', 'domain-ntp', 'http-ftp'])}"
    return f"{q}{r.choice(DIRS)}port {r.choice(['http', 'https', 'ssh', 'domain', 'ntp', 'ftp', 'ftp-data', 'http-alt'])}"


def host_name(r):
    q = r.choice(["", "", "ip ", "arp "])
    return f"{q}{r.choice(DIRS)}host localhost"


def cast(r):
    return r.choice(["broadcast", "ether broadcast", "multicast",
                     "ether multicast", "ip multicast", "ip6 multicast",
                     "link multicast"])


def protochain(r):
    q = r.choice(["", "ip ", "ip6 "])
    n = r.choice(["6", "17", "58", "59", "44", "0", "51", "50", "60", "43",
                  "\\tcp", "\\udp"])
    return f"{q}protochain {n}"


def llc(r):
    return r.choice(["llc", "llc i", "llc s", "llc u", "llc rr", "llc rnr",
                     "llc rej", "llc ui", "llc ua", "llc disc", "llc dm",
                     "llc sabme", "llc test", "llc xid", "llc frmr"])


def link_protocol(r):
    """The protocols libpcap tests in the link layer (802.2 or EtherType)."""
    if r.random() < 0.25:
        area = r.choice(["1.2", "10.5", "1.1", "63.1023", "1025"])
        return f"decnet {r.choice(DIRS)}host {area}"
    if r.random() < 0.15:
        return f"byte {r.choice(['0', '12', '13', '14', '16'])} {r.choice(['=', '<', '>'])} {r.choice(['0', '1', '6', '0x42', '0xfe', '128'])}"
    if r.random() < 0.1:
        return f"{r.choice(['decnet', 'atalk', 'lat'])}[{r.choice(['0', '2', '3'])}] {r.choice(RELS)} {r.choice(['0', '6', '0x81'])}"
    return r.choice(["stp", "netbeui", "ipx", "iso", "esis", "isis", "clnp",
                     "l1", "l2", "iih", "lsp", "snp", "csnp", "psnp",
                     "decnet", "atalk", "aarp", "lat", "sca", "mopdl",
                     "moprc", "pppoed"])


def length(r):
    n = r.choice(["0", "14", "42", "60", "64", "100", "128", "1500"])
    return r.choice([f"len {r.choice(RELS)} {n}", f"less {n}",
                     f"greater {n}"])


def ether(r):
    return f"ether {r.choice(DIRS)}host {r.choice(MACS)}"


def accessor(r):
    proto, size = r.choice([("ether", 1), ("ether", 2), ("ip", 1), ("ip", 2),
                            ("ip", 4), ("ip6", 1), ("ip6", 2), ("tcp", 1),
                            ("tcp", 2), ("udp", 2), ("icmp", 1),
                            ("icmp6", 1), ("arp", 2), ("sctp", 2)])
    offset = r.choice(["0", "1", "2", "6", "9", "12", "13", "16", "20",
                       "40", "60"])
    suffix = "" if size == 1 and r.random() < 0.5 else f":{size}"
    return f"{proto}[{offset}{suffix}]"


def relation(r):
    special = ["tcp[tcpflags] & (tcp-syn|tcp-ack) != 0",
               "tcp[tcpflags] & tcp-syn != 0", "tcp[13] & 0x12 = 0x12",
               "icmp[icmptype] = icmp-echo",
               "icmp[icmptype] != icmp-echo and icmp[icmptype] != icmp-echoreply",
               "ip[2:2] > 576", "ip[6:2] & 0x1fff = 0",
               "(ip[0] & 0xf) * 4 > 20", "ip[2:2] - ((ip[0] & 0xf) << 2) > 40",
               "udp[4:2] > 40", "ether[12:2] = 0x800",
               "ip[ip[0] & 0xf] = 4", "ether[0] & 1 != 0",
               "ip6[6] = 17", "icmp6[0] = 128", "len - 14 > 50",
               "ip[8] < 64", "ip[1] & 0xfc = 0x10", "tcp[12] >> 4 > 5",
               "ip[2:2] / 4 > 30", "ip[2:2] % 2 = 0", "-ip[8] < 0",
               "ip[2:2] ^ 0xff > 100", "ip[0] + tcp[0] > 5",
               "tcp[0] > ip[0]", "ip[4:4] = 0", "ether[6:4] != 0"]
    if r.random() < 0.4:
        return r.choice(special)
    lhs = accessor(r)
    if r.random() < 0.3:
        lhs = f"{lhs} & {r.choice(['0x1', '0xf', '0xff', '0x1fff', '0xf0'])}"
    return f"{lhs} {r.choice(RELS)} {r.choice(['0', '1', '4', '6', '17', '64', '0x45', '1024'])}"


def encapsulation(r):
    """vlan and mpls move the offsets of every primitive after them."""
    tag = r.choice(["vlan", "vlan", "vlan 0", "vlan 100", "mpls", "mpls",
                    "vlan and vlan", "mpls and mpls", "mpls 1000"])
    return f"{tag} and {primitive(r) if r.random() < 0.8 else tag}"


PRIMITIVES = [(host, 4), (net, 2), (host6, 2), (port, 4), (proto_number, 2),
              (length, 2), (ether, 2), (relation, 4),
              (lambda r: r.choice(PROTOS), 4), (encapsulation, 2),
              (proto_name, 2), (port_name, 2), (host_name, 1), (cast, 2),
              (protochain, 2), (llc, 2), (link_protocol, 3)]


def primitive(r):
    total = sum(w for _, w in PRIMITIVES)
    pick = r.uniform(0, total)
    for fn, w in PRIMITIVES:
        pick -= w
        if pick <= 0:
            return fn(r)
    return PRIMITIVES[-1][0](r)


def expression(r, depth):
    if depth == 0 or r.random() < 0.35:
        e = primitive(r)
        if r.random() < 0.15:
            e = "not " + e
        return e
    op = r.choice(["and", "or", "&&", "||"])
    lhs = expression(r, depth - 1)
    rhs = expression(r, depth - 1)
    if r.random() < 0.5:
        rhs = f"({rhs})"
    if r.random() < 0.1:
        return f"not ({lhs} {op} {rhs})"
    return f"{lhs} {op} {rhs}"


def inheriting(r):
    kind = r.choice(["host", "port", "net"])
    if kind == "host":
        first = host(r)
        rest = r.sample(HOSTS, 2)
    elif kind == "port":
        first = port(r)
        if "portrange" in first:
            return first
        rest = r.sample(PORTS, 2)
    else:
        first = f"net {r.choice(NETS[:5])}"
        rest = [r.choice(NETS[:5])]
    out = first
    for item in rest:
        out += f" {r.choice(['and', 'or', 'or not', 'and not'])} {item}"
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=400)
    args = ap.parse_args()
    r = random.Random(args.seed)
    seen = set()
    out = []
    while len(out) < args.count:
        roll = r.random()
        if roll < 0.3:
            e = primitive(r)
        elif roll < 0.45:
            e = inheriting(r)
        else:
            e = expression(r, 3)
        if e not in seen:
            seen.add(e)
            out.append(e)
    print("\n".join(out))


if __name__ == "__main__":
    main()
