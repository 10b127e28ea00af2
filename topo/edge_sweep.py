"""`tributary schedule --sweep --run`: measured Edge-INC runs over a memory sweep, plotted over the model's
prediction for the same runs.

For each memory it runs `tributary schedule --memory M --size S --run --compare all-to-all --json` (one
WAN per point: each point has its own emulated rate, chosen by the CPU budget, docs/edge-inc.md) and
records both schedules' predicted and measured times. The curves are the emulated model's prediction
on a fine memory grid, each memory with the parameters a run at that memory would get (so the curve
jumps where the chosen rate changes); the markers are the measurements.

    sudo .venv/bin/tributary schedule --sweep --run --out docs/schedule-measured

Writes OUT.csv (one row per run and schedule) and OUT.png. Needs root (Mininet).
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from controller.schedule import EdgeParams, optimise
from controller.schedule.emulated import choose_rate, predict
from controller.schedule.units import parse_size
from topo.commands.schedule import executed_rounds, network_from_wan
from topo.wan import default_wan


def model_curves(size: float, memories: list[float]) -> dict[str, list[float]]:
    """At each memory, what `schedule --run --compare all-to-all` would predict: the optimiser's best
    grid at that memory and all-to-all, at the emulated parameters the run would choose for the pair."""
    net = network_from_wan(default_wan(), None)
    a2a = [[tuple(net.names)]]
    out: dict[str, list[float]] = {"grid 3x3": [], "all-to-all": []}
    for m in memories:
        result = optimise(net, EdgeParams(m, size), families=("all-to-all", "grid"))
        grid_c = next(c for c in result.best_per_family() if c.family == "grid")
        grid = executed_rounds(net, grid_c)
        pair = [a2a, grid] if result.best.family == "all-to-all" else [grid, a2a]
        p = choose_rate(net, m, size, net.bandwidth_bps, pair).params
        out["grid 3x3"].append(predict(net, p, grid)[1])
        out["all-to-all"].append(predict(net, p, a2a)[1])
    return out


def run_point(memory: str, size: str, loss: float) -> dict:
    cmd = [sys.executable, "-m", "topo.cli", "schedule", "--memory", memory, "--size", size, "--run"]
    cmd += ["--compare", "all-to-all", "--json", "--loss", str(loss)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    lines = [ln for ln in res.stdout.strip().splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"{' '.join(cmd)} gave no JSON (exit {res.returncode}): {res.stderr[-2000:]}")
    return json.loads(lines[-1])


def measured_sweep(memories: list[str], size: str, loss: float, out: Path) -> list[dict]:
    """Run every memory point, write OUT.csv and OUT.png, return the rows."""
    rows = []
    for m in memories:
        d = run_point(m, size, loss)
        for r in d["runs"]:
            rows.append(
                {
                    "memory_bytes": parse_size(m),
                    "strategy": r["strategy"],
                    "wire_mbit": d["emulation"]["wire_mbit"],
                    "emulated_memory_bytes": d["emulation"]["memory_bytes"],
                    "chunks": d["emulation"]["chunks"],
                    "predicted_s": r["predicted_s"],
                    "measured_s": r["measured_s"],
                    "exact": r.get("exact"),
                }
            )
            print(f"[schedule] {json.dumps(rows[-1])}", file=sys.stderr, flush=True)
    if not rows:
        raise RuntimeError("no run produced a result")
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.with_suffix(".csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    plot_measured(rows, parse_size(size), loss, size, out.with_suffix(".png"))
    return rows


def plot_measured(rows: list[dict], size: float, loss: float, size_text: str, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mems = [r["memory_bytes"] for r in rows]
    # a log grid plus the measured memories themselves, so each marker has its prediction on the curve
    grid_m = sorted({*(float(x) for x in np.geomspace(min(mems), max(mems), 24)), *mems})
    curves = model_curves(size, grid_m)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, colour in (("grid 3x3", "tab:blue"), ("all-to-all", "tab:red")):
        ax.plot(
            np.array(grid_m) / 1e6, curves[name], color=colour, label=f"{name}: model (emulated parameters)"
        )
        pts = [
            (r["memory_bytes"] / 1e6, r["measured_s"])
            for r in rows
            if r["strategy"] == name and r["measured_s"]
        ]
        if pts:
            ax.scatter(*zip(*pts, strict=True), color=colour, marker="o", zorder=3, label=f"{name}: measured")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("edge memory at real scale (MB)")
    ax.set_ylabel("time to the exact average, emulated (s)")
    ax.set_title(f"Nine cities, S = {size_text}, loss {loss:g}: measured vs model")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
