"""The worker's timers, window and pace: RFC 6298 RTO estimation, the delay-based window, the token bucket
that spaces packets at the tree's rate, and the rate control that keeps the path's queues short."""

import pytest

from edge.worker import DelayWindow, IncJob, Pacer, PathTiming, RateControl, RttEstimator


def test_rto_follows_rfc6298() -> None:
    est = RttEstimator(rto=1.0, min_rto=0.05, max_rto=8.0)
    est.sample(0.2)
    assert est.srtt == pytest.approx(0.2) and est.rttvar == pytest.approx(0.1)
    assert est.rto == pytest.approx(0.2 + 4 * 0.1)  # srtt + 4 rttvar (above 1.25 srtt here)
    est.sample(0.4)
    assert est.rttvar == pytest.approx(0.75 * 0.1 + 0.25 * 0.2)
    assert est.srtt == pytest.approx(0.875 * 0.2 + 0.125 * 0.4)
    assert est.latest == 0.4
    for _ in range(50):
        est.sample(0.001)
    assert est.rto == pytest.approx(0.05)  # clamped at min_rto
    for _ in range(200):
        est.sample(0.3)
    assert est.rto == pytest.approx(1.25 * est.srtt)  # steady RTT: never below 1.25 srtt


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


def test_the_pacer_spaces_packets_at_its_rate_in_small_bursts() -> None:
    p = Pacer()
    assert p.allowance(0.0) == 1 << 30  # no rate: nothing is paced
    p.set_rate(20_000.0)  # 50 us a packet; the bucket holds 2 ms of them
    assert p.burst == 40 and p.catch_up == 160
    assert p.allowance(0.0) == 40  # a full bucket at first
    p.rest()
    assert p.allowance(1.0) == 40  # after a pause it never holds more than a burst, however long
    p.spend(40)
    assert p.allowance(1.0005) == 10
    p.spend(10)
    assert p.ready_at(1.0005, 8) == pytest.approx(1.0009)  # 8 packets take 400 us to earn
    assert p.ready_at(1.0005, 1000) == pytest.approx(1.0085)  # at most the catch-up bucket is waited for
    sent, t = 0, 1.0005
    while t < 1.1005:  # a caller that pumps every 0.7 ms sends at the rate
        t += 0.0007
        n = p.allowance(t)
        p.spend(n)
        sent += n
    assert abs(sent - 20_000 * (t - 1.0005)) <= 1
    assert p.allowance(t + 0.005) == 100  # a busy caller 5 ms late sends the 5 ms it missed
    p.spend(100)
    assert p.allowance(t + 0.025) == 160  # 8 ms at most
    p.spend(160)
    p.rest()  # it had nothing to send: its pause earns the small bucket only
    assert p.allowance(t + 0.045) == 40
    p.set_rate(1000.0)
    assert p.burst == 8 and p.catch_up == 8  # never fewer than 8 a wakeup
    p.set_rate(1e6)
    assert p.burst == 64 and p.catch_up == 256


def test_rate_control_drains_a_queue_below_the_delivered_rate_and_climbs_back() -> None:
    c = RateControl(peak_bps=50e6, base_rtt=0.160)  # the job's slowest path: 160 ms
    assert c.rate_bps == 50e6 and c.target() == pytest.approx(0.212)
    assert c.window(322) == pytest.approx(2 * 50e6 / (8 * 322) * 0.160)  # twice the product in flight
    t, frame = 0.0, 8.0 * 322
    c.on_result(t, frame, 0.30)  # the first result opens a round
    for _ in range(400):  # 12.88 Mbit/s of results for 40 ms, each 300 ms after its chunk went out
        t += 0.0002
        c.on_result(t, frame, 0.30)
        if c.queued:
            break
    # a round is a quarter of the propagation RTT; the queue (300 ms > 212 ms) showed at its end: the
    # pace falls below what the path delivered, the window to 1.25 times that pace's product
    assert t == pytest.approx(0.040, abs=0.0003)
    assert c.rate_bps == pytest.approx(0.9 * frame / 0.0002, rel=0.01)
    assert c.window(322) == pytest.approx(1.25 * c.rate_bps / frame * 0.160)
    low = c.rate_bps
    for _ in range(3):  # still queued, but within an RTT of the cut: it holds
        t += 0.045
        c.on_result(t, frame / 10, 0.30)
    assert c.rate_bps == low and c.queued
    for _ in range(4):  # queue gone: a quarter more per RTT, up to the link's rate
        t += 0.040
        c.on_result(t, frame, 0.17)
    assert not c.queued and c.rate_bps == pytest.approx(low * 1.25, rel=0.01)
    for _ in range(100):
        t += 0.040
        c.on_result(t, frame, 0.17)
    assert c.rate_bps == 50e6
    for _ in range(400):  # a queue that never drains while nothing arrives: the pace stays above a floor
        t += 0.4
        c.on_result(t, 0.0, 5.0)
    assert c.rate_bps == pytest.approx(50e6 / 64)


