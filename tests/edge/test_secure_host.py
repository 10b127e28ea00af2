"""Secure aggregation on the host path: the hierarchical allreduce, the ring and the parameter server over
real TCP sockets on loopback, every worker's lanes masked with pairwise masks (edge.secure.host_allreduce).

What a site leader, a ring neighbour or the parameter server is handed is recorded at the socket (a tap on
the real recv_array, every byte still travels through TCP) and checked against every worker's input: none
of them ever holds another worker's plain vector. The results must be exact and bit-identical with the
unmasked run's, in every number format the INC path masks."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import edge.hierarchical
import edge.ring
from edge import formats
from edge.hierarchical import HierarchicalComm
from edge.protocol import KIND_MAX, KIND_SUM
from edge.ring import Peer, ps_allreduce, ring_allreduce
from edge.secure import PairwiseMasks, host_allreduce, host_lanes
from tests.edge.test_formats import lockstep_allreduce
from tests.edge.test_secure import agree

SITES = ["TYO", "TYO", "NYC", "NYC", "LON", "LON"]  # the 3-site WAN's six workers, two per site


class Tap:
    """Records every array a host receives, per socket, by wrapping the module's real recv_array."""

    def __init__(self, module: object, monkeypatch: pytest.MonkeyPatch) -> None:
        self.got: dict[int, list[np.ndarray]] = {}
        self.lock = threading.Lock()
        real = module.recv_array  # type: ignore[attr-defined]

        def recv_array(sock, dtype):  # type: ignore[no-untyped-def]
            arr = real(sock, dtype)
            with self.lock:
                self.got.setdefault(id(sock), []).append(arr.copy())
            return arr

        monkeypatch.setattr(module, "recv_array", recv_array)

    def all(self) -> list[np.ndarray]:
        """Everything received, every socket."""
        return [a for arrays in self.got.values() for a in arrays]


