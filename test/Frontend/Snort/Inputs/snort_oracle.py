"""The IDS oracle: an independent, straightforward Snort matcher.

It reads the rule subset of docs/applications.md with its own small parser
and checks every packet against every rule, one by one, with Python's
bytes.find and re: no port groups, no fast patterns, no shared automaton.
It also builds the test traces: packets whose payloads are made to hit and
to nearly miss each rule option (offset/depth edges, nocase, split and
relative contents, ports and addresses at and beside the rule's sets).

    snort_oracle.py RULES --trace OUT.pcap [-n N] [--seed S]
        write a trace for RULES
    snort_oracle.py RULES --check TRACE.pcap ALERTS.json
        compare netvm-ids's JSON alerts with the oracle's; exit 1 on a
        difference, after listing it
"""

import argparse
import ipaddress
import json
import random
import re
import struct
import sys


# --- rules ---------------------------------------------------------------

def split_top(text, sep=","):
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    return parts


class Spec:
    """An address or port set: ("any"), ("net", lo, hi) or ("list", [..]),
    with a negation flag. Addresses are ranges of integers too."""

    def __init__(self, kind, neg=False, lo=0, hi=0, items=()):
        self.kind, self.neg, self.lo, self.hi = kind, neg, lo, hi
        self.items = list(items)

    def match(self, v):
        if self.kind == "any":
            base = True
        elif self.kind == "range":
            base = self.lo <= v <= self.hi
        else:
            pos = [e for e in self.items if not e.neg]
            negs = [e for e in self.items if e.neg]
            base = (not pos or any(e.match(v) for e in pos)) and all(
                e.match(v) for e in negs)
        return base != self.neg

    def samples(self):
        """Values inside and just outside the set."""
        if self.kind == "range":
            return [self.lo, self.hi, max(self.lo - 1, 0), self.hi + 1]
        out = []
        for e in self.items:
            out += e.samples()
        return out


def parse_spec(text, variables, is_port):
    text = text.strip()
    if text.startswith("!"):
        s = parse_spec(text[1:], variables, is_port)
        s.neg = not s.neg
        return s
    if text.startswith("$"):
        return parse_spec(variables[text[1:]], variables, is_port)
    if text == "any":
        return Spec("any")
    if text.startswith("["):
        return Spec("list", items=[parse_spec(p, variables, is_port)
                                   for p in split_top(text[1:-1])])
    if is_port:
        if ":" in text:
            lo, hi = text.split(":")
            return Spec("range", lo=int(lo or 0), hi=int(hi or 65535))
        return Spec("range", lo=int(text), hi=int(text))
    net = ipaddress.ip_network(text, strict=False)
    return Spec("range", lo=int(net.network_address),
                hi=int(net.broadcast_address))


def content_bytes(s):
    out, hexmode, i = bytearray(), False, 0
    while i < len(s):
        ch = s[i]
        if ch == "|":
            hexmode = not hexmode
        elif hexmode:
            if ch != " ":
                out.append(int(s[i:i + 2], 16))
                i += 1
        elif ch == "\\":
            i += 1
            out.append(ord(s[i]))
        else:
            out.append(ord(ch))
        i += 1
    return bytes(out)


def split_options(body):
    opts, cur, quoted, i = [], "", False, 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and quoted:
            cur += body[i:i + 2]
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        if ch == ";" and not quoted:
            opts.append(cur.strip())
            cur = ""
        else:
            cur += ch
        i += 1
    return [o for o in opts if o]


class Rule:
    pass


