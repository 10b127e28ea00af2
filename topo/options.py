"""Command-line options shared by the commands that bring up the WAN (cheap to import: no Mininet)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from topo.wan import DEFAULT_RATE_MBIT, TopologyError, Wan, check_access_rate, default_wan, load_topology


def log(msg: str) -> None:
    print(f"[tributary] {msg}", file=sys.stderr, flush=True)


def add_wan_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every command that brings up the WAN shares."""
    g = parser.add_argument_group("the WAN")
    g.add_argument(
        "--sites", help="comma-separated cities (default: all nine: TYO,HKG,SIN,NYC,CHI,LAX,LON,FRA,AMS)"
    )
    g.add_argument(
        "--topology", type=Path, help="a TOML topology file (see docs/topology.md); overrides --sites"
    )
    g.add_argument("--workers-per-site", type=int, default=None, help="worker hosts per site (default 2)")
    g.add_argument(
        "--rate",
        type=float,
        default=None,
        metavar="MBIT",
        help=f"rate of every WAN link in Mbit/s (default {DEFAULT_RATE_MBIT:g}; scaled down from 10 Gbit/s)",
    )
    g.add_argument(
        "--access-rate",
        type=float,
        default=None,
        metavar="MBIT",
        help="access-limited sites: each worker reaches its city's switch over a link of this rate in "
        "each direction (the site's egress; the aggregating switches sit beyond it); default: unshaped, "
        "the full-mesh model. Also the topology file's access_rate_mbit",
    )
    g.add_argument(
        "--loss",
        type=float,
        default=None,
        metavar="FRACTION",
        help="random loss on every WAN link as a fraction: 0.02 is 2 %% (default 0)",
    )
    g.add_argument(
        "--link-mode",
        choices=("auto", "netem", "switch"),
        default="auto",
        help="where link delay/rate/loss are applied: netem (kernel) or the switch's egress "
        "(p4kit-switch --link); auto picks netem when the kernel has it",
    )
    g.add_argument(
        "--switch",
        dest="switch_binary",
        metavar="BINARY",
        help="switch program (default: p4kit-switch; simple_switch_grpc works too)",
    )
    g.add_argument("--pcap", action="store_true", help="write per-port pcaps into the run directory")
    g.add_argument(
        "--trace",
        action="store_true",
        help="per-packet switch traces (parser, tables, actions, drops) in the run's logs/ (slow)",
    )
    g.add_argument(
        "--run-dir", type=Path, help="where logs, pcaps and the compiled pipeline go (default runs/<time>)"
    )


def wan_from_args(args: argparse.Namespace) -> Wan:
    if args.topology:
        wan = load_topology(args.topology)
    else:
        kwargs = {}
        if args.rate is not None:
            kwargs["rate_mbit"] = args.rate
        if args.loss is not None:
            if not 0 <= args.loss < 1:
                raise TopologyError(f"--loss is a fraction in [0, 1) (0.02 means 2 %), got {args.loss}")
            kwargs["loss_pct"] = args.loss * 100
        if args.workers_per_site is not None:
            kwargs["workers_per_site"] = args.workers_per_site
        wan = default_wan(args.sites, **kwargs)
    access = getattr(args, "access_rate", None)
    if access is not None:  # given on the command line: it wins over the topology file's
        check_access_rate(access, "--access-rate")
        wan.access_rate_mbit = access
    return wan


def require_root(command: str) -> bool:
    if os.geteuid() != 0:
        print(
            f"tributary {command} needs root for Mininet and raw sockets: run it with sudo "
            f"(e.g. 'sudo .venv/bin/tributary {command}' or 'sudo make run')",
            file=sys.stderr,
        )
        return False
    return True
