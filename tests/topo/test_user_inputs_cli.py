"""`tributary allreduce` checks every argument before it asks for root, so a user's mistake is reported
as itself (a user without sudo was told only to use sudo, then, with it, that --repeat 0 is wrong)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

WAN = ["allreduce", "--sites", "TYO,NYC,LON", "--workers-per-site", "2", "--loss", "0.02"]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--repeat", "0"], "--repeat in 1..100"),
        (["--tenants", "0"], "--tenants must be positive"),
        (["--elements", "0"], "--elements and --tenants must be positive"),
        (["--slots", "5000"], "--slots at most 4096"),
        (["--mode", "int32", "--density", "0.01"], "--density is the block fraction of --mode sparse"),
        (["--mode", "float32", "--density", "1"], "--mode float32 sends every value"),
    ],
)
def test_a_bad_argument_is_named_before_root_is_asked_for(monkeypatch, capsys, extra, says) -> None:  # type: ignore[no-untyped-def]
    from topo import cli

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit) as exc:
        cli.main([*WAN, *extra, "--json"])
    assert says in str(exc.value)
    assert "sudo" not in capsys.readouterr().err


def test_a_bad_inputs_file_is_named_before_root_is_asked_for(monkeypatch, capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from topo import cli

    np.save(tmp_path / "five.npy", np.zeros((5, 8), dtype=np.int32))
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit) as exc:
        cli.main([*WAN, "--inputs", str(tmp_path / "five.npy"), "--repeat", "3", "--json"])
    assert "5 rows, but the run has 6 workers" in str(exc.value)
    # good arguments and a good file: only then is root the problem
    np.save(tmp_path / "six.npy", np.zeros((6, 8), dtype=np.int32))
    assert cli.main([*WAN, "--inputs", str(tmp_path / "six.npy"), "--json"]) == 1
    assert "sudo" in capsys.readouterr().err
