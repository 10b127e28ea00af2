"""Host-to-host messaging over TCP for the host-based baselines: length-prefixed numpy arrays."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable

import numpy as np

_LEN = struct.Struct("!Q")
# the element-wise reductions the host algorithms offer: a sum (integers wrap mod 2^width, as the
# switches' cells do) and a max (the block-exponent agreement of edge.formats)
OPS: dict[str, Callable[..., np.ndarray]] = {"sum": np.add, "max": np.maximum}


def reduction(op: str) -> Callable[..., np.ndarray]:
    """The element-wise operation named `op`, or a clear error."""
    try:
        return OPS[op]
    except KeyError:
        raise ValueError(f"op must be one of {', '.join(OPS)}, got {op!r}") from None


def send_array(sock: socket.socket, arr: np.ndarray) -> None:
    data = np.ascontiguousarray(arr).tobytes()
    sock.sendall(_LEN.pack(len(data)) + data)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionError(f"peer closed the connection after {got} of {n} bytes")
        got += k
    return bytes(buf)


def recv_array(sock: socket.socket, dtype: np.dtype) -> np.ndarray:
    (n,) = _LEN.unpack(recv_exact(sock, _LEN.size))
    return np.frombuffer(recv_exact(sock, n), dtype=dtype)


def tune(sock: socket.socket) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def listen(port: int, backlog: int = 16) -> socket.socket:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(backlog)
    return srv


def connect(ip: str, port: int, timeout_s: float = 60.0) -> socket.socket:
    """Connect, retrying while the peer is not listening yet (peers start at slightly different times)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            sock = socket.create_connection((ip, port), timeout=timeout_s)
            if sock.getsockname() == sock.getpeername():
                # TCP simultaneous open: retrying towards a local port nobody listens on yet can make the
                # kernel pick that very port as the source and connect the socket to itself
                sock.close()
                raise ConnectionRefusedError("connected to itself")
            sock.settimeout(timeout_s)
            tune(sock)
            return sock
        except (ConnectionRefusedError, TimeoutError, OSError) as exc:
            if time.monotonic() > deadline:
                raise ConnectionError(f"cannot reach {ip}:{port} within {timeout_s:.0f} s: {exc}") from None
            time.sleep(0.1)
