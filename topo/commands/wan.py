"""`tributary run`, `tributary wan check` and `tributary clean`."""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from topo import cleanup
from topo.options import add_wan_arguments, log, require_root

if TYPE_CHECKING:
    from topo.session import RunningWan

TOLERANCE_PCT = 5.0
TOLERANCE_MS = 1.0


def register(subparsers: argparse._SubParsersAction) -> None:
    run = subparsers.add_parser(
        "run",
        help="bring up the emulated WAN with P4 switches, then the Mininet CLI (or a demo with --batch)",
        description="Bring up the emulated WAN: one p4kit-switch per city, worker and edge hosts, WAN links "
        "with real inter-city latencies; compile and push the switch program, install routes, print the "
        "measured RTTs, start the controller service (REST API on 127.0.0.1:8080), then open the Mininet CLI. "
        "With --batch (or without a terminal) run a short demo (pings and an iperf across continents) and "
        "exit; with --detach leave everything running in the background ('tributary stop' ends it). Needs root.",
        epilog="examples:\n  sudo tributary run\n  sudo tributary run --sites TYO,NYC,LON --batch\n"
        "  sudo tributary run --detach --sites TYO,NYC,LON   # then: curl http://127.0.0.1:8080/docs\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_wan_arguments(run)
    run.add_argument("--batch", action="store_true", help="run the demo and exit instead of opening the CLI")
    run.add_argument(
        "--iperf-seconds", type=float, default=5.0, help="length of the demo's iperf (default 5)"
    )
    from topo.commands.controller import add_controller_arguments

    add_controller_arguments(run)
    run.set_defaults(func=cmd_run)

    wan = subparsers.add_parser("wan", help="checks of the emulated WAN")
    wan_sub = wan.add_subparsers(dest="wan_command", metavar="WAN_COMMAND", required=True)
    check = wan_sub.add_parser(
        "check",
        help="bring up the WAN and compare measured with configured RTT for every pair of sites",
        description="Bring up the WAN, ping every pair of sites (median of several pings between their first "
        f"workers) and compare with the configured RTT. Exit 1 if any pair is off by more than "
        f"{TOLERANCE_PCT:g} % + {TOLERANCE_MS:g} ms. Needs root.",
    )
    add_wan_arguments(check)
    check.add_argument("--count", type=int, default=7, help="pings per pair (default 7)")
    check.add_argument("--json", action="store_true", help="print one JSON line instead of a table")
    check.set_defaults(func=cmd_wan_check)

    clean = subparsers.add_parser(
        "clean",
        help="remove what a crashed run left behind (processes, interfaces)",
        description="Remove the processes and interfaces that crashed Tributary runs recorded as theirs "
        "(in /run/tributary/owned): switches, Mininet shells, the controller, the switches' interfaces. "
        "Nothing else is touched, however it is named; a run that is still going is left alone. Needs root.",
    )
    clean.set_defaults(func=cmd_clean)


def _pairs(names: list[str]) -> list[tuple[str, str]]:
    return list(itertools.combinations(names, 2))


def measure(running: RunningWan, count: int) -> list[dict[str, object]]:
    wan = running.network.wan
    pairs = _pairs(wan.names)
    measured = running.network.ping_rtts(pairs, count=count)
    rows = []
    for a, b in pairs:
        m = measured[(a, b)]
        rows.append(
            {
                "a": a,
                "b": b,
                "configured_ms": wan.rtt_ms(a, b),
                "measured_ms": None if m is None else round(m, 2),
            }
        )
    return rows


def error_pct(row: dict[str, object]) -> float:
    conf, meas = float(row["configured_ms"]), row["measured_ms"]  # type: ignore[arg-type]
    if meas is None:
        return float("inf")
    return abs(float(meas) - conf) / conf * 100 if conf else 0.0  # type: ignore[arg-type]


def within_tolerance(row: dict[str, object]) -> bool:
    meas = row["measured_ms"]
    conf = float(row["configured_ms"])  # type: ignore[arg-type]
    return meas is not None and abs(float(meas) - conf) <= conf * TOLERANCE_PCT / 100 + TOLERANCE_MS  # type: ignore[arg-type]


def print_sites(running: RunningWan, console: Console) -> None:
    table = Table(title="Sites and hosts")
    for col in ("site", "switch (P4Runtime)", "hosts"):
        table.add_column(col)
    for sw in running.network.fabric.switches:
        hosts = ", ".join(f"{h.name} {h.ip}" for h in sw.hosts)
        table.add_row(sw.name, f"{sw.grpc_addr} dev {sw.device_id}", hosts)
    console.print(table)


def print_rtts(rows: list[dict[str, object]], console: Console) -> None:
    table = Table(title="Round-trip times between sites (first workers, median)")
    for col in ("pair", "configured ms", "measured ms", "error %"):
        table.add_column(col, justify="right")
    for row in rows:
        ok = within_tolerance(row)
        meas = "lost" if row["measured_ms"] is None else f"{row['measured_ms']:.1f}"
        table.add_row(
            f"{row['a']}-{row['b']}",
            f"{row['configured_ms']:g}",
            meas,
            f"[{'green' if ok else 'red'}]{error_pct(row):.1f}[/]",
        )
    console.print(table)


_IPERF_RATE = re.compile(r"([\d.]+)\s+([KMG]?)bits/sec")


def demo_iperf(running: RunningWan, seconds: float, console: Console) -> None:
    wan = running.network.wan
    if len(wan.sites) < 2:
        return
    # the farthest pair of sites: a transcontinental flow
    a, b = max(_pairs(wan.names), key=lambda p: wan.rtt_ms(*p))
    net = running.network
    server = net.host(net.first_worker(b))
    client = net.host(net.first_worker(a))
    server_ip = net.fabric.host(server.name)[1].ip
    log(f"iperf {a} -> {b} for {seconds:g} s (RTT {wan.rtt_ms(a, b):g} ms)")
    srv = server.popen(["iperf", "-s", "-p", "5001"])
    try:
        out = client.cmd(f"iperf -c {server_ip} -p 5001 -t {seconds:g} -f m")
    finally:
        srv.terminate()
        srv.wait()
    rates = _IPERF_RATE.findall(out)
    link = wan.link(*wan.path(a, b)[:2])
    configured = f" (link rate {link.rate_mbit:g} Mbit/s)" if link else ""
    if rates:
        console.print(f"iperf {a} -> {b}: {rates[-1][0]} {rates[-1][1]}bit/s{configured}")
    else:
        console.print(f"iperf {a} -> {b} gave no result:\n{out}")


def cmd_run(args: argparse.Namespace) -> int:
    if not require_root("run"):
        return 1
    from topo import detach
    from topo.secrets_env import take_secrets
    from topo.session import running_wan

    args.secrets = take_secrets()  # no switch, Mininet shell or keeper inherits a token
    if args.detach:
        return detach.launch(args)
    console = Console()
    interactive = sys.stdin.isatty() and sys.stdout.isatty() and not args.batch
    with running_wan(args, label="run") as running, detach.controller_for(running, args) as ctl:
        if detach.keeper_state_path() is not None:
            from topo.keeper import keep_running

            # the background WAN of `run --detach`, until `tributary stop`: dead switches come back
            keep_running(
                running, provision=ctl is None, state_path=detach.keeper_state_path() if ctl else None
            )
        print_sites(running, console)
        rows = measure(running, count=5)
        print_rtts(rows, console)
        if interactive:
            from mininet.cli import CLI

            console.print("Mininet CLI: try 'TYOw1 ping LONw1' or 'iperf TYOw1 NYCw1'; 'exit' stops the WAN.")
            assert running.network.net is not None
            CLI(running.network.net)
        else:
            demo_iperf(running, args.iperf_seconds, console)
    return 0


def cmd_wan_check(args: argparse.Namespace) -> int:
    if not require_root("wan check"):
        return 1
    from topo.session import running_wan

    with running_wan(args, label="wan-check") as running:
        log(f"pinging {len(_pairs(running.network.wan.names))} pairs, {args.count} pings each")
        rows = measure(running, args.count)
    worst = max((error_pct(r) for r in rows), default=0.0)
    ok = all(within_tolerance(r) for r in rows)
    if args.json:
        print(
            json.dumps(
                {"pairs": rows, "max_error_pct": round(worst, 2) if worst != float("inf") else None, "ok": ok}
            )
        )
    else:
        console = Console()
        print_rtts(rows, console)
        console.print(
            f"max error {worst:.1f} %: {'OK' if ok else 'FAILED'} "
            f"(tolerance {TOLERANCE_PCT:g} % + {TOLERANCE_MS:g} ms)"
        )
    return 0 if ok else 1


def cmd_clean(args: argparse.Namespace) -> int:
    if not require_root("clean"):
        return 1
    done = cleanup.clean()
    for owner in done.live_runs:
        print(f"left alone: the run of pid {owner} is still going ('tributary stop' ends a detached run)")
    print(f"removed {len(done.processes)} processes and {len(done.interfaces)} interfaces")
    return 0
