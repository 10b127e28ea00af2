#!/usr/bin/env python3
"""Run the experiments of docs/results.md and write docs/results-generated.md from what they printed.

Sizes are chosen so this 2-core machine finishes all of them in about ten minutes (well inside the half
hour allowed). What each printed (JSON), its log and its duration are kept under runs/experiments/.

`make experiments` calls this. Each experiment is one `tributary` command (or benchmark script) run as a
user would run it; its JSON output, its log and its duration are kept, and the generated report names
the command beside every number. An experiment that needs root is skipped without it, one that fails
or runs out of time is reported as such, and the others still run.

    sudo .venv/bin/python scripts/experiments.py                 # everything
    sudo .venv/bin/python scripts/experiments.py --only train-3,amdahl
    .venv/bin/python scripts/experiments.py --list
    .venv/bin/python scripts/experiments.py --report-only        # regenerate the report from runs/experiments
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "runs" / "experiments"
REPORT = ROOT / "docs" / "results-generated.md"
TRIBUTARY = [sys.executable, "-m", "topo.cli"]
SITES3 = "TYO,NYC,LON"


@dataclass
class Experiment:
    name: str
    title: str
    argv: list[str]
    root: bool
    estimate_s: float  # on this 2-core machine, for the progress line and the budget
    timeout_s: float
    json_stdout: bool = True

    def shown(self) -> str:
        """The command as a user types it."""
        args = (
            self.argv[3:]
            if self.argv[:3] == TRIBUTARY
            else [Path(self.argv[1]).relative_to(ROOT).as_posix(), *self.argv[2:]]
        )
        head = "tributary" if self.argv[:3] == TRIBUTARY else ".venv/bin/python"
        cmd = " ".join([head, *(str(a) for a in args)]).replace(str(ROOT) + "/", "")
        return ("sudo " if self.root else "") + cmd


def experiments() -> list[Experiment]:
    t = TRIBUTARY
    out = OUT
    return [
        Experiment(
            "wan-check",
            "The emulated WAN: measured against configured RTT, nine cities",
            [*t, "wan", "check", "--json"],
            True,
            40,
            400,
        ),
        Experiment(
            "allreduce-mesh",
            "Core-INC against host baselines, full-mesh WAN, three sites",
            [
                *t,
                "allreduce",
                "--sites",
                SITES3,
                "--workers-per-site",
                "2",
                "--elements",
                "262144",
                "--loss",
                "0.02",
                "--mode",
                "int32",
                "--compare",
                "ring,hierarchical,mpi",
                "--json",
            ],
            True,
            80,
            900,
        ),
        Experiment(
            "allreduce-access",
            "Core-INC against host baselines, access-limited sites (10 Mbit/s)",
            [
                *t,
                "allreduce",
                "--sites",
                SITES3,
                "--workers-per-site",
                "1",
                "--access-rate",
                "10",
                "--elements",
                "262144",
                "--mode",
                "int32",
                "--compare",
                "ring,hierarchical,mpi",
                "--json",
            ],
            True,
            60,
            900,
        ),
        Experiment(
            "schedule-model",
            "Schedules: the optimiser's prediction at 4 MB of edge memory",
            [*t, "schedule", "--memory", "4MB", "--size", "64MB", "--json"],
            False,
            10,
            300,
        ),
        Experiment(
            "schedule-run",
            "Edge-INC: the 4 MB schedule measured against all-to-all",
            [
                *t,
                "schedule",
                "--memory",
                "4MB",
                "--size",
                "64MB",
                "--run",
                "--compare",
                "all-to-all",
                "--json",
            ],
            True,
            60,
            900,
        ),
        Experiment(
            "train-3",
            "Training across three sites, every strategy",
            [
                *t,
                "train",
                "--sites",
                SITES3,
                "--strategy",
                "ring,hierarchical,mpi,core-tree",
                "--out",
                str(out / "train-3.json"),
                "--json",
            ],
            True,
            100,
            900,
        ),
        Experiment(
            "train-3-exact",
            "Training across three sites, exact gradients (identical curves)",
            [
                *t,
                "train",
                "--sites",
                SITES3,
                "--workers-per-site",
                "1",
                "--format",
                "exact",
                "--strategy",
                "hierarchical,mpi,core-tree",
                "--steps",
                "30",
                "--json",
            ],
            True,
            45,
            600,
        ),
        Experiment(
            "train-9",
            "Training across the nine cities",
            [
                *t,
                "train",
                "--strategy",
                "hierarchical,core-tree",
                "--workers-per-site",
                "1",
                "--steps",
                "30",
                "--json",
            ],
            True,
            70,
            900,
        ),
        Experiment(
            "amdahl",
            "Amdahl: runtime reduction against communication share, measured",
            [
                *t,
                "amdahl",
                "--run",
                "--sites",
                SITES3,
                "--workers-per-site",
                "1",
                "--out",
                str(ROOT / "docs" / "amdahl.png"),
                "--json",
            ],
            True,
            140,
            900,
        ),
        Experiment(
            "bench-switch",
            "p4kit-switch: packets per second and CPU per packet",
            [sys.executable, str(ROOT / "scripts" / "bench_switch.py"), "--json"],
            True,
            40,
            600,
        ),
    ]


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def log(msg: str) -> None:
    print(f"[experiments] {msg}", file=sys.stderr, flush=True)


def last_json(text: str) -> object | None:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


def run_one(exp: Experiment, index: int, total: int) -> dict:
    record: dict = {"name": exp.name, "title": exp.title, "command": exp.shown(), "started": time.time()}
    if exp.root and os.geteuid() != 0:
        log(f"[{index}/{total}] {exp.name}: skipped (needs root: run make experiments with sudo)")
        return {**record, "status": "skipped", "why": "needs root"}
    log(
        f"[{index}/{total}] {exp.name}: {exp.title} (about {exp.estimate_s:.0f} s; timeout {exp.timeout_s:.0f} s)"
    )
    log(f"    {exp.shown()}")
    log_path = OUT / f"{exp.name}.log"
    t0 = time.monotonic()
    with log_path.open("w") as err:
        try:
            proc = subprocess.run(
                exp.argv,
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                timeout=exp.timeout_s,
                stdin=subprocess.DEVNULL,
            )
            code, stdout = proc.returncode, proc.stdout
        except subprocess.TimeoutExpired as exc:
            code = None
            stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
    seconds = time.monotonic() - t0
    result = last_json(stdout) if exp.json_stdout else None
    if result is not None:
        (OUT / f"{exp.name}.json").write_text(json.dumps(result, indent=1) + "\n")
    status = "timeout" if code is None else ("ok" if code == 0 else f"exit {code}")
    if status != "ok" and result is not None:
        status += " (with results)"
    log(f"    {status} after {seconds:.0f} s; output {_rel(OUT)}/{exp.name}.json, log {exp.name}.log")
    return {**record, "status": status, "seconds": round(seconds, 1), "has_json": result is not None}


# --- the report ------------------------------------------------------------------------------------------


def _fmt(v: object, digits: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
    return lines


def rep_allreduce(doc: dict) -> list[str]:
    rows = []
    for key in ("inc", "ring", "hierarchical", "mpi", "ps"):
        r = doc.get(key)
        if isinstance(r, dict) and "seconds" in r:
            rows.append([key, r.get("seconds"), r.get("bound_s"), r.get("times_bound"), r.get("exact")])
    lines = _table(["algorithm", "seconds", "lower bound (s)", "times the bound", "exact"], rows)
    extra = {
        k: doc.get(k)
        for k in ("best_host", "ratio_vs_best_host", "bound_ratio_vs_best_host", "goal_met")
        if k in doc
    }
    if extra:
        lines += ["", "; ".join(f"{k}: {_fmt(v)}" for k, v in extra.items())]
    return lines


def rep_train(doc: dict) -> list[str]:
    rows = [
        [
            r["strategy"],
            r.get("final_accuracy"),
            r.get("seconds"),
            r.get("comm_seconds"),
            r.get("time_to_target_s"),
            r.get("bound_step_s"),
            r.get("comm_step_times_bound"),
            r.get("ok"),
        ]
        for r in doc.get("runs", [])
    ]
    cfg = doc.get("config", {})
    lines = [
        f"{doc.get('workers')} workers at {', '.join(doc.get('sites', []))}; {cfg.get('steps')} steps, "
        f"{cfg.get('fmt')} gradients, target accuracy {cfg.get('target_accuracy')}",
        "",
    ]
    lines += _table(
        [
            "strategy",
            "final accuracy",
            "seconds",
            "communicating (s)",
            "time to target (s)",
            "bound per step (s)",
            "step's allreduce / bound",
            "ok",
        ],
        rows,
    )
    extra = {
        k: doc[k]
        for k in ("same_accuracy", "accuracy_spread", "best_host", "time_to_target_speedup_vs_best_host")
        if k in doc
    }
    if extra:
        lines += ["", "; ".join(f"{k}: {_fmt(v)}" for k, v in extra.items())]
    curves = doc.get("curves") or {}
    for name, c in (curves.get("against_reference") or {}).items():
        lines.append("")
        lines.append(
            f"- {name} against {curves.get('reference')}: "
            + (
                "identical curve, step by step"
                if c.get("identical")
                else f"largest loss difference {_fmt(c.get('max_loss_diff'))}, accuracy "
                f"{_fmt(c.get('max_accuracy_diff'))}: {c.get('why')}"
            )
        )
    return lines


def rep_amdahl(doc: dict) -> list[str]:
    rows = [
        [
            p.get("compute_ms"),
            p.get("comm_share"),
            p.get("comm_speedup"),
            p.get("measured_speedup"),
            p.get("predicted_speedup"),
            p.get("deviation"),
            p.get("predicted_speedup_ref"),
            p.get("deviation_ref"),
        ]
        for p in doc.get("measured", [])
    ]
    lines = _table(
        [
            "compute per step (ms)",
            "comm share (ring)",
            "comm speed-up",
            "measured speed-up",
            "predicted",
            "deviation",
            "predicted from the first point's speed-up",
            "deviation",
        ],
        rows,
    )
    return [*lines, "", "![Amdahl: runtime reduction against communication share](amdahl.png)"]


def rep_wan(doc: dict) -> list[str]:
    pairs = doc.get("pairs", [])
    lines = [
        f"{len(pairs)} pairs; all within tolerance: {doc.get('ok')}; largest error {_fmt(doc.get('max_error_pct'))} %"
    ]
    if pairs and isinstance(pairs[0], dict):
        keys = list(pairs[0].keys())[:6]
        lines += ["", *_table(keys, [[p.get(k) for k in keys] for p in pairs])]
    return lines


def rep_schedule_model(doc: dict) -> list[str]:
    best = doc.get("best", {})
    rows = [
        [c.get("strategy"), c.get("time_s"), c.get("rounds_to_consensus"), c.get("exact_average")]
        for c in doc.get("candidates", [])
    ]
    lines = [
        f"best: {best.get('strategy')}, {_fmt(best.get('time_s'))} s to consensus (the model's prediction)",
        "",
    ]
    return lines + _table(["schedule", "predicted time to consensus (s)", "rounds", "exact average"], rows)


def _predicted_measured(node: object, found: list[dict]) -> None:
    if isinstance(node, dict):
        if "predicted_s" in node and "measured_s" in node:
            found.append(node)
        for v in node.values():
            _predicted_measured(v, found)
    elif isinstance(node, list):
        for v in node:
            _predicted_measured(v, found)


def rep_schedule_run(doc: dict) -> list[str]:
    found: list[dict] = []
    _predicted_measured(doc, found)
    runs = [f for f in found if "strategy" in f]
    rows = [
        [r.get("strategy"), r.get("predicted_s"), r.get("measured_s"), r.get("exact_average", r.get("exact"))]
        for r in runs
    ]
    return (
        _table(["schedule", "predicted (s)", "measured (s)", "exact average"], rows)
        if rows
        else rep_generic(doc)
    )


def rep_generic(doc: dict) -> list[str]:
    flat = {k: v for k, v in doc.items() if isinstance(v, int | float | str | bool)}
    return ["; ".join(f"{k}: {_fmt(v)}" for k, v in list(flat.items())[:12])] if flat else []


FORMATTERS: dict[str, Callable[[dict], list[str]]] = {
    "allreduce-mesh": rep_allreduce,
    "allreduce-access": rep_allreduce,
    "train-3": rep_train,
    "train-3-exact": rep_train,
    "train-9": rep_train,
    "amdahl": rep_amdahl,
    "wan-check": rep_wan,
    "schedule-model": rep_schedule_model,
    "schedule-run": rep_schedule_run,
}


def write_report(index: list[dict]) -> None:
    lines = [
        "# Results, generated",
        "",
        "Written by `scripts/experiments.py` (`sudo make experiments`) from the JSON each command printed, kept in",
        "`runs/experiments/`. Nothing here is typed by hand; re-run the command beside a table to check it. Timings",
        "come from a 2-core machine shared by every process of the emulation, so they move from run to run.",
        "",
    ]
    for rec in index:
        lines += [
            f"## {rec['title']}",
            "",
            f"`{rec['command']}`: {rec['status']}"
            + (f", {rec['seconds']:.0f} s" if "seconds" in rec else "")
            + (
                f" ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(rec['started']))})"
                if "started" in rec
                else ""
            ),
            "",
        ]
        path = OUT / f"{rec['name']}.json"
        if path.exists():
            doc = json.loads(path.read_text())
            if isinstance(doc, dict):
                lines += FORMATTERS.get(rec["name"], rep_generic)(doc)
                lines.append("")
    REPORT.write_text("\n".join(lines).rstrip() + "\n")
    log(f"report written to {_rel(REPORT)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated experiment names (see --list)")
    ap.add_argument("--list", action="store_true", help="list the experiments and their commands")
    ap.add_argument("--report-only", action="store_true", help="regenerate the report from runs/experiments")
    args = ap.parse_args(argv)
    exps = experiments()
    if args.list:
        for e in exps:
            print(f"{e.name:18} ~{e.estimate_s:4.0f} s  {e.shown()}")
        return 0
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(wanted) - {e.name for e in exps})
        if unknown:
            raise SystemExit(f"experiments.py: unknown experiment(s) {', '.join(unknown)} (see --list)")
        exps = [e for e in exps if e.name in wanted]
    OUT.mkdir(parents=True, exist_ok=True)
    index_path = OUT / "index.json"
    previous = {r["name"]: r for r in json.loads(index_path.read_text())} if index_path.exists() else {}
    if not args.report_only:
        log(
            f"{len(exps)} experiments, about {sum(e.estimate_s for e in exps) / 60:.0f} minutes; outputs in "
            f"{_rel(OUT)}/"
        )
        for i, exp in enumerate(exps, 1):
            previous[exp.name] = run_one(exp, i, len(exps))
            index_path.write_text(json.dumps(list(previous.values()), indent=1) + "\n")
    order = [e.name for e in experiments()]
    write_report(
        sorted(previous.values(), key=lambda r: order.index(r["name"]) if r["name"] in order else 99)
    )
    failed = [
        r["name"]
        for r in previous.values()
        if r["name"] in {e.name for e in exps} and not r["status"].startswith(("ok", "skipped"))
    ]
    if failed:
        log(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
