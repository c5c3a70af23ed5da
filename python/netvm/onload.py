"""UDP sockets over the onload layer's three designs (docs/onload.md,
"Socket API").

::

    from netvm import onload

    stack = onload.Stack("onloader")        # or "emu-nic", "softnic"
    sock = stack.bind(9000)
    stack.feed(frames)                      # bytes, a list of them, or a pcap
    while (got := sock.recvfrom(2048)) is not None:
        data, (ip, port) = got
        sock.send((ip, port), data)         # back through the transmit path
    stack.transmitted()                     # the frames that left, as bytes
    stack.stats()                           # host cycles, drops by place, ...

A stack is one emulated machine for its whole life: what is on the NP
(control blocks, rings, buffers, work in flight) carries over from call to
call, and every call runs it on along one emulated clock (stack.now;
stack.compute(cycles) is the program's own work between calls). recv
never waits longer than the wire lasts: with nothing queued for the socket
the machine runs until a datagram reaches it or everything fed has been
handled, and None means the socket got nothing. Every figure is emulated
(exact).
"""

from __future__ import annotations

import errno
import ipaddress
import os
from typing import Iterable, List, Optional, Tuple, Union

from . import _netvm

__all__ = ["Stack", "Socket", "udp_frame"]

# The C API's statuses (netvm/onload/socket.h).
_OK, _WOULD_BLOCK = 0, 1
_INVALID, _IN_USE, _NO_SPACE, _IO, _FAILED = -1, -2, -3, -4, -5

Address = Tuple[str, int]


def _ip(address: Union[str, int]) -> int:
    return int(ipaddress.IPv4Address(address))


class Stack:
    """A UDP/IP stack of one design (emu-nic, softnic, onloader) on the
    emulator, with the host/NP interface's features as netvm-onload sets
    them."""

    def __init__(self, design: str = "onloader", *,
                 pipelined_dma: bool = True, adaptive_updates: bool = True,
                 combining: bool = True, notify: str = "adaptive",
                 mapping_cache: bool = True,
                 dma_read_mbps: Optional[float] = None, rx_mes: int = 2,
                 tx_mes: int = 2, address: str = "10.0.0.2"):
        self.design = design
        self._stack = _netvm.onload_open(
            design, pipelined_dma, adaptive_updates, combining, notify,
            mapping_cache, dma_read_mbps or 0.0, rx_mes, tx_mes,
            _ip(address))

    def _check(self, status: int) -> None:
        if status in (_OK, _WOULD_BLOCK):
            return
        message = self._stack.error()
        if status == _IN_USE:
            raise OSError(errno.EADDRINUSE, message)
        if status == _NO_SPACE:
            raise OSError(errno.ENOBUFS, message)
        if status == _IO:
            raise OSError(message)
        if status == _FAILED:
            raise RuntimeError(message)
        raise ValueError(message)

    def bind(self, port: int) -> "Socket":
        """A socket bound to UDP port `port` (1-65535). OSError(EADDRINUSE)
        if it is bound already, OSError(ENOBUFS) when the socket table (the
        onloader's control blocks in SRAM) is full, ValueError out of
        range."""
        if port < 0:
            raise ValueError(f"port {port} is out of range (1-65535)")
        status, socket = self._stack.bind(port)
        self._check(status)
        return Socket(self, socket, port)

    def feed(self, frames: Union[bytes, str, os.PathLike,
                                 Iterable[bytes]]) -> None:
        """Puts received frames on the wire: one frame (bytes), several
        (an iterable of bytes), or the packets of a pcap file (a path)."""
        if isinstance(frames, (bytes, bytearray)):
            self._check(self._stack.feed(bytes(frames)))
        elif isinstance(frames, (str, os.PathLike)):
            self._check(self._stack.feed_pcap(os.fspath(frames)))
        else:
            for frame in frames:
                self._check(self._stack.feed(bytes(frame)))

    def flush(self) -> None:
        """Runs the stack's machine until everything fed has been handled
        and every datagram sent has left."""
        self._check(self._stack.flush())

    def compute(self, cycles: int) -> None:
        """The program's own work between calls: the host is busy for
        `cycles` emulated cycles while the NP goes on."""
        if cycles < 0:
            raise ValueError(f"negative cycles: {cycles}")
        self._check(self._stack.compute(cycles))

    @property
    def now(self) -> int:
        """The emulated clock, in cycles (frames fed now reach the wire at
        this cycle)."""
        return self._stack.now()

    def transmitted_at(self) -> List[int]:
        """The cycle each frame of transmitted() left the fabric (sends
        are flushed first)."""
        self.flush()
        return self._stack.transmitted_at()

    def transmitted(self) -> List[bytes]:
        """Every frame that left the fabric so far, in the order it left
        (sends are flushed first)."""
        status, frames = self._stack.transmitted()
        self._check(status)
        return frames

    def stats(self) -> dict:
        """Host work (HostCosts' model, per call), drops by place, and the
        traffic so far (after a flush)."""
        status, stats = self._stack.stats()
        self._check(status)
        return stats


