#!/usr/bin/env python3
"""Every bundled application, edge-case packets, sanitized runtime.

Compiles every application under examples/ (filters, NetIL programs,
.nvapp applications) and a set of NetPFL and tcpdump filters ahead of time
at -O0 and -O2, each twice:

  - `netc -c`: the object as users get it. ASan does not see inside its
    code, but the host puts every packet next to an inaccessible page, so
    an access past either end faults (and ASan reports the fault);
  - `netc -emit=llvm`, every function marked sanitize_address, through
    LLVM's ASan pass (`opt -passes=asan`, the LLVM netc is built on) and
    `llc`: the same code with ASan's checks on every load and store, which
    also catch accesses outside info, data and shared memory (heap blocks
    of the sanitized runtime);

links all of them into one C host (Inputs/host.c) built with
AddressSanitizer and UndefinedBehaviorSanitizer (no recovery) against the
sanitized runtime (libnetvm-rt-asan.a), and runs each over the packets of
edge_packets.py (zero-length, truncated, garbage and maximum-length
packets) through every way a host hands packets to generated code (see
host.c: one borrowed packet at a time next to an inaccessible page after
it or before it, copied pushes, batches fast and listened, a runner on two
threads).

The reference interpreter is the oracle (`netvm-run --interp --results`):
every per-packet mode must print exactly its lines (outputs with their
bytes and info memory, exceptions with their sites, drops, the final
memories) and the batch modes its totals. Fails on any sanitizer report
(or any other crash) and on any difference.

Usage: sanitizers.py --src DIR --build DIR --llvm-tools DIR --cc CC --work DIR
"""
import argparse
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import edge_packets  # noqa: E402

PFL_FILTERS = [
    "tcp.dport == 80 and ip.src == 10.1.1.1",
    "tcp in ip%2 or udp.dport == 4789",
    "ipv6 and udp",
    'payload.data contains "GET /"',
    'payload.data matches "^(get|post) /[a-z]"',
    "tcp extractfields(ip.src, tcp.dport)",
    "ip in any* in vlan or mpls",
]
PCAP_FILTERS = [
    "tcp port 80 or host 10.1.1.1",
    "vlan and vlan and udp",
    "mpls and ip or ip6 and udp port 53",
    "greater 1000 or less 20",
    "tcp[tcpflags] & tcp-syn != 0 or ip[0] & 0xf > 5",
    "arp or ip proto 47 or icmp or icmp6",
]
LEVELS = ["-O0", "-O2"]
# (tag, -O level, generated code instrumented by ASan)
BUILDS = [(level[1:], level, False) for level in LEVELS] + \
    [(level[1:] + "a", level, True) for level in LEVELS]
MODES = ["tail", "head", "copy", "runner", "batch", "listen"]
WATCHDOG = "1048576"  # host.c's WATCHDOG
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all",
            "-fno-omit-frame-pointer"]
