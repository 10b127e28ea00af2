"""`tributary schedule`: the best group schedule for a WAN, its predicted time, and a memory sweep.

The optimiser lives in controller.schedule and takes plain numbers; this module turns the WAN model of
topo/ (the nine cities or a topology file) into those numbers and prints the answer.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from controller.schedule import (
    DEFAULT_EPS,
    FAMILIES,
    CliqueTiming,
    EdgeParams,
    Inbound,
    ModelError,
    Network,
    Result,
    Sync,
    TimingCache,
    optimise,
)
from controller.schedule.model import DEFAULT_CHUNK_BYTES
from controller.schedule.sweep import Sweep, plot, run_sweep, write_csv
from controller.schedule.units import UnitError, format_size, format_time, parse_bandwidth, parse_size
from topo.wan import Wan, default_wan, load_topology

UNITS_HELP = (
    "Sizes: MB = 10^6 bytes, GB = 10^9 (KiB/MiB/GiB for powers of two); bandwidth: Gbit = 10^9 bit/s."
)


def _size(text: str) -> float:
    try:
        return parse_size(text)
    except UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _bandwidth(text: str) -> float:
    try:
        return parse_bandwidth(text)
    except UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _eps(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"eps must be a number, got {text!r}") from None
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"eps must be between 0 and 1, got {text}")
    return v


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "schedule",
        help="the best group schedule (all-to-all or rotating cliques) for a WAN and edge memory",
        description="Compute the fastest synchronisation schedule for Edge-INC over the WAN: all-to-all, "
        "product-design grids, resolvable designs, latency-aware partitions and hierarchical schedules, "
        "each scored by the model of docs/schedule-model.md (multicast out, edge aggregation in with "
        "memory M, time until every site holds the average). " + UNITS_HELP,
        epilog="examples:\n"
        "  tributary schedule --memory 4MB --size 64MB --bandwidth 10Gbit\n"
        "  tributary schedule --memory 256MB --json\n"
        "  tributary schedule --sweep --size 64MB --out runs/schedule-sweep\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # argparse takes '-4MB' for an option ('expected one argument'); read it as a value instead, so
    # the size check can say what is wrong with it. (Private attribute, stable in Python 3.11.)
    p._negative_number_matcher = re.compile(r"^-\.?\d")
    p.add_argument(
        "--memory",
        type=_size,
        default=parse_size("4MB"),
        help="edge memory per site (default 4MB = 4e6 bytes)",
    )
    p.add_argument(
        "--size",
        type=_size,
        default=parse_size("64MB"),
        help="bytes each site contributes per round (default 64MB)",
    )
    p.add_argument(
        "--bandwidth",
        type=_bandwidth,
        default=None,
        help="WAN link rate, e.g. 10Gbit, 100Mbit (default: the topology's real rate, 10Gbit for the nine cities)",
    )
    p.add_argument("--sites", help="comma-separated cities (default: all nine)")
    p.add_argument("--topology", type=Path, help="a TOML topology file; overrides --sites")
    p.add_argument(
        "--chunk", type=_size, default=float(DEFAULT_CHUNK_BYTES), help="aggregation chunk (default 256B)"
    )
    p.add_argument(
        "--inbound",
        choices=[m.value for m in Inbound],
        default=Inbound.LINKS.value,
        help="links: each incoming stream has its own WAN link into the edge stage (default); "
        "shared: the k-1 streams share one access link",
    )
    p.add_argument(
        "--sync",
        choices=[m.value for m in Sync],
        default=Sync.CLIQUE.value,
        help="clique: a clique starts when its own members are ready (default); "
        "barrier: every round waits for all sites",
    )
    p.add_argument(
        "--eps",
        type=_eps,
        default=DEFAULT_EPS,
        help=f"consensus error target for schedules that never average exactly (default 2^-23 = {DEFAULT_EPS:.3g}, float32 precision; looser targets favour many cheap rounds)",
    )
    p.add_argument("--families", help=f"comma-separated subset of: {','.join(FAMILIES)}")
    p.add_argument("--json", action="store_true", help="print one JSON line")
    p.add_argument("--sweep", action="store_true", help="sweep memory 1MB..1GB, write a PNG plot and a CSV")
    p.add_argument("--points", type=int, default=31, help="sweep: memory sizes, log-spaced (default 31)")
    p.add_argument("--min-memory", type=_size, default=1e6, help="sweep: smallest memory (default 1MB)")
    p.add_argument("--max-memory", type=_size, default=1e9, help="sweep: largest memory (default 1GB)")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("schedule-sweep"),
        help="sweep output prefix (default schedule-sweep -> .png, .csv)",
    )
    p.set_defaults(func=cmd_schedule)


def network_from_wan(wan: Wan, bandwidth_bps: float | None) -> Network:
    """The optimiser's plain inputs: one-way latency = shortest-path RTT / 2, regions = continents."""
    names = wan.names
    n = len(names)
    if not wan.is_connected():
        raise ModelError("the topology is not connected")
    lat = np.zeros((n, n))
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            if i != j:
                lat[i, j] = wan.rtt_ms(a, b) / 2e3
    bw = bandwidth_bps if bandwidth_bps is not None else wan.real_rate_mbit * 1e6
    return Network(tuple(names), lat, bw, tuple(s.continent for s in wan.sites))


