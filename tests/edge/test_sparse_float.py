"""Sparse float32 (edge.sparse.sparse_float_allreduce) on a lane reduction that does what the switches do,
empties included: the encoding of the exponent call (0 where a block is absent), the calls it makes and
their sizes, every element within its stated bound (and the float32 mode's) against a float64 sum with
mixed-scale blocks, inf and NaN as IEEE addition, all-zero and all-dense inputs, the dense fallback and
its cost rule, and bad input refused before anything is sent."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edge import formats, sparse
from edge.protocol import FMT_INT32, INC_LANES, KIND_MAX, KIND_SUM
from tests.lockstep import run_ranks


class FakeSwitches:
    """A lockstep lane reduction for n workers: wrap-around sum or unsigned max of what every worker
    posted; an empty row (present False) adds nothing, and a sparse row's result must count exactly the
    workers that sent values (the count the worker library checks). Records every call."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.barrier = threading.Barrier(n)
        self.lock = threading.Lock()
        self.posted: dict[int, list] = {}
        self.calls: list[tuple[int, int, int]] = []  # (kind, rows, rows with values) of rank 0's calls

    def reducer(self, rank: int):  # type: ignore[no-untyped-def]
        seq = [0]

        def reduce(lanes, kind, fmt=FMT_INT32, present=None, counts=None):  # type: ignore[no-untyped-def]
            assert fmt == FMT_INT32 and lanes.dtype == np.uint32 and lanes.shape[1] == INC_LANES
            call = seq[0]
            seq[0] += 1
            mask = np.ones(lanes.shape[0], dtype=bool) if present is None else np.asarray(present)
            with self.lock:
                self.posted.setdefault(call, [None] * self.n)[rank] = (lanes, mask, counts, kind)
                if rank == 0:
                    self.calls.append((kind, lanes.shape[0], int(mask.sum())))
            self.barrier.wait()
            entries = self.posted[call]
            assert len({e[0].shape for e in entries}) == 1 and len({e[3] for e in entries}) == 1
            masks = np.array([e[1] for e in entries])
            rows = np.array([np.where(e[1][:, None], e[0], 0) for e in entries], dtype=np.uint32)
            out = rows.max(axis=0) if kind == KIND_MAX else rows.sum(axis=0, dtype=np.uint32)
            if counts is not None:  # what ReduceStream checks in every result's header
                np.testing.assert_array_equal(masks.sum(axis=0), counts)
            self.barrier.wait()
            return out

        return reduce


def run(inputs: list[np.ndarray], density: float | None = None) -> tuple[list, FakeSwitches]:
    net = FakeSwitches(len(inputs))
    out = run_ranks(
        len(inputs),
        lambda rank: sparse.sparse_float_allreduce(net.reducer(rank), inputs[rank], len(inputs), density),
        net.barrier,
    )
    return out, net


