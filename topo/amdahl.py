"""Amdahl's law for a faster allreduce: what a shorter communication phase buys a whole iteration.

Definitions (docs/training.md writes them out):
- an iteration is compute C followed by communication M (no overlap): T = C + M;
- the communication share of the baseline is s = M_base / (C + M_base);
- the communication speed-up is k = M_base / M_new;
- the runtime reduction is r = 1 - T_new / T_base = s * (1 - 1/k), at equal compute;
- the end-to-end speed-up is T_base / T_new = 1 / ((1 - s) + s / k).

The seed's figure: an 8 GiB allreduce among 1,024 nodes at 400 Gbit/s takes 352 ms as a ring and 151 ms
with in-network aggregation (figures as the seed states them), so k = 2.33 and r = 0.571 s: a 57 % shorter
allreduce shortens an iteration by 11 % at s = 0.2 and by 34 % at s = 0.6.

Measured points come from `tributary train` runs (their JSON) at several compute scales: each pairs a
baseline run with a core-tree run of the same configuration.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

SEED_BYTES = 8 * 2**30
SEED_NODES = 1024
SEED_RATE_BIT_S = 400e9
SEED_RING_S = 0.352
SEED_INC_S = 0.151


def runtime_reduction(share: float, comm_speedup: float) -> float:
    """r = s (1 - 1/k): the fraction of an iteration saved when communication, a share s of it, becomes k
    times faster while compute stays the same."""
    if not 0 <= share <= 1:
        raise ValueError(f"communication share is a fraction in [0, 1], got {share}")
    if comm_speedup <= 0:
        raise ValueError(f"communication speed-up must be positive, got {comm_speedup}")
    return share * (1.0 - 1.0 / comm_speedup)


def speedup(share: float, comm_speedup: float) -> float:
    """End-to-end speed-up 1 / ((1 - s) + s / k)."""
    return 1.0 / (1.0 - runtime_reduction(share, comm_speedup))


def seed_speedup() -> float:
    return SEED_RING_S / SEED_INC_S


def seed_curve(points: int = 11) -> list[dict[str, float]]:
    """The seed's runtime reduction at communication shares 0, 0.1, ..., 1."""
    k = seed_speedup()
    shares = [i / (points - 1) for i in range(points)]
    return [
        {"comm_share": round(s, 4), "runtime_reduction": round(runtime_reduction(s, k), 6)} for s in shares
    ]


def seed_bandwidth_terms() -> dict[str, float]:
    """The bandwidth terms behind the seed's setting, for reference: a ring moves 2(n-1)/n V per node, a
    switch tree V up and V down on separate directions of each link (latency terms excluded)."""
    v_bits = SEED_BYTES * 8
    n = SEED_NODES
    return {
        "ring_s": 2 * (n - 1) / n * v_bits / SEED_RATE_BIT_S,
        "tree_s": v_bits / SEED_RATE_BIT_S,
    }


@dataclass
class MeasuredPoint:
    compute_scale: int
    compute_ms: float
    baseline: str
    comm_share: float  # of the baseline run
    comm_speedup: float  # baseline's communication time over core-tree's, same runs
    measured_reduction: float  # 1 - T_core-tree / T_baseline
    predicted_reduction: float  # s (1 - 1/k) from this point's s and k
    measured_speedup: float
    predicted_speedup: float
    deviation: float  # |measured - predicted| / predicted, of the speed-up
    predicted_speedup_ref: float = 0.0  # with k from the reference point (the highest share) instead
    deviation_ref: float = 0.0

    def to_json(self) -> dict[str, float | int | str]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in vars(self).items()}


def _runs_by_strategy(doc: dict) -> dict[str, dict]:
    return {r["strategy"]: r for r in doc.get("runs", []) if r.get("ok")}


def measured_points(docs: list[dict], baseline: str = "ring", inc: str = "core-tree") -> list[MeasuredPoint]:
    """One point per `tributary train` result that holds both a successful baseline and an INC run, in order
    of falling communication share. The first (most communication-bound) point is the reference: its
    communication speed-up predicts the others too (`predicted_speedup_ref`), a check that does not reuse
    a point's own communication time."""
    pairs = []
    for doc in docs:
        runs = _runs_by_strategy(doc)
        if (
            baseline in runs
            and inc in runs
            and runs[inc]["comm_seconds"] > 0
            and runs[baseline]["seconds"] > 0
        ):
            pairs.append((doc.get("config", {}), runs[baseline], runs[inc]))
    if not pairs:
        return []
    pairs.sort(key=lambda p: -p[1]["comm_seconds"] / p[1]["seconds"])
    k_ref = pairs[0][1]["comm_seconds"] / pairs[0][2]["comm_seconds"]
    points = []
    for cfg, b, i in pairs:
        s = b["comm_seconds"] / b["seconds"]
        k = b["comm_seconds"] / i["comm_seconds"]
        measured = b["seconds"] / i["seconds"]
        predicted = speedup(s, k)
        ref = speedup(s, k_ref)
        points.append(
            MeasuredPoint(
                compute_scale=int(cfg.get("compute_scale", 1)),
                compute_ms=float(cfg.get("compute_ms", 0.0)),
                baseline=baseline,
                comm_share=s,
                comm_speedup=k,
                measured_reduction=1 - i["seconds"] / b["seconds"],
                predicted_reduction=runtime_reduction(s, k),
                measured_speedup=measured,
                predicted_speedup=predicted,
                deviation=abs(measured - predicted) / predicted,
                predicted_speedup_ref=ref,
                deviation_ref=abs(measured - ref) / ref,
            )
        )
    return points


def load_train_results(paths: list[Path]) -> list[dict]:
    docs = []
    for p in paths:
        try:
            docs.append(json.loads(p.read_text()))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"{p}: not a tributary train --json result ({exc})") from None
    return docs


def plot(path: Path, points: list[MeasuredPoint]) -> None:
    """The seed's curve, the curve for the measured communication speed-up, and the measured points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shares = [i / 100 for i in range(101)]
    k = seed_speedup()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(
        shares,
        [runtime_reduction(s, k) for s in shares],
        label=f"seed: ring 352 ms vs INC 151 ms (k = {k:.2f})",
    )
    if points:
        k_ref = points[0].comm_speedup
        ax.plot(
            shares,
            [runtime_reduction(s, k_ref) for s in shares],
            linestyle="--",
            label=f"prediction for the measured k = {k_ref:.2f} ({points[0].baseline} vs core-tree)",
        )
        ax.scatter(
            [p.comm_share for p in points],
            [p.measured_reduction for p in points],
            color="black",
            zorder=3,
            label="measured (tributary train, compute varied)",
        )
    ax.set_xlabel("communication share of the baseline iteration")
    ax.set_ylabel("runtime reduction, 1 - T_INC / T_baseline")
    ax.set_xlim(0, 1)
    ax.set_ylim(min(0.0, *(p.measured_reduction for p in points)) if points else 0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
