"""Measure p4kit-p4c against a directory of programs that p4c rejects (p4c's p4_16_errors layout).

The directory holds NAME.p4 next to NAME.p4-stderr, p4c's own output for it. For every program this
runs `p4kit-p4c --target bmv2 --arch v1model -o OUT NAME.p4` and sorts the result:

  same line     p4c rejects it; p4kit exits 1 with `FILE:LINE:COL: error:` at the line of p4c's first error
  other line    p4c rejects it; p4kit exits 1 with an error, but at another line (or another file)
  accepted      p4c rejects it; p4kit's front end lets it through (exit 0, or refused only afterwards by
                the back end for its architecture: no `main`, or a package other than V1Switch)
  crashed       a traceback, an internal compiler error, a timeout, or an exit status other than 0/1
  warn ok       p4c only warns (no `error:` in its stderr); p4kit's front end accepts it too
  warn rejected p4c only warns; p4kit rejects it

p4c's line numbers come from the stderr file, which may be of another version of the program than the
one stored (the licence header changed length over the years), so the expected line is found by the
source text p4c quotes under its message, shifted by the offset most of p4c's quotes agree on.

    .venv/bin/python scripts/errors_corpus.py /tmp/p4c-errors [--json] [--jobs N] [-v]
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import shlex
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

P4C = Path(sys.executable).parent / "p4kit-p4c"
TIMEOUT_S = 60

# p4c: `PATH(LINE): [--Werror=kind] error: MESSAGE` (the bracket is optional), or `: MESSAGE` for the
# few messages printed without a location (the source line still follows).
_P4C_LOCATED = re.compile(
    r"^(?P<file>\S*?)\((?P<line>\d+)\):\s*(?:\[--W\w+=[^\]]+\]\s*)?(?P<sev>error|warning)?:?\s*(?P<msg>.*)$"
)
_P4C_BARE = re.compile(r"^:\s+(?P<msg>\S.*)$")
_OURS = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.*)$")
_ARCH_REFUSAL = re.compile(r"no 'main'|unsupported: package ")


def _squash(text: str) -> str:
    """A source line without whitespace: p4c's quotes and the stored program differ in spacing."""
    return re.sub(r"\s+", "", text)


def _hits(quote: str, source: list[str]) -> list[int]:
    """Lines of `source` that p4c's quote shows: the same text, or (a syntax error's quote stops at
    the token it could not take) a line that starts with it."""
    want = _squash(quote)
    if not want:
        return []
    same = [n for n, s in enumerate(source, 1) if _squash(s) == want]
    same = same or [n for n, s in enumerate(source, 1) if _squash(s).startswith(want)]
    if same:
        return same
    # the program changed a little since p4c's output was recorded (`a(E e)` quoted as `a(in E e)`)
    ratios = [(difflib.SequenceMatcher(None, _squash(s), want).ratio(), n) for n, s in enumerate(source, 1)]
    best = max(ratios, default=(0.0, 0))
    return [best[1]] if best[0] >= 0.85 else []


@dataclass
class P4cError:
    line: int | None  # as p4c printed it (None for a message without location)
    quote: str  # the source line p4c quotes under the message ("" when none)
    message: str


def p4c_errors(stderr: str, warnings: bool = False) -> list[P4cError]:
    """Every error in p4c's stderr, in order (its warnings too when `warnings`; notes left out)."""
    lines = stderr.splitlines()
    out: list[P4cError] = []
    for i, text in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        quote = "" if _P4C_LOCATED.match(nxt) or nxt.startswith(("error:", "[--W")) else nxt
        m = _P4C_LOCATED.match(text)
        is_error = m is not None and (m["sev"] == "error" or m["msg"].startswith("syntax error"))
        if m and (is_error or (warnings and m["sev"] == "warning")):
            out.append(P4cError(int(m["line"]), quote, m["msg"]))
        elif (b := _P4C_BARE.match(text)) and quote:
            out.append(P4cError(None, quote, b["msg"]))
    return out


def _offset(errors: list[P4cError], source: list[str]) -> int:
    """How many lines the stored program is shifted from the one p4c's stderr was made from."""
    votes: Counter[int] = Counter()
    for e in errors:
        if e.line is None or not e.quote.strip():
            continue
        hits = _hits(e.quote, source)
        if len(hits) == 1:
            votes[hits[0] - e.line] += 1
    return votes.most_common(1)[0][0] if votes else 0


