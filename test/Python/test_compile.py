"""netvm.compile and Application: every language and input form, the IR
stages, code generation, statistics, and compile errors as diagnostics."""

import pathlib

import pytest

import netvm
from conftest import EXAMPLES, INPUTS, ROOT

IP_TCP = EXAMPLES / "filters" / "ip-tcp.netil"
CLASSIFY = EXAMPLES / "apps" / "classify.nvapp"


def test_netil_text_and_name():
    app = netvm.compile(IP_TCP.read_text(), name="iptcp")
    assert app.name == "iptcp"
    assert app.pes == ["iptcp"]
    assert app.sources == ["in"] and app.sinks == ["out"]
    assert app.opt_level == 2
    assert app.diagnostics == []
    assert "iptcp" in repr(app)


def test_netil_bytes_text():
    app = netvm.compile(IP_TCP.read_bytes())
    assert app.name == "app"


def test_netil_file_infers_language_and_name():
    app = netvm.compile(IP_TCP)
    assert app.name == "ip-tcp" and app.pes == ["ip-tcp"]


def test_nvapp_file():
    app = netvm.compile(CLASSIFY)
    assert app.name == "classify"
    assert app.pes == ["classify", "ipv4"]
    assert app.sources == ["wire"]
    assert app.sinks == ["tcp", "udp", "icmp", "other_ip", "bad_ip", "ipv6",
                         "arp", "other"]


def test_nvapp_text_with_in_memory_files():
    netil = EXAMPLES / "netil"
    description = CLASSIFY.read_text().replace("../netil/", "")
    app = netvm.compile(description, lang="nvapp", files={
        "l2-classify.netil": (netil / "l2-classify.netil").read_text(),
        "ipv4-demux.netil": (netil / "ipv4-demux.netil").read_text(),
    })
    assert app.pes == ["classify", "ipv4"]
    assert app.mlir("optimized") == netvm.compile(CLASSIFY).mlir("optimized")


def test_netil_chain_of_texts_and_files():
    first = (EXAMPLES / "filters" / "ip.netil")
    chained = netvm.compile([first, IP_TCP.read_text()])
    assert chained.pes == ["ip", "pe1"]
    assert chained.sources == ["in"]
    # The first NetPE's output feeds the second; its output is the sink.
    assert len(chained.sinks) == 1


def test_chain_of_other_languages_is_refused():
    with pytest.raises(ValueError, match="only NetIL"):
        netvm.compile(["tcp", "udp"], lang="pcap-filter")


def test_mlir_round_trip():
    app = netvm.compile(IP_TCP)
    again = netvm.compile(app.mlir("input"), lang="mlir")
    assert again.name == app.name
    assert again.mlir("optimized") == app.mlir("optimized")


def test_mlir_file(tmp_path):
    path = tmp_path / "app.mlir"
    path.write_text(netvm.compile(IP_TCP).mlir("optimized"))
    assert netvm.compile(path).pes == ["ip-tcp"]


def test_pcap_filter():
    app = netvm.compile("tcp port 80", lang="pcap-filter")
    assert app.name == "filter"
    assert app.sinks == ["match"]


def test_netpfl_and_protodb():
    app = netvm.compile("tcp.dport == 80", lang="netpfl")
    assert app.sinks == ["match"]
    own = ROOT / "lib" / "ProtoDB" / "netvm.netpdl.xml"
    with_db = netvm.compile("tcp.dport == 80", lang="netpfl", protodb=own)
    assert with_db.mlir("optimized") == app.mlir("optimized")


def test_filter_file(tmp_path):
    path = tmp_path / "web.txt"
    path.write_text("# web traffic\ntcp port 80\n")
    assert netvm.compile(path, lang="pcap-filter").sinks == ["match"]


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_opt_levels(level):
    app = netvm.compile(IP_TCP, opt_level=level)
    assert app.opt_level == level
    assert "netvm.application" in app.mlir("optimized")


@pytest.mark.parametrize("level", [-1, 4, "2", True, 1.0])
def test_bad_opt_level(level):
    with pytest.raises(ValueError, match="opt_level"):
        netvm.compile(IP_TCP, opt_level=level)


def test_bad_language():
    with pytest.raises(ValueError, match="unknown language 'bpf'"):
        netvm.compile("tcp", lang="bpf")


@pytest.mark.parametrize("source", [42, None, [], [b"x", 3]])
def test_bad_source_type(source):
    with pytest.raises((TypeError, ValueError)):
        netvm.compile(source)


def test_bad_files_type():
    with pytest.raises(TypeError, match="files"):
        netvm.compile(CLASSIFY, files={"a.netil": 3})


def test_stages():
    app = netvm.compile(IP_TCP)
    stages = {stage: app.mlir(stage) for stage in netvm.STAGES}
    assert "netvm.check_bounds" not in stages["input"]
    assert "netvm.check_bounds" in stages["instrumented"] or \
        "in_bounds" in stages["instrumented"]
    assert stages["instrumented"] != stages["input"]
    assert "netvm.pe" in stages["optimized"]
    assert "llvm.func" in stages["llvm-dialect"]
    assert "netvm.pe" not in stages["llvm-dialect"]
    assert app.mlir() == stages["optimized"]
    # Asking for a stage changes nothing.
    assert app.mlir("input") == stages["input"]


