"""The MPI baseline on the emulated WAN: OpenMPI's MPI_Allreduce between the worker hosts, launched by
mpirun in rank 0's host with an agent that enters the other hosts' namespaces (edge/mpi_launch.py),
checked and timed as the other host baselines are (topo/allreduce_run.py).

What the result says about the library: each rank reports the bytes it sent to each peer during the
timed call; from that matrix `algorithm` names what OpenMPI's tuned module ran (a ring: every rank
sends 2(n-1)/n of the vector to its successor and nothing else) and the bound is that algorithm's. When
the pattern is not one the bounds model, the bound is the lowest host bound (`bound_of` says which).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

from edge.mpi_launch import mpirun_command, mpirun_path, write_agent
from topo import bounds
from topo.allreduce_run import AlgoResult, AllreduceSpec, _check, masked_agreement_bytes, worker_hosts
from topo.session import RunningWan

MPI_TIMEOUT_S = 600.0


def classify(sent: list[dict[int, int]], vector_bytes: int) -> str:
    """Name the pattern of `sent[r][peer]` (bytes rank r sent to each peer rank in the timed call)."""
    n = len(sent)
    if n < 2:
        return "none"
    # the daemons' control traffic (to mpirun in rank 0's host) shares the namespaces: not a data peer
    floor = max(4096, vector_bytes // 100)
    sent = [{p: b for p, b in row.items() if b >= floor} for row in sent]
    ring = all(set(row) == {(r + 1) % n} for r, row in enumerate(sent))
    if ring:
        per_rank = [row[(r + 1) % n] for r, row in enumerate(sent)]
        payload = 2 * (n - 1) * vector_bytes / n
        if all(payload <= b <= 1.1 * payload + 65536 for b in per_rank):
            return "ring"
    partners = {len(row) for row in sent}
    if partners == {n - 1} and n > 2:
        return "all-pairs"
    return "other"


def run_mpi(running: RunningWan, spec: AllreduceSpec, progress: Callable[[str], None]) -> AlgoResult:
    mpirun = mpirun_path()
    hosts = worker_hosts(running)
    fabric = running.network.fabric
    vector_bytes = 4 * spec.elements
    if mpirun is None:
        res = AlgoResult("mpi", 0.0, spec.elements, False, 0.0)
        res.errors = ["mpirun not found: install OpenMPI (Debian: openmpi-bin libopenmpi-dev; make install)"]
        return res
    ips = [fabric.host(h)[1].ip for h in hosts]
    out_dir = running.run_dir / "allreduce" / "mpi"
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in [*out_dir.glob("rank*.npy"), *out_dir.glob("rank*.report.json")]:
        old.unlink()  # never judge a result left by an earlier run
    agent = write_agent(
        out_dir / "agent.sh", {ip: running.network.host(h).pid for ip, h in zip(ips, hosts, strict=True)}
    )
    job: dict[str, object] = {
        "mode": spec.mode,
        "elements": spec.elements,
        "seed": spec.seed + 1,
        "workers": len(hosts),
        "out_dir": str(out_dir),
    }
    if spec.secure:  # masked sums, the keys exchanged over MPI (edge.mpi_allreduce.secure_masks)
        job["secure"] = {"tenant": 0, "epoch": int.from_bytes(os.urandom(4), "big")}
    spec_path = out_dir / "spec.json"
    spec_path.write_text(json.dumps(job))
    program = [sys.executable, "-m", "edge.mpi_allreduce", str(spec_path)]
    cmd = mpirun_command(mpirun, agent, ips, program, spec.mpi_mca)
    progress(
        f"mpi allreduce (OpenMPI, mpirun in {hosts[0]}): {len(hosts)} ranks, {spec.elements} {spec.mode} each"
    )
    log_path = out_dir / "mpirun.log"
    t0 = time.monotonic()
    with log_path.open("wb") as log:
        proc = running.network.host(hosts[0]).popen(cmd, stdout=log, stderr=log)
        try:
            proc.wait(timeout=MPI_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pass  # the ranks without a report are reported as such below
        finally:  # a timeout or an interrupt: mpirun, told to stop, takes its daemons and ranks down
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    launch_s = time.monotonic() - t0
    reports = []
    for rank in range(len(hosts)):
        path = out_dir / f"rank{rank}.report.json"
        if path.exists():
            reports.append(json.loads(path.read_text()))
        else:
            tail = log_path.read_text(errors="replace")[-1500:]
            reports.append(
                {"rank": rank, "error": f"no report (mpirun exit status {proc.returncode}): {tail}"}
            )
    outs = [out_dir / f"rank{r}.npy" for r in range(len(hosts))]
    res = _check(
        "mpi", spec, spec.seed + 1, list(range(len(hosts))), reports, outs, len(hosts), quantised=spec.secure
    )
    rank_of = {ip: r for r, ip in enumerate(ips)}
    sent = [
        {rank_of[ip]: b for ip, b in rep.get("sent_bytes", {}).items() if ip in rank_of}
        for rep in sorted((r for r in reports if "error" not in r), key=lambda r: r["rank"])
    ]
    algorithm = classify(sent, vector_bytes) if len(sent) == len(hosts) else "unknown"
    if algorithm == "ring":
        res.bound_s = bounds.ring_bound_s(running.network.wan, fabric, hosts, vector_bytes)
        bound_of = "ring"
    else:
        name, res.bound_s = bounds.best_host_bound_s(running.network.wan, fabric, hosts, vector_bytes)
        bound_of = f"best host bound ({name})"
    agreement = masked_agreement_bytes(spec)  # masked float32 / mxint8: an exponent agreement first
    if agreement:
        res.bound_s += (
            bounds.ring_bound_s(running.network.wan, fabric, hosts, agreement)
            if algorithm == "ring"
            else bounds.best_host_bound_s(running.network.wan, fabric, hosts, agreement)[1]
        )
    res.extra = {
        "library": next((r["library"] for r in reports if "library" in r), ""),
        "algorithm": algorithm,
        "bound_of": bound_of,
        "sent_bytes": [[row.get(p, 0) for p in range(len(hosts))] for row in sent],
        "launch_s": round(launch_s, 2),
        "masked": spec.secure,
    }
    if len(sent) == len(hosts):
        matrix = res.extra["sent_bytes"]
        assert isinstance(matrix, list)
        res.extra["traffic_bound_s"] = round(
            bounds.traffic_bound_s(running.network.wan, fabric, hosts, matrix), 4
        )
    if spec.mpi_mca:
        res.extra["mca"] = dict(spec.mpi_mca)
    cpu = [r["stats"]["cpu_ms"] for r in reports if "stats" in r]
    if cpu:
        res.stats["max_cpu_ms"] = max(cpu)
    return res
