"""Link emulation: parsing `--link`, the shaper's timing, loss and queue, and delay measured on veths."""

from __future__ import annotations

import os
import random
import statistics
import threading
import time

import pytest

from p4kit.switch.linkemu import DelayLine, LinkParams, LinkShaper, LinkSpecError, parse_link_spec

from ._switch_testnet import have_root_net, hosts_net, ping_rtts


def test_parse_link_spec_all_keys_and_units() -> None:
    port, p = parse_link_spec("3:delay=40ms,jitter=2,rate=10mbit,loss=1.5%,limit=50")
    assert port == 3
    assert p == LinkParams(delay_ms=40, jitter_ms=2, rate_mbit=10, loss_pct=1.5, queue_pkts=50)
    assert p.active and p.needs_timer


def test_parse_link_spec_errors() -> None:
    for bad in ("delay=3", "x:delay=3", "1:speed=3", "1:delay=abc", "1:loss=101", "1:delay=-1", "1:limit=0"):
        with pytest.raises(LinkSpecError):
            parse_link_spec(bad)


def overloaded() -> bool:
    """Timing cannot be judged while other work keeps every CPU busy (e.g. parallel test runs)."""
    return os.getloadavg()[0] > 2 * (os.cpu_count() or 1)


class Recorder:
    def __init__(self) -> None:
        self.times: list[float] = []
        self.packets: list[bytes] = []
        self.lock = threading.Lock()

    def __call__(self, packet: bytes) -> None:
        with self.lock:
            self.times.append(time.monotonic())
            self.packets.append(packet)


def wait_for(rec: Recorder, n: int, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while len(rec.packets) < n and time.monotonic() < end:
        time.sleep(0.005)


def test_delay_is_accurate_and_keeps_order() -> None:
    line = DelayLine()
    rec = Recorder()
    try:
        shaper = LinkShaper(LinkParams(delay_ms=30), rec, line)
        sent_at = []
        for i in range(20):
            sent_at.append(time.monotonic())
            shaper.submit(bytes([i]) * 60)
            time.sleep(0.002)
        wait_for(rec, 20)
        delays = [(t - s) * 1000 for t, s in zip(rec.times, sent_at, strict=True)]
        assert [p[0] for p in rec.packets] == list(range(20))
        assert min(delays) >= 29.9, delays  # never early
        if not overloaded():
            assert abs(statistics.median(delays) - 30) < 1.0, delays  # ~0.2 ms on a quiet machine
            assert max(delays) < 40
    finally:
        line.close()


def test_jitter_never_reorders() -> None:
    line = DelayLine()
    rec = Recorder()
    try:
        shaper = LinkShaper(LinkParams(delay_ms=10, jitter_ms=5), rec, line, random.Random(1))
        for i in range(50):
            shaper.submit(bytes([i]))
        wait_for(rec, 50)
        assert [p[0] for p in rec.packets] == list(range(50))
    finally:
        line.close()


def test_rate_serialises_and_tail_drops() -> None:
    line = DelayLine()
    rec = Recorder()
    try:
        # 1 Mbit/s, 1250-byte frames: 10 ms each; a queue of 5 keeps 5 and drops the rest of a burst.
        shaper = LinkShaper(LinkParams(rate_mbit=1, queue_pkts=5), rec, line)
        start = time.monotonic()
        accepted = [shaper.submit(b"x" * 1250) for _ in range(8)]
        assert accepted == [True] * 5 + [False] * 3
        assert shaper.stats.tail_dropped == 3
        wait_for(rec, 5)
        gaps = [(b - a) * 1000 for a, b in zip(rec.times, rec.times[1:], strict=False)]
        assert (rec.times[-1] - start) * 1000 >= 49.9  # 5 x 10 ms of serialisation, never less
        if not overloaded():
            assert all(abs(g - 10) < 1.5 for g in gaps), gaps
            assert abs((rec.times[-1] - start) * 1000 - 50) < 2
    finally:
        line.close()


def test_departures_close_together_share_a_wake_and_are_never_early() -> None:
    """100 frames that the rate spaces 100 us apart: the timer thread sends them in a few wakes, not
    one each, and each leaves at its time or at most a grain (plus scheduling) after it."""
    line = DelayLine()
    rec = Recorder()
    try:
        # 100 Mbit/s, 1250-byte frames: one finishes serialising every 100 us; then 20 ms of delay
        shaper = LinkShaper(LinkParams(delay_ms=20, rate_mbit=100), rec, line)
        start = time.monotonic()
        for _ in range(100):
            assert shaper.submit(b"x" * 1250)
        wait_for(rec, 100)
        assert len(rec.packets) == 100
        due = [start + 0.020 + (i + 1) * 1e-4 for i in range(100)]
        lateness = [(t - d) * 1000 for t, d in zip(rec.times, due, strict=True)]
        assert min(lateness) >= -0.05, lateness  # never early (submissions took a few us each)
        # a wake per departure would be 100; one per grain (0.5 ms) about 20
        assert line.wakes <= 50, line.wakes
        if not overloaded():
            assert max(lateness) < line.granularity * 1000 + 2.0, lateness
    finally:
        line.close()


def test_loss_rate_is_close_to_configured() -> None:
    rec = Recorder()
    shaper = LinkShaper(LinkParams(loss_pct=20), rec, None, random.Random(7))
    for _ in range(5000):
        shaper.submit(b"p")
    assert 0.17 < shaper.stats.lost / 5000 < 0.23
    assert shaper.stats.sent == len(rec.packets) == 5000 - shaper.stats.lost


@pytest.mark.root
@pytest.mark.skipif(not have_root_net(), reason="needs root and iproute2")
def test_delay_measured_with_ping_through_a_port_loop() -> None:
    """Two hosts in namespaces, a relay between their veths that delays 20 ms each way: the RTT grows by
    40 ms over the same relay without shaping (the baseline absorbs the machine's own ping latency)."""
    from p4kit.switch.ports import PortLoop

    def median_rtt(net, links) -> tuple[float, int]:
        loop = PortLoop(net.ports(), lambda port, frame: [(3 - port, frame)], links=links)
        loop.start()
        try:
            ping_rtts(net, 0, 1, count=2)  # ARP
            rtts = ping_rtts(net, 0, 1, count=20, interval=0.02)
        finally:
            loop.stop()
        return statistics.median(rtts), len(rtts)

    with hosts_net(2, subnet="10.78.0") as net:
        base, n0 = median_rtt(net, {})
        shaped, n1 = median_rtt(net, {1: LinkParams(delay_ms=20), 2: LinkParams(delay_ms=20)})
    assert n0 >= 18 and n1 >= 18
    assert shaped - base >= 39.5, (base, shaped)
    if not overloaded():
        assert shaped - base <= 41.0, (base, shaped)


@pytest.mark.root
@pytest.mark.skipif(not have_root_net(), reason="needs root and iproute2")
def test_loss_measured_with_ping() -> None:
    from p4kit.switch.ports import PortLoop

    with hosts_net(2, subnet="10.79.0") as net:
        loop = PortLoop(
            net.ports(), lambda port, frame: [(3 - port, frame)], links={2: LinkParams(loss_pct=30)}, seed=3
        )
        loop.start()
        try:
            net.exec(0, "arping", "-c", "1", net.hosts[1].ip, check=False)
            rtts = ping_rtts(net, 0, 1, count=200, interval=0.005)
        finally:
            loop.stop()
    # loss applies to the request's leg only (port 2's egress): about 70% of 200 answered
    assert 110 <= len(rtts) <= 170, len(rtts)
