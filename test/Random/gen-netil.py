#!/usr/bin/env python3
"""Seeded generator of random, valid NetIL push handlers.

Each seed gives one NetPE (one push input 'in', two push outputs 'out1' and
'out2') whose push handler filters or rewrites packets with the constructs
the optimizer rewrites: packet loads of 8/16/32 bits at constant and
computed offsets (IPv4 header-length style, chains of +constants, offsets
from the end of the packet), arithmetic and bit operations with constants
and identities (*1, +0, &0xffffffff, shifts by 0, masks of masks), byte
swaps, comparisons and branches (constant conditions, jumps to jumps,
switches with constant selectors, duplicate targets or a single case),
redundant and adjacent loads, locals, stores and loads of data, info and
shared memory, copies, bounded and unbounded loops (so the watchdog
matters), modulo by zero, exit, early sends, duplicates and drops.

The code is generated structurally, keeping track of the stack depth, so it
passes the assembler's static checks by construction: every statement
leaves the stack as it found it, every expression pushes one word, and every
label is reached at one depth. Labels for shared exits ('send out1', 'ret',
...) and jump-to-jump trampolines go after the handler's last instruction.

Usage: gen-netil.py --seed N [-o FILE] [--size small|medium|large]
                    [--avoid CONSTRUCT]
The same seed (and options) always give the same program. run-random.py
runs the programs; reduce.py shrinks one that makes engines disagree.
"""
import argparse
import random
import sys

# Constants that packets of netvm-pcapgen traces contain (EtherTypes, IPv4
# version/IHL, protocols, ports, addresses) and the edges of 8/16/32 bits.
INTERESTING = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 14, 15, 16, 17, 20, 23, 24, 31, 32, 33,
    34, 47, 53, 58, 60, 63, 64, 80, 0x3F, 0x45, 0x46, 0x4F, 0x60, 0x7F, 0x80,
    0xC0, 0xF0, 0xFF, 0x100, 0x1FF, 0x800, 0x806, 0x8100, 0x86DD, 0x88A8,
    0x8847, 0x0FFF, 0x3FFF, 0x7FFF, 0x8000, 0xFF00, 0xFFFF, 0x10000,
    0x00FFFFFF, 0x0A000001, 0xC0A80001, 0x45000000, 0x7FFFFFFF, 0x80000000,
    0xFFFFFF00, 0xFFFF0000, 0xFFFFFFFE, 0xFFFFFFFF,
]
MASKS = [0x1, 0x3, 0x7, 0xF, 0x1F, 0x3F, 0x7F, 0xFF, 0xF0, 0xFF00, 0xFFFF,
         0x0FFF, 0x00FFFFFF, 0xFFFFFF00, 0xFFFF0000, 0x7FFFFFFF, 0xFFFFFFFF,
         0x80000000, 0x0F0F0F0F]
JCMP = ["eq", "neq", "g", "ge", "l", "le", "gts", "ges", "lts", "les"]
BINOPS = ["add", "sub", "mul", "and", "or", "xor", "shl", "shr", "ushr",
          "rol", "ror", "add.s", "add.u", "sub.s", "sub.u", "muls.ovf",
          "mul.ovf"]
UNOPS = ["neg", "not", "inc1", "dec1", "ieswap", "find.bit", "clz",
         "hash.32", "crc.calc 0", "crc.calc 1"]
PLOADS = [("upload.8", 1), ("spload.8", 1), ("upload.16", 2),
          ("spload.16", 2), ("spload.32", 4)]
MLOADS = [("umload.8", 1), ("smload.8", 1), ("umload.16", 2),
          ("smload.16", 2), ("umload.32", 4)]
ILOADS = [("uiload.8", 1), ("siload.8", 1), ("uiload.16", 2),
          ("siload.16", 2), ("siload.32", 4)]
SLOADS = [("usload.8", 1), ("ssload.8", 1), ("usload.16", 2),
          ("ssload.16", 2), ("ssload.32", 4)]
WIDTHS = [8, 16, 32]

# Constructs that trigger known bugs, which --avoid leaves out so that the
# search can go on (see the tests next to this file for their reproducers):
#   dup-case-target  a switch case whose value an earlier case already
#                    has, to another label (never taken)
AVOIDABLE = ["dup-case-target"]

SIZES = {"small": (25, 60), "medium": (60, 160), "large": (160, 400)}


class GenError(Exception):
    pass


