"""`tributary amdahl`: the seed's Amdahl figure (runtime reduction against communication share) with the
points measured by `tributary train` on the emulated WAN overlaid."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from topo.options import add_wan_arguments, log, require_root


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "amdahl",
        help="the runtime reduction a faster allreduce buys, analytically and measured by training runs",
        description="Plot the seed's figure: an 8 GiB allreduce among 1,024 nodes at 400 Gbit/s, 352 ms as a "
        "ring against 151 ms with in-network aggregation, and the runtime reduction 1 - T_INC/T_ring = "
        "s (1 - 151/352) that buys against the communication share s (docs/training.md). Measured points come "
        "from `tributary train --json` results (--measured FILE ...) or from training runs made now at "
        "several compute scales (--run, needs root). Writes a PNG; --json prints the curve and the points.",
        epilog="examples:\n  tributary amdahl --json\n"
        "  tributary amdahl --measured runs/train-x1.json runs/train-x3000.json --out amdahl.png\n"
        "  sudo tributary amdahl --run --sites TYO,NYC,LON --workers-per-site 1 --compute-ms 0,250,1000,3000\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--measured", type=Path, nargs="*", default=[], help="tributary train --json result files")
    p.add_argument("--run", action="store_true", help="measure now: train at each --scales on the WAN (root)")
    p.add_argument(
        "--compute-ms",
        default="0,250,1000,3000",
        help="with --run: accelerator time per step (ms) of each point, comma-separated (default 0,250,1000,3000)",
    )
    p.add_argument(
        "--scales",
        default="1",
        help="with --run: gradient passes per step (CPU compute), comma-separated; every combination with "
        "--compute-ms is a point (default 1)",
    )
    p.add_argument("--steps", type=int, default=8, help="with --run: steps per training run (default 8)")
    p.add_argument(
        "--baseline",
        choices=("ring", "hierarchical"),
        default="ring",
        help="host strategy INC is compared with",
    )
    p.add_argument(
        "--format",
        dest="fmt",
        choices=("float32", "exact"),
        default="exact",
        help="with --run: gradient format of both runs (default exact: int32 sums, one tree round trip for "
        "INC; float32 adds an exponent round trip, which a 38-packet gradient cannot hide)",
    )
    p.add_argument("--out", type=Path, default=Path("amdahl.png"), help="the plot (PNG; default amdahl.png)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_wan_arguments(p)
    p.set_defaults(func=cmd_amdahl)


def _numbers(text: str, what: str, low: float) -> list[float]:
    try:
        values = sorted({float(t) for t in text.split(",") if t.strip()})
    except ValueError:
        raise SystemExit(f"tributary amdahl: {what} takes numbers, got {text!r}") from None
    if not values or values[0] < low:
        raise SystemExit(f"tributary amdahl: {what} must be at least {low:g}")
    return values


def measure(args: argparse.Namespace, points: list[tuple[int, float]]) -> list[dict]:
    """One `tributary train`-shaped result per (compute scale, compute ms), baseline and core-tree each,
    all on one WAN."""
    from dataclasses import asdict

    from edge.training.loop import TrainConfig
    from topo.session import running_wan
    from topo.train_run import compare_curves, run_strategy

    docs = []
    with running_wan(args, label="amdahl") as running:
        for scale, ms in points:
            cfg = TrainConfig(steps=args.steps, fmt=args.fmt, compute_scale=scale, compute_ms=ms)
            runs = []
            for strategy in (args.baseline, "core-tree"):
                log(f"compute x{scale}, at least {ms:g} ms: training with {strategy}, {cfg.steps} steps")
                runs.append(run_strategy(running, cfg, strategy, log))
            docs.append(
                {
                    "sites": running.network.wan.names,
                    "config": asdict(cfg),
                    "runs": [r.summary() for r in runs],
                    "curves": compare_curves(runs),
                }
            )
    return docs


def cmd_amdahl(args: argparse.Namespace) -> int:
    from topo import amdahl

    try:
        docs = amdahl.load_train_results(args.measured)
    except ValueError as exc:
        raise SystemExit(f"tributary amdahl: {exc}") from None
    if args.run:
        scales = [int(v) for v in _numbers(args.scales, "--scales", 1)]
        millis = _numbers(args.compute_ms, "--compute-ms", 0)
        if not require_root("amdahl --run"):
            return 1
        docs += measure(args, [(scale, ms) for scale in scales for ms in millis])
    points = amdahl.measured_points(docs, baseline=args.baseline)
    if (args.measured or args.run) and not points:
        log(f"warning: no result holds both a successful {args.baseline} run and a core-tree run")
    amdahl.plot(args.out, points)
    log(f"plot written to {args.out}")
    summary = {
        "definitions": {
            "comm_share": "M_base / (C + M_base), of the baseline's iteration",
            "comm_speedup": "M_base / M_inc",
            "runtime_reduction": "1 - T_inc / T_base = comm_share * (1 - 1 / comm_speedup) at equal compute",
        },
        "seed": amdahl.seed_curve(),
        "seed_inputs": {
            "bytes": amdahl.SEED_BYTES,
            "nodes": amdahl.SEED_NODES,
            "rate_bit_s": amdahl.SEED_RATE_BIT_S,
            "ring_s": amdahl.SEED_RING_S,
            "inc_s": amdahl.SEED_INC_S,
            "bandwidth_terms_s": {k: round(v, 4) for k, v in amdahl.seed_bandwidth_terms().items()},
        },
        "measured": [p.to_json() for p in points],
    }
    if points:
        summary["max_deviation"] = round(max(p.deviation for p in points), 4)
        summary["max_deviation_ref"] = round(max(p.deviation_ref for p in points), 4)
    if args.json:
        print(json.dumps(summary))
    else:
        print(json.dumps(summary, indent=2))
    return 0
