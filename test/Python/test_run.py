"""Instance: single packets, batches, traces, the control plane, and the
errors a wrong argument raises."""

import re
import struct
import threading

import numpy as np
import pytest

import netvm
from conftest import EXAMPLES, INPUTS, run_tool

ETH_IPV4_TCP = bytes(12) + b"\x08\x00" + bytes(9) + b"\x06" + bytes(40)
ETH_IPV4_UDP = bytes(12) + b"\x08\x00" + bytes(9) + b"\x11" + bytes(40)


@pytest.fixture(scope="module")
def ip_tcp():
    return netvm.compile(EXAMPLES / "filters" / "ip-tcp.netil")


@pytest.fixture(scope="module")
def classify():
    return netvm.compile(EXAMPLES / "apps" / "classify.nvapp")


@pytest.fixture(scope="module")
def mark():
    return netvm.compile(INPUTS / "mark.netil")


@pytest.fixture(scope="module")
def tcp_filter():
    return netvm.compile("tcp", lang="pcap-filter")


def test_instance_names(classify):
    inst = classify.jit()
    assert inst.name == "classify"
    assert inst.sources == classify.sources
    assert inst.sinks == classify.sinks
    assert inst.pes == classify.pes
    assert inst.init_exceptions == []
    assert "classify" in repr(inst)


def test_run_output(ip_tcp):
    inst = ip_tcp.jit()
    r = inst.run(ETH_IPV4_TCP)
    assert r and r.verdict == "output"
    assert r.sink == "out" and r.sink_index == 0
    assert len(r.outputs) == 1
    out = r.outputs[0]
    assert isinstance(out, netvm.Output)
    assert out.sink == "out" and out.sink_index == 0
    assert out.data == ETH_IPV4_TCP
    assert len(out.info) == 64 and out.info == bytes(64)
    assert out.timestamp == (0, 0)
    assert r.exceptions == [] and r.dropped == 0 and r.unconnected == 0
    assert "out" in repr(r) and "64 bytes" in repr(out)


def test_run_drop(tcp_filter):
    r = tcp_filter.jit().run(ETH_IPV4_UDP)
    assert not r
    assert r.verdict == "drop" and r.dropped == 1
    assert r.sink is None and r.sink_index == -1 and r.outputs == []


def test_run_exception(ip_tcp):
    r = ip_tcp.jit().run(b"\x00" * 5)
    assert r.verdict == "exception" and not r
    (e,) = r.exceptions
    assert isinstance(e, netvm.PacketException)
    assert e.kind == "packet_bounds"
    assert netvm.EXCEPTION_KINDS[e.kind_index] == "packet_bounds"
    assert e.pe == "ip-tcp" and e.handler == "push"
    assert e.location.endswith("ip-tcp.netil:12:3")
    assert "packet_bounds" in repr(e)


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview,
                                  lambda b: np.frombuffer(b, np.uint8)])
def test_run_accepts_bytes_like(ip_tcp, wrap):
    assert ip_tcp.jit().run(wrap(ETH_IPV4_TCP)).sink == "out"


def test_run_port_by_name_and_timestamp(ip_tcp):
    r = ip_tcp.jit().run(ETH_IPV4_TCP, "in", seconds=7, microseconds=9)
    assert r.outputs[0].timestamp == (7, 9)


def test_run_wire_length(ip_tcp):
    inst = ip_tcp.jit()
    assert inst.run(ETH_IPV4_TCP, wire_length=1500).sink == "out"
    with pytest.raises(ValueError, match="wire_length"):
        inst.run(ETH_IPV4_TCP, wire_length=10)


def test_run_never_changes_the_callers_bytes(mark):
    inst = mark.jit()
    packet = bytearray(b"\x01\x02\x03")
    r = inst.run(packet)
    assert r.outputs[0].data == b"\xee\x02\x03"
    assert r.outputs[0].info[0] == 1
    assert packet == bytearray(b"\x01\x02\x03")


@pytest.mark.parametrize("packet,error", [
    ("abc", TypeError), (None, TypeError), (42, TypeError),
    ([1, 2], TypeError), (np.zeros((4, 4), np.uint8)[:, 1], TypeError),
])
def test_run_bad_packet(ip_tcp, packet, error):
    with pytest.raises(error, match="packet must be bytes"):
        ip_tcp.jit().run(packet)


