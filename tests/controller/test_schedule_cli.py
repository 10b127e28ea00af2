"""`tributary schedule`: the JSON answer, the sweep's files, and clear errors for bad input."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from topo import cli

TRIBUTARY = str(Path(sys.executable).parent / "tributary")


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert cli.main(["schedule", *argv, "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    return json.loads(out[0])


def test_small_memory_answer_is_rounds_of_triples(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "--memory", "4MB", "--size", "64MB", "--bandwidth", "10Gbit")
    best = doc["best"]
    assert all(len(clique) == 3 for rnd in best["rounds"] for clique in rnd)
    cities = {c for rnd in best["rounds"] for clique in rnd for c in clique}
    assert cities == {"TYO", "HKG", "SIN", "NYC", "CHI", "LAX", "LON", "FRA", "AMS"}
    assert best["time_s"] > 0
    strategies = {c["strategy"] for c in doc["candidates"]}
    assert "all-to-all" in strategies and len(doc["candidates"]) == 5


def test_large_memory_answer_is_one_all_to_all_round(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "--memory", "256MB", "--families", "all-to-all,grid")
    assert doc["best"]["strategy"] == "all-to-all"
    assert len(doc["best"]["rounds"]) == 1 and len(doc["best"]["rounds"][0][0]) == 9


def test_table_output_names_cities_and_families(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["schedule", "--sites", "TYO,HKG,NYC,LON", "--memory", "4MB"]) == 0
    out = capsys.readouterr().out
    assert "best:" in out and "TYO" in out and "all-to-all" in out and "why:" in out


def test_topology_file_subset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    topo = tmp_path / "t.toml"
    topo.write_text('sites = ["TYO", "NYC", "LON", "FRA"]\n')
    doc = run_json(capsys, "--topology", str(topo), "--memory", "1GB")
    assert doc["best"]["strategy"] == "all-to-all"
    assert sorted(doc["best"]["rounds"][0][0]) == ["FRA", "LON", "NYC", "TYO"]


def test_sweep_writes_plot_and_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sw"
    argv = ["schedule", "--sweep", "--sites", "TYO,HKG,SIN,LON", "--points", "4", "--out", str(out)]
    assert cli.main(argv) == 0
    assert out.with_suffix(".png").stat().st_size > 1000
    rows = list(csv.reader(out.with_suffix(".csv").open()))
    assert rows[0][:2] == ["memory_bytes", "memory_MB"] and "best_family" in rows[0]
    assert len([r for r in rows[1:] if not r[2].startswith("#")]) >= 4
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--sites", "TYO,ATLANTIS"], "ATLANTIS"),
        (["--memory", "-4MB"], "must be positive"),
        (["--size", "0MB"], "must be positive"),
        (["--bandwidth", "0Gbit"], "must be positive"),
        (["--memory", "4XB"], "unknown size unit"),
        (["--memory", "100B"], "smaller than one chunk"),
        (["--families", "bogus"], "unknown family"),
    ],
)
def test_bad_input_is_a_clear_error(argv: list[str], needle: str) -> None:
    res = subprocess.run([TRIBUTARY, "schedule", *argv], capture_output=True, text=True)
    assert res.returncode == 2
    assert needle in res.stderr
    assert "Traceback" not in res.stderr


def test_disconnected_topology_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('sites = ["TYO", "NYC", "LON"]\nmesh = "none"\n[[link]]\na = "TYO"\nb = "NYC"\n')
    res = subprocess.run([TRIBUTARY, "schedule", "--topology", str(bad)], capture_output=True, text=True)
    assert res.returncode == 2
    assert "not connected" in res.stderr and "Traceback" not in res.stderr


def test_help_says_what_a_megabyte_is() -> None:
    res = subprocess.run([TRIBUTARY, "schedule", "--help"], capture_output=True, text=True)
    assert res.returncode == 0 and "10^6" in res.stdout


@pytest.mark.slow
def test_independent_crosscheck_agrees() -> None:
    """scripts/schedule_crosscheck.py recomputes the optimiser's times by simulation: they must agree."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "schedule_crosscheck.py"
    res = subprocess.run(
        [sys.executable, str(script), "--memories", "4e6,256e6", "--no-crossover"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip().endswith("AGREE")
