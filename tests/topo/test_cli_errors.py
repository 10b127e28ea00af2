"""The tributary command rejects bad topologies with a clear message, before touching the network."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

TRIBUTARY = str(Path(sys.executable).parent / "tributary")


def test_bad_topology_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('sites = ["TYO", "NYC"]\nmesh = "none"\n')
    res = subprocess.run([TRIBUTARY, "wan", "check", "--topology", str(bad)], capture_output=True, text=True)
    assert res.returncode == 2
    assert "not connected" in res.stderr
    assert "Traceback" not in res.stderr


def test_unknown_city_is_a_clear_error() -> None:
    res = subprocess.run(
        [TRIBUTARY, "run", "--sites", "TYO,ATLANTIS", "--batch"], capture_output=True, text=True
    )
    assert res.returncode in (1, 2)  # 1 when not root (checked first), 2 for the bad city
    assert "ATLANTIS" in res.stderr or "sudo" in res.stderr
    assert "Traceback" not in res.stderr


def test_run_without_root_says_to_use_sudo(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    # The interpreter lives under /root here, so an unprivileged user cannot start it at all:
    # the effective uid is what the command checks, so that is what the test changes.
    from topo import cli

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert cli.main(["run", "--batch"]) == 1
    assert "sudo" in capsys.readouterr().err


def test_clean_with_nothing_recorded_touches_nothing(tmp_path: Path) -> None:
    from tests.topo.conftest import needs_root

    needs_root()
    env = {**os.environ, "TRIBUTARY_LEDGER": str(tmp_path / "owned")}
    res = subprocess.run([TRIBUTARY, "clean"], capture_output=True, text=True, env=env)
    assert res.returncode == 0 and "removed 0 processes and 0 interfaces" in res.stdout, res.stderr
    assert "Traceback" not in res.stderr


def test_stop_and_status_without_a_run_are_clear(tmp_path: Path) -> None:
    from tests.topo.conftest import needs_root

    needs_root()
    state = str(tmp_path / "state.json")
    res = subprocess.run([TRIBUTARY, "stop", "--state", state], capture_output=True, text=True)
    assert res.returncode == 0 and "nothing running" in res.stdout
    res = subprocess.run(
        [TRIBUTARY, "controller", "status", "--state", state], capture_output=True, text=True
    )
    assert res.returncode == 1 and "nothing is running" in res.stderr and "Traceback" not in res.stderr


def test_sparse_mode_arguments_are_checked_before_anything_starts() -> None:
    for extra, words in (
        (["--density", "1.5"], "fraction of the blocks"),
        (["--secure"], "cannot be --secure"),
    ):
        res = subprocess.run(
            [TRIBUTARY, "allreduce", "--mode", "sparse", *extra], capture_output=True, text=True, timeout=60
        )
        assert res.returncode != 0 and words in res.stderr, res.stderr
        assert "Traceback" not in res.stderr


def test_allreduce_refuses_inputs_that_do_not_fit_before_starting(tmp_path: Path) -> None:
    """--inputs is checked against the WAN's workers and the mode before root is even asked for."""
    cli = [TRIBUTARY, "allreduce", "--sites", "TYO,NYC,LON", "--workers-per-site", "2"]
    five = tmp_path / "five.npy"
    np.save(five, np.zeros((5, 64), dtype=np.int32))
    wide = tmp_path / "wide.npy"
    np.save(wide, np.full((6, 64), 300, dtype=np.int32))
    for extra, says in [
        (["--inputs", str(five)], "5 rows, but the run has 6 workers"),
        (["--inputs", str(wide), "--mode", "int8"], "do not fit mode int8"),
        (["--inputs", str(wide), "--elements", "128"], "hold 64 values each"),
        (["--inputs", str(tmp_path / "none.npy")], "no such file"),
    ]:
        res = subprocess.run([*cli, *extra], capture_output=True, text=True, timeout=60)
        assert res.returncode != 0 and says in res.stderr, (extra, res.stderr)
        assert "Traceback" not in res.stderr


def test_allreduce_refuses_wide_packets_where_the_sums_cannot_travel_wide() -> None:
    """--values-per-packet 256 carries unmasked int32 and float32 sums only: said before root is asked."""
    cli = [TRIBUTARY, "allreduce", "--sites", "TYO,NYC,LON", "--values-per-packet", "256"]
    for extra in (["--mode", "int8"], ["--mode", "sparse"], ["--secure"]):
        res = subprocess.run([*cli, *extra], capture_output=True, text=True, timeout=60)
        assert res.returncode != 0 and "carries int32 and float32 sums only" in res.stderr, (
            extra,
            res.stderr,
        )
        assert "Traceback" not in res.stderr
