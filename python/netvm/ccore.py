"""The C-CORE layer from Python: handler chains across the host and the
microengines (docs/ccore.md).

::

    from netvm import ccore

    schema = ccore.Schema(open("examples/ccore/flights.ccs").read())
    channels = ccore.Channels(schema)
    channels.open(1, "atlanta", "paris", 7000, "flight")
    messages = schema.generate("flight", 1000, ranges={"price": (0, 1000)})

    chain = ccore.Chain(schema, "from flight select price > $limit",
                        params={"limit": 500},
                        host_query="from flight project flightno, price")
    run = chain.run(messages, swap="spare", swap_at=100000,
                    reconfigure=[("limit", 800, 200000)])
    run.outputs, run.swap["downtime_cycles"], run.report["mes"][1]["role"]

    ccore.place(schema, "from flight select price > 500", rate_gbps=1.0)

Every figure of a run is emulated (exact), except the host stage's time.
Errors in a schema or a query raise ValueError with "file:line:col:
error: ..." lines.
"""

from __future__ import annotations

import json
from typing import (Dict, Iterable, List, Mapping, Optional, Sequence, Tuple,
                    Union)

from . import _netvm

__all__ = ["Schema", "Channels", "Chain", "ChainRun", "place",
           "ResourceManager"]


class Schema:
    """A message schema (the schema language of docs/ccore.md)."""

    def __init__(self, text: str, file: str = "<schema>"):
        self._schema = _netvm.CCoreSchema(text, file)

    @classmethod
    def load(cls, path: str) -> "Schema":
        with open(path) as f:
            return cls(f.read(), str(path))

    @property
    def formats(self) -> List[str]:
        """The formats' names, in the schema's order."""
        return list(self._schema.formats)

    def generate(self, format: str, count: int, seed: int = 1,
                 streams: Sequence[int] = (),
                 ranges: Optional[Mapping[str, Tuple[int, int]]] = None,
                 malformed: int = 0) -> List[bytes]:
        """A reproducible stream of messages of `format` (as `netvm-ccore
        gen`): integer fields drawn from `ranges` (the whole type
        otherwise), stream ids taken in turn, `malformed` percent truncated
        or of another format id."""
        return self._schema.generate(format, count, seed, list(streams),
                                     dict(ranges or {}), malformed)


class Channels:
    """Channels (source, destination, port, format) and the classifier
    that sorts messages by stream id into per-format queues, counting what
    it rejects and why."""

    def __init__(self, schema: Schema):
        self._channels = _netvm.CCoreChannels(schema._schema)

    def open(self, stream: int, source: str, destination: str, port: int,
             format: str) -> None:
        """Opens the channel (if new) and binds `stream` to it."""
        self._channels.open(stream, source, destination, port, format)

    def classify(self, message: bytes) -> str:
        """'queued', or why not: 'short', 'unknown-stream', 'wrong-format'."""
        return self._channels.classify(bytes(message))

    def take(self, format: str) -> List[bytes]:
        """Empties the queue of `format`: its messages in arrival order."""
        return self._channels.take(format)

    def counters(self) -> Dict[str, int]:
        return dict(self._channels.counters())


class ChainRun:
    """What a chain's run did: ``outputs`` (after the host stage),
    ``stages`` (a pipeline's ME stages in order: ``pes``, ``me``,
    ``messages``, ``runs``, ``sent``, ``dropped``, ``busy_cycles``,
    ``cycles_per_message``, ``utilization``; empty for one handler ME),
    ``from_mes`` (with ``from_mes_cycles``, the cycle each left the MEs,
    and ``from_mes_tags``, the input message it came from), the ME stage's ``me_runs``/``me_sent``/``me_dropped``,
    ``receive_drops``, ``cycles``, ``micros``, ``mean_latency_us`` (with a
    line rate), ``swap`` (a dict, or None), ``reconfigurations`` (one dict
    per handler a change reached), ``auto_swaps`` (automatic
    specialization's switches, dicts), ``report``, the resource
    report, and behind reliable UDP ``rudp``: the receiver's counts
    (``delivered``, ``lost``, ``rejected``, ``nacks_sent``,
    ``acks_sent``) and with retransmission the sender's
    (``fragments_sent``, ``fragments_resent``, ``fragments_lost``,
    ``fragments_reordered``, ``messages_resent``, ``timeouts``,
    ``go_backs``, ``acks_received``, ``nacks_received``,
    ``control_lost``, ``idle_gaps``, ``acknowledged``, ``done_cycle``,
    ``control_messages``)."""

    def __init__(self, raw: dict):
        self.__dict__.update(raw)
        self.report = json.loads(raw["report"])
        self.swap = raw.get("swap")
        self.rudp = raw.get("rudp")

    def __repr__(self) -> str:
        return (f"<ChainRun {len(self.outputs)} outputs, {self.cycles} "
                f"cycles>")


#: One query, or several in sequence (a pipeline of handlers).
Queries = Union[str, Sequence[str]]


def _queries(query):
    """A query, or several in sequence (a list, or one string with '|'
    between them): a pipeline of handlers, one ME stage each."""
    if query is None or isinstance(query, str):
        return query
    return " | ".join(query)


