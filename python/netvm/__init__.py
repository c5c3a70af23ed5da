"""Compile, inspect and run NetVM applications from Python.

netvm compiles packet-processing applications -- NetIL programs, multi-NetPE
application descriptions (.nvapp), NetPFL filters and tcpdump expressions --
into the ``netvm`` MLIR dialect, optimizes them, and runs them as native code
(JIT) or writes objects for x86-64 and AArch64. This package drives the same
pipeline as the ``netc`` and ``netvm-run`` tools::

    import netvm

    app = netvm.compile("tcp port 80", lang="pcap-filter")
    print(app.mlir("optimized"))            # the IR after the -O2 pipeline
    inst = app.jit()                         # native code, private memory
    result = inst.run(packet_bytes)          # one packet -> Result
    if result:                               # it left through a sink
        print(result.sink)
    print(inst.run_pcap("trace.pcap"))       # {'match': 123}

    me = netvm.compile("ip", lang="pcap-filter", target="me")
    open("ip.img", "wb").write(me.image)     # the microengine image
    emu = netvm.Instance(me, engine="emu")   # on the ME emulator
    print(emu.run(packet_bytes), emu.emulator_stats()["cycles"])

Errors in the source raise :class:`CompileError`, whose ``diagnostics`` are
:class:`Diagnostic` records (severity, message, file, line, column).
See docs/python.md for the whole tour.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from typing import Iterable, Mapping, NamedTuple, Optional, Sequence, Union

from . import _netvm
from ._netvm import (
    EXCEPTION_KINDS,
    BatchResult,
    Diagnostic,
    Instance,
    MEProgram,
    Output,
    PacketException,
    Result,
)

__all__ = [
    "compile",
    "Application",
    "CompileError",
    "Diagnostic",
    "Instance",
    "MEProgram",
    "me_program",
    "LINK_TYPES",
    "pcap_link_type",
    "Result",
    "Output",
    "PacketException",
    "BatchResult",
    "PassStatistic",
    "EXCEPTION_KINDS",
    "LANGUAGES",
    "STAGES",
    "read_pcap",
    "PcapPacket",
    "pack",
    "emulate",
]

#: The source languages :func:`compile` accepts.
LANGUAGES = ("netil", "nvapp", "mlir", "netpfl", "pcap-filter")
#: The stages :meth:`Application.mlir` prints.
STAGES = ("input", "instrumented", "optimized", "llvm-dialect")
#: The targets :func:`compile` accepts.
TARGETS = ("native", "me")
#: The engines :class:`Instance` runs on.
ENGINES = ("native", "interp", "emu")

_FILTERS = ("netpfl", "pcap-filter")
_Source = Union[str, bytes, "os.PathLike[str]"]


class CompileError(Exception):
    """The source did not compile. ``diagnostics`` holds every message (a
    list of :class:`Diagnostic`); ``str(error)`` shows the errors as netc
    prints them."""

    def __init__(self, diagnostics: Iterable[Diagnostic]):
        self.diagnostics = list(diagnostics)
        text = "\n".join(d.rendered for d in self.errors)
        super().__init__(text or "compilation failed")

    @property
    def errors(self) -> list:
        """The diagnostics of severity 'error'."""
        return [d for d in self.diagnostics if d.severity == "error"]


class _SourceDiagnostic(NamedTuple):
    """A diagnostic made on the Python side (the fields of Diagnostic)."""

    severity: str
    message: str
    file: str
    line: int
    column: int
    rendered: str
    notes: list


def _source_error(name: str, message: str) -> CompileError:
    return CompileError([_SourceDiagnostic("error", message, name, 0, 0,
                                           f"{name}: error: {message}", [])])


class PassStatistic(NamedTuple):
    """A counter of one of netvm's passes (``netc --mlir-pass-statistics``)."""

    pass_name: str  #: the pass argument, e.g. 'netvm-simplify'
    statistic: str  #: e.g. 'masks'
    value: int


