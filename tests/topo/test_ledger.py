"""`tributary clean` removes what a crashed run recorded and nothing else: a decoy whose command line
looks like a switch (`simple_switch_grpc ... --device-id 7`), a process that got a recorded pid's number
later, a decoy interface named like a switch port, and a run that is still going all survive."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from topo import cleanup, ledger

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ledger_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "owned"
    monkeypatch.setenv(ledger.LEDGER_ENV, str(path))
    return path


@pytest.fixture
def decoy(tmp_path: Path) -> Iterator[subprocess.Popen]:
    """Another program's process that looks exactly like a Tributary switch."""
    script = tmp_path / "simple_switch_grpc"
    script.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(600)\n")
    script.chmod(0o755)
    proc = subprocess.Popen([str(script), "--device-id", "7", "-i", "1@S1-eth1"], start_new_session=True)
    time.sleep(0.1)
    assert any(pid == proc.pid for pid, _ in cleanup.leftover_processes()), (
        "the decoy must look like a switch"
    )
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def crashed_run(env: dict[str, str], extra: str = "") -> tuple[int, int]:
    """A process that starts a 'switch' (sleep), records both, and dies without cleaning up.
    Returns (owner pid, the switch's pid)."""
    code = textwrap.dedent(
        f"""
        import os, subprocess
        from topo import ledger
        rec = ledger.for_this_process()
        quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        child = subprocess.Popen(["sleep", "600"], start_new_session=True, **quiet)
        rec.add_process(child.pid, "switch S1")
        {extra}
        print(os.getpid(), child.pid, flush=True)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    owner, child = proc.stdout.split()
    return int(owner), int(child)


def test_clean_kills_only_recorded_processes(ledger_dir: Path, decoy: subprocess.Popen) -> None:
    env = {**os.environ, ledger.LEDGER_ENV: str(ledger_dir)}
    _, child = crashed_run(env)
    [rec] = ledger.records()
    assert [p[0] for p in rec.processes] == [child] and not rec.owner_alive()
    # the decoy is recorded too, but with another start time: as a later program reusing a pid would be
    rec.processes.append((decoy.pid, (ledger.start_time(decoy.pid) or 0) + 1, "switch S2"))
    rec.save()
    done = cleanup.clean(verbose=False)
    assert done.processes == [f"switch S1 (pid {child})"]
    assert ledger.start_time(child) is None
    assert decoy.poll() is None, "another program's look-alike was killed"
    assert ledger.records() == []


def test_a_live_run_is_left_alone(ledger_dir: Path) -> None:
    rec = ledger.for_this_process()
    child = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        rec.add_process(child.pid, "switch S1")
        done = cleanup.clean(verbose=False)
        assert done.live_runs == [os.getpid()] and done.processes == []
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()
        rec.forget()


@pytest.mark.root
def test_clean_deletes_only_recorded_interfaces(ledger_dir: Path, decoy: subprocess.Popen) -> None:
    from tests.topo.conftest import needs_root

    needs_root()
    names = ["S1-eth1", "TRBX-eth1", "TRBX-eth2"]
    for n in names:
        veth(n)
    try:
        env = {**os.environ, ledger.LEDGER_ENV: str(ledger_dir)}
        extra = 'rec.add_interfaces(["TRBX-eth1", "TRBX-eth2"])'
        crashed_run(env, extra)
        # TRBX-eth2 is deleted and made again by someone else: the same name, another interface
        veth("TRBX-eth2")
        done = cleanup.clean(verbose=False)
        assert done.interfaces == ["TRBX-eth1"]
        assert ledger.ifindex("TRBX-eth1") is None
        assert ledger.ifindex("S1-eth1") is not None and ledger.ifindex("TRBX-eth2") is not None
        assert decoy.poll() is None
    finally:
        for n in names:
            subprocess.run(["ip", "link", "del", n], capture_output=True)


def veth(name: str) -> None:
    """A fresh veth pair `name` <-> `name`p (this kernel has no dummy interfaces)."""
    subprocess.run(["ip", "link", "del", name], capture_output=True)
    subprocess.run(["ip", "link", "add", name, "type", "veth", "peer", "name", name + "p"], check=True)


def test_stop_after_a_killed_owner_cleans_its_run_only(ledger_dir: Path) -> None:
    env = {**os.environ, ledger.LEDGER_ENV: str(ledger_dir)}
    owner, first = crashed_run(env)
    _, second = crashed_run(env)
    assert len(ledger.records()) == 2
    done = cleanup.clean(verbose=False, owner=owner)
    assert ledger.start_time(first) is None and ledger.start_time(second) is not None
    assert done.processes == [f"switch S1 (pid {first})"]
    assert len(ledger.records()) == 1
    os.kill(second, signal.SIGKILL)
