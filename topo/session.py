"""Bringing the whole emulated WAN up and down as one unit: compile, start Mininet and the switches,
push the pipeline, install routes; and take everything down again on any exit, Ctrl-C included."""

from __future__ import annotations

import argparse
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from controller.inc.install import ZeroedCells
from controller.p4rt import SwitchConnection
from controller.provision import Pipeline, connect_all, provision
from topo.network import WanNetwork, WanNetworkConfig
from topo.options import log, wan_from_args
from topo.pipeline import build_pipeline
from topo.runs import new_run_dir
from topo.secrets_env import take_secrets


@dataclass
class RunningWan:
    network: WanNetwork
    conns: dict[str, SwitchConnection]
    pipeline: Pipeline
    run_dir: Path
    entries: int
    # cells no job has used since provision() committed the pipelines: their resets can be left out
    zeroed: ZeroedCells = field(default_factory=ZeroedCells)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def running_wan(args: argparse.Namespace, label: str = "run") -> Iterator[RunningWan]:
    # Mininet's shells inherit this process's environment, and so would whatever runs in the hosts: no
    # token may be in it (`tributary run` keeps its own in memory; others never need one)
    take_secrets()
    wan = wan_from_args(args)
    run_dir = args.run_dir or new_run_dir(label=label)
    run_dir.mkdir(parents=True, exist_ok=True)
    log(f"run directory: {run_dir}")
    log("compiling p4src/inc.p4 with p4kit-p4c")
    pipeline = build_pipeline(run_dir / "build")
    network = WanNetwork(
        WanNetworkConfig(
            wan, run_dir, args.link_mode, args.switch_binary, args.pcap, getattr(args, "trace", False)
        )
    )
    old_term = signal.signal(signal.SIGTERM, _raise_interrupt)
    conns: dict[str, SwitchConnection] = {}
    try:
        log(
            f"starting {len(wan.sites)} sites ({', '.join(wan.names)}), {len(wan.links)} WAN links, "
            f"{wan.workers_per_site} workers + 1 edge host per site"
        )
        network.start()
        log(f"link emulation: {network.link_mode}")
        conns = connect_all(network.fabric)
        entries = provision(network.fabric, conns, pipeline, progress=log)
        log(f"pipelines pushed, {entries} forwarding entries installed")
        yield RunningWan(network, conns, pipeline, run_dir, entries)
    finally:
        for c in conns.values():
            c.close()
        log("stopping the WAN")
        network.stop()
        signal.signal(signal.SIGTERM, old_term)
