"""Fused lane registers (p4kit/switch/fusion.py): runs of per-lane register updates become list
operations over rows, and must give exactly what the one-primitive-per-lane code gives (the traced
pipeline keeps that code), registers included, seen from the control plane as ordinary registers."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from p4kit.compiler.driver import compile_file
from p4kit.switch import Switch
from p4kit.switch.fusion import FusedColumn


@pytest.fixture(autouse=True)
def _python_data_plane(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the Python data plane's own machinery: the native one stays off."""
    monkeypatch.setenv("P4KIT_NATIVE", "0")


LANES = Path(__file__).parent / "programs" / "lanes.p4"
OPS = ["store", "add", "maxed", "load", "sub", "mix", "chain"]
REGS = [f"LanesIngress.lane{i}" for i in range(8)]


@pytest.fixture(scope="module")
def lanes_json() -> dict:
    return compile_file(LANES).bmv2


@pytest.fixture(scope="module")
def lists_json() -> dict:
    """hdr.vec read in the control: it cannot be packed, the fused runs work on lists."""
    return compile_file(LANES, defines=["LISTS"]).bmv2


@pytest.fixture(scope="module")
def packed_json() -> dict:
    """The same program without the chain action: hdr.vec and the rows are held packed."""
    return compile_file(LANES, defines=["NO_CHAIN"]).bmv2


def make(doc: dict, traced: bool) -> Switch:
    sw = Switch()
    sw.raise_internal_errors = True
    sw.load_pipeline(doc)
    names = {a["name"] for a in doc["actions"]}
    for kind, op in enumerate(OPS):
        if f"LanesIngress.{op}" in names:
            sw.table_add(
                "LanesIngress.ops", [kind], f"LanesIngress.{op}", [0xDEADBEEF] if op == "mix" else []
            )
    if traced:
        sw.set_trace(lambda line: None)  # the traced pipeline: one primitive per lane
    return sw


def packet(kind: int, bias: int, index: int, values: list[int]) -> bytes:
    return struct.pack("!BBHI8I", kind, bias, index, 0, *values)


def test_lane_runs_are_fused_and_the_chain_is_not(lists_json: dict, lanes_json: dict) -> None:
    sw = make(lists_json, traced=False)
    src = sw._engine.comp.source
    actions = [f for f in src.split("\ndef ") if f.startswith("A")]  # the action functions
    assert sum(f.count("for _lr, _lf in zip(") for f in actions) == 4  # add, maxed, sub, mix
    chain = src.split("def A7_LanesIngress_chain", 1)[1].split("\ndef ", 1)[0]
    assert "FG" not in chain and "[_li" not in chain  # per-lane code: each lane reads the previous one's sum
    assert all(isinstance(sw._state.registers[r], FusedColumn) for r in REGS)
    # without the read in the control, vec is packed and only the chain unpacks it, lane by lane
    src = make(lanes_json, traced=False)._engine.comp.source
    chain = src.split("def A7_LanesIngress_chain", 1)[1].split("\ndef ", 1)[0]
    assert "PKU" in chain and "finally:" in chain and "FG" not in chain
    assert src.count("PKU") == chain.count("PKU") and "PKL" in src  # the add is packed


@pytest.mark.parametrize("variant", ["lists", "packed", "unpacking"])
def test_fused_code_matches_per_lane_code(
    lists_json: dict, lanes_json: dict, packed_json: dict, variant: str
) -> None:
    doc = {"lists": lists_json, "packed": packed_json, "unpacking": lanes_json}[variant]
    fast, traced = make(doc, False), make(doc, True)
    assert "zip(" in fast._engine.comp.source and "zip(" not in traced._engine.comp.source
    assert ("_fb(_d[_e:" in fast._engine.comp.source) == (variant != "lists")
    rng = random.Random(14)
    for _ in range(600):
        kind = rng.randrange(len(OPS) + 1)  # the last kind misses the table
        index = rng.choice([0, 1, 2, 15, 16, 300])  # 16 and 300 are out of range: reads 0, writes nothing
        values = [rng.choice([0, 1, 0xFFFFFFFF, 0x80000000, rng.getrandbits(32)]) for _ in range(8)]
        frame = packet(kind, rng.getrandbits(8), index, values)
        assert fast.process_packet(3, frame) == traced.process_packet(3, frame), (kind, index)
    for r in REGS:
        assert fast.register_read_all(r) == traced.register_read_all(r)
    assert any(any(fast.register_read_all(r)) for r in REGS)


def test_control_plane_sees_each_lane_as_a_register(lanes_json: dict) -> None:
    sw = make(lanes_json, traced=False)
    sw.register_write("LanesIngress.lane3", 5, 0x1_0000_0007)  # truncated to 32 bits
    assert sw.register_read("LanesIngress.lane3", 5) == 7
    assert sw.register_read("LanesIngress.lane2", 5) == 0
    out = sw.process_packet(1, packet(3, 0, 5, [0] * 8))  # load lanes of cell 5 into the packet
    got = struct.unpack_from("!8I", out[0][1], 8)
    assert got == (0, 0, 0, 7, 0, 0, 0, 0)
    sw.process_packet(1, packet(0, 0, 5, list(range(10, 18))))  # store
    assert [sw.register_read(r, 5) for r in REGS] == list(range(10, 18))
    sw.register_reset("LanesIngress.lane0")
    assert sw.register_read("LanesIngress.lane0", 5) == 0 and sw.register_read("LanesIngress.lane1", 5) == 11
    assert len(sw.register_read_all("LanesIngress.lane7")) == 16


