# Type stubs of the extension module (nanobind.stubgen, then tightened by
# hand: bytes-like packets, ports and NetPEs by index or name, NumPy arrays).
"""The native part of the netvm package (see netvm.__doc__)."""

from collections.abc import Mapping, Sequence
import os
from typing import Union

import numpy

BytesLike = Union[bytes, bytearray, memoryview, numpy.ndarray]
Port = Union[int, str]
PE = Union[int, str]


class Diagnostic:
    """A compiler message and where it points."""

    @property
    def severity(self) -> str:
        """'error', 'warning', 'note' or 'remark'."""

    @property
    def message(self) -> str:
        """The message alone."""

    @property
    def file(self) -> str:
        """The file it points into ('' if none)."""

    @property
    def line(self) -> int:
        """1-based line (0 if none)."""

    @property
    def column(self) -> int:
        """1-based column (0 if none)."""

    @property
    def rendered(self) -> str:
        """The message as netc prints it, with the source line and a caret."""

    @property
    def notes(self) -> list[Diagnostic]:
        """Notes attached to it."""

    def __str__(self) -> str: ...

    def __repr__(self) -> str: ...

class Application:
    """A compiled application (see netvm.Application)."""

    @property
    def name(self) -> str: ...

    @property
    def sources(self) -> list[str]: ...

    @property
    def sinks(self) -> list[str]: ...

    @property
    def pes(self) -> list[str]: ...

    @property
    def opt_level(self) -> int: ...

    @property
    def writes_packets(self) -> bool: ...

    @property
    def pass_statistics(self) -> list[tuple[str, str, int]]: ...

    def mlir(self, stage: str) -> str: ...

    def llvm_ir(self, target: str, cpu: str) -> str: ...

    def asm(self, target: str, cpu: str) -> str: ...

    def object_code(self, target: str, cpu: str, descriptor: str) -> bytes: ...

    def jit(self, watchdog: int) -> Instance: ...

    @property
    def target(self) -> str: ...

    @property
    def machine(self) -> list[tuple[str, str]]: ...

    def me_program(self) -> MEProgram:
        """
        The application compiled for the microengines (once); raises CompileError if the ME back end refuses it.
        """

class MEProgram:
    """
    An application compiled for the microengines: the emulator image, its assembly and the layout a host needs to run it.
    """

    @property
    def name(self) -> str: ...

    @property
    def image(self) -> bytes:
        """The image as netvm-me-as writes it (bytes)."""

    @property
    def assembly(self) -> str:
        """The image as ME assembly (netvm-me-as assembles it)."""

    @property
    def layout(self) -> dict:
        """Ports, memories, event log and info memory, as a dict."""

    @property
    def report(self) -> list[dict]:
        """What each ME holds (a list of dicts)."""

    @property
    def machine(self) -> list[tuple[str, str]]:
        """The machine options it was made for."""

    @property
    def sources(self) -> list[str]: ...

    @property
    def sinks(self) -> list[str]: ...

    @property
    def pes(self) -> list[str]: ...

class Output:
    """
    A packet that left the application through a sink (an output port of the application).
    """

    @property
    def sink(self) -> str:
        """The sink's name."""

    @property
    def sink_index(self) -> int:
        """The sink's index in Instance.sinks."""

    @property
    def data(self) -> bytes:
        """The packet's bytes as it left."""

    @property
    def info(self) -> bytes:
        """Its info memory."""

    @property
    def timestamp(self) -> tuple[int, int]:
        """(seconds, microseconds) of the packet it came from."""

    def __repr__(self) -> str: ...

class PacketException:
    """
    A NetVM exception raised while processing a packet (a record, not a Python exception).
    """

    @property
    def kind(self) -> str:
        """e.g. 'packet_bounds' (see netvm.EXCEPTION_KINDS)."""

    @property
    def kind_index(self) -> int:
        """Index of kind in netvm.EXCEPTION_KINDS."""

    @property
    def pe(self) -> str:
        """The NetPE that raised it."""

    @property
    def handler(self) -> str:
        """'init', 'push' or 'pull'."""

    @property
    def location(self) -> str:
        """file:line:col of the NetIL instruction."""

    def __repr__(self) -> str: ...

