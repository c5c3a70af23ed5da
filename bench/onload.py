#!/usr/bin/env python3
"""bench/onload.py - the onload layer's experiments, in one command.

Runs netvm-onload (UDP receive and send over the host/NP interface on the
ME emulator, docs/onload.md) for seed 001's three designs and seed 002's
interface features, and prints Markdown: receive and transmit throughput
and host cycles per datagram against datagram size, onloader over softnic, the
effect of each interface feature on small messages, polling against
interrupts, the user-buffer mapping cache, a per-stage latency breakdown
of one message at low load (wire to socket and back), drops above
saturation, echo servers over the socket API on one persistent machine
(round trips and bursts), TCP of established connections (receive and
send: the ME path against the host path, and with loss and reordering),
and the issue's targets marked met or missed.
Every figure is emulated (exact and repeatable), not timed. With --plot
DIR it draws DIR/onload.png.

Usage: bench/onload.py [--build build] [--count N] [--plot DIR]
Results: bench/README.md ("Onload layer (issue 17)").
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = [18, 64, 128, 256, 512, 1024, 1472]
DESIGNS = ["emu-nic", "softnic", "onloader"]


def run(tool, *args):
    out = subprocess.run([tool, *args], check=True, capture_output=True,
                         text=True).stdout
    r = json.loads(out)
    if r["faults"] or r["corrupted"] or r["duplicates"]:
        sys.exit(f"onload.py: {' '.join(args)}: faults, corrupted or "
                 f"duplicated datagrams: {out}")
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--plot", metavar="DIR")
    args = ap.parse_args()
    tool = os.path.join(args.build, "bin", "netvm-onload")
    n = str(args.count)
    targets = []
    big = SIZES[-1]

    # 1. Receive throughput and host cycles against size.
    rx = {d: {} for d in DESIGNS}
    for size in SIZES:
        for d in DESIGNS:
            r = run(tool, f"--design={d}", f"--payload={size}", f"--count={n}")
            if r["delivered"] != args.count or r["missing"]:
                sys.exit(f"onload.py: {d} {size}: lost datagrams below "
                         "saturation")
            rx[d][size] = r
    print("### Receive throughput against datagram size\n")
    print(f"{args.count} datagrams per run, lossless input (the fabric "
          "waits for buffers), 2 receiving MEs, one socket. Every run "
          "delivers every datagram, checked byte for byte (equal delivered "
          "bytes in all three designs).\n")
    print("| payload B | emu-nic kdgram/s | softnic kdgram/s | onloader "
          "kdgram/s | onloader Mbit/s | onloader / emu-nic | onloader / "
          "softnic | host cycles/dgram emu-nic | softnic | onloader |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for size in SIZES:
        e, s, o = (rx[d][size] for d in DESIGNS)
        assert e["delivered_bytes"] == s["delivered_bytes"] == \
            o["delivered_bytes"]
        print(f"| {size} | {e['datagrams_per_second'] / 1e3:.1f} | "
              f"{s['datagrams_per_second'] / 1e3:.1f} | "
              f"{o['datagrams_per_second'] / 1e3:.1f} | "
              f"{o['mbit_per_second']:.0f} | "
              f"{o['datagrams_per_second'] / e['datagrams_per_second']:.2f}x | "
              f"{o['datagrams_per_second'] / s['datagrams_per_second']:.2f}x | "
              f"{e['host']['cycles_per_datagram']:.0f} | "
              f"{s['host']['cycles_per_datagram']:.0f} | "
              f"{o['host']['cycles_per_datagram']:.0f} |")
    ratio = rx["onloader"][big]["datagrams_per_second"] / \
        rx["emu-nic"][big]["datagrams_per_second"]
    cyc = rx["onloader"][big]["host"]["cycles_per_datagram"] / \
        rx["emu-nic"][big]["host"]["cycles_per_datagram"]
    targets.append(("receive: onloader >= 5x emu-nic datagrams/s at "
                    f"{big} B (seed ~10x)", f"{ratio:.2f}x", ratio >= 5))
    targets.append(("receive: onloader host cycles/datagram <= 1/5 of "
                    f"emu-nic's at {big} B", f"1/{1 / cyc:.1f}", cyc <= 0.2))
    gains = [rx["onloader"][z]["datagrams_per_second"] /
             rx["softnic"][z]["datagrams_per_second"] for z in SIZES]
    targets.append(("onloader >= softnic at every size (seed: +40-100% on "
                    "small)", f"{min(gains):.2f}x-{max(gains):.2f}x "
                    f"(+{(gains[0] - 1) * 100:.0f}% at {SIZES[0]} B)",
                    min(gains) >= 1))

    # 1b. Transmit throughput against size.
    tx = {d: {} for d in DESIGNS}
    for size in SIZES:
        for d in DESIGNS:
            r = run(tool, "--direction=tx", f"--design={d}",
                    f"--payload={size}", f"--count={n}")
            if r["delivered"] != args.count or r["missing"]:
                sys.exit(f"onload.py: transmit {d} {size}: lost datagrams")
            tx[d][size] = r
    print("\n### Transmit throughput against datagram size\n")
    print(f"{args.count} datagrams per run from one socket as fast as the "
          "host sends them, 2 transmitting MEs; every frame that leaves is "
          "compared byte for byte with the frame the host's stack builds. "
          "DMA reads of host memory at 85 MB/s (seed 002's chipset).\n")
    print("| payload B | emu-nic kdgram/s | softnic kdgram/s | onloader "
          "kdgram/s | onloader / emu-nic | onloader / softnic | host "
          "cycles/dgram emu-nic | softnic | onloader |")
    print("|---|---|---|---|---|---|---|---|---|")
    for size in SIZES:
        e, s_, o = (tx[d][size] for d in DESIGNS)
        print(f"| {size} | {e['datagrams_per_second'] / 1e3:.1f} | "
              f"{s_['datagrams_per_second'] / 1e3:.1f} | "
              f"{o['datagrams_per_second'] / 1e3:.1f} | "
              f"{o['datagrams_per_second'] / e['datagrams_per_second']:.2f}x | "
              f"{o['datagrams_per_second'] / s_['datagrams_per_second']:.2f}x | "
              f"{e['host']['cycles_per_datagram']:.0f} | "
              f"{s_['host']['cycles_per_datagram']:.0f} | "
              f"{o['host']['cycles_per_datagram']:.0f} |")
    fast = {d: run(tool, "--direction=tx", f"--design={d}", f"--payload={big}",
                   f"--count={n}", "--dma-read-mbps=204")
            for d in DESIGNS}
    print(f"\nWith DMA reads as fast as writes (204 MB/s, "
          f"`--dma-read-mbps=204`), at {big} B: " + ", ".join(
              f"{d} {fast[d]['datagrams_per_second'] / 1e3:.1f}"
              for d in DESIGNS) + " kdgram/s.")
    txr = [tx["onloader"][z]["datagrams_per_second"] /
           tx["emu-nic"][z]["datagrams_per_second"] for z in SIZES]
    fr = fast["onloader"]["datagrams_per_second"] / \
        fast["emu-nic"]["datagrams_per_second"]
    targets.append((f"transmit: onloader >= 2x emu-nic (seed 3x), at {big} B",
                    f"{txr[-1]:.2f}x (85 MB/s DMA reads); {fr:.2f}x with "
                    f"204 MB/s; {min(txr):.2f}x-{max(txr):.2f}x over sizes",
                    txr[-1] >= 2))

    # 2. Interface features on small messages (seed 002): raw frames to a
    # user-level poller, so the interface is the bottleneck.
    print("\n### Interface features on small messages\n")
    print("The raw design (frames of 60 bytes to a user-level poller, no "
          "stack), polling; each row turns features off.\n")
    print("| configuration | kmsg/s | DMAs | TAIL updates | messages "
          "combined |")
    print("|---|---|---|---|---|")
    base = ["--design=raw", "--payload=18", f"--count={n}",
            "--notify=polling"]
    rows = [("all on", []),
            ("no pipelined DMA", ["--no-pipelined-dma"]),
            ("no adaptive updates", ["--no-adaptive-updates"]),
            ("no combining", ["--no-combining"]),
            ("no adaptive updates, no combining",
             ["--no-adaptive-updates", "--no-combining"]),
            ("all off", ["--no-pipelined-dma", "--no-adaptive-updates",
                         "--no-combining"])]
    feat = {}
    for name, extra in rows:
        r = run(tool, *base, *extra)
        feat[name] = r["datagrams_per_second"]
        print(f"| {name} | {r['datagrams_per_second'] / 1e3:.0f} | "
              f"{r['dma_transfers']} | {r['tail_updates']} | "
              f"{r['combined_messages']} |")
    ac = feat["all on"] / feat["no adaptive updates, no combining"]
    pd = feat["no adaptive updates, no combining"] / feat["all off"]
    targets.append(("adaptive HEAD/TAIL + combining >= 1.8x small-message "
                    "ring throughput (seed ~2x)", f"{ac:.2f}x", ac >= 1.8))
    targets.append(("pipelined DMA >= 1.4x (seed +50%), without the other "
                    "two", f"{pd:.2f}x", pd >= 1.4))

    # 3. Notification and the mapping cache.
    print("\n### Polling, interrupts, adaptive; the mapping cache\n")
    print("| design, payload | notify | kdgram/s | host cycles/dgram | "
          "interrupts | polls |")
    print("|---|---|---|---|---|---|")
    for d in ["softnic", "raw"]:
        for mode in ["interrupts", "adaptive", "polling"]:
            r = run(tool, f"--design={d}", "--payload=64", f"--count={n}",
                    f"--notify={mode}")
            print(f"| {d}, 64 B | {mode} | "
                  f"{r['datagrams_per_second'] / 1e3:.1f} | "
                  f"{r['host']['cycles_per_datagram']:.0f} | "
                  f"{r['host']['interrupts']} | {r['host']['polls']} |")
    cached = rx["onloader"][64]["datagrams_per_second"]
    r = run(tool, "--design=onloader", "--payload=64", f"--count={n}",
            "--no-mapping-cache")
    print(f"\nOnloader, 64 B: {cached / 1e3:.1f} kdgram/s with the user-"
          f"buffer mapping cache, {r['datagrams_per_second'] / 1e3:.1f} "
          f"without ({cached / r['datagrams_per_second']:.2f}x; seed 001: "
          "1.5x).")

    # 4. Latency of one message at low load (seed 002's Table II shape).
    print("\n### Latency of one message, wire to socket and back\n")
    print("Receive: 20 datagrams of 18 bytes at 10 Mbit/s (one at a time), "
          "the mean per stage; the stages start when the fabric's receive "
          "into DRAM completes. Send: one datagram of 18 bytes, from the "
          "call of send() to the frame leaving the fabric. Microseconds at "
          "the emulated 600 MHz.\n")
    lat = {d: run(tool, f"--design={d}", "--payload=18", "--count=20",
                  "--line-rate=0.01")["stages"] for d in DESIGNS}
    print("| stage | " + " | ".join(DESIGNS) + " |")
    print("|---|---|---|---|")
    for i, stage in enumerate(lat["softnic"]):
        print(f"| {stage['stage']} | " +
              " | ".join(f"{lat[d][i]['us']:.2f}" for d in DESIGNS) + " |")
    print("| receive total | " + " | ".join(
        f"{sum(s['us'] for s in lat[d]):.2f}" for d in DESIGNS) + " |")
    back = {d: run(tool, "--direction=tx", f"--design={d}", "--payload=18",
                   "--count=1")["stages"] for d in DESIGNS}
    for i, stage in enumerate(back["softnic"]):
        print(f"| send: {stage['stage']} | " +
              " | ".join(f"{back[d][i]['us']:.2f}" for d in DESIGNS) + " |")
    print("| send total | " + " | ".join(
        f"{sum(s['us'] for s in back[d]):.2f}" for d in DESIGNS) + " |")
    print("| **one way and back** | " + " | ".join(
        f"**{sum(s['us'] for s in lat[d] + back[d]):.2f}**"
        for d in DESIGNS) + " |")

    # 5. Saturation: drops counted at the fabric, nothing lost silently.
    print("\n### Above saturation\n")
    print("| design | payload | offered Gbit/s | delivered | dropped at the "
          "fabric | delivered + dropped = offered |")
    print("|---|---|---|---|---|---|")
    ok = True
    for d, rate in [("emu-nic", 0.1), ("emu-nic", 1.0), ("softnic", 1.0),
                    ("softnic", 3.0), ("onloader", 1.0), ("onloader", 3.0)]:
        r = run(tool, f"--design={d}", "--payload=1472", f"--count={n}",
                f"--line-rate={rate}")
        whole = r["delivered"] + r["drops"]["total"] == r["offered"]
        ok &= whole
        print(f"| {d} | 1472 | {rate} | {r['delivered']} | "
              f"{r['drops']['fabric']} | {'yes' if whole else 'NO'} |")
    targets.append(("no datagram lost or corrupted below saturation; every "
                    "drop counted above", "checked in every run", ok))

    # 6. A socket session: one machine for a program's whole life.
    session(args, rx)

    # 7. TCP of established connections: receive, then send.
    tcp(tool, args)
    tcp_send(tool, args)

    print("\n### Targets\n")
    print("| target | measured | |")
    print("|---|---|---|")
    for name, value, met in targets:
        print(f"| {name} | {value} | {'met' if met else 'missed'} |")

    if args.plot:
        plot(rx, tx, args.plot)
    return 0


def session(args, rx):
    """Echo servers through the socket API (netvm.onload), each stack one
    emulated machine: round trips one at a time, a burst echoed, and
    receive alone against netvm-onload's figure."""
    sys.path.insert(0, os.path.join(args.build, "python"))
    try:
        from netvm import onload
    except ImportError as e:
        print(f"\n(socket session skipped: {e})")
        return
    clock = 600e6
    print("\n### A socket session on one machine\n")
    print("Echo servers over the socket API (`netvm.onload`), each stack one "
          "emulated machine for its life; the clock runs across calls. "
          "Round trip: a request fed, `recv`, `send` back, `flush` until the "
          "reply left the fabric, 200 in a row (the next fed when the reply "
          "has left). Burst: "
          f"{args.count} requests fed at once, each received and answered "
          "in turn, then a flush. Receive: the same datagrams read one "
          "`recv` at a time, against `netvm-onload`'s receive run above "
          "(the same host work; the session's rate is over its whole "
          "clock). Payload 64 B, replies checked byte for byte.\n")
    print("| design | round trip us | round trips/s | host cycles per round "
          "trip | burst echoed kdgram/s | session receive kdgram/s | "
          "netvm-onload receive kdgram/s |")
    print("|---|---|---|---|---|---|---|")
    src, dst = ("10.0.0.1", 5000), ("10.0.0.2", 7)
    for d in DESIGNS:
        # Round trips, one at a time.
        st = onload.Stack(d)
        sock = st.bind(7)
        start, trips = st.now, 200
        for k in range(trips):
            payload = k.to_bytes(4, "big") + bytes(60)
            st.feed(onload.udp_frame(src, dst, payload))
            data, sender = sock.recvfrom(2048)
            sock.send(sender, data)
            st.flush()
            if st.transmitted()[-1][42:] != payload:
                sys.exit(f"onload.py: session {d}: a wrong reply")
        rt_cycles = st.now - start
        host = st.stats()["host"]["busy_cycles"]
        # A burst.
        st = onload.Stack(d)
        sock = st.bind(7)
        payloads = [k.to_bytes(4, "big") + bytes(60)
                    for k in range(args.count)]
        st.feed([onload.udp_frame(src, dst, p) for p in payloads])
        while (got := sock.recvfrom(2048)) is not None:
            sock.send(got[1], got[0])
        replies = st.transmitted()
        if sorted(f[42:] for f in replies) != sorted(payloads):
            sys.exit(f"onload.py: session {d}: burst replies differ")
        burst = args.count / (st.now / clock)
        # Receive alone.
        st = onload.Stack(d)
        sock = st.bind(9000)
        st.feed([onload.udp_frame(src, ("10.0.0.2", 9000), p)
                 for p in payloads])
        got = 0
        while sock.recv(2048) is not None:
            got += 1
        if got != args.count:
            sys.exit(f"onload.py: session {d}: lost datagrams")
        recv = got / (st.now / clock)
        print(f"| {d} | {rt_cycles / trips / clock * 1e6:.1f} | "
              f"{trips / (rt_cycles / clock) / 1e3:.1f} k | "
              f"{host / trips:.0f} | {burst / 1e3:.1f} | {recv / 1e3:.1f} | "
              f"{rx[d][64]['datagrams_per_second'] / 1e3:.1f} |")