def _err(msg: str) -> int:
    print(f"tributary schedule: error: {msg}", file=sys.stderr)
    return 2


def _progress(msg: str) -> None:
    print(f"[schedule] {msg}", file=sys.stderr, flush=True)


def cmd_schedule(args: argparse.Namespace) -> int:
    wan = load_topology(args.topology) if args.topology else default_wan(args.sites)
    families = FAMILIES
    if args.families:
        families = tuple(f.strip() for f in args.families.split(",") if f.strip())
        unknown = [f for f in families if f not in FAMILIES]
        if unknown:
            return _err(f"unknown family {', '.join(unknown)}; choose from {', '.join(FAMILIES)}")
    try:
        net = network_from_wan(wan, args.bandwidth)
        edge = EdgeParams(args.memory, args.size, args.chunk, Inbound(args.inbound), Sync(args.sync))
        if args.sweep:
            return _sweep(net, edge, args, families)
        result = optimise(net, edge, args.eps, families)
    except (ModelError, ValueError) as exc:
        return _err(str(exc))
    if not result.candidates:
        return _err("no schedule reaches consensus")
    if args.json:
        print(json.dumps(result.to_json(), separators=(",", ":")))
    else:
        print_result(result)
    return 0


def _sweep(net: Network, edge: EdgeParams, args: argparse.Namespace, families: tuple[str, ...]) -> int:
    if args.points < 2 or args.min_memory >= args.max_memory:
        return _err("a sweep needs --points >= 2 and --min-memory < --max-memory")
    memories = [float(m) for m in np.geomspace(args.min_memory, args.max_memory, args.points)]
    sweep = run_sweep(net, edge, memories, args.eps, progress=_progress, families=families)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    png, csv_path = args.out.with_suffix(".png"), args.out.with_suffix(".csv")
    write_csv(sweep, csv_path)
    plot(sweep, png)
    if args.json:
        print(json.dumps(sweep_json(sweep, png, csv_path), separators=(",", ":")))
    else:
        print_sweep(sweep, png, csv_path)
    return 0


def sweep_json(sweep: Sweep, png: Path, csv_path: Path) -> dict[str, object]:
    return {
        "size_bytes": sweep.size_bytes,
        "points": [
            {
                "memory_bytes": p.memory_bytes,
                "best": {"strategy": p.best.strategy, "family": p.best.family, "time_s": p.best.time_s},
                "per_family": {f: c.time_s for f, c in p.per_family.items()},
            }
            for p in sweep.points
        ],
        "crossovers": [
            {"memory_bytes": c.memory_bytes, "from": c.before, "to": c.after} for c in sweep.crossovers
        ],
        "all_to_all_from_bytes": sweep.all_to_all_from,
        "plot": str(png),
        "csv": str(csv_path),
    }


def _console() -> Console:
    """Rich's 80 columns for pipes would wrap the tables; give them room when not on a terminal."""
    return Console() if sys.stdout.isatty() else Console(width=150)


