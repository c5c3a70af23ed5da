"""netvm.onload: UDP sockets over the three designs. Each socket gets
exactly its datagrams, in order and byte for byte; every refused frame is
counted where its design refuses it; sent frames are identical across the
designs and carry checksums an independent sum accepts; the echo example
answers every datagram."""

import errno
import ipaddress
import os
import re
import struct
import subprocess
import sys

import pytest

from conftest import BUILD, EXAMPLES
from netvm import onload

DESIGNS = ["emu-nic", "softnic", "onloader"]
PORTS = [9000, 9001, 9002]


def ones_sum(data: bytes, start: int = 0) -> int:
    """The Internet checksum's folded one's-complement sum (RFC 1071),
    written here independently of the library."""
    if len(data) % 2:
        data += b"\0"
    total = start
    for i in range(0, len(data), 2):
        total += (data[i] << 8) | data[i + 1]
    while total > 0xffff:
        total = (total & 0xffff) + (total >> 16)
    return total


def traffic():
    """200 frames to ports 9000-9002 of varied sizes; every 11th has a bad
    checksum, every 13th is a fragment, every 17th goes to port 7 (unbound)
    (only one defect each). Returns the frames, the datagrams each port
    should get in order, and the counts of each defect."""
    frames, want = [], {p: [] for p in PORTS}
    bad = fragments = unbound = 0
    for i in range(200):
        port = PORTS[i % 3]
        src = (f"10.1.{i % 4}.{1 + i % 9}", 3000 + i)
        payload = bytes((i * 5 + k * 11) & 0xff
                        for k in range(1 + (i * 41) % 700))
        kind = {}
        if i % 11 == 4:
            kind, bad = {"bad_checksum": True}, bad + 1
        elif i % 13 == 7:
            kind, fragments = {"fragment": True}, fragments + 1
        elif i % 17 == 2:
            port, unbound = 7, unbound + 1
        else:
            want[port].append((payload, src))
        frames.append(onload.udp_frame(src, ("10.0.0.2", port), payload,
                                       **kind))
    return frames, want, bad, fragments, unbound


def test_every_socket_gets_exactly_its_datagrams():
    frames, want, bad, fragments, unbound = traffic()
    delivered = {}
    for design in DESIGNS:
        stack = onload.Stack(design)
        socks = [stack.bind(p) for p in PORTS]
        stack.feed(frames)
        got, calls, truncated = {}, 0, 0
        for sock in socks:
            # Port 9001 reads into 100 bytes: longer datagrams truncate.
            size = 100 if sock.port == 9001 else 2048
            got[sock.port] = []
            while True:
                calls += 1
                msg = sock.recvmsg(size)
                if msg is None:
                    break
                data, sender, length = msg
                got[sock.port].append((data, sender, length))
        for port in PORTS:
            size = 100 if port == 9001 else 2048
            expected = [(p[:size], s, len(p)) for p, s in want[port]]
            assert got[port] == expected, (design, port)
            truncated += sum(len(p) > size for p, _ in want[port])
        assert truncated > 0
        s = stack.stats()
        d = s["drops"]
        assert s["fed"] == len(frames)
        assert s["received"] == sum(len(w) for w in want.values())
        assert s["truncated"] == truncated
        assert s["would_block"] == 3 and s["queued"] == 0
        assert d["me_checksum"] + d["host_checksum"] == bad
        assert d["me_fragment"] + d["host_fragment"] == fragments
        assert d["me_no_socket"] + d["host_no_socket"] == unbound
        assert d["fabric"] == 0
        if design == "emu-nic":
            assert (d["host_checksum"], d["host_fragment"],
                    d["host_no_socket"]) == (bad, fragments, unbound)
        elif design == "softnic":
            assert (d["me_checksum"], d["host_fragment"],
                    d["host_no_socket"]) == (bad, fragments, unbound)
        else:
            assert (d["me_checksum"], d["me_fragment"],
                    d["me_no_socket"]) == (bad, fragments, unbound)
        # Per call: every recv() is a system call; the onloader maps the
        # buffer instead of copying.
        assert s["host"]["syscalls"] == calls
        if design == "onloader":
            assert s["host"]["copied_bytes"] == 0
            assert s["host"]["mappings"] == s["received"]
        else:
            assert s["host"]["copied_bytes"] >= s["received_bytes"]
        delivered[design] = got
    assert delivered["emu-nic"] == delivered["softnic"] == \
        delivered["onloader"]


