"""Secure aggregation: X25519 key agreement over a board, pairwise masks that cancel exactly in the
wrap-around sum, masked contributions that look nothing like the data, and whole allreduces (int32 and
float32) whose results are the same with and without masks."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from edge.protocol import INC_LANES, KIND_SUM
from edge.secure import KeyExchangeError, PairwiseMasks, masked, publish_and_collect
from tests.edge.test_formats import lockstep_allreduce


def agree(board: Path, n: int, tenant: int = 1, epoch: int = 7) -> list[PairwiseMasks]:
    out: list = [None] * n

    def one(rank: int) -> None:
        key, peers = publish_and_collect(board, rank, n, timeout_s=10)
        out[rank] = PairwiseMasks(key, peers, rank, tenant, epoch)

    threads = [threading.Thread(target=one, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_masks_cancel_in_the_sum_and_hide_each_contribution(tmp_path: Path) -> None:
    masks = agree(tmp_path, 5)
    rng = np.random.default_rng(0)
    data = [rng.integers(0, 1000, size=(40, INC_LANES), dtype=np.uint32) for _ in range(5)]
    sent = [d + m.next(40) for d, m in zip(data, masks, strict=True)]
    assert np.array_equal(np.sum(sent, axis=0, dtype=np.uint32), np.sum(data, axis=0, dtype=np.uint32))
    for d, s in zip(data, sent, strict=True):
        assert np.mean(d == s) < 0.01  # what a switch sees is not the data
        assert s.max() > 2**31  # uniformly spread over 32 bits, not small values like the data
    # the next call's masks are fresh and still cancel
    again = [m.next(3) for m in masks]
    assert not np.array_equal(again[0], sent[0][:3] - data[0][:3])
    assert not np.any(np.sum(again, axis=0, dtype=np.uint32))


def test_masks_depend_on_the_job_generation(tmp_path: Path) -> None:
    a = agree(tmp_path / "a", 2, epoch=1)
    b = agree(tmp_path / "b", 2, epoch=2)
    assert not np.array_equal(a[0].next(1), b[0].next(1))


def test_a_missing_peer_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KeyExchangeError, match=r"rank\(s\) \[1, 2\]"):
        publish_and_collect(tmp_path, 0, 3, timeout_s=0.2)


@pytest.mark.parametrize("mode", ["int32", "float32"])
def test_a_masked_allreduce_gives_the_unmasked_result(tmp_path: Path, mode: str) -> None:
    n = 4
    masks = agree(tmp_path, n)
    rng = np.random.default_rng(3)
    if mode == "int32":
        inputs = [rng.integers(-(2**20), 2**20, size=700, dtype=np.int32) for _ in range(n)]
    else:
        inputs = [rng.standard_normal(700).astype(np.float32) for _ in range(n)]
    inputs[1][5] = np.inf if mode == "float32" else inputs[1][5]
    seen: list[np.ndarray] = []

    def through_masks(rank: int, reduce):  # type: ignore[no-untyped-def]
        def switches(lanes: np.ndarray, kind: int) -> np.ndarray:
            if kind == KIND_SUM:
                seen.append(lanes)  # what the switches are handed
            return reduce(lanes, kind)

        return masked(switches, masks[rank])

    plain, secure = lockstep_allreduce(inputs, mode), lockstep_allreduce(inputs, mode, through_masks)
    for a, b in zip(plain, secure, strict=True):
        np.testing.assert_array_equal(a, b)
    assert seen and all(s.max() > 2**31 for s in seen)