def print_result(result: Result) -> None:
    """The winner round by round (with what limits each clique), then the best of every family."""
    con = _console()
    net, edge, best = result.net, result.edge, result.best
    con.print(
        f"[bold]{len(net.names)} sites[/], link {net.bandwidth_bps / 1e9:g} Gbit/s, edge memory "
        f"{format_size(edge.memory_bytes)}, {format_size(edge.size_bytes)} per site per round, "
        f"inbound={edge.inbound.value}, sync={edge.sync.value}, eps={result.eps:g}"
    )
    reach = "exact average" if best.mixing.exact else f"error <= {result.eps:g}"
    con.print(
        f"[bold green]best: {best.strategy}[/] ({best.family}), {len(best.rounds)} round(s) per cycle, "
        f"{best.mixing.rounds} round(s) to {reach}: [bold]{format_time(best.time_s)}[/]"
    )
    cache = TimingCache(net, edge)
    t = Table(title=f"best schedule, one cycle (sync={edge.sync.value})")
    for col in ("round", "clique", "rate Gbit/s", "limited by", "max skew ms", "clique time", "done at"):
        t.add_column(col)
    ready = [0.0] * net.n
    for r, rnd in enumerate(best.rounds, 1):
        if edge.sync is Sync.BARRIER:
            ready = [max(ready)] * net.n
        for clique in rnd:
            if len(clique) < 2:
                continue
            ct = cache.get(clique)
            start = max(ready[i] for i in ct.members)
            for i, fin in zip(ct.members, ct.finish_s, strict=True):
                ready[i] = start + fin
            t.add_row(
                str(r),
                " ".join(net.names[i] for i in ct.members),
                f"{ct.rate_Bps * 8 / 1e9:.3g}",
                ct.limit,
                f"{max(ct.skew_s) * 1e3:.1f}",
                format_time(ct.time_s),
                format_time(start + ct.time_s),
            )
    con.print(t)
    f = Table(title="best candidate of each family")
    for col in ("family", "strategy", "k", "rounds/cycle", "to consensus", "time", "search"):
        f.add_column(col)
    for c in sorted(result.best_per_family(), key=lambda c: c.time_s):
        f.add_row(
            c.family,
            c.strategy,
            str(c.k),
            str(len(c.rounds)),
            (f"{c.mixing.rounds} rounds" + (" (exact)" if c.mixing.exact else ""))
            if c.mixing.reaches
            else "never",
            format_time(c.time_s),
            c.search.split(" ")[0],
        )
    con.print(f)
    a2a = next((c for c in result.candidates if c.family == "all-to-all"), None)
    if a2a is not None:
        con.print(_why_all_to_all(net, edge, cache.get(a2a.rounds[0][0])))


def _why_all_to_all(net: Network, edge: EdgeParams, ct: CliqueTiming) -> str:
    """One sentence on what limits the all-to-all round: the edge memory against the skew, or the link."""
    worst = int(np.argmax(ct.skew_s))
    skew_ms = ct.skew_s[worst] * 1e3
    lift = min(edge.size_bytes, net.rate_Bps * ct.skew_s[worst] + edge.chunk_bytes)
    head = (
        f"why: in all-to-all each edge sums {net.n - 1} streams; the largest arrival skew is {skew_ms:.1f} ms "
        f"(at {net.names[ct.members[worst]]})"
    )
    if ct.limit.startswith("memory"):
        return (
            f"{head}, so {format_size(edge.memory_bytes)} of edge memory allows only {ct.rate_Bps * 8 / 1e9:.3g} "
            f"Gbit/s; {format_size(lift)} (link rate x skew, or the whole vector) would allow the full link."
        )
    return f"{head}; {format_size(edge.memory_bytes)} of edge memory covers it (>= {format_size(lift)}), so the link limits."


def print_sweep(sweep: Sweep, png: Path, csv_path: Path) -> None:
    con = _console()
    t = Table(title=f"memory sweep, {format_size(sweep.size_bytes)} per site per round")
    t.add_column("memory")
    for fam in FAMILIES:
        t.add_column(fam)
    t.add_column("best")
    for p in sweep.points:
        cells = [format_time(p.per_family[f].time_s) if f in p.per_family else "-" for f in FAMILIES]
        t.add_row(format_size(p.memory_bytes), *cells, p.best.strategy)
    con.print(t)
    for c in sweep.crossovers:
        con.print(f"crossover: {c.before} -> {c.after} at {format_size(c.memory_bytes)}")
    a2a = sweep.all_to_all_from
    if a2a is not None and math.isfinite(a2a):
        con.print(f"[bold]all-to-all is best from {format_size(a2a)} of edge memory[/]")
    con.print(f"wrote {png} and {csv_path}")
