"""The optimiser on the nine-city WAN: the finding, the exact optimum by brute force, the ILP."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import numpy as np
import pytest

from controller.schedule import EdgeParams, Network, Sync, TimingCache, optimise
from controller.schedule.designs import equal_partitions, sizes_for
from controller.schedule.mixing import averaging_matrix
from controller.schedule.search import exhaustive_grid, ilp_partition

DATA = Path(__file__).resolve().parents[2] / "topo" / "data" / "wan9_rtt_ms.csv"


def nine_cities(bandwidth: float = 10e9) -> Network:
    """Read straight from the data file (controller must not import topo, nor should its tests)."""
    rows = [r for r in csv.reader(DATA.open()) if r and not r[0].startswith("#")]
    names = tuple(rows[0][4:])
    lat = np.array([[float(x) / 2000 for x in r[4:]] for r in rows[1:]])
    return Network(names, lat, bandwidth, tuple(r[1] for r in rows[1:]))


@pytest.fixture(scope="module")
def net() -> Network:
    return nine_cities()


def test_small_memory_rotating_triples_win(net: Network) -> None:
    res = optimise(net, EdgeParams(memory_bytes=4e6, size_bytes=64e6))
    best = res.best
    assert best.k == 3 and best.mixing.exact
    assert all(len(c) == 3 for rnd in best.rounds for c in rnd)
    a2a = next(c for c in res.candidates if c.family == "all-to-all")
    assert best.time_s < a2a.time_s


def test_large_memory_all_to_all_wins(net: Network) -> None:
    res = optimise(net, EdgeParams(memory_bytes=256e6, size_bytes=64e6))
    assert res.best.family == "all-to-all" and len(res.best.rounds) == 1
    # 256 MB covers the largest skew at line rate (112.5 ms x 1.25 GB/s = 140.6 MB): S/B + diameter
    assert res.best.time_s == pytest.approx(64e6 / 1.25e9 + 0.118)


def test_every_family_is_reported_with_how_it_was_searched(net: Network) -> None:
    res = optimise(net, EdgeParams(memory_bytes=16e6, size_bytes=64e6))
    fams = {c.family for c in res.best_per_family()}
    assert fams == {"all-to-all", "grid", "resolvable", "latency-aware", "hierarchical"}
    grid = next(c for c in res.candidates if c.strategy == "grid 3x3")
    assert grid.search == "exact"
    assert all(c.search.startswith(("exact", "heuristic")) for c in res.candidates)
    js = res.to_json()
    assert set(js["best"]) >= {"strategy", "rounds", "time_s"}
    assert all(isinstance(name, str) for rnd in js["best"]["rounds"] for c in rnd for name in c)


def _brute_force_two_rounds_of_triples(net: Network, edge: EdgeParams) -> float:
    """Every ordered pair of partitions of the nine sites into triples; keep those whose product is J.

    Written without the optimiser's search code: exactness from the matrices, times from the model's
    clique timing via a direct two-round recursion.
    """
    n = net.n
    parts = [tuple(tuple(c) for c in p) for p in equal_partitions(list(range(n)), 3)]
    assert len(parts) == 280
    j = np.full((n, n), 1 / n)
    mats = [averaging_matrix(n, p) for p in parts]
    cache = TimingCache(net, edge)
    best = np.inf
    exact_pairs = 0
    for a, b in itertools.product(range(len(parts)), repeat=2):
        if not np.allclose(mats[b] @ mats[a], j, atol=1e-12):
            continue
        exact_pairs += 1
        ready = np.zeros(n)
        for rnd in (parts[a], parts[b]):
            if edge.sync is Sync.BARRIER:
                ready[:] = ready.max()
            for c in rnd:
                t = cache.get(c)
                start = max(ready[i] for i in t.members)
                for i, f in zip(t.members, t.finish_s, strict=True):
                    ready[i] = start + f
        best = min(best, ready.max())
    assert exact_pairs == 280 * 36  # every transversal pair, in both orders
    return best


@pytest.mark.parametrize(
    ("memory", "sync"),
    [(2e6, Sync.CLIQUE), (4e6, Sync.CLIQUE), (30e6, Sync.CLIQUE), (256e6, Sync.CLIQUE), (4e6, Sync.BARRIER)],
)
def test_exact_grid_optimum_matches_brute_force(net: Network, memory: float, sync: Sync) -> None:
    edge = EdgeParams(memory_bytes=memory, size_bytes=64e6, sync=sync)
    brute = _brute_force_two_rounds_of_triples(net, edge)
    found = exhaustive_grid(TimingCache(net, edge), 3, 3)
    assert found.time_s == pytest.approx(brute, rel=1e-12)
    res = optimise(net, edge, families=("grid",))
    assert res.best.time_s == pytest.approx(brute, rel=1e-12)


def test_ilp_partition_matches_enumeration(net: Network) -> None:
    """The min-max ILP finds the partition whose slowest clique is fastest, as enumeration does."""
    sub = net.subset(["TYO", "HKG", "SIN", "NYC", "LON", "FRA"])
    cache = TimingCache(sub, EdgeParams(memory_bytes=4e6, size_bytes=64e6))
    for k in (2, 3):
        chosen = ilp_partition(cache, sizes_for(6, k))
        assert chosen is not None
        got = max(cache.get(c).time_s for c in chosen)
        want = min(max(cache.get(c).time_s for c in p) for p in equal_partitions(list(range(6)), k))
        assert got == pytest.approx(want, rel=1e-9)


def test_hierarchical_is_regions_then_one_per_region(net: Network) -> None:
    res = optimise(net, EdgeParams(memory_bytes=64e6, size_bytes=64e6), families=("hierarchical",))
    cand = res.best
    regions = [set(c) for c in cand.rounds[0]]
    assert sorted(map(sorted, regions)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert all(len({net.regions[i] for i in c}) == len(c) for c in cand.rounds[1])
    assert cand.mixing.exact


def test_bandwidth_and_memory_move_the_winner_the_right_way(net: Network) -> None:
    """More memory can only help all-to-all relative to triples: once it wins it keeps winning."""
    winners = [
        optimise(net, EdgeParams(m, 64e6), families=("all-to-all", "grid")).best.family
        for m in (4e6, 64e6, 1e9)
    ]
    assert winners == ["grid", "all-to-all", "all-to-all"]
