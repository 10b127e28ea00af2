#!/usr/bin/env python3
"""Measure p4kit against a corpus of real-world P4_16 v1model programs.

    scripts/corpus.py DIR [--stf] [--json] [--jobs N] [--timeout S]

Compiles every program under DIR with p4kit-p4c (as p4c-bm2-ss is called), prints a progress line
per program, then a summary: the pass rate and the most common error messages, grouped so that the
compiler engineers see what to fix first. With --stf, programs that compiled and have a NAME.stf
beside them are also run through p4kit-stf, and the STF pass rate is reported. --json prints the
summary as JSON on stdout instead of text.

A .p4 file counts as a program when it instantiates a package (`... main;`), itself or in a file it
includes, and no other file under DIR includes it with `#include "..."`; other .p4 files are taken to
be includes of the programs beside them and are not compiled on their own.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

BIN = Path(sys.executable).parent
P4C = BIN / "p4kit-p4c"
STF = BIN / "p4kit-stf"

MAIN_DECL = re.compile(r"\bmain\s*;")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
LINE_COMMENT = re.compile(r"//[^\n]*")
DIAGNOSTIC = re.compile(r"^(?P<loc>.+?:\d+:\d+): error: (?P<message>.*)$")
PLAIN_ERROR = re.compile(r"^(?:.*?: )?error: (?P<message>.*)$", re.I)


@dataclass
class Result:
    """What happened to one program."""

    program: str
    status: str  # pass | error | crash | timeout
    seconds: float
    message: str = ""  # first error message (without location)
    location: str = ""
    stf: str = ""  # "" (not run) | pass | fail | crash | timeout
    stf_detail: str = ""
    notes: list[str] = field(default_factory=list)


def is_program(path: Path, seen: set[Path] | None = None) -> bool:
    """True when the file instantiates a package, itself or through a file it includes with
    `#include "..."` (p4c's key-bmv2.p4 gets its `main` from arith-inline-skeleton.p4)."""
    seen = set() if seen is None else seen
    if path.resolve() in seen:
        return False
    seen.add(path.resolve())
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return False
    text = LINE_COMMENT.sub("", BLOCK_COMMENT.sub("", text))
    if MAIN_DECL.search(text):
        return True
    return any(is_program(path.parent / name, seen) for name in INCLUDE.findall(text))


def included_files(files: list[Path]) -> set[Path]:
    """The files that some file in `files` pulls in with `#include "..."` (resolved beside the includer)."""
    found: set[Path] = set()
    for path in files:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for name in INCLUDE.findall(text):
            found.add((path.parent / name).resolve())
    return found


def first_error(output: str) -> tuple[str, str]:
    """(message, location) of the first error diagnostic in the compiler's output."""
    for line in output.splitlines():
        if "internal compiler error" in line.lower():
            return line.strip(), ""
    for line in output.splitlines():
        m = DIAGNOSTIC.match(line)
        if m:
            return m["message"].strip(), m["loc"]
    for line in output.splitlines():
        m = PLAIN_ERROR.match(line.strip())
        if m:
            return m["message"].strip(), ""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    return (lines[-1] if lines else "(no output)"), ""


def normalise(message: str) -> str:
    """Group key of an error message: names, numbers and quoted text replaced by placeholders."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "'_'", message)
    text = re.sub(r"\b0x[0-9a-fA-F]+\b|\b\d+\b", "N", text)
    text = re.sub(r"\b[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_$][A-Za-z0-9_$]*)+\b", "NAME", text)
    return text[:160]


def run(cmd: list[str], timeout: float, cwd: Path) -> tuple[int | None, str, float]:
    """Run a command; return (exit code or None on timeout, combined output, seconds)."""
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or ""
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        return None, out, time.monotonic() - start
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start


def check_program(src: Path, root: Path, timeout: float, with_stf: bool) -> Result:
    """Compile one program (and run its STF test when asked and possible)."""
    name = str(src.relative_to(root))
    with tempfile.TemporaryDirectory(prefix="corpus-") as tmp:
        work = Path(tmp)
        out_json = work / "out.json"
        cmd = [
            str(P4C),
            "--p4v",
            "16",
            "-o",
            str(out_json),
            "--p4runtime-files",
            str(work / "out.p4info.txtpb"),
        ]
        rc, output, seconds = run([*cmd, str(src)], timeout, work)
        if rc is None:
            return Result(name, "timeout", seconds, message=f"timed out after {timeout:g} s")
        crashed = "Traceback" in output or "internal compiler error" in output.lower()
        if rc == 0 and not crashed:
            result = Result(name, "pass", seconds)
            if not out_json.exists():
                result.status = "crash"
                result.message = "exit 0 but no JSON written"
        else:
            message, location = first_error(output)
            status = "crash" if crashed or rc not in (0, 1) else "error"
            result = Result(name, status, seconds, message=message, location=location)
        stf = src.with_suffix(".stf")
        if with_stf and stf.exists() and result.status == "pass":
            src_rc, stf_out, _ = run([str(STF), str(src), str(stf)], timeout * 3, work)
            if src_rc is None:
                result.stf = "timeout"
            elif "Traceback" in stf_out:
                result.stf = "crash"
            else:
                result.stf = "pass" if src_rc == 0 else "fail"
            if result.stf != "pass":
                lines = [ln for ln in stf_out.splitlines() if ln.strip()]
                detail = next((ln for ln in lines if re.search(r"fail|error|mismatch", ln, re.I)), "")
                result.stf_detail = (detail or (lines[-1] if lines else "(no output)")).strip()[:200]
        elif with_stf and stf.exists():
            result.stf = "not compiled"
    return result


def summarise(results: list[Result], skipped: list[str], with_stf: bool, top: int) -> dict[str, object]:
    total = len(results)
    by_status = Counter(r.status for r in results)
    groups: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for r in results:
        if r.status != "pass":
            key = f"[{r.status}] {normalise(r.message)}"
            groups[key] += 1
            examples.setdefault(key, f"{r.program}: {r.message}"[:240])
    summary: dict[str, object] = {
        "programs": total,
        "includes_skipped": len(skipped),
        "passed": by_status["pass"],
        "errors": by_status["error"],
        "crashes": by_status["crash"],
        "timeouts": by_status["timeout"],
        "pass_rate": round(100.0 * by_status["pass"] / total, 1) if total else 0.0,
        "top_errors": [
            {"count": n, "group": key, "example": examples[key]} for key, n in groups.most_common(top)
        ],
        "failing": sorted(r.program for r in results if r.status != "pass"),
    }
    if with_stf:
        ran = [r for r in results if r.stf and r.stf != "not compiled"]
        stf_pass = sum(r.stf == "pass" for r in ran)
        with_file = [r for r in results if r.stf]
        summary["stf"] = {
            "programs_with_stf": len(with_file),
            "ran": len(ran),
            "passed": stf_pass,
            "pass_rate_of_ran": round(100.0 * stf_pass / len(ran), 1) if ran else 0.0,
            "pass_rate_of_all": round(100.0 * stf_pass / len(with_file), 1) if with_file else 0.0,
            "failing": [
                {"program": r.program, "result": r.stf, "detail": r.stf_detail}
                for r in ran
                if r.stf != "pass"
            ],
        }
    return summary


def print_summary(summary: dict[str, object]) -> None:
    print()
    print(
        f"compiled {summary['passed']}/{summary['programs']} programs: {summary['pass_rate']}% pass "
        f"({summary['errors']} errors, {summary['crashes']} crashes, {summary['timeouts']} timeouts; "
        f"{summary['includes_skipped']} include files not compiled on their own)"
    )
    top = summary["top_errors"]
    assert isinstance(top, list)
    if top:
        print("\nmost common failures (count, group, one example):")
        for entry in top:
            print(f"  {entry['count']:4d}  {entry['group']}")
            print(f"        e.g. {entry['example']}")
    stf = summary.get("stf")
    if isinstance(stf, dict):
        print(
            f"\nSTF: {stf['passed']}/{stf['ran']} run passed ({stf['pass_rate_of_ran']}%); "
            f"{stf['programs_with_stf']} programs have an .stf ({stf['pass_rate_of_all']}% of them pass)"
        )
        for entry in stf["failing"]:
            print(f"  {entry['result']:8s} {entry['program']}: {entry['detail']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", type=Path, help="folder searched recursively for .p4 programs")
    ap.add_argument(
        "--stf", action="store_true", help="also run p4kit-stf on programs with a .stf beside them"
    )
    ap.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="programs compiled in parallel")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds allowed per compilation")
    ap.add_argument("--top", type=int, default=20, help="error groups shown")
    args = ap.parse_args(argv)

    root: Path = args.dir.resolve()
    if not root.is_dir():
        ap.error(f"{args.dir} is not a folder")
    files = sorted(root.rglob("*.p4"))
    includes = included_files(files)
    programs = [p for p in files if p.resolve() not in includes and is_program(p)]
    skipped = [str(p.relative_to(root)) for p in files if p not in programs]
    if not programs:
        print(f"no P4 programs under {root}", file=sys.stderr)
        return 2

    results: list[Result] = []
    width = len(str(len(programs)))
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(check_program, p, root, args.timeout, args.stf) for p in programs]
        for i, fut in enumerate(as_completed(futures), 1):
            r = fut.result()
            results.append(r)
            line = f"[{i:{width}d}/{len(programs)}] {r.status:7s} {r.seconds:5.1f}s {r.program}"
            if r.status != "pass":
                line += f"  -- {r.message[:100]}"
            if r.stf:
                line += f"  [stf: {r.stf}]"
            print(line, file=sys.stderr, flush=True)

    results.sort(key=lambda r: r.program)
    summary = summarise(results, skipped, args.stf, args.top)
    if args.json:
        summary["results"] = [asdict(r) for r in results]
        json.dump(summary, sys.stdout, indent=2)
        print()
    else:
        print_summary(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
