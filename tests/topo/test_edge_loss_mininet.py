"""Edge-INC under loss on the emulated WAN: three sites with 3 % random loss on every WAN link. The
stages find lost copies (gaps in a stream, idle tails), ask the senders again, and end exact; a stage
with room for a single chunk ends exact too, by refusing and re-fetching what does not fit."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.schedule.emulated import emulated_params
from tests.topo.conftest import wan_from_toml
from topo.commands.schedule import network_from_wan
from topo.edge_run import run_schedule

pytestmark = [pytest.mark.mininet, pytest.mark.root, pytest.mark.slow]

RATE_MBIT = 1.3


def _log(msg: str) -> None:
    print(msg)


@pytest.fixture(scope="module")
def wan3_lossy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    toml = f'sites = ["TYO", "NYC", "LON"]\nrate_mbit = {RATE_MBIT}\nloss_pct = 3.0\nworkers_per_site = 1\n'
    with wan_from_toml(tmp_path_factory.mktemp("edge3"), toml) as running:
        yield running


def _run(running, strategy, rounds, memory_real, chunks, **kw):  # type: ignore[no-untyped-def]
    net = network_from_wan(running.network.wan, None)
    params = emulated_params(memory_real, 64e6, 10e9, RATE_MBIT * 1e6, chunks=chunks)
    return params, run_schedule(running, net, params, strategy, rounds, _log, **kw)


def test_three_site_clique_is_exact_under_loss(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    params, res = _run(wan3_lossy, "clique", [[("TYO", "NYC", "LON")]], 64e6, 64)
    assert res.errors == [] and res.exact and res.exact_average
    assert res.stage["nack_chunks"] > 0  # 3 % loss on every link: copies were lost and re-sent
    assert res.stage["peak_memory_bytes"] <= params.memory_bytes


def test_a_stage_with_room_for_one_chunk_still_ends_exact(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    """One accumulator for two inbound streams: the model gives no rate (M - c = 0); the run is paced
    at one chunk per largest skew and the stage refuses and re-fetches what does not fit."""
    net = network_from_wan(wan3_lossy.network.wan, None)
    params = emulated_params(2e6, 64e6, 10e9, RATE_MBIT * 1e6, chunks=8)
    assert params.memory_bytes == 256
    res = run_schedule(wan3_lossy, net, params, "one-chunk", [[("TYO", "NYC", "LON")]], _log, tenant=3)
    assert res.errors == [] and res.exact
    assert res.stage["peak_memory_bytes"] == 256  # never a second accumulator, whatever was refused
