"""`p4kit-cli`: simple_switch_CLI for any P4Runtime server (p4kit-switch, simple_switch_grpc, ...).

Used as simple_switch_CLI is: interactively (a `RuntimeCmd:` prompt with help and completion), or with
commands on stdin (`p4kit-cli < s1-commands.txt`). BMv2's CLI talks Thrift; this one speaks P4Runtime,
so it is pointed at the gRPC address, and --thrift-port / --thrift-ip are accepted for scripts written
for simple_switch_CLI (with a note: the gRPC address is what counts). The exit status is 1 when a
command failed (simple_switch_CLI always exits 0, which hides failed batches).
"""

from __future__ import annotations

import argparse
import sys

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
        default=DEFAULT_GRPC_ADDR,
        metavar="HOST:PORT",
        help=f"the switch's P4Runtime server (default {DEFAULT_GRPC_ADDR})",
    )
    p.add_argument("--device-id", type=int, default=0, help="P4Runtime device id (default 0)")
    p.add_argument(
        "--election-id",
        type=int,
        default=1,
        help="election id for arbitration (default 1); a higher one than the running "
        "controller's takes over writes",
    )
    p.add_argument("--thrift-port", type=int, help="accepted for simple_switch_CLI scripts (see --grpc-addr)")
    p.add_argument("--thrift-ip", help="accepted for simple_switch_CLI scripts (see --grpc-addr)")
    p.add_argument(
        "--json", help="accepted for simple_switch_CLI scripts: names come from the switch's P4Info"
    )
    p.add_argument(
        "--pre", choices=("None", "SimplePre", "SimplePreLAG"), help="accepted; replication is P4Runtime's"
    )
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the switch (default 10)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    addr = args.grpc_addr
    if args.thrift_port is not None or args.thrift_ip is not None:
        print(
            f"Note: --thrift-port/--thrift-ip ignored: p4kit-cli speaks P4Runtime to {addr} (--grpc-addr)",
            file=sys.stderr,
        )
    session = Session(addr, args.device_id, args.election_id, args.timeout)
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
