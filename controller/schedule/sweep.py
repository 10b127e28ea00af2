"""Memory sweep: the best schedule of each family as the edge memory grows, and where the winner flips.

The crossover is located by bisection on log(memory) between the two sweep points where the winning
family changes, comparing only the two families involved (the rest cannot matter there).
"""

from __future__ import annotations

import csv
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from controller.schedule.mixing import DEFAULT_EPS
from controller.schedule.model import EdgeParams, Network
from controller.schedule.optimiser import FAMILIES, Candidate, Progress, optimise

DEFAULT_MEMORIES = tuple(float(x) for x in np.geomspace(1e6, 1e9, 31))  # 10 points per decade


@dataclass(frozen=True)
class SweepPoint:
    memory_bytes: float
    per_family: dict[str, Candidate]
    best: Candidate


@dataclass(frozen=True)
class Crossover:
    """The memory at which the fastest family changes from `before` to `after` (bisected)."""

    memory_bytes: float
    before: str
    after: str


@dataclass
class Sweep:
    net: Network
    size_bytes: float
    points: list[SweepPoint] = field(default_factory=list)
    crossovers: list[Crossover] = field(default_factory=list)

    @property
    def all_to_all_from(self) -> float | None:
        """Smallest memory from which all-to-all stays the best schedule (the headline crossover)."""
        for c in reversed(self.crossovers):
            if c.after == "all-to-all":
                return c.memory_bytes
        if self.points and self.points[0].best.family == "all-to-all":
            return self.points[0].memory_bytes
        return None


def _winner(net: Network, edge: EdgeParams, eps: float, families: Sequence[str]) -> Candidate:
    return optimise(net, edge, eps, families).best


def run_sweep(
    net: Network,
    edge: EdgeParams,
    memories: Sequence[float] = DEFAULT_MEMORIES,
    eps: float = DEFAULT_EPS,
    bisect_steps: int = 14,
    progress: Progress | None = None,
    families: Sequence[str] = FAMILIES,
) -> Sweep:
    """Optimise at every memory size; bisect each change of the winning family."""
    sweep = Sweep(net, edge.size_bytes)
    for i, mem in enumerate(memories):
        if progress:
            progress(f"[{i + 1}/{len(memories)}] memory {mem / 1e6:.3g} MB")
        res = optimise(net, replace(edge, memory_bytes=mem), eps, families)
        sweep.points.append(SweepPoint(mem, {c.family: c for c in res.best_per_family()}, res.best))
    for a, b in zip(sweep.points, sweep.points[1:], strict=False):
        if a.best.family == b.best.family:
            continue
        fams = (a.best.family, b.best.family)
        lo, hi = math.log(a.memory_bytes), math.log(b.memory_bytes)
        for _ in range(bisect_steps):
            mid = (lo + hi) / 2
            win = _winner(net, replace(edge, memory_bytes=math.exp(mid)), eps, fams)
            if win.family == fams[0]:
                lo = mid
            else:
                hi = mid
        if progress:
            progress(f"crossover {fams[0]} -> {fams[1]} at {math.exp(hi) / 1e6:.4g} MB")
        sweep.crossovers.append(Crossover(math.exp(hi), *fams))
    return sweep


def write_csv(sweep: Sweep, path: Path) -> None:
    """One row per memory size: each family's best time and strategy, and the overall winner."""
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        head = ["memory_bytes", "memory_MB"]
        for fam in FAMILIES:
            head += [f"{fam}_time_s", f"{fam}_strategy"]
        head += ["best_family", "best_strategy", "best_time_s"]
        w.writerow(head)
        for p in sweep.points:
            row: list[object] = [f"{p.memory_bytes:.0f}", f"{p.memory_bytes / 1e6:.4g}"]
            for fam in FAMILIES:
                c = p.per_family.get(fam)
                row += [f"{c.time_s:.6f}", c.strategy] if c else ["", ""]
            row += [p.best.family, p.best.strategy, f"{p.best.time_s:.6f}"]
            w.writerow(row)
        for c in sweep.crossovers:
            w.writerow(
                [
                    f"{c.memory_bytes:.0f}",
                    f"{c.memory_bytes / 1e6:.4g}",
                    f"# crossover {c.before} -> {c.after}",
                ]
            )


def plot(sweep: Sweep, path: Path, title: str | None = None) -> None:
    """Time to consensus per family against memory (log-log), crossovers marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.5))
    mem_mb = [p.memory_bytes / 1e6 for p in sweep.points]
    styles = {
        "all-to-all": "-o",
        "grid": "-s",
        "resolvable": "--^",
        "latency-aware": "-.v",
        "hierarchical": ":D",
    }
    for fam in FAMILIES:
        ys = [p.per_family[fam].time_s * 1e3 if fam in p.per_family else np.nan for p in sweep.points]
        if all(np.isnan(ys)):
            continue
        ax.plot(mem_mb, ys, styles.get(fam, "-"), label=fam, markersize=4, linewidth=1.4)
    for c in sweep.crossovers:
        x = c.memory_bytes / 1e6
        ax.axvline(x, color="red" if c.after == "all-to-all" else "grey", linestyle="--", linewidth=1)
        ax.annotate(
            f"{c.before} → {c.after}\n{x:.3g} MB",
            xy=(x, 0.97),
            xycoords=("data", "axes fraction"),
            ha="right",
            va="top",
            fontsize=8,
            rotation=90,
        )
    # Name the winner of each memory band: family lines alone hide k (latency-aware can be pairs or triples).
    edges = [
        sweep.points[0].memory_bytes,
        *(c.memory_bytes for c in sweep.crossovers),
        sweep.points[-1].memory_bytes,
    ]
    for lo, hi in itertools.pairwise(edges):
        mid = math.sqrt(lo * hi)
        near = min(sweep.points, key=lambda p: abs(math.log(p.memory_bytes / mid)))
        ax.annotate(
            f"best: {near.best.strategy}",
            xy=(mid / 1e6, 0.03),
            xycoords=("data", "axes fraction"),
            ha="center",
            fontsize=8,
            bbox={"boxstyle": "round", "fc": "white", "alpha": 0.8},
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("edge memory per site (MB, 10^6 bytes)")
    ax.set_ylabel("time until every site holds the average (ms)")
    ax.set_title(title or f"Best schedule per family, {sweep.size_bytes / 1e6:.4g} MB per site per round")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