def test_unknown_stage():
    with pytest.raises(ValueError, match="unknown stage 'parsed'"):
        netvm.compile(IP_TCP).mlir("parsed")


def test_llvm_ir_and_asm():
    app = netvm.compile(IP_TCP)
    ir = app.llvm_ir()
    assert "define" in ir and "@netvm_app_ip_tcp" in ir
    assert "aarch64" in app.llvm_ir(target="aarch64-linux-gnu")
    assert "ret" in app.asm()
    arm = app.asm(target="aarch64-linux-gnu")
    assert "ret" in arm and "%rsp" not in arm


def _elf_machine(code: bytes) -> int:
    assert code[:4] == b"\x7fELF"
    return int.from_bytes(code[18:20], "little")


def test_compile_object(tmp_path):
    app = netvm.compile(IP_TCP)
    path = tmp_path / "f.o"
    code = app.compile_object(target="aarch64-linux-gnu", path=path)
    assert path.read_bytes() == code
    assert _elf_machine(code) == 183  # EM_AARCH64
    host = app.compile_object(descriptor="netvm_app")
    assert _elf_machine(host) == 62  # EM_X86_64
    assert b"netvm_app" in host


def test_unsupported_target():
    with pytest.raises(ValueError):
        netvm.compile(IP_TCP).compile_object(target="mips-linux-gnu")


def test_pass_statistics():
    stats = netvm.compile(IP_TCP).pass_statistics
    assert stats and all(isinstance(s, netvm.PassStatistic) for s in stats)
    passes = {s.pass_name for s in stats}
    assert "netvm-insert-bounds-checks" in passes
    checks = [s for s in stats if s.pass_name == "netvm-insert-bounds-checks"]
    assert checks[0].statistic == "checks" and checks[0].value > 0
    # Each application counts only its own compile.
    assert netvm.compile(IP_TCP).pass_statistics == stats


def test_netil_syntax_error():
    with pytest.raises(netvm.CompileError) as info:
        netvm.compile("segment .push\n  pop\n  bogus 3\n  ret\nends\n",
                      name="bad")
    error = info.value
    assert error.errors and error.errors == error.diagnostics
    d = error.diagnostics[0]
    assert isinstance(d, netvm.Diagnostic)
    assert d.severity == "error"
    assert d.file == "bad.netil" and d.line == 3 and d.column == 3
    assert "bogus" in d.message
    assert d.rendered.startswith("bad.netil:3:3: error:")
    assert "^" in d.rendered
    assert str(d) == d.rendered
    assert "bad.netil:3:3" in repr(d)
    assert str(error).startswith("bad.netil:3:3: error:")


def test_nvapp_error_with_note():
    text = "application a\nsource s\nsink s\n"
    with pytest.raises(netvm.CompileError) as info:
        netvm.compile(text, lang="nvapp", name="dup")
    d = info.value.diagnostics[0]
    assert "declared twice" in d.message
    assert (d.file, d.line) == ("dup.nvapp", 3)
    assert d.notes and d.notes[0].severity == "note"
    assert d.notes[0].line == 2


def test_missing_file():
    with pytest.raises(netvm.CompileError, match="cannot read"):
        netvm.compile(pathlib.Path("/nonexistent/x.netil"))


def test_source_bytes_not_utf8():
    # Bytes that are not text are a CompileError naming the byte, not a
    # UnicodeDecodeError.
    with pytest.raises(netvm.CompileError,
                       match=r"not UTF-8 text \(byte 0xff at offset 3\)"):
        netvm.compile(b"abc\xff")


def test_missing_nvapp_member():
    with pytest.raises(netvm.CompileError, match="cannot read 'gone.netil'"):
        netvm.compile('source s\npe p = "gone.netil"\n', lang="nvapp")


def test_pcap_filter_error():
    with pytest.raises(netvm.CompileError) as info:
        netvm.compile("tcp port 8x0", lang="pcap-filter")
    d = info.value.diagnostics[0]
    assert d.message == "unknown port '8x0'"
    assert (d.file, d.line, d.column) == ("<pcap-filter>", 1, 10)
    assert d.rendered.endswith("^")


def test_netpfl_error():
    with pytest.raises(netvm.CompileError) as info:
        netvm.compile("tcp.dport ==", lang="netpfl")
    d = info.value.diagnostics[0]
    assert "syntax error" in d.message and d.column == 13


def test_bad_protodb():
    with pytest.raises(netvm.CompileError, match="nothing.xml"):
        netvm.compile("tcp", lang="netpfl", protodb="/nothing.xml")


def test_bad_mlir():
    with pytest.raises(netvm.CompileError) as info:
        netvm.compile("module { netvm.bogus }", lang="mlir", name="m")
    assert info.value.diagnostics[0].file == "m.mlir"


def test_inputs_dir_program():
    app = netvm.compile(INPUTS / "mark.netil")
    assert app.pes == ["mark"]


def test_writes_packets():
    assert not netvm.compile(IP_TCP).writes_packets
    assert not netvm.compile(CLASSIFY).writes_packets
    assert netvm.compile(INPUTS / "mark.netil").writes_packets