class Application:
    """A compiled application: its IR at every stage, code for any target,
    and instances to run. Made by :func:`compile`."""

    def __init__(self, impl: _netvm.Application, diagnostics: list):
        self._impl = impl
        #: Warnings (and remarks) of a successful compile.
        self.diagnostics: list = diagnostics

    @property
    def name(self) -> str:
        """The application's name."""
        return self._impl.name

    @property
    def sources(self) -> list:
        """Names of the sources (input ports), in port order."""
        return self._impl.sources

    @property
    def sinks(self) -> list:
        """Names of the sinks (output ports), in port order."""
        return self._impl.sinks

    @property
    def pes(self) -> list:
        """Names of the NetPEs."""
        return self._impl.pes

    @property
    def opt_level(self) -> int:
        """The -O level it was optimized at."""
        return self._impl.opt_level

    @property
    def writes_packets(self) -> bool:
        """Whether a handler may write packet memory (then batches run on
        copies of the caller's packets; otherwise in place)."""
        return self._impl.writes_packets

    @property
    def pass_statistics(self) -> list:
        """What netvm's passes did while optimizing (list of
        :class:`PassStatistic`, in the order first counted)."""
        return [PassStatistic(*s) for s in self._impl.pass_statistics]

    def mlir(self, stage: str = "optimized") -> str:
        """The IR as text at ``stage``:

        - ``"input"``: what the front end made;
        - ``"instrumented"``: after the safety passes only (``netc -O0``);
        - ``"optimized"``: after the pipeline of the -O level (``netc``);
        - ``"llvm-dialect"``: lowered to MLIR's LLVM dialect.
        """
        return self._impl.mlir(stage)

    def llvm_ir(self, target: Optional[str] = None,
                cpu: Optional[str] = None) -> str:
        """LLVM IR, optimized at the -O level, for ``target`` (a triple such
        as ``"aarch64-linux-gnu"``; default: this machine)."""
        return self._impl.llvm_ir(target or "", cpu or "")

    def asm(self, target: Optional[str] = None,
            cpu: Optional[str] = None) -> str:
        """Assembly for ``target`` (default: this machine), as ``netc -S``."""
        return self._impl.asm(target or "", cpu or "")

    def compile_object(self, target: Optional[str] = None,
                       path: Optional[Union[str, "os.PathLike[str]"]] = None,
                       *, cpu: Optional[str] = None,
                       descriptor: Optional[str] = None) -> bytes:
        """An object file for ``target`` (default: this machine), as
        ``netc -c``: link it with the runtime (libnetvm-rt.a, see
        docs/native.md). Written to ``path`` if given; returned as bytes.
        ``descriptor`` names the exported descriptor (default
        ``netvm_app_<name>``)."""
        code = self._impl.object_code(target or "", cpu or "",
                                      descriptor or "")
        if path is not None:
            with open(path, "wb") as f:
                f.write(code)
        return code

    @property
    def target(self) -> str:
        """``"native"``, or ``"me"`` when compiled for the microengines."""
        return self._impl.target

    def me_program(self) -> MEProgram:
        """The application compiled for the microengines (once, for the
        machine given to :func:`compile`): the emulator image, its assembly
        and layout. Raises :class:`CompileError` if the ME back end refuses
        the application."""
        return self._impl.me_program()

    @property
    def image(self) -> bytes:
        """The microengine image (``me_program().image``), as
        ``netvm-me-as`` writes it."""
        return self.me_program().image

    @property
    def assembly(self) -> str:
        """The microengine image as ME assembly (``me_program().assembly``)."""
        return self.me_program().assembly

    @property
    def layout(self) -> dict:
        """Where the ME image keeps ports, memories and its event log."""
        return self.me_program().layout

    def instance(self, engine: str = "native", *, watchdog: int = 1 << 20,
                 machine: Optional[Mapping[str, object]] = None) -> Instance:
        """A new :class:`Instance` on ``engine`` (one of :data:`ENGINES`):
        ``Instance(self, engine, ...)``."""
        return Instance(self, engine, watchdog=watchdog, machine=machine)

    def jit(self, *, watchdog: int = 1 << 20) -> Instance:
        """Compile to native code in this process (once per application) and
        return a new :class:`Instance`: private data memory, init handlers
        already run. ``watchdog``: loop iterations a packet may run."""
        if watchdog < 0:
            raise ValueError("watchdog must not be negative")
        return self._impl.jit(watchdog)

    def __repr__(self) -> str:
        return (f"Application({self.name!r}, pes={self.pes}, "
                f"sources={self.sources}, sinks={self.sinks}, "
                f"opt_level={self.opt_level})")


