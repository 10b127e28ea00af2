"""Stopping the WAN leaves no interface and no process behind (its own module, so that no other
test's WAN is up at the time)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from topo import cleanup, ledger

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.mininet, pytest.mark.root]


def test_teardown_leaves_nothing_behind(tmp_path: Path) -> None:
    from tests.topo.conftest import needs_root
    from topo.network import WanNetwork, WanNetworkConfig
    from topo.wan import default_wan

    needs_root()
    before_intfs, before_procs = set(cleanup.leftover_interfaces()), set(cleanup.leftover_processes())
    before_records = len(ledger.records())
    net = WanNetwork(WanNetworkConfig(default_wan("FRA,AMS", workers_per_site=1), tmp_path))
    net.start()
    # the switch side of every link is in the root namespace (the hosts' ends are in theirs)
    assert {"FRA-eth1", "FRA-eth3", "AMS-eth3"} <= set(cleanup.leftover_interfaces())
    assert len(cleanup.leftover_processes()) > len(before_procs)
    net.stop()
    assert set(cleanup.leftover_interfaces()) == before_intfs
    assert set(cleanup.leftover_processes()) == before_procs
    assert len(ledger.records()) == before_records  # a clean stop leaves no record behind


CRASHING_RUN = """
import os, signal, sys
from pathlib import Path
from topo.network import WanNetwork, WanNetworkConfig
from topo.wan import default_wan
net = WanNetwork(WanNetworkConfig(default_wan("FRA,AMS", workers_per_site=1), Path(sys.argv[1])))
net.start()
print("up", flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # a crash: nothing is stopped, nothing cleaned
"""


def test_clean_removes_what_a_crashed_run_left_and_nothing_else(tmp_path: Path) -> None:
    from tests.topo.conftest import needs_root
    from tests.topo.test_ledger import veth

    needs_root()
    # another program's look-alikes: a "switch" with --device-id and an interface named like a port
    script = tmp_path / "simple_switch_grpc"
    script.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(600)\n")
    script.chmod(0o755)
    decoy = subprocess.Popen([str(script), "--device-id", "7", "-i", "1@S1-eth1"], start_new_session=True)
    veth("S1-eth1")
    try:
        run = subprocess.run(
            [sys.executable, "-c", CRASHING_RUN, str(tmp_path / "run")],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert "up" in run.stdout, run.stderr
        [rec] = [r for r in ledger.records() if r.run_dir == str(tmp_path / "run")]
        assert not rec.owner_alive()
        recorded = {pid for pid, _, _ in rec.processes}
        assert len(recorded) >= 8  # two switches, their shells, four host shells
        # the switches (their own sessions) and the WAN link's veths outlive the crash; the shells
        # ended with their parent's pipes, the host links with the shells' namespaces
        switches = {pid for pid, _, what in rec.processes if what.startswith("switch ")}
        assert len(switches) == 2 and all(ledger.start_time(p) is not None for p in switches)
        assert {"FRA-eth3", "AMS-eth3"} <= set(cleanup.leftover_interfaces())
        done = cleanup.clean(verbose=False)
        assert set(done.processes) >= {f"{w} (pid {p})" for p, _, w in rec.processes if p in switches}
        assert set(done.interfaces) & {"FRA-eth3", "AMS-eth3"}
        assert all(ledger.start_time(pid) is None for pid in recorded)
        assert not {"FRA-eth1", "FRA-eth3", "AMS-eth1", "AMS-eth3"} & set(cleanup.leftover_interfaces())
        # what was not the run's is still there
        assert decoy.poll() is None
        assert ledger.ifindex("S1-eth1") is not None
    finally:
        decoy.kill()
        decoy.wait()
        subprocess.run(["ip", "link", "del", "S1-eth1"], capture_output=True)
