"""The hierarchical allreduce over real TCP sockets on loopback: exact int32 sums for several site
layouts (one site, one worker per site, uneven sites), and float32 results identical on every rank."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from edge.hierarchical import hierarchical_allreduce, site_groups
from edge.ring import Peer


def _run(sites: list[str], port: int, dtype, size: int = 1001) -> tuple[list[np.ndarray], list[np.ndarray]]:  # type: ignore[no-untyped-def]
    n = len(sites)
    rng = np.random.default_rng(n)
    if dtype == np.int32:
        data = [rng.integers(-(2**31), 2**31, size=size, dtype=np.int64).astype(np.int32) for _ in range(n)]
    else:
        data = [rng.standard_normal(size).astype(np.float32) for _ in range(n)]
    peers = [Peer(r, "127.0.0.1") for r in range(n)]
    with ThreadPoolExecutor(n) as pool:
        futures = [
            pool.submit(hierarchical_allreduce, data[r], r, peers, sites, port=port, timeout_s=20)
            for r in range(n)
        ]
        return data, [f.result(timeout=30) for f in futures]


def test_site_groups_keep_the_order_of_first_appearance() -> None:
    assert site_groups(["B", "A", "B", "C", "A"]) == [[0, 2], [1, 4], [3]]


@pytest.mark.parametrize(
    ("sites", "port"),
    [
        (["A", "A", "A"], 22000),
        (["A", "B", "C"], 22100),
        (["A", "A", "B", "C", "C", "C"], 22200),
        (["A"], 22300),
    ],
)
def test_int32_sums_are_exact_with_wraparound(sites: list[str], port: int) -> None:
    data, results = _run(sites, port, np.int32)
    expected = np.sum(np.array(data, dtype=np.int64), axis=0).astype(np.int32)
    for res in results:
        np.testing.assert_array_equal(res, expected)


def test_float32_results_are_the_same_on_every_rank() -> None:
    data, results = _run(["A", "B", "A", "C"], 22400, np.float32, size=5000)
    for res in results:
        np.testing.assert_array_equal(res, results[0])
    np.testing.assert_allclose(results[0], np.sum(data, axis=0), rtol=1e-5, atol=1e-5)


def test_fewer_elements_than_sites() -> None:
    data, results = _run(["A", "B", "C"], 22500, np.int32, size=2)
    for res in results:
        np.testing.assert_array_equal(res, np.sum(np.array(data, dtype=np.int64), axis=0).astype(np.int32))