class Gen:
    def __init__(self, seed, size=None, avoid=()):
        self.seed = seed
        self.avoid = set(avoid)
        self.r = r = random.Random(seed)
        if size is None:
            size = r.choices(["small", "medium", "large"], [3, 5, 2])[0]
        self.size = size
        lo, hi = SIZES[size]
        self.budget = r.randint(lo, hi)      # statements and expressions left
        self.lines = []
        self.depth = 1                       # the input port number
        self.reach = True
        self.nlabels = 0
        self.label_depth = {}
        self.stubs = {}                      # (instruction, depth) -> label
        self.tail = []                       # code after the last instruction
        self.loops = []                      # enclosing loops
        self.datamem = r.choice([0, 8, 16, 64, 64, 256])
        self.shared = r.choice([0, 0, 0, 16, 64])
        self.initdata = bytes(r.randrange(256) for _ in range(r.choice([0, 8, 24])))
        self.nlocals = r.randint(1, 5)       # general-purpose locals
        self.loop_nest = r.choice([0, 1, 2, 2])  # deepest loop nesting allowed
        self.in_handler_locals = self.nlocals + self.loop_nest * 2
        self.exbuf_ops = r.random() < 0.25
        self.senddup = r.random() < 0.2
        self.tramp_p = r.choice([0.0, 0.1, 0.3])

    # ------------------------------------------------------------ emission
    def emit(self, text, pops=0, pushes=0):
        if self.depth < pops:
            raise GenError(f"stack underflow at '{text}' (depth {self.depth})")
        self.lines.append("  " + text)
        self.depth += pushes - pops

    def label(self, prefix="L"):
        self.nlabels += 1
        return f"{prefix}{self.nlabels}"

    def note_target(self, label, depth):
        old = self.label_depth.setdefault(label, depth)
        if old != depth:
            raise GenError(f"label {label} at depths {old} and {depth}")

    def place(self, label):
        if self.reach:
            self.note_target(label, self.depth)
        elif label in self.label_depth:
            self.depth = self.label_depth[label]
            self.reach = True
        self.lines.append(f"{label}:")

    def target(self, label):
        """The label a branch should name: LABEL itself or a chain of
        trampolines (jumps to jumps) ending there."""
        self.note_target(label, self.depth)
        while self.r.random() < self.tramp_p:
            t = self.label("T")
            self.note_target(t, self.depth)
            self.tail.append(f"{t}:")
            self.tail.append(f"  jump{self.r.choice(['', '.w'])} {label}")
            label = t
        return label

    def branch(self, op, label, pops):
        """A conditional branch that pops POPS words first. LABEL may be a
        function that gives the label at the depth after the pops."""
        self.depth -= pops
        if self.depth < 0:
            raise GenError(f"stack underflow at '{op}'")
        if callable(label):
            label = label()
        self.lines.append(f"  {op} {self.target(label)}")

    def goto(self, label):
        self.lines.append(f"  jump{self.r.choice(['', '', '.w'])} {self.target(label)}")
        self.reach = False

    def stub(self, instr):
        """A shared exit after the handler's code at the current depth."""
        key = (instr, self.depth)
        if key not in self.stubs:
            lab = self.label("X")
            self.stubs[key] = lab
            self.note_target(lab, self.depth)
            self.tail.append(f"{lab}:")
            self.tail.append(f"  {instr}")
        return self.stubs[key]

    def spend(self, n=1):
        self.budget -= n
        return self.budget > 0

    # ----------------------------------------------------------- constants
    def const(self):
        r = self.r
        k = r.random()
        if k < 0.55:
            return r.choice(INTERESTING)
        if k < 0.8:
            return r.randrange(0, 64)
        if k < 0.95:
            return r.getrandbits(32)
        return -r.randrange(1, 300)           # negative literals

    def fmt(self, v):
        r = self.r
        if v < 0:
            return f"-{-v}" if r.random() < 0.8 else f"0 - {-v}"
        k = r.random()
        if k < 0.45:
            return str(v)
        if k < 0.9 or v > 0xFFFFFFFF:
            return hex(v)
        if k < 0.95 or v >= 0xA0000000:
            return ".".join(str((v >> s) & 0xFF) for s in (24, 16, 8, 0))
        # a colon quad must start with a digit to be read as a number
        return ":".join(f"{(v >> s) & 0xFF:02x}" for s in (24, 16, 8, 0))

    def push(self, v):
        r = self.r
        if v == 0 and r.random() < 0.3:
            self.emit("push_0", 0, 1)
        elif v == 1 and r.random() < 0.3:
            self.emit("push_1", 0, 1)
        elif v == 2 and r.random() < 0.3:
            self.emit("push_2", 0, 1)
        elif v in (-1, 0xFFFFFFFF) and r.random() < 0.4:
            self.emit("push__1", 0, 1)
        else:
            self.emit(f"push {self.fmt(v)}", 0, 1)

    # -------------------------------------------------------- expressions
    def offset(self, width, lvl):
        """Pushes a packet offset, usually small, sometimes computed in the
        ways protocol parsers compute them, sometimes out of range."""
        r = self.r
        k = r.randrange(100)
        if k < 35 or lvl <= 0:
            if r.random() < 0.96:
                self.push(r.choice([r.randrange(0, 40), r.randrange(0, 70),
                                    12, 14, 23, 26, 30, 34, 36]))
            else:
                self.push(r.choice([r.randrange(60, 1600), 9000, 65530,
                                    65535, 0xFFFFFFFF - r.randrange(4),
                                    0x80000000]))
        elif k < 50:
            # Ethernet + IPv4 header length + a constant: the transport header.
            base = r.choice([14, 14, 18, 0, 22])
            self.push(base)
            if r.random() < 0.5:
                self.emit("iplen", 1, 1)
            else:
                self.emit("upload.8", 1, 1)
                self.push(0xF)
                self.emit("and", 2, 1)
                if r.random() < 0.2:         # the mask of a mask
                    self.push(r.choice([0xFF, 0x3F, 0xFFFFFFFF]))
                    self.emit("and", 2, 1)
                self.push(2)
                self.emit("shl", 2, 1)
            self.push(base)
            self.emit("add", 2, 1)
            for _ in range(r.randrange(0, 3)):  # chains of +constant
                self.push(r.choice([0, 1, 2, 4, 8, 12, 20]))
                self.emit(r.choice(["add", "add", "add.u"]), 2, 1)
        elif k < 60:
            # From the end of the packet (wraps around on short ones).
            self.emit("pbl", 0, 1)
            w = width // 8
            self.push(r.choice([w, w, w + 1, w + 2, 14, 60, max(1, w - 1)]))
            self.emit("sub", 2, 1)
        elif k < 70:
            # A packet byte, masked, scaled, plus a constant.
            self.offset(1, lvl - 1)
            self.emit(r.choice(["upload.8", "upload.8", "upload.16"]), 1, 1)
            self.push(r.choice([0x3, 0x7, 0xF, 0x1F, 0x3F]))
            self.emit("and", 2, 1)
            if r.random() < 0.5:
                self.push(r.choice([1, 2, 4]))
                self.emit(r.choice(["mul", "shl"]), 2, 1)
            self.push(r.randrange(0, 40))
            self.emit("add", 2, 1)
        elif k < 80 and self.loops:
            # The loop counter of an enclosing loop.
            lp = r.choice(self.loops)
            self.emit(f"locload {lp['counter']}", 0, 1)
            self.push(r.randrange(0, 40))
            self.emit(r.choice(["add", "sub"]), 2, 1)
        elif k < 88:
            # A local: whatever it holds, masked.
            self.emit(f"locload {r.randrange(self.nlocals)}", 0, 1)
            self.push(r.choice([0x1F, 0x3F, 0x7F]))
            self.emit("and", 2, 1)
        elif k < 94:
            # An offset chain: constant + constant + ... (paper Fig. 5).
            self.push(r.randrange(0, 20))
            for _ in range(r.randrange(1, 4)):
                self.push(r.randrange(0, 20))
                self.emit("add", 2, 1)
        else:
            self.expr(lvl - 1)
            self.push(r.choice([64, 100, 1514]))
            self.emit("mod", 2, 1)

    def mem_offset(self, size, width, lvl):
        """Pushes an offset into a memory of SIZE bytes (data, shared).
        Constant offsets are in range (the assembler rejects constant
        accesses that always fail); computed ones need not be."""
        r = self.r
        w = width // 8
        if size >= w and r.random() < 0.6:
            self.push(r.choice([0, r.randrange(0, size - w + 1),
                                size - w]))
        elif r.random() < 0.5:
            self.expr(lvl - 1)
            self.push(r.choice([size - 1 if size else 0, 0x7, 0x3F, 0xFF]))
            self.emit("and", 2, 1)
        else:
            self.push(r.randrange(0, max(size, 1)))
            self.push(r.choice([0, 1, 2, 4]))
            self.emit("add", 2, 1)

    def info_offset(self, width, lvl):
        r = self.r
        if r.random() < 0.7:
            self.push(r.choice([0, 4, r.randrange(0, 64), 62, 60, 64, 100]))
        else:
            self.offset(width, lvl - 1)

    def pkt_load(self, lvl):
        op, w = self.r.choice(PLOADS)
        self.offset(8 * w, lvl)
        self.emit(op, 1, 1)

    def leaf(self):
        r = self.r
        k = r.randrange(100)
        if k < 30:
            self.push(self.const())
        elif k < 60:
            op, w = r.choice(PLOADS)
            self.push(r.choice([r.randrange(0, 40), 12, 14, 23, 26, 30, 34]))
            self.emit(op, 1, 1)
        elif k < 75:
            self.emit(f"locload {r.randrange(self.nlocals)}", 0, 1)
        elif k < 82:
            self.emit("pbl", 0, 1)
        elif k < 90 and self.datamem:
            op, w = r.choice(MLOADS)
            self.push(r.randrange(0, self.datamem - w + 1))
            self.emit(op, 1, 1)
        elif k < 95:
            op, w = r.choice(ILOADS)
            self.push(r.randrange(0, 64 - w + 1))
            self.emit(op, 1, 1)
        elif self.loops:
            self.emit(f"locload {r.choice(self.loops)['counter']}", 0, 1)
        else:
            self.push(self.const())

    def expr(self, lvl):
        """Emits code that pushes exactly one word."""
        r = self.r
        if lvl <= 0 or not self.spend():
            return self.leaf()
        choices = [
            (self.leaf, 12), (self.pkt_load, 18), (self.binop_const, 16),
            (self.binop, 8), (self.identity, 8), (self.chain, 6),
            (self.unop, 6), (self.byteswap, 4), (self.adjacent, 6),
            (self.store_load, 6),
            (self.redundant, 5), (self.cond_value, 5), (self.compare3, 3),
            (self.mem_load, 6), (self.info_load, 3), (self.packet_misc, 4),
            (self.hashing, 3), (self.bits, 4), (self.with_stmt, 3),
            (self.stack_games, 4), (self.modulo, 4), (self.oddities, 2),
        ]
        if self.shared:
            choices.append((self.shared_load, 2))
        f = r.choices([c[0] for c in choices], [c[1] for c in choices])[0]
        if f == self.leaf:
            return f()
        return f(lvl)

    def binop_const(self, lvl):
        r = self.r
        self.expr(lvl - 1)
        op = r.choice(BINOPS + ["and", "and", "or", "shl", "ushr"])
        if op in ("shl", "shr", "ushr", "rol", "ror"):
            self.push(r.choice([0, 1, 2, 4, 8, 16, 24, 31, 32, 33, 63]))
        elif op in ("and", "or", "xor"):
            self.push(r.choice(MASKS + [self.const()]))
        else:
            self.push(self.const())
        self.emit(op, 2, 1)

    def binop(self, lvl):
        r = self.r
        self.expr(lvl - 1)
        self.expr(lvl - 1)
        self.emit(r.choice(BINOPS + ["cmp", "cmp.s", "chksum.add",
                                     "chksum.sub", "mfind.bit"]), 2, 1)

    def identity(self, lvl):
        r = self.r
        self.expr(lvl - 1)
        k = r.randrange(12)
        if k == 0:
            self.push(1); self.emit("mul", 2, 1)
        elif k == 1:
            self.push(0); self.emit(r.choice(["add", "sub", "or", "xor"]), 2, 1)
        elif k == 2:
            self.push(0xFFFFFFFF); self.emit("and", 2, 1)
        elif k == 3:
            self.push(0); self.emit(r.choice(["shl", "shr", "ushr", "rol", "ror"]), 2, 1)
        elif k == 4:
            self.push(32); self.emit(r.choice(["shl", "ushr", "rol"]), 2, 1)
        elif k == 5:
            self.emit("dup", 1, 2); self.emit(r.choice(["xor", "sub", "and", "or"]), 2, 1)
        elif k == 6:
            self.emit("not", 1, 1); self.emit("not", 1, 1)
        elif k == 7:
            self.emit("neg", 1, 1); self.emit("neg", 1, 1)
        elif k == 8:
            self.emit("ieswap", 1, 1); self.emit("ieswap", 1, 1)
        elif k == 9:
            self.push(0); self.emit("mul", 2, 1)
        elif k == 10:
            self.push(1)
            self.emit("swap", 2, 2)
            self.emit("mul", 2, 1)
        else:
            self.push(0xFFFFFFFF); self.emit("xor", 2, 1)
            self.push(0xFFFFFFFF); self.emit("xor", 2, 1)

    def chain(self, lvl):
        """Masks of masks, +constant chains, shifts of shifts."""
        r = self.r
        self.expr(lvl - 1)
        kind = r.choice(["and", "add", "shift", "or"])
        for _ in range(r.randint(2, 4)):
            if kind == "and":
                self.push(r.choice(MASKS)); self.emit("and", 2, 1)
            elif kind == "add":
                self.push(r.choice([1, 2, 4, 14, 20, 0xFFFFFFFF, self.const()]))
                self.emit(r.choice(["add", "sub", "add"]), 2, 1)
            elif kind == "shift":
                self.push(r.choice([1, 2, 4, 8, 16]))
                self.emit(r.choice(["shl", "ushr", "shr"]), 2, 1)
            else:
                self.push(r.choice(MASKS)); self.emit(r.choice(["or", "xor"]), 2, 1)

    def unop(self, lvl):
        self.expr(lvl - 1)
        self.emit(self.r.choice(UNOPS), 1, 1)

    def byteswap(self, lvl):
        r = self.r
        k = r.randrange(4)
        if k == 0:
            self.expr(lvl - 1)
            self.emit("ieswap", 1, 1)
        elif k == 1:
            # the two bytes of a 16-bit value exchanged by hand
            self.expr(lvl - 1)
            self.emit("dup", 1, 2)
            self.push(8); self.emit("ushr", 2, 1)
            self.push(0xFF); self.emit("and", 2, 1)
            self.emit("swap", 2, 2)
            self.push(0xFF); self.emit("and", 2, 1)
            self.push(8); self.emit("shl", 2, 1)
            self.emit("or", 2, 1)
        elif k == 2:
            # a swapped load compared with a constant
            self.offset(16, lvl - 1)
            self.emit("upload.16", 1, 1)
            self.push(8); self.emit("rol", 2, 1)
            self.push(0xFFFF); self.emit("and", 2, 1)
        else:
            self.offset(32, lvl - 1)
            self.emit("spload.32", 1, 1)
            self.emit("ieswap", 1, 1)
            self.push(r.choice([0xFFFF, 0xFF, 0xFFFF0000]))
            self.emit("and", 2, 1)

    def mem_choice(self):
        """A memory for loads and stores: (letter, its loads, its size)."""
        opts = [("p", PLOADS, None)] * 3 + [("i", ILOADS, 64)]
        if self.datamem >= 4:
            opts += [("m", MLOADS, self.datamem)] * 2
        return self.r.choice(opts)

    def based(self, mem, size, span, lvl):
        """Pushes a computed base address for SPAN bytes into a local and
        returns the local."""
        r = self.r
        if mem == "p":
            self.offset(8, lvl - 1)
        else:
            self.mem_offset(size, 8 * min(span, 4), lvl - 1)
        t = r.randrange(self.nlocals)
        self.emit(f"locstore {t}", 1, 0)
        return t

    def address(self, mem, const_base, base, off):
        if const_base:
            self.push(base + off)
        else:
            # The local may hold a constant by now (statements inside
            # expressions write locals too): an addition keeps the
            # assembler's always-out-of-range check of constant data
            # addresses away.
            self.emit(f"locload {base}", 0, 1)
            if off or mem != "p" or self.r.random() < 0.3:
                self.push(off)
                self.emit("add", 2, 1)

    def adjacent(self, lvl):
        """Neighbouring loads (any widths, signed or not) combined into one
        value by hand, in big- or little-endian order."""
        r = self.r
        mem, loads, size = self.mem_choice()
        pieces, total = [], 0
        for _ in range(r.choice([2, 2, 3, 4])):
            op, w = loads[1 if r.random() < 0.15 else 0] if r.random() < 0.6 else r.choice(loads)
            if total + w > 4 and pieces:
                break
            pieces.append((op, w))
            total += w
        if size is not None and total > size:
            pieces, total = [loads[0], loads[0]], 2
        const_base = r.random() < 0.5
        if const_base:
            if mem == "p":
                base = r.choice([r.randrange(0, 40), 12, 14, 26, 30])
            else:
                base = r.randrange(0, size - total + 1)
        else:
            base = self.based(mem, size, total, lvl)
        little = r.random() < 0.3
        off = 0
        for i, (op, w) in enumerate(pieces):
            self.address(mem, const_base, base, off)
            self.emit(op, 1, 1)
            if r.random() < 0.2:
                self.push((1 << (8 * w)) - 1)
                self.emit("and", 2, 1)
            if i and little:
                self.push(8 * off); self.emit("shl", 2, 1)
                self.emit(r.choice(["or", "or", "add"]), 2, 1)
            elif i:
                self.emit("swap", 2, 2)
                self.push(8 * w); self.emit("shl", 2, 1)
                self.emit(r.choice(["or", "or", "add", "xor"]), 2, 1)
            off += w

    def store_load(self, lvl):
        """A store, then a load of the same memory at an overlapping or
        nearby address (store-to-load forwarding, aliasing)."""
        r = self.r
        mem, loads, size = self.mem_choice()
        wst = r.choice([1, 2, 4])
        op, wl = r.choice(loads)
        const_base = r.random() < 0.5
        if const_base:
            if mem == "p":
                o1 = r.choice([r.randrange(0, 40), 12, 14])
                o2 = max(0, o1 + r.randint(-3, 3))
            else:
                o1 = r.randrange(0, size - wst + 1)
                o2 = min(max(0, o1 + r.randint(-3, 3)), size - wl)
            base = 0
        else:
            base = self.based(mem, size, 8, lvl)
            o1, o2 = r.randrange(0, 5), r.randrange(0, 5)
        self.expr(lvl - 1)
        self.address(mem, const_base, base, o1)
        self.emit(f"{mem}store.{8 * wst}", 2, 0)
        k = r.randrange(6)
        if k == 0:
            self.store_stmt(lvl - 1, mem)
        elif k == 1 and self.senddup:
            self.emit(f"pkt.senddup {r.choice(['out1', 'out2'])}")
        elif k == 2:
            self.copy_stmt(lvl - 1)
        elif k == 3 and self.exbuf_ops:
            self.push(r.choice([0, 8, 16, 40, 64]))   # a new packet
            self.emit("exbuf.create", 1, 0)
        self.address(mem, const_base, base, o2)
        self.emit(op, 1, 1)

    def redundant(self, lvl):
        """The same load twice, perhaps with a store in between."""
        r = self.r
        op, w = r.choice(PLOADS + MLOADS if self.datamem else PLOADS)
        mem = "p" if op in dict(PLOADS) else "m"
        if r.random() < 0.5:
            o = r.choice([r.randrange(0, 40), 12, 14])
            if mem == "m":
                o = r.randrange(0, self.datamem - w + 1)
            self.push(o); self.emit(op, 1, 1)
            if r.random() < 0.4:
                self.store_stmt(lvl - 1, mem)
            self.push(o); self.emit(op, 1, 1)
        else:
            if mem == "p":
                self.offset(w * 8, lvl - 1)
            else:
                self.mem_offset(self.datamem, w * 8, lvl - 1)
            self.emit("dup", 1, 2)
            self.emit(op, 1, 1)
            self.emit("swap", 2, 2)
            if r.random() < 0.4:
                self.store_stmt(lvl - 1, mem)
            self.emit(op, 1, 1)
        self.emit(r.choice(["add", "xor", "sub", "or", "cmp"]), 2, 1)

    def cond_value(self, lvl):
        """cond ? a : b, the word carried on the stack into the merge."""
        other, end = self.label(), self.label()
        self.cond(other, lvl - 1)
        self.expr(lvl - 1)
        self.goto(end)
        self.place(other)
        self.expr(lvl - 1)
        self.place(end)

    def compare3(self, lvl):
        r = self.r
        k = r.randrange(3)
        if k == 2:
            self.push(r.choice(MASKS))
        self.expr(lvl - 1)
        if r.random() < 0.5:
            self.push(self.const())
        else:
            self.expr(lvl - 1)
        self.emit(["cmp", "cmp.s", "mcmp"][k], 3 if k == 2 else 2, 1)

    def mem_load(self, lvl):
        r = self.r
        op, w = r.choice(MLOADS)
        self.mem_offset(self.datamem, w * 8, lvl)
        self.emit(op, 1, 1)

    def info_load(self, lvl):
        op, w = self.r.choice(ILOADS)
        self.info_offset(w * 8, lvl)
        self.emit(op, 1, 1)

    def shared_load(self, lvl):
        op, w = self.r.choice(SLOADS)
        self.mem_offset(self.shared, w * 8, lvl)
        self.emit(op, 1, 1)

    def packet_misc(self, lvl):
        r = self.r
        k = r.randrange(6)
        if k == 0:
            self.offset(8, lvl - 1)
            self.emit("iplen", 1, 1)
        elif k == 1:
            self.emit("pbl", 0, 1)
        elif k == 2:
            self.offset(8, lvl - 1)
            self.push(r.choice([0x45, 0x0800, 0x0D0A, 0, self.const()]))
            self.emit(r.choice(["pscan.8", "pscan.16", "pscan.32"]), 2, 1)
        elif k == 3:
            self.offset(8, lvl - 1)
            self.push(r.choice([0, 1, 2, 8, 20, 21, 40]))
            self.emit("chksum.calc", 2, 1)
        elif k == 4:
            self.offset(8, lvl - 1)
            self.push(r.choice([0, 1, 4, 14, 20]))
            self.emit(f"crc.calcpkt {r.randrange(2)}", 2, 1)
        else:
            self.emit(r.choice(["tstamp_s", "tstamp_us", "rnd"]), 0, 1)

    def hashing(self, lvl):
        r = self.r
        n = r.randint(1, 3)
        for _ in range(n):
            self.expr(lvl - 1)
        if n == 1 and r.random() < 0.5:
            self.emit("hash.32", 1, 1)
        else:
            self.emit(f"hash {n}", n, 1)

    def bits(self, lvl):
        r = self.r
        self.expr(lvl - 1)
        k = r.randrange(4)
        if k == 0:
            self.push(r.choice([0, 1, 7, 15, 31, 32, 40]))
            self.emit(r.choice(["set.bit", "clear.bit", "flip.bit",
                                "test.bit", "testn.bit"]), 2, 1)
        elif k == 1:
            self.emit(r.choice(["find.bit", "clz"]), 1, 1)
        elif k == 2:
            n = r.randint(1, 3)
            for _ in range(n - 1):
                self.expr(lvl - 1)
            self.emit(f"xfind.bit {n}", n, n)
            for _ in range(n - 1):
                self.emit(r.choice(["add", "xor"]), 2, 1)
        else:
            self.expr(lvl - 1)
            self.push(r.choice(MASKS))
            self.emit("xmfind.bit 2", 3, 2)
            self.emit("sub", 2, 1)

    def with_stmt(self, lvl):
        """A word kept on the stack across a statement."""
        self.expr(lvl - 1)
        self.stmt(lvl - 1, can_end=False)
        if self.r.random() < 0.5:
            self.expr(lvl - 1)
            self.emit(self.r.choice(["add", "xor", "sub"]), 2, 1)

    def stack_games(self, lvl):
        r = self.r
        k = r.randrange(5)
        if k == 0:
            a, b = self.const(), self.const()
            self.emit(f"push2 {self.fmt(a)}, {self.fmt(b)}", 0, 2)
            self.emit(r.choice(BINOPS), 2, 1)
        elif k == 1:
            self.expr(lvl - 1)
            self.expr(lvl - 1)
            self.emit("swap", 2, 2)
            self.emit(r.choice(["sub", "shl", "ushr", "mod", "cmp"]), 2, 1)
        elif k == 2:
            n = r.randint(2, 4)
            for _ in range(n):
                self.expr(lvl - 1)
            self.emit(f"{r.choice(['inc', 'dec'])}{r.randint(1, n)}", n, n)
            self.emit(f"popi {n - 1}", n, 1)
        elif k == 3:
            self.expr(lvl - 1)
            self.emit("dup", 1, 2)
            self.expr(lvl - 1)
            self.emit("popi 2", 2, 0)
        else:
            self.expr(lvl - 1)
            self.emit("dup", 1, 2)
            self.emit("dup", 1, 2)
            self.emit(r.choice(["add", "mul"]), 2, 1)
            self.emit(r.choice(["xor", "sub"]), 2, 1)

    def modulo(self, lvl):
        r = self.r
        self.expr(lvl - 1)
        k = r.randrange(40)
        if k < 26:
            self.push(r.choice([1, 2, 3, 7, 8, 10, 16, 256, 0x10000,
                                0xFFFFFFFF, 0x80000000]))
        elif k < 39:
            self.expr(lvl - 1)               # may well be zero
        else:
            self.push(0)                     # always division_by_zero
        self.emit("mod", 2, 1)

    def oddities(self, lvl):
        r = self.r
        k = r.randrange(3)
        if k == 0:
            self.expr(lvl - 1)
            self.emit("dup", 1, 2)
            self.emit("sleep", 1, 0)
        elif k == 1:
            self.emit("rnd", 0, 1)
            self.emit("pop", 1, 0)
            self.expr(lvl - 1)
        else:
            self.expr(lvl - 1)
            self.emit(r.choice(["nop", "break"]))

    # --------------------------------------------------------- conditions
    def cond(self, label, lvl):
        """Branches to LABEL when a random condition holds; falls through
        otherwise. Leaves the stack as it found it."""
        r = self.r
        k = r.randrange(100)
        if k < 40:
            self.expr(lvl)
            if r.random() < 0.65:
                self.push(self.const())
            else:
                self.expr(lvl)
            if r.random() < 0.15:
                self.emit("swap", 2, 2)
            self.branch(f"jcmp.{r.choice(JCMP)}", label, 2)
        elif k < 55:
            # a masked field compared with a constant (header tests)
            op, w = r.choice(PLOADS)
            self.offset(w * 8, lvl - 1)
            self.emit(op, 1, 1)
            if r.random() < 0.5:
                self.push(r.choice(MASKS)); self.emit("and", 2, 1)
            self.push(r.choice(INTERESTING))
            self.branch(f"jcmp.{r.choice(['eq', 'neq', 'eq', 'g', 'l'])}", label, 2)
        elif k < 70:
            self.expr(lvl)
            self.branch(r.choice(["j.eq", "j.ne"]), label, 1)
        elif k < 80:
            # constant conditions
            if r.random() < 0.5:
                a = self.const()
                self.push(a)
                self.push(a if r.random() < 0.5 else self.const())
                self.branch(f"jcmp.{r.choice(JCMP)}", label, 2)
            else:
                self.push(r.choice([0, 1, 0xFFFFFFFF]))
                self.branch(r.choice(["j.eq", "j.ne"]), label, 1)
        elif k < 87:
            self.offset(8, lvl - 1)
            self.offset(8, lvl - 1)
            self.push(r.choice([0, 1, 2, 4, 6]))
            self.branch(f"jfield.{r.choice(['eq', 'ne', 'lt', 'gt'])}", label, 3)
        elif k < 92:
            self.push(r.choice([14, 0, 12]))
            self.push(r.choice([20, 4, 0, 2]))
            self.branch("chksum.jump", label, 2)
        else:
            self.expr(lvl)
            self.push(r.choice([0, 1, 3, 7, 15, 31, 32]))
            self.emit(r.choice(["test.bit", "testn.bit"]), 2, 1)
            self.branch(r.choice(["j.eq", "j.ne"]), label, 1)

    # --------------------------------------------------------- statements
    def terminator(self):
        r = self.r
        k = r.randrange(100)
        if k < 35:
            self.emit("pkt.send out1")
        elif k < 60:
            self.emit("pkt.send out2")
        elif k < 90:
            if self.depth == 0 or r.random() < 0.2:
                self.emit("ret")
            else:
                self.emit(f"popi {self.depth}", self.depth, 0)
                self.emit("ret")
        elif k < 95:
            self.emit(f"exit {r.randrange(4)}")
        else:
            self.goto(self.stub(r.choice(["pkt.send out1", "ret",
                                          "pkt.send out2"])))
        self.reach = False

    def block(self, lvl, can_end, n=None):
        r = self.r
        if n is None:
            n = r.randint(1, 4)
        for _ in range(n):
            if not self.reach or self.budget <= 0:
                break
            self.stmt(lvl, can_end)
        if self.reach and can_end and r.random() < 0.3:
            self.terminator()

    def stmt(self, lvl, can_end):
        r = self.r
        self.spend()
        if lvl <= 0:
            return self.simple_stmt(lvl)
        choices = [
            (self.simple_stmt, 30), (self.if_stmt, 18), (self.exit_if, 12),
            (self.header_stmt, 8), (self.guarded_loads, 6),
            (self.switch_stmt, 6), (self.loop_stmt, 9 if len(self.loops) < self.loop_nest else 0),
            (self.break_stmt, 5 if self.loops else 0), (self.jumps, 4),
        ]
        f = r.choices([c[0] for c in choices], [c[1] for c in choices])[0]
        if f in (self.if_stmt, self.switch_stmt, self.loop_stmt):
            return f(lvl, can_end)
        return f(lvl)

    def simple_stmt(self, lvl):
        r = self.r
        k = r.randrange(100)
        if k < 22:
            self.expr(lvl)
            self.emit(f"locstore {r.randrange(self.nlocals)}", 1, 0)
        elif k < 52:
            self.store_stmt(lvl, r.choice(["p", "p", "m", "m", "i", "s"]))
        elif k < 60:
            self.expr(lvl)
            self.emit("pop", 1, 0)
        elif k < 70:
            self.copy_stmt(lvl)
        elif k < 74:
            self.emit(r.choice(["nop", "info.clr", "break"]))
        elif k < 82 and self.senddup:
            self.emit(f"pkt.senddup {r.choice(['out1', 'out2'])}")
        elif k < 86 and self.exbuf_ops:
            if r.random() < 0.85:
                self.push(r.choice([0, 1, 14, 20, 34, 60, 64, 1514]))
                self.emit("exbuf.create", 1, 0)
            else:
                self.emit("exbuf.delete")
        else:
            self.expr(lvl)
            self.emit(f"locstore {r.randrange(self.nlocals)}", 1, 0)

    def store_stmt(self, lvl, mem):
        r = self.r
        if mem == "s" and not self.shared:
            mem = "p"
        if mem == "m" and not self.datamem and r.random() < 0.7:
            mem = "p"
        w = r.choice(WIDTHS)
        self.expr(lvl - 1)
        if mem == "p":
            self.offset(w, lvl - 1)
            self.emit(f"pstore.{w}", 2, 0)
        elif mem == "m":
            self.mem_offset(self.datamem, w, lvl - 1)
            self.emit(f"mstore.{w}", 2, 0)
        elif mem == "s":
            self.mem_offset(self.shared, w, lvl - 1)
            self.emit(f"sstore.{w}", 2, 0)
        else:
            self.info_offset(w, lvl - 1)
            self.emit(f"istore.{w}", 2, 0)

    def copy_stmt(self, lvl):
        r = self.r
        kinds = ["dpcopy", "pdcopy"]
        if self.initdata:
            kinds.append("ipcopy")
        if self.shared:
            kinds += ["spcopy", "pscopy", "dscopy", "sdcopy"]
        op = r.choice(kinds)
        sizes = {"d": self.datamem, "s": self.shared, "i": len(self.initdata)}
        length = r.choice([0, 1, 2, 4, 6, 8, 16])
        src, dst = op[0], op[1]
        const_ok = all(m == "p" or sizes[m] >= length for m in (src, dst))
        if const_ok and r.random() < 0.7:
            for m in (src, dst):
                if m == "p":
                    self.push(r.choice([0, 6, 12, 14, 26, r.randrange(0, 60)]))
                else:
                    self.push(r.randrange(0, sizes[m] - length + 1))
            self.push(length)
        else:
            for m in (src, dst):
                if m == "p":
                    self.offset(8, lvl - 1)
                else:
                    self.mem_offset(sizes[m], 8, lvl - 1)
            self.expr(lvl - 1)
            self.push(r.choice([0x7, 0xF, 0x1F]))
            self.emit("and", 2, 1)
        self.emit(op, 3, 0)

    def if_stmt(self, lvl, can_end):
        r = self.r
        els, end = self.label(), self.label()
        self.cond(els, lvl - 1)
        self.block(lvl - 1, can_end)
        has_else = r.random() < 0.6
        if self.reach and has_else:
            self.goto(end)
        self.place(els)
        if has_else:
            self.block(lvl - 1, can_end)
        self.place(end)

    def exit_if(self, lvl):
        """if (cond) send/drop/exit: a branch to a shared exit."""
        r = self.r
        instr = r.choice(["pkt.send out1", "pkt.send out2", "ret", "ret",
                          "pkt.send out2", "pkt.send out1", "ret",
                          f"exit {r.randrange(3)}"])
        if r.random() < 0.5:
            self.cond(self.stub(instr), lvl - 1)
        else:
            skip = self.label()
            self.cond(skip, lvl - 1)
            self.emit(instr)
            self.reach = False
            self.place(skip)

    def switch_stmt(self, lvl, can_end):
        r = self.r
        k = r.randrange(4)
        if k == 0:
            sel = self.const() if r.random() < 0.5 else r.randrange(0, 6)
            self.push(sel)                    # constant selector
            domain = [sel, 0, 1, 2, 3]
        elif k == 1:
            self.expr(lvl - 1)
            m = r.choice([1, 3, 7])
            self.push(m); self.emit("and", 2, 1)
            domain = list(range(m + 2))
        elif k == 2:
            self.push(r.choice([12, 14, 23, 36]))
            self.emit(r.choice(["upload.8", "upload.16"]), 1, 1)
            domain = [0x0800, 0x86DD, 0x0806, 0x8100, 6, 17, 1, 0x45, 0, 53]
        else:
            self.expr(lvl - 1)
            domain = [self.const() for _ in range(6)]
        self.depth -= 1
        narms = r.randint(1, 3)
        arms = [self.label() for _ in range(narms)]
        ncases = r.choice([0, 1, 1, 2, 3, 4, 6]) if narms > 1 else r.choice([0, 1, 2])
        cases = []
        for _ in range(ncases):
            v = r.choice(domain)
            if r.random() < 0.1 and cases:
                v = r.choice(cases)[0]        # duplicate value
            cases.append((v, r.choice(arms)))
        has_default = r.random() < 0.7
        default = self.label()
        end = self.label()
        self.lines.append(f"  switch {ncases}:")
        table, first = [], {}
        for v, a in cases:
            t = self.target(a)
            if "dup-case-target" in self.avoid:
                t = first.setdefault(v, t)   # a duplicate names the same label
            table.append(f"    {self.case_value(v)}: {t}")
        if has_default:
            table.insert(r.randrange(len(table) + 1),
                         f"    default: {self.target(default)}")
        self.lines += table
        if has_default:
            self.reach = False
        order = arms[:]
        r.shuffle(order)
        # the default arm first: it may be the fall-through
        for a in [default] + order:
            self.place(a)
            if not self.reach:
                continue
            self.block(lvl - 1, can_end, r.randint(0, 2))
            if self.reach:
                self.goto(end)
        self.place(end)

    def case_value(self, v):
        if v < 0:
            return f"-{-v}"
        return hex(v) if self.r.random() < 0.5 else str(v)

    def loop_stmt(self, lvl, can_end):
        r = self.r
        counter = self.nlocals + 2 * len(self.loops)
        head, done = self.label("H"), self.label("D")
        lp = {"counter": counter, "head": head, "done": done,
              "depth": self.depth}
        # the trip count: constant, from the packet, or from its length
        k = r.randrange(6)
        if k < 2:
            self.push(r.choice([0, 1, 2, 3, 5, 8, 13, 40]))
        elif k < 4:
            self.pkt_load(lvl - 1)
            self.push(r.choice([0x3, 0x7, 0xF, 0xFF]))
            self.emit("and", 2, 1)
        elif k < 5:
            self.emit("pbl", 0, 1)
        else:
            self.expr(lvl - 1)
        form = r.randrange(3)
        self.loops.append(lp)
        if form == 0:
            # while (c != 0) { c--; body }
            self.emit(f"locstore {counter}", 1, 0)
            self.place(head)
            self.emit(f"locload {counter}", 0, 1)
            self.branch("j.eq", done, 1)
            self.emit(f"locload {counter}", 0, 1)
            self.emit("dec1", 1, 1)
            self.emit(f"locstore {counter}", 1, 0)
            self.block(lvl - 1, can_end, r.randint(0, 3))
            if self.reach:
                self.goto(head)
        elif form == 1:
            # do { body } while (--c != 0): a zero count runs ~2^32 times
            self.emit(f"locstore {counter}", 1, 0)
            self.place(head)
            self.block(lvl - 1, can_end, r.randint(1, 3))
            if self.reach:
                self.emit(f"locload {counter}", 0, 1)
                self.emit("dec1", 1, 1)
                self.emit("dup", 1, 2)
                self.emit(f"locstore {counter}", 1, 0)
                self.branch("j.ne", head, 1)
        else:
            # for (i = 0; i < n; i++) { body }, n re-read on every test
            limit = counter + 1
            self.emit(f"locstore {limit}", 1, 0)
            self.push(0)
            self.emit(f"locstore {counter}", 1, 0)
            self.place(head)
            self.emit(f"locload {counter}", 0, 1)
            self.emit(f"locload {limit}", 0, 1)
            self.branch(r.choice(["jcmp.ge", "jcmp.ge", "jcmp.ges"]), done, 2)
            self.block(lvl - 1, can_end, r.randint(1, 3))
            if self.reach:
                self.emit(f"locload {counter}", 0, 1)
                self.emit("inc1", 1, 1)
                self.emit(f"locstore {counter}", 1, 0)
                self.goto(head)
        self.loops.pop()
        self.place(done)

    def header_stmt(self, lvl):
        """Parses a header at a computed base kept in a local: several
        loads at base + constant, tests between them, side effects (stores,
        sent copies) between the loads, as protocol parsers do."""
        r = self.r
        b = r.randrange(self.nlocals)
        self.offset(8, lvl - 1)
        self.emit(f"locstore {b}", 1, 0)
        for _ in range(r.randint(2, 5)):
            k = r.randrange(10)
            if k < 6:
                op, w = r.choice(PLOADS)
                self.emit(f"locload {b}", 0, 1)
                off = r.choice([0, 1, 2, 4, 6, 8, 9, 12, 13, 16, 20, 24, 40])
                if off or r.random() < 0.5:
                    self.push(off)
                    self.emit("add", 2, 1)
                self.emit(op, 1, 1)
                if k < 4:
                    if r.random() < 0.4:
                        self.push(r.choice(MASKS)); self.emit("and", 2, 1)
                    self.push(r.choice(INTERESTING))
                    instr = r.choice(["ret", "pkt.send out1", "pkt.send out2"])
                    self.branch(f"jcmp.{r.choice(JCMP)}", lambda: self.stub(instr), 2)
                else:
                    self.emit(f"locstore {r.randrange(self.nlocals)}", 1, 0)
            elif k < 8:
                self.store_stmt(lvl - 1, r.choice(["m", "i", "p"]))
            elif k < 9 and self.senddup:
                self.emit(f"pkt.senddup {r.choice(['out1', 'out2'])}")
            else:
                self.exit_if(lvl - 1)

    def guarded_loads(self, lvl):
        """if (pbl >= N) { loads below N (or just beyond it) }"""
        r = self.r
        n = r.choice([14, 20, 34, 38, 42, 54, 60, 64])
        skip = self.label()
        self.emit("pbl", 0, 1)
        self.push(n)
        if r.random() < 0.5:
            self.branch(r.choice(["jcmp.l", "jcmp.lts"]), skip, 2)
        else:
            self.emit("swap", 2, 2)
            self.branch("jcmp.g", skip, 2)
        for _ in range(r.randint(1, 4)):
            op, w = r.choice(PLOADS)
            self.push(r.choice([n - w, n - w, r.randrange(0, n - w + 1),
                                n - w + 1, n]))
            self.emit(op, 1, 1)
            if r.random() < 0.5:
                self.push(r.choice(INTERESTING))
                instr = r.choice(["ret", "pkt.send out2"])
                self.branch(f"jcmp.{r.choice(JCMP)}", lambda: self.stub(instr), 2)
            else:
                self.emit(f"locstore {r.randrange(self.nlocals)}", 1, 0)
            if r.random() < 0.3:
                self.store_stmt(lvl - 1, r.choice(["m", "i"]))
        self.place(skip)

    def break_stmt(self, lvl):
        r = self.r
        lp = r.choice(self.loops)
        if lp["depth"] != self.depth:
            return self.simple_stmt(lvl)
        self.cond(lp["done"] if r.random() < 0.7 else lp["head"], lvl - 1)

    def jumps(self, lvl):
        """Jumps to the next instruction, over dead code."""
        r = self.r
        nxt = self.label()
        self.goto(nxt)
        if r.random() < 0.5:
            self.lines.append(f"  push {r.randrange(100)}")   # unreachable
            self.lines.append("  pop")
        self.place(nxt)

    # ------------------------------------------------------------ program
    def program(self):
        r = self.r
        k = r.randrange(10)
        if k < 8:
            self.emit("pop", 1, 0)
        elif k < 9:
            self.emit("locstore 0", 1, 0)
        # else: the port number stays below everything
        while self.reach and self.budget > 0:
            self.stmt(r.choice([2, 3, 3, 4]), True)
        if self.reach:
            self.terminator()
        return self.render()

    def render(self):
        r = self.r
        out = [f"; gen-netil.py --seed {self.seed} ({self.size})"]
        meta = []
        if self.datamem or r.random() < 0.3:
            meta.append(f"  .datamem_size {self.datamem}")
        if meta:
            out += ["segment .metadata"] + meta + ["ends"]
        out += ["segment .ports", "  push_input in",
                "  push_output out1, out2", "ends"]
        if self.initdata:
            out += ["segment .data"]
            b = self.initdata
            out.append("  blob db " + ", ".join(hex(x) for x in b[:len(b) // 2]))
            if len(b) // 2 < len(b):
                out.append("  rest db " + ", ".join(str(x) for x in b[len(b) // 2:]))
            out.append("ends")
        init = []
        if self.shared:
            init.append(f"  set.share {self.shared}")
        if self.datamem and r.random() < 0.5:
            for _ in range(r.randint(1, 3)):
                w = r.choice(WIDTHS)
                init.append(f"  push {self.fmt(self.const())}")
                init.append(f"  push {r.randrange(0, self.datamem - w // 8 + 1)}")
                init.append(f"  mstore.{w}")
        if self.shared and r.random() < 0.5:
            init.append("  push 0x5A5A5A5A")
            init.append("  push 0")
            init.append("  sstore.32")
        if r.random() < 0.2:
            init += ["  rnd", "  pop"]
        if init:
            out += ["segment .init"] + init + ["  ret", "ends"]
        out += ["segment .push", f"  .locals {self.in_handler_locals}"]
        out += self.lines
        out += self.tail
        out.append("ends")
        return "\n".join(out) + "\n"


def generate(seed, size=None, avoid=()):
    return Gen(seed, size, avoid).program()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--size", choices=sorted(SIZES))
    ap.add_argument("--avoid", action="append", default=[], choices=AVOIDABLE,
                    help="leave out a construct that triggers a known bug")
    ap.add_argument("-o", "--output")
    args = ap.parse_args()
    text = generate(args.seed, args.size, args.avoid)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