def inputs(n: int, mode: str, size: int, seed: int = 5) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    if mode == "int32":
        return [rng.integers(-(2**24), 2**24, size=size, dtype=np.int32) for _ in range(n)]
    if mode == "int8":
        return [rng.integers(-128, 128, size=size, dtype=np.int8) for _ in range(n)]
    if mode == "int4":
        return [rng.integers(-8, 8, size=size, dtype=np.int8) for _ in range(n)]
    data = [rng.standard_normal(size).astype(np.float32) for _ in range(n)]
    if mode == "mxint8":  # every 32-element block at its own scale, different per worker
        for d in data:
            d *= np.repeat(np.ldexp(1.0, rng.integers(-8, 9, size=-(-size // 32))), 32)[:size]
    return data


Links = dict[tuple[int, int], int]  # (leader, sender) -> id of the leader's socket from that sender


def hierarchical(
    data: list[np.ndarray], mode: str, masks: list[PairwiseMasks] | None, port: int
) -> tuple[list[np.ndarray], Links]:
    """Every rank's result of one (masked) hierarchical allreduce, and the leaders' connections."""
    n = len(data)
    peers = [Peer(r, "127.0.0.1") for r in range(n)]
    with ThreadPoolExecutor(n) as pool:
        comms = [
            f.result(timeout=30)
            for f in [pool.submit(HierarchicalComm, r, peers, SITES[:n], port, 20) for r in range(n)]
        ]
        try:
            futures = [
                pool.submit(
                    host_allreduce, comms[r].allreduce, data[r], mode, n, None if masks is None else masks[r]
                )
                for r in range(n)
            ]
            links = {
                (c.rank, who): id(sock) for c in comms if c.rank == c.leader for who, sock in c.conns.items()
            }
            return [f.result(timeout=60) for f in futures], links
        finally:
            for c in comms:
                c.close()


def flat_host(
    fn: Callable[..., np.ndarray], data: list[np.ndarray], mode: str, masks: list[PairwiseMasks], port: int
) -> list[np.ndarray]:
    n = len(data)
    peers = [Peer(r, "127.0.0.1") for r in range(n)]

    def one(r: int) -> np.ndarray:
        def call(values: np.ndarray, op: str) -> np.ndarray:
            return fn(values, r, peers, port=port, timeout_s=20, op=op)

        return host_allreduce(call, data[r], mode, n, masks[r])

    with ThreadPoolExecutor(n) as pool:
        return [f.result(timeout=60) for f in [pool.submit(one, r) for r in range(n)]]


def plain_share(seen: np.ndarray, plain: np.ndarray) -> float:
    """The fraction of a received array's values that occur anywhere in a plain vector: near 1 for that
    vector or a part of it, near 0 for a masked one (masked lanes are uniform over 2^32 values)."""
    return float(np.mean(np.isin(seen, plain.reshape(-1))))


def leader_receipts(tap: Tap, links: Links) -> dict[tuple[int, int], list[np.ndarray]]:
    """What each leader received on each connection, keyed (leader, sender), in order."""
    return {key: tap.got.get(sock, []) for key, sock in links.items()}


def test_a_leader_never_holds_a_workers_plain_vector_and_the_sum_is_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = len(SITES)
    data = inputs(n, "int32", 6000)
    lanes = [formats.int32_to_lanes(d) for d in data]
    site_sums = [lanes[i] + lanes[i + 1] for i in (0, 2, 4)]
    tap = Tap(edge.hierarchical, monkeypatch)
    plain, comms = hierarchical(data, "int32", None, 23000)
    # unmasked, a leader holds its member's vector: the check below can tell
    seen_plain = leader_receipts(tap, comms)
    assert plain_share(seen_plain[(0, 1)][0], lanes[1]) == 1.0
    tap.got = {}
    secure, comms = hierarchical(data, "int32", agree(tmp_path, n), 23100)
    want = np.sum(np.array(data, dtype=np.int64), axis=0).astype(np.int32)
    for r in range(n):
        np.testing.assert_array_equal(secure[r], want)
        assert secure[r].tobytes() == plain[r].tobytes()  # bit-identical with the unmasked run
    seen = leader_receipts(tap, comms)
    assert sorted(seen) == [(0, 1), (0, 2), (0, 4), (2, 0), (2, 3), (2, 4), (4, 0), (4, 2), (4, 5)]
    total = formats.int32_to_lanes(want).reshape(-1)
    for (leader, who), arrays in seen.items():
        if who in (leader + 1,):  # its site's member: one masked vector
            assert len(arrays) == 1 and arrays[0].size == total.size
        else:  # another leader: a masked part of its site's sum, then that part of the result (public)
            assert len(arrays) == 2
            assert plain_share(arrays[1], total) == 1.0
            arrays = arrays[:1]
        for got in arrays:
            for plain_lanes in [*lanes, *site_sums]:
                assert plain_share(got, plain_lanes) < 0.01, f"leader {leader} holds plain data from {who}"


def test_a_masked_float32_host_sum_is_the_inc_formats_result_bit_for_bit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = len(SITES)
    data = inputs(n, "float32", 3000)
    data[3][17] = np.inf  # specials travel as counts, as through the switches
    data[0][2000] = np.nan
    unmasked, _ = hierarchical(data, "float32", None, 23200)
    tap = Tap(edge.hierarchical, monkeypatch)
    secure, comms = hierarchical(data, "float32", agree(tmp_path, n), 23300)
    through_switches = lockstep_allreduce(data, "float32")  # the INC path's fixed point
    for r in range(n):
        assert secure[r].tobytes() == through_switches[r].tobytes()
        assert secure[r].tobytes() == unmasked[r].tobytes()
    assert np.isposinf(secure[0][17]) and np.isnan(secure[0][2000])
    finite = np.isfinite(np.sum(data, axis=0))
    np.testing.assert_allclose(secure[0][finite], np.sum(data, axis=0)[finite], atol=1e-4)
    # the fixed-point lanes each worker would send unmasked (under the agreed block exponents)
    blocks = [formats.pad_to_lanes(np.where(np.isfinite(d), d, np.float32(0))) for d in data]
    agreed = np.max([formats.block_exponents(b) for b in blocks], axis=0)
    fixed = [formats.float_to_fixed(b, formats.scale_exponents(agreed, n)) for b in blocks]
    seen = leader_receipts(tap, comms)
    member = seen[(0, 1)]  # the exponent agreement (in the clear, as the switches see it), then the sum
    assert len(member) == 2 and member[0].size < member[1].size
    assert plain_share(member[1][: fixed[1].size], fixed[1]) < 0.01
    for (_leader, who), arrays in seen.items():
        if who % 2 == 0:  # from another leader: agreement part, result part, masked part, result part
            assert len(arrays) == 4
            for f in fixed:
                assert plain_share(arrays[2], f) < 0.01


@pytest.mark.parametrize(("mode", "port"), [("int8", 23400), ("int4", 23500), ("mxint8", 23600)])
def test_narrow_and_mx_modes_masked_on_the_host_path(tmp_path: Path, mode: str, port: int) -> None:
    n = 4
    data = inputs(n, mode, 1000)
    secure, _ = hierarchical(data, mode, agree(tmp_path, n), port)
    unmasked, _ = hierarchical(data, mode, None, port + 50)
    for r in range(n):
        assert secure[r].tobytes() == unmasked[r].tobytes()
    if mode != "mxint8":
        want = np.sum(np.array(data, dtype=np.int64), axis=0)
        np.testing.assert_array_equal(secure[0].astype(np.int64), want)  # widened, never wrapped
    else:
        from edge import mx

        bound = np.repeat(mx.error_bound(mx.agreed_scales(data), n), mx.BLOCK)[:1000]
        exact = np.sum(np.array(data, dtype=np.float64), axis=0)
        assert np.all(np.abs(secure[0].astype(np.float64) - exact) <= bound + np.abs(exact) * 2.0**-24)


@pytest.mark.parametrize(("fn", "port"), [(ring_allreduce, 23700), (ps_allreduce, 23800)])
def test_ring_and_parameter_server_see_only_masked_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fn: Callable[..., np.ndarray], port: int
) -> None:
    n = 5
    for mode in ("int32", "float32"):
        data = inputs(n, mode, 2000, seed=9)
        tap = Tap(edge.ring, monkeypatch)
        got = flat_host(fn, data, mode, agree(tmp_path / mode, n), port)
        if mode == "int32":
            want = np.sum(np.array(data, dtype=np.int64), axis=0).astype(np.int32)
        else:
            want = lockstep_allreduce(data, "float32")[0]
        for r in range(n):
            assert got[r].tobytes() == want.tobytes()
        if mode == "int32":  # every array a host received: masked vectors, masked partial sums, the result
            lanes = [formats.int32_to_lanes(d) for d in data]
            total = formats.int32_to_lanes(want).reshape(-1)
            received = [a for a in tap.all() if plain_share(a, total) < 1.0]
            assert len(received) == (n - 1 if fn is ps_allreduce else n * (n - 1))
            for seen in received:
                for plain_lanes in lanes:
                    assert plain_share(seen, plain_lanes) < 0.01
        port += 50


def test_host_lanes_wraps_sums_and_takes_maxima_and_refuses_packed_formats() -> None:
    rows = [np.array([[2**32 - 1] * 64], dtype=np.uint32), np.array([[2] * 64], dtype=np.uint32)]

    def local(values: np.ndarray, op: str) -> np.ndarray:  # two ranks in one process, in lockstep
        return np.add(*rows) if op == "sum" else np.maximum(*rows)

    reduce = host_lanes(local)
    assert reduce(rows[0], KIND_SUM)[0, 0] == 1  # mod 2^32, as a switch's cell sums
    assert reduce(rows[0], KIND_MAX)[0, 0] == 2**32 - 1
    with pytest.raises(ValueError, match="int32 lanes only"):
        reduce(rows[0], KIND_SUM, 1)
    with pytest.raises(ValueError, match="kind 7"):
        reduce(rows[0], 7)
    with pytest.raises(ValueError, match="sparse"):
        host_allreduce(local, np.zeros(4, dtype=np.int32), "sparse", 2, None)


def test_an_unknown_reduction_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="op must be one of sum, max"):
        ring_allreduce(np.zeros(3, dtype=np.int32), 0, [Peer(0, "127.0.0.1")], op="min")


def test_a_worker_that_drops_out_fails_the_masked_job_everywhere_and_nothing_hangs(tmp_path: Path) -> None:
    """Rank 1 agrees its keys and connects, then leaves before contributing (a crashed process): its masks
    can no longer cancel, and every other rank fails with a connection error within seconds."""
    n = len(SITES)
    data = inputs(n, "int32", 6000)
    masks = agree(tmp_path, n)
    peers = [Peer(r, "127.0.0.1") for r in range(n)]
    with ThreadPoolExecutor(n) as pool:
        comms = [
            f.result(timeout=30)
            for f in [pool.submit(HierarchicalComm, r, peers, SITES, 23900, 20) for r in range(n)]
        ]

        def one(r: int) -> np.ndarray | None:
            with comms[r]:  # closed on the way out, as the runner's process would close them
                if r == 1:
                    return None
                return host_allreduce(comms[r].allreduce, data[r], "int32", n, masks[r])

        futures = [pool.submit(one, r) for r in range(n)]
        for r, f in enumerate(futures):
            if r == 1:
                assert f.result(timeout=30) is None
                continue
            with pytest.raises(OSError):  # ConnectionError: peer closed, or a broken pipe
                f.result(timeout=30)
