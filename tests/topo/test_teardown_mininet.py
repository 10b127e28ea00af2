"""Stopping the WAN leaves no interface and no process behind (its own module, so that no other
test's WAN is up at the time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from topo import cleanup

pytestmark = [pytest.mark.mininet, pytest.mark.root]


def test_teardown_leaves_nothing_behind(tmp_path: Path) -> None:
    from tests.topo.conftest import needs_root
    from topo.network import WanNetwork, WanNetworkConfig
    from topo.wan import default_wan

    needs_root()
    before_intfs, before_procs = set(cleanup.leftover_interfaces()), set(cleanup.leftover_processes())
    net = WanNetwork(WanNetworkConfig(default_wan("FRA,AMS", workers_per_site=1), tmp_path))
    net.start()
    # the switch side of every link is in the root namespace (the hosts' ends are in theirs)
    assert {"FRA-eth1", "FRA-eth3", "AMS-eth3"} <= set(cleanup.leftover_interfaces())
    assert len(cleanup.leftover_processes()) > len(before_procs)
    net.stop()
    assert set(cleanup.leftover_interfaces()) == before_intfs
    assert set(cleanup.leftover_processes()) == before_procs


def test_clean_removes_what_a_crashed_run_left(tmp_path: Path) -> None:
    from tests.topo.conftest import needs_root
    from topo.network import WanNetwork, WanNetworkConfig
    from topo.wan import default_wan

    needs_root()
    net = WanNetwork(WanNetworkConfig(default_wan("FRA,AMS", workers_per_site=1), tmp_path))
    net.start()
    net.net = None  # forget the network, as a crashed process would: nothing stops it
    procs, intfs = cleanup.clean(verbose=False)
    # two switches and their shells, four host shells; the WAN link (host links vanish with their namespaces)
    assert procs >= 6 and intfs >= 1
    assert cleanup.leftover_interfaces() == [] and cleanup.leftover_processes() == []
