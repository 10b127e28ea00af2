"""The worker's timers and window: RFC 6298 RTO estimation and the delay-based window."""

import pytest

from edge.worker import DelayWindow, RttEstimator


def test_rto_follows_rfc6298() -> None:
    est = RttEstimator(rto=1.0, min_rto=0.05, max_rto=8.0)
    est.sample(0.2)
    assert est.srtt == pytest.approx(0.2) and est.rttvar == pytest.approx(0.1)
    assert est.rto == pytest.approx(0.2 + 4 * 0.1)  # srtt + 4 rttvar (above 1.5 srtt here)
    est.sample(0.4)
    assert est.rttvar == pytest.approx(0.75 * 0.1 + 0.25 * 0.2)
    assert est.srtt == pytest.approx(0.875 * 0.2 + 0.125 * 0.4)
    for _ in range(50):
        est.sample(0.001)
    assert est.rto == pytest.approx(0.05)  # clamped at min_rto
    for _ in range(200):
        est.sample(0.3)
    assert est.rto == pytest.approx(1.5 * est.srtt)  # steady RTT: never below 1.5 srtt


def test_window_grows_at_base_delay_and_shrinks_on_queueing() -> None:
    w = DelayWindow(limit=1000, cwnd=16)
    t = 0.0
    for _ in range(100):
        t += 0.01
        w.on_sample(0.100, t)
    assert w.size == 116  # slow start: one chunk more per result while delay stays at the base
    w.on_sample(0.300, t + 1.0)  # three times the base RTT: a deep queue
    assert w.size < 116 and not w.slow_start
    shrunk = w.cwnd
    w.on_sample(0.300, t + 1.01)  # at most one decrease per RTT
    assert w.cwnd == shrunk


def test_window_never_exceeds_the_slots() -> None:
    w = DelayWindow(limit=8, cwnd=16)
    assert w.size == 8
    for i in range(20):
        w.on_sample(0.05, i * 0.01)
    assert w.size == 8
