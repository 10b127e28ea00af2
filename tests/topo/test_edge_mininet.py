"""Edge-INC on the emulated WAN: the switches replicate each stream along its trees, the edge stages sum
them within their memory, and every worker ends with exactly what the schedule's rounds give.

Nine sites: the 3x3 grid (exact average in two rounds, memory-bound) and an all-to-all round
(bandwidth-bound); loss and a one-chunk stage are in test_edge_loss_mininet.py. Timing is the benchmark's business (`tributary schedule --run`, docs/edge-inc.md); these
tests check what must hold whatever the machine's load: exact results, the memory bound, one copy of
each stream per link, repairs when packets are lost."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.schedule.emulated import emulated_params
from tests.topo.conftest import wan_from_toml
from topo.commands.schedule import network_from_wan
from topo.edge_run import run_schedule

pytestmark = [pytest.mark.mininet, pytest.mark.root, pytest.mark.slow]

RATE_MBIT = 1.3
GRID = [
    [("TYO", "LAX", "LON"), ("HKG", "NYC", "FRA"), ("SIN", "CHI", "AMS")],
    [("TYO", "HKG", "SIN"), ("NYC", "CHI", "LAX"), ("LON", "FRA", "AMS")],
]


def _log(msg: str) -> None:
    print(msg)


@pytest.fixture(scope="module")
def wan9(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    toml = f"rate_mbit = {RATE_MBIT}\nworkers_per_site = 1\n"
    with wan_from_toml(tmp_path_factory.mktemp("edge9"), toml) as running:
        yield running


def _run(running, strategy, rounds, memory_real, chunks, **kw):  # type: ignore[no-untyped-def]
    net = network_from_wan(running.network.wan, None)
    params = emulated_params(memory_real, 64e6, 10e9, RATE_MBIT * 1e6, chunks=chunks)
    return params, run_schedule(running, net, params, strategy, rounds, _log, **kw)


def test_grid_3x3_reaches_the_exact_average_in_two_memory_bound_rounds(wan9) -> None:  # type: ignore[no-untyped-def]
    params, res = _run(wan9, "grid 3x3", GRID, 4e6, 24)
    assert res.errors == []
    assert res.exact and res.exact_average  # every worker: the exact sum of all nine sites, count 9
    assert [len(r["cliques"]) for r in res.rounds] == [3, 3]
    assert all(c["limit"].startswith("memory@") for r in res.rounds for c in r["cliques"])
    assert 0 < res.stage["peak_memory_bytes"] <= params.memory_bytes == 512
    # each of the 36 links used in some round carried each of its streams once, and nothing else
    assert res.wan_streams_once and len(res.wan_bytes) == 36


def test_all_to_all_bandwidth_bound_round_replicates_every_stream_once_per_link(wan9) -> None:  # type: ignore[no-untyped-def]
    params, res = _run(wan9, "all-to-all", [[tuple(wan9.network.wan.names)]], 256e6, 16, tenant=2)
    assert res.errors == [] and res.exact and res.exact_average
    assert res.rounds[0]["cliques"][0]["limit"] == "bandwidth"
    assert res.wan_streams_once and len(res.wan_bytes) == 72
    # 16 chunks and the repeated last one, 322 bytes each on the wire, on every directed link
    assert set(res.wan_bytes.values()) == {17 * 322}
    assert res.stage["peak_memory_bytes"] <= params.memory_bytes


def test_float32_grid_runs_an_exponent_round_before_each_sum_and_matches_the_stages_arithmetic(wan9) -> None:  # type: ignore[no-untyped-def]
    params, res = _run(wan9, "grid 3x3", GRID, 4e6, 24, tenant=3, fmt="float32")
    assert res.stage["peak_memory_bytes"] <= params.memory_bytes
    assert res.errors == []
    # every worker holds, bit for bit, what the stages' block fixed point gives for the two rounds, and
    # that is within its stated bound of the float64 sum of all nine sites
    assert res.exact and res.exact_average
    assert [r["kind"] for r in res.rounds] == ["max", "sum", "max", "sum"]
    assert 0 < res.max_abs_error <= res.error_bound
    assert res.wan_streams_once