class Chain:
    """A chain: an ME stage (a query, or a multicast of `subscribers`,
    pairs (stream id, query)) on the emulator's MEs and an optional host
    stage (JIT). Several queries (a list, or 'Q1 | Q2') are a pipeline of
    handlers, each reading what the one before sends, each on its own ME
    (the run's ``stages`` gives each stage's figures; no swaps on such a
    chain). Compiled when made; run as often as wanted. With `rudp`
    (fragment payload bytes) the messages travel as reliable-UDP fragments
    reassembled on the ME in front of the stage: loss reporting, or with
    `retransmit` go-back-N retransmission (needs `rate_gbps`; docs/ccore.md,
    "Retransmission")."""

    def __init__(self, schema: Schema, query: Optional[Queries] = None, *,
                 subscribers: Iterable[Tuple[int, str]] = (),
                 host_query: Optional[str] = None,
                 params: Optional[Mapping[str, int]] = None,
                 specialize: bool = False, rate_gbps: float = 0.0,
                 rudp: int = 0, retransmit: bool = False):
        self.schema = schema
        self.rudp = rudp
        self._chain = _netvm.CCoreChain(schema._schema, _queries(query),
                                        list(subscribers), host_query,
                                        dict(params or {}), specialize,
                                        float(rate_gbps), rudp, retransmit)

    def run(self, messages: Iterable[bytes], *, swap: Optional[str] = None,
            swap_at: int = 100000, swap_same: bool = False,
            reconfigure: Iterable[Tuple[str, int, int]] = (),
            auto_specialize: bool = False, stable_us: float = 100.0,
            stable_messages: int = 0, loss: int = 0, reorder: int = 0,
            control_loss: int = 0, window: int = 8,
            timeout_us: float = 200.0, seed: int = 1,
            drop: Iterable[int] = ()) -> ChainRun:
        """Runs `messages` through the chain on a fresh emulator. `swap`
        ('spare' or 'in-place') hot-swaps the ME stage to its other form
        (generic <-> specialized; the same with `swap_same`) at ME cycle
        `swap_at`; `reconfigure` changes parameters of the generic ME stage
        in place: (name, value, cycle) each. `auto_specialize` swaps in
        the specialized form once the generic one's parameters have been
        stable for `stable_us` emulated microseconds and `stable_messages`
        messages, and the generic form back at a later reconfiguration
        (``auto_swaps`` of the run lists the switches). Behind reliable
        UDP (`rudp`), without those: the network loses `loss` percent of
        the fragments (from `seed`) and, with retransmission, delays
        `reorder` percent behind the next one, loses `control_loss`
        percent of the ACKs and NACKs and the first sending of each
        fragment in `drop` (stream ordinals); the sender keeps `window`
        messages in flight and resends after `timeout_us` without an
        ACK."""
        if self.rudp:
            if swap or list(reconfigure) or auto_specialize:
                raise ValueError("a chain behind reliable UDP runs without "
                                 "swap, reconfigure and auto_specialize")
            return ChainRun(self._chain.run_reliable(
                [bytes(m) for m in messages], window, float(timeout_us),
                loss, reorder, control_loss, seed, list(drop)))
        return ChainRun(self._chain.run([bytes(m) for m in messages], swap,
                                        swap_at, swap_same,
                                        list(reconfigure), auto_specialize,
                                        float(stable_us), stable_messages))


def place(schema: Schema, query: Optional[Queries] = None, *,
          subscribers: Iterable[Tuple[int, str]] = (),
          params: Optional[Mapping[str, int]] = None,
          rate_gbps: float = 0.0, busy_mes: int = 0,
          keep_spare: bool = True) -> Dict[str, object]:
    """Where the resource manager would put a new chain's handler
    (docs/ccore.md, "Resource manager and placement"): a dict with
    ``where`` ('me', 'host' or 'refused'), ``reason``, the estimates
    (``me_cycles``, ``host_ns``) and budgets per message."""
    return dict(_netvm.ccore_place(schema._schema, _queries(query),
                                   list(subscribers),
                                   dict(params or {}), float(rate_gbps),
                                   busy_mes, keep_spare))


class ResourceManager:
    """The resource manager's table of running chains (docs/ccore.md,
    "Resource manager and placement"): each chain placed is kept with the
    MEs or host thread it holds, its control-store words and predicted
    load; a new chain goes on what is left or is refused with the reason
    (which resource, how much it needs, how much is free); removing a
    chain frees what it held. Bookkeeping only: it does not run chains."""

    def __init__(self, host_threads: int = 2, keep_spare: bool = True):
        self._manager = _netvm.CCoreResourceManager(host_threads, keep_spare)

    def add(self, schema: Schema, name: str,
            query: Optional[Queries] = None, *,
            subscribers: Iterable[Tuple[int, str]] = (),
            params: Optional[Mapping[str, int]] = None,
            rate_gbps: float = 0.0, side: str = "auto") -> Dict[str, object]:
        """Places chain `name` (side 'auto', 'me' or 'host'): a dict with
        ``where`` ('me', 'host' or 'refused'), ``reason`` and ``id``."""
        return dict(self._manager.add(schema._schema, name, _queries(query),
                                      list(subscribers), dict(params or {}),
                                      float(rate_gbps), side))

    def remove(self, name: str) -> bool:
        """Removes a running chain and frees what it held (False: none of
        that name)."""
        return self._manager.remove(name)

    def table(self) -> List[Dict[str, object]]:
        """One dict per running chain, in the order they were placed."""
        return [dict(row) for row in self._manager.table()]

    @property
    def free_mes(self) -> int:
        return self._manager.free_mes

    @property
    def spare_me(self) -> int:
        return self._manager.spare_me

    @property
    def free_host_threads(self) -> int:
        return self._manager.free_host_threads

    def __str__(self) -> str:
        return self._manager.text()
