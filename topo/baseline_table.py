"""Markdown tables of `tributary allreduce --compare ... --json` runs for docs/results.md, so that the
numbers there are the runs' own, never typed by hand: `python -m topo.baseline_table RUN.json ...`
(each file one run's JSON line, its first line optionally `# command`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ALGORITHMS = ("inc", "hierarchical", "mpi", "ring", "ps")
NAMES = {
    "inc": "INC (Core-INC tree)",
    "hierarchical": "hierarchical",
    "mpi": "MPI (OpenMPI)",
    "ring": "flat ring",
    "ps": "parameter server",
}


def _fmt(x: object, digits: int = 3) -> str:
    return f"{x:.{digits}f}" if isinstance(x, float | int) and not isinstance(x, bool) else "-"


def table(run: dict) -> str:
    """One run: each algorithm's time beside its bound, then the ratios against the best host."""
    rows = [
        "| algorithm | seconds | lower bound (s) | times the bound | exact | notes |",
        "|---|---:|---:|---:|---|---|",
    ]
    for key in ALGORITHMS:
        res = run.get(key)
        if not isinstance(res, dict) or "seconds" not in res:
            continue
        notes = []
        if key == "mpi":
            notes.append(f"traffic: {res.get('algorithm', '?')}; bound of {res.get('bound_of', '?')}")
            if "traffic_bound_s" in res:
                notes.append(f"its bytes alone need {_fmt(res['traffic_bound_s'])} s")
        warm = res.get("stats", {}).get("max_warmup_s")
        if warm is not None:
            notes.append(f"untimed warm-up {_fmt(warm, 1)} s")
        rows.append(
            f"| {NAMES[key]} | {_fmt(res['seconds'])} | {_fmt(res.get('bound_s'))} | "
            f"{_fmt(res.get('times_bound'), 2)} | {'yes' if res.get('exact') else 'NO'} | {'; '.join(notes)} |"
        )
    lines = ["\n".join(rows), ""]
    ratio, bound = run.get("ratio_vs_best_host"), run.get("bound_ratio_vs_best_host")
    if ratio is not None:
        verdict = "met" if run.get("goal_met") else "not met"
        lines.append(
            f"INC over the best host baseline ({run.get('best_host')}): {_fmt(ratio)}, their bounds' ratio "
            f"{_fmt(bound)}; goal (at least 0.9 of it): {verdict}."
        )
    short = run.get("shortfall")
    if isinstance(short, dict):
        lines.append("Why: " + "; ".join(short.get("reasons", [])) + ".")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: python -m topo.baseline_table RUN.json ...", file=sys.stderr)
        return 2
    for path in paths:
        text = Path(path).read_text().splitlines()
        command = text[0][1:].strip() if text and text[0].startswith("#") else ""
        run = json.loads(next(line for line in text if line.startswith("{")))
        print(f"`{command}` ({run.get('wan_model', '?')}):\n" if command else "")
        print(table(run))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
