"""Sparse float32 allreduces (edge.sparse.sparse_float_allreduce) through real p4kit switches in the
simulated network (tests/p4src/inc_sim.py), with loss, duplication and reordering, over the four-switch
chain whose tree has a transit switch: every element within its bound against a float64 sum with
mixed-scale blocks (and within the float32 mode's), inf and NaN as IEEE addition, all-zero and all-dense
vectors, empty aggregates where a subtree holds nothing, and the dense fallback."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge import formats, sparse
from edge.protocol import INC_LANES, KIND_MAX, KIND_SUM
from tests.p4src import test_inc_sparse_sim as sparse_sim
from tests.p4src.inc_sim import LinkModel, SimWorker

HOSTS = sparse_sim.HOSTS  # the four-switch chain of the int32 sparse simulation
EMPTY_OUT, COMPLETED = 12, 6


def through_switches(
    tmp_path: Path,
    inputs: list[np.ndarray],
    density: float | None = None,
    model: LinkModel | None = None,
    seed: int = 5,
) -> tuple[list, list[SimWorker], dict[str, list[int]]]:
    """Each worker's (result, report), the workers, and per switch its inc_stats packet counts."""
    return sparse_sim.through_switches(
        tmp_path, inputs, density, model=model, seed=seed, allreduce=sparse.sparse_float_allreduce
    )


def block_sparse(rng: np.random.Generator, n: int, blocks: list[int]) -> np.ndarray:
    """Values in the given blocks, each block at its own scale 2^-40 .. 2^40."""
    x = np.zeros(-(-n // 64) * 64, dtype=np.float32)
    for b in blocks:
        x[b * 64 : (b + 1) * 64] = rng.standard_normal(64) * np.ldexp(1.0, int(rng.integers(-40, 41)))
    return x[:n]


def check(inputs: list[np.ndarray], out: list, density: float | None = None) -> None:
    """Every worker the same bits; every finite element within the sparse bound and the float32 mode's;
    every element whose inputs hold inf or NaN as IEEE addition gives it (float64's sum of them)."""
    with np.errstate(invalid="ignore"):
        exact = np.sum([x.astype(np.float64) for x in inputs], axis=0)
    bound = sparse.float_error_bound(inputs, density)
    lanes = [formats.pad_to_lanes(np.where(np.isfinite(x), x, 0).astype(np.float32)) for x in inputs]
    agreed = np.max([formats.block_exponents(x) for x in lanes], axis=0)
    q = formats.quantisation_bound(formats.scale_exponents(agreed, len(inputs)), len(inputs))
    dense_bound = (
        np.repeat(q, INC_LANES)[: exact.size] * (1 + 2.0**-24) + np.abs(exact) * 2.0**-24 + 2.0**-150
    )
    special = ~np.isfinite(exact)
    for result, _ in out:
        assert result.dtype == np.float32 and result.shape == inputs[0].shape
        np.testing.assert_array_equal(result, out[0][0])
        with np.errstate(invalid="ignore"):  # inf - inf where the answer is inf: compared below
            err = np.abs(result.astype(np.float64) - exact)
        bad = np.flatnonzero(~special & ~((err <= bound) & (err <= dense_bound)))
        assert bad.size == 0, (bad[:5], err[bad[:5]], bound[bad[:5]])
        np.testing.assert_array_equal(result[special], exact[special].astype(np.float32))


def test_mixed_scale_blocks_and_specials_through_a_lossy_tree(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    n = 64 * 90 - 3
    # S1's workers share block 3 (at scales 2^60 apart); S2's holds blocks no one else has; block 80 by all
    supports = [[3, 10, 80], [3, 11, 80], [20, 21, 80], [30, 80, 89], [40, 80]]
    inputs = [block_sparse(rng, n, s) for s in supports]
    inputs[0][3 * 64 : 4 * 64] *= 2.0**30
    inputs[1][3 * 64 : 4 * 64] *= 2.0**-30
    inputs[0][10 * 64 + 4] = np.inf  # inf + finite
    inputs[1][80 * 64 + 5] = np.inf  # inf + -inf
    inputs[3][80 * 64 + 5] = -np.inf
    inputs[2][21 * 64 + 9] = np.nan
    out, _workers, stats = through_switches(tmp_path, inputs)
    check(inputs, out)
    r = out[0][0]
    assert r[10 * 64 + 4] == np.inf and np.isnan(r[80 * 64 + 5]) and np.isnan(r[21 * 64 + 9])
    union = set().union(*map(set, supports))
    assert all(rep.path == "sparse" and rep.union_blocks == len(union) for _, rep in out)
    # the root (S2) completes the agreement, the exponent call and the data call (the union and one
    # counts row per block with a special); below it, aggregates leave empty where a subtree holds nothing
    specials = 3  # blocks 10, 21 and 80
    calls = sparse.agreement_chunks(90, 5) + -(-2 * len(union) // 64) + len(union) + specials
    assert stats["S2"][COMPLETED] == calls and stats["S2"][EMPTY_OUT] == 0
    s1 = set(supports[0]) | set(supports[1])
    s4 = set(supports[3]) | set(supports[4])
    # union blocks and specials rows: S1's subtree holds the special in block 10 and in block 80, S4's in 80
    assert stats["S1"][EMPTY_OUT] == len(union - s1) + 1  # block 21's counts row
    assert stats["S4"][EMPTY_OUT] == stats["S3"][EMPTY_OUT] == len(union - s4) + 2  # blocks 10, 21


def test_all_zero_vectors_give_zeros_after_the_agreement_alone(tmp_path: Path) -> None:
    inputs = [np.zeros(1000, dtype=np.float32) for _ in HOSTS]
    out, workers, _ = through_switches(tmp_path, inputs, model=LinkModel(loss=0.2))
    assert all(np.array_equal(r, inputs[0]) and rep.union_blocks == 0 for r, rep in out)
    assert all([kind for _, _, kind, _, _ in w.calls] == [KIND_SUM] for w in workers)


def test_all_dense_vectors_on_the_sparse_path(tmp_path: Path) -> None:
    rng = np.random.default_rng(12)
    n = 64 * 40
    inputs = [(rng.standard_normal(n) * np.repeat(np.ldexp(1.0, rng.integers(-20, 21, 40)), 64)).astype(np.float32)
              for _ in HOSTS]  # fmt: skip
    out, workers, _ = through_switches(tmp_path, inputs)
    check(inputs, out)
    assert all(rep.path == "sparse" and rep.union_blocks == 40 for _, rep in out)
    assert [kind for _, _, kind, _, _ in workers[0].calls] == [KIND_SUM, KIND_MAX, KIND_SUM]


def test_a_density_that_may_fill_the_vector_goes_dense_as_float32(tmp_path: Path) -> None:
    rng = np.random.default_rng(13)
    inputs = [block_sparse(rng, 64 * 30, list(rng.choice(30, size=15, replace=False))) for _ in HOSTS]
    out, workers, stats = through_switches(tmp_path, inputs, density=0.5, model=LinkModel(loss=0.05))
    check(inputs, out, density=0.5)
    assert {rep.path for _, rep in out} == {"dense"}
    assert all(present is None for _, _, _, present, _ in workers[0].calls)
    assert sum(s[EMPTY_OUT] for s in stats.values()) == 0