def check_frame(frame: bytes) -> dict:
    """The fields of a transmitted frame, after checking its IP and UDP
    checksums and lengths independently."""
    ip, udp = frame[14:34], frame[34:]
    assert frame[12:14] == b"\x08\x00" and ip[0] == 0x45 and ip[9] == 17
    assert ones_sum(ip) == 0xffff, "IP header checksum"
    assert int.from_bytes(ip[2:4], "big") == 20 + len(udp)
    assert int.from_bytes(udp[4:6], "big") == len(udp)
    pseudo = ip[12:20] + bytes([0, 17]) + len(udp).to_bytes(2, "big")
    assert udp[6:8] != b"\0\0"
    assert ones_sum(pseudo + udp) == 0xffff, "UDP checksum"
    return {"src": (str(ipaddress.IPv4Address(ip[12:16])),
                    int.from_bytes(udp[0:2], "big")),
            "dst": (str(ipaddress.IPv4Address(ip[16:20])),
                    int.from_bytes(udp[2:4], "big")),
            "payload": udp[8:]}


def test_sent_frames_are_identical_and_correct():
    sends = []
    for i in range(36):
        dst = [("10.0.0.1", 5000), ("192.168.7.7", 53),
               ("172.16.0.9", 4444)][i % 3]
        payload = bytes((i * 3 + k) & 0xff for k in range((i * 97) % 1473))
        sends.append((PORTS[i % 2], dst, payload))
    out = {}
    for design in DESIGNS:
        stack = onload.Stack(design, address="192.0.2.5")
        socks = {p: stack.bind(p) for p in PORTS[:2]}
        for port, dst, payload in sends:
            socks[port].send(dst, payload)
        frames = stack.transmitted()
        assert len(frames) == len(sends)
        fields = sorted((f["src"], f["dst"], f["payload"])
                        for f in map(check_frame, frames))
        assert fields == sorted((("192.0.2.5", p), d, x)
                                for p, d, x in sends)
        s = stack.stats()
        assert s["sent"] == s["transmitted"] == len(sends)
        assert s["transmit_mismatches"] == 0
        assert s["host"]["syscalls"] == len(sends)
        out[design] = sorted(frames)
    assert out["emu-nic"] == out["softnic"] == out["onloader"]


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for i, frame in enumerate(frames):
            f.write(struct.pack("<IIII", i, 0, len(frame), len(frame)))
            f.write(frame)


def read_pcap(path):
    data = open(path, "rb").read()
    frames, at = [], 24
    while at < len(data):
        n = struct.unpack_from("<I", data, at + 8)[0]
        frames.append(data[at + 16:at + 16 + n])
        at += 16 + n
    return frames


def test_errors_are_clear_and_pcap_feeds(tmp_path):
    stack = onload.Stack("onloader")
    sock = stack.bind(9000)
    with pytest.raises(OSError) as e:
        stack.bind(9000)
    assert e.value.errno == errno.EADDRINUSE
    assert "already bound" in str(e.value)
    for port in (0, 65536, -1):
        with pytest.raises(ValueError, match="out of range"):
            stack.bind(port)
    with pytest.raises(ValueError, match="1472"):
        sock.send(("10.0.0.1", 5000), bytes(1473))
    with pytest.raises(OSError, match="nothing.pcap"):
        stack.feed(tmp_path / "nothing.pcap")
    with pytest.raises(ValueError, match="unknown design 'tcp'"):
        onload.Stack("tcp")
    with pytest.raises(ValueError, match="notification"):
        onload.Stack("softnic", notify="sometimes")
    for port in range(1, 256):
        stack.bind(10000 + port)
    with pytest.raises(OSError) as e:
        stack.bind(20000)
    assert e.value.errno == errno.ENOBUFS
    # A pcap file feeds the wire like bytes do.
    frames = [onload.udp_frame(("10.0.0.5", 1000 + i), ("10.0.0.2", 9000),
                               bytes([i]) * (10 + i)) for i in range(5)]
    write_pcap(tmp_path / "in.pcap", frames)
    stack.feed(tmp_path / "in.pcap")
    assert [sock.recv() for _ in range(6)] == \
        [bytes([i]) * (10 + i) for i in range(5)] + [None]


@pytest.mark.parametrize("design", DESIGNS)
def test_damaged_frames_are_counted_not_crashes(design):
    """Runts, an empty frame, ARP, IP options, a UDP length beyond the
    frame, a cut frame and one longer than the fabric's 2048 bytes: each
    is refused and counted (at the MEs for the onloader, at the host for
    the others), and the good ones around them still arrive."""
    stack = onload.Stack(design)
    sock = stack.bind(9000)
    good = onload.udp_frame(("10.0.0.9", 1234), ("10.0.0.2", 9000),
                            b"x" * 100)
    options = bytearray(good)
    options[14] = 0x46
    too_long = bytearray(good)
    too_long[38:40] = (2000).to_bytes(2, "big")
    arp = bytes(12) + b"\x08\x06" + bytes(28)
    stack.feed([b"", b"\x01" * 10, arp, bytes(options), bytes(too_long), good,
                b"\xff" * 3000, good[:50], good])
    got = []
    while (data := sock.recv()) is not None:
        got.append(data)
    assert got == [b"x" * 100] * 2
    s = stack.stats()
    where = "me" if design == "onloader" else "host"
    refused = {k: v for k, v in s["drops"].items() if v}
    assert refused == {f"{where}_not_udp": 5, f"{where}_malformed": 2}
    assert s["fed"] == 9 and s["received"] == 2