class Result:
    """What happened to one packet."""

    @property
    def outputs(self) -> list[Output]:
        """The packets that left, in order (list of Output)."""

    @property
    def exceptions(self) -> list[PacketException]:
        """The exceptions raised (list of PacketException)."""

    @property
    def dropped(self) -> int:
        """Exchange buffers dropped."""

    @property
    def unconnected(self) -> int:
        """Packets sent to output ports with no connection."""

    @property
    def verdict(self) -> str:
        """
        'output', 'exception', 'drop', 'unconnected' or 'none' (an exception wins over outputs).
        """

    @property
    def sink(self) -> str | None:
        """The sink of the first output, or None."""

    @property
    def sink_index(self) -> int:
        """Index of the first output's sink, or -1."""

    def __bool__(self) -> bool: ...

    def __repr__(self) -> str: ...

class BatchResult:
    """Per-packet results of Instance.run_batch, as NumPy arrays."""

    @property
    def sink(self) -> numpy.ndarray:
        """int32: index of the first sink each packet left through, or -1."""

    @property
    def outputs(self) -> numpy.ndarray:
        """uint32: how many packets left for each (fan-out makes several)."""

    @property
    def exception(self) -> numpy.ndarray:
        """
        int32: kind of the first exception (index in netvm.EXCEPTION_KINDS), or -1.
        """

    @property
    def sinks(self) -> list[str]:
        """The sink names the indices refer to."""

    def counts(self) -> dict[str, int]:
        """Packets per sink (by their first output), as a dict."""

    def __len__(self) -> int: ...

    def __repr__(self) -> str: ...

class Instance:
    """
    A running instance of an application, with its own data memory and counters: native code (Application.jit()), the reference interpreter or the ME emulator (Instance(app, engine=...)). Use it from one thread at a time (one instance per thread).
    """

    def __init__(self, app: object, engine: str = 'native', *, watchdog: int = 1048576, machine: Mapping[str, object] | None = None) -> None:
        """
        Instantiate `app` (an Application, or an MEProgram) on `engine`: 'native' (the JIT, as Application.jit()), 'interp' (the reference interpreter) or 'emu' (compiled for the microengines and run on the ME emulator; `machine` adds emulator options). The init handlers run now.
        """

    @property
    def engine(self) -> str:
        """'native', 'interpreter' or 'emulator'."""

    def emulator_stats(self) -> dict | None:
        """
        The ME emulator's statistics summed over the runs so far (what netvm-emu --stats-json reports, as a dict), or None for other engines.
        """

    @property
    def name(self) -> str:
        """The application's name."""

    @property
    def sources(self) -> list[str]:
        """Source (input port) names; `port` arguments index them."""

    @property
    def sinks(self) -> list[str]:
        """Sink (output port) names."""

    @property
    def pes(self) -> list[str]:
        """NetPE names; `pe` arguments index them."""

    @property
    def init_exceptions(self) -> list[PacketException]:
        """Exceptions the init handlers raised."""

    def run(self, packet: BytesLike, port: Port = 0, *, wire_length: int | None = None, seconds: int = 0, microseconds: int = 0) -> Result:
        """
        Push one packet through source `port` (an index or a name) and return what happened to it (a Result). The packet is copied: the application never changes the caller's bytes.
        """

    def run_batch(self, packets: Union[Sequence[BytesLike], BytesLike], offsets: Sequence[int] | numpy.ndarray | None = None, port: Port = 0) -> BatchResult:
        """
        Push many packets, in order, and return per-packet results as NumPy arrays (a BatchResult). `packets` is a sequence of bytes-like objects, or one buffer (e.g. a uint8 array) cut by `offsets`: n+1 increasing positions, packet i being buffer[offsets[i]:offsets[i+1]]. Releases the GIL while the packets run.
        """

    def run_pcap(self, path: str | os.PathLike, port: Port = 0, limit: int | None = None) -> dict[str, int]:
        """
        Push every packet of a pcap file (at most `limit`) and return how many left through each sink, as a dict. Runs the application's batch entry without listening to outputs (the fastest way); releases the GIL. Other counters: counters().
        """

    def data(self, pe: PE = 0) -> numpy.ndarray:
        """
        Data memory of NetPE `pe` as a writable uint8 NumPy array (a view: writes change the instance).
        """

    def shared(self) -> numpy.ndarray:
        """Shared memory as a writable uint8 NumPy array (a view)."""

    def read_data(self, offset: int = 0, size: int | None = None, *, pe: PE = 0) -> bytes:
        """
        Copy `size` bytes (default: to the end) of NetPE `pe`'s data memory from `offset`.
        """

    def write_data(self, offset: int, data: BytesLike, *, pe: PE = 0) -> None:
        """Write bytes into NetPE `pe`'s data memory at `offset`."""

    def read_shared(self, offset: int = 0, size: int | None = None) -> bytes:
        """Copy bytes of shared memory."""

    def write_shared(self, offset: int, data: BytesLike) -> None:
        """Write bytes into shared memory."""

    def lookup_entries(self, pe: PE = 0) -> list[tuple[tuple[int, ...], int, int]]:
        """
        The entries of NetPE `pe`'s lookup coprocessor as a list of (key, value, stamp) tuples, key a tuple of words, in the table's order (docs/netil.md, 7.2).
        """

    def lookup_age(self, now: int, max_age: int, pe: PE = 0) -> int:
        """
        Delete the lookup entries older than `max_age` at time `now` (now - stamp > max_age, 32-bit unsigned); the number deleted.
        """

    def lookup_delete(self, key: Sequence[int], pe: PE = 0) -> bool:
        """
        Delete the lookup entry of `key` (a sequence of words); whether there was one.
        """

    def counters(self) -> dict[str, object]:
        """
        Counters since the instance was made, as a dict: packets, dropped, unconnected, exceptions {kind: n}, sinks {name: {packets, bytes}}, pes {name: {runs, sent, dropped, exceptions}}.
        """

    def __repr__(self) -> str: ...