def test_tracing_on_and_off_keeps_register_values(lanes_json: dict) -> None:
    sw = make(lanes_json, traced=False)
    sw.process_packet(1, packet(0, 0, 2, list(range(8))))
    sw.set_trace(lambda line: None)
    sw.process_packet(1, packet(1, 0, 2, [1] * 8))  # add, per lane
    sw.set_trace(None)
    sw.process_packet(1, packet(1, 0, 2, [1] * 8))  # add, fused
    assert [sw.register_read(r, 2) for r in REGS] == [i + 2 for i in range(8)]


def test_packed_lanes_add_with_carries_and_the_control_plane_view(packed_json: dict) -> None:
    sw = make(packed_json, traced=False)
    src = sw._engine.comp.source
    assert "PKL" in src and "PKH" in src  # the add is the SWAR expression, not a comprehension
    top = 0xFFFFFFFF
    sw.process_packet(1, packet(0, 0, 4, [top, 1, 0x80000000, 7, top, 0, 2, 3]))  # store
    out = sw.process_packet(1, packet(1, 0, 4, [1, top, 0x80000000, 1, top, 0, 0xFFFFFFFE, 5]))  # add
    got = struct.unpack_from("!8I", out[0][1], 8)
    want = (0, 0, 0, 8, 0xFFFFFFFE, 0, 0, 8)  # each lane mod 2**32, no carry into its neighbour
    assert got == want
    assert [sw.register_read(r, 4) for r in REGS] == list(want)
    assert struct.unpack_from("!I", out[0][1], 4)[0] == 8  # the temporary: the last lane's sum
    sw.register_write("LanesIngress.lane5", 4, 0x1234)
    out = sw.process_packet(1, packet(3, 0, 4, [0] * 8))  # load
    assert struct.unpack_from("!8I", out[0][1], 8)[5] == 0x1234
    sw.set_trace(lambda line: None)  # the rows stay packed; traced code reads them per lane
    out = sw.process_packet(1, packet(3, 0, 4, [0] * 8))
    assert struct.unpack_from("!8I", out[0][1], 8) == (0, 0, 0, 8, 0xFFFFFFFE, 0x1234, 0, 8)


def _csum16(data: bytes) -> int:
    """The Internet checksum as BMv2's csum16 computes it (zero-padded to whole 16-bit words)."""
    n = int.from_bytes(data + b"\0" * (len(data) % 2), "big")
    return 0xFFFF - (n % 0xFFFF or (0xFFFF if n else 0))


def test_checksums_over_packed_lanes_match_the_per_field_code() -> None:
    """A checksum over a packed header reduces its integer once per value (multicast replicas share
    it) and must give the per-field code's result: for lanes whose integer is a nonzero multiple of
    0xFFFF (all ones) too, where the end-around rule decides between 0 and 0xFFFF."""
    doc = compile_file(LANES, defines=["NO_CHAIN", "CSUM"]).bmv2
    fast, traced = make(doc, False), make(doc, True)
    assert "PKM" in fast._engine.comp.source and "PKM" not in traced._engine.comp.source
    for sw in (fast, traced):
        sw.mc_group_create(1, [(1, 0), (2, 1), (3, 0x7F)])
    rng = random.Random(7)
    ones = [0xFFFFFFFF] * 8
    seen_bad = seen_zero = 0
    for n in range(400):
        kind = rng.choice([0, 0, 1, 3, 5, 6])  # store, add, load, mix, a miss
        index = rng.choice([0, 1, 7])
        values = ones if n % 5 == 0 else [rng.choice([0, 0xFFFFFFFF, rng.getrandbits(32)]) for _ in range(8)]
        body = packet(kind, 0, index, values)
        good = _csum16(body[0:1] + body[2:4] + body[8:40])
        csum = good if rng.random() < 0.8 else rng.getrandbits(16)
        frame = body + struct.pack("!H", csum)
        got = fast.process_packet(2, frame)
        assert got == traced.process_packet(2, frame), (n, kind, index)
        assert [p for p, _ in got] == [1, 2, 3]
        for _, out in got:
            acc, (tail,) = struct.unpack_from("!I", out, 4)[0], struct.unpack_from("!H", out, 40)
            assert (acc == 0xBAD) == (csum != good)  # the verify's verdict
            assert tail == _csum16(out[0:4] + out[8:40])  # each replica's own checksum, from its bytes
            seen_bad += acc == 0xBAD
            seen_zero += tail == 0
    assert seen_bad and seen_zero  # both rare cases were exercised
