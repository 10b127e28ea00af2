"""The `tributary` command: one entry point, one subcommand per job.

Each subcommand lives in a module of `topo.commands` that exposes `register(subparsers)`; the module
adds its parser and sets `func` (called with the parsed arguments, returns the exit status).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from topo.wan import TopologyError

# Modules that add subcommands; each has register(subparsers). Listed, not discovered, so the order of
# `tributary --help` is deliberate.
COMMAND_MODULES: list[str] = [
    "topo.commands.wan",
    "topo.commands.allreduce",
    "topo.commands.schedule",
    "topo.commands.train",
    "topo.commands.amdahl",
    "topo.commands.controller",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tributary",
        description="In-network gradient aggregation across an emulated WAN.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except TopologyError as exc:
        print(f"tributary: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tributary: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
