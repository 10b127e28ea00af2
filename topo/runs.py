"""Run directories (runs/<timestamp>/): compiled pipeline, switch logs, pcaps, results of one run."""

from __future__ import annotations

import time
from pathlib import Path

RUNS_ROOT = Path.cwd() / "runs"


def new_run_dir(root: Path | None = None, label: str = "run") -> Path:
    root = root or RUNS_ROOT
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for i in range(100):
        path = root / (f"{stamp}-{label}" if i == 0 else f"{stamp}-{label}-{i}")
        try:
            path.mkdir(parents=True)
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"cannot create a run directory under {root}")