def expected_line(errors: list[P4cError], source: list[str], located: list[P4cError]) -> int | None:
    """The line of the stored program where p4c's first error is (`located`: every message of p4c's
    with a line, to agree on the offset)."""
    offset = _offset(located, source)
    for e in errors:
        hits = _hits(e.quote, source)
        if e.line is not None and (e.line + offset in hits or not hits):
            return e.line + offset
        if hits:
            guess = e.line + offset if e.line is not None else hits[0]
            return min(hits, key=lambda n: abs(n - guess))
    return None


@dataclass
class Outcome:
    name: str
    verdict: str
    p4c_line: int | None
    p4kit_line: int | None
    p4c_message: str
    p4kit_message: str


def run_one(src: Path, p4c: list[str] | None = None) -> Outcome:
    stderr_file = src.with_name(src.name + "-stderr")
    ref = stderr_file.read_text(errors="replace") if stderr_file.exists() else ""
    errors = p4c_errors(ref)
    source = src.read_text(errors="replace").splitlines()
    want = expected_line(errors, source, p4c_errors(ref, warnings=True)) if errors else None
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            *(p4c or [str(P4C)]),
            "--target",
            "bmv2",
            "--arch",
            "v1model",
            "-o",
            f"{tmp}/out.json",
            str(src),
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return Outcome(src.name, "crashed", want, None, errors[0].message if errors else "", "timeout")
    output = proc.stdout + proc.stderr
    ours = next((m for t in proc.stderr.splitlines() if (m := _OURS.match(t))), None)
    got_line = int(ours["line"]) if ours and Path(ours["file"]).name == src.name else None
    got_msg = ours["msg"] if ours else output.strip().splitlines()[0] if output.strip() else ""
    p4c_msg = errors[0].message if errors else ""
    crashed = "Traceback" in output or "internal compiler error" in output or proc.returncode not in (0, 1)
    front_end_ok = proc.returncode == 0 or (ours is not None and _ARCH_REFUSAL.search(ours["msg"]))
    if crashed:
        verdict = "crashed"
    elif not errors:
        verdict = "warn ok" if front_end_ok else "warn rejected"
    elif front_end_ok:
        verdict = "accepted"
    elif got_line is not None and got_line == want:
        verdict = "same line"
    else:
        verdict = "other line"
    return Outcome(src.name, verdict, want, got_line, p4c_msg, got_msg)


VERDICTS = ("same line", "other line", "accepted", "crashed", "warn ok", "warn rejected")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("directory", type=Path)
    ap.add_argument("--json", action="store_true", help="print one JSON object (counts and every outcome)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("-v", "--verbose", action="store_true", help="list every program that is not `same line`")
    ap.add_argument(
        "--p4c",
        metavar="CMD",
        help="the compiler command to measure (default: this venv's p4kit-p4c); an older p4kit unpacked "
        "in OLD (git archive REV p4kit | tar -x -C OLD) runs with: --p4c 'env -C OLD "
        "PYTHONPATH=OLD:SITE_PACKAGES .venv/bin/python -S -m p4kit.compiler.cli' (-S and -C keep the "
        "editable install and the work tree off the path)",
    )
    ns = ap.parse_args(argv)
    programs = sorted(p for p in ns.directory.glob("*.p4") if p.with_name(p.name + "-stderr").exists())
    with ThreadPoolExecutor(max_workers=max(1, ns.jobs)) as pool:
        cmd = shlex.split(ns.p4c) if ns.p4c else None
        outcomes = list(pool.map(lambda src: run_one(src, cmd), programs))
    counts = Counter(o.verdict for o in outcomes)
    rejecting = sum(counts[v] for v in ("same line", "other line", "accepted", "crashed"))
    summary = {
        "programs": len(outcomes),
        "p4c_rejects": rejecting,
        "p4c_only_warns": counts["warn ok"] + counts["warn rejected"],
        **{v.replace(" ", "_"): counts[v] for v in VERDICTS},
    }
    if ns.json:
        print(json.dumps({"summary": summary, "outcomes": [asdict(o) for o in outcomes]}, indent=1))
    else:
        if ns.verbose:
            for o in outcomes:
                if o.verdict not in ("same line", "warn ok"):
                    print(f"{o.verdict:13} {o.name}: p4c {o.p4c_line} {o.p4c_message!r}")
                    print(f"{'':13} p4kit {o.p4kit_line} {o.p4kit_message!r}")
        print(
            f"{summary['programs']} programs; p4c rejects {rejecting}: "
            f"{counts['same line']} rejected at p4c's line, {counts['other line']} at another line, "
            f"{counts['accepted']} accepted wrongly, {counts['crashed']} crashed; "
            f"p4c only warns on {summary['p4c_only_warns']}: {counts['warn ok']} accepted, "
            f"{counts['warn rejected']} rejected wrongly"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
