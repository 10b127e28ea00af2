"""`p4kit-cli`: simple_switch_CLI for any P4Runtime server (p4kit-switch, simple_switch_grpc, ...).

Used as simple_switch_CLI is: interactively (a `RuntimeCmd:` prompt with help and completion), or with
commands on stdin (`p4kit-cli < s1-commands.txt`). BMv2's CLI talks Thrift; this one speaks P4Runtime,
so it is pointed at the gRPC address (--grpc-addr), or named by the thrift port the switch was started
with: `--thrift-port 9090` reaches the p4kit-switch started with `--thrift-port 9090` (thrift_ports.py),
as simple_switch_CLI reaches simple_switch_grpc; without either, the switch of simple_switch_CLI's
default port 9090, else 127.0.0.1:9559. The exit status is 1 when a command failed (simple_switch_CLI
always exits 0, which hides failed batches).
"""

from __future__ import annotations

import argparse
import sys

from p4kit.cli import thrift_ports
from p4kit.cli.session import Session
from p4kit.cli.shell import RuntimeShell
from p4kit.cli.values import CliError

DEFAULT_GRPC_ADDR = "127.0.0.1:9559"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="p4kit-cli",
        description="simple_switch_CLI's commands (table_add, mc_*, mirroring_*, register_*, counter_*, "
        "meter_*, show_tables, ...) over P4Runtime. Reads commands from stdin when it is not a terminal.",
    )
    p.add_argument(
        "--grpc-addr",
        metavar="HOST:PORT",
        help="the switch's P4Runtime server (default: the switch of --thrift-port, else "
        f"{DEFAULT_GRPC_ADDR})",
    )
    p.add_argument("--device-id", type=int, help="P4Runtime device id (default: the switch's, else 0)")
    p.add_argument(
        "--election-id",
        type=int,
        default=None,
        help="election id for arbitration; a higher one than the running controller's takes over "
        "writes. Without it p4kit-cli leaves a running controller alone, as simple_switch_CLI does: "
        "it reads without arbitrating and writes with the lowest id (0) once no controller is primary",
    )
    p.add_argument(
        "--thrift-port",
        type=int,
        help="the p4kit-switch started with this --thrift-port (simple_switch_CLI's option; "
        f"default {thrift_ports.SIMPLE_SWITCH_CLI_DEFAULT_PORT})",
    )
    p.add_argument("--thrift-ip", help="the host of that switch (simple_switch_CLI's option)")
    p.add_argument(
        "--json", help="accepted for simple_switch_CLI scripts: names come from the switch's P4Info"
    )
    p.add_argument(
        "--pre", choices=("None", "SimplePre", "SimplePreLAG"), help="accepted; replication is P4Runtime's"
    )
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the switch (default 10)")
    return p


def resolve_target(args: argparse.Namespace) -> tuple[str, int, str | None]:
    """(P4Runtime address, device id, note) from --grpc-addr or the thrift port's switch."""
    if args.grpc_addr:
        note = None
        if args.thrift_port is not None or args.thrift_ip is not None:
            note = f"--thrift-port/--thrift-ip not used: --grpc-addr {args.grpc_addr} names the switch"
        return args.grpc_addr, args.device_id or 0, note
    port = args.thrift_port if args.thrift_port is not None else thrift_ports.SIMPLE_SWITCH_CLI_DEFAULT_PORT
    reg = thrift_ports.lookup(port)
    if reg is not None:
        device = reg.device_id if args.device_id is None else args.device_id
        return reg.connect_addr(args.thrift_ip), device, None
    note = None
    if args.thrift_port is not None:
        note = (
            f"no p4kit-switch was started with --thrift-port {port} on this machine; "
            f"trying {DEFAULT_GRPC_ADDR} (--grpc-addr names a P4Runtime server)"
        )
    return DEFAULT_GRPC_ADDR, args.device_id or 0, note


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    addr, device_id, target_note = resolve_target(args)
    if target_note:
        print(f"Note: {target_note}", file=sys.stderr)
    session = Session(addr, device_id, args.election_id, args.timeout)
    try:
        note = session.connect()
    except CliError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    if note:
        print(f"Note: {note}", file=sys.stderr)
    interactive = sys.stdin.isatty()
    shell = RuntimeShell(session, stdin=sys.stdin, stdout=sys.stdout)
    if not interactive:
        shell.use_rawinput = False
        shell.prompt = ""
    try:
        shell.cmdloop(
            "Obtaining P4Info from the switch... done\nControl utility for runtime P4 table manipulation"
            if interactive
            else ""
        )
    except KeyboardInterrupt:
        print()
    finally:
        session.close()
    return 1 if shell.failures and not interactive else 0


if __name__ == "__main__":
    sys.exit(main())