EXCEPTION_KINDS: tuple[str, ...] = ...

HAVE_ME_CODEGEN: bool = ...

def compile(lang: str, inputs: Sequence[tuple[str, str | None]], files: Mapping[str, str], opt_level: int, protodb: str, name: str, target: str, machine: list[tuple[str, str]], link_type: int = 1, link_swapped: bool = False) -> tuple[Application | None, list[Diagnostic]]:
    """Compile; returns (Application or None, diagnostics)."""

def me_program(assembly: str, file_name: str, layout: dict, machine: list[tuple[str, str]], name: str) -> MEProgram:
    """An MEProgram from ME assembly and its layout (a dict)."""

def emulate(source: str, file_name: str, ports: list[list[bytes]], mes: int, clock_mhz: float, max_cycles: int, options: list[tuple[str, str]]) -> dict:
    """Assemble a microengine program and run it on the emulator."""

class CCoreSchema:
    """A C-CORE message schema."""

    def __init__(self, text: str, file: str = '<schema>') -> None: ...

    @property
    def formats(self) -> list[str]: ...

    def generate(self, format: str, count: int, seed: int, streams: Sequence[int], ranges: Mapping[str, tuple[int, int]], malformed: int) -> list[bytes]: ...

class CCoreChannels:
    """Channels and the classifier of a schema."""

    def __init__(self, schema: CCoreSchema) -> None: ...

    def open(self, stream: int, source: str, destination: str, port: int, format: str) -> None: ...

    def classify(self, message: bytes) -> str: ...

    def take(self, format: str) -> list[bytes]: ...

    def counters(self) -> dict[str, int]: ...

class CCoreChain:
    """A chain: an ME stage (a query or a multicast) and an optional host stage."""

    def __init__(self, schema: CCoreSchema, query: str | None, subscribers: Sequence[tuple[int, str]], host_query: str | None, params: Mapping[str, int], specialize: bool, rate_gbps: float, rudp: int, retransmit: bool) -> None: ...

    def run(self, messages: Sequence[bytes], swap: str | None, swap_at: int, swap_same: bool, reconfigure: Sequence[tuple[str, int, int]], auto_specialize: bool, stable_us: float, stable_messages: int) -> dict: ...

    def run_reliable(self, messages: Sequence[bytes], window: int, timeout_us: float, loss: int, reorder: int, control_loss: int, seed: int, drop: Sequence[int]) -> dict: ...

class CCoreResourceManager:
    """The resource manager's table of running chains."""

    def __init__(self, host_threads: int, keep_spare: bool) -> None: ...

    def add(self, schema: CCoreSchema, name: str, query: str | None, subscribers: Sequence[tuple[int, str]], params: Mapping[str, int], rate_gbps: float, side: str) -> dict: ...

    def remove(self, name: str) -> bool: ...

    def table(self) -> list[dict]: ...

    @property
    def free_mes(self) -> int: ...

    @property
    def spare_me(self) -> int: ...

    @property
    def free_host_threads(self) -> int: ...

    def text(self) -> str: ...

def ccore_place(schema: CCoreSchema, query: str | None, subscribers: Sequence[tuple[int, str]], params: Mapping[str, int], rate_gbps: float, busy_mes: int, keep_spare: bool) -> dict: ...