def _language_of(path: str) -> str:
    if path.endswith(".nvapp"):
        return "nvapp"
    if path.endswith(".mlir"):
        return "mlir"
    return "netil"


def _text(source) -> str:
    if isinstance(source, bytes):
        try:
            return source.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _source_error(
                "<source>", f"the source is not UTF-8 text (byte "
                f"0x{source[e.start]:02x} at offset {e.start})") from None
    return source


def compile(source: Union[_Source, Sequence[_Source]],
            lang: Optional[str] = None, *, opt_level: int = 2,
            protodb: Optional[Union[str, "os.PathLike[str]"]] = None,
            name: Optional[str] = None,
            files: Optional[Mapping[str, str]] = None,
            target: str = "native",
            machine: Optional[Mapping[str, object]] = None,
            link_type: Union[int, str, None] = None) -> Application:
    """Compile an application and optimize it at ``opt_level`` (0-3).

    ``source`` is the text of the program (``str`` or ``bytes``), a file
    (``pathlib.Path`` or any ``os.PathLike``), or a list of NetIL programs
    (texts or files) chained into one application as ``netc a.netil
    b.netil`` does. ``lang`` is one of :data:`LANGUAGES`; by default
    ``"netil"`` for text, and for files what the extension says (``.nvapp``,
    ``.mlir``, otherwise NetIL). Filters (``"netpfl"``, ``"pcap-filter"``)
    need ``lang``.

    ``name`` names the application (and a NetIL text's NetPE). ``protodb``
    is a NetPDL database file for NetPFL (default: netvm's own). ``files``
    maps file names to texts, for the NetIL files an ``.nvapp`` given as text
    names (a multi-NetPE application without files on disk).

    ``target="me"`` also compiles the application for the microengines
    (refusals of the ME back end raise :class:`CompileError`): the result's
    ``image``, ``assembly`` and ``layout`` are then ready, and
    ``Instance(app, engine="emu")`` runs it on the ME emulator. ``machine``
    gives the machine by emulator option names, as :func:`emulate`'s
    ``options`` (e.g. ``{"mes": 4}``).

    ``link_type`` is the link type a tcpdump expression
    (``lang="pcap-filter"``) is compiled for, as ``pcap_compile`` takes it
    from the capture: a DLT number, a name of :data:`LINK_TYPES`, or a pcap
    file (``pathlib.Path``) whose link type and byte order to take, as
    ``netvm-run -r`` does; by default Ethernet. The application then reads
    only traces of that link type.

    Raises :class:`CompileError` with structured diagnostics on errors,
    ``ValueError``/``TypeError`` for bad arguments.
    """
    if not isinstance(opt_level, int) or isinstance(opt_level, bool) or \
            not 0 <= opt_level <= 3:
        raise ValueError(f"opt_level must be 0, 1, 2 or 3, not {opt_level!r}")
    many = isinstance(source, (list, tuple))
    items = list(source) if many else [source]
    if not items:
        raise ValueError("compile() needs at least one source")
    inputs = []
    for item in items:
        if isinstance(item, (str, bytes)):
            inputs.append((None, _text(item)))
        elif isinstance(item, os.PathLike):
            inputs.append((os.fspath(item), None))
        else:
            raise TypeError("source must be text (str or bytes), a path "
                            "(os.PathLike) or a list of them, not "
                            f"{type(item).__name__}")
    if lang is None:
        first = inputs[0][0]
        lang = _language_of(first) if first is not None else "netil"
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}: use one of "
                         f"{', '.join(LANGUAGES)}")
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}: use one of "
                         f"{', '.join(TARGETS)}")
    link, swapped = 1, False
    if link_type is not None:
        if lang != "pcap-filter":
            raise ValueError("link_type applies to tcpdump expressions "
                             "(lang='pcap-filter'); NetIL applications and "
                             "NetPFL filters read Ethernet frames")
        if isinstance(link_type, os.PathLike):
            link, swapped = _pcap_link(link_type)
        elif isinstance(link_type, str):
            if link_type not in LINK_TYPES:
                raise ValueError(f"unknown link type {link_type!r}: use one "
                                 f"of {', '.join(LINK_TYPES)} or a number")
            link = LINK_TYPES[link_type]
        elif isinstance(link_type, int) and not isinstance(link_type, bool):
            link = link_type
        else:
            raise TypeError("link_type must be a DLT number, a name or a "
                            "pcap file (os.PathLike), not "
                            f"{type(link_type).__name__}")
    if len(inputs) > 1 and lang != "netil":
        raise ValueError("only NetIL programs can be chained; describe "
                         "other applications in an .nvapp")
    extension = {"netil": ".netil", "nvapp": ".nvapp", "mlir": ".mlir"}
    named = []
    for i, (path, text) in enumerate(inputs):
        if path is None:
            if lang in _FILTERS:
                path = f"<{lang}>"
            elif len(inputs) > 1:
                path = f"pe{i}{extension[lang]}"
            else:
                path = f"{name or 'app'}{extension[lang]}"
        named.append((path, text))
    file_texts = {}
    for file_name, text in (files or {}).items():
        if not isinstance(text, (str, bytes)):
            raise TypeError(f"files[{file_name!r}] must be the file's text")
        file_texts[os.fspath(file_name)] = _text(text)
    impl, diagnostics = _netvm.compile(
        lang, named, file_texts, opt_level,
        os.fspath(protodb) if protodb is not None else "", name or "",
        target, _machine_options(machine), link, swapped)
    if impl is None:
        raise CompileError(diagnostics)
    return Application(impl, diagnostics)


