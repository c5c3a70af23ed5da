"""Instance on every engine: the reference interpreter and the ME emulator
next to native code. The emulator runs an MEProgram written by hand to the
layout protocol of compiled applications (Inputs/me-protocol.s, the program
of test/Unit/EmulatorEngineTest.cpp), and applications compiled for the
microengines once the ME back end is built."""

import json

import numpy as np
import pytest

import netvm
from conftest import EXAMPLES, INPUTS, run_tool, tool

LAYOUT = {
    "sources": ["a", "b"],
    "sinks": ["out0", "out1"],
    "pes": ["pe"],
    "data_memory": [("sram", 0x100, 8)],
    "shared_memory": ("sram", 0x200, 8),
    "persistent": [("sram", 0x100, 12)],
    "event_count": 0x1000,
    "event_log": 0x1010,
    "event_capacity": 16,
    "locations": ["app.netil:1:1", "app.netil:7:3"],
    "watchdog_address": 0x2000,
    "info_offset": 64,
    "info_size": 16,
    "info_used": True,
}


def info(tag):
    return bytes([0, 0, 0, tag, 0x11, 0x22, 0x33, 0x44]) + bytes(8)


@pytest.fixture
def program():
    return netvm.me_program(file=INPUTS / "me-protocol.s", layout=LAYOUT,
                            name="protocol")


def test_me_program(program):
    assert program.sources == ["a", "b"]
    assert program.sinks == ["out0", "out1"]
    assert program.layout["data_memory"] == [("sram", 0x100, 8)]
    assert program.layout["info_used"] is True
    assert program.image.startswith(b"NVMEIMG\n")
    assert "msf[tx" in program.assembly
    with pytest.raises(ValueError, match="unknown layout key 'sink'"):
        netvm.me_program("nop", layout={"sink": []})
    with pytest.raises(ValueError, match="unknown memory 'flash'"):
        netvm.me_program("nop", layout={"data_memory": [("flash", 0, 4)]})
    with pytest.raises(ValueError, match="error"):
        netvm.me_program(".me 0\n bogus[a0]\n", layout={})


def test_emulator_results(program):
    inst = netvm.Instance(program, engine="emu", watchdog=777)
    assert inst.engine == "emulator"
    assert inst.sinks == ["out0", "out1"]
    # The init handlers ran in a run without packets.
    [e] = inst.init_exceptions
    assert (e.kind, e.pe, e.handler, e.location) == \
        ("data_bounds", "pe", "init", "app.netil:1:1")

    r = inst.run(b"\x01\xaa\xbb\xcc", seconds=5, microseconds=6)
    assert r.verdict == "output" and r.sink == "out0"
    [out] = r.outputs
    assert out.data == b"\x01\xaa\xbb\xcc"
    assert out.info == info(0)
    assert out.timestamp == (5, 6)

    r = inst.run(b"\x03\x00\x00\x00", port="b")
    assert r.verdict == "exception"
    [e] = r.exceptions
    assert (e.kind, e.pe, e.handler, e.location) == \
        ("division_by_zero", "pe", "push", "app.netil:7:3")
    assert inst.run(b"\x00\x00\x00\x00").dropped == 1
    assert inst.run(b"\x04\x00\x00\x00").unconnected == 1

    # Data memory carries from run to run; control-plane writes too.
    assert inst.read_data(0, 4) == (4).to_bytes(4, "big")
    assert inst.read_data(4, 4) == (777).to_bytes(4, "big")
    inst.write_data(0, (50).to_bytes(4, "big"))
    inst.run(b"\x00\x00\x00\x00")
    assert inst.read_data(0, 4) == (51).to_bytes(4, "big")
    assert bytes(inst.shared()[:4]) == b"\xca\xfe\xba\xbe"

    batch = inst.run_batch([b"\x01\x00\x00\x00", b"\x02\x00\x00\x00",
                            b"\x05\x00\x00\x00", b"\x07\x00\x00\x00",
                            b"\x03\x00\x00\x00"])
    assert list(batch.sink) == [0, 1, 1, -1, -1]
    assert list(batch.outputs) == [1, 1, 1, 0, 0]
    assert list(batch.exception) == [-1, -1, -1, -1,
                                     netvm.EXCEPTION_KINDS.index(
                                         "division_by_zero")]
    c = inst.counters()
    assert c["packets"] == 10
    assert c["sinks"]["out1"]["packets"] == 2
    assert c["exceptions"] == {"data_bounds": 1, "division_by_zero": 2}

    stats = inst.emulator_stats()
    assert stats["packets"]["received"] == 10
    assert stats["cycles"] > 0
    assert json.dumps(stats)


