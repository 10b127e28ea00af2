"""`tributary allreduce --mode sparse --dtype float32`: the combinations that make no sense are refused
with a clear message before anything starts, and --help says what the option does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TRIBUTARY = str(Path(sys.executable).parent / "tributary")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TRIBUTARY, "allreduce", *args], capture_output=True, text=True, timeout=60)


def test_dtype_combinations_are_checked_before_anything_starts() -> None:
    for args, words in (
        (["--mode", "float32", "--dtype", "float32"], "--dtype is the element type of --mode sparse"),
        (["--dtype", "int32"], "--mode int32 names its own type"),
        (["--mode", "sparse", "--dtype", "float32", "--secure"], "cannot be --secure"),
        (["--mode", "sparse", "--dtype", "float32", "--density", "-0.1"], "fraction of the blocks"),
        (["--mode", "sparse", "--dtype", "float16"], "invalid choice: 'float16'"),
    ):
        res = _run(*args)
        assert res.returncode != 0 and words in res.stderr, (args, res.stderr)
        assert "Traceback" not in res.stderr


def test_help_explains_the_sparse_element_type() -> None:
    res = _run("--help")
    assert res.returncode == 0
    text = " ".join(res.stdout.split())
    assert "--dtype {int32,float32}" in text and "block fixed point over the union's blocks" in text
    assert "--mode sparse --dtype float32" in text
