"""The command line of `p4kit-switch`: simple_switch_grpc's options, plus `--link` for WAN emulation.

Why a module of its own: the options are the compatibility contract with BMv2 (scripts and Mininet
classes written for simple_switch_grpc must run unchanged), so they are parsed into a plain dataclass
that tests check without starting anything. Options BMv2 has but p4kit does not need (Thrift, nanolog)
are accepted and ignored, and --help says so.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from p4kit.switch.linkemu import LinkParams, LinkSpecError, parse_link_spec

DEFAULT_GRPC_ADDR = "127.0.0.1:9559"
DEFAULT_DROP_PORT = 511
LOG_LEVELS = ("trace", "debug", "info", "warn", "error", "off")


@dataclass
class SwitchOptions:
    interfaces: dict[int, str] = field(default_factory=dict)
    json_path: str | None = None
    no_p4: bool = False
    device_id: int = 0
    log_console: bool = False
    log_file: str | None = None
    log_level: str = "trace"
    pcap_dir: str | None = None
    drop_port: int = DEFAULT_DROP_PORT
    thrift_port: int | None = None
    links: dict[int, LinkParams] = field(default_factory=dict)
    grpc_addr: str = DEFAULT_GRPC_ADDR
    cpu_port: int | None = None
    seed: int | None = None


class UsageError(Exception):
    """Bad command line; main() prints it after `p4kit-switch: error:` and exits with 1."""


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("tributary")
    except Exception:
        return "0.1.0"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="p4kit-switch",
        usage="p4kit-switch [options] <path to JSON config file> [-- [--grpc-server-addr HOST:PORT] "
        "[--cpu-port N]]",
        description="p4kit's software switch: runs a BMv2 JSON program with simple_switch's v1model "
        "semantics and serves P4Runtime, like simple_switch_grpc. There is no Thrift server: "
        "--thrift-port and --nanolog are accepted for compatibility and ignored; use P4Runtime.",
        epilog="Target options (after --): --grpc-server-addr HOST:PORT (default "
        f"{DEFAULT_GRPC_ADDR}; bind 0.0.0.0 only when asked), --cpu-port N (packets to port N go to "
        "the controller as PacketIn; PacketOut enters ingress on port N).",
    )
    p.add_argument("json", nargs="?", help="BMv2 JSON program to load at start")
    p.add_argument(
        "-i",
        "--interface",
        action="append",
        default=[],
        metavar="PORT@IFACE",
        help="attach network interface IFACE as switch port PORT (repeat for each port)",
    )
    p.add_argument(
        "--no-p4",
        action="store_true",
        help="start without a program; the controller sets it with SetForwardingPipelineConfig",
    )
    p.add_argument("--device-id", type=int, default=0, help="P4Runtime device id (default 0)")
    p.add_argument("--log-console", action="store_true", help="print the per-packet trace to stdout")
    p.add_argument("--log-file", metavar="FILE", help="write the per-packet trace to FILE")
    p.add_argument(
        "-L",
        "--log-level",
        choices=LOG_LEVELS,
        default="trace",
        help="trace detail when logging is on (default trace)",
    )
    p.add_argument("--log-flush", action="store_true", help="accepted for compatibility (always flushed)")
    p.add_argument(
        "--pcap",
        nargs="?",
        const=".",
        metavar="DIR",
        help="write <iface>_in.pcap and <iface>_out.pcap per port into DIR (default: .)",
    )
    p.add_argument(
        "--drop-port",
        type=int,
        default=DEFAULT_DROP_PORT,
        help=f"egress port that means drop (default {DEFAULT_DROP_PORT})",
    )
    p.add_argument(
        "--thrift-port",
        type=int,
        metavar="N",
        help="accepted for compatibility and ignored: p4kit has no Thrift server",
    )
    p.add_argument(
        "--nanolog",
        metavar="ADDR",
        help="accepted for compatibility and ignored: p4kit has no nanomsg event log",
    )
    p.add_argument("--notifications-addr", metavar="ADDR", help="accepted and ignored")
    p.add_argument("--restore-state", metavar="FILE", help="accepted and ignored")
    p.add_argument("--dump-packet-data", type=int, metavar="N", help="accepted and ignored")
    p.add_argument(
        "--link",
        action="append",
        default=[],
        metavar="PORT:SPEC",
        help="p4kit extension, emulate a WAN link at PORT's egress: "
        "PORT:delay=MS,jitter=MS,rate=MBIT,loss=PCT[,limit=PKTS] (netem's knobs; this kernel "
        "has no netem)",
    )
    p.add_argument("--link-seed", type=int, metavar="N", help="seed for loss and jitter (reproducible runs)")
    p.add_argument(
        "--version",
        action="version",
        version=f"p4kit-switch {_version()} (p4kit, a BMv2 simple_switch_grpc replacement)",
    )
    return p


def build_target_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="p4kit-switch ... --", add_help=False)
    p.add_argument("--grpc-server-addr", default=DEFAULT_GRPC_ADDR)
    p.add_argument("--cpu-port", type=int)
    p.add_argument("--link", action="append", default=[])
    p.add_argument("--dp-grpc-server-addr")  # BMv2's dataplane-interface service: not needed here
    p.add_argument("--grpc-server-ssl", action="store_true")
    p.add_argument("--grpc-server-cacert")
    p.add_argument("--grpc-server-cert")
    p.add_argument("--grpc-server-key")
    p.add_argument("--grpc-server-with-client-auth", action="store_true")
    p.add_argument("--load-modules")
    return p


def parse_args(argv: list[str]) -> SwitchOptions:
    """Parse the full command line (argv without the program name)."""
    if "--" in argv:
        cut = argv.index("--")
        main_argv, target_argv = argv[:cut], argv[cut + 1 :]
    else:
        main_argv, target_argv = argv, []
    args = build_parser().parse_args(main_argv)
    targs, unknown = build_target_parser().parse_known_args(target_argv)
    if unknown:
        raise UsageError(f"unknown target option(s): {' '.join(unknown)}")
    if targs.grpc_server_ssl:
        raise UsageError("--grpc-server-ssl is not supported by p4kit-switch")
    if args.pcap and args.pcap.endswith(".json") and args.json is None:
        args.json, args.pcap = args.pcap, "."  # `--pcap prog.json`: the flag had no directory
    opts = SwitchOptions(
        json_path=args.json,
        no_p4=args.no_p4,
        device_id=args.device_id,
        log_console=args.log_console,
        log_file=args.log_file,
        log_level=args.log_level,
        pcap_dir=args.pcap,
        drop_port=args.drop_port,
        thrift_port=args.thrift_port,
        grpc_addr=targs.grpc_server_addr,
        cpu_port=targs.cpu_port,
        seed=args.link_seed,
    )
    if opts.no_p4 and opts.json_path:
        raise UsageError("give either a JSON file or --no-p4, not both")
    if not opts.no_p4 and not opts.json_path:
        raise UsageError("a JSON file or --no-p4 is required")
    for spec in args.interface:
        number, sep, iface = spec.partition("@")
        if not sep or not iface or not number.isdigit():
            raise UsageError(f"-i {spec!r}: expected PORT@IFACE")
        port = int(number)
        if port in opts.interfaces:
            raise UsageError(f"port {port} is given twice")
        opts.interfaces[port] = iface
    for spec in [*args.link, *targs.link]:
        try:
            port, params = parse_link_spec(spec)
        except LinkSpecError as e:
            raise UsageError(str(e)) from None
        if port not in opts.interfaces:
            raise UsageError(f"--link {spec!r}: port {port} has no interface (-i {port}@IFACE)")
        opts.links[port] = params
    host, sep, port_text = opts.grpc_addr.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise UsageError(f"--grpc-server-addr {opts.grpc_addr!r}: expected HOST:PORT")
    return opts
