"""The schedule model's numbers on hand-computed cases, and the properties any honest model must have."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.schedule import (
    EdgeParams,
    Inbound,
    ModelError,
    Network,
    Sync,
    TimingCache,
    clique_timing,
    consensus,
)
from controller.schedule.designs import affine_plane, product_design, round_robin_pairs
from controller.schedule.mixing import averaging_matrix
from controller.schedule.model import run_rounds
from controller.schedule.search import schedule_time
from controller.schedule.units import UnitError, parse_bandwidth, parse_size

GBIT10 = 10e9  # bit/s
LINK = GBIT10 / 8  # bytes/s


def three_sites() -> Network:
    # one-way: A-B 10 ms, A-C 30 ms, B-C 20 ms
    lat = np.array([[0, 0.010, 0.030], [0.010, 0, 0.020], [0.030, 0.020, 0]])
    return Network(("A", "B", "C"), lat, GBIT10)


def test_two_sites_by_hand() -> None:
    """One remote stream per site: nothing to align, no memory limit; S/B + one-way latency."""
    net = Network(("A", "B"), np.array([[0, 0.05], [0.05, 0]]), GBIT10)
    t = clique_timing(net, EdgeParams(memory_bytes=1e6, size_bytes=64e6), (0, 1))
    assert t.rate_Bps == LINK
    assert t.finish_s == pytest.approx((64e6 / LINK + 0.05,) * 2)
    assert t.time_s == pytest.approx(0.1012)


def test_three_sites_memory_bound_by_hand() -> None:
    """Skews: A sees B at 10 ms and C at 30 ms -> 20 ms; B and C 10 ms. r = (M - c) / 20 ms."""
    edge = EdgeParams(memory_bytes=1e6, size_bytes=64e6, chunk_bytes=256)
    t = clique_timing(three_sites(), edge, (0, 1, 2))
    assert t.skew_s == pytest.approx((0.020, 0.010, 0.010))
    rate = (1e6 - 256) / 0.020
    assert t.rate_Bps == pytest.approx(rate)
    assert t.limit == "memory@A"
    assert t.finish_s == pytest.approx((64e6 / rate + 0.030, 64e6 / rate + 0.020, 64e6 / rate + 0.030))
    assert t.time_s == pytest.approx(1.310328, rel=1e-6)


def test_three_sites_bandwidth_bound_by_hand() -> None:
    edge = EdgeParams(memory_bytes=1e9, size_bytes=64e6)
    t = clique_timing(three_sites(), edge, (0, 1, 2))
    assert t.rate_Bps == LINK and t.limit == "bandwidth"
    assert t.time_s == pytest.approx(0.0512 + 0.030)


def test_memory_that_holds_the_whole_vector_never_binds() -> None:
    """At most S bytes are ever live, so M >= S lifts the cap even when S/B is shorter than the skew."""
    edge = EdgeParams(memory_bytes=64e6, size_bytes=64e6)
    t = clique_timing(three_sites(), edge, (0, 1, 2))
    assert t.limit == "bandwidth" and t.time_s == pytest.approx(0.0512 + 0.030)
    smaller = clique_timing(three_sites(), EdgeParams(memory_bytes=20e6, size_bytes=64e6), (0, 1, 2))
    assert smaller.limit == "memory@A"


def test_three_sites_shared_inbound_halves_the_rate() -> None:
    edge = EdgeParams(memory_bytes=1e9, size_bytes=64e6, inbound=Inbound.SHARED)
    t = clique_timing(three_sites(), edge, (0, 1, 2))
    assert t.rate_Bps == pytest.approx(LINK / 2) and t.limit == "fan-in"
    assert t.time_s == pytest.approx(0.1024 + 0.030)


def test_pairs_then_pair_start_when_last_member_ready() -> None:
    """Round 1: {A,B} (A, B ready at S/B + 10 ms). Round 2: {B,C} starts when B is ready."""
    net = three_sites()
    cache = TimingCache(net, EdgeParams(memory_bytes=1e6, size_bytes=64e6))
    rounds = (((0, 1), (2,)), ((1, 2), (0,)))
    ready = run_rounds(cache, rounds, 2)
    s = 64e6 / LINK
    assert ready[0] == pytest.approx(s + 0.010)
    assert ready[1] == pytest.approx(s + 0.010 + s + 0.020)
    assert ready[2] == pytest.approx(ready[1])


def test_barrier_waits_for_every_site() -> None:
    """With a global barrier, round 2's pair {B,C} starts only when the slowest site of round 1 is done."""
    net = three_sites()
    edge = EdgeParams(memory_bytes=1e6, size_bytes=64e6, sync=Sync.BARRIER)
    rounds = (((0, 1), (2,)), ((1, 2), (0,)))
    ready = run_rounds(TimingCache(net, edge), rounds, 2)
    s = 64e6 / LINK
    assert ready[1] == pytest.approx(s + 0.010 + s + 0.020)  # same as clique sync: C was idle (ready at 0)
    slow = (((0, 2), (1,)), ((0, 1), (2,)))  # {A,C} 30 ms, then {A,B}: both must wait for A and C
    ready = run_rounds(TimingCache(net, edge), slow, 2)
    assert ready[0] == pytest.approx(s + 0.030 + s + 0.010)