def tcp(tool, args):
    """TCP receive of established connections (--protocol=tcp): in-order
    segments on the MEs (ACKs sent by them) against the same through the
    host path, and the MEs with loss and reordering; every run's bytes and
    ACK numbers are checked against the reference receiver (the tool
    fails on a mismatch)."""
    flows = 8
    per = max(1, args.count // flows)

    def go(*extra):
        out = subprocess.run(
            [tool, "--protocol=tcp", f"--flows={flows}", f"--count={per}",
             *extra], check=True, capture_output=True, text=True).stdout
        r = json.loads(out)
        if (r["streams_equal_reference"] != flows or r["acks_missing"]
                or r["acks_equal_reference"] != r["acks_checked"]):
            sys.exit(f"onload.py: tcp {' '.join(extra)}: differs from the "
                     f"reference: {out}")
        return r

    print("\n### TCP: receive of established connections\n")
    print(f"{flows} connections, {per} segments each, interleaved, lossless "
          "input, 2 receiving MEs. ME path: the MEs verify, deliver in-order "
          "segments and send the ACKs; host path: the MEs only move frames "
          "and the host does the whole receive (its ACKs counted, not "
          "sent). Bytes per socket and every ACK number equal the reference "
          "receiver's in every run.\n")
    print("| payload B | ME path kseg/s | host path kseg/s | ME / host | "
          "host cycles/seg ME path | host path |")
    print("|---|---|---|---|---|---|")
    for size in (64, 512, 1460):
        m = go(f"--payload={size}")
        h = go(f"--payload={size}", "--host-path")
        assert m["delivered_bytes"] == h["delivered_bytes"]
        print(f"| {size} | {m['segments_per_second'] / 1e3:.1f} | "
              f"{h['segments_per_second'] / 1e3:.1f} | "
              f"{m['segments_per_second'] / h['segments_per_second']:.2f}x | "
              f"{m['host_cycles_per_segment']:.0f} | "
              f"{h['host_cycles_per_segment']:.0f} |")
    print("\nWith loss and reordering (512 B, seed 1): from a hole on, a "
          "connection's segments go to the host until the host has filled "
          "it and handed rcv_nxt back, and what the MEs diverted since "
          "continues without a hole.\n")
    print("| loss, reorder | kseg/s | on the MEs | diverted to the host | "
          "on the MEs after a divert |")
    print("|---|---|---|---|---|")
    for p in (0.01, 0.02, 0.05, 0.1):
        r = go("--payload=512", f"--loss={p}", f"--reorder={p}")
        print(f"| {p:.2f}, {p:.2f} | {r['segments_per_second'] / 1e3:.1f} | "
              f"{r['me_segments']} | {r['diverted_segments']} | "
              f"{r['fast_after_divert']} |")


def tcp_send(tool, args):
    """TCP send of established connections (--protocol=tcp
    --direction=tx): the MEs build the segments and process the ACKs
    against the host path (the host builds every segment and parses every
    ACK, the MEs move frames); then with loss and reordering on the wire,
    the host recovering. Every run's peer byte streams equal what was sent
    and both ends agree it is all acknowledged (the tool fails
    otherwise)."""
    flows = 4
    per = max(1, args.count // flows)

    def go(*extra):
        cmd = [tool, "--protocol=tcp", "--direction=tx", f"--flows={flows}",
               f"--count={per}", *extra]
        done = subprocess.run(cmd, capture_output=True, text=True)
        r = json.loads(done.stdout)
        if (done.returncode or r["faults"] or r["bad_frames"]
                or r["streams_equal_sent"] != flows
                or r["connections_acked"] != flows):
            sys.exit(f"onload.py: tcp send {' '.join(extra)}: the peer's "
                     f"bytes differ from what was sent: {done.stdout}")
        return r

    print("\n### TCP send of established connections\n")
    print(f"{flows} connections, {per} MSS-sized segments each, sends of 8 "
          "MSS, at most 16 MSS unacknowledged, a wire of 2000 cycles each "
          "way, 2 receiving and 2 transmitting MEs. ME path: send() posts "
          "the user buffer (mapping cached), the NP side's DMA reads it an "
          "MSS at a time, the MEs build headers and checksum from the "
          "connection's state and advance snd_nxt, and process the peer's "
          "ACKs (snd_una, duplicates); host path: the host copies, builds "
          "and checksums every segment and parses every ACK, the MEs move "
          "frames. Throughput from the first send to the last ACK.\n")
    print("| MSS B | ME path kseg/s | Mbit/s | host path kseg/s | Mbit/s | "
          "ME / host | host cycles/seg ME path | host path |")
    print("|---|---|---|---|---|---|---|---|")
    for size in (64, 512, 1460):
        m = go(f"--payload={size}")
        h = go(f"--payload={size}", "--host-path")
        print(f"| {size} | {m['segments_per_second'] / 1e3:.1f} | "
              f"{m['mbit_per_second']:.0f} | "
              f"{h['segments_per_second'] / 1e3:.1f} | "
              f"{h['mbit_per_second']:.0f} | "
              f"{m['segments_per_second'] / h['segments_per_second']:.2f}x | "
              f"{m['host_cycles_per_segment']:.0f} | "
              f"{h['host_cycles_per_segment']:.0f} |")
    print("\nWith loss and reordering on the wire, both ways (1460 B, seed "
          "1; a reordered frame is held back 6000 cycles): the host "
          "retransmits with frames it builds, on the third duplicate ACK (one "
          "segment) or on a 200000-cycle timeout (doubling while nothing advances) (go-back-N from snd_una).\n")
    print("| loss, reorder | path | kseg/s | Mbit/s | retransmitted | "
          "timeouts | fast retransmits | dup ACKs on the MEs | "
          "host cycles/seg |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p in (0.01, 0.02, 0.05):
        for path in ("me", "host"):
            extra = ["--payload=1460", f"--loss={p}", f"--reorder={p}"]
            r = go(*extra, *(["--host-path"] if path == "host" else []))
            print(f"| {p:.2f}, {p:.2f} | {path} | "
                  f"{r['segments_per_second'] / 1e3:.1f} | "
                  f"{r['mbit_per_second']:.0f} | "
                  f"{r['retransmitted_segments']} | {r['timeouts']} | "
                  f"{r['fast_retransmits']} | "
                  f"{r['me_acks_duplicate'] if path == 'me' else '-'} | "
                  f"{r['host_cycles_per_segment']:.0f} |")


def plot(rx, tx, directory):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(directory, exist_ok=True)
    fig, (a, t, b) = plt.subplots(1, 3, figsize=(14, 3.6))
    for d in DESIGNS:
        a.plot(SIZES, [rx[d][z]["mbit_per_second"] for z in SIZES], "o-",
               label=d)
        t.plot(SIZES, [tx[d][z]["mbit_per_second"] for z in SIZES], "o-",
               label=d)
        b.plot(SIZES, [rx[d][z]["host"]["cycles_per_datagram"]
                       for z in SIZES], "o-", label=d + " receive")
        b.plot(SIZES, [tx[d][z]["host"]["cycles_per_datagram"]
                       for z in SIZES], "x--", label=d + " send")
    a.set_title("Receive throughput (emulated)")
    a.set_ylabel("payload (Mbit/s)")
    t.set_title("Transmit throughput (emulated)")
    t.set_ylabel("payload (Mbit/s)")
    b.set_ylabel("host cycles per datagram")
    b.set_yscale("log")
    b.set_title("Host work per datagram")
    for ax in (a, t, b):
        ax.set_xlabel("UDP payload (bytes)")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path = os.path.join(directory, "onload.png")
    fig.savefig(path, dpi=110)
    print(f"\n(plot: {os.path.relpath(path, ROOT)})")


if __name__ == "__main__":
    sys.exit(main())