@pytest.mark.parametrize("port,error,message", [
    (1, IndexError, "port 1 is out of range: the application has 1 source"),
    (-1, IndexError, "out of range"),
    ("eth0", ValueError, "no source 'eth0' \\(sources: in\\)"),
    (1.5, TypeError, "port must be an int or a name"),
    (True, TypeError, "port must be"),
    (None, TypeError, "port must be"),
    (2**70, OverflowError, None),
])
def test_run_bad_port(ip_tcp, port, error, message):
    with pytest.raises(error, match=message):
        ip_tcp.jit().run(ETH_IPV4_TCP, port)


def test_instances_have_private_memory(mark):
    a, b = mark.jit(), mark.jit()
    for _ in range(3):
        a.run(b"\x01")
    b.run(b"\x01")
    assert a.read_data(0, 4) == (3).to_bytes(4, "big")
    assert b.read_data(0, 4) == (1).to_bytes(4, "big")
    assert a.counters()["packets"] == 3 and b.counters()["packets"] == 1


def test_data_memory_views_and_copies(mark):
    inst = mark.jit()
    view = inst.data()
    assert view.dtype == np.uint8 and view.shape == (8,)
    inst.write_data(4, b"\x0a\x0b\x0c\x0d")
    assert bytes(view[4:]) == b"\x0a\x0b\x0c\x0d"
    view[4] = 0x1f
    assert inst.read_data(4, 1) == b"\x1f"
    inst.run(b"\x01")
    assert inst.read_shared() == b"\x1f\x0b\x0c\x0d"
    assert bytes(inst.shared()) == b"\x1f\x0b\x0c\x0d"
    inst.write_shared(0, np.array([1, 2], np.uint8))
    assert inst.read_shared(0, 2) == b"\x01\x02"
    assert inst.read_data(pe="mark") == inst.read_data(pe=0)
    assert inst.read_data(8) == b""
    # The view keeps the instance alive.
    del inst
    assert view[4] == 0x1f


@pytest.mark.parametrize("call,error", [
    (lambda i: i.read_data(4, 5), IndexError),
    (lambda i: i.read_data(9), IndexError),
    (lambda i: i.write_data(6, b"abc"), IndexError),
    (lambda i: i.write_data(0, "abc"), TypeError),
    (lambda i: i.read_data(pe=1), IndexError),
    (lambda i: i.read_data(pe="nope"), ValueError),
    (lambda i: i.data(3), IndexError),
    (lambda i: i.read_shared(2, 3), IndexError),
    (lambda i: i.write_shared(4, b"x"), IndexError),
])
def test_control_plane_errors(mark, call, error):
    with pytest.raises(error):
        call(mark.jit())


def test_counters(classify, mixed):
    inst = classify.jit()
    counts = inst.run_pcap(mixed)
    c = inst.counters()
    assert c["packets"] == 400
    assert c["dropped"] == 0 and c["unconnected"] == 0
    assert c["exceptions"] == {}
    assert {k: v["packets"] for k, v in c["sinks"].items()} == counts
    assert c["pes"]["classify"] == {"runs": 400, "sent": 400, "dropped": 0,
                                    "exceptions": 0}
    assert c["pes"]["ipv4"]["runs"] == counts["tcp"] + counts["udp"] + \
        counts["icmp"] + counts["other_ip"] + counts["bad_ip"]


def test_exception_counters(ip_tcp):
    inst = ip_tcp.jit()
    inst.run(b"\x00")
    c = inst.counters()
    assert c["exceptions"] == {"packet_bounds": 1}
    assert c["pes"]["ip-tcp"]["exceptions"] == 1


def test_run_pcap(classify, mixed):
    inst = classify.jit()
    counts = inst.run_pcap(mixed)
    assert counts == {"tcp": 123, "udp": 112, "icmp": 46, "other_ip": 11,
                      "bad_ip": 4, "ipv6": 50, "arp": 31, "other": 23}
    # A second run counts only its own packets; limit stops early.
    assert inst.run_pcap(str(mixed)) == counts
    assert sum(inst.run_pcap(mixed, limit=10).values()) == 10
    assert inst.counters()["packets"] == 810


def test_run_pcap_errors(ip_tcp, tmp_path):
    inst = ip_tcp.jit()
    with pytest.raises(FileNotFoundError):
        inst.run_pcap(tmp_path / "none.pcap")
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"not a capture at all, really")
    with pytest.raises(OSError):
        inst.run_pcap(junk)
    with pytest.raises(IndexError):
        inst.run_pcap(junk, port=2)
    # A Linux "cooked" capture is no Ethernet: refused by name, not run to
    # no matches.
    sll = tmp_path / "sll.pcap"
    sll.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 113)
                    + struct.pack("<IIII", 0, 0, 20, 20) + bytes(20))
    with pytest.raises(OSError, match=r"link type LINUX_SLL \(113\)"):
        inst.run_pcap(sll)