def read_rules(path):
    variables, rules = {}, []
    lines = open(path).read().replace("\\\n", " ").splitlines()
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        words = line.split(None, 2)
        if words[0] in ("var", "ipvar", "portvar"):
            variables[words[1]] = words[2].strip()
            continue
        head, body = line.split("(", 1)
        body = body.rstrip()[:-1]
        h = split_top(head.strip(), " ")
        h = [w for w in h if w]
        r = Rule()
        r.action, r.proto = h[0], h[1]
        r.src = parse_spec(h[2], variables, False)
        r.sport = parse_spec(h[3], variables, True)
        r.bidir = h[4] == "<>"
        r.dst = parse_spec(h[5], variables, False)
        r.dport = parse_spec(h[6], variables, True)
        r.contents, r.pcres, r.dsize, r.flags = [], [], None, None
        r.msg, r.sid = "", None
        for opt in split_options(body):
            name, _, value = opt.partition(":")
            name, value = name.strip(), value.strip()
            if name == "sid":
                r.sid = int(value)
            elif name == "msg":
                r.msg = value[1:-1]
            elif name == "content":
                neg = value.startswith("!")
                value = value.lstrip("!").strip()
                r.contents.append({"bytes": content_bytes(value[1:-1]),
                                   "neg": neg, "nocase": False})
            elif name == "nocase":
                r.contents[-1]["nocase"] = True
            elif name in ("offset", "depth", "distance", "within"):
                r.contents[-1][name] = int(value)
            elif name == "pcre":
                neg = value.startswith("!")
                value = value.lstrip("!").strip()[1:-1]
                close = value.rfind("/")
                r.pcres.append((value[1:close], value[close + 1:], neg))
            elif name == "dsize":
                r.dsize = value
            elif name == "flags":
                r.flags = value
        rules.append(r)
    return rules


# --- matching ------------------------------------------------------------

