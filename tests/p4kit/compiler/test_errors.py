"""Wrong programs are rejected the way a user expects: exit status 1, one `FILE:LINE:COL: error: MESSAGE`
diagnostic pointing at the offending line, the source line with a caret under it, never a traceback.

Each file in tests/p4kit/errors starts with `// expect-error: <line> <python-regex>`: the first error
reported must be on <line> of that file, and its message must match <regex> (case-insensitive).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
ERRORS_DIR = ROOT / "tests" / "p4kit" / "errors"
P4C = Path(sys.executable).parent / "p4kit-p4c"
CASES = sorted(ERRORS_DIR.glob("*.p4"))

HEADER = re.compile(r"^//\s*expect-error:\s*(\d+)\s+(.+?)\s*$")
DIAGNOSTIC = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): error: (?P<message>.*)$")


def expectation(src: Path) -> tuple[int, str]:
    first = src.read_text().split("\n", 1)[0]
    m = HEADER.match(first)
    assert m, f"{src.name}: first line must be `// expect-error: <line> <regex>`"
    return int(m.group(1)), m.group(2)


def test_there_are_enough_error_cases() -> None:
    assert len(CASES) >= 35
    for src in CASES:
        line, regex = expectation(src)
        re.compile(regex)
        assert 1 < line <= len(src.read_text().splitlines())


@pytest.mark.parametrize("src", CASES, ids=[p.stem for p in CASES])
def test_error_is_reported_at_the_right_line(src: Path, tmp_path: Path) -> None:
    line, regex = expectation(src)
    proc = subprocess.run(
        [
            str(P4C),
            "--p4v",
            "16",
            "-o",
            str(tmp_path / "out.json"),
            "--p4runtime-files",
            str(tmp_path / "out.p4info.txtpb"),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output, output
    assert "internal compiler error" not in output.lower(), output
    assert proc.returncode == 1, f"exit status {proc.returncode}, expected 1:\n{output}"

    lines = proc.stderr.splitlines()
    found = [(i, m) for i, text in enumerate(lines) if (m := DIAGNOSTIC.match(text))]
    assert found, f"no `FILE:LINE:COL: error: MESSAGE` diagnostic in stderr:\n{proc.stderr}"
    index, diag = found[0]
    assert Path(diag["file"]).name == src.name, (
        f"first error is in {diag['file']}, not {src.name}:\n{proc.stderr}"
    )
    assert int(diag["line"]) == line, f"first error on line {diag['line']}, expected {line}:\n{proc.stderr}"
    assert int(diag["col"]) >= 1
    assert re.search(regex, diag["message"], re.IGNORECASE), (
        f"message {diag['message']!r} does not match /{regex}/"
    )
    caret_lines = [t for t in lines[index + 1 : index + 4] if re.fullmatch(r"\s*\^[\^~]*\s*", t)]
    assert caret_lines, f"no caret line after the diagnostic:\n{proc.stderr}"