def test_batch_equals_single(classify, trace):
    packets = netvm.read_pcap(trace)
    batch = classify.jit().run_batch(packets)
    assert isinstance(batch, netvm.BatchResult)
    assert len(batch) == len(packets)
    assert batch.sink.dtype == np.int32 and batch.outputs.dtype == np.uint32
    assert batch.exception.dtype == np.int32
    assert batch.sinks == classify.sinks
    single = classify.jit()
    for i, p in enumerate(packets):
        r = single.run(p)
        assert batch.sink[i] == r.sink_index
        assert batch.outputs[i] == len(r.outputs)
        assert batch.exception[i] == \
            (r.exceptions[0].kind_index if r.exceptions else -1)
    # And both equal the counted run over the trace.
    assert batch.counts() == classify.jit().run_pcap(trace)


def test_batch_buffer_and_offsets(mark, trace):
    packets = netvm.read_pcap(trace)[:500] + [b""]
    buffer, offsets = netvm.pack(packets)
    before = buffer.copy()
    inst = mark.jit()
    from_buffer = inst.run_batch(buffer, offsets)
    from_list = mark.jit().run_batch(packets)
    for name in ("sink", "outputs", "exception"):
        assert np.array_equal(getattr(from_buffer, name),
                              getattr(from_list, name))
    assert from_buffer.exception[-1] == \
        netvm.EXCEPTION_KINDS.index("packet_bounds")
    # The application wrote into its copies, not into the caller's buffer.
    assert np.array_equal(buffer, before)
    # Offsets as a list, and a batch starting inside the buffer.
    part = inst.run_batch(bytes(buffer), list(offsets[100:201]))
    assert np.array_equal(part.sink, from_list.sink[100:200])
    assert inst.read_data(0, 4) == (601).to_bytes(4, "big")


def test_batch_empty(ip_tcp):
    inst = ip_tcp.jit()
    assert len(inst.run_batch([])) == 0
    assert len(inst.run_batch(np.zeros(0, np.uint8), [0])) == 0
    assert inst.run_batch([]).counts() == {"out": 0}


@pytest.mark.parametrize("args,error,message", [
    ((b"abc",), TypeError, "sequence of packets"),
    (("abc",), TypeError, "sequence of packets"),
    ((42,), TypeError, "sequence of packets"),
    (([b"ok", "no"],), TypeError, "every packet must be bytes"),
    ((b"abcd", [0, 3, 2]), ValueError, "must not decrease"),
    ((b"abcd", [0, 5]), ValueError, "within the packet buffer"),
    ((b"abcd", [-1, 2]), ValueError, "within the packet buffer"),
    ((b"abcd", []), ValueError, "one entry more"),
    (("abcd", [0, 2]), TypeError, "packet buffer must be bytes"),
    (([b"x"], None, 5), IndexError, "port 5"),
])
def test_batch_errors(ip_tcp, args, error, message):
    with pytest.raises(error, match=message):
        ip_tcp.jit().run_batch(*args)


def test_batches_on_threads(ip_tcp, trace):
    """run_batch releases the GIL: instances on several threads agree."""
    packets = netvm.read_pcap(trace)
    expected = ip_tcp.jit().run_batch(packets).sink
    results = [None] * 4

    def work(i):
        results[i] = ip_tcp.jit().run_batch(packets).sink

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.array_equal(r, expected) for r in results)


def test_one_instance_two_threads_is_refused(ip_tcp):
    """Only one thread at a time may run packets through an instance; the
    other gets an error instead of a data race."""
    inst = ip_tcp.jit()
    packets = [ETH_IPV4_TCP] * 200000
    errors = []
    started = threading.Event()

    def work():
        started.set()
        try:
            inst.run_batch(packets)
        except RuntimeError as e:
            errors.append(e)

    t = threading.Thread(target=work)
    t.start()
    started.wait()
    refused = 0
    for _ in range(2000):
        try:
            inst.run(ETH_IPV4_TCP)
        except RuntimeError as e:
            assert "another thread" in str(e)
            refused += 1
    t.join()
    # Every packet that was not refused ran, once.
    ran = (2000 - refused) + (0 if errors else len(packets))
    assert inst.counters()["packets"] == ran