#: The link types tcpdump expressions compile for, by libpcap's names, with
#: their DLT numbers (``compile(..., link_type=...)``).
LINK_TYPES = {"NULL": 0, "EN10MB": 1, "RAW": 12, "LOOP": 108,
              "LINUX_SLL": 113, "IPV4": 228, "IPV6": 229, "LINUX_SLL2": 276}


def _pcap_link(path) -> tuple:
    """A pcap file's link type (as pcap_datalink gives it) and whether its
    byte order is the opposite of this machine's."""
    with open(path, "rb") as f:
        header = f.read(24)
    order = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<",
             b"\xa1\xb2\xc3\xd4": ">", b"\xa1\xb2\x3c\x4d": ">"}.get(
                 header[:4])
    if len(header) < 24 or order is None:
        raise ValueError(f"{os.fspath(path)}: not a pcap file")
    link = struct.unpack_from(order + "I", header, 20)[0] & 0x0FFFFFFF
    swapped = (order == "<") != (sys.byteorder == "little")
    return (12 if link == 101 else link), swapped


def pcap_link_type(path: Union[str, "os.PathLike[str]"]) -> int:
    """The link type of a pcap file, as libpcap's ``pcap_datalink`` gives
    it (a file's LINKTYPE_RAW, 101, is DLT_RAW, 12)."""
    return _pcap_link(path)[0]


