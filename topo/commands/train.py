"""`tributary train`: data-parallel training of a small real model across the sites, gradients allreduced
every step by the chosen strategies, each run on the same model, data split and seeds."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from topo.options import add_wan_arguments, log, require_root


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "train",
        help="train an MLP on the digits data set across the sites, gradients allreduced by each strategy",
        description="Bring up the WAN, then train a two-layer perceptron (numpy) on scikit-learn's digits "
        "data set with one worker per worker host: each step every worker computes the gradient of its own "
        "minibatch and the gradients are summed by the strategy (ring: flat ring of all workers; hierarchical: "
        "site leaders; mpi: OpenMPI's MPI_Allreduce; core-tree: INC through the switches; edge-cliques: Edge-INC, "
        "the edge hosts' stages summing over the schedule's rounds of cliques). Every strategy gets the same model, data split, "
        "batches and seeds. Prints per-step progress, and at the end loss, accuracy, compute and "
        "communication time and the time to the target accuracy of each run (one JSON object with --json). "
        "Needs root.",
        epilog="examples:\n  sudo tributary train --sites TYO,NYC,LON --strategy ring,hierarchical,core-tree\n"
        "  sudo tributary train --strategy core-tree                       # the nine cities\n"
        "  sudo tributary train --sites TYO,NYC,LON --strategy ring,core-tree --format exact --json\n"
        "  sudo tributary train --strategy edge-cliques,core-tree --edge-schedule grid --format exact\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_wan_arguments(p)
    p.add_argument(
        "--strategy",
        type=_strategies,
        default=["ring", "hierarchical", "mpi", "core-tree"],
        help="comma-separated strategies, each run in turn: ring, hierarchical, mpi (OpenMPI's "
        "MPI_Allreduce), core-tree, edge-cliques (default: ring,hierarchical,mpi,core-tree)",
    )
    p.add_argument(
        "--edge-schedule",
        choices=("best", "all-to-all", "grid"),
        default="best",
        help="edge-cliques: the schedule each synchronisation runs, a finite-time design so that every "
        "site gets the exact sum: best (the optimiser's fastest of all-to-all and the grids of cliques "
        "rotating per round), all-to-all, or grid (default best)",
    )
    p.add_argument("--steps", type=int, default=30, help="training steps per run (default 30)")
    p.add_argument("--batch", type=int, default=16, help="examples per worker and step (default 16)")
    p.add_argument("--lr", type=float, default=0.5, help="learning rate of SGD (default 0.5)")
    p.add_argument("--hidden", type=int, default=32, help="hidden units (default 32: 2,410 parameters)")
    p.add_argument("--seed", type=int, default=1, help="seed of the initial weights, split and batches")
    p.add_argument(
        "--format",
        dest="fmt",
        choices=("float32", "exact"),
        default="float32",
        help="how gradients travel: float32 (hosts add float32, the switches block fixed point) or exact "
        "(fixed point on a 2**-20 grid, int32 sums: every strategy gives identical curves; default float32)",
    )
    p.add_argument(
        "--local-steps",
        type=int,
        default=1,
        metavar="K",
        help="DiLoCo-style: K local SGD steps between averagings of the parameter change (default 1: "
        "average gradients every step)",
    )
    p.add_argument(
        "--compute-scale",
        type=int,
        default=1,
        metavar="N",
        help="gradient passes per step (the same pass repeated N times: more compute per step, the same "
        "curve), to vary the communication share (default 1)",
    )
    p.add_argument(
        "--compute-ms",
        type=float,
        default=0.0,
        metavar="MS",
        help="accelerator time per step: each step's compute lasts at least MS, the worker waiting out the "
        "rest as a host waits for its GPU (takes no CPU from the emulated network; default 0)",
    )
    p.add_argument(
        "--target", type=float, default=0.9, help="test accuracy for the time-to-target (default 0.9)"
    )
    p.add_argument(
        "--stall-timeout",
        type=float,
        default=30.0,
        help="INC workers give up after this long without a result",
    )
    p.add_argument("--out", type=Path, help="also write the JSON summary to this file")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_train)


def _strategies(text: str) -> list[str]:
    from edge.training.comms import check_strategy

    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of strategies, each once, got {text!r}"
        )
    for n in names:
        try:
            check_strategy(n)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return names


def cmd_train(args: argparse.Namespace) -> int:
    from edge.training.loop import TrainConfig

    cfg = TrainConfig(
        steps=args.steps,
        batch=args.batch,
        lr=args.lr,
        hidden=args.hidden,
        seed=args.seed,
        fmt=args.fmt,
        local_steps=args.local_steps,
        compute_scale=args.compute_scale,
        compute_ms=args.compute_ms,
        target_accuracy=args.target,
    )
    try:
        cfg.check()
    except ValueError as exc:
        raise SystemExit(f"tributary train: {exc}") from None
    if not require_root("train"):
        return 1
    from topo.allreduce_run import worker_hosts
    from topo.session import running_wan
    from topo.train_run import compare_curves, run_strategy

    runs = []
    with running_wan(args, label="train") as running:
        for strategy in args.strategy:
            log(
                f"training with {strategy}: {cfg.steps} steps, {cfg.fmt} gradients, compute x{cfg.compute_scale}"
                + (f", at least {cfg.compute_ms:g} ms per step" if cfg.compute_ms else "")
            )
            runs.append(
                run_strategy(
                    running, cfg, strategy, log, args.stall_timeout, edge_schedule=args.edge_schedule
                )
            )
            s = runs[-1].summary()
            log(
                f"{strategy}: accuracy {s['final_accuracy']}, {s['seconds']} s ({s['comm_seconds']} s "
                f"communicating), target {cfg.target_accuracy} after {s['time_to_target_s']} s"
                + (f"; errors: {s['errors']}" if "errors" in s else "")
            )
        sites = running.network.wan.names
        workers = len(worker_hosts(running))
    summary = {
        "sites": sites,
        "workers": workers,
        "config": asdict(cfg),
        "runs": [r.summary() for r in runs],
        "curves": compare_curves(runs),
    }
    summary.update(against_best_host(summary["runs"]))
    text = json.dumps(summary)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    if args.json:
        print(text)
    else:
        brief = [{k: v for k, v in r.items() if k != "curve"} for r in summary["runs"]]
        print(json.dumps({**summary, "runs": brief}, indent=2))
    return 0 if all(r["ok"] for r in summary["runs"]) else 1


IN_NETWORK = ("core-tree", "edge-cliques")


def against_best_host(runs: list[dict]) -> dict[str, object]:
    """INC's (core-tree's, and edge-cliques' under its own key) time to the target accuracy against the
    fastest host strategy's, and whether every run ended within 0.5 % (absolute) of the same accuracy."""
    out: dict[str, object] = {}
    done = [r for r in runs if r["ok"]]
    if len(done) >= 2:
        accs = [r["final_accuracy"] for r in done]
        out["accuracy_spread"] = round(max(accs) - min(accs), 6)
        out["same_accuracy"] = max(accs) - min(accs) <= 0.005
    hosts = [r for r in done if r["strategy"] not in IN_NETWORK and r["time_to_target_s"] is not None]
    if not hosts:
        return out
    best = min(hosts, key=lambda r: r["time_to_target_s"])
    for name, key in (("core-tree", ""), ("edge-cliques", "edge_")):
        inc = next((r for r in done if r["strategy"] == name), None)
        if inc is not None and inc["time_to_target_s"]:
            out["best_host"] = best["strategy"]
            out[f"{key}time_to_target_speedup_vs_best_host"] = round(
                best["time_to_target_s"] / inc["time_to_target_s"], 3
            )
    return out
