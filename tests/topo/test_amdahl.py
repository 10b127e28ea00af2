"""Amdahl's law for a faster allreduce: the seed's figure, the algebra, measured points and the command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from topo import amdahl


def test_seed_figure_numbers() -> None:
    k = amdahl.seed_speedup()
    assert k == pytest.approx(352 / 151)
    # the seed's claim: a 57 % shorter allreduce buys 11 % of an iteration at a 20 % share, 34 % at 60 %
    assert amdahl.runtime_reduction(0.2, k) == pytest.approx(0.1142, abs=1e-4)
    assert amdahl.runtime_reduction(0.6, k) == pytest.approx(0.3426, abs=1e-4)
    curve = amdahl.seed_curve()
    assert [p["comm_share"] for p in curve] == pytest.approx([i / 10 for i in range(11)])
    assert curve[0]["runtime_reduction"] == 0 and curve[-1]["runtime_reduction"] == pytest.approx(
        1 - 151 / 352, abs=1e-6
    )
    terms = amdahl.seed_bandwidth_terms()
    assert terms["ring_s"] == pytest.approx(2 * 1023 / 1024 * 8 * 2**33 / 400e9)
    assert terms["tree_s"] == pytest.approx(terms["ring_s"] * 1024 / 2046)


def test_speedup_is_time_ratio_at_equal_compute() -> None:
    compute, m_base, m_new = 3.0, 1.5, 0.5
    s = m_base / (compute + m_base)
    assert amdahl.speedup(s, m_base / m_new) == pytest.approx((compute + m_base) / (compute + m_new))
    assert amdahl.speedup(s, 1.0) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="fraction"):
        amdahl.runtime_reduction(1.5, 2.0)
    with pytest.raises(ValueError, match="positive"):
        amdahl.runtime_reduction(0.5, 0.0)


def _doc(scale: int, base: tuple[float, float], inc: tuple[float, float]) -> dict:
    return {
        "config": {"compute_scale": scale},
        "runs": [
            {"strategy": "ring", "ok": True, "seconds": base[0], "comm_seconds": base[1]},
            {"strategy": "core-tree", "ok": True, "seconds": inc[0], "comm_seconds": inc[1]},
        ],
    }


def test_measured_points_from_train_results() -> None:
    # scale 1: all communication (2 s vs 1 s); scale 100: 2 s of compute added, INC's compute 10 % slower
    docs = [_doc(100, (4.0, 2.0), (3.2, 1.0)), _doc(1, (2.0, 2.0), (1.0, 1.0)), {"runs": []}]
    p1, p100 = amdahl.measured_points(docs)
    assert (p1.compute_scale, p100.compute_scale) == (1, 100)  # most communication-bound first
    assert (
        p1.comm_share == 1.0 and p1.comm_speedup == 2.0 and p1.measured_speedup == 2.0 and p1.deviation == 0
    )
    assert p100.comm_share == 0.5 and p100.measured_reduction == pytest.approx(0.2)
    assert p100.predicted_reduction == pytest.approx(0.25)  # s (1 - 1/k) = 0.5 * 0.5
    assert p100.deviation == pytest.approx(abs(1.25 - 4 / 3) / (4 / 3))
    assert p100.predicted_speedup_ref == pytest.approx(4 / 3)  # k of the all-communication point is also 2
    assert amdahl.measured_points([_doc(1, (2.0, 2.0), (1.0, 1.0))], baseline="hierarchical") == []


def test_command_prints_the_curve_and_points_and_writes_the_plot(tmp_path: Path) -> None:
    result = tmp_path / "train.json"
    result.write_text(json.dumps(_doc(1, (2.0, 1.9), (1.0, 0.9))))
    png = tmp_path / "amdahl.png"
    out = subprocess.run(
        [sys.executable, "-m", "topo.cli", "amdahl", "--measured", str(result), "--out", str(png), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    doc = json.loads(out.stdout)
    assert doc["seed"][1] == {"comm_share": 0.1, "runtime_reduction": pytest.approx(0.0571, abs=1e-4)}
    assert len(doc["measured"]) == 1 and doc["measured"][0]["comm_share"] == pytest.approx(0.95)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    err = subprocess.run(
        [sys.executable, "-m", "topo.cli", "amdahl", "--measured", str(bad), "--out", str(png)],
        capture_output=True,
        text=True,
    )
    assert err.returncode != 0 and "not a tributary train --json result" in err.stderr


def test_train_summary_against_the_best_host() -> None:
    from topo.commands.train import against_best_host

    runs = [
        {"strategy": "ring", "ok": True, "final_accuracy": 0.916, "time_to_target_s": 20.0},
        {"strategy": "hierarchical", "ok": True, "final_accuracy": 0.916, "time_to_target_s": 7.0},
        {"strategy": "core-tree", "ok": True, "final_accuracy": 0.913, "time_to_target_s": 14.0},
        {"strategy": "mpi", "ok": False, "final_accuracy": None, "time_to_target_s": None},
    ]
    out = against_best_host(runs)
    assert out["best_host"] == "hierarchical" and out["time_to_target_speedup_vs_best_host"] == 0.5
    assert out["same_accuracy"] is True and out["accuracy_spread"] == pytest.approx(0.003)
    runs[2]["final_accuracy"] = 0.9
    assert against_best_host(runs)["same_accuracy"] is False
