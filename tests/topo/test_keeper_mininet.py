"""The WAN keeper of `tributary run --detach --no-controller`: a switch killed with kill -9 is started
again on its ports and given its pipeline and routes by the keeper itself, and traffic flows through
it again; `stop` then leaves nothing of the run. Real Mininet, real switches."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from topo import cleanup, ledger

pytestmark = [pytest.mark.mininet, pytest.mark.root]

ROOT = Path(__file__).resolve().parents[2]


def tributary(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "topo.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def ping(state: dict, src: str, dst_ip: str) -> bool:
    from topo import detach

    cmd = detach.host_command(state, src, ["ping", "-c", "1", "-W", "2", dst_ip])
    return subprocess.run(cmd, capture_output=True).returncode == 0


def test_a_killed_switch_comes_back_without_a_controller(tmp_path: Path) -> None:
    from tests.topo.conftest import needs_root

    needs_root()
    state_file = tmp_path / "state.json"
    env = {**os.environ, "TRIBUTARY_DATA_DIR": str(tmp_path / "data")}
    r = tributary(
        "run", "--detach", "--no-controller", "--sites", "FRA,AMS", "--workers-per-site", "1",
        "--state", str(state_file), "--run-dir", str(tmp_path / "run"), env=env,
    )  # fmt: skip
    try:
        assert r.returncode == 0, r.stderr + r.stdout
        assert "no controller" in r.stdout
        state = json.loads(state_file.read_text())
        hosts = {h["name"]: h for s in state["topology"]["switches"] for h in s["hosts"]}
        ams_ip = hosts["AMSw1"]["ip"]
        assert ping(state, "FRAw1", ams_ip)
        rec = ledger.for_owner(state["pid"])
        assert rec is not None
        [(pid, _, _)] = [p for p in rec.processes if p[2] == "switch AMS"]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        ok = False
        while time.monotonic() < deadline and not ok:
            time.sleep(0.5)
            ok = ping(state, "FRAw1", ams_ip)
        assert ok, "no traffic through the restarted switch"
        rec = ledger.for_owner(state["pid"])
        assert rec is not None
        [(new, _, _)] = [p for p in rec.processes if p[2] == "switch AMS" and p[0] != pid]
        assert ledger.start_time(new) is not None
        status = tributary("controller", "status", "--state", str(state_file))
        assert status.returncode == 1 and "no-controller" in status.stdout
    finally:
        r = tributary("stop", "--state", str(state_file))
    assert r.returncode == 0, r.stderr
    assert ledger.for_owner(state["pid"]) is None
    assert not {"FRA-eth1", "AMS-eth1", "FRA-eth2", "AMS-eth2"} & set(cleanup.leftover_interfaces())
