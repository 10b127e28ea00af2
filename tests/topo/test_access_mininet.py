"""The access-limited model on the emulated WAN: each worker's link to its city's switch really runs at
the access rate, in each direction on its own, while the inter-city links keep theirs."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from tests.topo.conftest import wan_from_toml

pytestmark = [pytest.mark.mininet, pytest.mark.root]

ACCESS_MBIT = 10.0


@pytest.fixture(scope="module")
def wan2_access(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """LON and FRA (16 ms), 50 Mbit/s between them, each worker behind a 10 Mbit/s access link."""
    toml = (
        f'sites = ["LON", "FRA"]\nrate_mbit = 50\nworkers_per_site = 1\naccess_rate_mbit = {ACCESS_MBIT:g}\n'
    )
    with wan_from_toml(tmp_path_factory.mktemp("access"), toml) as running:
        yield running


def _iperf(running, src: str, dst: str, port: int, seconds: int = 4) -> float:  # type: ignore[no-untyped-def]
    net = running.network
    dst_ip = net.fabric.host(dst)[1].ip
    srv = net.host(dst).popen(["iperf", "-s", "-p", str(port)])
    try:
        for _ in range(50):  # until the server listens
            if f":{port} " in net.host(dst).cmd(f"ss -ltn sport = :{port}"):
                break
            time.sleep(0.1)
        out = net.host(src).cmd(f"iperf -c {dst_ip} -p {port} -t {seconds} -f m")
    finally:
        srv.terminate()
        srv.wait()
    rates = re.findall(r"([\d.]+) Mbits/sec", out)
    assert rates, out
    print(f"iperf {src} -> {dst}: {rates[-1]} Mbit/s")
    return float(rates[-1])


def test_worker_to_switch_runs_at_the_access_rate(wan2_access) -> None:  # type: ignore[no-untyped-def]
    # to the site's edge host, whose own link is not shaped: only the worker's uplink limits
    rate = _iperf(wan2_access, "LONw1", "LONe", 5011)
    assert 0.8 * ACCESS_MBIT <= rate <= 1.05 * ACCESS_MBIT, rate
    stats = wan2_access.network.host("LONw1").cmd("tc -s qdisc show dev LONw1-eth0")
    assert "tbf" in stats and "rate 10Mbit" in stats, stats


def test_switch_to_worker_runs_at_the_access_rate(wan2_access) -> None:  # type: ignore[no-untyped-def]
    # from the edge host: only the switch's egress towards the worker limits
    rate = _iperf(wan2_access, "FRAe", "FRAw1", 5012)
    assert 0.8 * ACCESS_MBIT <= rate <= 1.05 * ACCESS_MBIT, rate


def test_the_wan_link_beyond_keeps_its_own_rate(wan2_access) -> None:  # type: ignore[no-untyped-def]
    # edge host to edge host across the 50 Mbit/s link: well above the access rate
    rate = _iperf(wan2_access, "LONe", "FRAe", 5013)
    assert rate > 2 * ACCESS_MBIT, rate
