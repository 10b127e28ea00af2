"""The emulated WAN for real: Mininet, p4kit-switch processes, P4Runtime provisioning, shaped links."""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.mininet, pytest.mark.root]


def test_cross_site_ping_rtt_matches_configuration(wan3) -> None:  # type: ignore[no-untyped-def]
    pairs = [("TYO", "NYC"), ("NYC", "LON"), ("TYO", "LON")]
    rtts = wan3.network.ping_rtts(pairs, count=7)
    for a, b in pairs:
        configured = wan3.network.wan.rtt_ms(a, b)
        measured = rtts[(a, b)]
        assert measured is not None, f"{a}-{b}: no ping answer"
        assert abs(measured - configured) <= configured * 0.05, (
            f"{a}-{b}: {measured:.1f} ms vs {configured} ms"
        )


def test_hosts_of_one_site_reach_each_other_and_the_edge(wan3) -> None:  # type: ignore[no-untyped-def]
    w1 = wan3.network.host("TYOw1")
    for target in ("10.0.1.2", "10.0.1.100"):
        out = w1.cmd(f"ping -n -c 2 -W 2 {target}")
        assert " 0% packet loss" in out, out


def test_iperf_across_rate_limited_link_reaches_configured_rate(wan3) -> None:  # type: ignore[no-untyped-def]
    net = wan3.network
    server, client = net.host("NYCw2"), net.host("TYOw2")
    srv = server.popen(["iperf", "-s", "-p", "5002"])
    try:
        out = client.cmd("iperf -c 10.0.2.2 -p 5002 -t 8 -f m")
    finally:
        srv.terminate()
        srv.wait()
    rates = re.findall(r"([\d.]+) Mbits/sec", out)
    assert rates, out
    rate = float(rates[-1])
    assert abs(rate - 10.0) <= 1.5, f"iperf {rate} Mbit/s over a 10 Mbit/s link:\n{out}"
