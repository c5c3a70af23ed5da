"""netvm.ccore: channels, chains across the MEs and the host, swaps,
reconfiguration, the resource report, placement and the table of running
chains, reliable UDP with retransmission (docs/ccore.md)."""

import struct

import pytest

from conftest import EXAMPLES

ccore = pytest.importorskip("netvm.ccore")

SCHEMA = EXAMPLES / "ccore" / "flights.ccs"


@pytest.fixture(scope="module")
def schema():
    return ccore.Schema.load(str(SCHEMA))


def price(message):
    return struct.unpack_from(">I", message, 40)[0]


def test_schema_and_errors(schema):
    assert schema.formats == ["flight", "baggage"]
    with pytest.raises(ValueError, match=r"<s>:1:\d+: error"):
        ccore.Schema("format f id 1 { u64 x; }", "<s>")
    messages = schema.generate("flight", 50, seed=3, ranges={"price": (5, 9)})
    assert len(messages) == 50 and all(len(m) == 600 for m in messages)
    assert all(5 <= price(m) <= 9 for m in messages)
    with pytest.raises(ValueError, match="no format 'plane'"):
        schema.generate("plane", 1)


def test_channels_classify(schema):
    channels = ccore.Channels(schema)
    channels.open(1, "atlanta", "paris", 7000, "flight")
    messages = schema.generate("flight", 20, streams=[1, 2])
    verdicts = [channels.classify(m) for m in messages]
    assert verdicts == ["queued", "unknown-stream"] * 10
    assert channels.take("flight") == messages[0::2]
    assert channels.counters() == {"queued": 10, "short": 0,
                                   "unknown-stream": 10, "wrong-format": 0}
    assert channels.classify(b"\0" * 4) == "short"
    with pytest.raises(ValueError):
        channels.open(3, "a", "b", 1, "plane")


def test_chain_select_project(schema):
    messages = schema.generate("flight", 300, ranges={"price": (0, 1000)})
    chain = ccore.Chain(schema, "from flight select price > $limit",
                        params={"limit": 500},
                        host_query="from flight project flightno, price")
    run = chain.run(messages)
    expected = [struct.pack(">IHHII", 1, 0x8001, 16,
                            struct.unpack_from(">I", m, 8)[0], price(m))
                for m in messages if price(m) > 500]
    assert run.outputs == expected
    assert run.me_sent == len(expected) and run.receive_drops == 0
    roles = [m["role"] for m in run.report["mes"]]
    assert roles[:4] == ["receive", "handler", "transmit", "idle"]
    assert run.report["host_threads"][0]["messages"] == len(expected)


def test_pipeline_of_me_stages(schema):
    # A select, a select, then a project, each on its own ME: the output is
    # the same handlers' in sequence on the host, byte for byte, and each
    # stage's figures are reported.
    queries = ["from flight select price > $limit",
               "from flight select gate < 20",
               "from flight project flightno, price"]
    messages = schema.generate("flight", 300, ranges={"price": (0, 1000),
                                                      "gate": (0, 40)})
    run = ccore.Chain(schema, queries, params={"limit": 500}).run(messages)
    expected = [struct.pack(">IHHII", 1, 0x8001, 16,
                            struct.unpack_from(">I", m, 8)[0], price(m))
                for m in messages
                if price(m) > 500 and struct.unpack_from(">H", m, 12)[0] < 20]
    assert run.outputs == expected and len(expected) > 20
    stages = run.stages
    assert [s["pes"] for s in stages] == [["me_stage_1"], ["me_stage_2"],
                                         ["me_stage_3"]]
    assert [s["me"] for s in stages] == [1, 2, 3]
    assert all(s["messages"] == 300 for s in stages)
    assert stages[0]["runs"] == 301  # the .init run and every message
    assert stages[2]["sent"] == len(run.outputs) == run.me_sent
    assert all(s["cycles_per_message"] > 0 for s in stages)
    roles = [(m["role"], m["stage"]) for m in run.report["mes"][:5]]
    assert roles == [("receive", 0), ("handler", 1), ("handler", 2),
                     ("handler", 3), ("transmit", 0)]
    # The same as one string; swaps are refused on such a chain.
    chain = ccore.Chain(schema, " | ".join(queries), params={"limit": 500})
    assert chain.run(messages).outputs == run.outputs
    with pytest.raises(RuntimeError, match="pipeline of 3 ME stages"):
        chain.run(messages, swap="spare")
    with pytest.raises(ValueError, match=r"<me-query 2>: reads format"):
        ccore.Chain(schema, ["from flight project flightno",
                             "from flight"])
    # The table holds a pipeline's N + 2 MEs and refuses one that does not
    # fit with what it needs.
    manager = ccore.ResourceManager()
    placed = manager.add(schema, "p", queries, params={"limit": 500},
                         rate_gbps=1)
    assert placed["where"] == "me"
    assert manager.table()[0]["mes"] == [0, 1, 2, 4, 5]
    assert len(manager.table()[0]["me_words"]) == 3
    assert manager.free_mes == 2
    refused = manager.add(schema, "q", queries[1:], side="me")
    assert refused["where"] == "refused"
    assert "MEs: needs 4 (receive, 2 handler stages, transmit), 2 free" in \
        refused["reason"]


