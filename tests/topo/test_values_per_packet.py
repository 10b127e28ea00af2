"""`tributary allreduce --values-per-packet auto`: wide packets where 64-value ones at the links' pace
would exceed the machine's packet budget and the wide frames cost no more bytes
(topo.allreduce_run.auto_values_per_packet)."""

from __future__ import annotations

from topo.allreduce_run import PACKET_BUDGET_PPS, AllreduceSpec, auto_values_per_packet
from topo.wan import default_wan

THREE = ["TYO", "NYC", "LON"]
VECTOR = 262144  # 4,096 chunks


def test_three_and_nine_sites_go_wide_at_50_mbit() -> None:
    three, nine = default_wan(THREE, rate_mbit=50), default_wan(None, rate_mbit=50)
    assert len(nine.sites) == 9
    # 6 workers: 2 x 6 x 19,410 packets/s = 233,000 a second; 18 workers: 699,000
    assert PACKET_BUDGET_PPS < 2 * 6 * 50e6 / (8 * 322)
    assert auto_values_per_packet("int32", False, 6, three, VECTOR) == 256
    assert auto_values_per_packet("int32", False, 18, nine, VECTOR) == 256
    assert auto_values_per_packet("float32", False, 18, nine, VECTOR) == 256


def test_a_slow_enough_pace_stays_narrow() -> None:
    # 2 x 6 x 3,882 = 46,600 packets a second at 10 Mbit/s; nine sites' 140,000 still go wide, 70,000 not
    assert auto_values_per_packet("int32", False, 6, default_wan(THREE, rate_mbit=10), VECTOR) == 64
    assert auto_values_per_packet("int32", False, 18, default_wan(None, rate_mbit=10), VECTOR) == 256
    assert auto_values_per_packet("int32", False, 18, default_wan(None, rate_mbit=5), VECTOR) == 64


def test_access_links_set_the_pace_when_they_are_slower() -> None:
    three = default_wan(THREE, rate_mbit=50)
    three.access_rate_mbit = 5
    assert auto_values_per_packet("int32", False, 6, three, VECTOR) == 64


def test_formats_that_cannot_go_wide_and_short_vectors_stay_narrow() -> None:
    nine = default_wan(None, rate_mbit=50)
    for mode in ("int8", "int4", "mxint8", "sparse", "sparse-float32"):
        assert auto_values_per_packet(mode, False, 18, nine, VECTOR) == 64
    assert auto_values_per_packet("int32", True, 18, nine, VECTOR) == 64  # masks cancel in 64-lane rows
    # 5 chunks: two wide frames (2,180 bytes, 3 chunks of padding) against five narrow ones (1,610)
    assert auto_values_per_packet("int32", False, 18, nine, 5 * 64) == 64
    assert auto_values_per_packet("int32", False, 18, nine, 4 * 64) == 256  # 1,090 against 1,288


def test_wide_packets_ask_for_slots_in_multiples_of_four() -> None:
    spec = AllreduceSpec(elements=64 * 4097, values_per_packet=256)
    assert spec.slots() == 4096  # the pool, a multiple of 4
    assert AllreduceSpec(elements=64 * 5, values_per_packet=256).slots() == 8
    assert AllreduceSpec(elements=64 * 5).slots() == 5