def test_a_job_that_knows_its_rate_starts_with_twice_the_path_bdp_in_flight() -> None:
    job = IncJob(tenant=1, switch_ip="10.0.1.254", nslots=4096, workers=6, epoch=1, path_rtt_s=0.162)
    assert PathTiming.for_job(job).window.size == 512 and PathTiming.for_job(job).control is None
    job.rate_bps = 10e6  # 3,882 frames of 322 B per second: 629 in one RTT
    t = PathTiming.for_job(job)
    assert t.window.size == int(2 * 10e6 / (8 * 322) * 0.162) and t.control is not None
    assert t.control.base_rtt == 0.162  # a queue from the first packet on is seen as one
    job.rate_bps, job.nslots = 200e6, 1024
    assert PathTiming.for_job(job).window.size == 1024  # the slots bound it


def test_a_repair_waits_one_slowest_path_rtt_and_backs_off_from_the_third_up_to_four_times() -> None:
    job = IncJob(tenant=1, switch_ip="10.0.1.254", nslots=64, workers=6, epoch=1, path_rtt_s=0.2, rto_s=1.0)
    t = PathTiming.for_job(job)
    assert t.repair_timeout(1) == 1.0  # nothing measured yet: the first timeout
    for _ in range(100):  # this worker is near the root: its own RTT is half the slowest path's
        t.rtt.sample(0.1)
        t.on_result(0.0, 322, None)
        t.window.base_rtt = 0.1
    one = t.repair_timeout(1)
    assert 0.21 <= one <= 0.22  # the slowest path, not this worker's RTT, plus 10 ms
    assert t.repair_timeout(2) == one and t.repair_timeout(3) == 2 * one and t.repair_timeout(4) == 4 * one
    assert t.repair_timeout(20) == 4 * one  # bounded: a chunk's fifth repair must not wait seconds
    assert t.fresh_timeout() == pytest.approx(max(t.rtt.rto, 0.135))


def test_a_repair_behind_a_growing_queue_waits_for_the_chunks_ahead_of_it() -> None:
    job = IncJob(tenant=1, switch_ip="10.0.1.254", nslots=64, workers=6, epoch=1, path_rtt_s=0.2, rto_s=1.0)
    t = PathTiming.for_job(job)
    for _ in range(100):
        t.rtt.sample(0.2, 1.0)
    t.window.base_rtt = 0.2
    plain = t.repair_timeout(1, 1.0)
    # 1,000 packets queued ahead of it at 10,000 results/s (ReduceStream._queue_ahead counts them): 0.1 s
    assert t.repair_timeout(1, 1.0, queue=0.1) == pytest.approx(plain + 0.1)
    assert t.repair_timeout(1, 1.0, queue=0.0) == plain
    # the latest RTT, 0.5 s, is mostly queue: against the path's 0.2 s, not against the smallest RTT
    # seen, which on nine sites is itself a queue's (the first window fills the rings before the first
    # result is back)
    t.window.base_rtt = 0.45
    t.rtt.sample(0.5, 1.0)
    assert t.propagation() == 0.2
    assert t.queue(1.0) == pytest.approx(0.3) and t.queue(1.1) == pytest.approx(0.2)


def test_a_shared_job_starts_at_its_fair_share_and_grows_to_the_link_without_a_queue() -> None:
    """Four tenants on one link: each starts at a quarter (its window that quarter's product), climbs by
    a quarter per RTT while no queue shows, never above the link, and every call starts at the share."""
    job = IncJob(
        tenant=1, switch_ip="10.0.1.254", nslots=4096, workers=6, epoch=1, path_rtt_s=0.160,
        rate_bps=50e6, share_bps=12.5e6,
    )  # fmt: skip
    t = PathTiming.for_job(job)
    c = t.control
    assert c is not None and c.rate_bps == 12.5e6 and c.peak_bps == 50e6
    assert t.window.size == int(2 * 12.5e6 / (8 * 322) * 0.160)
    now, frame = 0.0, 8.0 * 322
    c.on_result(now, frame, 0.165)
    for _ in range(200):  # no queue: results at the propagation RTT
        now += 0.040
        c.on_result(now, frame, 0.165)
    assert c.rate_bps == 50e6  # grown to the link (the others finished), no further
    c.restart()
    assert c.rate_bps == 12.5e6  # the next call starts at the share again
    assert RateControl(peak_bps=50e6, start_bps=80e6).rate_bps == 50e6  # a share never exceeds the link


def test_the_tail_probe_waits_at_least_the_slowest_path_even_for_a_near_worker() -> None:
    """A worker next to the root measures 80 ms; in a later call its results wait for the far workers,
    who start one one-way delay later: the probe must not fire before the slowest path's RTT."""
    job = IncJob(tenant=1, switch_ip="10.0.1.254", nslots=64, workers=6, epoch=1, path_rtt_s=0.162)
    t = PathTiming.for_job(job)
    for _ in range(50):
        t.rtt.sample(0.080)
    assert t.tail_timeout() == pytest.approx(1.2 * 0.162)  # the floor, not 1.1 x 80 ms + 10 ms
    for _ in range(50):  # a queue: the latest RTT is 500 ms
        t.rtt.sample(0.500)
    assert t.tail_timeout() == pytest.approx(1.1 * 0.5 + 0.010)
    assert t.tail_timeout() < t.fresh_timeout()
