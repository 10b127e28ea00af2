"""The training loop over real host collectives on loopback (three workers as threads, TCP between them):
with the exact format the ring and the hierarchical allreduce give bit-identical training; with float32
they differ only by rounding; local steps synchronise every K steps."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from edge.ring import Peer
from edge.training.comms import HierComm, RingComm, check_strategy
from edge.training.loop import TrainConfig, TrainResult, train
from tests.localports import free_port_block

WORKERS = 3
SITES = ["A", "A", "B"]  # two workers share a site: the hierarchical algorithm has a local phase


def _run(strategy: str, cfg: TrainConfig) -> list[TrainResult]:
    peers = [Peer(r, "127.0.0.1") for r in range(WORKERS)]
    port = free_port_block(WORKERS)  # ranks listen on port + rank
    comms = []

    def one(rank: int) -> TrainResult:
        if strategy == "ring":
            comm = RingComm(rank, peers, port=port, timeout_s=20)
        else:
            comm = HierComm(rank, peers, SITES, port=port, timeout_s=20)
        comms.append(comm)
        try:
            return train(cfg, rank, WORKERS, comm.sum)
        finally:
            comm.close()

    with ThreadPoolExecutor(WORKERS) as pool:
        return [f.result(timeout=120) for f in [pool.submit(one, r) for r in range(WORKERS)]]


def _curve(res: TrainResult) -> list[tuple[float, float]]:
    return [(s.loss, s.accuracy) for s in res.steps]


def test_exact_format_gives_identical_training_for_ring_and_hierarchical() -> None:
    cfg = TrainConfig(steps=25, fmt="exact")
    ring, hier = _run("ring", cfg), _run("hierarchical", cfg)
    digests = {r.params_sha256 for r in ring + hier}
    assert len(digests) == 1  # all six workers of both runs hold the very same parameters
    assert _curve(ring[0]) == _curve(hier[0]) == _curve(ring[2])
    assert ring[0].steps[-1].accuracy >= 0.85  # it learns: 10 classes, chance is 0.1
    assert ring[0].steps[-1].loss < 0.5 * ring[0].steps[0].loss
    assert all(s.clipped == 0 for s in ring[0].steps)
    assert ring[0].time_to(0.5) is not None and ring[0].time_to(1.01) is None


def test_float32_curves_differ_only_by_rounding() -> None:
    cfg = TrainConfig(steps=15, fmt="float32")
    ring, hier = _run("ring", cfg), _run("hierarchical", cfg)
    assert len({r.params_sha256 for r in ring}) == 1  # within a run every worker holds the same bits
    a, b = np.array(_curve(ring[0])), np.array(_curve(hier[0]))
    np.testing.assert_allclose(a[:, 0], b[:, 0], rtol=1e-5)


def test_local_steps_synchronise_every_k_steps() -> None:
    cfg = TrainConfig(steps=12, local_steps=4, fmt="exact")
    res = _run("ring", cfg)
    assert [s.step for s in res[0].steps if s.synced] == [3, 7, 11]
    assert len({r.params_sha256 for r in res}) == 1  # the last step synchronised everyone
    assert res[0].steps[-1].accuracy > 0.5


def test_unknown_strategies_are_refused_with_the_reason() -> None:
    for name in ("ring", "hierarchical", "mpi", "core-tree", "edge-cliques"):
        check_strategy(name)
    with pytest.raises(ValueError, match="unknown strategy 'tree'"):
        check_strategy("tree")
    with pytest.raises(ValueError, match="at least 1"):
        TrainConfig(steps=0).check()


def test_added_compute_changes_the_times_not_the_curve() -> None:
    plain = _run("ring", TrainConfig(steps=4, fmt="exact"))
    slow = _run("ring", TrainConfig(steps=4, fmt="exact", compute_ms=60, compute_scale=3))
    assert plain[0].params_sha256 == slow[0].params_sha256
    assert all(s.compute_s >= 0.06 for s in slow[0].steps)
    assert slow[0].compute_s > plain[0].compute_s + 0.2
