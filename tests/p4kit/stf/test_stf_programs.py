"""Every program in tests/p4kit/programs passes its p4c STF packet test under p4kit-stf.

Marked `stf`: the switch and the STF runner are still being written; deselect with `-m "not stf"`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.stf

ROOT = Path(__file__).resolve().parents[3]
PROGRAMS_DIR = ROOT / "tests" / "p4kit" / "programs"
STF = Path(sys.executable).parent / "p4kit-stf"
CASES = sorted(p for p in PROGRAMS_DIR.glob("*.p4") if p.with_suffix(".stf").exists())


@pytest.mark.parametrize("src", CASES, ids=[p.stem for p in CASES])
def test_stf(src: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(STF), str(src), str(src.with_suffix(".stf"))],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, f"{src.stem}.stf failed:\n{proc.stdout}\n{proc.stderr}"
