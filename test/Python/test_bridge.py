"""The learning bridge's control plane (examples/bridge): read the FIB out
of the lookup coprocessor, age it, delete from it, set port states, on the
interpreter, the JIT and the ME emulator (where the FIB is the back end's
SRAM table, read and changed between runs); every frame's outputs and the
FIB checked against the reference bridge of
test/Examples/Inputs/bridge_oracle.py."""

import sys

import pytest

import netvm
from conftest import EXAMPLES, ROOT

sys.path.insert(0, str(EXAMPLES / "bridge"))
sys.path.insert(0, str(ROOT / "test" / "Examples" / "Inputs"))
import bridge_oracle  # noqa: E402
import traffic  # noqa: E402

BRIDGE = EXAMPLES / "bridge" / "bridge.netil"


@pytest.fixture(scope="module")
def app():
    return netvm.compile(BRIDGE)


def fib_of(instance):
    """{(word, word): (port, stamp)} from the lookup coprocessor."""
    return {key: (value, stamp)
            for key, value, stamp in instance.lookup_entries("bridge")}


def oracle_fib(model):
    return {bridge_oracle.key_of(mac): entry
            for mac, entry in model.fib.items()}


def push(instance, model, port, frame, now):
    """Run one frame on both; their outputs must be equal."""
    result = instance.run(frame, port=port, seconds=now)
    assert not result.exceptions, result.exceptions
    got = [(out.sink, bytes(out.data)) for out in result.outputs]
    assert got == model.push(port, frame, now), f"frame {now} on port {port}"


@pytest.mark.parametrize("engine", ["interp", "native", "emu"])
def test_ageing_and_port_states(app, engine):
    instance = app.instance(engine)
    model = bridge_oracle.Bridge()
    frames = traffic.generate(2400, seed=4, hosts=40, move_every=60)
    aged = 0
    for now, (port, frame) in enumerate(frames):
        if now == 800:  # port 2 blocking, port 3 disabled
            instance.write_data(2, bytes([1, 2]), pe="bridge")
            model.state[2:4] = [1, 2]
        if now == 1600:  # both forwarding again
            instance.write_data(2, bytes([0, 0]), pe="bridge")
            model.state[2:4] = [0, 0]
        if now and now % 300 == 0:
            deleted = instance.lookup_age(now, 90, pe="bridge")
            assert deleted == model.age(now, 90)
            aged += deleted
            assert fib_of(instance) == oracle_fib(model)
        push(instance, model, port, frame, now)
    assert aged > 0
    assert fib_of(instance) == oracle_fib(model)
    assert instance.read_data(pe="bridge") == model.data_memory()
    counters = model.counters
    assert counters["blocked"] > 0 and counters["filtered"] > 0


@pytest.mark.parametrize("engine", ["native", "emu"])
def test_delete_one_address(app, engine):
    instance = app.instance(engine)
    model = bridge_oracle.Bridge()
    a, b = traffic.mac(1), traffic.mac(2)
    # A frame is destination + source + the rest.
    push(instance, model, 0, b + a + bytes(50), 1)  # learns a on 0, floods
    push(instance, model, 1, a + b + bytes(50), 2)  # learns b on 1, to 0
    assert fib_of(instance) == {bridge_oracle.key_of(a): (0, 1),
                                bridge_oracle.key_of(b): (1, 2)}
    assert instance.lookup_delete(bridge_oracle.key_of(b), pe="bridge")
    assert not instance.lookup_delete(bridge_oracle.key_of(b), pe="bridge")
    del model.fib[b]
    push(instance, model, 0, b + a + bytes(50), 3)  # b unknown again: flood
    with pytest.raises(ValueError, match="1 to 16 words"):
        instance.lookup_delete([], pe="bridge")


