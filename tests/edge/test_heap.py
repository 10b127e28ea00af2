"""The runner's heap (edge.heap.warm_heap) and its step aside after the timed part (edge.runner.step_aside).

Each check runs in a fresh interpreter: the allocator's settings and the process's priority are the
process's own, and page faults are counted by the kernel (getrusage), not estimated."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from edge.heap import warm_heap

ROOT = Path(__file__).resolve().parents[2]

# an allreduce's conversions of 262,144 int32, three times over: the lanes, their big-endian wire bytes,
# the result rows written, and the result back as int64 (edge.formats, edge.worker)
CALLS = """
import json, resource, sys
import numpy as np
from edge.heap import warm_heap
warmed = warm_heap(int(sys.argv[1])) if int(sys.argv[1]) else None
values = np.arange(262144, dtype=np.int64) % 1000
faults = []
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    lanes = values.astype(np.uint32).reshape(-1, 256)
    wire = lanes.byteswap().tobytes()
    rows = np.zeros((1024, 256), np.uint32)
    rows[:] = lanes
    out = rows.view(np.int32).reshape(-1).astype(np.int64)
    assert np.array_equal(out, values)
    del lanes, wire, rows, out
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps({"warmed": warmed, "faults": faults}))
"""


def _faults(warm_bytes: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CALLS, str(warm_bytes)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout)


def test_a_warm_heap_takes_the_calls_page_faults_out_of_every_call() -> None:
    """Cold, glibc maps every array above its threshold afresh and gives it back on free: each call
    faults in its 5 MiB again (about 1,250 pages), not only the first. Warmed with 12 MiB, none does."""
    cold = _faults(0)
    assert all(f > 1000 for f in cold["faults"]), cold
    warm = _faults(12 << 20)
    assert warm["warmed"] is True
    assert all(f < 50 for f in warm["faults"]), warm


def test_a_heap_of_negative_size_is_refused() -> None:
    with pytest.raises(ValueError, match="a heap of -1 bytes"):
        warm_heap(-1)


def test_a_runner_steps_aside_once_its_timed_part_is_over() -> None:
    """What is left of a runner (its result file, its report, its exit) runs at the lowest priority."""
    code = "import os; from edge.runner import step_aside; step_aside(); print(os.nice(0))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "19"
