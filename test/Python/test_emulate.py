"""netvm.emulate: microengine programs on the IXP-like emulator, with the
same packets the JIT filters see."""

import pytest

import netvm

from conftest import EXAMPLES


def packets_of(trace, count=400):
    return list(netvm.read_pcap(trace))[:count]


def test_forwarder_sends_every_packet_unchanged_in_order(trace):
    packets = packets_of(trace, 200)
    r = netvm.emulate(file=EXAMPLES / "me" / "forward.s", packets=packets)
    assert r["packets_sent"] == len(packets)
    assert [b for _, _, b in r["transmitted"]] == packets
    cycles = [c for _, c, _ in r["transmitted"]]
    assert cycles == sorted(cycles) and r["cycles"] >= cycles[-1]
    assert r["faults"] == []
    assert r["seconds"] == pytest.approx(r["cycles"] / 600e6)


@pytest.mark.parametrize("name", ["ip", "ip-src", "ip-tcp"])
def test_filter_pipeline_sends_what_the_jit_filter_sends(trace, name):
    packets = packets_of(trace)
    r = netvm.emulate(file=EXAMPLES / "me" / f"{name}.s", packets=packets)
    inst = netvm.compile(EXAMPLES / "filters" / f"{name}.netil").jit()
    expected = [p for p in packets if inst.run(p).outputs]
    assert 0 < len(expected) < len(packets)
    assert [b for _, _, b in r["transmitted"]] == expected


def test_deterministic(trace):
    packets = packets_of(trace, 100)
    a = netvm.emulate(file=EXAMPLES / "me" / "ip-src.s", packets=packets)
    b = netvm.emulate(file=EXAMPLES / "me" / "ip-src.s", packets=packets)
    assert a == b
    assert sum(me["instructions"] for me in a["mes"]) > 0


def test_clock_and_me_count():
    r = netvm.emulate(file=EXAMPLES / "me" / "forward.s",
                      packets=[bytes(64)], clock_mhz=1200, mes=2)
    assert len(r["mes"]) == 2
    assert r["seconds"] == pytest.approx(r["cycles"] / 1200e6)


def test_errors():
    with pytest.raises(ValueError, match=r"<source>:1:\d+: error"):
        netvm.emulate("  no_such_instruction[1, 2]\n")
    with pytest.raises(TypeError):
        netvm.emulate()
    with pytest.raises(TypeError):
        netvm.emulate("nop", file=EXAMPLES / "me" / "forward.s")
    with pytest.raises(TypeError):
        netvm.emulate(file=EXAMPLES / "me" / "forward.s", packets=[42])
    with pytest.raises(ValueError, match="mes"):
        netvm.emulate(file=EXAMPLES / "me" / "forward.s", mes=0)
