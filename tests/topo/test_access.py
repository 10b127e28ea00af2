"""The access-limited WAN model: where its rate comes from (flag or topology file), what it refuses, and
how it is shaped (the switch's egress towards each worker, a token bucket on the worker's side)."""

from __future__ import annotations

import argparse

import pytest

from topo.network import access_qdisc
from topo.options import add_wan_arguments, wan_from_args
from topo.wan import TopologyError, default_wan, parse_topology


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_wan_arguments(p)
    return p.parse_args(list(argv))


def test_the_flag_sets_the_access_rate_and_keeps_the_wan_links() -> None:
    wan = wan_from_args(_args("--sites", "TYO,NYC,LON", "--access-rate", "20"))
    assert wan.access_rate_mbit == 20
    assert {link.rate_mbit for link in wan.links} == {50.0}  # the inter-city links keep their rate
    assert wan_from_args(_args("--sites", "TYO,NYC,LON")).access_rate_mbit == 0  # the full-mesh model


def test_the_topology_key_and_the_flag_over_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    topo = tmp_path / "wan.toml"
    topo.write_text('sites = ["TYO", "NYC"]\naccess_rate_mbit = 12.5\n')
    assert wan_from_args(_args("--topology", str(topo))).access_rate_mbit == 12.5
    assert wan_from_args(_args("--topology", str(topo), "--access-rate", "5")).access_rate_mbit == 5


@pytest.mark.parametrize("bad", [-1.0, float("nan")])
def test_a_bad_access_rate_is_refused_with_its_source(bad: float) -> None:
    with pytest.raises(TopologyError, match="access_rate_mbit: the access rate must be positive"):
        parse_topology({"sites": ["TYO", "NYC"], "access_rate_mbit": bad}, "wan.toml")
    with pytest.raises(TopologyError, match="--access-rate"):
        default_wan("TYO,NYC", access_rate_mbit=bad)
    with pytest.raises(TopologyError, match="access_rate_mbit must be a number"):
        parse_topology({"sites": ["TYO", "NYC"], "access_rate_mbit": "fast"}, "wan.toml")


def test_the_workers_side_is_a_token_bucket_at_the_rate() -> None:
    cmd = access_qdisc("TYOw1-eth0", 20)
    assert cmd.startswith("tc qdisc replace dev TYOw1-eth0 root tbf rate 20000000bit ")
    assert "burst 10000 " in cmd  # 4 ms of 20 Mbit/s
    assert "burst 3028 " in access_qdisc("x", 1)  # never less than two full frames
