"""One rank of the MPI baseline: `mpirun ... python -m edge.mpi_allreduce SPEC.json`.

Timed as the other host baselines are (edge/runner.py): the same inputs from (seed, rank), one untimed
warm-up allreduce of the same size first (it opens the TCP BTL's connections, as a training job's first
step would), then a common start time and one timed MPI_Allreduce(SUM). Each rank writes its result
(.npy) and a report in the runner's format, plus the bytes its TCP connections carried to each peer
during the timed call (from `ss`), which shows which algorithm OpenMPI's tuned module picked.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from edge import heap
from edge.runner import HEAP_BYTES_PER_ELEMENT, worker_data
from edge.secure import PairwiseMasks, host_allreduce

START_MARGIN_S = 1.0  # rank 0 sets the common start this far ahead (beyond any one-way delay)
_CONN = re.compile(r"^\s*\d+\s+(\d+)\s+(\d+\.\d+\.\d+\.\d+):\d+\s+(\d+\.\d+\.\d+\.\d+):\d+")
_ACKED = re.compile(r"bytes_acked:(\d+)")


def sent_per_peer() -> dict[str, int]:
    """Bytes the application has written so far to this namespace's TCP connections, per remote
    address: delivered (acknowledged, so a retransmission counts once) plus still queued (Send-Q), so
    a call that returned while its last bytes were in flight is counted whole."""
    out = subprocess.run(["ss", "-tinH", "state", "established"], capture_output=True, text=True).stdout
    totals: dict[str, int] = {}
    peer, queued = None, 0
    for line in out.splitlines():
        m = _CONN.match(line)
        if m:
            queued, local, remote = int(m.group(1)), m.group(2), m.group(3)
            peer = remote if remote != local else None
            continue
        acked = _ACKED.search(line)
        if peer is not None and line[:1].isspace():
            totals[peer] = totals.get(peer, 0) + queued + (int(acked.group(1)) if acked else 0)
            peer = None
    return totals


def secure_masks(comm, secure: dict) -> PairwiseMasks:  # type: ignore[no-untyped-def]
    """--secure: the pairwise masks of this rank, the public keys exchanged over MPI itself (an allgather;
    only public keys travel), bound to the run's tenant and epoch."""
    key = X25519PrivateKey.generate()
    pubs = comm.allgather(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
    rank = comm.Get_rank()
    peers = {r: X25519PublicKey.from_public_bytes(p) for r, p in enumerate(pubs) if r != rank}
    return PairwiseMasks(key, peers, rank, int(secure["tenant"]), int(secure["epoch"]))


def mpi_reduce(comm, values: np.ndarray, op: str) -> np.ndarray:  # type: ignore[no-untyped-def]
    """MPI_Allreduce by sum or max (uint32 lanes: the sum wraps mod 2^32, as C's unsigned addition does)."""
    from mpi4py import MPI

    ops = {"sum": MPI.SUM, "max": MPI.MAX}
    if op not in ops:
        raise ValueError(f"op must be one of {', '.join(ops)}, got {op!r}")
    out = np.empty_like(values)
    comm.Allreduce(values, out, op=ops[op])
    return out


def run(spec: dict) -> dict:
    # A waiting rank spins on its sockets (OpenMPI's TCP transport polls). On a cluster each rank has
    # its own node; here all ranks share two cores with the switches' data plane and link emulation,
    # and two spinning ranks starved them: a 2 s exchange stretched to minutes behind timeouts. At the
    # lowest priority a rank only gets the CPU the network does not need.
    os.nice(19)
    from mpi4py import MPI  # only here: importing this module must not need MPI

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    if comm.Get_size() != int(spec["workers"]):
        raise RuntimeError(f"mpirun started {comm.Get_size()} ranks, the run has {spec['workers']} workers")
    data = worker_data(
        spec["seed"],
        rank,
        spec["elements"],
        spec["mode"],
        float(spec.get("density", 0.01)),
        spec.get("inputs"),
    )
    if data.dtype == np.int8 and not spec.get("secure"):
        # MPI adds int8 in int8, which wraps: the sum is taken as wide as INC and the other host
        # baselines take it (edge/lowprec.py); masked, the INC formats widen it themselves
        data = data.astype(np.int32)
    result = np.empty_like(data)
    k0 = time.time()
    masks = secure_masks(comm, spec["secure"]) if spec.get("secure") else None
    key_exchange_s = time.time() - k0
    w0 = time.time()
    comm.Allreduce(np.zeros_like(data), result, op=MPI.SUM)
    warmup_s = time.time() - w0
    heap.warm_heap(HEAP_BYTES_PER_ELEMENT * data.size)  # as every runner's (edge/heap.py)
    comm.Barrier()  # every rank done warming up before rank 0 picks the start
    start_at = comm.bcast(time.time() + START_MARGIN_S if rank == 0 else None, root=0)
    before = sent_per_peer()
    lag = time.time() - start_at
    if lag < 0:
        time.sleep(-lag)
    c0 = time.process_time()
    t0 = time.time()
    if masks is None:
        comm.Allreduce(data, result, op=MPI.SUM)
    else:  # the INC path's number formats on MPI's sum (uint32 wraps) and max, every sum masked
        result = host_allreduce(lambda v, op: mpi_reduce(comm, v, op), data, spec["mode"], comm.size, masks)
    t1 = time.time()
    cpu_s = time.process_time() - c0
    after = sent_per_peer()
    np.save(Path(spec["out_dir"]) / f"rank{rank}.npy", result)
    sent = {ip: after[ip] - before.get(ip, 0) for ip in after if after[ip] > before.get(ip, 0)}
    return {
        "rank": rank,
        "start": t0,
        "end": t1,
        "seconds": t1 - t0,
        "late_start_s": max(lag, 0.0),
        "sent_bytes": sent,
        "library": MPI.Get_library_version().splitlines()[0].strip(),
        "stats": {
            "warmup_s": round(warmup_s, 4),
            "cpu_ms": round(cpu_s * 1000),
            **({"key_exchange_s": round(key_exchange_s, 4)} if masks is not None else {}),
        },
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: mpirun ... python -m edge.mpi_allreduce SPEC.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(args[0]).read_text())
    try:
        report = run(spec)
        code = 0
    except Exception as exc:  # the report carries the error to the orchestrator
        report = {
            "rank": int(os.environ.get("OMPI_COMM_WORLD_RANK", "0")),
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
        }
        code = 1
    (Path(spec["out_dir"]) / f"rank{report['rank']}.report.json").write_text(json.dumps(report))
    if code:  # the other ranks may be inside a collective that can no longer finish: end the job
        from mpi4py import MPI

        MPI.COMM_WORLD.Abort(1)
    return code


if __name__ == "__main__":
    sys.exit(main())