def test_swap_and_reconfigure(schema):
    messages = schema.generate("flight", 600, ranges={"price": (0, 1000)})
    chain = ccore.Chain(schema, "from flight select price > $limit",
                        params={"limit": 200})
    plain = chain.run(messages).outputs
    swapped = chain.run(messages, swap="spare", swap_at=60000)
    assert swapped.swap["done"] and swapped.swap["new_me"] == 3
    assert swapped.outputs == plain  # none lost, none reordered
    changed = chain.run(messages, reconfigure=[("limit", 900, 80000)])
    (change,) = changed.reconfigurations
    k = change["messages_before"]
    assert change["done"] and 0 < k < len(messages)
    assert changed.outputs == (
        [m for m in messages[:k] if price(m) > 200] +
        [m for m in messages[k:] if price(m) > 900])
    with pytest.raises(ValueError, match=r"no parameter \$gate"):
        chain.run(messages, reconfigure=[("gate", 1, 10)])
    with pytest.raises(ValueError, match="expected 'spare' or 'in-place'"):
        chain.run(messages, swap="sideways")


def test_multicast(schema):
    messages = schema.generate("flight", 100, ranges={"price": (0, 1000)})
    chain = ccore.Chain(schema, subscribers=[
        (11, "from flight"), (12, "from flight select price > 500"),
        (13, "from flight project price")])
    run = chain.run(messages)
    expected = []
    for m in messages:
        expected.append(struct.pack(">I", 11) + m[4:])
        if price(m) > 500:
            expected.append(struct.pack(">I", 12) + m[4:])
        expected.append(struct.pack(">IHHI", 13, 0x8001, 12, price(m)))
    assert run.outputs == expected


def test_place(schema):
    me = ccore.place(schema, "from flight select price > 500", rate_gbps=1.0)
    assert me["where"] == "me" and 0 < me["me_cycles"] <= me["budget_cycles"]
    host = ccore.place(schema, "from flight select price > 500", busy_mes=6)
    assert host["where"] == "host" and "MEs: needs 3, 1 free (of 8" in \
        host["reason"]
    refused = ccore.place(schema, "from flight select price > 500",
                          rate_gbps=1000.0)
    assert refused["where"] == "refused"
    assert refused["reason"].startswith("does not fit: MEs:")
    with pytest.raises(ValueError, match="no field 'colour'"):
        ccore.place(schema, "from flight select colour == 1")