class Socket:
    """A bound UDP socket of a Stack."""

    def __init__(self, stack: Stack, number: int, port: int):
        self._stack = stack
        self.number = number
        self.port = port

    def recvmsg(self, bufsize: int = 65535
                ) -> Optional[Tuple[bytes, Address, int]]:
        """The next datagram: (at most `bufsize` bytes of it, the sender,
        its full length; longer than the data when truncated, as POSIX UDP
        does), or None when the wire has nothing more for this socket."""
        status, data, length, ip, port = self._stack._stack.recv(
            self.number, bufsize)
        self._stack._check(status)
        if status == _WOULD_BLOCK:
            return None
        return data, (str(ipaddress.IPv4Address(ip)), port), length

    def recvfrom(self, bufsize: int = 65535) -> Optional[Tuple[bytes,
                                                              Address]]:
        """(data, (ip, port)) of the next datagram, or None."""
        got = self.recvmsg(bufsize)
        return None if got is None else got[:2]

    def recv(self, bufsize: int = 65535) -> Optional[bytes]:
        """The next datagram's data (at most `bufsize` bytes), or None."""
        got = self.recvmsg(bufsize)
        return None if got is None else got[0]

    def np_count(self) -> int:
        """Onloader: the datagram count the receiving MEs keep in this
        socket's control block in SRAM (ValueError in other designs)."""
        status, count = self._stack._stack.np_count(self.number)
        if status != 0:
            raise ValueError("only the onloader keeps control blocks")
        return count

    def send(self, address: Address, data: bytes) -> None:
        """Sends `data` (at most 1472 bytes) to (ip, port) through the
        design's transmit path: the host takes it up as the machine runs
        on; flush() (or transmitted()) waits until it has left."""
        ip, port = address
        if not 0 <= port <= 0xffff:
            raise ValueError(f"port {port} is out of range (1-65535)")
        self._stack._check(self._stack._stack.send(self.number, _ip(ip), port,
                                                   bytes(data)))


def udp_frame(src: Address, dst: Address, payload: bytes, *,
              bad_checksum: bool = False, fragment: bool = False) -> bytes:
    """An Ethernet/IPv4/UDP frame with correct checksums (unless
    `bad_checksum`; `fragment` sets More Fragments): traffic to feed."""
    def csum(data: bytes) -> int:
        if len(data) % 2:
            data += b"\0"
        s = sum(int.from_bytes(data[i:i + 2], "big")
                for i in range(0, len(data), 2))
        while s >> 16:
            s = (s & 0xffff) + (s >> 16)
        return s

    sip, dip = _ip(src[0]).to_bytes(4, "big"), _ip(dst[0]).to_bytes(4, "big")
    ulen = 8 + len(payload)
    ip = bytearray(20)
    ip[0], ip[8], ip[9] = 0x45, 64, 17
    ip[2:4] = (20 + ulen).to_bytes(2, "big")
    ip[6:8] = (0x2000 if fragment else 0x4000).to_bytes(2, "big")
    ip[12:16], ip[16:20] = sip, dip
    ip[10:12] = (~csum(bytes(ip)) & 0xffff).to_bytes(2, "big")
    udp = bytearray(src[1].to_bytes(2, "big") + dst[1].to_bytes(2, "big") +
                    ulen.to_bytes(2, "big") + b"\0\0") + payload
    check = ~csum(sip + dip + bytes([0, 17]) + ulen.to_bytes(2, "big") +
                  bytes(udp)) & 0xffff
    check = check or 0xffff
    if bad_checksum:
        check ^= 0x5a5a
    udp[6:8] = check.to_bytes(2, "big")
    eth = bytes([2, 3, 4, 5, 6, 7, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
                 8, 0])
    return eth + bytes(ip) + bytes(udp)
