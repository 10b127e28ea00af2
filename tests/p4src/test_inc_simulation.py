"""Randomised end-to-end runs of the INC protocol in an in-process network (tests/p4src/inc_sim.py):
p4src/inc.p4 on p4kit's switches over a three-level tree, installed by the controller's planner and
installer over P4Runtime, two tenants sharing hosts and switches, one to three slots per tenant (so
every cell and its shadow copy is reused many times), 30 % loss, 30 % duplication and heavy reordering
on every link. Every worker's every sum must be exact."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edge import formats
from edge.protocol import INC_LANES, chunk_space
from edge.worker import IncJob
from tests.p4src.inc_sim import LinkModel, SimNetwork, SimWorker, chain_fabric

SITES = {"S1": 2, "S2": 1, "S3": 0, "S4": 2}  # the tree over S1, S2, S4 runs through S3: three levels
TENANT_HOSTS = {1: ["S1h1", "S1h2", "S2h1", "S4h1", "S4h2"], 2: ["S1h1", "S2h1", "S4h2"]}


def run(
    tmp_path: Path,
    seed: int,
    slots: dict[int, int],
    model: LinkModel,
    chunks: tuple[int, ...],
    before_wrap: int | None = None,
) -> SimNetwork:
    """`before_wrap`: the workers start that many chunk numbers before their chunk space wraps to 0."""
    fabric = chain_fabric(SITES)
    net = SimNetwork(fabric, model, seed)
    net.start_switches()
    try:
        plans = net.install(tmp_path, [(t, hosts, slots[t]) for t, hosts in TENANT_HOSTS.items()])
        depth = {p.tenant: max(len(tree.nodes) for tree in p.trees[0]) for p in plans}
        assert depth[1] == 4, "the test wants a tree that spans all four switches (three levels of workers)"
        rng = np.random.default_rng(seed)
        inputs: dict[tuple[int, str], list[np.ndarray]] = {}
        for plan in plans:
            for host in TENANT_HOSTS[plan.tenant]:
                spec = plan.worker_spec(host, stall_timeout_s=3600.0)
                sw, att = fabric.host(host)
                calls = [rng.integers(-(2**31), 2**31, size=(n, INC_LANES), dtype=np.int64) for n in chunks]
                inputs[(plan.tenant, host)] = calls
                lanes = [formats.int32_to_lanes(c.astype(np.int32)) for c in calls]
                w = SimWorker(
                    host, plan.tenant, att.ip, att.mac, sw.name, att.port, IncJob.from_spec(spec), lanes
                )
                if before_wrap is not None:
                    w.next_chunk = chunk_space(spec.nslots) - before_wrap
                net.add_worker(w)
        net.run()
        for (tenant, host), calls in inputs.items():
            w = net.workers[(host, tenant)]
            assert len(w.results) == len(calls), f"{host} of tenant {tenant} did not finish"
            peers = [inputs[(tenant, h)] for h in TENANT_HOSTS[tenant]]
            for i, got in enumerate(w.results):
                want = np.sum([p[i].astype(np.int32).view(np.uint32) for p in peers], axis=0, dtype=np.uint32)
                np.testing.assert_array_equal(got, want, err_msg=f"{host} tenant {tenant} call {i}")
        return net
    finally:
        net.close()


@pytest.mark.parametrize(
    ("seed", "slots", "before_wrap"),
    [(1, {1: 1, 2: 3}, None), (2, {1: 2, 2: 1}, None), (3, {1: 3, 2: 2}, 11)],
)
def test_exact_sums_under_loss_duplication_and_reordering(
    tmp_path: Path, seed: int, slots: dict[int, int], before_wrap: int | None
) -> None:
    """The third case starts 11 chunk numbers before the wrap (3 slots: a chunk space that is not 2^32)."""
    model = LinkModel(loss=0.3, duplicate=0.3, jitter_s=0.15)
    net = run(tmp_path, seed, slots, model, chunks=(24, 9), before_wrap=before_wrap)
    retransmitted = sum(w.stats.retransmissions for w in net.workers.values())
    assert retransmitted > 0 and net.forwarded > 0


def test_lossless_run_needs_no_retransmission(tmp_path: Path) -> None:
    """The control case: the same network without faults sends every chunk once."""
    net = run(tmp_path, 7, {1: 2, 2: 2}, LinkModel(), chunks=(16,))
    assert all(w.stats.retransmissions == 0 for w in net.workers.values())
    assert all(w.stats.packets_sent == 16 for w in net.workers.values())
