"""A hierarchical (site-aware) allreduce, the shape NCCL and Horovod use across nodes: each site's
workers reduce to their site's leader, the leaders exchange directly (a one-step reduce-scatter and a
one-step allgather over the full mesh of sites), and each leader hands the result back to its site.

Why this baseline: a flat ring across sites pays 2(n-1) inter-site one-way delays; this pays about two,
and on a full mesh of per-pair links it moves V/L bytes over each inter-site link per phase (L sites),
which is what a well-tuned host library would do. Sums are taken in a fixed order (local ranks, then
leaders by site order), so float32 results are reproducible.

Messages are length-prefixed numpy arrays over TCP (edge.hostcomm). Every connection opens with the
sender's rank, so a leader tells its site's members from the other leaders.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable

import numpy as np

from edge.hostcomm import connect, listen, recv_array, recv_exact, send_array, tune
from edge.ring import Peer

HIER_PORT = 19300  # a leader of rank r listens on HIER_PORT + r (below the kernel's ephemeral range)
_RANK = struct.Struct("!I")


def site_groups(sites: list[str]) -> list[list[int]]:
    """Ranks grouped by site, sites in order of first appearance, ranks ascending within a site."""
    groups: dict[str, list[int]] = {}
    for rank, site in enumerate(sites):
        groups.setdefault(site, []).append(rank)
    return list(groups.values())


def _parallel(jobs: list[Callable[[], None]]) -> None:
    """Run the jobs at once (one thread each); re-raise the first failure."""
    errors: list[BaseException] = []

    def run(job: Callable[[], None]) -> None:
        try:
            job()
        except BaseException as exc:  # collected and re-raised in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(j,)) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def hierarchical_allreduce(
    values: np.ndarray,
    rank: int,
    peers: list[Peer],
    sites: list[str],
    port: int = HIER_PORT,
    timeout_s: float = 120.0,
) -> np.ndarray:
    """Sum `values` over all ranks; `sites[r]` is rank r's site (peers in rank order)."""
    if len(sites) != len(peers):
        raise ValueError(f"{len(peers)} peers but {len(sites)} sites")
    flat = np.ascontiguousarray(values).reshape(-1).copy()
    groups = site_groups(sites)
    leaders = [g[0] for g in groups]
    mine = next(g for g in groups if rank in g)
    leader = mine[0]
    if rank != leader:
        sock = connect(peers[leader].ip, port + leader, timeout_s)
        try:
            sock.sendall(_RANK.pack(rank))
            send_array(sock, flat)
            return recv_array(sock, flat.dtype).reshape(values.shape).copy()
        finally:
            sock.close()

    me = leaders.index(rank)
    srv = listen(port + rank)
    conns: dict[int, socket.socket] = {}
    try:
        # leaders connect to the leaders after them and accept from those before them
        def dial(other: int) -> None:
            sock = connect(peers[other].ip, port + other, timeout_s)
            sock.sendall(_RANK.pack(rank))
            conns[other] = sock

        expected = len(mine) - 1 + me  # local members + earlier leaders
        dials = [lambda o=o: dial(o) for o in leaders[me + 1 :]]

        def accept_all() -> None:
            srv.settimeout(timeout_s)
            for _ in range(expected):
                c, _ = srv.accept()
                c.settimeout(timeout_s)
                tune(c)
                (who,) = _RANK.unpack(recv_exact(c, _RANK.size))
                conns[who] = c

        _parallel([accept_all, *dials])
        members = mine[1:]
        # 1. local reduce, in rank order
        local = [recv_array(conns[m], flat.dtype) for m in members]
        for part in local:
            flat += part
        # 2. reduce-scatter among leaders: leader i ends up with part i of the site sums
        bounds = np.array_split(np.arange(flat.size), len(leaders))
        spans = [(int(b[0]), int(b[-1]) + 1) if b.size else (0, 0) for b in bounds]
        others = [o for o in leaders if o != rank]
        lo, hi = spans[me]

        def send_part(o: int) -> None:
            a, b = spans[leaders.index(o)]
            send_array(conns[o], flat[a:b])

        received: dict[int, np.ndarray] = {}

        def recv_part(o: int) -> None:
            received[o] = recv_array(conns[o], flat.dtype)

        _parallel([*(lambda o=o: send_part(o) for o in others), *(lambda o=o: recv_part(o) for o in others)])
        reduced = np.zeros(hi - lo, dtype=flat.dtype)
        for o in leaders:  # a fixed order: every leader sums its part the same way
            reduced += flat[lo:hi] if o == rank else received[o]
        # 3. allgather among leaders
        result = np.empty_like(flat)
        result[lo:hi] = reduced
        gathered: dict[int, np.ndarray] = {}

        def recv_reduced(o: int) -> None:
            gathered[o] = recv_array(conns[o], flat.dtype)

        _parallel(
            [
                *(lambda o=o: send_array(conns[o], reduced) for o in others),
                *(lambda o=o: recv_reduced(o) for o in others),
            ]
        )
        for o, part in gathered.items():
            a, b = spans[leaders.index(o)]
            result[a:b] = part
        # 4. back to the site's members
        _parallel([lambda m=m: send_array(conns[m], result) for m in members])
        return result.reshape(values.shape)
    finally:
        for c in conns.values():
            c.close()
        srv.close()