def test_a_full_fib_learns_nothing_new(app):
    """16384 addresses fill the FIB; a new source is then not learned (its
    frames are still flooded, the counter at 12 counts it) until ageing
    frees room; known addresses keep being refreshed."""
    instance = app.jit()
    model = bridge_oracle.Bridge()
    capacity = bridge_oracle.CAPACITY
    for h in range(1, capacity + 1):
        frame = traffic.BROADCAST + traffic.mac(h) + bytes(50)
        port = h % 4
        result = instance.run(frame, port=port, seconds=h % 100)
        assert len(result.outputs) == 3
        model.push(port, frame, h % 100)
    assert len(instance.lookup_entries("bridge")) == capacity
    new = traffic.mac(capacity + 1)
    push(instance, model, 0, traffic.mac(5) + new + bytes(50), 200)
    push(instance, model, 1, new + traffic.mac(6) + bytes(50), 201)  # flood
    assert model.counters["unlearned"] == 1
    assert int.from_bytes(instance.read_data(12, 4, pe="bridge"), "big") == 1
    push(instance, model, 3, traffic.mac(7) + traffic.mac(6) + bytes(50), 202)
    assert fib_of(instance)[bridge_oracle.key_of(traffic.mac(6))] == (3, 202)
    # Ageing frees room: the new address is learned on its next frame.
    deleted = instance.lookup_age(250, 60, pe="bridge")
    assert deleted == model.age(250, 60) > 0
    push(instance, model, 2, traffic.mac(6) + new + bytes(50), 251)
    assert fib_of(instance)[bridge_oracle.key_of(new)] == (2, 251)
    assert fib_of(instance) == oracle_fib(model)


def test_control_plane_needs_a_lookup_table():
    app = netvm.compile("segment .ports\n push_input in\n push_output out\n"
                        "ends\nsegment .push\n pop\n pkt.send out\nends\n",
                        lang="netil")
    with pytest.raises(ValueError, match="does not use the lookup"):
        app.jit().lookup_entries()



def me_slot(key):
    """The slot of a key in the ME lookup table (docs/me-backend.md, "The
    lookup coprocessor": rotate and xor, the high bits folded into the low
    15)."""
    h = key[0]
    for word in key[1:]:
        h = (((h >> 27) | (h << 5)) & 0xFFFFFFFF) ^ word
    h ^= h >> 15
    h ^= h >> 7
    return h & 0x7FFF


def test_emulator_deletion_keeps_probe_runs(app):
    """Addresses whose keys hash to one slot of the ME table, and to the
    slot after it, form one probe run; deleting from its front and middle
    moves the later entries back (no tombstones), so every other address is
    still found: frames to them are forwarded, not flooded, and the FIB
    stays the reference bridge's."""
    by_slot = {}
    for h in range(1, 300000):
        by_slot.setdefault(me_slot(bridge_oracle.key_of(traffic.mac(h))),
                           []).append(h)
    slot = next(s for s, hs in sorted(by_slot.items())
                if len(hs) >= 3 and len(by_slot.get(s + 1, [])) >= 2)
    hosts = [traffic.mac(h) for h in by_slot[slot][:3] + by_slot[slot + 1][:2]]
    instance = app.instance("emu")
    model = bridge_oracle.Bridge()
    now = 1
    for h, mac in enumerate(hosts):
        push(instance, model, h % 4, traffic.BROADCAST + mac + bytes(50), now)
        now += 1
    for mac in (hosts[0], hosts[3]):
        assert instance.lookup_delete(bridge_oracle.key_of(mac), pe="bridge")
        del model.fib[mac]
        assert fib_of(instance) == oracle_fib(model)
    for h, mac in enumerate(hosts):
        push(instance, model, (h + 1) % 4, mac + hosts[1] + bytes(50), now)
        now += 1
    assert fib_of(instance) == oracle_fib(model)
    # Ageing deletes through the same path: everything older than now - 2.
    deleted = instance.lookup_age(now, 2, pe="bridge")
    assert deleted == model.age(now, 2) > 0
    assert fib_of(instance) == oracle_fib(model)
