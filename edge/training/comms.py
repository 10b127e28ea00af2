"""The allreduce strategies a training worker can use, each behind one call: `comm.sum(payload)` returns
the element-wise sum over all workers (float32 or int32 in, same dtype out).

- ring: the flat ring of all workers, edge/ring.py's algorithm over connections kept for the whole run.
- hierarchical: site leaders over kept connections (edge/hierarchical.py), opened once before training
  starts, as host libraries keep theirs.
- mpi: OpenMPI's MPI_Allreduce (mpi4py) with the library's own algorithm choice; the ranks are started
  by mpirun (topo/train_run.py, edge/mpi_launch.py), which keeps its connections for the whole run.
- core-tree: INC through the switches (edge/worker.py) on the job the controller installed; int32 for
  the exact format, float32 block fixed point otherwise.
- edge-cliques: Edge-INC (edge/edge_site.py): the worker hands its vector to its site's edge host over a
  kept TCP connection, the edge hosts run the schedule's rounds of cliques (streams replicated by the
  switches, summed by the stages) and hand back the sum over all workers; int32 for the exact format,
  the stages' block fixed point for float32.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Protocol

import numpy as np

from edge.hierarchical import HIER_PORT, HierarchicalComm
from edge.hostcomm import connect, listen, recv_array, send_array, tune
from edge.ring import RING_PORT, Peer
from edge.spec import WorkerSpec
from edge.worker import IncJob, IncWorker

STRATEGIES = ("ring", "hierarchical", "mpi", "core-tree", "edge-cliques")
UNAVAILABLE: dict[str, str] = {}  # strategy -> why this build cannot run it
EDGE_FEED_PORT = 47004  # an edge host's TCP port for its site's workers' vectors (edge.edge_site.Feed)


class Comm(Protocol):
    def sum(self, payload: np.ndarray) -> np.ndarray: ...

    def close(self) -> None: ...


def check_strategy(name: str) -> None:
    """Raise ValueError with the reason for a strategy this build cannot run."""
    if name in UNAVAILABLE:
        raise ValueError(f"strategy {name!r} is not available: {UNAVAILABLE[name]}")
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r} (expected one of {', '.join(STRATEGIES)})")


class RingComm:
    """The flat ring of all workers over connections opened once (to the next rank, from the previous),
    as NCCL and Gloo keep theirs: each call is edge/ring.py's reduce-scatter and all-gather, 2(n-1) steps
    of 1/n of the vector to the next rank. (ring_allreduce itself connects anew on every call; run back to
    back, a rank then dials a neighbour that is not listening yet and waits out connect's 0.1 s retries,
    which made the ring's step time jump by tenths of a second from run to run.)"""

    def __init__(self, rank: int, peers: list[Peer], port: int = RING_PORT, timeout_s: float = 120.0) -> None:
        self.rank, self.n = rank, len(peers)
        self.out_sock: socket.socket | None = None
        self.in_sock: socket.socket | None = None
        if self.n == 1:
            return
        nxt = peers[(rank + 1) % self.n]
        srv = listen(port + rank)
        try:
            errors: list[BaseException] = []

            def dial() -> None:
                try:
                    self.out_sock = connect(nxt.ip, port + nxt.rank, timeout_s)
                except BaseException as exc:  # re-raised below, in the caller's thread
                    errors.append(exc)

            dialer = threading.Thread(target=dial)
            dialer.start()
            srv.settimeout(timeout_s)
            try:
                conn, _ = srv.accept()
            finally:
                dialer.join()
            conn.settimeout(timeout_s)
            tune(conn)
            self.in_sock = conn
            if errors:
                raise errors[0]
        except BaseException:
            self.close()
            raise
        finally:
            srv.close()

    def sum(self, payload: np.ndarray) -> np.ndarray:
        n, rank = self.n, self.rank
        flat = np.ascontiguousarray(payload).reshape(-1).copy()
        if n == 1:
            return flat.reshape(payload.shape)
        assert self.out_sock is not None and self.in_sock is not None
        parts = np.array_split(np.arange(flat.size), n)
        spans = [(int(p[0]), int(p[-1]) + 1) if p.size else (0, 0) for p in parts]
        for step in range(2 * (n - 1)):
            if step < n - 1:  # reduce-scatter: pass partial sums along
                send_idx, recv_idx = (rank - step) % n, (rank - step - 1) % n
            else:  # all-gather: pass finished parts along
                s = step - (n - 1)
                send_idx, recv_idx = (rank - s + 1) % n, (rank - s) % n
            lo, hi = spans[send_idx]
            sender = threading.Thread(target=send_array, args=(self.out_sock, flat[lo:hi]))
            sender.start()
            got = recv_array(self.in_sock, flat.dtype)
            sender.join()
            lo, hi = spans[recv_idx]
            if step < n - 1:
                flat[lo:hi] += got
            else:
                flat[lo:hi] = got
        return flat.reshape(payload.shape)

    def close(self) -> None:
        for sock in (self.out_sock, self.in_sock):
            if sock is not None:
                sock.close()
        self.out_sock = self.in_sock = None


class HierComm:
    def __init__(
        self, rank: int, peers: list[Peer], sites: list[str], port: int = HIER_PORT, timeout_s: float = 120.0
    ) -> None:
        self.comm = HierarchicalComm(rank, peers, sites, port=port, timeout_s=timeout_s)

    def sum(self, payload: np.ndarray) -> np.ndarray:
        return self.comm.allreduce(payload)

    def close(self) -> None:
        self.comm.close()


class MpiComm:
    """MPI_COMM_WORLD's allreduce; mpi4py is imported only here (only this strategy needs libmpi)."""

    def __init__(self) -> None:
        from mpi4py import MPI

        self.mpi = MPI
        self.comm = MPI.COMM_WORLD

    def sum(self, payload: np.ndarray) -> np.ndarray:
        out = np.empty_like(payload)
        self.comm.Allreduce(np.ascontiguousarray(payload), out, op=self.mpi.SUM)
        return out

    def close(self) -> None:
        pass


class IncComm:
    def __init__(self, spec: WorkerSpec, exact: bool) -> None:
        self.mode = "int32" if exact else "float32"
        self.worker = IncWorker(IncJob.from_spec(spec))

    def sum(self, payload: np.ndarray) -> np.ndarray:
        return self.worker.allreduce(payload, self.mode)

    def stats(self) -> dict[str, float]:
        return {k: v for k, v in vars(self.worker.stats).items() if isinstance(v, int | float)}

    def close(self) -> None:
        self.worker.close()


class EdgeComm:
    """The sum over all workers through the Edge-INC stages: this worker's vector to its site's edge
    host, the site's result (the exact sum after the schedule's cycle) back, over one kept connection.
    The edge host adds its workers' vectors, so a site's workers together are one contribution there."""

    def __init__(
        self, edge_ip: str, port: int = EDGE_FEED_PORT, timeout_s: float = 120.0, source_ip: str = ""
    ) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                src = (source_ip, 0) if source_ip else None
                self.sock = socket.create_connection((edge_ip, port), timeout=timeout_s, source_address=src)
                break
            except OSError as exc:
                if time.monotonic() > deadline:
                    raise ConnectionError(
                        f"edge host {edge_ip}:{port} not reachable within {timeout_s:g} s: {exc}"
                    ) from None
                time.sleep(0.1)
        self.sock.settimeout(timeout_s)
        tune(self.sock)

    def sum(self, payload: np.ndarray) -> np.ndarray:
        flat = np.ascontiguousarray(payload).reshape(-1)
        send_array(self.sock, flat)
        out = recv_array(self.sock, flat.dtype)
        if out.size != flat.size:
            raise ConnectionError(f"the edge host answered {out.size} values for {flat.size}")
        return out.reshape(payload.shape).copy()

    def close(self) -> None:
        self.sock.close()
