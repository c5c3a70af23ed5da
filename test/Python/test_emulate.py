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
    # As many MEs as netvm-emu --mes allows, and no more.
    assert len(netvm.emulate(file=EXAMPLES / "me" / "forward.s",
                             mes=32)["mes"]) == 32
    with pytest.raises(ValueError, match="between 1 and 32"):
        netvm.emulate(file=EXAMPLES / "me" / "forward.s", mes=33)


def test_machine_options_change_the_run():
    """options= takes netvm-emu's machine options (netvm/emu/Options.h)."""
    program = EXAMPLES / "me" / "forward.s"
    packets = [bytes(range(60)), bytes(200), bytes(1000)]
    base = netvm.emulate(file=program, packets=packets)
    slow_rx = netvm.emulate(file=program, packets=packets,
                            options={"latency": {"rx": 600, "tx": 600}})
    assert [b for _, _, b in slow_rx["transmitted"]] == packets
    assert slow_rx["cycles"] > base["cycles"] + 400
    # The same as text, as a list, and with a slower DRAM controller.
    assert netvm.emulate(file=program, packets=packets,
                         options={"latency": "rx=600,tx=600"}) == slow_rx
    assert netvm.emulate(file=program, packets=packets,
                         options={"latency": ["rx=600", "tx=600"]}) == slow_rx
    slow_dram = netvm.emulate(file=program, packets=packets,
                              options={"controller": "dram=40/1"})
    assert slow_dram["cycles"] > base["cycles"]
    # Names with _ for -, numbers, and options over the keyword arguments.
    r = netvm.emulate(file=program, packets=packets, mes=8,
                      options={"mes": 2, "clock_mhz": 1200.0,
                               "ring_overflow": "drop"})
    assert len(r["mes"]) == 2
    assert r["seconds"] == pytest.approx(r["cycles"] / 1200e6)
    capped = netvm.emulate(file=program, packets=packets,
                           options={"max-cycles": 100})
    assert capped["cycles"] <= 100 and capped["packets_sent"] == 0


@pytest.mark.parametrize("options, message", [
    ({"no_such_option": 1}, r"unknown option 'no-such-option' \(one of mes"),
    ({"mes": 0}, r"bad mes '0' \(an integer 1-32\)"),
    ({"latency": "flash=3"}, r"bad latency 'flash=3' \(UNIT=CYCLES"),
    ({"controller": "dram=4"}, r"bad controller 'dram=4' \(UNIT=CMD/BPC"),
    ({"ring-overflow": "explode"}, r"\(fault or drop\)"),
    ({"clock-mhz": -1}, r"bad clock-mhz '-1' \(a number > 0\)"),
])
def test_bad_machine_options(options, message):
    with pytest.raises(ValueError, match=message):
        netvm.emulate(file=EXAMPLES / "me" / "forward.s", options=options)


def test_machine_option_types():
    with pytest.raises(TypeError, match="bool"):
        netvm.emulate(file=EXAMPLES / "me" / "forward.s",
                      options={"rbufs": True})
    with pytest.raises(TypeError, match="not a value"):
        netvm.emulate(file=EXAMPLES / "me" / "forward.s",
                      options={"rbufs": None})


SWAP = """
.me 0
.ctx_enable 1
loop:
    msf[rx, $0, 0, 0, 3], ctx_swap[s1]
    br_bset[$2, 0, end]
    alu_shf[a1, 0xff, and, $2, >>8]     ; the receive port
    alu[$2, a1, xor, 1]
    alu[$0, --, b, $0]
    alu[$1, --, b, $1]
    msf[tx, $0, 0, 0, 3], ctx_swap[s2]
    br[loop]
end:
    ctx_arb[kill]
"""


def test_packets_on_several_ports_leave_where_the_program_sends_them():
    port0 = [bytes([0, k]) * 30 for k in range(5)]
    port1 = [bytes([1, k]) * 31 for k in range(3)]
    r = netvm.emulate(SWAP, packets={0: port0, 1: port1})
    assert [b for p, _, b in r["transmitted"] if p == 1] == port0
    assert [b for p, _, b in r["transmitted"] if p == 0] == port1
    ports = r["statistics"]["ports"]
    assert [(p["port"], p["received"], p["sent"]) for p in ports] == \
        [(0, 5, 3), (1, 3, 5)]
    with pytest.raises(ValueError, match="receive port 16 is not 0-15"):
        netvm.emulate(SWAP, packets={16: port0})


def test_statistics_hold_the_whole_report():
    packets = [bytes(60)] * 4
    r = netvm.emulate(file=EXAMPLES / "me" / "forward.s", packets=packets)
    s = r["statistics"]
    assert s["cycles"] == r["cycles"]
    assert s["packets"]["sent"] == 4
    # Every packet crosses the DRAM controller twice (in and out).
    assert s["memory"]["dram"]["dma_commands"] == 8
    assert s["memory"]["dram"]["dma_bytes"] == 8 * 64
    assert len(s["memory"]["sram"]["channels"]) == 2
    one = netvm.emulate(file=EXAMPLES / "me" / "forward.s", packets=packets,
                        options={"sram_channels": 1})
    assert len(one["statistics"]["memory"]["sram"]["channels"]) == 1
