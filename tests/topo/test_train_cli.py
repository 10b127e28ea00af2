"""`tributary train` and `tributary amdahl` refuse bad input with a message and no traceback, before
bringing anything up."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "topo.cli", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["train", "--strategy", "edge-cliques", "--edge-schedule", "pairs"], "invalid choice: 'pairs'"),
        (["train", "--strategy", "ring,ring"], "each once"),
        (["train", "--strategy", "allgather"], "unknown strategy 'allgather'"),
        (["train", "--steps", "0"], "must be at least 1"),
        (["train", "--lr", "0"], "learning rate"),
        (["train", "--compute-ms", "-5"], "compute time per step"),
        (["train", "--target", "90"], "target accuracy is a fraction"),
        (["amdahl", "--run", "--scales", "0"], "--scales must be at least 1"),
        (["amdahl", "--run", "--compute-ms", "x"], "--compute-ms takes numbers"),
    ],
)
def test_bad_input_is_refused_with_a_message(args: list[str], message: str) -> None:
    out = _run(*args)
    assert out.returncode != 0
    assert message in out.stderr
    assert "Traceback" not in out.stderr
