"""`python -m edge.runner` with a host algorithm under --secure: one real process per worker on loopback,
keys agreed over a board folder, every sum masked, and the results those of the INC path's formats."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from edge.runner import expected_sum, worker_data
from tests.edge.test_formats import lockstep_allreduce

SITES = ["TYO", "TYO", "NYC", "NYC"]


def run_workers(tmp_path: Path, algorithm: str, mode: str, port: int, secure: bool) -> list[dict]:
    n, elements, seed = len(SITES), 3000, 4
    peers = [{"rank": r, "ip": "127.0.0.1", "site": SITES[r]} for r in range(n)]
    start_at = time.time() + 4.0
    procs = []
    for rank in range(n):
        spec = {
            "algorithm": algorithm,
            "mode": mode,
            "elements": elements,
            "seed": seed,
            "rank": rank,
            "start_at": start_at,
            "out": str(tmp_path / f"rank{rank}.npy"),
            "report": str(tmp_path / f"rank{rank}.report.json"),
            "peers": peers,
            "port": port,
            "timeout_s": 60,
        }
        if secure:
            spec["secure"] = {"board": str(tmp_path / "keys"), "workers": n, "tenant": 3, "epoch": 12345}
        path = tmp_path / f"rank{rank}.spec.json"
        path.write_text(json.dumps(spec))
        procs.append(subprocess.Popen([sys.executable, "-m", "edge.runner", str(path)]))
    for p in procs:
        assert p.wait(timeout=120) == 0
    reports = [json.loads((tmp_path / f"rank{r}.report.json").read_text()) for r in range(n)]
    inputs = [worker_data(seed, r, elements, mode) for r in range(n)]
    results = [np.load(tmp_path / f"rank{r}.npy") for r in range(n)]
    if mode in ("int32", "int8"):
        want = expected_sum(seed, list(range(n)), elements, mode).astype(np.int32)
    else:  # float32 masked: the INC path's block fixed point, bit for bit
        want = lockstep_allreduce(inputs, mode)[0]
    for got in results:
        assert got.tobytes() == want.tobytes()
    return reports


@pytest.mark.parametrize(
    ("algorithm", "mode", "port"),
    [("hierarchical", "int32", 24000), ("hierarchical", "float32", 24100), ("ring", "int8", 24200)],
)
def test_a_secure_host_runner_is_exact_and_reports_its_key_agreement(
    tmp_path: Path, algorithm: str, mode: str, port: int
) -> None:
    reports = run_workers(tmp_path, algorithm, mode, port, secure=True)
    for r in reports:
        assert "error" not in r
        assert 0 <= r["stats"]["key_exchange_s"] < 60
    assert sorted(p.name for p in (tmp_path / "keys").iterdir()) == [f"{r}.pub" for r in range(len(SITES))]


def test_a_secure_sparse_run_is_refused_before_the_key_agreement(tmp_path: Path) -> None:
    """One worker alone: were the refusal late, it would wait for its peers' keys (60 s) instead."""
    spec = {
        "algorithm": "hierarchical",
        "mode": "sparse",
        "elements": 640,
        "seed": 1,
        "rank": 0,
        "out": str(tmp_path / "rank0.npy"),
        "report": str(tmp_path / "rank0.report.json"),
        "peers": [{"rank": r, "ip": "127.0.0.1", "site": "A"} for r in range(2)],
        "secure": {"board": str(tmp_path / "keys"), "workers": 2, "tenant": 1, "epoch": 1},
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    proc = subprocess.run([sys.executable, "-m", "edge.runner", str(tmp_path / "spec.json")], timeout=30)
    assert proc.returncode == 1
    report = json.loads((tmp_path / "rank0.report.json").read_text())
    assert report["error"].startswith("ValueError: sparse mode cannot be --secure")
    assert not (tmp_path / "keys").exists() and not (tmp_path / "rank0.npy").exists()
