"""`tributary train` on the emulated WAN (three sites, one worker each): with exact gradients the host
baseline and INC through the switches train identically, bit for bit, step by step."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from edge.training.loop import TrainConfig
from topo.train_run import compare_curves, run_strategy

pytestmark = [pytest.mark.mininet, pytest.mark.root]


@pytest.fixture(scope="module")
def wan3_single(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from tests.topo.conftest import wan_from_toml

    toml = 'sites = ["TYO", "NYC", "LON"]\nrate_mbit = 50\nworkers_per_site = 1\n'
    with wan_from_toml(tmp_path_factory.mktemp("train3"), toml) as running:
        yield running


def test_exact_training_is_identical_through_the_switches_and_between_hosts(wan3_single) -> None:  # type: ignore[no-untyped-def]
    cfg = TrainConfig(steps=8, fmt="exact")
    runs = [run_strategy(wan3_single, cfg, s, print) for s in ("hierarchical", "core-tree")]
    for r in runs:
        assert r.errors == [] and len(r.steps) == 8, r.errors
        assert len(r.digests) == 3 and len(set(r.digests)) == 1  # every worker holds the same parameters
        assert r.steps[-1]["loss"] < 0.8 * r.steps[0]["loss"]  # it learns
        assert r.comm_s > 0.1 * 8  # every step crossed the WAN (at least a 100 ms one-way path)
    hier, inc = runs
    assert hier.digests == inc.digests
    assert [(s["loss"], s["accuracy"]) for s in hier.steps] == [(s["loss"], s["accuracy"]) for s in inc.steps]
    assert compare_curves(runs)["identical"] is True
    assert inc.stats["results"] >= 3 * 8 * 38  # 2,410 int32 values: 38 chunks per worker and step
    summary = inc.summary()
    assert summary["ok"] and summary["steps"] == 8 and summary["comm_share"] > 0.9


def test_mpi_trains_like_the_others(wan3_single) -> None:  # type: ignore[no-untyped-def]
    """OpenMPI's allreduce under mpirun, exact gradients: the same parameters as the hierarchical run."""
    from edge.mpi_launch import mpirun_path

    if mpirun_path() is None:
        pytest.fail("mpirun is missing: make install installs openmpi-bin")
    cfg = TrainConfig(steps=4, fmt="exact")
    runs = [run_strategy(wan3_single, cfg, s, print) for s in ("hierarchical", "mpi")]
    assert runs[1].errors == [] and len(runs[1].steps) == 4, runs[1].errors
    assert runs[0].digests == runs[1].digests and len(runs[1].digests) == 3