def test_three_site_pairs_converge_but_never_exactly() -> None:
    """Averages of pairs have dyadic weights; 1/3 is not dyadic, so only eps-consensus is possible."""
    rounds = (((0, 1), (2,)), ((1, 2), (0,)), ((0, 2), (1,)))
    mix = consensus(3, rounds, eps=1e-3)
    assert mix.reaches and not mix.exact
    # error after t rounds is the norm of the product minus J: check the count by hand-rolled matrices
    p, j = np.eye(3), np.full((3, 3), 1 / 3)
    errors = []
    for t in range(mix.rounds):
        p = averaging_matrix(3, rounds[t % 3]) @ p
        errors.append(np.linalg.norm(p - j, 2))
    assert errors[-1] <= 1e-3 < errors[-2]
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(errors))


def test_grid_and_affine_plane_are_exact_in_two_rounds() -> None:
    assert consensus(9, product_design((3, 3))).rounds == 2
    assert consensus(9, product_design((3, 3))).exact
    assert consensus(9, affine_plane(3)).rounds == 2
    assert consensus(8, product_design((2, 2, 2))).rounds == 3
    assert not consensus(9, round_robin_pairs(9)).exact


def test_disconnected_schedule_never_reaches_consensus() -> None:
    mix = consensus(4, (((0, 1), (2, 3)),))
    assert not mix.reaches


def test_an_error_landing_on_eps_is_counted_the_same_under_relabelling() -> None:
    """Pair rounds halve the error, so it hits 2**-23 (the default eps) exactly; rounding must not decide."""
    rounds = (((0, 1), (2, 3), (4, 5)), ((0, 3), (2, 4), (1, 5)))
    perm = [0, 1, 2, 3, 5, 4]
    inv = np.argsort(perm)
    moved = tuple(tuple(tuple(sorted(int(inv[i]) for i in c)) for c in r) for r in rounds)
    a, b = consensus(6, rounds), consensus(6, moved)
    assert a.rounds == b.rounds > 0
    assert a.error == pytest.approx(2.0**-23, rel=1e-6)


def test_round_robin_pairs_meet_every_pair_once() -> None:
    for n in (4, 5, 8, 9):
        met = [p for r in round_robin_pairs(n) for c in r if len(c) == 2 for p in [c]]
        assert sorted(met) == sorted(itertools.combinations(range(n), 2))


# ----------------------------------------------------------------------------- properties


@st.composite
def wan_and_schedule(draw: st.DrawFn) -> tuple[Network, tuple]:
    n = draw(st.integers(3, 6))
    pts = draw(st.lists(st.tuples(st.floats(0, 100), st.floats(0, 100)), min_size=n, max_size=n))
    lat = np.array([[np.hypot(a[0] - b[0], a[1] - b[1]) / 1000 for b in pts] for a in pts])
    net = Network(tuple(f"S{i}" for i in range(n)), lat, draw(st.floats(1e8, 1e11)))
    rounds = []
    for _ in range(draw(st.integers(1, 3))):
        perm = draw(st.permutations(range(n)))
        k = draw(st.integers(2, n))
        rounds.append(tuple(tuple(sorted(perm[i : i + k])) for i in range(0, n, k)))
    return net, tuple(rounds)


@settings(max_examples=60, deadline=None)
@given(case=wan_and_schedule(), mem=st.floats(1e4, 1e9), size=st.floats(1e5, 1e9), more=st.floats(1.0, 100.0))
def test_more_memory_or_bandwidth_never_slows_a_schedule(case, mem, size, more) -> None:
    net, rounds = case
    mix = consensus(net.n, rounds)
    base = schedule_time(TimingCache(net, EdgeParams(mem, size)), rounds, mix)
    richer = schedule_time(TimingCache(net, EdgeParams(mem * more, size)), rounds, mix)
    faster = Network(net.names, net.latency_s, net.bandwidth_bps * more)
    wider = schedule_time(TimingCache(faster, EdgeParams(mem, size)), rounds, mix)
    smaller = schedule_time(TimingCache(net, EdgeParams(mem, size / more)), rounds, mix)
    for t in (richer, wider, smaller):
        assert t <= base * (1 + 1e-12) or (np.isinf(base) and np.isinf(t))
    barrier = schedule_time(TimingCache(net, EdgeParams(mem, size, sync=Sync.BARRIER)), rounds, mix)
    assert barrier >= base * (1 - 1e-12) or (np.isinf(base) and np.isinf(barrier))