class PcapPacket(NamedTuple):
    """A packet of a pcap file, as :func:`read_pcap` returns it with
    ``details=True`` (the arguments :meth:`Instance.run` takes)."""

    data: bytes
    seconds: int
    microseconds: int
    wire_length: int


def read_pcap(path: Union[str, "os.PathLike[str]"], *,
              details: bool = False) -> list:
    """The packets of a pcap file (microsecond or nanosecond timestamps,
    either byte order): a list of ``bytes`` (the captured bytes), or with
    ``details=True`` of :class:`PcapPacket` (bytes, timestamp, length on
    the wire). A file cut in the middle of a record raises ``OSError``
    with libpcap's words, as ``Instance.run_pcap`` does."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise ValueError(f"{os.fspath(path)}: not a pcap file (too short)")
    magic = data[:4]
    order = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<",
             b"\xa1\xb2\xc3\xd4": ">", b"\xa1\xb2\x3c\x4d": ">"}.get(magic)
    if order is None:
        raise ValueError(f"{os.fspath(path)}: not a pcap file "
                         f"(magic {magic.hex()})")
    nanoseconds = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    record = struct.Struct(order + "IIII")
    packets = []
    at = 24
    while at < len(data):
        if at + 16 > len(data):
            raise OSError(f"{os.fspath(path)}: truncated dump file; tried to "
                          f"read 16 header bytes, only got {len(data) - at}")
        seconds, fraction, caplen, wire = record.unpack_from(data, at)
        at += 16
        if at + caplen > len(data):
            raise OSError(f"{os.fspath(path)}: truncated dump file; tried to "
                          f"read {caplen} captured bytes, only got "
                          f"{len(data) - at}")
        packet = data[at:at + caplen]
        at += caplen
        if details:
            micro = fraction // 1000 if nanoseconds else fraction
            packet = PcapPacket(packet, seconds, micro, max(wire, len(packet)))
        packets.append(packet)
    return packets


def pack(packets: Iterable[bytes]):
    """Concatenate packets into one uint8 NumPy buffer and the offsets
    :meth:`Instance.run_batch` takes (``run_batch(buffer, offsets)``)."""
    import numpy as np

    packets = [bytes(p) for p in packets]
    offsets = np.zeros(len(packets) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in packets], out=offsets[1:])
    buffer = np.frombuffer(b"".join(packets), dtype=np.uint8)
    return buffer, offsets


def _machine_option_value(name: str, value) -> str:
    """An option value as netvm-emu's --name=value text."""
    if isinstance(value, bool):
        raise TypeError(f"option {name!r}: a bool is not a value")
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, Mapping):  # {"sram": 120, "dram": 240}
        return ",".join(f"{unit}={_machine_option_value(name, v)}"
                        for unit, v in value.items())
    if isinstance(value, (list, tuple)):  # ["sram=120", "dram=240"]
        return ",".join(_machine_option_value(name, v) for v in value)
    raise TypeError(f"option {name!r}: {type(value).__name__} is not a "
                    "value (str, int, float, or a dict or list of them)")


def _machine_options(options: Optional[Mapping[str, object]]) -> list:
    """Machine options as (netvm-emu name, value text) pairs."""
    if options is None:
        return []
    if not isinstance(options, Mapping):
        raise TypeError("machine options must be a dict of option names, "
                        f"not {type(options).__name__}")
    return [(str(key).replace("_", "-"), _machine_option_value(key, value))
            for key, value in options.items()]


