"""Running a REST Edge-INC job's processes in a detached WAN's hosts, from the job view alone.

POST /jobs with an edge strategy answers with the spec of every site's stage and every worker's
receiver (controller/service/edge_jobs.py); this module adds what a run supplies itself (the sites'
input vectors, a common start time, where reports go), starts `edge.edge_site` on each site's edge host
and `edge.edge_receiver` on each worker host (nsenter into the hosts' namespaces, as `tributary run
--detach` records them), waits, and collects the reports and the workers' results. Used by
scripts/edge_job_demo.py and the Mininet test of the REST path.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from topo import detach

ROOT = Path(__file__).resolve().parent.parent
START_DELAY_S = 4.0  # every process must be up before the common start


@dataclass
class EdgeJobRun:
    sites: dict[str, dict] = field(default_factory=dict)  # site -> its stage's report
    workers: dict[str, dict] = field(default_factory=dict)  # worker host -> its receiver's report
    results: dict[str, np.ndarray] = field(default_factory=dict)  # worker host -> result lanes (uint32)
    start_at: float = 0.0

    @property
    def errors(self) -> list[str]:
        out = [f"{n}: {r['error']}" for n, r in (*self.sites.items(), *self.workers.items()) if "error" in r]
        return out

    def measured_s(self) -> float | None:
        """From the common start until the last site finished its last round."""
        dones = [r["done"] for rep in self.sites.values() for r in rep.get("rounds", []) if r.get("done")]
        return max(dones) - self.start_at if dones and not self.errors else None


def run_edge_job(
    state: dict, view: dict, vectors: dict[str, np.ndarray], out: Path, timeout_s: float = 300.0
) -> EdgeJobRun:
    """Start the job's stages (with `vectors[site]`: chunks x 64, uint32 lanes for int32 jobs, float32
    values for float32 ones) and receivers; wait for all of them (at most `timeout_s`)."""
    edge = view.get("edge")
    if not edge:
        raise ValueError(f"job {view.get('id')} is not an Edge-INC job (strategy {view.get('strategy')})")
    missing = sorted(set(edge["sites"]) - set(vectors))
    if missing:
        raise ValueError(f"no input vector for site(s) {', '.join(missing)}")
    out.mkdir(parents=True, exist_ok=True)
    run = EdgeJobRun(start_at=time.time() + START_DELAY_S)
    procs: list[tuple[str, str, subprocess.Popen]] = []
    for site, spec in edge["sites"].items():
        np.save(out / f"{site}.in.npy", vectors[site])
        full = {
            **spec,
            "lanes_path": str(out / f"{site}.in.npy"),
            "start_at": run.start_at,
            "report": str(out / f"{site}.site.json"),
        }
        path = out / f"{site}.site.spec.json"
        path.write_text(json.dumps(full))
        argv = [sys.executable, "-m", "edge.edge_site", str(path)]
        procs.append(("site", site, subprocess.Popen(detach.host_command(state, f"{site}e", argv), cwd=ROOT)))
    for w in view["workers"]:
        host = w["host"]
        full = {
            **w["receiver"],
            "out": str(out / f"{host}.out.npy"),
            "report": str(out / f"{host}.recv.json"),
            "timeout_s": timeout_s,
        }
        path = out / f"{host}.recv.spec.json"
        path.write_text(json.dumps(full))
        argv = [sys.executable, "-m", "edge.edge_receiver", str(path)]
        procs.append(("worker", host, subprocess.Popen(detach.host_command(state, host, argv), cwd=ROOT)))
    deadline = time.monotonic() + START_DELAY_S + timeout_s + 30
    for kind, name, proc in procs:
        try:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        report_path = out / (f"{name}.site.json" if kind == "site" else f"{name}.recv.json")
        report = (
            json.loads(report_path.read_text())
            if report_path.exists()
            else {"error": f"no report (exit status {proc.returncode})"}
        )
        if kind == "site":
            run.sites[name] = report
        else:
            run.workers[name] = report
            if "error" not in report and (out / f"{name}.out.npy").exists():
                run.results[name] = np.load(out / f"{name}.out.npy")
    return run
