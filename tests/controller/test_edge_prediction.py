"""The model's prediction for an emulated run: the same formulas with the emulation's own parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest

from controller.schedule.emulated import HEADER_BYTES, agree_delay, emulated_params, predict
from controller.schedule.model import EdgeParams, ModelError, Network, clique_timing

# the triangle of docs/schedule-model.md section 8: d(A,B) = 10, d(A,C) = 30, d(B,C) = 20 ms
LAT = np.array([[0, 0.010, 0.030], [0.010, 0, 0.020], [0.030, 0.020, 0]])
NET = Network(("A", "B", "C"), LAT, 10e9)


def test_scaling_keeps_whole_accumulators_and_chunks():
    p = emulated_params(4e6, 64e6, 10e9, 2.6e6)  # x 2.6e-4
    assert p.scale == pytest.approx(2.6e-4)
    assert p.memory_bytes == 1024  # 1040 B -> four 256-byte accumulators
    assert p.chunks == 65 and p.size_bytes == 65 * 256
    assert p.payload_bps == pytest.approx(2.6e6 * 256 / (256 + HEADER_BYTES))


def test_memory_below_one_accumulator_is_refused_with_the_numbers():
    with pytest.raises(ModelError, match="less than one 256-byte accumulator"):
        emulated_params(1e6, 64e6, 10e9, 2e5)


def test_one_round_is_the_models_clique_timing_at_the_payload_rate():
    p = emulated_params(1e6, 20e6, 10e9, 1e7)  # M = 1000 B -> 768 B (3 accumulators), S = 20000 B
    rounds, total = predict(NET, p, [[("A", "B", "C")]])
    ct = clique_timing(
        Network(NET.names, LAT, p.payload_bps), EdgeParams(p.memory_bytes, p.size_bytes, 256), (0, 1, 2)
    )
    c = rounds[0].cliques[0]
    assert c.rate_Bps == pytest.approx((768 - 256) / 0.020)  # A's skew binds: (M - c) / Delta
    assert c.limit == "memory@A" and c.agree_s == 0.0
    assert c.time_s == pytest.approx(ct.time_s) and total == pytest.approx(ct.time_s)
    assert c.gap_s == pytest.approx(256 / c.rate_Bps)


def test_later_rounds_start_after_the_agreement_delay():
    p = emulated_params(1e9, 1e6, 10e9, 1e7)  # memory covers the vector: bandwidth-bound pairs
    rounds, total = predict(NET, p, [[("A", "B")], [("B", "C")]])
    first, second = rounds[0].cliques[0], rounds[1].cliques[0]
    assert second.agree_s == pytest.approx(
        0.020 + 322 * 8 / 1e7 + 0.005
    )  # d(B, C) + a READY's frame + margin
    assert second.start_s == pytest.approx(first.finish_s["B"] + second.agree_s)
    assert total == pytest.approx(second.start_s + second.time_s)
    assert agree_delay(NET, (0, 1, 2), 0.0) == pytest.approx(0.030)


def test_one_accumulator_leaves_the_model_no_rate():
    p = emulated_params(300, 1e4, 1e6, 1e6)  # 300 B -> one accumulator: M - c = 0
    rounds, total = predict(NET, p, [[("A", "B", "C")]])
    assert rounds[0].cliques[0].rate_Bps == 0 and math.isinf(total)


def test_loss_leaves_the_memory_bound_rate_and_costs_the_repairs_share_and_tail():
    """A9: repairs wait in the site's memory, so the memory bound stays r = (M - c) / Delta; a stream
    takes (1 + q) S / r, q = (k - 1) p, and the round may end one repair (T0 = 2 max d + 2 frames) later."""
    lossless = emulated_params(1e6, 20e6, 10e9, 1e7)
    lossy = emulated_params(1e6, 20e6, 10e9, 1e7, loss=0.02)
    [r0], _ = predict(NET, lossless, [[("A", "B", "C")]])
    [r1], _ = predict(NET, lossy, [[("A", "B", "C")]])
    q = 2 * 0.02
    assert r1.cliques[0].rate_Bps == pytest.approx((768 - 256) / 0.020)  # A binds
    assert r1.cliques[0].rate_Bps == pytest.approx(r0.cliques[0].rate_Bps)
    t0_a = 2 * 0.030 + 2 * lossy.frame_s
    stream = (1 + q) * lossy.size_bytes / r1.cliques[0].rate_Bps
    assert stream < r1.time_s <= stream + 0.030 + t0_a + 1e-9
    assert r1.time_s > r0.time_s


def test_loss_takes_its_share_of_a_bandwidth_bound_stream():
    lossy = emulated_params(1e9, 1e6, 10e9, 1e7, loss=0.01)  # memory covers the vector
    [r], _ = predict(NET, lossy, [[("A", "B", "C")]])
    assert r.cliques[0].limit == "bandwidth"
    assert r.cliques[0].rate_Bps == pytest.approx(lossy.payload_bps / 8 / (1 + 2 * 0.01))
    with pytest.raises(ModelError, match="loss"):
        emulated_params(1e9, 1e6, 10e9, 1e7, loss=1.5)


def test_loss_on_a_clique_whose_streams_arrive_without_skew():
    """Equal delays: no member's memory binds (Delta = 0), with or without loss; the stream is
    bandwidth-bound and takes its repairs' share."""
    lat = np.full((3, 3), 0.02)
    np.fill_diagonal(lat, 0.0)
    even = Network(("A", "B", "C"), lat, 1e9)
    lossy = emulated_params(1e6, 20e6, 10e9, 1e7, loss=0.01)
    [r], total = predict(even, lossy, [[("A", "B", "C")]])
    assert r.cliques[0].limit == "bandwidth" and math.isfinite(total)
    assert r.cliques[0].rate_Bps == pytest.approx(lossy.payload_bps / 8 / (1 + 2 * 0.01))
