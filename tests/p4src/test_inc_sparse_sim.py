"""Sparse allreduces (edge.sparse) through real p4kit switches in the simulated network
(tests/p4src/inc_sim.py), with loss, duplication and reordering, over a four-switch chain whose tree has a
transit switch: exact sums for block-sparse inputs whose supports overlap partly, all-zero and all-dense
vectors, sums that wrap int32, empty aggregates counted where the subtree holds nothing, and fewer bytes
on the host links than the dense path would send."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from edge import protocol as P  # noqa: N812 - P mirrors the protocol's constants
from edge import sparse
from tests.p4src.inc_sim import LinkModel, SimNetwork, SimWorker, chain_fabric

SITES = {"S1": 2, "S2": 1, "S3": 0, "S4": 2}
HOSTS = ["S1h1", "S1h2", "S2h1", "S4h1", "S4h2"]
AGG = "TributaryIngress.aggregation."
EMPTY_IN, EMPTY_OUT, COMPLETED = 11, 12, 6


def through_switches(
    tmp_path: Path,
    inputs: list[np.ndarray],
    density: float | None = None,
    slots: int = 16,
    model: LinkModel | None = None,
    seed: int = 3,
    allreduce: Callable[..., object] = sparse.sparse_allreduce,
) -> tuple[list, list[SimWorker], dict[str, list[int]]]:
    """Each worker's (result, report), the workers, and per switch its inc_stats packet counts, for
    `allreduce` (int32 sparse, or float32's sparse.sparse_float_allreduce) over the four-switch chain."""
    fabric = chain_fabric(SITES)
    net = SimNetwork(fabric, model or LinkModel(loss=0.1, duplicate=0.1, jitter_s=0.05), seed)
    net.start_switches()
    try:
        [plan] = net.install(tmp_path, [(1, HOSTS, slots)])
        workers = net.lockstep_workers(plan, HOSTS)
        out = net.lockstep(
            workers,
            lambda rank, reduce: allreduce(reduce, inputs[rank], len(HOSTS), density),
        )
        stats = {
            name: [sw.counter_read(f"{AGG}inc_stats", i)[0] for i in range(16)]
            for name, sw in net.switches.items()
        }
        return out, workers, stats
    finally:
        net.close()


def block_sparse(rng: np.random.Generator, n: int, blocks: list[int], lim: int = 1 << 24) -> np.ndarray:
    x = np.zeros(-(-n // 64) * 64, dtype=np.int32)
    for b in blocks:
        x[b * 64 : (b + 1) * 64] = rng.integers(-lim, lim, size=64, dtype=np.int32)
    return x[:n]


def check_exact(inputs: list[np.ndarray], out: list) -> None:
    exact = np.sum([x.astype(np.int64) for x in inputs], axis=0)
    wrapped = ((exact + 2**31) % 2**32 - 2**31).astype(np.int32)  # int32's wrap-around, as the switch sums
    for result, _ in out:
        assert result.dtype == np.int32 and result.shape == inputs[0].shape
        np.testing.assert_array_equal(result, wrapped)


def test_sparse_sums_are_exact_and_empty_aggregates_leave_where_nothing_is_held(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    n = 64 * 120 - 5  # a tail that is not a whole block
    # S1's two workers share block 3; S2's worker holds only blocks nobody else has; block 100 is held
    # by everyone; the S4 workers hold disjoint blocks; the last block is held (its tail) by one
    supports = [[3, 10, 100], [3, 11, 100], [20, 21, 100], [30, 100], [40, 100, 119]]
    inputs = [block_sparse(rng, n, s) for s in supports]
    out, _workers, stats = through_switches(tmp_path, inputs)
    check_exact(inputs, out)
    reports = [r for _, r in out]
    assert {r.path for r in reports} == {"sparse"}
    union = set().union(*map(set, supports))
    assert all(r.union_blocks == len(union) for r in reports)
    assert [r.own_blocks for r in reports] == [len(s) for s in supports]
    # every worker sent empties for the union's blocks it does not hold
    assert sum(s[EMPTY_IN] for s in stats.values()) > 0
    # the tree's root is S2 (the chain's centre); below it, a switch's aggregate leaves empty for
    # exactly the union's blocks its subtree does not hold: once per block, whatever the loss (a cell
    # completes once; re-sent copies are not counted again)
    s1 = set(supports[0]) | set(supports[1])
    s4 = set(supports[3]) | set(supports[4])
    agreement = sparse.agreement_chunks(120, len(HOSTS))  # int32 chunks too, all with values
    assert stats["S2"][EMPTY_OUT] == 0 and stats["S2"][COMPLETED] == agreement + len(union)
    assert stats["S1"][EMPTY_OUT] == len(union - s1)
    assert stats["S4"][EMPTY_OUT] == stats["S3"][EMPTY_OUT] == len(union - s4)


def test_all_zero_vectors_give_zeros_without_a_data_phase(tmp_path: Path) -> None:
    inputs = [np.zeros(1000, dtype=np.int32) for _ in HOSTS]
    out, _workers, _ = through_switches(tmp_path, inputs, model=LinkModel(loss=0.2))
    check_exact(inputs, out)
    assert all(r.union_blocks == 0 for _, r in out)


def test_dense_input_on_the_sparse_path_and_sums_that_wrap_int32(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    n = 64 * 40
    inputs = [rng.integers(-(2**31), 2**31, size=n, dtype=np.int64).astype(np.int32) for _ in HOSTS]
    inputs[0][:64] = 2**31 - 1  # wraps in every worker's sum
    inputs[1][:64] = 2**31 - 1
    out, _, _ = through_switches(tmp_path, inputs)
    check_exact(inputs, out)
    assert all(r.path == "sparse" and r.union_blocks == 40 for _, r in out)


def test_a_declared_density_that_may_fill_the_vector_goes_dense(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    n = 64 * 30
    inputs = [block_sparse(rng, n, list(rng.choice(30, size=15, replace=False))) for _ in HOSTS]
    out, _workers, stats = through_switches(tmp_path, inputs, density=0.5, model=LinkModel(loss=0.05))
    check_exact(inputs, out)
    assert {r.path for _, r in out} == {"dense"}
    assert sum(s[EMPTY_IN] for s in stats.values()) == 0  # nothing went sparse


@pytest.mark.parametrize("density", [0.02, 0.1])
def test_sparse_sends_fewer_bytes_than_dense_on_the_host_links(tmp_path: Path, density: float) -> None:
    rng = np.random.default_rng(10)
    blocks = 200
    n = 64 * blocks
    k = max(1, int(density * blocks))
    inputs = [block_sparse(rng, n, list(rng.choice(blocks, size=k, replace=False))) for _ in HOSTS]
    clean = LinkModel()  # no loss: the byte counts are those of the protocol alone
    out, workers, _ = through_switches(tmp_path, inputs, density=density, model=clean)
    check_exact(inputs, out)
    union = out[0][1].union_blocks
    for w, (_, report) in zip(workers, out, strict=True):
        own = report.own_blocks
        agreement = w.stats.bytes_sent - own * P.FRAME_LEN - (union - own) * (P.FRAME_OVERHEAD + P.HEADER_LEN)
        # the agreement: one int32 packet per 640 blocks (3-bit fields for 5 workers)
        assert agreement == sparse.agreement_chunks(blocks, len(HOSTS)) * P.FRAME_LEN
        assert w.stats.bytes_sent < 0.25 * blocks * P.FRAME_LEN


def test_the_agreement_packs_fields_whose_sums_never_carry_into_each_other() -> None:
    rng = np.random.default_rng(11)
    for workers in (1, 2, 5, 6, 7, 8, 18, 255, 256):
        held = [rng.random(1000) < 0.9 for _ in range(workers)]
        words = sum(sparse.pack_indicators(h, workers).astype(np.uint64) for h in held) % 2**32
        counts = sparse.unpack_counts(words.astype(np.uint32), 1000, workers)
        np.testing.assert_array_equal(counts, np.sum(held, axis=0))
    assert sparse.agreement_chunks(4096, 6) == 7  # 640 blocks to a packet


def test_choose_path_uses_only_what_every_worker_knows() -> None:
    assert sparse.choose_path(6, 0.01)[0] == "sparse"
    assert sparse.choose_path(6, 0.1)[0] == "sparse"
    assert sparse.choose_path(6, 0.5)[0] == "dense"
    assert sparse.choose_path(6, 1 / 6)[0] == "dense"
    assert sparse.choose_path(6, None)[0] == "sparse"
