"""The native data plane (p4kit/switch/native/) gives the Python data plane's outputs, drops and state.

Two switches run the same program, one native and one Python (`native=False`). Every test program of
tests/p4kit/programs that the native data plane covers gets its STF control-plane directives on
both, and every STF packet is sent as it is and in random variants (flipped bits, longer and shorter
payloads, another port), one at a time and in shuffled batches; at the end every counter, register
and direct counter must be equal. INC (p4src/inc.p4) runs its aggregation protocol on both with
multicast results, drops and checksums. Directed tests cover what the differential test cannot
reach by itself: control-plane writes between packets, the fall-back while tracing or with a rated
port, cells shared with the control plane, and a program outside what the native one covers.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import pytest

from p4kit.compiler.diagnostics import CompileError
from p4kit.compiler.driver import compile_file
from p4kit.switch.errors import SwitchError
from p4kit.switch.jsonbuild import assign
from p4kit.switch.native import Cells, plan
from p4kit.switch.program import load_program
from p4kit.switch.runtime import Switch
from tests.p4kit.switch._differential import CASES, LPM, ROOT, run_on_both, state
from tests.p4kit.switch._differential import compile_or_skip as _compile


def _pair(bmv2: dict) -> tuple[Switch, Switch]:
    nat, py = Switch(native=True, seed=1), Switch(native=False, seed=1)
    nat.load_pipeline(bmv2)
    py.load_pipeline(bmv2)
    return nat, py


def _variants(rng: random.Random, port: int, data: bytes) -> list[tuple[int, bytes]]:
    out = [(port, data)] * 2
    for _ in range(16):
        b = bytearray(data)
        if b:
            i = rng.randrange(min(len(b), 80))
            b[i] ^= 1 << rng.randrange(8)
        out.append((port, bytes(b)))
    out += [(port, data + bytes(rng.randrange(256) for _ in range(20)))]
    out += [(port, data[: len(data) // 2]), (port, data[:-1] if data else data), (port, b"")]
    out += [((port + 1) & 0x1FF, data)]
    return out


def _same(nat: Switch, py: Switch, port: int, data: bytes) -> None:
    results = []
    for sw in (nat, py):
        try:
            results.append(sw.process_packet(port, data))
        except SwitchError as exc:
            results.append(repr(exc))
    assert results[0] == results[1], f"port {port} packet {data.hex()}"
    assert nat.drop_log == py.drop_log, f"port {port} packet {data.hex()}"


def _native_cases() -> list[Path]:
    out = []
    for src in CASES:
        try:
            bmv2 = compile_file(src, include_dirs=[str(src.parent)]).bmv2
        except CompileError:
            continue
        if plan(load_program(bmv2))[0] is not None:
            out.append(src)
    return out


NATIVE_CASES = _native_cases()


def test_enough_programs_run_native() -> None:
    """The differential test below means something only if the native data plane covers many of
    the test programs (the rest use stacks, varbits, meters, clones, digests, wide fields...)."""
    assert len(NATIVE_CASES) >= 40, [p.stem for p in NATIVE_CASES]


@pytest.mark.parametrize("src", NATIVE_CASES, ids=[p.stem for p in NATIVE_CASES])
def test_native_and_python_give_the_same_packets_andstate(src: Path) -> None:
    bmv2 = _compile(src)
    nat, py = _pair(bmv2)
    assert nat.native_active and not py.native_active, nat.native_reason
    rng = random.Random(src.stem)
    run_on_both(nat, py, src, bmv2, rng, lambda port, data: _variants(rng, port, data), _same)


# ---------------------------------------------------------------------------------------------- INC


def _inc() -> tuple[dict, Any]:
    sys.path.insert(0, str(ROOT / "scripts"))
    import bench_switch

    bmv2 = compile_file(ROOT / "p4src" / "inc.p4", include_dirs=[str(ROOT / "p4src")]).bmv2
    return bmv2, bench_switch


@pytest.mark.parametrize("wide", [False, True], ids=["int32", "wide32"])
def test_inc_aggregates_the_same_on_both(wide: bool) -> None:
    """INC's protocol through both data planes (the benchmark's tenant, tree and contributions):
    every chunk completes and its sum is multicast to the three children, identically; then the
    same contributions again (duplicates, which the protocol drops and counts), damaged copies
    (bad checksums, bits flipped anywhere) and short ones; registers and counters equal. wide32: the
    contributions carry 256 values each (four chunks), as workers send int32 sums 256 to a packet."""
    bmv2, bench = _inc()
    nat, py = bench.IncBench(bmv2, native=True, wide=wide), bench.IncBench(bmv2, native=False, wide=wide)
    assert nat.sw.native_active and not py.sw.native_active, nat.sw.native_reason
    frames = nat.frames(300)
    results = 0
    for port, data in frames:
        a, b = nat.sw.process_packet(port, data), py.sw.process_packet(port, data)
        assert a == b
        assert nat.sw.drop_log == py.sw.drop_log
        results += len(a)
    assert results == len(frames), "every chunk completed, its result sent to each child"
    rng = random.Random(7)
    for port, data in frames[:60]:
        _same(nat.sw, py.sw, port, data)  # a duplicate
        b = bytearray(data)
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        _same(nat.sw, py.sw, port, bytes(b))
        _same(nat.sw, py.sw, port, data[: rng.randrange(len(data))])
    later = nat.frames(96, first_chunk=5000)
    for port in (1, 2, 3):  # batches as the port loop hands them over
        group = [d for p, d in later if p == port]
        assert nat.sw.process_batch(port, group) == py.sw.process_batch(port, group)
    assert state(nat.sw, bmv2) == state(py.sw, bmv2)
    cells = (
        "TributaryIngress.aggregation.wide.wcell_chunk" if wide else "TributaryIngress.aggregation.cell_chunk"
    )
    assert any(nat.sw.register_read_all(cells))


# ------------------------------------------------------------------------------ directed behaviour


def _lpm_pair() -> tuple[Switch, Switch, bytes]:
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_switch import build_frame

    nat, py = _pair(_compile(LPM))
    for sw in (nat, py):
        sw.table_add(
            "MyIngress.ipv4_lpm", [((10 << 24) | (2 << 8), 24)], "MyIngress.ipv4_forward", [0x020000000202, 2]
        )
    return nat, py, build_frame()


def test_writes_between_packets_reach_the_native_tables() -> None:
    nat, py, frame = _lpm_pair()
    _same(nat, py, 1, frame)
    assert nat.process_packet(1, frame)[0][0] == 2
    key = [((10 << 24) | (2 << 8), 24)]
    for sw in (nat, py):
        sw.table_modify(
            "MyIngress.ipv4_lpm",
            sw.table_find("MyIngress.ipv4_lpm", key),
            "MyIngress.ipv4_forward",
            [0x020000000303, 3],
        )
    _same(nat, py, 1, frame)
    assert nat.process_packet(1, frame)[0][0] == 3
    for sw in (nat, py):
        sw.table_add(
            "MyIngress.ipv4_lpm",
            [((10 << 24) | (2 << 8) | 1, 32)],
            "MyIngress.ipv4_forward",
            [0x020000000404, 4],
        )
    _same(nat, py, 1, frame)
    for sw in (nat, py):
        sw.table_clear("MyIngress.ipv4_lpm")
    _same(nat, py, 1, frame)
    assert nat.process_packet(1, frame) == []
    assert nat.drop_log == py.drop_log != []


def test_tracing_and_rated_ports_fall_back_to_python_with_the_samestate() -> None:
    nat, py, frame = _lpm_pair()
    lines: list[str] = []
    nat.set_trace(lines.append)
    py.set_trace(lambda s: None)
    assert not nat.native_active
    _same(nat, py, 1, frame)
    assert lines, "the Python data plane traced the packet"
    nat.set_trace(None)
    py.set_trace(None)
    assert nat.native_active
    _same(nat, py, 1, frame)
    nat.set_queue_rate(1000.0, port=2)
    assert not nat.native_active, "a rated port needs the traffic manager's general path"
    nat.set_queue_rate(0.0, port=2)
    assert nat.native_active


def test_registers_and_counters_are_cells_the_control_plane_shares() -> None:
    bmv2, _ = _inc()
    nat, py = _pair(bmv2)
    name = "TributaryIngress.aggregation.cell_chunk"
    assert isinstance(nat._state.registers[name], Cells)
    nat.register_write(name, 3, (1 << 40) | 5)  # truncated to the register's 32 bits
    py.register_write(name, 3, (1 << 40) | 5)
    assert nat.register_read(name, 3) == py.register_read(name, 3) == 5
    nat.register_reset(name)
    assert not any(nat.register_read_all(name))
    with pytest.raises(ValueError):
        nat._state.registers[name][:] = [0]
    c = "TributaryIngress.aggregation.inc_stats"
    nat.counter_write(c, 1, 7, 700)
    assert nat.counter_read(c, 1) == (7, 700)
    nat.counter_reset(c)
    assert nat.counter_read(c, 1) == (0, 0)


def test_a_program_outside_the_native_subset_says_why_and_runs_in_python() -> None:
    outside = [p for p in CASES if p not in NATIVE_CASES]
    assert outside
    for src in outside:
        try:
            bmv2 = compile_file(src, include_dirs=[str(src.parent)]).bmv2
        except CompileError:
            continue
        sw = Switch(native=True)
        sw.load_pipeline(bmv2)
        assert not sw.native_active
        assert sw.native_reason, src.stem
        return
    pytest.fail("no compilable program outside the native subset")


def test_no_native_keeps_the_python_data_plane(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("P4KIT_NATIVE", "0")
    sw = Switch()
    sw.load_pipeline(_compile(LPM))
    assert not sw.native_active and sw.native_reason == "off (--no-native)"


def test_a_failing_compiler_leaves_the_python_data_plane(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A compiler that fails (or a cache that cannot be written) is a reason, not a dead switch."""
    monkeypatch.setenv("P4KIT_NATIVE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("P4KIT_CC", "false")  # exits 1 without a word
    sw = Switch(native=True)
    sw.load_pipeline(_compile(LPM))
    assert not sw.native_active
    assert "did not compile" in (sw.native_reason or ""), sw.native_reason
    sw.table_add(
        "MyIngress.ipv4_lpm", [((10 << 24) | (2 << 8), 24)], "MyIngress.ipv4_forward", [0x020000000202, 2]
    )
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_switch import build_frame

    assert sw.process_packet(1, build_frame())[0][0] == 2


def test_checksums_over_the_payload_at_odd_offsets() -> None:
    """A checksum over a 3-byte field, then the 1-byte header the deparser emits after the one used,
    then the payload: each piece starts at an odd byte of the sum, where a byte in the wrong half of
    its 16-bit word changes the result (what csum_feed in runtime.c must get right)."""
    from p4kit.switch.hashes import csum16
    from p4kit.switch.jsonbuild import HX, F, JsonBuilder, assign

    b = JsonBuilder()
    b.add_header("a", [("x", 24), ("ck", 16)])
    b.add_header("o", [("y", 8)])
    b.state("start", [b.extract("a"), b.extract("o")])
    b.deparse("a", "o")
    b.calculation("c", "csum16", [F("a", "x"), {"type": "payload", "value": None}])
    b.checksum("k", ["a", "ck"], "c", verify=False, update=True)
    b.action("out", [], [assign(F("standard_metadata", "egress_spec"), HX(2))])
    b.init("ingress", b.call("out"))
    nat, py = _pair(b.build())
    assert nat.native_active, nat.native_reason
    rng = random.Random(3)
    for n in range(12):
        data = bytes(rng.randrange(256) for _ in range(6 + n))
        _same(nat, py, 1, data)
        ((port, out),) = nat.process_packet(1, data)
        assert port == 2
        assert int.from_bytes(out[3:5], "big") == csum16(data[:3] + data[5:])


def test_checksums_over_fields_that_start_on_any_bit_match_the_byte_buffer_sum() -> None:
    """csum16 over a field list whose fields start on and off 16-bit words, depending on whether an
    optional header in the middle was extracted (its fields are skipped when it is invalid): runtime.c
    adds word-aligned fields straight into the sum and writes the others into the buffer
    (csum_field), which must give the checksum of the whole list laid out in one buffer."""
    from p4kit.switch.hashes import csum16
    from p4kit.switch.jsonbuild import HX, F, JsonBuilder, assign

    a = [("p", 4), ("q", 12), ("r", 16), ("s", 8), ("t", 24), ("u", 64), ("v", 48), ("ck", 16)]
    o = [("x", 8), ("y", 16), ("z", 32)]
    b = JsonBuilder()
    b.add_header("a", a)
    b.add_header("o", o)
    b.state("start", [b.extract("a")], [F("a", "p")], [(1, None, "opt"), ("default", None, None)])
    b.state("opt", [b.extract("o")])
    b.deparse("a", "o")
    fields = [F("a", "p"), F("a", "q"), F("a", "r"), F("a", "s"), F("o", "x"), F("o", "y"), F("a", "t")]
    fields += [F("a", "u"), F("o", "z"), F("a", "v")]
    b.calculation("c", "csum16", fields)
    b.checksum("k", ["a", "ck"], "c", verify=False, update=True)
    b.action("out", [], [assign(F("standard_metadata", "egress_spec"), HX(2))])
    b.init("ingress", b.call("out"))
    nat, py = _pair(b.build())
    assert nat.native_active, nat.native_reason
    rng = random.Random(5)

    def bits(data: bytes, layout: list[tuple[str, int]]) -> dict[str, tuple[int, int]]:
        value, out, pos = int.from_bytes(data, "big"), {}, 0
        total = 8 * len(data)
        for name, w in layout:
            out[name] = ((value >> (total - pos - w)) & ((1 << w) - 1), w)
            pos += w
        return out

    for n in range(40):
        with_o = n % 2 == 0
        head = bytes([(1 if with_o else 2) << 4 | rng.randrange(16)]) + bytes(
            rng.randrange(256) for _ in range(25)
        )
        data = head + (bytes(rng.randrange(256) for _ in range(7)) if with_o else b"") + bytes(n % 5)
        _same(nat, py, 1, data)
        ((_, out),) = nat.process_packet(1, data)
        fa = bits(data[:24], a)  # 192 bits
        fo = bits(data[24:31], o) if with_o else {}
        order = [
            ("a", "p"),
            ("a", "q"),
            ("a", "r"),
            ("a", "s"),
            ("o", "x"),
            ("o", "y"),
            ("a", "t"),
            ("a", "u"),
        ]
        order += [("o", "z"), ("a", "v")]
        laid, width = 0, 0
        for h, name in order:
            if h == "o" and not with_o:
                continue
            v, w = (fa if h == "a" else fo)[name]
            laid, width = (laid << w) | v, width + w
        pad = -width % 8
        expect = csum16((laid << pad).to_bytes((width + pad) // 8, "big"))
        assert int.from_bytes(out[22:24], "big") == expect  # a.ck


def test_header_stacks_match_the_python_data_plane() -> None:
    """A parser loop that extracts labels into a stack until bos (StackOutOfBounds past three,
    PacketTooShort on a cut packet), then actions that pop, push, write an element at a constant
    index and count the stack: random packets through both data planes."""
    from p4kit.switch.jsonbuild import HX, F, JsonBuilder, X, assign

    sm = "standard_metadata"
    b = JsonBuilder()
    b.add_header("top", [("type", 8)])
    b.header_type("label_t", [("label", 7), ("bos", 1)])
    b.header_stack("labels", "label_t", 3)
    b.add_header("info", [("err", 8), ("n", 8), ("last", 8)])
    b.state(
        "start",
        [b.extract("top")],
        key=[F("top", "type")],
        transitions=[(1, None, "label"), ("default", None, None)],
    )
    b.state(
        "label",
        [b.extract_next("labels")],
        key=[{"type": "stack_field", "value": ["labels", "bos"]}],
        transitions=[(1, None, None), ("default", None, "label")],
    )
    b.deparse("info", "top", "labels[0]", "labels[1]", "labels[2]")
    stack = {"type": "header_stack", "value": "labels"}
    size = {"type": "expression", "value": {"op": "size_stack", "left": None, "right": stack}}
    record = [
        {"op": "add_header", "parameters": [{"type": "header", "value": "info"}]},
        assign(F("info", "err"), F(sm, "parser_error")),
        assign(F("info", "n"), size),
        assign(F("info", "last"), {"type": "stack_field", "value": ["labels", "label"]}),
        assign(F(sm, "egress_spec"), HX(1)),
    ]
    b.action("pop", [], [{"op": "pop", "parameters": [stack, HX(1)]}, *record])
    b.action(
        "push",
        [],
        [
            {"op": "push", "parameters": [stack, HX(2)]},
            {"op": "add_header", "parameters": [{"type": "header", "value": "labels[0]"}]},
            assign(F("labels[0]", "label"), X("&", X("+", F("top", "type"), HX(3)), HX(0x7F))),
            *record,
        ],
    )
    t_pop, t_push = b.call("pop"), b.call("push")
    b.conditional("c", X("d2b", None, F("labels[1]", "$valid$")), t_pop, t_push)
    b.init("ingress", "c")
    nat, py = _pair(b.build())
    assert nat.native_active, nat.native_reason
    rng = random.Random(11)
    for _ in range(400):
        n = rng.randrange(0, 6)
        data = bytes([rng.choice((0, 1, 1, 1))] + [rng.randrange(256) for _ in range(n)])
        _same(nat, py, 1, data)


@pytest.mark.parametrize(
    "algo", ["crc16", "crc32", "crcCCITT", "crc16_custom", "crc32_custom", "identity", "xor16"]
)
def test_hashes_match_the_python_data_plane_and_follow_new_crc_parameters(algo: str) -> None:
    """hash() as p4c lowers it (modify_field_with_hash_based_offset) over a 3-byte field and a
    1-byte one, base 5 and size 1000, on random packets; a custom CRC again after
    set_crc_parameters (CRC-16/CCITT-FALSE, CRC-32C), which the native data plane must pick up."""
    from p4kit.switch.jsonbuild import HX, F, JsonBuilder

    b = JsonBuilder()
    b.add_header("a", [("x", 24), ("y", 8), ("h", 32)])
    b.state("start", [b.extract("a")])
    b.deparse("a")
    b.calculation("c", algo, [F("a", "x"), F("a", "y")])
    b.action(
        "hash",
        [],
        [
            {
                "op": "modify_field_with_hash_based_offset",
                "parameters": [F("a", "h"), HX(5), {"type": "calculation", "value": "c"}, HX(1000)],
            },
            assign(F("standard_metadata", "egress_spec"), HX(1)),
        ],
    )
    b.init("ingress", b.call("hash"))
    nat, py = _pair(b.build())
    assert nat.native_active, nat.native_reason
    rng = random.Random(algo)
    packets = [bytes(rng.randrange(256) for _ in range(8)) for _ in range(64)]
    before = []
    for data in packets:
        _same(nat, py, 1, data)
        before.append(nat.process_packet(1, data))
    if algo.endswith("_custom"):
        params = (
            (0x1021, 0xFFFF, 0, False, False)
            if algo == "crc16_custom"
            else (0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, True, True)
        )
        for sw in (nat, py):
            sw.set_crc_parameters("c", *params)
        after = []
        for data in packets:
            _same(nat, py, 1, data)
            after.append(nat.process_packet(1, data))
        assert after != before
