"""A hierarchical (site-aware) allreduce, the shape NCCL and Horovod use across nodes: each site's
workers reduce to their site's leader, the leaders exchange directly (a one-step reduce-scatter and a
one-step allgather over the full mesh of sites), and each leader hands the result back to its site.

Why this baseline: a flat ring across sites pays 2(n-1) inter-site one-way delays; this pays about two,
and on a full mesh of per-pair links it moves V/L bytes over each inter-site link per phase (L sites),
which is what a well-tuned host library would do. Sums are taken in a fixed order (local ranks, then
leaders by site order), so float32 results are reproducible.

Messages are length-prefixed numpy arrays over TCP (edge.hostcomm). Every connection opens with the
sender's rank, so a leader tells its site's members from the other leaders.

The reduction is a sum (uint32 and int32 wrap mod 2^32, as the switches' cells do) or a max: with both,
the number formats of the INC path (edge.formats, whose float32 mode max-reduces block exponents first)
run unchanged on the host path, masked or not (edge.secure).
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable

import numpy as np

from edge.hostcomm import connect, listen, recv_array, recv_exact, reduction, send_array, tune
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


class HierarchicalComm:
    """The connections of one rank, opened once and kept: a member's one to its leader, a leader's to its
    members and to every other leader. Keeping them is what host libraries do (NCCL, MPI), and it keeps
    TCP's congestion windows open from one allreduce to the next."""

    def __init__(
        self, rank: int, peers: list[Peer], sites: list[str], port: int = HIER_PORT, timeout_s: float = 120.0
    ) -> None:
        if len(sites) != len(peers):
            raise ValueError(f"{len(peers)} peers but {len(sites)} sites")
        self.rank = rank
        groups = site_groups(sites)
        self.leaders = [g[0] for g in groups]
        mine = next(g for g in groups if rank in g)
        self.leader = mine[0]
        self.members = mine[1:] if rank == self.leader else []
        self.conns: dict[int, socket.socket] = {}
        if rank != self.leader:
            sock = connect(peers[self.leader].ip, port + self.leader, timeout_s)
            sock.sendall(_RANK.pack(rank))
            self.conns[self.leader] = sock
            return
        me = self.leaders.index(rank)
        srv = listen(port + rank)
        try:
            # leaders connect to the leaders after them and accept from those before them

            def dial(other: int) -> None:
                sock = connect(peers[other].ip, port + other, timeout_s)
                sock.sendall(_RANK.pack(rank))
                self.conns[other] = sock

            def accept_all() -> None:
                srv.settimeout(timeout_s)
                for _ in range(len(self.members) + me):  # local members + earlier leaders
                    c, _ = srv.accept()
                    c.settimeout(timeout_s)
                    tune(c)
                    (who,) = _RANK.unpack(recv_exact(c, _RANK.size))
                    self.conns[who] = c

            _parallel([accept_all, *(lambda o=o: dial(o) for o in self.leaders[me + 1 :])])
        except BaseException:
            self.close()
            raise
        finally:
            srv.close()

    def close(self) -> None:
        for c in self.conns.values():
            c.close()
        self.conns.clear()

    def __enter__(self) -> HierarchicalComm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def allreduce(self, values: np.ndarray, op: str = "sum") -> np.ndarray:
        """Reduce `values` over all ranks with `op` ("sum" or "max"); every rank calls this with an array of
        the same shape and dtype, and the same op."""
        combine = reduction(op)
        flat = np.ascontiguousarray(values).reshape(-1).copy()
        conns, rank, leaders = self.conns, self.rank, self.leaders
        if rank != self.leader:
            send_array(conns[self.leader], flat)
            return recv_array(conns[self.leader], flat.dtype).reshape(values.shape).copy()
        me = leaders.index(rank)
        # 1. local reduce, in rank order
        for m in self.members:
            combine(flat, recv_array(conns[m], flat.dtype), out=flat)
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
        reduced = flat[lo:hi].copy() if leaders[0] == rank else received[leaders[0]].copy()
        for o in leaders[1:]:  # a fixed order: every leader reduces its part the same way
            combine(reduced, flat[lo:hi] if o == rank else received[o], out=reduced)
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
        _parallel([lambda m=m: send_array(conns[m], result) for m in self.members])
        return result.reshape(values.shape)


def hierarchical_allreduce(
    values: np.ndarray,
    rank: int,
    peers: list[Peer],
    sites: list[str],
    port: int = HIER_PORT,
    timeout_s: float = 120.0,
    op: str = "sum",
) -> np.ndarray:
    """Reduce `values` over all ranks with `op`; `sites[r]` is rank r's site (peers in rank order). Opens
    the connections, reduces once, closes them."""
    with HierarchicalComm(rank, peers, sites, port, timeout_s) as comm:
        return comm.allreduce(values, op)
