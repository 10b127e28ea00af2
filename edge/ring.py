"""Host-based baselines on the same WAN: ring allreduce and a parameter server, over TCP.

Ring allreduce (reduce-scatter then all-gather, 2(n-1) steps, each moving 1/n of the vector to the next
rank) is what NCCL and Gloo do between hosts; the parameter server gathers every vector at one host and
sends the sum back. Both add in int32 (or uint32) with wrap-around (exact, like the switches) or in float32;
`op="max"` takes the element-wise maximum instead (the block-exponent agreement of edge.formats).
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass

import numpy as np

from edge.hostcomm import connect, listen, recv_array, reduction, send_array, tune

RING_PORT = 46000
PS_PORT = 46500


@dataclass
class Peer:
    rank: int
    ip: str


def _accept_one(srv: socket.socket, timeout_s: float) -> socket.socket:
    srv.settimeout(timeout_s)
    conn, _ = srv.accept()
    conn.settimeout(timeout_s)
    tune(conn)
    return conn


def ring_allreduce(
    values: np.ndarray,
    rank: int,
    peers: list[Peer],
    port: int = RING_PORT,
    timeout_s: float = 120.0,
    op: str = "sum",
) -> np.ndarray:
    """Reduce `values` over all ranks with `op`, "sum" or "max" (peers lists every rank with its IP, in rank
    order)."""
    combine = reduction(op)
    n = len(peers)
    flat = np.ascontiguousarray(values).reshape(-1).copy()
    if n == 1:
        return flat.reshape(values.shape)
    parts = np.array_split(np.arange(flat.size), n)
    bounds = [(int(p[0]) if p.size else 0, int(p[-1]) + 1 if p.size else 0) for p in parts]
    srv = listen(port + rank)
    try:
        nxt = peers[(rank + 1) % n]
        out_sock: socket.socket | None = None

        def dial() -> None:
            nonlocal out_sock
            out_sock = connect(nxt.ip, port + nxt.rank, timeout_s)

        dialer = threading.Thread(target=dial)
        dialer.start()
        in_sock = _accept_one(srv, timeout_s)
        srv.close()  # one accept per call: a neighbour's next call must not land in this call's backlog
        dialer.join()
        assert out_sock is not None
        try:
            for step in range(2 * (n - 1)):
                if step < n - 1:  # reduce-scatter: pass partial sums along
                    send_idx, recv_idx = (rank - step) % n, (rank - step - 1) % n
                else:  # all-gather: pass finished chunks along
                    s = step - (n - 1)
                    send_idx, recv_idx = (rank - s + 1) % n, (rank - s) % n
                lo, hi = bounds[send_idx]
                sender = threading.Thread(target=send_array, args=(out_sock, flat[lo:hi]))
                sender.start()
                got = recv_array(in_sock, flat.dtype)
                sender.join()
                lo, hi = bounds[recv_idx]
                if step < n - 1:
                    combine(flat[lo:hi], got, out=flat[lo:hi])
                else:
                    flat[lo:hi] = got
        finally:
            out_sock.close()
            in_sock.close()
    finally:
        srv.close()
    return flat.reshape(values.shape)


def ps_allreduce(
    values: np.ndarray,
    rank: int,
    peers: list[Peer],
    server_rank: int = 0,
    port: int = PS_PORT,
    timeout_s: float = 120.0,
    op: str = "sum",
) -> np.ndarray:
    """Parameter server: rank `server_rank` reduces everyone's vector with `op` and sends the result back."""
    combine = reduction(op)
    flat = np.ascontiguousarray(values).reshape(-1)
    n = len(peers)
    if rank != server_rank:
        sock = connect(peers[server_rank].ip, port, timeout_s)
        try:
            send_array(sock, flat)
            return recv_array(sock, flat.dtype).reshape(values.shape).copy()
        finally:
            sock.close()
    srv = listen(port)
    try:
        conns = [_accept_one(srv, timeout_s) for _ in range(n - 1)]
        srv.close()  # every worker is in: a worker's next call waits for the next listener
        total = flat.copy()
        for c in conns:
            combine(total, recv_array(c, flat.dtype), out=total)
        senders = [threading.Thread(target=send_array, args=(c, total)) for c in conns]
        for t in senders:
            t.start()
        for t in senders:
            t.join()
        for c in conns:
            c.close()
        return total.reshape(values.shape)
    finally:
        srv.close()
