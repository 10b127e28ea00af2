"""Extern functions a program declares itself, as p4c's bmv2 back end treats them: an error by default
(tests/p4kit/errors/extern_function_declared_by_program.p4), a primitive of the function's name with
--emit-externs, which p4kit-switch (like simple_switch) refuses to load since it has no such primitive."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
SOURCE = Path(__file__).resolve().parents[1] / "errors" / "extern_function_declared_by_program.p4"


def test_emit_externs_turns_the_call_into_a_primitive(tmp_path: Path) -> None:
    out = tmp_path / "prog.json"
    proc = subprocess.run(
        [str(BIN / "p4kit-p4c"), "--p4v", "16", "--emit-externs", "-o", str(out), str(SOURCE)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    prims = [p for a in doc["actions"] for p in a["primitives"] if p["op"] == "count_packet"]
    assert len(prims) == 1
    assert prims[0]["parameters"] == [
        {"type": "field", "value": ["h", "a"]},
        {"type": "field", "value": ["h", "b"]},
    ]
    sw = subprocess.run([str(BIN / "p4kit-switch"), str(out)], capture_output=True, text=True, timeout=60)
    assert sw.returncode != 0
    assert "unsupported primitive 'count_packet'" in sw.stderr and "Traceback" not in sw.stderr