def test_echo_example(tmp_path):
    frames = [onload.udp_frame((f"10.9.0.{1 + i % 3}", 2000 + i),
                               ("10.0.0.2", 7 if i % 4 else 8),
                               f"ping {i} ".encode() * (1 + i % 9))
              for i in range(24)]
    write_pcap(tmp_path / "in.pcap", frames)
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    outputs = {}
    for design in DESIGNS:
        out = tmp_path / f"{design}.pcap"
        done = subprocess.run(
            [sys.executable, str(EXAMPLES / "onload" / "echo.py"),
             f"--design={design}", "--port=7", str(tmp_path / "in.pcap"),
             str(out)], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        assert f"{design}: echoed 18 datagrams, 18 frames left" in done.stdout
        clock = re.search(rf"{design}: clock (\d+) cycles; receive latency "
                          r"(\d+), send latency (\d+) cycles", done.stdout)
        assert clock and all(int(g) > 0 for g in clock.groups())
        echoed = [check_frame(f) for f in read_pcap(out)]
        expected = [(("10.0.0.2", 7), (f"10.9.0.{1 + i % 3}", 2000 + i),
                     f"ping {i} ".encode() * (1 + i % 9))
                    for i in range(24) if i % 4]
        assert sorted((f["src"], f["dst"], f["payload"]) for f in echoed) == \
            sorted(expected)
        outputs[design] = sorted(read_pcap(out))
    assert outputs["emu-nic"] == outputs["softnic"] == outputs["onloader"]


@pytest.mark.parametrize("design", DESIGNS)
def test_one_machine_for_the_session(design):
    """NP state carries over from call to call: the onloader MEs' count in
    the socket's control block and every design's drop counters accumulate
    over rounds of feeds and recvs, and the clock only moves on."""
    stack = onload.Stack(design)
    sock = stack.bind(9000)
    clock, received, k = stack.now, 0, 0
    for round_ in range(1, 4):
        want = []
        for i in range(round_):
            payload = bytes((k * 3 + b) & 0xff for b in range(10 + 40 * i))
            src = ("10.2.0.1", 6000 + k)
            k += 1
            want.append((payload, src))
            stack.feed(onload.udp_frame(src, ("10.0.0.2", 9000), payload))
        stack.feed(onload.udp_frame(("10.2.0.9", 1), ("10.0.0.2", 9000),
                                    b"bad", bad_checksum=True))
        for payload, src in want:
            assert sock.recvfrom(2048) == (payload, src)
            received += 1
            assert stack.now > clock
            clock = stack.now
        assert sock.recv() is None
        if design == "onloader":
            assert sock.np_count() == received
        else:
            with pytest.raises(ValueError):
                sock.np_count()
        st = stack.stats()
        where = "host_checksum" if design == "emu-nic" else "me_checksum"
        assert st["drops"][where] == round_
        assert st["cycles"] == stack.now


@pytest.mark.parametrize("design", DESIGNS)
def test_echo_round_trips_on_one_time_line(design):
    """A request fed, received, answered and flushed, five times with some
    think time between: each reply leaves after its request was fed and
    after the previous reply, byte for byte the request's payload."""
    stack = onload.Stack(design)
    sock = stack.bind(7)
    left_before, trips = 0, []
    for k in range(5):
        payload = f"round {k}".encode() * 8
        fed = stack.now
        assert fed >= left_before
        stack.feed(onload.udp_frame(("10.3.0.1", 2000 + k), ("10.0.0.2", 7),
                                    payload))
        data, sender = sock.recvfrom(2048)
        assert data == payload and sender == ("10.3.0.1", 2000 + k)
        sock.send(sender, data)
        stack.flush()
        left = stack.transmitted_at()[k]
        assert left > fed and left > left_before
        left_before = left
        trips.append(left - fed)
        frame = stack.transmitted()[k]
        assert frame[42:] == payload
        assert frame[34:36] == (7).to_bytes(2, "big")
        assert frame[36:38] == (2000 + k).to_bytes(2, "big")
        stack.compute(10_000)
    st = stack.stats()
    assert st["compute_cycles"] == 50_000
    assert 0 < st["receive_latency_cycles"] < sum(trips)
    with pytest.raises(ValueError):
        stack.compute(-1)