def block_sparse(
    rng: np.random.Generator, n: int, blocks: list[int], lo: int = -30, hi: int = 30
) -> np.ndarray:
    """float32 values in the given 64-value blocks, each block at its own scale 2^lo .. 2^hi."""
    x = np.zeros(-(-n // 64) * 64, dtype=np.float32)
    for b in blocks:
        scale = np.ldexp(1.0, int(rng.integers(lo, hi + 1)))
        x[b * 64 : (b + 1) * 64] = (rng.standard_normal(64) * scale).astype(np.float32)
    return x[:n]


def float32_mode_bound(inputs: list[np.ndarray]) -> np.ndarray:
    """The float32 mode's stated bound for the same inputs (all workers' exponents, n workers' headroom)."""
    lanes = [formats.pad_to_lanes(x.astype(np.float32)) for x in inputs]
    agreed = np.max([formats.block_exponents(x) for x in lanes], axis=0)
    n = len(inputs)
    q = np.repeat(formats.quantisation_bound(formats.scale_exponents(agreed, n), n), INC_LANES)
    exact = np.sum([x.astype(np.float64) for x in lanes], axis=0).reshape(-1)
    return (q + (np.abs(exact) + q) * 2.0**-24 + 2.0**-150)[: inputs[0].size]


def check(inputs: list[np.ndarray], out: list, density: float | None = None) -> np.ndarray:
    exact = np.sum([x.astype(np.float64) for x in inputs], axis=0)
    bound = sparse.float_error_bound(inputs, density)
    for result, _ in out:
        assert result.dtype == np.float32 and result.shape == inputs[0].shape
        np.testing.assert_array_equal(result, out[0][0])  # every worker holds the same bits
        err = np.abs(result.astype(np.float64) - exact)
        bad = np.flatnonzero(~(err <= bound))
        assert bad.size == 0, (bad[:5], err[bad[:5]], bound[bad[:5]])
    return bound


def test_the_exponent_call_sends_zero_for_absent_blocks_and_flags_specials() -> None:
    rows = np.zeros((4, 64), dtype=np.float32)
    rows[0, 5] = 3.0  # held: |x| < 2^2
    rows[1, 0] = np.nan  # held, special, no finite value
    rows[2, :] = -0.0  # negative zeros are zero: not held
    rows[3, 7] = 1e-30
    held = sparse.float_support(rows)
    assert held.tolist() == [True, True, False, True]
    entry = sparse.union_exponents(rows, held)
    bias = formats.EXPONENT_BIAS
    assert entry[:4].tolist() == [
        bias + 2,
        0,  # held for its NaN, but no finite value to scale
        0,
        bias + int(np.frexp(np.float64(np.float32(1e-30)))[1]),
    ]
    assert entry[4:].tolist() == [0, 1, 0, 0]
    # the smallest real exponent (a subnormal's) is still above an absent block's 0
    assert formats.block_exponents(np.full((1, 64), np.float32(1e-45)))[0] > 0


def test_headroom_is_the_bits_a_sum_of_that_many_values_needs() -> None:
    ns = np.arange(1, 300)
    want = [int(np.ceil(np.log2(n))) for n in ns]
    assert formats.headroom_bits(ns).tolist() == want
    assert [formats.headroom_bits(int(n)) for n in ns] == want


def test_mixed_scale_blocks_are_within_the_bound_and_the_calls_carry_the_union_only() -> None:
    rng = np.random.default_rng(1)
    n = 64 * 200 - 9  # a tail that is not a whole block
    supports = [[1, 7, 50, 199], [7, 8, 50], [50, 120], [3, 50, 121, 199], [150]]
    inputs = [block_sparse(rng, n, s) for s in supports]
    inputs[1][7 * 64 : 8 * 64] *= 2.0**40  # block 7: one worker's values 2^40 times another's
    out, net = run(inputs)
    bound = check(inputs, out)
    assert np.all(bound <= float32_mode_bound(inputs))  # the float32 mode's bound holds too
    union = sorted(set().union(*map(set, supports)))
    assert all(r.path == "sparse" and r.union_blocks == len(union) for _, r in out)
    # agreement (one packet), exponents and flags (2 lanes per union block), data (values where held)
    assert net.calls == [
        (KIND_SUM, sparse.agreement_chunks(200, 5), 1),
        (KIND_MAX, -(-2 * len(union) // 64), 1),
        (KIND_SUM, len(union), len(supports[0])),
    ]
    # outside the union: exact zeros
    outside = np.ones(200 * 64, dtype=bool)
    for b in union:
        outside[b * 64 : (b + 1) * 64] = False
    assert np.all(out[0][0][outside[:n]] == 0)


def test_a_block_held_by_few_gets_their_headroom_not_the_jobs() -> None:
    """A block only one worker of eight holds is summed at full int32 precision: its bound is 64 times
    tighter than the float32 mode's for the same inputs (one half unit, not eight, each 2^3 times
    smaller), and the result that close."""
    rng = np.random.default_rng(2)
    inputs = [np.zeros(640, dtype=np.float32) for _ in range(8)]
    inputs[3][64:128] = (rng.standard_normal(64) * 1e-20).astype(np.float32)
    inputs[0][:64] = rng.standard_normal(64).astype(np.float32)
    inputs[5][:64] = rng.standard_normal(64).astype(np.float32)
    out, _ = run(inputs)
    bound = check(inputs, out)
    dense = float32_mode_bound(inputs)
    exact = np.sum(inputs, axis=0, dtype=np.float64)

    def quantum(b: np.ndarray) -> float:  # the bound less the float32 result's own rounding
        return float((b[64] - 2.0**-150 - abs(exact[64]) * 2.0**-24) / (1 + 2.0**-24))

    # one holder's half unit at 31 bits against eight workers' half units at 28 bits
    assert quantum(bound) * 64 == pytest.approx(quantum(dense), rel=1e-9)
    assert np.max(np.abs(out[0][0][64:128] - exact[64:128]) / np.abs(exact[64:128])) < 2.0**-23


def test_inf_and_nan_as_ieee_addition_and_the_block_s_other_values_intact() -> None:
    rng = np.random.default_rng(3)
    n = 64 * 30
    inputs = [block_sparse(rng, n, [2, 5, 9]) for _ in range(4)]
    inputs[0][2 * 64 + 1] = np.inf
    inputs[2][2 * 64 + 1] = 1.0
    inputs[1][5 * 64 + 3] = np.inf
    inputs[3][5 * 64 + 3] = -np.inf
    inputs[2][20 * 64 + 7] = np.nan  # a block only this worker holds, only a NaN in it
    inputs[3][9 * 64] = -np.inf
    out, net = run(inputs)
    r = out[0][0]
    assert r[2 * 64 + 1] == np.inf and np.isnan(r[5 * 64 + 3]) and np.isnan(r[20 * 64 + 7])
    assert r[9 * 64] == -np.inf
    special = [2 * 64 + 1, 5 * 64 + 3, 20 * 64 + 7, 9 * 64]
    finite = np.ones(n, dtype=bool)
    finite[special] = False
    clean = [np.where(finite, x, 0).astype(np.float32) for x in inputs]
    exact = np.sum([x.astype(np.float64) for x in clean], axis=0)
    bound = sparse.float_error_bound(inputs)
    assert np.all(np.abs(r[finite] - exact[finite]) <= bound[finite])
    assert all(np.array_equal(o[0], r, equal_nan=True) for o in out)
    assert out[0][1].union_blocks == 4
    # the data call: 4 union blocks and one row of per-element counts for each of the 4 special blocks
    assert net.calls[-1][:2] == (KIND_SUM, 8)


def test_all_zero_vectors_cost_the_agreement_only() -> None:
    inputs = [np.zeros(1000, dtype=np.float32) for _ in range(3)]
    inputs[1][:64] = -0.0
    out, net = run(inputs)
    assert all(
        np.array_equal(r, np.zeros(1000, dtype=np.float32)) and rep.union_blocks == 0 for r, rep in out
    )
    assert [c[0] for c in net.calls] == [KIND_SUM]


def test_all_dense_input_on_the_sparse_path() -> None:
    rng = np.random.default_rng(4)
    inputs = [
        (rng.standard_normal(64 * 40) * 10.0 ** rng.integers(-5, 6)).astype(np.float32) for _ in range(5)
    ]
    out, net = run(inputs)
    check(inputs, out)
    assert all(rep.path == "sparse" and rep.union_blocks == 40 for _, rep in out)
    assert net.calls[-1] == (KIND_SUM, 40, 40)


def test_a_density_that_may_fill_the_vector_runs_the_float32_mode_itself() -> None:
    rng = np.random.default_rng(5)
    inputs = [block_sparse(rng, 64 * 30, list(rng.choice(30, size=15, replace=False))) for _ in range(4)]
    out, net = run(inputs, density=0.5)
    check(inputs, out, density=0.5)
    assert {rep.path for _, rep in out} == {"dense"}
    # the float32 mode's own calls: exponents and flags of every block, then every block's values
    assert net.calls == [(KIND_MAX, 1, 1), (KIND_SUM, 30, 30)]
    net2 = FakeSwitches(4)
    dense: list = [None] * 4
    threads = [
        threading.Thread(
            target=lambda r=r: dense.__setitem__(
                r, formats.allreduce_with(net2.reducer(r), inputs[r], "float32", 4)
            )
        )
        for r in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(out[0][0], dense[0])  # bit for bit the float32 mode


@pytest.mark.parametrize("workers", [2, 3, 6, 18, 64])
def test_the_cost_rule_is_the_byte_comparison_with_the_exponent_call_in_both(workers: int) -> None:
    """Sparse exactly when agreement + worst union x (1 + 2/64) is below dense's 1 + 2/64 (in dense
    int32 packets per block), so it never goes dense where sparse must save, nor sparse where it cannot."""
    x = sparse.FLOAT_EXPONENT_LANES / 64
    for density in np.linspace(0.0, 1.0, 401):
        path, _ = sparse.choose_path(workers, float(density), sparse.FLOAT_EXPONENT_LANES)
        sparse_cost = sparse.agreement_cost(workers) + min(1.0, workers * density) * (1 + x)
        assert (path == "sparse") == (sparse_cost < 1 + x), (workers, density)
    assert sparse.choose_path(6, 0.01, 2)[0] == sparse.choose_path(6, 0.1, 2)[0] == "sparse"
    assert sparse.choose_path(6, 0.5, 2)[0] == "dense"
    assert sparse.choose_path(6, None, 2)[0] == "sparse"


def test_bad_input_is_refused_before_anything_is_sent() -> None:
    calls: list = []

    def reduce(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(args)
        raise AssertionError("nothing may be sent")

    with pytest.raises(formats.FormatError, match="numeric"):
        sparse.sparse_float_allreduce(reduce, np.array(["a", "b"]), 2)
    with pytest.raises(ValueError, match="sparse mode must be one of"):
        sparse.allreduce_mode("sparse-float16", reduce, np.zeros(3), 2)
    assert calls == []


def test_the_runner_s_inputs_hold_their_blocks_at_scales_of_their_own() -> None:
    from edge.runner import expected_sum, worker_data

    x = worker_data(3, 1, 64 * 1000 - 5, "sparse-float32", 0.05)
    assert x.dtype == np.float32 and x.size == 64 * 1000 - 5
    rows = formats.pad_to_lanes(x)
    held = sparse.float_support(rows)
    assert held.sum() == 50
    peaks = np.abs(rows[held]).max(axis=1)
    assert peaks.max() / peaks.min() > 2.0**20  # blocks at scales far apart
    total = expected_sum(3, [0, 1, 2], x.size, "sparse-float32", 0.05)
    assert total.dtype == np.float64
    np.testing.assert_array_equal(
        total, sum(worker_data(3, r, x.size, "sparse-float32", 0.05).astype(np.float64) for r in range(3))
    )
    # the int32 sparse inputs choose the same blocks
    ints = worker_data(3, 1, x.size, "sparse", 0.05)
    np.testing.assert_array_equal(sparse.block_support(formats.int32_to_lanes(ints)), held)


@settings(max_examples=25, deadline=None)
@given(
    workers=st.integers(1, 7),
    blocks=st.integers(1, 12),
    fill=st.floats(0.0, 1.0),
    declared=st.one_of(st.none(), st.floats(0.0, 1.0)),
    seed=st.integers(0, 2**31),
)
def test_any_supports_scales_and_declared_density_stay_within_the_bound(
    workers: int, blocks: int, fill: float, declared: float | None, seed: int
) -> None:
    """Whatever each worker holds (the declared density may be far from the truth: it only picks the path),
    every element is within its bound, outside the union exactly zero, and every worker has the same bits."""
    rng = np.random.default_rng(seed)
    n = 64 * blocks - int(rng.integers(0, 64))
    inputs = []
    for _ in range(workers):
        held = [b for b in range(blocks) if rng.random() < fill]
        inputs.append(block_sparse(rng, n, held, lo=-60, hi=60))
    out, _ = run(inputs, declared)
    check(inputs, out, declared)
    union = np.zeros(n, dtype=bool)
    for x in inputs:
        union |= np.repeat(sparse.float_support(formats.pad_to_lanes(x)), 64)[:n]
    assert np.all(out[0][0][~union] == 0)


def test_holders_at_the_top_of_their_exponent_never_overflow_int32() -> None:
    """Every holder's block at just below 2^e, all of one sign: the worst case for the headroom, which is
    the holders' ceil(log2 c) bits (3 for 5, 0 for 1), so the int32 sum cannot wrap."""
    top = np.float32(np.nextafter(np.float32(2.0**10), np.float32(0)))
    inputs = [np.zeros(64 * 3, dtype=np.float32) for _ in range(5)]
    for x in inputs:
        x[:64] = top  # block 0: all five hold it
    inputs[2][64:128] = -top  # block 1: one holder
    out, _ = run(inputs)
    check(inputs, out)
    assert np.all(out[0][0][:64] == np.float32(5 * float(top)))
    assert np.all(out[0][0][64:128] == -top)
