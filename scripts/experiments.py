#!/usr/bin/env python3
"""Run the experiments of docs/results.md and regenerate it from what they measured.

Each experiment is one `tributary` command (or benchmark script) run as a user would run it, at a size
this 2-core machine finishes, all of them, within half an hour (`--list` shows the estimates). What a
command printed (its last JSON line) goes into docs/results-data.json with the command, when it ran, at
which commit and for how long; docs/results.md is then rendered from that file and the template
scripts/results_template.md (scripts/results_doc.py), so every number in it is a measurement beside
the command that made it. Plots (docs/amdahl.png, docs/schedule-sweep.png, docs/schedule-measured.png)
are written by the commands themselves. An experiment that needs root is skipped without it, one that
fails or runs out of time is recorded as such (the document says "not measured" where its numbers
would be), and the others still run. Logs: runs/experiments/NAME.log.

    sudo make experiments                                        # everything
    sudo .venv/bin/python scripts/experiments.py --only train-3,amdahl
    .venv/bin/python scripts/experiments.py --list
    .venv/bin/python scripts/experiments.py --report-only        # re-render docs/results.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "runs" / "experiments"
DATA = ROOT / "docs" / "results-data.json"
REPORT = ROOT / "docs" / "results.md"
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


def _allreduce(sites: list[str], model: list[str]) -> list[str]:
    return [
        *TRIBUTARY,
        "allreduce",
        *sites,
        "--workers-per-site",
        "1",
        *model,
        "--elements",
        "131072",
        "--compare",
        "ring,hierarchical,mpi,ps",
        "--json",
    ]


def experiments() -> list[Experiment]:
    """Every experiment docs/results.md reports, in the order it reports them. The estimates are what they
    took in the last full run here (20.5 min for all 19); OpenMPI's stalls on nine sites move them most."""
    t = TRIBUTARY
    three = ["--sites", SITES3]
    docs = ROOT / "docs"
    return [
        Experiment("wan-check", "The emulated WAN: measured against configured RTT, nine cities", [*t, "wan", "check", "--json"], True, 25, 400),
        Experiment("bench-switch", "p4kit-switch: packets per second and CPU per packet", [sys.executable, str(ROOT / "scripts" / "bench_switch.py"), "--json"], True, 270, 900),
        Experiment("bench-compile", "p4kit-p4c: compile time of the largest program", [sys.executable, str(ROOT / "scripts" / "bench_compile.py")], False, 10, 300),
        Experiment("A3mesh", "Three sites, full mesh", _allreduce(three, ["--rate", "2"]), True, 70, 900),
        Experiment("B3acc", "Three sites, access-limited", _allreduce(three, ["--access-rate", "2"]), True, 75, 900),
        Experiment("C9mesh", "Nine sites, full mesh", _allreduce([], ["--rate", "2"]), True, 200, 600),
        Experiment("D9acc", "Nine sites, access-limited", _allreduce([], ["--access-rate", "2"]), True, 260, 900),
        Experiment("inc-int32", "Core-INC, int32, two workers per site", [*t, "allreduce", *three, "--workers-per-site", "2", "--elements", "262144", "--mode", "int32", "--compare", "none", "--json"], True, 30, 600),
        Experiment("inc-secure", "Core-INC with pairwise masks", [*t, "allreduce", *three, "--workers-per-site", "2", "--elements", "262144", "--mode", "int32", "--secure", "--compare", "none", "--json"], True, 30, 600),
        Experiment("inc-float32", "Core-INC, float32 block fixed point", [*t, "allreduce", *three, "--workers-per-site", "2", "--elements", "262144", "--mode", "float32", "--compare", "none", "--json"], True, 30, 600),
        Experiment("schedule-4MB", "The optimiser at 4 MB of edge memory", [*t, "schedule", "--memory", "4MB", "--size", "64MB", "--bandwidth", "10Gbit", "--json"], False, 5, 300),
        Experiment("schedule-256MB", "The optimiser at 256 MB of edge memory", [*t, "schedule", "--memory", "256MB", "--size", "64MB", "--bandwidth", "10Gbit", "--json"], False, 5, 300),
        Experiment("schedule-sweep", "The optimiser's memory sweep", [*t, "schedule", "--sweep", "--size", "64MB", "--out", str(docs / "schedule-sweep"), "--json"], False, 45, 300),
        Experiment("schedule-sweep-run", "Edge-INC: the measured memory sweep", [*t, "schedule", "--sweep", "--run", "--out", str(docs / "schedule-measured"), "--json"], True, 240, 1200),
        Experiment("train-3", "Training across three sites, every strategy", [*t, "train", *three, "--strategy", "ring,hierarchical,mpi,core-tree,edge-cliques", "--json"], True, 100, 900),
        Experiment("train-3-exact", "Training across three sites, exact gradients", [*t, "train", *three, "--workers-per-site", "1", "--format", "exact", "--strategy", "hierarchical,mpi,core-tree,edge-cliques", "--json"], True, 50, 600),
        Experiment("train-9", "Training across the nine cities, two workers each", [*t, "train", "--strategy", "core-tree,edge-cliques,hierarchical", "--json"], True, 115, 1200),
        Experiment("train-9-grid", "Training across the nine cities through rotating cliques, exact gradients", [*t, "train", "--strategy", "edge-cliques,core-tree", "--edge-schedule", "grid", "--workers-per-site", "1", "--format", "exact", "--json"], True, 60, 900),
        Experiment("amdahl", "Amdahl: runtime reduction against communication share, measured", [*t, "amdahl", "--run", *three, "--workers-per-site", "1", "--out", str(docs / "amdahl.png"), "--json"], True, 120, 900),
    ]  # fmt: skip


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
    status = "timeout" if code is None else ("ok" if code == 0 else f"exit {code}")
    if status != "ok" and result is not None:
        status += " (with results)"
    log(f"    {status} after {seconds:.0f} s; log {_rel(OUT)}/{exp.name}.log")
    return {**record, "status": status, "seconds": round(seconds, 1), "result": result}


