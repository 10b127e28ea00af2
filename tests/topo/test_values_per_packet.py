"""`tributary allreduce --values-per-packet auto`: wide packets where 64-value ones at the links' pace
would exceed the machine's packet budget (topo.allreduce_run.auto_values_per_packet)."""

from __future__ import annotations

from topo.allreduce_run import PACKET_BUDGET_PPS, AllreduceSpec, auto_values_per_packet
from topo.wan import default_wan

THREE = ["TYO", "NYC", "LON"]


def test_three_sites_stay_narrow_and_nine_go_wide_at_50_mbit() -> None:
    three, nine = default_wan(THREE, rate_mbit=50), default_wan(None, rate_mbit=50)
    assert len(nine.sites) == 9
    # 6 workers: 2 x 6 x 19,410 packets/s = 233,000 a second, within the budget; 18 workers: 699,000
    assert auto_values_per_packet("int32", False, 6, three) == 64
    assert auto_values_per_packet("int32", False, 18, nine) == 256
    assert auto_values_per_packet("float32", False, 18, nine) == 256
    assert 2 * 6 * 50e6 / (8 * 322) < PACKET_BUDGET_PPS < 2 * 18 * 50e6 / (8 * 322)


def test_a_slower_pace_or_a_format_that_cannot_go_wide_stays_narrow() -> None:
    assert auto_values_per_packet("int32", False, 18, default_wan(None, rate_mbit=10)) == 64
    nine = default_wan(None, rate_mbit=50)
    for mode in ("int8", "int4", "mxint8", "sparse", "sparse-float32"):
        assert auto_values_per_packet(mode, False, 18, nine) == 64
    assert auto_values_per_packet("int32", True, 18, nine) == 64  # masks cancel in 64-lane rows


def test_access_links_set_the_pace_when_they_are_slower() -> None:
    nine = default_wan(None, rate_mbit=50)
    nine.access_rate_mbit = 5
    assert auto_values_per_packet("int32", False, 18, nine) == 64


def test_wide_packets_ask_for_slots_in_multiples_of_four() -> None:
    spec = AllreduceSpec(elements=64 * 4097, values_per_packet=256)
    assert spec.slots() == 4096  # the pool, a multiple of 4
    assert AllreduceSpec(elements=64 * 5, values_per_packet=256).slots() == 8
    assert AllreduceSpec(elements=64 * 5).slots() == 5