def test_emulator_failure_raises(program):
    inst = netvm.Instance(program, engine="emu")
    with pytest.raises(RuntimeError, match="transmit port 20"):
        inst.run(b"\xff\x00\x00\x00")
    with pytest.raises(RuntimeError, match="emulator engine failed"):
        inst.run(b"\x01\x00\x00\x00")
    inst = netvm.Instance(program, engine="emu")
    with pytest.raises(RuntimeError, match="without a packet tag"):
        inst.run_batch([b"\x01\x00\x00\x00", b"\x06\x00\x00\x00"])


def test_emulator_machine_options(program):
    slow = netvm.Instance(program, engine="emu",
                          machine={"latency": {"sram": 400}})
    fast = netvm.Instance(program, engine="emu")
    for inst in (slow, fast):
        inst.run(b"\x01\x00\x00\x00")
    assert slow.emulator_stats()["cycles"] > fast.emulator_stats()["cycles"]
    with pytest.raises(ValueError, match="latency"):
        netvm.Instance(program, engine="emu", machine={"latency": "flash=3"})
    with pytest.raises(RuntimeError, match="cannot load the ME image"):
        netvm.Instance(program, engine="emu", machine={"control_store": 16})


def test_engine_arguments(program):
    app = netvm.compile(EXAMPLES / "filters" / "ip-tcp.netil")
    with pytest.raises(ValueError, match="unknown engine 'gpu'"):
        netvm.Instance(app, engine="gpu")
    with pytest.raises(ValueError, match="engine='emu'"):
        netvm.Instance(app, engine="native", machine={"mes": 4})
    with pytest.raises(ValueError, match="engine 'emu' only"):
        netvm.Instance(program, engine="interp")
    with pytest.raises(TypeError, match="Application or an MEProgram"):
        netvm.Instance(42)
    with pytest.raises(ValueError, match="unknown target"):
        netvm.compile("ip", lang="pcap-filter", target="gpu")


def test_interpreter_agrees_with_native(trace):
    app = netvm.compile(EXAMPLES / "apps" / "classify.nvapp")
    native = netvm.Instance(app)
    interp = app.instance("interp")
    assert native.engine == "native" and interp.engine == "interpreter"
    packets = netvm.read_pcap(trace)[:500]
    a, b = native.run_batch(packets), interp.run_batch(packets)
    assert np.array_equal(a.sink, b.sink)
    assert np.array_equal(a.exception, b.exception)
    for p in packets[:50]:
        x, y = native.run(p), interp.run(p)
        assert [(o.sink, o.data, o.info) for o in x.outputs] == \
            [(o.sink, o.data, o.info) for o in y.outputs]
        assert [e.kind for e in x.exceptions] == [e.kind for e in y.exceptions]
    assert np.array_equal(native.data("classify"), interp.data("classify"))
    assert interp.emulator_stats() is None


def test_compiled_for_the_microengines(trace):
    app = netvm.compile("ip", lang="pcap-filter", target="me")
    assert app.target == "me"
    assert app.image.startswith(b"NVMEIMG\n")
    assert app.layout["sinks"] == ["match"]
    path = trace.parent / "ip.img"
    path.write_bytes(app.image)
    objdump = run_tool("netvm-me-objdump", path)
    assert objdump
    emu, interp = app.instance("emu"), app.instance("interp")
    packets = netvm.read_pcap(trace)[:300]
    a, b = emu.run_batch(packets), interp.run_batch(packets)
    assert np.array_equal(a.sink, b.sink)
    assert np.array_equal(a.exception, b.exception)
    assert emu.emulator_stats()["packets"]["sent"] == int((a.sink >= 0).sum())
