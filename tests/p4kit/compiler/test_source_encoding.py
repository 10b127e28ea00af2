"""Source text that is not UTF-8: a clean `file:line:col: error:` at the offending byte, never an
internal error. Bytes inside comments are dropped by the preprocessor and stay harmless, as with p4c."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

P4C = Path(sys.executable).parent / "p4kit-p4c"
ROOT = Path(__file__).resolve().parents[3]
PROGRAM = (ROOT / "tests" / "p4kit" / "programs" / "table_exact_hit_miss.p4").read_bytes()


def compile_bytes(tmp_path: Path, source: bytes) -> subprocess.CompletedProcess:
    src = tmp_path / "prog.p4"
    src.write_bytes(source)
    return subprocess.run(
        [str(P4C), "--p4v", "16", "-o", str(tmp_path / "out.json"), str(src)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_latin1_byte_in_code_is_an_error_at_its_place(tmp_path: Path) -> None:
    lines = PROGRAM.split(b"\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(b"#include <v1model.p4>")) + 1
    lines.insert(at, b"const bit<8> caf\xe9 = 1;")
    proc = compile_bytes(tmp_path, b"\n".join(lines))
    assert proc.returncode == 1, proc.stderr
    assert "internal compiler error" not in proc.stderr and "Traceback" not in proc.stderr
    m = re.search(r"prog\.p4:(\d+):(\d+): error: invalid byte 0xe9", proc.stderr)
    assert m, proc.stderr
    assert (int(m.group(1)), int(m.group(2))) == (at + 1, len(b"const bit<8> caf") + 1)
    assert not (tmp_path / "out.json").exists()


def test_non_utf8_bytes_in_a_comment_are_harmless(tmp_path: Path) -> None:
    proc = compile_bytes(tmp_path, b"// r\xe9sum\xe9 \xff\xfe\n" + PROGRAM)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out.json").exists()


def test_an_included_file_with_a_bad_byte_is_named(tmp_path: Path) -> None:
    (tmp_path / "defs.p4").write_bytes(b"// defs\nconst bit<8> K = 8w1; \x80\n")
    lines = PROGRAM.split(b"\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(b"#include <v1model.p4>")) + 1
    lines.insert(at, b'#include "defs.p4"')
    proc = compile_bytes(tmp_path, b"\n".join(lines))
    assert proc.returncode == 1
    assert re.search(r"defs\.p4:2:23: error: invalid byte 0x80", proc.stderr), proc.stderr
