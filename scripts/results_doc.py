#!/usr/bin/env python3
"""docs/results.md from the template scripts/results_template.md and the measurements file
docs/results-data.json that `make experiments` (scripts/experiments.py) writes.

Why a template: the prose lives in the template, every number in the document comes from a
measurement, each beside the command and run that produced it. A placeholder `{{ expression }}` is
Python evaluated with the helpers below (`val`, `src`, the tables); one whose experiment did not produce
a result renders as "not measured", never as a number from somewhere else.

    .venv/bin/python scripts/results_doc.py [--data docs/results-data.json] [--out docs/results.md]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from topo.baseline_table import table as baseline_table  # noqa: E402

TEMPLATE = ROOT / "scripts" / "results_template.md"
DATA = ROOT / "docs" / "results-data.json"
OUT = ROOT / "docs" / "results.md"
PLACEHOLDER = re.compile(r"\{\{(.+?)\}\}", re.S)


class Missing(LookupError):
    """A value the measurements do not hold (the experiment was skipped, failed or lacks the key)."""


def render(template: str, data: dict[str, dict]) -> str:
    """The document: every placeholder replaced by its value from `data` (experiment name -> record)."""
    ns = _helpers(data)

    def one(match: re.Match[str]) -> str:
        try:
            return str(eval(match.group(1).strip(), ns))
        except Missing as exc:
            return f"_(not measured: {exc})_"
        except (LookupError, StopIteration) as exc:  # a run whose JSON lacks what the sentence needs
            return f"_(not measured: {type(exc).__name__} {exc})_"

    return PLACEHOLDER.sub(one, template)


def _helpers(data: dict[str, dict]) -> dict[str, object]:
    def record(name: str) -> dict:
        rec = data.get(name)
        if rec is None:
            raise Missing(f"no run of experiment {name}")
        return rec

    def res(name: str) -> dict:
        rec = record(name)
        if not isinstance(rec.get("result"), dict):
            raise Missing(f"experiment {name}: {rec.get('status', 'no result')}")
        return rec["result"]

    def get(name: str, path: str) -> object:
        node: object = res(name)
        for part in path.split("."):
            if isinstance(node, list):
                try:
                    node = node[int(part)]
                except (ValueError, IndexError):
                    raise Missing(f"experiment {name}: no {path}") from None
            elif isinstance(node, dict) and part in node:
                node = node[part]
            else:
                raise Missing(f"experiment {name}: no {path}")
        if node is None:
            raise Missing(f"experiment {name}: {path} is empty")
        return node

    def val(name: str, path: str, spec: str = ".3g", scale: float = 1.0) -> str:
        x = get(name, path)
        if isinstance(x, bool) or not isinstance(x, int | float):
            return str(x)
        return format(x * scale if scale != 1.0 else x, spec)

    def cmd(name: str) -> str:
        return f"`{record(name)['command']}`"

    def run(name: str) -> str:
        rec = record(name)
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(rec["started"])) if "started" in rec else "?"
        parts = [f"run of {when}"]
        if rec.get("commit"):
            parts.append(f"at {rec['commit']}")
        if "seconds" in rec:
            parts.append(f"{rec['seconds']:.0f} s")
        if not str(rec.get("status", "ok")).startswith("ok"):
            parts.append(f"status: {rec['status']}")
        return ", ".join(parts)

    def src(name: str) -> str:
        return f"{cmd(name)} ({run(name)})"

    def span(values: Iterable[object], spec: str = ".2f") -> str:
        xs = sorted(float(x) for x in values)  # type: ignore[arg-type]
        if not xs:
            raise Missing("no values")
        lo, hi = format(xs[0], spec), format(xs[-1], spec)
        return lo if lo == hi else f"{lo}-{hi}"

    def each(names: Iterable[str], fn: Callable[[str], object]) -> list[object]:
        out = []
        for n in names:
            try:
                out.append(fn(n))
            except Missing:
                continue
        return out

    def baselines(name: str) -> str:
        return baseline_table(res(name))

    return {
        "data": data,
        "res": res,
        "get": get,
        "val": val,
        "cmd": cmd,
        "run": run,
        "src": src,
        "span": span,
        "each": each,
        "Missing": Missing,
        "baselines": baselines,
        "wan_table": lambda n: wan_table(res(n)),
        "train_table": lambda n: train_table(res(n)),
        "curves_text": lambda n: curves_text(res(n)),
        "amdahl_table": lambda n: amdahl_table(res(n)),
        "schedule_rounds_table": lambda n: schedule_rounds_table(res(n)),
        "sweep_table": lambda n: sweep_table(res(n)),
        "best_host_times_bound": lambda n: best_host_times_bound(res(n)),
        "min": min,
        "max": max,
        "len": len,
        "round": round,
        "abs": abs,
        "sorted": sorted,
    }


# --- tables ----------------------------------------------------------------------------------------------


def _f(x: object, spec: str = ".3f") -> str:
    if x is None:
        return "-"
    if isinstance(x, bool) or not isinstance(x, int | float):
        return str(x)
    return format(x, spec)


def wan_table(doc: dict) -> str:
    """The pairs whose measured RTT is furthest from the configured one (relative), largest first."""
    pairs = doc.get("pairs", [])
    if not pairs:
        raise Missing("wan check: no pairs")

    def err(p: dict) -> float:
        return abs(p["measured_ms"] - p["configured_ms"]) / p["configured_ms"]

    rows = ["| pair | configured RTT (ms) | measured RTT (ms) | error |", "|---|---:|---:|---:|"]
    for p in sorted(pairs, key=err, reverse=True)[:5]:
        rows.append(
            f"| {p['a']}-{p['b']} | {_f(p['configured_ms'], 'g')} | {_f(p['measured_ms'], 'g')} | {err(p) * 100:.1f} % |"
        )
    return "\n".join(rows)


NAMES = {
    "ring": "flat ring",
    "mpi": "MPI (OpenMPI)",
    "core-tree": "core-tree (Core-INC)",
    "edge-cliques": "edge-cliques (Edge-INC)",
}


def train_table(doc: dict) -> str:
    rows = [
        "| strategy | final test accuracy | seconds | communicating (s) | time to target (s) | bound per step (s) | a step's allreduce / its bound | workers agree |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in doc.get("runs", []):
        name = NAMES.get(r["strategy"], r["strategy"])
        if not r.get("ok"):
            rows.append(f"| {name} | failed: {'; '.join(r.get('errors', []))[:200]} | | | | | | |")
            continue
        rows.append(
            f"| {name} | {_f(r.get('final_accuracy'))} | {_f(r.get('seconds'), '.2f')} | {_f(r.get('comm_seconds'), '.2f')} | "
            f"{_f(r.get('time_to_target_s'), '.2f')} | {_f(r.get('bound_step_s'))} | {_f(r.get('comm_step_times_bound'), '.2f')} | "
            f"{'yes' if r.get('workers_agree') else 'NO'} |"
        )
    return "\n".join(rows)


def curves_text(doc: dict) -> str:
    """How each run's curve compares with the first one's, with the reason where they differ."""
    c = doc.get("curves") or {}
    lines = []
    for name, e in (c.get("against_reference") or {}).items():
        if e.get("identical"):
            lines.append(
                f"- {name} against {c['reference']}: identical curve, step by step, and the same final parameters"
            )
        else:
            lines.append(
                f"- {name} against {c['reference']}: losses differ by at most {e['max_loss_diff']:.2g}, test accuracy by at most "
                f"{e['max_accuracy_diff']:.3g}; why: {e.get('why')}"
            )
    if not lines:
        raise Missing("fewer than two runs to compare")
    return "\n".join(lines)


def amdahl_table(doc: dict) -> str:
    rows = [
        "| compute per step | baseline's comm share s | comm speed-up k | measured speed-up | predicted from s, k | predicted from s and the first point's k |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    pts = doc.get("measured", [])
    if not pts:
        raise Missing("no measured points")
    for p in pts:
        rows.append(
            f"| {p['compute_ms']:g} ms | {_f(p['comm_share'])} | {_f(p['comm_speedup'], '.2f')} | {_f(p['measured_speedup'])} | "
            f"{_f(p['predicted_speedup'])} ({p['deviation'] * 100:.1f} %) | {_f(p['predicted_speedup_ref'])} ({p['deviation_ref'] * 100:.1f} %) |"
        )
    return "\n".join(rows)


def schedule_rounds_table(doc: dict) -> str:
    rows = ["| schedule | round | predicted | measured | peak stage memory |", "|---|---|---:|---:|---:|"]
    runs = doc.get("runs", [])
    if not runs:
        raise Missing("no schedule runs")
    for r in runs:
        if r.get("measured_s") is None:
            rows.append(
                f"| {r['strategy']} | | {_f(r.get('predicted_s'))} s | not measured: {'; '.join(r.get('errors', []) or [r.get('skipped', '')])} | |"
            )
            continue
        for rr in r["rounds"]:
            rows.append(
                f"| {r['strategy']} | {rr['round']} | {_f(rr['predicted_s'])} s | {_f(rr['measured_s'])} s | {rr['peak_memory_bytes']} B |"
            )
        rows.append(f"| {r['strategy']} | total | {_f(r['predicted_s'])} s | {_f(r['measured_s'])} s | |")
    return "\n".join(rows)


def sweep_table(doc: dict) -> str:
    points = doc.get("points", [])
    if not points:
        raise Missing("no sweep points")
    mems = sorted({p["memory_bytes"] for p in points})
    rows = [
        "| M | links | stage memory | grid 3x3 predicted / measured | all-to-all predicted / measured | winner predicted / measured |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for m in mems:
        at = {p["strategy"]: p for p in points if p["memory_bytes"] == m}
        g, a = at.get("grid 3x3"), at.get("all-to-all")
        cells = []
        for p in (g, a):
            cells.append(f"{_f(p['predicted_s'])} / {_f(p['measured_s'])} s" if p else "-")
        win = "-"
        if g and a and g["measured_s"] and a["measured_s"] and g["predicted_s"] and a["predicted_s"]:
            wp = "grid" if g["predicted_s"] < a["predicted_s"] else "all-to-all"
            wm = "grid" if g["measured_s"] < a["measured_s"] else "all-to-all"
            win = f"{wp} / {wm}"
        any_p = g or a
        assert any_p is not None
        rows.append(
            f"| {m / 1e6:g} MB | {any_p['wire_mbit']:.3g} Mbit/s | {any_p['emulated_memory_bytes']} B | {cells[0]} | {cells[1]} | {win} |"
        )
    return "\n".join(rows)


def best_host_times_bound(doc: dict) -> float:
    best = doc.get("best_host")
    if not best or best not in doc:
        raise Missing("no best host baseline")
    return float(doc[best]["times_bound"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--template", type=Path, default=TEMPLATE)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    data = json.loads(args.data.read_text()) if args.data.exists() else {}
    args.out.write_text(render(args.template.read_text(), data))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
