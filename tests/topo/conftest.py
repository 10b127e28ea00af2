"""One emulated 3-site WAN shared by the Mininet tests of this folder (bringing it up takes seconds)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path

import pytest


def needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (CI runs as root)")


@pytest.fixture(scope="session")
def wan3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """TYO, NYC, LON in a full mesh; TYO-NYC rate-limited to 10 Mbit/s for the iperf test."""
    needs_root()
    from topo.session import running_wan

    run_dir = tmp_path_factory.mktemp("wan3")
    topo_file = Path(run_dir) / "wan3.toml"
    topo_file.write_text(
        'sites = ["TYO", "NYC", "LON"]\nrate_mbit = 50\n[[link]]\na = "TYO"\nb = "NYC"\nrate_mbit = 10\n'
    )
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
    )
    with running_wan(args, label="test") as running:
        yield running
