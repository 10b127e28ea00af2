"""One training worker process: `python -m edge.training.worker SPEC.json` (for mpi, under mpirun: the
spec then lists every rank's part under "ranks").

The spec (JSON, written by topo/train_run.py) gives the strategy, this worker's rank, its peers (rank,
IP, site), for core-tree the INC job (an edge.spec.WorkerSpec under "worker"), the training
configuration (edge.training.loop.TrainConfig under "train"), and where to write the report and, for
rank 0, one progress line per step; for edge-cliques its site's edge host ("edge_ip"). Connections are opened and warmed by one untimed allreduce before
the first step (which also waits for the slowest worker to start), so step 0 times the allreduce, not
process start-up.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np

from edge.ring import Peer
from edge.spec import WorkerSpec
from edge.training import wire
from edge.training.comms import (
    EDGE_FEED_PORT,
    Comm,
    EdgeComm,
    HierComm,
    IncComm,
    MpiComm,
    RingComm,
    check_strategy,
)
from edge.training.loop import StepRecord, TrainConfig, train
from edge.training.model import Mlp


def open_comm(spec: dict, cfg: TrainConfig) -> Comm:
    strategy = spec["strategy"]
    check_strategy(strategy)
    peers = [Peer(p["rank"], p["ip"]) for p in spec["peers"]]
    timeout = float(spec.get("timeout_s", 120))
    if strategy == "ring":
        return RingComm(spec["rank"], peers, timeout_s=timeout)
    if strategy == "mpi":
        return MpiComm()
    if strategy == "hierarchical":
        return HierComm(spec["rank"], peers, [p["site"] for p in spec["peers"]], timeout_s=timeout)
    if strategy == "edge-cliques":
        return EdgeComm(spec["edge_ip"], int(spec.get("edge_port", EDGE_FEED_PORT)), timeout_s=timeout)
    return IncComm(WorkerSpec.model_validate(spec["worker"]), exact=cfg.fmt == "exact")


def run(spec: dict) -> dict:
    cfg = TrainConfig(**spec["train"])
    cfg.check()
    rank, workers = int(spec["rank"]), len(spec["peers"])
    setup0 = time.time()
    comm = open_comm(spec, cfg)
    progress = Path(spec["progress"]) if spec.get("progress") else None

    def on_step(rec: StepRecord) -> None:
        if progress is not None:
            with progress.open("a") as f:
                f.write(json.dumps(vars(rec)) + "\n")

    try:
        # one untimed allreduce of the gradient's size first, for every strategy: it waits for the last
        # worker to start (a barrier), and opens TCP's windows as a host library's kept connections would
        comm.sum(wire.encode(np.zeros(Mlp(hidden=cfg.hidden).size), cfg.fmt).payload)
        setup_s = time.time() - setup0
        t0 = time.time()
        result = train(cfg, rank, workers, comm.sum, on_step)
        t1 = time.time()
        stats = comm.stats() if isinstance(comm, IncComm) else {}
    finally:
        comm.close()
    return {
        "rank": rank,
        "start": t0,
        "end": t1,
        "setup_s": round(setup_s, 4),
        "stats": stats,
        **result.to_json(),
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m edge.training.worker SPEC.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(args[0]).read_text())
    if "ranks" in spec:  # started by mpirun: one spec for all ranks, this one's part picked by its MPI rank
        rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
        spec = {**spec, **spec["ranks"][rank]}
    try:
        report = run(spec)
        code = 0
    except Exception as exc:  # the report carries the error to the orchestrator
        report = {
            "rank": spec.get("rank"),
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
        }
        code = 1
    Path(spec["report"]).write_text(json.dumps(report))
    if code and spec["strategy"] == "mpi":  # the other ranks may wait in a collective that cannot finish
        from mpi4py import MPI

        MPI.COMM_WORLD.Abort(1)
    return code


if __name__ == "__main__":
    sys.exit(main())