def decode(frame):
    """The fields the IDS sees, or None if it does not inspect the frame."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[14] >> 4 != 4:
        return None
    ihl = (frame[14] & 15) * 4
    t = 14 + ihl
    if ihl < 20:
        return None
    end = min(14 + struct.unpack(">H", frame[16:18])[0], len(frame))
    if end < t or struct.unpack(">H", frame[20:22])[0] & 0x1FFF:
        return None
    p = {"proto": frame[23], "src": struct.unpack(">I", frame[26:30])[0],
         "dst": struct.unpack(">I", frame[30:34])[0], "sport": 0,
         "dport": 0, "flags": 0}
    if p["proto"] in (6, 17):
        if t + (20 if p["proto"] == 6 else 8) > end:
            return None
        p["sport"], p["dport"] = struct.unpack(">HH", frame[t:t + 4])
    if p["proto"] == 6:
        p["flags"] = frame[t + 13]
        off = (frame[t + 12] >> 4) * 4
        if off < 20 or t + off > end:
            return None
        t += off
    elif p["proto"] in (17, 1):
        if t + 8 > end:
            return None
        t += 8
    p["payload"] = bytes(frame[t:end])
    return p


FLAG_BITS = {c: 1 << i for i, c in enumerate("FSRPAUEC")}
FLAG_BITS.update({"1": 0x80, "2": 0x40})


def flags_match(spec, flags):
    bits_text, _, ignore_text = spec.partition(",")
    mode, bits = "=", 0
    for c in bits_text.strip():
        if c in "+*!":
            mode = c
        elif c != "0":
            bits |= FLAG_BITS[c]
    ignore = 0
    for c in ignore_text.strip():
        ignore |= FLAG_BITS[c]
    f = flags & ~ignore & 0xFF
    return {"=": f == bits, "+": f & bits == bits, "*": f & bits != 0,
            "!": f & bits == 0}[mode]


def dsize_match(spec, n):
    if "<>" in spec:
        lo, hi = spec.split("<>")
        return int(lo) <= n <= int(hi)
    if spec.startswith("<"):
        return n < int(spec[1:])
    if spec.startswith(">"):
        return n > int(spec[1:])
    return n == int(spec)


def contents_match(rule, payload):
    prev = 0
    for c in rule.contents:
        needle = c["bytes"]
        if "distance" in c or "within" in c:
            start = prev + c.get("distance", 0)
        else:
            start = c.get("offset", 0)
        if "within" in c:
            end = start + c["within"]
        elif "depth" in c:
            end = start + c["depth"]
        else:
            end = len(payload)
        start, end = max(start, 0), min(end, len(payload))
        found = -1
        if end - start >= len(needle):
            hay = payload[start:end]
            if c["nocase"]:
                hay, needle = hay.lower(), needle.lower()
            found = hay.find(needle)
        if c["neg"]:
            if found >= 0:
                return False
        else:
            if found < 0:
                return False
            prev = start + found + len(needle)
    return True


def pcre_match(pcres, payload):
    for pattern, flags, neg in pcres:
        f = 0
        f |= re.I if "i" in flags else 0
        f |= re.S if "s" in flags else 0
        f |= re.M if "m" in flags else 0
        f |= re.X if "x" in flags else 0
        rx = re.compile(pattern.encode("latin-1"), f)
        hit = (rx.match(payload) if "A" in flags else rx.search(payload))
        if (hit is not None) == neg:
            return False
    return True


PROTOS = {"tcp": 6, "udp": 17, "icmp": 1}


def rule_matches(r, p):
    if r.proto in PROTOS and p["proto"] != PROTOS[r.proto]:
        return False

    def header(s, d, sp, dp):
        return (r.src.match(s) and r.dst.match(d) and r.sport.match(sp)
                and r.dport.match(dp))
    if not (header(p["src"], p["dst"], p["sport"], p["dport"]) or
            (r.bidir and header(p["dst"], p["src"], p["dport"],
                                p["sport"]))):
        return False
    if r.dsize and not dsize_match(r.dsize, len(p["payload"])):
        return False
    if r.flags and not flags_match(r.flags, p["flags"]):
        return False
    return contents_match(r, p["payload"]) and pcre_match(r.pcres,
                                                          p["payload"])


def alerts(rules, frame):
    p = decode(frame)
    if p is None:
        return []
    hits = [r for r in rules if rule_matches(r, p)]
    if any(r.action == "pass" for r in hits):
        return []
    return [r.sid for r in hits]


# --- traces --------------------------------------------------------------

def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def frame(proto, src, dst, sport, dport, payload, flags=0x18, ttl=64):
    if proto == 6:
        l4 = struct.pack(">HHIIBBHHH", sport, dport, 1, 0, 5 << 4, flags,
                         8192, 0, 0)
    elif proto == 17:
        l4 = struct.pack(">HHHH", sport, dport, 8 + len(payload), 0)
    elif proto == 1:
        l4 = struct.pack(">BBHHH", 8, 0, 0, 1, 1)
    else:
        l4 = b""
    ip = struct.pack(">BBHHHBBHII", 0x45, 0, 20 + len(l4) + len(payload), 1,
                     0, ttl, proto, 0, src, dst)
    ip = ip[:10] + struct.pack(">H", checksum(ip)) + ip[12:]
    eth = b"\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\x08\x00"
    return eth + ip + l4 + payload


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1700000000 + i // 1000,
                                (i % 1000) * 1000, len(fr), len(fr)))
            f.write(fr)


def read_pcap(path):
    data = open(path, "rb").read()
    pos, frames = 24, []
    while pos + 16 <= len(data):
        _, _, caplen, _ = struct.unpack("<IIII", data[pos:pos + 16])
        frames.append(data[pos + 16:pos + 16 + caplen])
        pos += 16 + caplen
    return frames


def flip_case(b, rng):
    return bytes(c ^ 0x20 if 97 <= (c | 0x20) <= 122 and rng.random() < 0.5
                 else c for c in b)


def payload_for(rule, rng):
    """Contents placed at, just inside or just outside their windows."""
    buf = bytearray(rng.randbytes(rng.choice([0, rng.randint(0, 12)])))
    prev = 0
    for c in rule.contents:
        needle = c["bytes"]
        if c["nocase"] or rng.random() < 0.1:
            needle = flip_case(needle, rng)
        if c["neg"]:
            if rng.random() < 0.3:
                buf += needle
            continue
        jitter = rng.choice([-1, 0, 0, 0, 1, 2])
        if "distance" in c or "within" in c:
            base = prev + c.get("distance", 0)
            room = c.get("within", len(needle) + 4) - len(needle)
        else:
            base = c.get("offset", 0)
            room = c.get("depth", len(needle) + 8) - len(needle)
        at = base + rng.choice([0, max(room, 0), max(room, 0) // 2]) + jitter
        at = max(at, 0)
        while len(buf) < at:
            buf.append(rng.choice(b"abcxyz .0123"))
        if rng.random() < 0.1 and len(needle) > 2:
            # Split content: the two halves apart.
            cut = len(needle) // 2
            needle = needle[:cut] + b"|" + needle[cut:]
        buf[at:at + len(needle)] = needle
        prev = at + len(needle)
    for pattern, flags, neg in rule.pcres:
        if rng.random() < 0.3:
            buf[0:0] = b"user=" + flip_case(b"admin", rng)
        elif rng.random() < 0.6:
            buf += b" user=" + flip_case(b"admin", rng)
    buf += rng.randbytes(rng.choice([0, rng.randint(0, 6)]))
    if rule.dsize and rng.random() < 0.6:
        bound = int(re.findall(r"\d+", rule.dsize)[rng.randint(0, 1) if
                                                     "<>" in rule.dsize
                                                     else 0])
        size = max(bound + rng.choice([-1, 0, 1]), 0)
        buf = buf[:size] + bytes(max(size - len(buf), 0))
    return bytes(buf)


def flags_for(rule, rng):
    if not rule.flags or rng.random() < 0.5:
        return rng.choice([0x02, 0x12, 0x10, 0x18, 0x11, 0x04, 0xC2])
    bits = 0
    for c in rule.flags.partition(",")[0]:
        bits |= FLAG_BITS.get(c, 0)
    return bits ^ rng.choice([0, 0, 1 << rng.randint(0, 7)])


def pick(spec, rng):
    if spec.kind == "any":
        return rng.randint(1, 0xFFFFFFFF)
    samples = spec.samples()
    return rng.choice(samples) if samples else rng.randint(1, 0xFFFF)


def trace(rules, n, seed):
    rng = random.Random(seed)
    frames = []
    for i in range(n):
        r = rng.choice(rules)
        proto = PROTOS.get(r.proto, rng.choice([6, 17, 1, 47]))
        if rng.random() < 0.05:
            proto = rng.choice([6, 17, 1])
        src, dst = pick(r.src, rng), pick(r.dst, rng)
        sport, dport = pick(r.sport, rng) & 0xFFFF, pick(r.dport, rng) & 0xFFFF
        if r.bidir and rng.random() < 0.5:
            src, dst, sport, dport = dst, src, dport, sport
        flags = flags_for(r, rng)
        frames.append(frame(proto, src & 0xFFFFFFFF, dst & 0xFFFFFFFF,
                            sport, dport, payload_for(r, rng), flags))
    return frames


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rules")
    ap.add_argument("--trace")
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check", nargs=2, metavar=("TRACE", "ALERTS"))
    args = ap.parse_args()
    rules = read_rules(args.rules)
    if args.trace:
        write_pcap(args.trace, trace(rules, args.n, args.seed))
        return 0
    frames = read_pcap(args.check[0])
    expected = set()
    for i, fr in enumerate(frames):
        for sid in alerts(rules, fr):
            expected.add((i + 1, sid))
    got = set()
    for line in open(args.check[1]):
        a = json.loads(line)
        got.add((a["packet"], a["sid"]))
    for pkt, sid in sorted(expected - got):
        print("missing: packet %d sid %d" % (pkt, sid))
    for pkt, sid in sorted(got - expected):
        print("extra: packet %d sid %d" % (pkt, sid))
    sids = {sid for _, sid in expected}
    print("oracle: %d packets, %d alerts, %d of %d rules alerted, %s" % (
        len(frames), len(expected), len(sids),
        sum(r.action != "pass" for r in rules),
        "equal" if expected == got else "DIFFERENT"))
    return 0 if expected == got else 1


if __name__ == "__main__":
    sys.exit(main())
