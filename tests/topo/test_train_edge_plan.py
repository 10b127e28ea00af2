"""The schedule `tributary train --strategy edge-cliques` runs per synchronisation, planned for the WAN
without bringing it up: a finite-time design whose cycle leaves every site the exact sum, and the model's
prediction of the cycle with every round started by its agreement."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from controller.edge.plan import contributions
from topo import addressing
from topo.train_edge import plan_cycle
from topo.wan import default_wan


def _running(sites: str | None, workers: int = 1) -> SimpleNamespace:
    wan = default_wan(sites)
    wan.workers_per_site = workers
    return SimpleNamespace(network=SimpleNamespace(wan=wan, fabric=addressing.fabric(wan)))


def test_nine_sites_grid_rotates_triples_and_sums_every_site_once() -> None:
    cycle = plan_cycle(_running(None), 2410, "exact", "grid")
    assert cycle.strategy.startswith("grid") and len(cycle.rounds) == 2
    assert all(len(c) == 3 for r in cycle.rounds for c in r)
    assert cycle.kinds == ["sum", "sum"] and contributions(cycle.rounds) == 9
    # cliques rotate: no pair of sites meets in both rounds
    pairs = [{frozenset((a, b)) for c in r for a in c for b in c if a < b} for r in cycle.rounds]
    assert not pairs[0] & pairs[1]
    assert cycle.params.chunks == 38 and cycle.params.memory_bytes == 38 * 256  # the whole vector fits
    # every round waits for its agreement: the cycle is at least the rounds' agreements and delays
    agree = [max(c.agree_s for c in r.cliques) for r in cycle.predicted]
    assert all(a > 0 for a in agree) and cycle.predicted_s >= sum(agree)


def test_float32_adds_an_exponent_round_before_each_sum() -> None:
    cycle = plan_cycle(_running("TYO,NYC,LON"), 2410, "float32", "best")
    assert cycle.strategy == "all-to-all" and cycle.kinds == ["max", "sum"]
    assert len(cycle.data_rounds) == 2 and cycle.predicted_s > 0


def test_a_schedule_that_cannot_reach_the_exact_sum_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="no grid schedule reaches the exact average of 3 sites"):
        plan_cycle(_running("TYO,NYC,LON"), 2410, "exact", "grid")
    with pytest.raises(ValueError, match="at least two sites"):
        plan_cycle(_running("TYO"), 2410, "exact", "best")