def test_read_pcap_and_pack(mixed, tmp_path):
    packets = netvm.read_pcap(mixed)
    assert len(packets) == 400 and all(isinstance(p, bytes) for p in packets)
    buffer, offsets = netvm.pack(packets[:3])
    assert buffer.dtype == np.uint8 and offsets.dtype == np.int64
    assert list(offsets) == [0, len(packets[0]),
                             len(packets[0]) + len(packets[1]),
                             sum(map(len, packets[:3]))]
    detailed = netvm.read_pcap(mixed, details=True)
    assert [p.data for p in detailed] == packets
    assert all(p.wire_length >= len(p.data) for p in detailed)
    assert detailed[0].seconds > 0
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"\x00" * 30)
    with pytest.raises(ValueError, match="not a pcap file"):
        netvm.read_pcap(bad)


def test_read_pcap_truncated(mixed, tmp_path, ip_tcp):
    # A file cut inside a record's bytes or its header raises, as run_pcap
    # does, instead of returning the packets before the cut silently.
    data = open(mixed, "rb").read()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:300])
    with pytest.raises(OSError, match="truncated dump file; tried to read "
                       r"\d+ captured bytes, only got \d+"):
        netvm.read_pcap(cut)
    inst = netvm.Instance(ip_tcp)
    with pytest.raises(OSError, match="truncated dump file"):
        inst.run_pcap(cut)
    first = 24 + 16 + int.from_bytes(data[32:36], "little")
    cut.write_bytes(data[:first + 7])
    with pytest.raises(OSError, match="tried to read 16 header bytes, "
                       "only got 7"):
        netvm.read_pcap(cut)


def test_exception_kinds():
    assert netvm.EXCEPTION_KINDS[0] == "packet_bounds"
    assert "watchdog" in netvm.EXCEPTION_KINDS
    assert len(netvm.EXCEPTION_KINDS) == 10


def test_watchdog():
    loop = """
segment .ports
  push_input in
  push_output out
ends
segment .push
  pop
top:
  jump top
ends
"""
    app = netvm.compile(loop, name="spin")
    r = app.jit(watchdog=1000).run(b"x")
    assert [e.kind for e in r.exceptions] == ["watchdog"]
    with pytest.raises(ValueError):
        app.jit(watchdog=-1)


@pytest.mark.parametrize("link", ["LINUX_SLL", "LINUX_SLL2", "RAW", "NULL"])
def test_pcap_filter_link_types(tmp_path, link):
    """A tcpdump expression compiled for a capture's link type (from the
    file, as netvm-run -r does) counts what netvm-run counts on it; an
    Ethernet application refuses the trace by name."""
    path = tmp_path / f"{link}.pcap"
    run_tool("netvm-pcapgen", "-n", 500, "--seed", 4, "--link-type", link,
             "-o", path)
    assert netvm.pcap_link_type(path) == netvm.LINK_TYPES[link]
    expression = "tcp port 80 or ip6"
    app = netvm.compile(expression, lang="pcap-filter", link_type=path)
    counts = app.jit().run_pcap(path)
    summary = run_tool("netvm-run", "-r", path, "-q", expression)
    expected = int(re.search(r"sink match\s+(\d+) packets", summary)[1])
    assert counts == {"match": expected} and expected > 0
    by_name = netvm.compile(expression, lang="pcap-filter", link_type=link)
    assert by_name.jit().run_pcap(path) == counts
    ethernet = netvm.compile(expression, lang="pcap-filter")
    with pytest.raises(OSError, match=rf"link type {link} \("):
        ethernet.jit().run_pcap(path)


def test_pcap_filter_link_type_errors():
    with pytest.raises(ValueError, match="unknown link type 'FDDI'"):
        netvm.compile("ip", lang="pcap-filter", link_type="FDDI")
    with pytest.raises(ValueError, match="applies to tcpdump expressions"):
        netvm.compile("ip.src == 10.1.1.1", lang="netpfl", link_type="RAW")
    with pytest.raises(TypeError, match="link_type must be"):
        netvm.compile("ip", lang="pcap-filter", link_type=1.5)
    # libpcap's messages: a link type netvm does not compile for, and an
    # Ethernet-only primitive on another.
    # Named as libpcap names it; a number libpcap does not know stays one.
    with pytest.raises(netvm.CompileError, match="link type FDDI is not one"):
        netvm.compile("ip", lang="pcap-filter", link_type=10)
    with pytest.raises(netvm.CompileError, match="link type DLT 60000 is not"):
        netvm.compile("ip", lang="pcap-filter", link_type=60000)
    with pytest.raises(netvm.CompileError, match="no VLAN support"):
        netvm.compile("vlan", lang="pcap-filter", link_type="LINUX_SLL")