def test_resource_manager_table(schema):
    manager = ccore.ResourceManager(host_threads=1)
    assert manager.spare_me == 3 and manager.free_mes == 7
    select = "from flight select price > 500"
    a = manager.add(schema, "a", select, rate_gbps=1.0)
    b = manager.add(schema, "b", "from flight project flightno, price",
                    rate_gbps=1.0)
    assert (a["where"], a["id"], b["where"], b["id"]) == ("me", 1, "me", 2)
    assert manager.free_mes == 1
    c = manager.add(schema, "c", select, side="me")
    assert c["where"] == "refused" and c["reason"] == (
        "does not fit: MEs: needs 3, 1 free (of 8; 1 kept spare for "
        "hot-swaps); host: not asked for")
    full = manager.add(schema, "c", select)
    assert full["where"] == "host" and full["id"] == 3
    assert manager.remove("c")
    d = manager.add(schema, "d", select)
    assert d["where"] == "host" and d["id"] == 4
    assert manager.free_host_threads == 0
    refused = manager.add(schema, "x", select)
    assert refused["where"] == "refused" and refused["reason"].endswith(
        "host: needs 1 thread, 0 free")
    assert manager.add(schema, "d", select)["reason"] == \
        "a chain named 'd' is running"
    rows = manager.table()
    assert [(r["name"], r["where"], r["mes"], r["host_threads"])
            for r in rows] == [("a", "me", [0, 1, 2], []),
                               ("b", "me", [4, 5, 6], []),
                               ("d", "host", [], [0])]
    assert rows[0]["code_words"] > 0 and rows[2]["code_words"] == 0
    assert 0 < rows[0]["load"] < 1
    assert rows[0]["load"] == pytest.approx(rows[0]["estimate"] /
                                            rows[0]["budget"])
    assert manager.remove("a") and not manager.remove("a")
    assert manager.free_mes == 4
    e = manager.add(schema, "e", select, side="me")
    assert e["where"] == "me" and e["id"] == 5
    assert [r["mes"] for r in manager.table()] == [[4, 5, 6], [], [0, 1, 2]]
    assert "free: 1 of 8 MEs (ME 3 kept spare), 0 of 1 host threads" in \
        str(manager)


TICKS = """format tick id 3 size 64 {
  u32 seq;
  u32 price;
  bytes pad[48];
}
"""


def test_reliable_udp_retransmission():
    ticks = ccore.Schema(TICKS, "<ticks>")
    messages = ticks.generate("tick", 60, ranges={"price": (0, 1000)})
    chain = ccore.Chain(ticks, "from tick", rudp=16, retransmit=True,
                        rate_gbps=0.02)
    clean = chain.run(messages)
    assert clean.outputs == messages
    assert clean.rudp["fragments_sent"] == 240
    assert clean.rudp["fragments_resent"] == 0
    assert clean.rudp["acks_sent"] == 60 and clean.rudp["nacks_sent"] == 0
    for loss in (5, 20):
        run = chain.run(messages, loss=loss, reorder=10, control_loss=10,
                        seed=loss)
        assert run.outputs == messages          # in order, byte for byte
        r = run.rudp
        assert r["delivered"] == 60 and r["acknowledged"] == 60
        assert r["fragments_sent"] - r["fragments_resent"] == 240
        assert r["fragments_lost"] > 0 and r["nacks_sent"] > 0
        assert r["control_messages"] == r["nacks_sent"] + r["acks_sent"]
    tail = chain.run(messages, drop=[239])    # the last message's last
    assert tail.outputs == messages           # fragment: the timeout
    assert (tail.rudp["timeouts"], tail.rudp["messages_resent"],
            tail.rudp["fragments_resent"], tail.rudp["rejected"]) == \
        (1, 1, 4, 3)
    with pytest.raises(ValueError, match="runs without swap"):
        chain.run(messages, swap="spare")
    reporting = ccore.Chain(ticks, "from tick", rudp=16)
    lossy = reporting.run(messages, loss=10)
    assert lossy.rudp["delivered"] + lossy.rudp["lost"] <= 60
    assert lossy.rudp["lost"] > 0 and len(lossy.outputs) < 60
    with pytest.raises(ValueError, match="need retransmit"):
        reporting.run(messages, reorder=5)
    with pytest.raises(RuntimeError, match="needs a line rate"):
        ccore.Chain(ticks, "from tick", rudp=16, retransmit=True).run(messages)
    with pytest.raises(ValueError, match="retransmit needs rudp"):
        ccore.Chain(ticks, "from tick", retransmit=True)


TABLE3 = ("from flight select price >= $p and bags <= $b and status < $s "
          "and passengers > $n and gate == $g")
TABLE3_PARAMS = {"p": 100, "b": 900, "s": 200, "n": 10, "g": 12}
TABLE3_RANGES = {"price": (0, 1000), "gate": (10, 14), "bags": (0, 1000),
                 "passengers": (0, 400)}


