"""The host-based baselines over real TCP sockets on loopback: results equal numpy's sum."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from edge.ring import Peer, ps_allreduce, ring_allreduce


def _run(fn, n: int, port: int, dtype) -> tuple[list[np.ndarray], list[np.ndarray]]:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(n)
    if dtype == np.int32:
        data = [rng.integers(-(2**31), 2**31, size=1001, dtype=np.int64).astype(np.int32) for _ in range(n)]
    else:
        data = [rng.standard_normal(1001).astype(np.float32) for _ in range(n)]
    peers = [Peer(r, "127.0.0.1") for r in range(n)]
    with ThreadPoolExecutor(n) as pool:
        futures = [pool.submit(fn, data[r], r, peers, port=port, timeout_s=20) for r in range(n)]
        return data, [f.result(timeout=30) for f in futures]


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_ring_int32_is_exact_with_wraparound(n: int) -> None:
    data, results = _run(ring_allreduce, n, 21000 + 10 * n, np.int32)
    expected = np.sum(np.array(data, dtype=np.int64), axis=0).astype(np.int32)  # wraps like int32
    for res in results:
        np.testing.assert_array_equal(res, expected)


def test_ring_float32_close_to_numpy() -> None:
    data, results = _run(ring_allreduce, 4, 21100, np.float32)
    for res in results:
        np.testing.assert_allclose(res, np.sum(data, axis=0), rtol=1e-5, atol=1e-5)


def test_parameter_server_int32_is_exact() -> None:
    data, results = _run(ps_allreduce, 4, 21200, np.int32)
    expected = np.sum(np.array(data, dtype=np.int64), axis=0).astype(np.int32)
    for res in results:
        np.testing.assert_array_equal(res, expected)
