"""Packed int8 and int4 through real p4kit switches (tests/p4src/inc_sim.py): the workers pack 4 or 8
chunks per packet, the first switch widens them into its 32-bit cells, partial sums and results travel
wide, and every sum must be exact - under 30 % loss, duplication and reordering, over a three-level
tree, with two tenants, with calls of different formats reusing the same cells one after the other,
and across the chunk-number wrap."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edge import formats, lowprec
from edge.protocol import FMT_INT4, FMT_INT8, FMT_INT32, INC_LANES, chunk_space
from edge.worker import IncJob
from tests.p4src.inc_sim import LinkModel, SimNetwork, SimWorker, chain_fabric

SITES = {"S1": 2, "S2": 1, "S3": 0, "S4": 2}
TENANT_HOSTS = {1: ["S1h1", "S1h2", "S2h1", "S4h1", "S4h2"], 2: ["S1h1", "S2h1", "S4h2"]}
# per tenant: the (format, values per worker) of its successive calls; tenant 2's 4 slots allow int8 only
CALLS = {
    1: [(FMT_INT8, 2000), (FMT_INT4, 3000), (FMT_INT32, 640), (FMT_INT4, 512)],
    2: [(FMT_INT8, 1100), (FMT_INT32, 130), (FMT_INT8, 256)],
}
LIMIT = {FMT_INT8: 127, FMT_INT4: 7, FMT_INT32: 2**24}


def values(rng: np.random.Generator, fmt: int, n: int) -> np.ndarray:
    """Extremes included: every narrow sum of these overflows the narrow type."""
    lim = LIMIT[fmt]
    x = rng.integers(-lim - 1, lim + 1, size=n, dtype=np.int64)
    x[:64] = -lim - 1
    x[64:128] = lim
    return x


def lanes_of(x: np.ndarray, fmt: int) -> np.ndarray | tuple[np.ndarray, int]:
    if fmt == FMT_INT32:
        return formats.int32_to_lanes(x.astype(np.int32))
    return lowprec.pack(x, fmt), fmt


def sums_of(rows: np.ndarray, fmt: int, n: int) -> np.ndarray:
    if fmt == FMT_INT32:
        return formats.lanes_to_int32(rows, n).astype(np.int64)
    return lowprec.unpack(rows, fmt, n).astype(np.int64)


def run(
    tmp_path: Path, seed: int, slots: dict[int, int], model: LinkModel, before_wrap: int | None
) -> SimNetwork:
    fabric = chain_fabric(SITES)
    net = SimNetwork(fabric, model, seed)
    net.start_switches()
    try:
        plans = net.install(tmp_path, [(t, hosts, slots[t]) for t, hosts in TENANT_HOSTS.items()])
        rng = np.random.default_rng(seed)
        inputs: dict[tuple[int, str], list[np.ndarray]] = {}
        for plan in plans:
            for host in TENANT_HOSTS[plan.tenant]:
                spec = plan.worker_spec(host, stall_timeout_s=3600.0)
                sw, att = fabric.host(host)
                xs = [values(rng, fmt, n) for fmt, n in CALLS[plan.tenant]]
                inputs[(plan.tenant, host)] = xs
                calls = [lanes_of(x, fmt) for x, (fmt, _) in zip(xs, CALLS[plan.tenant], strict=True)]
                w = SimWorker(
                    host, plan.tenant, att.ip, att.mac, sw.name, att.port, IncJob.from_spec(spec), calls
                )
                if before_wrap is not None:
                    w.next_chunk = chunk_space(spec.nslots) - before_wrap
                net.add_worker(w)
        net.run()
        for (tenant, host), xs in inputs.items():
            w = net.workers[(host, tenant)]
            assert len(w.answers) == len(xs), f"{host} of tenant {tenant} did not finish"
            for i, ((fmt, n), got) in enumerate(zip(CALLS[tenant], w.answers, strict=True)):
                want = np.sum([inputs[(tenant, h)][i] for h in TENANT_HOSTS[tenant]], axis=0)
                np.testing.assert_array_equal(
                    sums_of(got, fmt, n), want, err_msg=f"{host} t{tenant} call {i}"
                )
                if fmt != FMT_INT32:
                    lo, hi = lowprec.limits(8 if fmt == FMT_INT8 else 4)
                    assert want.min() < lo or want.max() > hi, "the sums must overflow the narrow type"
        return net
    finally:
        net.close()


@pytest.mark.parametrize(("seed", "before_wrap"), [(11, None), (12, 13)])
def test_packed_sums_are_exact_under_loss_duplication_and_reordering(
    tmp_path: Path, seed: int, before_wrap: int | None
) -> None:
    """The second case starts 13 chunk numbers before the wrap: the first packed call aligns to 8."""
    net = run(tmp_path, seed, {1: 8, 2: 4}, LinkModel(loss=0.3, duplicate=0.3, jitter_s=0.15), before_wrap)
    assert sum(w.stats.retransmissions for w in net.workers.values()) > 0


def test_lossless_packed_run_sends_one_packet_per_group_of_chunks(tmp_path: Path) -> None:
    """Without faults each worker sends ceil(values / (64 G)) packets per call, each once: an int8 call
    costs a quarter of int32's packets, an int4 call an eighth. A packed call after an int32 call whose
    chunk numbers end off a multiple of G first sends the few chunk numbers up to it (as zeros)."""
    net = run(tmp_path, 5, {1: 16, 2: 8}, LinkModel(), None)
    per_packet = {FMT_INT8: 4 * INC_LANES, FMT_INT4: 8 * INC_LANES, FMT_INT32: INC_LANES}
    for (host, tenant), w in net.workers.items():
        padding = sum(w.calls[i].shape[0] for i in w.padding)  # type: ignore[union-attr]
        assert len(w.padding) == 1 and 0 < padding < 8  # before the last packed call
        want = sum(-(-n // per_packet[fmt]) for fmt, n in CALLS[tenant]) + padding
        assert w.stats.retransmissions == 0 and w.stats.packets_sent == want, host
