"""The MPI baseline under --secure, run for real by OpenMPI's mpirun on loopback: the ranks exchange public
keys over MPI, mask every sum, and get the INC formats' result (int32 exact, float32 bit for bit)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge.runner import expected_sum, worker_data
from tests.edge.test_formats import lockstep_allreduce

MPIRUN = shutil.which("mpirun")  # Debian's openmpi-bin, which make install installs


@pytest.mark.parametrize(
    ("mode", "secure"), [("int32", True), ("float32", True), ("int8", False), ("int4", False)]
)
def test_masked_mpi_allreduce_on_loopback(tmp_path: Path, mode: str, secure: bool) -> None:
    """Masked, the INC formats' results; unmasked narrow integers, their exact wide sum (MPI adds int8
    in int8 and would wrap: the inputs go in as int32, as the other host baselines take them)."""
    assert MPIRUN is not None, "mpirun not found: make install installs openmpi-bin"
    n, elements, seed = 3, 3000, 4
    spec = {
        "mode": mode,
        "elements": elements,
        "seed": seed,
        "workers": n,
        "out_dir": str(tmp_path),
        **({"secure": {"tenant": 0, "epoch": 99}} if secure else {}),
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    loopback = [
        "--mca",
        "btl",
        "self,tcp",
        "--mca",
        "btl_tcp_if_include",
        "lo",
        "--mca",
        "oob_tcp_if_include",
        "lo",
    ]
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(n), *loopback]
    proc = subprocess.run(
        [*cmd, sys.executable, "-m", "edge.mpi_allreduce", str(tmp_path / "spec.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if not secure:
        want = expected_sum(seed, list(range(n)), elements, mode)
        assert np.abs(want).max() > (127 if mode == "int8" else 7)  # the sums overflow the narrow type
        for r in range(n):
            assert np.array_equal(np.load(tmp_path / f"rank{r}.npy").astype(np.int64), want)
        return
    if mode == "int32":
        want = expected_sum(seed, list(range(n)), elements, mode).astype(np.int32)
    else:
        want = lockstep_allreduce([worker_data(seed, r, elements, mode) for r in range(n)], mode)[0]
    for r in range(n):
        assert np.load(tmp_path / f"rank{r}.npy").tobytes() == want.tobytes()
        report = json.loads((tmp_path / f"rank{r}.report.json").read_text())
        assert 0 < report["stats"]["key_exchange_s"] < 60
