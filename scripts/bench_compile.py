#!/usr/bin/env python3
"""Benchmark p4kit's compiler on the largest P4 program at hand, and print one JSON line.

Why: compile time is what users feel on every edit-compile-load cycle, and the largest program is
where a slow pass shows. The program is the largest (by source lines) of tests/p4kit/programs/*.p4
and, when present, every .p4 under /tmp/p4corpus; a program that p4kit rejects is skipped in favour
of the next largest, and the skipped ones are listed so a regression there is not silent.

Output (one line): program, its line count, runs, total seconds (mean/median/min) and, per stage,
mean seconds: the driver's own stages when its result carries a `timings` dict, plus the P4Info and
JSON serialisation that p4kit-p4c adds.

Usage: .venv/bin/python scripts/bench_compile.py [-n RUNS] [--program FILE.p4] [-I DIR] [-D NAME[=V]]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from p4kit.compiler.diagnostics import CompileError  # noqa: E402

PROGRAM_DIRS = (ROOT / "tests" / "p4kit" / "programs",)
CORPUS = Path("/tmp/p4corpus")


def line_count(path: Path) -> int:
    try:
        return len(path.read_text(errors="replace").splitlines())
    except OSError:
        return 0


def candidates() -> list[Path]:
    """Every program we know of, largest first."""
    found: list[Path] = []
    for d in PROGRAM_DIRS:
        if d.is_dir():
            found += sorted(d.glob("*.p4"))
    if CORPUS.is_dir():
        found += sorted(CORPUS.rglob("*.p4"))
    return sorted(found, key=lambda p: (-line_count(p), str(p)))


def compile_once(path: Path, include_dirs: list[str], defines: list[str]) -> tuple[float, dict[str, float]]:
    """Seconds for one full p4kit-p4c compile (driver + P4Info + JSON text), and per-stage seconds."""
    from p4kit.compiler import driver
    from p4kit.compiler.p4info import build_p4info, serialize_p4info

    stages: dict[str, float] = {}
    t0 = time.perf_counter()
    result = driver.compile_file(str(path), [*include_dirs, str(path.parent)], defines)
    t1 = time.perf_counter()
    p4info = build_p4info(result.control_plane)
    serialize_p4info(p4info, "text")
    t2 = time.perf_counter()
    json.dumps(result.bmv2, indent=2)
    t3 = time.perf_counter()
    inner = getattr(result, "timings", None)
    if isinstance(inner, dict):
        stages.update({str(k): float(v) for k, v in inner.items()})
    stages["driver"] = t1 - t0
    stages["p4info"] = t2 - t1
    stages["json"] = t3 - t2
    return t3 - t0, stages


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--runs", type=int, default=5, help="timed compiles (default %(default)s)")
    ap.add_argument("--program", type=Path, help="benchmark this program instead of the largest one")
    ap.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR")
    ap.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VAL]")
    args = ap.parse_args()

    progs = [args.program] if args.program else candidates()
    if not progs:
        print(
            json.dumps({"error": "no P4 programs found", "searched": [*map(str, PROGRAM_DIRS), str(CORPUS)]})
        )
        return 1

    try:
        from p4kit.compiler import driver  # noqa: F401
    except ImportError as e:
        print(json.dumps({"error": f"the compiler driver is not available: {e}"}))
        return 1

    skipped: list[dict[str, str]] = []
    for prog in progs:
        try:
            compile_once(prog, args.include_dirs, args.defines)  # warm-up; also checks it compiles
        except CompileError as e:
            skipped.append({"program": str(prog), "error": e.format().splitlines()[0]})
            continue
        except Exception as e:  # a compiler bug on this program: report it, measure the next one
            skipped.append(
                {"program": str(prog), "error": f"internal compiler error: {type(e).__name__}: {e}"}
            )
            continue
        totals: list[float] = []
        per_stage: dict[str, list[float]] = defaultdict(list)
        for _ in range(max(args.runs, 1)):
            total, stages = compile_once(prog, args.include_dirs, args.defines)
            totals.append(total)
            for k, v in stages.items():
                per_stage[k].append(v)
        report = {
            "program": str(prog),
            "lines": line_count(prog),
            "runs": len(totals),
            "total_s": {
                "mean": round(statistics.fmean(totals), 4),
                "median": round(statistics.median(totals), 4),
                "min": round(min(totals), 4),
            },
            "stages_s": {k: round(statistics.fmean(v), 4) for k, v in per_stage.items()},
            "skipped": skipped,
        }
        print(json.dumps(report))
        return 0
    print(json.dumps({"error": "no program compiled", "skipped": skipped}))
    return 1


if __name__ == "__main__":
    sys.exit(main())
