"""scripts/experiments.py (make experiments) and scripts/results_doc.py: the experiment list, docs/results.md
rendered from a given measurements file (every number from it, none from the template), and a run of
an experiment that needs no root."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _load(name: str, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(f"{name}_script", SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, f"{name}_script", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def exp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    module = _load("experiments", monkeypatch)
    monkeypatch.setattr(module, "OUT", tmp_path / "out")
    monkeypatch.setattr(module, "DATA", tmp_path / "data.json")
    monkeypatch.setattr(module, "REPORT", tmp_path / "report.md")
    return module


@pytest.fixture()
def doc(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    return _load("results_doc", monkeypatch)


def test_every_experiment_is_a_command_a_user_can_type(exp) -> None:  # type: ignore[no-untyped-def]
    names = [e.name for e in exp.experiments()]
    assert len(names) == len(set(names))
    assert {"train-3", "train-9", "amdahl", "A3mesh", "D9acc", "schedule-sweep-run"} <= set(names)
    shown = {e.name: e.shown() for e in exp.experiments()}
    assert shown["train-3"].startswith("sudo tributary train --sites TYO,NYC,LON")
    assert "edge-cliques" in shown["train-9"]
    assert sum(e.estimate_s for e in exp.experiments()) <= 30 * 60  # the half hour the target promises


def test_the_template_names_only_experiments_that_exist(exp, doc) -> None:  # type: ignore[no-untyped-def]
    names = {e.name for e in exp.experiments()}
    used = set(re.findall(r"'([A-Za-z0-9-]+)'", " ".join(doc.PLACEHOLDER.findall(doc.TEMPLATE.read_text()))))
    referenced = {
        n for n in used if n in names or re.fullmatch(r"[A-D]\d(mesh|acc)|(train|schedule|bench|wan)-.*", n)
    }
    assert referenced and referenced <= names, referenced - names


def _measurements() -> dict[str, dict]:
    def rec(name: str, result: dict) -> dict:
        return {"name": name, "command": f"sudo tributary {name} --json", "status": "ok", "started": 1.8e9,
                "seconds": 12.0, "commit": "cafe123", "result": result}  # fmt: skip

    train = {
        "runs": [
            {"strategy": "hierarchical", "ok": True, "final_accuracy": 0.9137, "seconds": 10.2244,
             "comm_seconds": 10.2143, "time_to_target_s": 7.9378, "bound_step_s": 0.2363,
             "comm_step_times_bound": 1.44, "workers_agree": True},
            {"strategy": "edge-cliques", "ok": True, "final_accuracy": 0.9137, "seconds": 17.2695,
             "comm_seconds": 17.2609, "time_to_target_s": 13.2091, "bound_step_s": 0.4841,
             "comm_step_times_bound": 1.19, "workers_agree": True,
             "edge": {"schedule": "all-to-all", "measured_cycle_median_s": 0.5301, "predicted_cycle_s": 0.4841,
                      "data_plane_rounds": 2}},
        ],
        "curves": {"reference": "hierarchical", "against_reference": {"edge-cliques": {"identical": True}}},
        "same_accuracy": True,
        "accuracy_spread": 0.0,
        "best_host": "hierarchical",
        "edge_time_to_target_speedup_vs_best_host": 0.601,
    }  # fmt: skip
    compile_ = {"program": "x.p4", "lines": 100, "runs": 5, "total_s": {"median": 0.018}}
    return {
        "train-9": rec("train-9", train),
        "bench-switch": rec("bench-switch", {"inprocess_pps": 465531}),
        "bench-compile": rec("bench-compile", compile_),
    }


def test_results_doc_takes_every_number_from_the_measurements(doc) -> None:  # type: ignore[no-untyped-def]
    data = _measurements()
    text = doc.render(doc.TEMPLATE.read_text(), data)
    assert "{{" not in text and "}}" not in text
    assert "`sudo tributary train-9 --json` (run of 2027-01-15 08:00 UTC, at cafe123, 12 s)" in text
    assert "| edge-cliques (Edge-INC) | 0.914 | 17.27 | 17.26 | 13.21 | 0.484 | 1.19 | yes |" in text
    assert "0.530 s measured at the edge hosts" in text and "0.60 through the edge stages" in text
    assert "465,531 packets/s" in text and "(100 lines) | 0.018 s (median of 5)" in text
    # what the file does not hold is said to be missing, never filled in
    assert "_(not measured: no run of experiment amdahl)_" in text
    # the prose itself holds no measured number: rendered without data, no decimal number is left
    # beyond the constants the template states (frame sizes, goals, the seed's inputs are data too)
    bare = doc.render(doc.TEMPLATE.read_text(), {})
    leftovers = set(re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", bare))
    # the goals: 0.9 of the bound ratio, within 1.3 of a bound, 0.7 of the relay, within 0.5 % accuracy
    assert leftovers <= {"0.9", "1.3", "0.7", "0.5"}, leftovers


def test_report_only_renders_from_the_data_file(exp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "data.json").write_text(json.dumps(_measurements()))
    assert exp.main(["--report-only"]) == 0
    assert "| hierarchical | 0.914 | 10.22 |" in (tmp_path / "report.md").read_text()


def test_unknown_experiment_is_refused(exp) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit, match="unknown experiment"):
        exp.main(["--only", "nope"])


def test_an_experiment_without_root_runs_and_is_kept(exp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert exp.main(["--only", "schedule-4MB"]) == 0
    data = json.loads((tmp_path / "data.json").read_text())
    rec = data["schedule-4MB"]
    assert rec["status"] == "ok" and rec["result"]["best"]["time_s"] > 0
    assert rec["command"] == "tributary schedule --memory 4MB --size 64MB --bandwidth 10Gbit --json"
    text = (tmp_path / "report.md").read_text()
    assert f"the best schedule is {rec['result']['best']['strategy']}" in text