@settings(max_examples=40, deadline=None)
@given(case=wan_and_schedule(), mem=st.floats(1e4, 1e9), data=st.data())
def test_relabelling_sites_relabels_the_answer(case, mem, data) -> None:
    """Symmetry: renaming the sites (permuting the matrix) changes nothing but the names."""
    net, rounds = case
    perm = data.draw(st.permutations(range(net.n)))
    inv = np.argsort(perm)
    moved = Network(tuple(net.names[p] for p in perm), net.latency_s[np.ix_(perm, perm)], net.bandwidth_bps)
    moved_rounds = tuple(tuple(tuple(sorted(int(inv[i]) for i in c)) for c in r) for r in rounds)
    edge = EdgeParams(mem, 64e6)
    mix = consensus(net.n, rounds)
    assert consensus(net.n, moved_rounds).rounds == mix.rounds
    a = schedule_time(TimingCache(net, edge), rounds, mix)
    b = schedule_time(TimingCache(moved, edge), moved_rounds, mix)
    assert a == pytest.approx(b, rel=1e-12) or (np.isinf(a) and np.isinf(b))


@settings(max_examples=40, deadline=None)
@given(case=wan_and_schedule(), mem=st.floats(1e4, 1e9))
def test_clique_time_bounds(case, mem) -> None:
    """A clique is never faster than its data at line rate plus its diameter, nor than any member's skew cap."""
    net, rounds = case
    edge = EdgeParams(mem, 64e6)
    for clique in rounds[0]:
        if len(clique) < 2:
            continue
        t = clique_timing(net, edge, clique)
        diameter = max(net.latency_s[i, j] for i in clique for j in clique)
        assert t.time_s >= 64e6 / net.rate_Bps + diameter - 1e-12
        live = min(edge.size_bytes, t.rate_Bps * max(t.skew_s) + edge.chunk_bytes)
        assert live <= mem * (1 + 1e-9)


# ----------------------------------------------------------------------------- inputs


def test_units() -> None:
    assert parse_size("4MB") == 4e6 and parse_size("1GB") == 1e9 and parse_size("4MiB") == 4 * 2**20
    assert parse_bandwidth("10Gbit") == 1e10 and parse_bandwidth("100Mbit") == 1e8
    assert parse_bandwidth("1Gbit/s") == 1e9 and parse_bandwidth("1.25GB/s") == 1e10
    for bad in ("-4MB", "0MB", "4XB", "MB", ""):
        with pytest.raises(UnitError):
            parse_size(bad)
    for bad in ("-1Gbit", "0Gbit", "10Gfoo"):
        with pytest.raises(UnitError):
            parse_bandwidth(bad)


def test_bad_inputs_are_refused_with_a_reason() -> None:
    with pytest.raises(ModelError, match="size must be positive"):
        EdgeParams(4e6, -1)
    with pytest.raises(ModelError, match="smaller than one chunk"):
        EdgeParams(100, 64e6)
    lat = np.array([[0, np.inf], [np.inf, 0]])
    with pytest.raises(ModelError, match="not connected"):
        Network(("A", "B"), lat, GBIT10)
    with pytest.raises(ModelError, match="unknown site"):
        three_sites().index("XYZ")
    with pytest.raises(ModelError, match="bandwidth must be positive"):
        Network(("A", "B"), np.zeros((2, 2)), 0)


@settings(max_examples=30, deadline=None)
@given(case=wan_and_schedule(), mem=st.floats(1e5, 1e9), scale=st.floats(1e-3, 1.0))
def test_scaling_rate_memory_size_and_chunk_together_keeps_every_time(case, mem, scale) -> None:
    """DESIGN §6: the emulation scales bandwidth down and memory with it; with S and the chunk scaled
    too, the model predicts the same times, so an emulated crossover maps back to the real one."""
    net, rounds = case
    mix = consensus(net.n, rounds)
    real = schedule_time(TimingCache(net, EdgeParams(mem, 64e6)), rounds, mix)
    small = Network(net.names, net.latency_s, net.bandwidth_bps * scale)
    edge = EdgeParams(mem * scale, 64e6 * scale, chunk_bytes=256 * scale)
    emulated = schedule_time(TimingCache(small, edge), rounds, mix)
    assert emulated == pytest.approx(real, rel=1e-9) or (np.isinf(real) and np.isinf(emulated))
