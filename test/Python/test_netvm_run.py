"""The Python package against netvm-run on the same trace and application:
every packet's outputs (bytes and info memory), exceptions and drops, the
final data memories, and the per-sink summary."""

import json

import pytest

import netvm
from conftest import EXAMPLES, INPUTS, run_tool

APPLICATIONS = [
    EXAMPLES / "apps" / "classify.nvapp",
    EXAMPLES / "netil" / "flowstats.netil",
    EXAMPLES / "netil" / "flow-hash.netil",
    EXAMPLES / "filters" / "four-fields.netil",
    INPUTS / "mark.netil",
]


def parse_results(text):
    """netvm-run --results: per packet number, its events; and memories."""
    packets, data = {}, {}
    for line in text.splitlines():
        words = line.split()
        if words[0] == "data":
            data[words[1]] = words[2] if len(words) > 2 else ""
            continue
        if not words[0].startswith("#"):
            continue
        events = packets.setdefault(int(words[0][1:]), [])
        if words[1] == "out":
            # '#N out SINK BYTES info INFO': the hex fields may be empty.
            _, _, sink, data_hex, _, info = line.split(" ")
            events.append(("out", sink, data_hex, info))
        elif words[1] == "exception":
            events.append(("exception", *words[2:6]))
        else:
            events.append((words[1], int(words[2])))
    return packets, data


def events_of(result):
    events = [("out", o.sink, o.data.hex(), o.info.hex())
              for o in result.outputs]
    events += [("exception", e.kind, e.pe, e.handler, e.location)
               for e in result.exceptions]
    if result.dropped:
        events.append(("dropped", result.dropped))
    if result.unconnected:
        events.append(("unconnected", result.unconnected))
    return events


@pytest.mark.parametrize("path", APPLICATIONS, ids=lambda p: p.name)
def test_every_packet_as_netvm_run(path, trace):
    expected, data = parse_results(run_tool("netvm-run", path, "-r", trace,
                                            "--results"))
    inst = netvm.compile(path).jit()
    packets = netvm.read_pcap(trace, details=True)
    for number, p in enumerate(packets, start=1):
        got = events_of(inst.run(p.data, seconds=p.seconds,
                                 microseconds=p.microseconds,
                                 wire_length=p.wire_length))
        want = expected.get(number, [])
        # netvm-run lists outputs before exceptions within a packet too.
        assert sorted(got) == sorted(want), f"packet #{number}"
    for pe in inst.pes:
        assert inst.read_data(pe=pe).hex() == data[pe]


@pytest.mark.parametrize("path", APPLICATIONS, ids=lambda p: p.name)
def test_summary_as_netvm_run(path, trace):
    summary = json.loads(run_tool("netvm-run", path, "-r", trace, "--json"))
    inst = netvm.compile(path).jit()
    counts = inst.run_pcap(trace)
    assert counts == {name: s["packets"] for name, s in
                      summary["sinks"].items()}
    c = inst.counters()
    assert c["packets"] == summary["packets"]
    assert c["dropped"] == summary["dropped"]
    assert c["exceptions"] == summary["exceptions"]
    assert {n: s["bytes"] for n, s in c["sinks"].items()} == \
        {n: s["bytes"] for n, s in summary["sinks"].items()}
    for name, pe in summary["pes"].items():
        assert c["pes"][name] == {"runs": pe["invocations"],
                                  "sent": pe["sent"],
                                  "dropped": pe["dropped"],
                                  "exceptions": pe["exceptions"]}


@pytest.mark.parametrize("lang,text,flag", [
    ("pcap-filter", "tcp port 80 or udp", "--pcap-filter"),
    ("netpfl", "ip.src == 10.1.1.1 or tcp", "--pfl"),
])
def test_filters_as_netvm_run(lang, text, flag, trace):
    summary = json.loads(run_tool("netvm-run", flag, text, "-r", trace,
                                  "--json"))
    inst = netvm.compile(text, lang=lang).jit()
    batch = inst.run_batch(netvm.read_pcap(trace))
    assert batch.counts() == {n: s["packets"] for n, s in
                              summary["sinks"].items()}


def run_status(*args):
    """netvm-run's exit status and standard error."""
    import subprocess
    from conftest import tool
    done = subprocess.run([tool("netvm-run"), *map(str, args)],
                          capture_output=True, text=True)
    return done.returncode, done.stderr


def test_engine_option(trace):
    app = EXAMPLES / "filters" / "ip-tcp.netil"
    interp = run_tool("netvm-run", app, "-r", trace, "--results",
                      "--engine=interp")
    assert interp == run_tool("netvm-run", app, "-r", trace, "--results",
                              "--interp")
    assert interp == run_tool("netvm-run", app, "-r", trace, "--results",
                              "--engine=native", "-O0")
    for args, message in [
            (["--interp", "--engine=native"], "name different engines"),
            (["--mes=4"], "--mes configures the ME emulator"),
            (["--engine=interp", "--latency=dram=3"],
             "--latency configures the ME emulator"),
            (["--stats-json=x.json"], "use it with --engine=emu"),
            (["--engine=emu", "--pull=1"], "push mode only"),
            (["--engine=emu", "-j", "2"], "-j and --pipeline"),
            (["--engine=emu", "--latency=flash=3"], "bad --latency"),
    ]:
        status, err = run_status(app, "-r", trace, *args)
        assert status == 1, (args, err)
        assert message in err, (args, err)


def test_engine_emu_summary(trace, tmp_path):
    app = EXAMPLES / "filters" / "ip.netil"
    stats = tmp_path / "stats.json"
    out = run_tool("netvm-run", app, "-r", trace, "--engine=emu",
                   f"--stats-json={stats}")
    assert "emulator:" in out and "Mpps" in out
    assert json.loads(stats.read_text())["packets"]["received"] > 0
    ref = run_tool("netvm-run", app, "-r", trace, "--results", "--interp")
    emu = run_tool("netvm-run", app, "-r", trace, "--results", "--engine=emu")
    assert emu == ref
