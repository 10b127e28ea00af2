"""scripts/experiments.py (make experiments): the experiment list, the report written from kept outputs,
and a run of an experiment that needs no root."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "experiments.py"


@pytest.fixture()
def exp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("experiments_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "experiments_script", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "OUT", tmp_path / "out")
    monkeypatch.setattr(module, "REPORT", tmp_path / "report.md")
    return module


def test_every_experiment_is_a_command_a_user_can_type(exp) -> None:  # type: ignore[no-untyped-def]
    names = [e.name for e in exp.experiments()]
    assert len(names) == len(set(names))
    assert {"train-3", "amdahl", "allreduce-mesh", "allreduce-access"} <= set(names)
    shown = {e.name: e.shown() for e in exp.experiments()}
    assert shown["train-3"].startswith("sudo tributary train --sites TYO,NYC,LON")
    assert sum(e.estimate_s for e in exp.experiments()) <= 30 * 60  # the half hour the target promises


def test_report_from_kept_outputs(exp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    out.mkdir()
    doc = {
        "sites": ["TYO", "NYC", "LON"],
        "workers": 3,
        "config": {"steps": 8, "fmt": "exact", "target_accuracy": 0.9},
        "runs": [
            {
                "strategy": "hierarchical",
                "ok": True,
                "final_accuracy": 0.67,
                "seconds": 3.6,
                "comm_seconds": 3.5,
            },
            {
                "strategy": "core-tree",
                "ok": True,
                "final_accuracy": 0.67,
                "seconds": 1.4,
                "comm_seconds": 1.3,
            },
        ],
        "curves": {"reference": "hierarchical", "against_reference": {"core-tree": {"identical": True}}},
        "same_accuracy": True,
    }
    (out / "train-3-exact.json").write_text(json.dumps(doc))
    index = [
        {
            "name": "train-3-exact",
            "title": "Training, exact",
            "command": "sudo tributary train ...",
            "status": "ok",
            "seconds": 60.0,
        },
        {
            "name": "bench-switch",
            "title": "Switch",
            "command": "sudo ...",
            "status": "skipped",
            "why": "needs root",
        },
    ]
    exp.write_report(index)
    text = (tmp_path / "report.md").read_text()
    assert "## Training, exact" in text and "| core-tree | 0.67 | 1.4 | 1.3 |" in text
    assert "core-tree against hierarchical: identical curve, step by step" in text
    assert "`sudo ...`: skipped" in text


def test_unknown_experiment_is_refused(exp) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit, match="unknown experiment"):
        exp.main(["--only", "nope"])


def test_an_experiment_without_root_runs_and_is_reported(exp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert exp.main(["--only", "schedule-model"]) == 0
    result = json.loads((tmp_path / "out" / "schedule-model.json").read_text())
    assert result["best"]["time_s"] > 0
    index = json.loads((tmp_path / "out" / "index.json").read_text())
    assert index[0]["name"] == "schedule-model" and index[0]["status"] == "ok"
    assert "predicted time to consensus" in (tmp_path / "report.md").read_text()
