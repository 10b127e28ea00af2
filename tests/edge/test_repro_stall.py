"""scripts/repro_stall.py reads kept runs back: each run's row names the worker that finished last and
what it waited for, and the table flags a run above 3x the median (--read, no network needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "repro_stall.py"


def keep_run(root: Path, name: str, seconds: float, ends: list[float]) -> None:
    """A run directory as the script keeps it: the JSON line and one report per worker."""
    inc = root / name / "allreduce" / "inc"
    inc.mkdir(parents=True)
    stats = {
        "retransmissions": 10,
        "repeat_retransmissions": 2,
        "tail_probes": 1,
        "repair_copies": 7,
        "max_all_sent_s": 0.2134,
    }
    result = {"exact": True, "inc": {"seconds": seconds, "bound_s": 0.373, "stats": stats}}
    (root / name / "result.json").write_text("log line\n" + json.dumps(result) + "\n")
    for rank, end in enumerate(ends):
        tail = {"results": [[end, rank, 2]], "longest_wait": [0.3, 7, 1, 8.0, 30.0, 0.01], "resent": []}
        report = {"rank": rank, "start": 100.0, "end": 100.0 + end, "stats": {"srtt_ms": 1.0, "tail": tail}}
        (inc / f"t1-rank{rank}.report.json").write_text(json.dumps(report))


def test_the_table_names_the_last_worker_and_flags_a_stall(tmp_path: Path) -> None:
    for n, s in enumerate((1.0, 1.1, 1.2)):
        keep_run(tmp_path, f"run{n:03d}", s, [s - 0.1, s])
    keep_run(tmp_path, "run003", 7.5, [1.5, 7.5, 7.5])  # two workers end together
    res = subprocess.run(
        [sys.executable, str(SCRIPT), "--read", str(tmp_path), "--json"], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    flagged = [line for line in lines if line.endswith("STALL")]
    assert len(flagged) == 1 and flagged[0].startswith("run003")
    rows = json.loads(lines[-1])
    last = rows[3]
    assert last["last_worker"] == "t1-rank2" and last["last_end_s"] == 7.5 and last["first_end_s"] == 1.5
    assert last["last_result"] == [7.5, 2, 2] and last["longest_wait"][3] == 8.0
    assert last["copies"] == 7 and last["all_sent_s"] == 0.2134
    assert "    7  0.213 " in flagged[0]  # the copies and the end of the send phase, in the table
    assert "4 runs: median 1.150 s" in lines[-2] and "above 3.0x the median: 1" in lines[-2]