# --- the measurements and the document ---------------------------------------------------------------


def commit() -> str:
    """The commit the experiments ran at (the tree may hold uncommitted work of others: said so)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        )
        return head.stdout.strip()
    except OSError:
        return ""


def load_data() -> dict[str, dict]:
    return json.loads(DATA.read_text()) if DATA.exists() else {}


def save(data: dict[str, dict]) -> None:
    DATA.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")


def write_report(data: dict[str, dict]) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import results_doc

    REPORT.write_text(results_doc.render(results_doc.TEMPLATE.read_text(), data))
    log(f"report written to {_rel(REPORT)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated experiment names (see --list)")
    ap.add_argument("--list", action="store_true", help="list the experiments and their commands")
    ap.add_argument(
        "--report-only", action="store_true", help="re-render docs/results.md from docs/results-data.json"
    )
    args = ap.parse_args(argv)
    exps = experiments()
    if args.list:
        for e in exps:
            print(f"{e.name:18} ~{e.estimate_s:4.0f} s  {e.shown()}")
        print(f"{'total':18} ~{sum(e.estimate_s for e in exps) / 60:4.0f} min")
        return 0
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(wanted) - {e.name for e in exps})
        if unknown:
            raise SystemExit(f"experiments.py: unknown experiment(s) {', '.join(unknown)} (see --list)")
        exps = [e for e in exps if e.name in wanted]
    OUT.mkdir(parents=True, exist_ok=True)
    data = load_data()
    failed = []
    if not args.report_only:
        total = sum(e.estimate_s for e in exps)
        log(f"{len(exps)} experiments, about {total / 60:.0f} minutes; logs in {_rel(OUT)}/")
        t0, done_est = time.monotonic(), 0.0
        at = commit()
        for i, exp in enumerate(exps, 1):
            rec = run_one(exp, i, len(exps))
            done_est += exp.estimate_s
            log(
                f"    {time.monotonic() - t0:.0f} s so far; about {max(0.0, total - done_est) / 60:.0f} min of experiments left"
            )
            if rec["status"] == "skipped" and exp.name in data:
                continue  # keep the last measurement (with its own date and status) rather than none
            result = rec.pop("result", None)
            data[exp.name] = {**rec, "commit": at, "result": result}
            save(data)
            if not rec["status"].startswith(("ok", "skipped")):
                failed.append(exp.name)
    write_report(data)
    if failed:
        log(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
