"""The command line of `p4kit-switch`: simple_switch_grpc's, main options before `--` and target options
after it, plus `--link` for WAN emulation.

Why a module of its own: the options are the compatibility contract with BMv2 (scripts and Mininet
classes written for simple_switch_grpc must run unchanged), so they are parsed into a plain dataclass
that tests check without starting anything. Every option BMv2 has is known here and gets one of three
treatments, never silence:
- done as BMv2 does it (interfaces, pcap, logging, device id, drop port, CPU port, priority queues,
  egress_spec initialised to the drop port, JSON swapping on or off, max port count, --json-version);
- accepted with a printed note because it only concerns a BMv2 service p4kit replaces by P4Runtime
  (Thrift, nanomsg event logs and notifications): see `notes`;
- refused with the reason (packet files, nanomsg packet input, the debugger, saved state, the dataplane
  gRPC service, loadable modules, TLS).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field

from p4kit.switch.linkemu import LinkParams, LinkSpecError, parse_link_spec

DEFAULT_GRPC_ADDR = "127.0.0.1:9559"  # BMv2 binds 0.0.0.0:9559; p4kit binds loopback unless asked
DEFAULT_DROP_PORT = 511
DEFAULT_MAX_PORT_COUNT = 512
LOG_LEVELS = ("trace", "debug", "info", "warn", "error", "off")
JSON_VERSION = "2.23"  # the BMv2 JSON format p4kit-switch reads (and p4kit-p4c writes)

# BMv2 options p4kit cannot honour, and why (the switch refuses to start with them).
REFUSED = {
    "use_files": "--use-files (packets from X_in.pcap / to X_out.pcap files) is not supported: p4kit "
    "ports are network interfaces; use veths, and --pcap to record them",
    "packet_in": "--packet-in (a nanomsg packet socket) is not supported: p4kit has no nanomsg; "
    "attach interfaces with -i",
    "debugger": "--debugger is not supported: p4kit has no BMv2 debugger; "
    "--log-console prints each packet's path through the pipeline",
    "debugger_addr": "--debugger-addr is not supported: p4kit has no BMv2 debugger",
    "restore_state": "--restore-state is not supported: p4kit cannot read BMv2's saved state; "
    "a controller restores entries through P4Runtime",
    "trace_dir": "--trace-dir is not supported: use --log-console or --log-file",
    "dp_grpc_server_addr": "--dp-grpc-server-addr is not supported: p4kit has no dataplane gRPC service "
    "(p4.bm.DataplaneInterface); packets use interfaces and P4Runtime PacketIn/PacketOut",
    "load_modules": "--load-modules is not supported: p4kit cannot load BMv2 extern modules (.so)",
    "grpc_server_ssl": "--grpc-server-ssl is not supported: p4kit-switch serves plain-text gRPC only",
    "grpc_server_cacert": "--grpc-server-cacert is not supported: p4kit-switch serves plain-text gRPC only",
    "grpc_server_cert": "--grpc-server-cert is not supported: p4kit-switch serves plain-text gRPC only",
    "grpc_server_key": "--grpc-server-key is not supported: p4kit-switch serves plain-text gRPC only",
    "grpc_server_with_client_auth": "--grpc-server-with-client-auth is not supported: "
    "p4kit-switch serves plain-text gRPC only",
}


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
    priority_queues: int = 1
    egress_spec_init_to_drop: bool = False
    disable_swap: bool = False
    max_port_count: int = DEFAULT_MAX_PORT_COUNT
    flow_cache: bool = True  # p4kit only: the cache of pipeline results (flowcache.py)
    native: bool = True  # p4kit only: the compiled data plane (native/)
    flow_cache_insert_inv_prob: int = 100  # p4kit only: one miss in N is stored (as OVS's EMC)
    notes: list[str] = field(default_factory=list)  # printed at start: what was accepted but has no effect


class UsageError(Exception):
    """Bad command line; main() prints it after `p4kit-switch: error:` and exits with 1."""


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("tributary")
    except Exception:
        return "0.1.0"


class _JsonVersion(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[no-untyped-def]
        print(JSON_VERSION)
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="p4kit-switch",
        usage="p4kit-switch [options] <path to JSON config file> [-- target options]",
        description="p4kit's software switch: runs a BMv2 JSON program with simple_switch's v1model "
        "semantics and serves P4Runtime, with simple_switch_grpc's command line. Options of BMv2 "
        "services p4kit replaces by P4Runtime (Thrift, nanomsg) are accepted with a note; options "
        "it cannot honour are refused with the reason.",
        epilog="Target options (after --): --grpc-server-addr HOST:PORT (default "
        f"{DEFAULT_GRPC_ADDR}; BMv2 binds 0.0.0.0, p4kit binds 0.0.0.0 only when asked), "
        "--cpu-port N (not 0: PacketIn/PacketOut use port N), --drop-port N (default 511), "
        "--priority-queues N (queues per egress port, served by standard_metadata.priority), "
        "--egress-spec-init-to-drop (egress_spec starts as the drop port), --disable-swap "
        "(a committed pipeline cannot be replaced), --link PORT:SPEC. Refused: "
        "--dp-grpc-server-addr, --load-modules, --grpc-server-ssl and its certificates.",
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
        "--pcap",
        nargs="?",
        const=".",
        metavar="DIR",
        help="write <iface>_in.pcap and <iface>_out.pcap per port into DIR (default: .)",
    )
    p.add_argument("--use-files", type=int, metavar="WAIT", help="refused (see --help's description)")
    p.add_argument("--packet-in", metavar="ADDR", help="refused: p4kit has no nanomsg")
    p.add_argument("--thrift-port", type=int, metavar="N", help="accepted with a note: p4kit has no Thrift")
    p.add_argument("--device-id", type=int, default=0, help="P4Runtime device id (default 0)")
    p.add_argument("--nanolog", metavar="ADDR", help="accepted with a note: p4kit has no nanomsg event log")
    p.add_argument("--trace-dir", metavar="DIR", help="refused: use --log-console / --log-file")
    p.add_argument("--log-console", action="store_true", help="print the per-packet trace to stdout")
    p.add_argument("--log-file", metavar="FILE", help="write the per-packet trace to FILE")
    p.add_argument(
        "-L",
        "--log-level",
        choices=LOG_LEVELS,
        default="trace",
        help="trace detail when logging is on (default trace)",
    )
    p.add_argument("--log-flush", action="store_true", help="flush the log file after every message (always)")
    p.add_argument("--log-file-max-size", type=int, metavar="BYTES", help="accepted with a note: no rotation")
    p.add_argument("--log-file-max-files", type=int, metavar="N", help="accepted with a note: no rotation")
    p.add_argument(
        "--notifications-addr",
        metavar="ADDR",
        help="accepted with a note: digests and idle timeouts go to the controller over P4Runtime",
    )
    p.add_argument("--debugger", action="store_true", help="refused: p4kit has no BMv2 debugger")
    p.add_argument("--debugger-addr", metavar="ADDR", help="refused: p4kit has no BMv2 debugger")
    p.add_argument("--restore-state", metavar="FILE", help="refused: p4kit cannot read BMv2 saved state")
    p.add_argument(
        "--dump-packet-data",
        type=int,
        metavar="N",
        help="accepted with a note: the trace (--log-console) shows each packet's headers instead",
    )
    p.add_argument(
        "--json-version",
        action=_JsonVersion,
        nargs=0,
        help="print the BMv2 JSON format version p4kit-switch reads, and exit",
    )
    p.add_argument(
        "--no-p4",
        action="store_true",
        help="start without a program; the controller sets it with SetForwardingPipelineConfig",
    )
    p.add_argument(
        "--max-port-count",
        type=int,
        default=DEFAULT_MAX_PORT_COUNT,
        metavar="N",
        help=f"most interfaces the switch may have (default {DEFAULT_MAX_PORT_COUNT})",
    )
    p.add_argument(
        "--drop-port",
        type=int,
        metavar="N",
        help="as the target option (accepted here too, where older p4kit scripts put it)",
    )
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
        "--no-flow-cache",
        action="store_true",
        help="p4kit only (simple_switch has no such option): run every packet through the pipeline. "
        "By default a stateless program's results (no registers, counters, meters, clones, "
        "timestamps...) are cached per ingress port and parsed bytes, and repeated packets skip "
        "the pipeline; any control-plane write empties the cache",
    )
    p.add_argument(
        "--no-native",
        action="store_true",
        help="p4kit only: run the program on the Python data plane. By default a program within "
        "what the native data plane covers (fixed-width fields up to 64 bits, no stacks, meters, "
        "clones or digests...) is compiled to C with the system's C compiler (cached in "
        "~/.cache/p4kit/native) and runs there; the log says which data plane runs the program",
    )
    p.add_argument(
        "--flow-cache-insert-inv-prob",
        type=int,
        default=100,
        metavar="N",
        help="p4kit only: store one miss in N in the cache of results (default 100, as Open vSwitch's "
        "other_config:emc-insert-inv-prob; 1 stores every miss)",
    )
    p.add_argument(
        "-v",
        "--version",
        action="version",
        version=f"p4kit-switch {_version()} (p4kit, a BMv2 simple_switch_grpc replacement)",
    )
    return p


class _TargetParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"target option: {message}")


def build_target_parser() -> argparse.ArgumentParser:
    p = _TargetParser(prog="p4kit-switch ... --", add_help=False)
    p.add_argument("--grpc-server-addr", default=DEFAULT_GRPC_ADDR)
    p.add_argument("--cpu-port", type=int)
    p.add_argument("--drop-port", type=int)
    p.add_argument("--priority-queues", type=int)
    p.add_argument("--egress-spec-init-to-drop", action="store_true")
    p.add_argument("--disable-swap", action="store_true")
    p.add_argument("--enable-swap", action="store_true")  # simple_switch's: swapping is on anyway
    p.add_argument("--link", action="append", default=[])
    p.add_argument("--dp-grpc-server-addr")
    p.add_argument("--grpc-server-ssl", action="store_true")
    p.add_argument("--grpc-server-cacert")
    p.add_argument("--grpc-server-cert")
    p.add_argument("--grpc-server-key")
    p.add_argument("--grpc-server-with-client-auth", action="store_true")
    p.add_argument("--load-modules")
    return p


def _refusals(args: argparse.Namespace, targs: argparse.Namespace) -> None:
    for ns in (args, targs):
        for name, reason in REFUSED.items():
            value = getattr(ns, name, None)
            if value not in (None, False):
                raise UsageError(reason)


def _notes(args: argparse.Namespace) -> list[str]:
    notes = []
    if args.thrift_port is not None:
        notes.append(
            f"--thrift-port {args.thrift_port}: no Thrift server; p4kit-cli --thrift-port {args.thrift_port} "
            "(simple_switch_CLI's command line) reaches this switch's P4Runtime server"
        )
    if args.nanolog:
        notes.append("--nanolog ignored: p4kit has no nanomsg event log (use --log-console or --log-file)")
    if args.notifications_addr:
        notes.append("--notifications-addr ignored: digests and idle timeouts go to P4Runtime clients")
    if args.dump_packet_data:
        notes.append("--dump-packet-data ignored: the trace (--log-console/--log-file) shows each packet")
    if args.log_file_max_size is not None or args.log_file_max_files is not None:
        notes.append("--log-file-max-size/--log-file-max-files ignored: the log file is not rotated")
    if args.log_flush and not args.log_file:
        notes.append("--log-flush ignored: no --log-file")  # what BMv2 says too
    return notes


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
    _refusals(args, targs)
    if args.pcap and args.pcap.endswith(".json") and args.json is None:
        args.json, args.pcap = args.pcap, "."  # `--pcap prog.json`: the flag had no directory
    if args.log_console and args.log_file:
        raise UsageError("--log-console and --log-file are exclusive (as in BMv2)")
    notes = _notes(args)
    if args.pcap and not os.path.isdir(args.pcap):  # BMv2 refuses; p4kit makes it (scripts rely on it)
        notes.append(f"--pcap: directory '{args.pcap}' does not exist; it is created")
    if args.drop_port is not None and targs.drop_port is not None and args.drop_port != targs.drop_port:
        raise UsageError("--drop-port is given twice with different values")
    drop_port = targs.drop_port if targs.drop_port is not None else args.drop_port
    if args.no_p4 and args.json:
        notes.append(f"ignoring input config {args.json} as '--no-p4' was used")  # BMv2's warning
        args.json = None
    opts = SwitchOptions(
        json_path=args.json,
        no_p4=args.no_p4,
        device_id=args.device_id,
        log_console=args.log_console,
        log_file=args.log_file,
        log_level=args.log_level,
        pcap_dir=args.pcap,
        drop_port=DEFAULT_DROP_PORT if drop_port is None else drop_port,
        thrift_port=args.thrift_port,
        grpc_addr=targs.grpc_server_addr,
        cpu_port=targs.cpu_port,
        seed=args.link_seed,
        priority_queues=1 if targs.priority_queues is None else targs.priority_queues,
        egress_spec_init_to_drop=targs.egress_spec_init_to_drop,
        disable_swap=targs.disable_swap,
        max_port_count=args.max_port_count,
        flow_cache=not args.no_flow_cache,
        native=not args.no_native,
        flow_cache_insert_inv_prob=args.flow_cache_insert_inv_prob,
        notes=notes,
    )
    _check(opts, args, targs)
    return opts


def _check(opts: SwitchOptions, args: argparse.Namespace, targs: argparse.Namespace) -> None:
    if not opts.no_p4 and not opts.json_path:
        raise UsageError("please specify an input JSON configuration file (or --no-p4)")
    if not 0 <= opts.drop_port <= 0xFFFF:
        raise UsageError(f"--drop-port {opts.drop_port}: out of range")
    if opts.cpu_port is not None:
        if opts.cpu_port == 0:
            raise UsageError("--cpu-port 0 is not valid (as in BMv2: port 0 is a dataplane port)")
        if opts.cpu_port < 0 or opts.cpu_port == opts.drop_port:
            raise UsageError(f"--cpu-port {opts.cpu_port}: must be positive and not the drop port")
    if not 1 <= opts.priority_queues <= 8:
        raise UsageError(f"--priority-queues {opts.priority_queues}: must be 1 to 8 (priority is bit<3>)")
    if opts.max_port_count < 0:
        raise UsageError("--max-port-count cannot be negative")
    if opts.flow_cache_insert_inv_prob < 1:
        raise UsageError("--flow-cache-insert-inv-prob must be 1 or more (1 stores every miss)")
    for spec in args.interface:
        number, sep, iface = spec.partition("@")
        if not sep or not iface or not number.isdigit():
            raise UsageError(f"-i {spec!r}: expected PORT@IFACE")
        port = int(number)
        if port in opts.interfaces:
            raise UsageError(f"port {port} is given twice")
        if port == opts.cpu_port:
            raise UsageError(f"-i {spec}: port {port} is the CPU port; it cannot have an interface")
        opts.interfaces[port] = iface
    if len(opts.interfaces) > opts.max_port_count:
        raise UsageError(f"{len(opts.interfaces)} interfaces exceed --max-port-count {opts.max_port_count}")
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