ENV = dict(os.environ,
           ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:"
                        "detect_stack_use_after_return=1:exitcode=66",
           UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=67")


class Failure(Exception):
    pass


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise Failure(f"command failed ({p.returncode}): "
                      f"{' '.join(cmd)}\n{p.stderr}{p.stdout[-2000:]}")
    return p


def applications(src):
    """(name, netc/netvm-run arguments) of every application to test."""
    apps = []
    for pattern in ("examples/filters/*.netil", "examples/netil/*.netil",
                    "examples/apps/*.nvapp"):
        for path in sorted(glob.glob(os.path.join(src, pattern))):
            apps.append((os.path.relpath(path, os.path.join(src, "examples")),
                         [path]))
    apps += [(f"pfl '{f}'", ["--pfl", f]) for f in PFL_FILTERS]
    apps += [(f"pcap-filter '{f}'", ["--pcap-filter", f])
             for f in PCAP_FILTERS]
    return apps


def totals(lines, num_packets):
    """The totals host.c prints for a batch, from per-packet lines."""
    sinks, exceptions, memories = {}, {}, []
    dropped = unconnected = 0
    for line in lines:
        words = line.split(" ")
        if line.startswith("#"):
            if words[1] == "out":
                p, b = sinks.get(words[2], (0, 0))
                sinks[words[2]] = (p + 1, b + len(words[3]) // 2)
            elif words[1] == "exception":
                exceptions[words[2]] = exceptions.get(words[2], 0) + 1
            elif words[1] == "dropped":
                dropped += int(words[2])
            elif words[1] == "unconnected":
                unconnected += int(words[2])
        else:
            memories.append(line)
    out = [f"total sink {s} {p} {b}" for s, (p, b) in sorted(sinks.items())]
    out += [f"total exception {k} {n}" for k, n in sorted(exceptions.items())]
    out += [f"total dropped {dropped}", f"total unconnected {unconnected}",
            f"total packets {num_packets}"]
    return out + memories


def host_totals(lines):
    """host.c's totals, zero counts left out, sinks and kinds sorted."""
    sinks, exceptions, rest, memories = [], [], [], []
    for line in lines:
        words = line.split(" ")
        if words[0] != "total":
            if not line.startswith("#"):
                memories.append(line)
            continue
        if words[1] == "sink":
            if words[3] != "0":
                sinks.append(line)
        elif words[1] == "exception":
            if words[3] != "0":
                exceptions.append(line)
        else:
            rest.append(line)
    order = {"dropped": 0, "unconnected": 1, "packets": 2}
    rest.sort(key=lambda line: order[line.split(" ")[1]])
    return sorted(sinks) + sorted(exceptions) + rest + memories


def first_difference(expected, actual):
    for i in range(max(len(expected), len(actual))):
        e = expected[i] if i < len(expected) else "<end>"
        a = actual[i] if i < len(actual) else "<end>"
        if e != a:
            return (f"line {i + 1}:\n  interpreter: {e[:300]}\n"
                    f"  native:      {a[:300]}")
    return None


def instrument(ll_in, ll_out):
    """Mark every function defined in an LLVM IR file sanitize_address."""
    with open(ll_in) as f:
        text = f.read()
    text, count = re.subn(r"^(define [^\n]*?) ?\{$", r"\1 sanitize_address {",
                          text, flags=re.M)
    if not count:
        raise Failure(f"no function definition in {ll_in}")
    with open(ll_out, "w") as f:
        f.write(text)


def read_lines(path):
    with open(path) as f:
        return f.read().splitlines()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True, help="the netvm source tree")
    ap.add_argument("--build", required=True, help="the build tree")
    ap.add_argument("--llvm-tools", required=True,
                    help="the directory of LLVM's opt and llc")
    ap.add_argument("--cc", required=True, help="clang")
    ap.add_argument("--work", required=True, help="scratch directory")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    start = time.time()
    tools = os.path.join(args.build, "bin")
    netc = os.path.join(tools, "netc")
    netvm_run = os.path.join(tools, "netvm-run")
    opt = os.path.join(args.llvm_tools, "opt")
    llc = os.path.join(args.llvm_tools, "llc")
    runtime = os.path.join(args.build, "lib", "libnetvm-rt-asan.a")
    if not os.path.exists(runtime):
        sys.exit(f"sanitizers: {runtime} is missing "
                 "(ninja NetVMRuntimeSanitized)")
    os.makedirs(args.work, exist_ok=True)
    work = lambda name: os.path.join(args.work, name)  # noqa: E731

    packets = edge_packets.generate(args.seed)
    edge_packets.write_pcap(work("edge.pcap"), packets)
    edge_packets.write_pcap(work("flat.pcap"), packets, flat=True)
    empty = sum(1 for data, _, _ in packets if not data)
    short = sum(1 for data, wire, _ in packets if 0 < len(data) < wire)
    largest = max(len(data) for data, _, _ in packets)
    big = sum(1 for data, _, _ in packets if len(data) >= 65535)
    print(f"packets: {len(packets)} ({empty} zero-length, {short} truncated "
          f"captures, {big} of 65535 bytes or more, the largest "
          f"{largest} bytes)")

    apps = applications(args.src)
    pool = concurrent.futures.ThreadPoolExecutor(args.jobs)
    jobs = []
    table = []  # (host.c's name, descriptor symbol) of every object

    def compile_app(how, level, instrumented, symbol):
        if not instrumented:
            run([netc, *how, level, "-c", "-o", work(symbol + ".o"),
                 f"--descriptor={symbol}"])
            return
        run([netc, *how, level, "-emit=llvm", "-o", work(symbol + ".ll"),
             f"--descriptor={symbol}"])
        instrument(work(symbol + ".ll"), work(symbol + ".marked.ll"))
        run([opt, "-passes=asan", work(symbol + ".marked.ll"), "-o",
             work(symbol + ".bc")])
        run([llc, "-O0", "-filetype=obj", "-relocation-model=pic",
             work(symbol + ".bc"), "-o", work(symbol + ".o")])

    for i, (name, how) in enumerate(apps):
        for tag, level, instrumented in BUILDS:
            symbol = f"safety_{i}_{tag}"
            table.append((f"{i}-{tag}", symbol))
            jobs.append(pool.submit(compile_app, how, level, instrumented,
                                    symbol))
        for trace in ("edge", "flat"):
            def oracle(how=how, trace=trace, i=i):
                p = run([netvm_run, *how, "-r", work(trace + ".pcap"),
                         "--interp", "--results", "--watchdog", WATCHDOG])
                with open(work(f"oracle-{i}-{trace}.txt"), "w") as f:
                    f.write(p.stdout)
            jobs.append(pool.submit(oracle))
    for job in jobs:
        job.result()

    with open(work("apps.c"), "w") as f:
        f.write('#include "netvm/abi.h"\n#include <stddef.h>\n')
        for _, symbol in table:
            f.write(f"extern const netvm_app_desc {symbol};\n")
        f.write("const netvm_app_desc *const safety_apps[] = {\n")
        f.write("".join(f"  &{symbol},\n" for _, symbol in table))
        f.write("  NULL};\nconst char *const safety_app_names[] = {\n")
        f.write("".join(f'  "{key}",\n' for key, _ in table))
        f.write("  NULL};\n")
    host = work("host")
    run([args.cc, "-g", "-O1", *SANITIZE, "-std=c11", "-Wall",
         "-I", os.path.join(args.src, "runtime", "include"),
         os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs",
                      "host.c"),
         work("apps.c"), *[work(symbol + ".o") for _, symbol in table],
         runtime, "-lhs", "-lpthread", "-o", host])
    print(f"host: {len(table)} objects ({len(apps)} applications at "
          f"{' and '.join(LEVELS)}, as netc -c makes them and instrumented), "
          f"built with ASan and UBSan in {time.time() - start:.1f} s")

    def describe(stderr):
        """The packets that were running when a sanitizer stopped the host."""
        m = re.search(r"^host: application \S+, mode (\S+), packets "
                      r"(\d+)\.\.(\d+)$", stderr, re.M)
        if not m:
            return ""
        first, last = int(m.group(2)), int(m.group(3))
        lines = [f"  mode {m.group(1)}, packets {first}..{last} of "
                 f"{work('edge.pcap')} (seed {args.seed}):"]
        for n in range(max(first, 1), min(last, first + 7) + 1):
            data, wire, what = packets[n - 1]
            lines.append(f"  #{n}: {what} ({len(data)} bytes captured, "
                         f"{wire} on the wire)")
        return "\n".join(lines) + "\n"

    def check(i, name, tag):
        key = f"{i}-{tag}"
        prefix = work(f"out-{key}")
        p = subprocess.run([host, key, work("edge.pcap"), prefix],
                           capture_output=True, text=True, env=ENV)
        label = f"{name} -O{tag[1:2]}{' (instrumented)' if 'a' in tag else ''}"
        if p.returncode != 0 or p.stderr:
            return [f"{label}: SANITIZER REPORT or crash (exit "
                    f"{p.returncode}):\n{describe(p.stderr)}"
                    f"{p.stderr[-6000:]}"]
        edge = read_lines(work(f"oracle-{i}-edge.txt"))
        flat = read_lines(work(f"oracle-{i}-flat.txt"))
        problems = []
        expected = {"tail": edge, "head": edge, "runner": edge, "copy": flat,
                    "batch": totals(edge, len(packets)),
                    "listen": [line for line in edge
                               if line.split(" ")[1:2] == ["out"]] +
                    totals(edge, len(packets))}
        for mode in MODES:
            want = expected[mode]
            got = read_lines(f"{prefix}.{mode}")
            if mode == "batch":
                got = host_totals(got)
            elif mode == "listen":
                got = [line for line in got if line.startswith("#")] + \
                    host_totals(got)
            diff = first_difference(want, got)
            if diff:
                problems.append(f"{label}: {mode} DISAGREES with the "
                                f"interpreter at {diff}")
        if not problems:  # what agreed is not worth its space
            for mode in MODES:
                os.remove(f"{prefix}.{mode}")
        return problems

    checks = [(name, [pool.submit(check, i, name, tag)
                      for tag, _, _ in BUILDS])
              for i, (name, _) in enumerate(apps)]
    failures = 0
    for name, jobs in checks:
        problems = [p for job in jobs for p in job.result()]
        if problems:
            failures += 1
            print("\n".join(problems))
        else:
            print(f"{name}: {len(BUILDS)} builds x {len(MODES)} ways agree "
                  f"with the interpreter, no report")
    if not failures:
        for name in glob.glob(work("oracle-*.txt")) + \
                glob.glob(work("*.ll")) + glob.glob(work("*.bc")):
            os.remove(name)
    print(f"sanitizers: {len(apps)} applications x {len(BUILDS)} builds x "
          f"{len(MODES)} ways x {len(packets)} packets: {failures} failing, "
          f"{time.time() - start:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        sys.exit(f"sanitizers: {e}")
