"""Hypothesis-driven packet fuzzing of p4src/inc.p4 on p4kit's switch: over ten thousand hostile,
stale, corrupted and random packets never crash the switch, never touch a configured tenant's cells,
and the tenant's half-finished sum completes exactly afterwards."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge import protocol as P  # noqa: N812
from p4kit.compiler.driver import compile_file
from p4kit.switch.runtime import Switch
from tests.p4src.test_inc_program import EPOCH, GW_IP, GW_MAC, PROGRAM, host_ip, host_mac, lanes, total_of

AGG = "TributaryIngress.aggregation."
CELL_REGISTERS = [f"{AGG}{n}" for n in ("cell_chunk", "cell_bitmap", "cell_arrivals", "cell_count")] + [
    f"{AGG}lane{i}" for i in range(P.INC_LANES)
]
NSLOTS = 4
_BMV2 = compile_file(str(PROGRAM), include_dirs=[str(PROGRAM.parent)]).bmv2


def configured_switch() -> Switch:
    """Tenant 1, fan-in 3 on ports 1..3, with chunk 0 half done (workers 1 and 2 have contributed)."""
    sw = Switch()
    sw.load_pipeline(_BMV2)
    sw.table_add(
        f"{AGG}inc_tenants", [1, 0], f"{AGG}set_config", [0, NSLOTS, 3, 1, 0, 1, 1, EPOCH, 0x0A0001FE]
    )
    for child, port in enumerate((1, 2, 3)):
        sw.table_add(f"{AGG}inc_children", [1, 0, port, 0x0A000100 + port], f"{AGG}set_child", [child])
        sw.table_add(
            "TributaryEgress.delivery.inc_workers",
            [1, port],
            "TributaryEgress.delivery.to_worker",
            [0x00000A000100 + port, 0x0A000100 + port, P.worker_port(1), 0x00000A0001FE, 0x0A0001FE],
        )
    sw.mc_group_create(1, [(p, 0) for p in (1, 2, 3)])
    for port in (1, 2):
        assert sw.process_packet(port, contribution(port, 0, lanes(port))) == []
    return sw


def contribution(port: int, chunk: int, values: list[int], **fields: int) -> bytes:
    src = fields.pop("src_ip", None)
    slot, copy = P.slot_of(chunk, NSLOTS)
    header = P.IncHeader(
        fields.pop("tenant", 1),
        fields.pop("round", 0),
        fields.pop("slot", slot),
        chunk,
        flags=fields.pop("flags", P.F_VERSION if copy else 0),
        epoch=fields.pop("epoch", EPOCH),
        kind=fields.pop("kind", 0),
        count=fields.pop("count", 1),
        version=fields.pop("version", P.INC_VERSION),
    )
    ip = host_ip(port) if src is None else f"10.0.{src >> 8 & 255}.{src & 255}"
    if fields.pop("empty", 0):  # an empty contribution (sparse mode): the header alone
        payload = P.encode_empty(header)
    else:
        payload = P.encode(header, np.array(values, dtype=np.uint32))
    return P.frame(host_mac(port), GW_MAC, ip, GW_IP, P.worker_port(1), P.INC_UDP_PORT, payload)


def cells(sw: Switch) -> list[list[int]]:
    return [sw.register_read_all(name)[: 2 * NSLOTS] for name in CELL_REGISTERS]


u32 = st.integers(0, 2**32 - 1)
values = st.builds(
    lambda seed: np.random.default_rng(seed).integers(0, 2**32, P.INC_LANES, dtype=np.uint64).tolist(), u32
)
ports = st.integers(0, 8)


@st.composite
def not_the_tenants(draw: st.DrawFn) -> tuple[int, bytes]:
    """A packet that the tenant's cells must ignore, whatever else it gets right."""
    port = draw(ports)
    kind = draw(
        st.sampled_from(["epoch", "address", "tenant", "corrupt", "garbage", "truncated", "version", "empty"])
    )
    chunk, vals = draw(u32), draw(values)
    flags = draw(st.integers(0, 255))
    if kind == "epoch":
        epoch = draw(u32.filter(lambda e: e != EPOCH))
        return port, contribution(max(port, 1), chunk, vals, epoch=epoch, flags=flags)
    if kind == "address":  # a real child's port with another address, or a real address on another port
        src = draw(st.integers(0, 0xFFFF).filter(lambda s: not (s >> 8 == 1 and s & 255 == port)))
        return port, contribution(port if port else 1, chunk, vals, src_ip=src, flags=flags)
    if kind == "tenant":
        return port, contribution(max(port, 1), chunk, vals, tenant=draw(st.integers(2, 0xFFFF)), flags=flags)
    if kind == "version":
        return port, contribution(
            max(port, 1), chunk, vals, version=draw(st.integers(0, 255).filter(lambda v: v != 2))
        )
    if kind == "empty":  # an empty that completes nothing of the tenant's: another epoch, tenant or address
        wrong = draw(st.sampled_from(["epoch", "tenant", "address"]))
        if wrong == "epoch":
            return port, contribution(
                max(port, 1), 0, vals, epoch=draw(u32.filter(lambda e: e != EPOCH)), empty=1
            )
        if wrong == "tenant":
            return port, contribution(max(port, 1), 0, vals, tenant=draw(st.integers(2, 0xFFFF)), empty=1)
        src = draw(st.integers(0, 0xFFFF).filter(lambda s: not (s >> 8 == 1 and s & 255 == port)))
        return port, contribution(port if port else 1, 0, vals, src_ip=src, empty=1)
    frame = contribution(max(port, 1), chunk, vals, flags=flags)
    if kind == "corrupt":
        at = draw(st.integers(14, len(frame) - 1))
        bit = draw(st.integers(0, 7))
        return port, frame[:at] + bytes([frame[at] ^ (1 << bit)]) + frame[at + 1 :]
    if kind == "truncated":
        return port, frame[: draw(st.integers(0, len(frame) - 1))]
    return port, draw(st.binary(min_size=0, max_size=400))


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
@given(st.lists(not_the_tenants(), min_size=200, max_size=200))
def test_hostile_packets_never_touch_the_tenants_cells(packets: list[tuple[int, bytes]]) -> None:
    sw = configured_switch()
    before = cells(sw)
    for port, frame in packets:
        for out_port, out in sw.process_packet(port, frame):
            # whatever leaves must not be a result of tenant 1
            assert not (len(out) == P.FRAME_LEN and out[46:48] == b"\x00\x01" and out[44] & P.F_RESULT), (
                out_port
            )
    assert cells(sw) == before
    # the half-done sum still completes exactly with the real third contribution
    out = sw.process_packet(3, contribution(3, 0, lanes(3)))
    stats = [sw.counter_read(f"{AGG}inc_stats", i)[0] for i in range(11)]
    assert sorted(p for p, _ in out) == [1, 2, 3], f"inc_stats {stats}"
    _, got = P.decode(out[0][1][42:])
    assert got.tolist() == total_of(1, 2, 3)
