"""The tributary command rejects bad topologies with a clear message, before touching the network."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
