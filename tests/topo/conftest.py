"""Emulated 3-site WANs for the Mininet tests. Each is module-scoped: a module's tests share one WAN
(bringing one up takes seconds), and it is torn down before the next module brings up its own, since
two WANs would claim the same interface names and P4Runtime ports."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (CI runs as root)")


@contextmanager
def wan_from_toml(run_dir: Path, toml: str) -> Iterator[object]:
    needs_root()
    from topo.session import running_wan

    topo_file = run_dir / "wan.toml"
    topo_file.write_text(toml)
    args = argparse.Namespace(
        topology=topo_file,
        sites=None,
        rate=None,
        loss=None,
        workers_per_site=None,
        link_mode="auto",
        switch_binary=None,
        pcap=False,
        run_dir=run_dir,
        trace=False,
    )
    with running_wan(args, label="test") as running:
        yield running


@pytest.fixture(scope="module")
def wan3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """TYO, NYC, LON in a full mesh; TYO-NYC rate-limited to 10 Mbit/s for the iperf test."""
    toml = 'sites = ["TYO", "NYC", "LON"]\nrate_mbit = 50\n[[link]]\na = "TYO"\nb = "NYC"\nrate_mbit = 10\n'
    with wan_from_toml(tmp_path_factory.mktemp("wan3"), toml) as running:
        yield running


@pytest.fixture(scope="module")
def wan3_lossy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """TYO, NYC, LON with 2 % random loss on every WAN link, two workers per site."""
    toml = 'sites = ["TYO", "NYC", "LON"]\nrate_mbit = 50\nloss_pct = 2.0\nworkers_per_site = 2\n'
    with wan_from_toml(tmp_path_factory.mktemp("wan3lossy"), toml) as running:
        yield running
