"""The allreduce strategies a training worker can use, each behind one call: `comm.sum(payload)` returns
the element-wise sum over all workers (float32 or int32 in, same dtype out).

- ring: the flat ring of all workers (edge/ring.py), as that baseline runs: it connects to its neighbour
  for every allreduce, as `tributary allreduce` measures it.
- hierarchical: site leaders over kept connections (edge/hierarchical.py), opened once before training
  starts, as host libraries keep theirs.
- mpi: OpenMPI's MPI_Allreduce (mpi4py) with the library's own algorithm choice; the ranks are started
  by mpirun (topo/train_run.py, edge/mpi_launch.py), which keeps its connections for the whole run.
- core-tree: INC through the switches (edge/worker.py) on the job the controller installed; int32 for
  the exact format, float32 block fixed point otherwise.

edge-cliques is refused with the reason (UNAVAILABLE) rather than imitated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from edge.hierarchical import HIER_PORT, HierarchicalComm
from edge.ring import RING_PORT, Peer, ring_allreduce
from edge.spec import WorkerSpec
from edge.worker import IncJob, IncWorker

STRATEGIES = ("ring", "hierarchical", "mpi", "core-tree")
UNAVAILABLE = {
    "edge-cliques": "training over the Edge-INC stages is not wired yet: the stages carry sums of one "
    "schedule run at a time (tributary schedule --run), not a worker's allreduce per step",
}


class Comm(Protocol):
    def sum(self, payload: np.ndarray) -> np.ndarray: ...

    def close(self) -> None: ...


def check_strategy(name: str) -> None:
    """Raise ValueError with the reason for a strategy this build cannot run."""
    if name in UNAVAILABLE:
        raise ValueError(f"strategy {name!r} is not available: {UNAVAILABLE[name]}")
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r} (expected one of {', '.join(STRATEGIES)})")


@dataclass
class RingComm:
    rank: int
    peers: list[Peer]
    port: int = RING_PORT
    timeout_s: float = 120.0

    calls: int = 0

    def sum(self, payload: np.ndarray) -> np.ndarray:
        """Successive calls alternate between two sets of ports: a worker that has finished a call may dial
        its neighbour while that one still listens for the call before, and that old listener would
        swallow the connection (one call ahead is the most a ring allows, so two sets suffice)."""
        port = self.port + (self.calls % 2) * len(self.peers)
        self.calls += 1
        return ring_allreduce(payload, self.rank, self.peers, port=port, timeout_s=self.timeout_s)

    def close(self) -> None:
        pass


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