def me_program(assembly: Optional[str] = None, *,
               file: Optional[_Source] = None, layout: Mapping[str, object],
               machine: Optional[Mapping[str, object]] = None,
               name: str = "") -> MEProgram:
    """An :class:`MEProgram` written by hand: ME assembly (``assembly``
    text, or a ``.s`` ``file``) that follows the layout protocol of
    compiled applications, and its ``layout`` as a dict with the keys of
    ``MEProgram.layout`` (``sources``, ``sinks``, ``pes``,
    ``data_memory`` and ``persistent`` as lists of ``(memory, address,
    size)``, ``shared_memory``, ``event_count``, ``event_log``,
    ``event_capacity``, ``locations``, ``watchdog_address``,
    ``info_offset``, ``info_size``, ``info_used``). Run it with
    ``Instance(program, engine="emu")``."""
    if (assembly is None) == (file is None):
        raise TypeError("give the program as assembly or as file, not both")
    file_name = "<assembly>"
    if file is not None:
        file_name = os.fspath(file)
        with open(file_name, encoding="utf-8") as f:
            assembly = f.read()
    return _netvm.me_program(assembly, file_name, dict(layout),
                             _machine_options(machine), name)


def emulate(source: Optional[str] = None, *, file: Optional[_Source] = None,
            packets: Union[Iterable[bytes], Mapping[int, Iterable[bytes]]] = (),
            mes: int = 8,
            clock_mhz: float = 600.0, max_cycles: int = 0,
            options: Optional[Mapping[str, object]] = None) -> dict:
    """Assemble a microengine program (docs/me-isa.md) and run it on
    netvm's IXP-like emulator, feeding it ``packets`` through the receive
    port (0), or, given a dict ``{port: packets}``, through several of the
    16 receive ports. Give the assembly text as ``source`` or a ``.s``
    file as ``file`` (its ``.include`` files are found next to it).

    Returns a dict: ``transmitted`` (a list of ``(port, cycle, bytes)``
    in the order the packets left), ``cycles``, ``seconds`` (at
    ``clock_mhz``), ``stop_reason``, ``packets_offered``/``received``/
    ``dropped``/``sent``, ``bytes_received``/``sent``, ``mes`` (per ME:
    ``instructions``, ``busy_cycles``, ``context_swaps``, ``loaded``),
    ``scratch``/``sram``/``dram`` (controller statistics) and ``faults``
    (``me``, ``context``, ``pc``, ``instruction``, ``reason``, ``cycle``),
    and ``statistics``: everything ``netvm-emu --stats-json`` reports, as
    parsed JSON (per context, SRAM channel, port, ring, the host).
    The run is deterministic. Assembly errors raise ``ValueError`` with
    every ``file:line:col: error: ...`` message.

    ``options`` sets machine parameters by netvm-emu's option names
    (docs/me-isa.md, "Machine parameters"; ``_`` may stand for ``-``),
    applied after ``mes``, ``clock_mhz`` and ``max_cycles``: values are
    strings as on the command line, numbers, or for the list options a
    dict or list, e.g. ``{"latency": {"dram": 240}, "controller":
    "dram=0/0", "rbufs": 4, "line_rate": 2.5}``. A bad name or value
    raises ``ValueError`` saying what the option accepts.
    """
    if (source is None) == (file is None):
        raise TypeError("give the program as source or as file, not both")
    if file is not None:
        name = os.fspath(file)
        with open(name, encoding="utf-8") as f:
            source = f.read()
    else:
        name = "<source>"
    by_port = packets if isinstance(packets, Mapping) else {0: packets}
    data: list = []
    for port, port_packets in by_port.items():
        if not isinstance(port, int) or isinstance(port, bool) \
                or not 0 <= port < 16:
            raise ValueError(f"receive port {port!r} is not 0-15")
        while len(data) <= port:
            data.append([])
        for p in port_packets:
            if not isinstance(p, (bytes, bytearray, memoryview)):
                raise TypeError("packets must be bytes, bytearray or "
                                f"memoryview, not {type(p).__name__}")
            data[port].append(bytes(p))
    machine = _machine_options(options or {})
    result = _netvm.emulate(source, name, data, mes, clock_mhz, max_cycles,
                            machine)
    result["statistics"] = json.loads(result.pop("statistics_json"))
    return result
