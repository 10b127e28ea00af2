"""scripts/bench_worker.py runs a whole stream against its echoing switch and reports CPU per packet."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_worker.py"


def test_the_worker_benchmark_completes_a_stream_and_reports_per_packet_cpu() -> None:
    res = subprocess.run(
        [sys.executable, str(SCRIPT), "--chunks", "300", "--repeat", "2", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["chunks"] == 300 and len(out["runs"]) == 2
    assert 0 < out["us_per_packet_best"] <= out["us_per_packet_median"]
    assert out["gc"] == "default" and len(out["gc_collections"]) == 2
    quiet = subprocess.run(
        [sys.executable, str(SCRIPT), "--chunks", "300", "--repeat", "1", "--gc", "quiet", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert quiet.returncode == 0, quiet.stderr
    frozen = json.loads(quiet.stdout)
    # the stream makes fewer than 50,000 allocations of tracked objects in 300 chunks
    assert frozen["gc"] == "quiet" and frozen["gc_collections"] == [0]
    assert max(out["gc_collections"]) > 0  # while with Python's thresholds it collects
    bad = subprocess.run([sys.executable, str(SCRIPT), "--chunks", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "must be positive" in bad.stderr


def test_the_socket_benchmark_runs_the_whole_worker_through_both_paths() -> None:
    """--sockets: IncWorker over loopback against an echo process, the Python I/O and the native one."""
    res = subprocess.run(
        [sys.executable, str(SCRIPT), "--sockets", "--chunks", "300", "--repeat", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["sockets"] and out["chunks"] == 300
    for io in ("python", "native"):
        [run] = out[io]["runs"]
        assert run["packets"] >= 600  # every chunk out and its result back (the copies of the tail on top)
        assert run["user_us"] + run["system_us"] > 0 and run["seconds"] >= 0.16  # at least the echo's RTT


def test_the_socket_benchmark_sends_wide_packets_when_asked() -> None:
    """--values-per-packet 256: 300 chunks go as 75 wide packets (the echo returns them as wide results),
    exact through both paths (socket_run checks the result)."""
    res = subprocess.run(
        [sys.executable, str(SCRIPT), "--sockets", "--chunks", "300", "--repeat", "1", "--values-per-packet", "256",
         "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["values_per_packet"] == 256
    for io in ("python", "native"):
        [run] = out[io]["runs"]
        assert 150 <= run["packets"] < 600  # 75 out and 75 back, with the tail's copies: not 300 each way
