"""Before/after of the worker's loss recovery: the allreduce from two copies of the tree, interleaved.

    .venv/bin/python scripts/repair_ab.py --before /tmp/old --after /tmp/new --runs 3 --out /tmp/ab3
    .venv/bin/python scripts/repair_ab.py --before /tmp/old --after /tmp/new --runs 2 --sites all --out /tmp/ab9
    .venv/bin/python scripts/repair_ab.py --read /tmp/ab3 /tmp/ab9          # the table of kept runs

The machine's speed varies by +-30 % from minute to minute (the switches and workers share two cores
with whatever else runs), so a before measured at another time than its after says little: the runs
alternate, before then after, each one `scripts/repro_stall.py --runs 1 --tree COPY` (the goal's
command, `tributary allreduce ... --json`, under the heavy lock, taken per run). Each copy runs its
own switch too (repro_stall --tree), so the two differ only where the copies differ.

The table gives per run what says where the packets went: seconds and the bound, the packets the
workers sent, their retransmissions (found by order, repeats of a repair, timeouts before any result,
tail probes), the workers' CPU (summed cpu_ms), their garbage collections, and the switches' CPU
(switch_cpu_s, summed over the switches), then the medians per copy.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPRO = Path(__file__).resolve().with_name("repro_stall.py")
COLUMNS = (
    ("seconds", "s"),
    ("bound_s", "bound"),
    ("packets_sent", "packets"),
    ("retransmissions", "retr"),
    ("early_retransmissions", "early"),
    ("repeat_retransmissions", "repeat"),
    ("blind_timeouts", "blind"),
    ("tail_probes", "probes"),
    ("repeats_shortened", "short"),
    ("wait_ms", "wait_ms"),
    ("answer_ms", "answr_ms"),
    ("cpu_ms", "cpu_ms"),
    ("gc_collections", "gc"),
    ("switch_cpu_s", "sw_cpu_s"),
    ("max_base_rtt_ms", "base_ms"),
)


def row(run_dir: Path) -> dict[str, object]:
    """One run's figures from its result.json (the JSON line of `tributary allreduce --json`)."""
    out: dict[str, object] = {"run": str(run_dir)}
    path = run_dir / "result.json"
    lines = path.read_text().strip().splitlines() if path.exists() else []
    try:
        result = json.loads(lines[-1])
    except (ValueError, IndexError):
        out["error"] = "no result"
        return out
    inc = result.get("inc", {})
    stats = inc.get("stats", {})
    out.update({key: stats.get(key) for key, _ in COLUMNS})
    out["seconds"], out["bound_s"], out["exact"] = inc.get("seconds"), inc.get("bound_s"), result.get("exact")
    # the mean wait given to a first repair, and the mean time one took to be answered (without a repeat)
    if stats.get("first_repairs"):
        out["wait_ms"] = round(stats["repair_wait_ms"] / stats["first_repairs"])
    if stats.get("repairs_answered"):
        out["answer_ms"] = round(stats["repair_answer_ms"] / stats["repairs_answered"])
    switch = inc.get("switch_cpu_s") or {}
    out["switch_cpu_s"] = round(sum(switch.values()), 2) if switch else None
    return out


def runs_in(top: Path) -> list[tuple[str, Path]]:
    """(copy, run directory) of every run kept under `top` (before-N/run000, after-N/run000: the copy
    is the name up to its first - or _)."""
    found = []
    for d in sorted(top.iterdir()):
        if d.is_dir():
            copy = d.name.replace("_", "-").split("-")[0]
            found += [(copy, r) for r in sorted(d.glob("run*")) if r.is_dir()]
    return found


def table(rows: list[tuple[str, dict[str, object]]]) -> str:
    lines = [f"{'copy':<7}" + "".join(f"{label:>9}" for _, label in COLUMNS)]
    for copy, r in rows:
        if "error" in r:
            lines.append(f"{copy:<7} {r['run']}: {r['error']}")
            continue
        lines.append(f"{copy:<7}" + "".join(f"{_cell(r.get(key)):>9}" for key, _ in COLUMNS))
    for copy in dict.fromkeys(c for c, _ in rows):
        mine = [r for c, r in rows if c == copy and "error" not in r]
        if not mine:
            continue
        medians = []
        for key, _ in COLUMNS:
            values = [float(v) for v in (r.get(key) for r in mine) if isinstance(v, int | float)]
            medians.append(_cell(statistics.median(values)) if values else "-")
        lines.append(f"{('med ' + copy)[:7]:<7}" + "".join(f"{m:>9}" for m in medians))
    return "\n".join(lines)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if value < 100 else f"{value:.0f}"
    return str(value)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, help="the copy of the tree before the change")
    ap.add_argument("--after", type=Path, help="the copy with the change")
    ap.add_argument("--runs", type=int, default=3, help="runs of each copy (default 3)")
    ap.add_argument("--sites", default="TYO,NYC,LON", help="comma-separated, or 'all' (the nine)")
    ap.add_argument("--out", type=Path, help="where the runs are kept")
    ap.add_argument("--read", type=Path, nargs="*", help="only print the table of the runs kept there")
    args = ap.parse_args(argv)
    if args.read:
        rows = [(copy, row(d)) for top in args.read for copy, d in runs_in(top)]
        print(table(rows))
        return 0
    if not (args.before and args.after and args.out) or args.runs < 1:
        ap.error("--before, --after and --out are needed (and --runs must be positive), or --read")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in range(args.runs):
        for copy, tree in (("before", args.before), ("after", args.after)):
            where = args.out / f"{copy}-{n}"
            subprocess.run(
                [sys.executable, str(REPRO), "--runs", "1", "--sites", args.sites, "--tree", str(tree),
                 "--out", str(where)],
                check=False, capture_output=True, text=True,
            )  # fmt: skip
            rows += [(copy, row(d)) for d in sorted(where.glob("run*"))]
            print(table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