def test_auto_specialize(schema):
    """After the stable period the specialized code runs (a swap to ME 3,
    fewer busy cycles per message there), with the bytes and order of a
    run without specialization."""
    messages = schema.generate("flight", 1000, ranges=TABLE3_RANGES)
    chain = ccore.Chain(schema, TABLE3, params=TABLE3_PARAMS)
    plain = chain.run(messages)
    assert not plain.auto_swaps and not plain.report["swaps"]
    auto = chain.run(messages, auto_specialize=True, stable_us=40)
    (swap,) = auto.auto_swaps
    assert swap["to_specialized"] and swap["new_me"] == 3
    assert swap["parameters"] == TABLE3_PARAMS
    assert 0 < swap["messages_before"] < len(messages)
    # The stable period: 40 us at 600 MHz before the switch.
    assert swap["start_cycle"] >= 40 * 600
    assert auto.outputs == plain.outputs  # none lost, none reordered
    mes = auto.report["mes"]
    assert mes[1]["messages"] + mes[3]["messages"] == len(messages)
    assert mes[3]["role"] == "handler" and mes[1]["role"] == "spare"
    assert (mes[3]["busy_cycles_per_message"] <
            0.75 * mes[1]["busy_cycles_per_message"])
    (reported,) = auto.report["swaps"]
    assert reported["kind"] == "specialize"
    assert reported["downtime_cycles"] == swap["downtime_cycles"]
    assert reported["downtime_us"] <= 30
    # In messages: the switch comes at the first look after 300.
    counted = chain.run(messages, auto_specialize=True, stable_us=0,
                        stable_messages=300)
    assert 300 <= counted.auto_swaps[0]["messages_before"] < 320
    assert counted.outputs == plain.outputs


def test_auto_specialize_parameter_change(schema):
    """A change after the specialization swaps the generic code back at
    its message, then the code specialized for the new value comes in."""
    messages = schema.generate("flight", 2000, ranges={"price": (0, 1000)})
    chain = ccore.Chain(schema, "from flight select price > $limit",
                        params={"limit": 200})
    run = chain.run(messages, auto_specialize=True, stable_us=50,
                    reconfigure=[("limit", 800, 150000)])
    kinds = [(s["to_specialized"], s["parameters"]) for s in run.auto_swaps]
    assert kinds == [(True, {"limit": 200}), (False, {}),
                     (True, {"limit": 800})]
    (change,) = run.reconfigurations
    k = change["messages_before"]
    assert change["done"] and k == run.auto_swaps[1]["messages_before"]
    assert run.outputs == (
        [m for m in messages[:k] if price(m) > 200] +
        [m for m in messages[k:] if price(m) > 800])
    with pytest.raises(ValueError, match="starts from the generic form"):
        chain.run(messages, auto_specialize=True, swap="spare")
    with pytest.raises(ValueError, match="starts from the generic form"):
        ccore.Chain(schema, "from flight select price > $limit",
                    params={"limit": 1}, specialize=True).run(
                        messages, auto_specialize=True)


def test_auto_specialize_multicast(schema):
    """A multicast stage specialized automatically, with a change of one
    subscriber's parameter: each subscriber's stream is exactly its
    selection, with the new value from the change's message on."""
    messages = schema.generate("flight", 600, ranges={
        "price": (0, 1000), "gate": (10, 14)})
    chain = ccore.Chain(schema, subscribers=[
        (11, "from flight select price > $limit"),
        (12, "from flight select gate == $g project gate, price")],
        params={"limit": 500, "g": 12})
    run = chain.run(messages, auto_specialize=True, stable_us=50,
                    reconfigure=[("g", 11, 400000)])
    kinds = [s["to_specialized"] for s in run.auto_swaps]
    assert kinds == [True, False, True]
    assert run.auto_swaps[2]["parameters"] == {"limit": 500, "g": 11}
    (change,) = run.reconfigurations
    k = change["messages_before"]
    assert 0 < k < len(messages)

    def stream(m):
        return struct.unpack_from(">I", m, 0)[0]

    def gate(m):
        return struct.unpack_from(">H", m, 12)[0]

    relayed = [m[4:] for m in run.outputs if stream(m) == 11]
    projected = [struct.unpack_from(">HI", m, 8) for m in run.outputs
                 if stream(m) == 12]
    assert len(relayed) + len(projected) == len(run.outputs)
    assert relayed == [m[4:] for m in messages if price(m) > 500]
    assert projected == [(gate(m), price(m))
                         for i, m in enumerate(messages)
                         if gate(m) == (12 if i < k else 11)]
