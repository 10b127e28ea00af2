"""The runners' common start (edge.runner.common_start): ready once set up, then the start they are given.

A start fixed in advance is a guess of the slowest runner's set-up; on nine sites the guess was short
and the runners began their timed part up to 1.3 s late and half a second apart. The barrier makes the
orchestrator wait for every runner's "ready" and only then name the start, a moment ahead.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from edge.runner import common_start


def test_without_a_barrier_the_specs_start_time_is_used(tmp_path: Path) -> None:
    assert common_start({"start_at": 1234.5}) == 1234.5
    assert not list(tmp_path.iterdir())


def test_a_runner_says_ready_first_and_starts_when_told(tmp_path: Path) -> None:
    spec = {"start_at": 1.0, "ready": str(tmp_path / "r0.ready"), "go": str(tmp_path / "start.go")}
    given: list[float] = []

    def orchestrator() -> None:
        deadline = time.monotonic() + 5
        while not Path(spec["ready"]).exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.1)  # the others are still setting up
        start = time.time() + 0.25
        given.append(start)
        tmp = tmp_path / "start.tmp"
        tmp.write_text(json.dumps({"start_at": start}))
        os.replace(tmp, spec["go"])

    t = threading.Thread(target=orchestrator)
    t.start()
    began = time.monotonic()
    start_at = common_start(spec)
    waited = time.monotonic() - began
    t.join()
    assert given and start_at == given[0]  # the start the orchestrator gave, not the spec's
    assert 0.1 <= waited < 2.0  # it waited for the go, and saw it within its poll
    assert Path(spec["ready"]).read_text() == "ready\n"


def test_a_runner_whose_orchestrator_is_gone_stops_with_a_clear_error(tmp_path: Path) -> None:
    spec = {"ready": str(tmp_path / "r.ready"), "go": str(tmp_path / "start.go"), "ready_timeout_s": 0.05}
    with pytest.raises(TimeoutError, match="no common start"):
        common_start(spec)
    assert Path(spec["ready"]).exists()


def test_a_runner_leaves_with_its_status_and_its_report_written(tmp_path: Path) -> None:
    """The runner exits without the interpreter's teardown (edge.runner.exit_now): its status and its
    report must still be there, and its output flushed."""
    import subprocess
    import sys

    usage = subprocess.run([sys.executable, "-m", "edge.runner"], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and "usage: python -m edge.runner SPEC.json" in usage.stderr
    report = tmp_path / "r.report.json"
    spec = {
        "algorithm": "nonsense", "mode": "int32", "elements": 64, "seed": 1, "rank": 0, "start_at": 0,
        "out": str(tmp_path / "r.npy"), "report": str(report),
    }  # fmt: skip
    (tmp_path / "r.spec.json").write_text(json.dumps(spec))
    bad = subprocess.run(
        [sys.executable, "-m", "edge.runner", str(tmp_path / "r.spec.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1
    assert "unknown algorithm 'nonsense'" in json.loads(report.read_text())["error"]
