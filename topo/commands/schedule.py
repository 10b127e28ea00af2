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
    Candidate,
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
from controller.schedule.emulated import (
    DELIVERY_BUDGET,
    MAX_WIRE_BPS,
    MIN_CHUNKS,
    choose_rate,
    emulated_params,
    peak_deliveries,
    predict_schedule,
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
    run = p.add_argument_group(
        "running the schedule on the emulated WAN (--run, needs root; docs/edge-inc.md)",
        "The run scales rate, memory and size by one factor (--emulated-rate / --bandwidth); latencies stay "
        "real. Its prediction uses the same formulas with the emulation's own rate, whole accumulators, "
        "whole chunks and header bytes.",
    )
    run.add_argument(
        "--run",
        action="store_true",
        help="bring up the WAN and run the best schedule through the edge stages",
    )
    run.add_argument(
        "--compare",
        choices=("all-to-all", "none"),
        default="none",
        help="also run all-to-all on the same WAN (when all-to-all is the best, the best clique schedule instead)",
    )
    run.add_argument(
        "--loss",
        type=float,
        default=0.0,
        metavar="FRACTION",
        help="random loss on every WAN link (0.01 = 1 %%)",
    )
    run.add_argument(
        "--emulated-rate",
        type=float,
        default=None,
        metavar="MBIT",
        help="WAN link rate of the run, Mbit/s of whole frames (default: the fastest rate, at most "
        f"{MAX_WIRE_BPS / 1e6:g}, at which the busiest round stays within the CPU budget of docs/edge-inc.md, "
        f"{DELIVERY_BUDGET:g} stream packets/s into the stages)",
    )
    run.add_argument(
        "--chunks",
        type=int,
        default=None,
        help=f"vector size of the run in 256-byte chunks (default: --size scaled, at least {MIN_CHUNKS})",
    )
    run.add_argument("--seed", type=int, default=1, help="seed of the sites' inputs")
    run.add_argument(
        "--format",
        choices=("int32", "float32"),
        default="int32",
        help="the sites' numbers: int32 (exact sums) or float32 (block fixed point: each round runs an "
        "exponent round first; results checked bit for bit against the stages' arithmetic and reported "
        "with their error against float64 and its bound)",
    )
    run.add_argument(
        "--run-memories",
        default="4MB,8MB,16MB,32MB,64MB,256MB",
        help="--sweep --run: the memories to measure (nine cities; one WAN each; default 4MB..256MB, 6 points)",
    )
    run.add_argument(
        "--stall-timeout", type=float, default=30.0, help="a stage gives up after this long without progress"
    )
    run.add_argument(
        "--link-mode", choices=("auto", "netem", "switch"), default="auto", help="where links are shaped"
    )
    run.add_argument(
        "--switch", dest="switch_binary", metavar="BINARY", help="switch program (default p4kit-switch)"
    )
    run.add_argument("--run-dir", type=Path, help="where logs and results go (default runs/<time>)")
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
        if args.sweep and args.run:
            return _measured_sweep(args)
        if args.sweep:
            return _sweep(net, edge, args, families)
        result = optimise(net, edge, args.eps, families)
    except (ModelError, ValueError) as exc:
        return _err(str(exc))
    if not result.candidates:
        return _err("no schedule reaches consensus")
    if args.run or args.compare != "none":
        return _emulated(wan, net, edge, result, args)
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


def executed_rounds(net: Network, cand: Candidate) -> list[list[tuple[str, ...]]]:
    """The rounds a run executes: the candidate's cycle repeated until consensus (idle sites left out)."""
    cycle = cand.named_rounds(net)
    n = cand.mixing.rounds if cand.mixing.reaches else len(cycle)
    return [[tuple(c) for c in cycle[t % len(cycle)]] for t in range(n)]


def _emulated(wan: Wan, net: Network, edge: EdgeParams, result: Result, args: argparse.Namespace) -> int:
    """Predict (and with --run, measure) the best schedule and the comparison at the emulation's scale."""
    from topo.options import log, require_root

    if not 0 <= args.loss < 1:
        return _err(f"--loss is a fraction in [0, 1) (0.01 means 1 %), got {args.loss}")
    if args.emulated_rate is not None and not args.emulated_rate > 0:
        return _err("--emulated-rate must be positive")
    if args.chunks is not None and args.chunks < 1:
        return _err("--chunks must be at least 1")
    best = result.best
    chosen = [(best.strategy, executed_rounds(net, best))]
    if args.compare == "all-to-all":
        if best.family != "all-to-all":
            chosen.append(("all-to-all", [[tuple(net.names)]]))
        else:  # all-to-all is the best: compare it with the best clique schedule instead
            others = sorted(
                (c for c in result.best_per_family() if c.family != "all-to-all"), key=lambda c: c.time_s
            )
            if others and others[0].mixing.reaches:
                chosen.append((others[0].strategy, executed_rounds(net, others[0])))
    try:
        if args.emulated_rate is None:
            choice = choose_rate(
                net,
                edge.memory_bytes,
                edge.size_bytes,
                net.bandwidth_bps,
                [r for _, r in chosen],
                chunks=args.chunks,
                loss=args.loss,
            )
            params = choice.params
        else:
            params = emulated_params(
                edge.memory_bytes,
                edge.size_bytes,
                net.bandwidth_bps,
                args.emulated_rate * 1e6,
                args.chunks,
                MIN_CHUNKS,
                args.loss,
            )
    except ModelError as exc:
        return _err(str(exc))
    plans = []
    for strategy, rounds in chosen:
        sp = predict_schedule(net, params, rounds, getattr(args, "format", "int32"))
        plans.append((strategy, rounds, sp.predicted, sp.total_s))
    peak = max(peak_deliveries(p) for _, _, p, _ in plans)
    emulation = params.to_json()
    emulation["scaled_chunks"] = round(edge.size_bytes * params.scale / params.chunk_bytes, 2)
    emulation["peak_deliveries_per_s"] = round(peak, 1)
    emulation["delivery_budget_per_s"] = DELIVERY_BUDGET
    out: dict[str, object] = {"emulation": emulation, "loss": args.loss, "runs": []}
    if peak > DELIVERY_BUDGET:
        log(
            f"warning: the busiest round takes {peak:.0f} stream packets/s into the stages, over the CPU budget "
            f"of {DELIVERY_BUDGET:g}/s: measured times may be CPU-bound"
        )
    if not args.run:
        for strategy, _rounds, predicted, total in plans:
            out["runs"].append(_predicted_json(strategy, predicted, total))  # type: ignore[attr-defined]
        _print_emulated(out, args.json)
        return 0
    if not require_root("schedule --run"):
        return 1
    from controller.edge.plan import runnable
    from topo.edge_run import run_schedule
    from topo.session import running_wan

    skipped = {}
    for strategy, rounds, _p, _t in plans:
        why = runnable(rounds)
        if why is not None:
            skipped[strategy] = why
            log(f"not running {strategy}: {why}")
    if len(skipped) == len(plans):
        return _err(f"nothing to run: {'; '.join(f'{k}: {v}' for k, v in skipped.items())}")

    run_args = argparse.Namespace(
        topology=args.topology,
        sites=args.sites,
        rate=params.wire_bps / 1e6,
        loss=args.loss,
        workers_per_site=None,
        run_dir=args.run_dir,
        link_mode=args.link_mode,
        switch_binary=args.switch_binary,
        pcap=False,
        trace=False,
    )
    ok = True
    with running_wan(run_args, label="schedule") as running:
        for tenant, (strategy, rounds, predicted, total) in enumerate(plans, start=1):
            if strategy in skipped:
                entry = _predicted_json(strategy, predicted, total)
                entry["skipped"] = skipped[strategy]
                out["runs"].append(entry)  # type: ignore[attr-defined]
                continue
            log(f"running {strategy}: {len(rounds)} round(s)")
            res = run_schedule(
                running,
                net,
                params,
                strategy,
                rounds,
                log,
                tenant=tenant,
                seed=args.seed,
                stall_timeout_s=args.stall_timeout,
                fmt=args.format,
            )
            out["runs"].append(res.to_json())  # type: ignore[attr-defined]
            ok = ok and res.exact
    runs = out["runs"]  # type: ignore[assignment]
    runs = [r for r in runs if "skipped" not in r]  # type: ignore[union-attr]
    measured = [r for r in runs if r.get("measured_s") is not None]  # type: ignore[union-attr]
    if len(measured) == len(runs) and len(runs) > 1:
        out["winner_measured"] = min(runs, key=lambda r: r["measured_s"])["strategy"]  # type: ignore[index]
        out["winner_predicted"] = min(runs, key=lambda r: r["predicted_s"])["strategy"]  # type: ignore[index]
    _print_emulated(out, args.json)
    return 0 if ok else 1


def _predicted_json(strategy: str, predicted: list, total: float) -> dict[str, object]:
    return {
        "strategy": strategy,
        "predicted_s": round(total, 4) if math.isfinite(total) else None,
        "measured_s": None,
        "rounds": [
            {
                "round": r.round,
                "predicted_s": round(r.time_s, 4) if math.isfinite(r.time_s) else None,
                "cliques": [
                    {
                        "members": list(c.members),
                        "rate_mbit": round(c.rate_Bps * 8 / 1e6, 4),
                        "limit": c.limit,
                    }
                    for c in r.cliques
                ],
            }
            for r in predicted
        ],
    }


def _print_emulated(out: dict[str, object], as_json: bool) -> None:
    if as_json:
        print(json.dumps(out, separators=(",", ":")))
        return
    con = _console()
    em = out["emulation"]
    con.print(
        f"emulation: x{em['scale']:.3g}, links {em['wire_mbit']:g} Mbit/s ({em['payload_mbit']:.3g} of payload), "  # type: ignore[index]
        f"stage memory {em['memory_bytes']} B, vector {em['chunks']} chunks, loss {out['loss']}"  # type: ignore[index]
    )
    for r in out["runs"]:  # type: ignore[attr-defined]
        if r.get("skipped"):
            con.print(f"{r['strategy']}: predicted {r['predicted_s']} s, not run: {r['skipped']}")
            continue
        t = Table(
            title=f"{r['strategy']}: predicted {r['predicted_s']} s, measured {r['measured_s']} s, exact {r.get('exact')}"
        )
        for col in ("round", "predicted s", "measured s", "peak memory B"):
            t.add_column(col)
        for rr in r["rounds"]:
            t.add_row(
                str(rr["round"]),
                str(rr["predicted_s"]),
                str(rr.get("measured_s")),
                str(rr.get("peak_memory_bytes")),
            )
        con.print(t)
        if r.get("wan_bytes"):
            con.print(
                f"bytes per WAN link: {r['wan_bytes']}; each stream once per link: {r.get('wan_streams_once')}"
            )
        if r.get("errors"):
            con.print(f"[red]errors: {r['errors']}[/]")
    if "winner_measured" in out:
        con.print(f"winner: measured {out['winner_measured']}, predicted {out['winner_predicted']}")


def _measured_sweep(args: argparse.Namespace) -> int:
    """--sweep --run: measure the best schedule and the comparison at each of --run-memories."""
    from topo.options import require_root

    if not require_root("schedule --sweep --run"):
        return 1
    from topo.edge_sweep import measured_sweep

    memories = [m.strip() for m in args.run_memories.split(",") if m.strip()]
    for m in memories:
        _size(m)  # refuse a bad size before any WAN comes up
    size_text = f"{args.size:g}B"
    rows = measured_sweep(memories, size_text, args.loss, args.out)
    if args.json:
        print(
            json.dumps(
                {
                    "points": rows,
                    "csv": str(args.out.with_suffix(".csv")),
                    "plot": str(args.out.with_suffix(".png")),
                }
            )
        )
    else:
        for r in rows:
            print(
                f"{format_size(r['memory_bytes'])}: {r['strategy']}: predicted {r['predicted_s']} s, measured {r['measured_s']} s"
            )
        print(f"wrote {args.out.with_suffix('.csv')} and {args.out.with_suffix('.png')}")
    return 0 if all(r["exact"] for r in rows if r["measured_s"] is not None) else 1
