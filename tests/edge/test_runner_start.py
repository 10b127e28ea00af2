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
