"""Parser semantics (errors into parser_error, stacks, lookahead, verify, value sets), the deparser,
per-packet traces, and hypothesis tests that malformed packets never raise out of process_packet."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p4kit.switch import Switch
from p4kit.switch.jsonbuild import HX, RD, F, JsonBuilder, X, assign

SM = "standard_metadata"


def stack_program() -> JsonBuilder:
    """eth-like type(16); then up to 3 labels (label 8, bos 8) until bos == 1; then a 2-byte tail.
    Ingress writes parser_error into a metadata field emitted in an `info` header."""
    b = JsonBuilder()
    b.add_header("top", [("type", 16)])
    b.header_type("label_t", [("label", 8), ("bos", 8)])
    b.header_stack("labels", "label_t", 3)
    b.add_header("tail", [("t", 16)])
    b.add_header("info", [("err", 8), ("nlabels", 8)])
    b.state(
        "start",
        [b.extract("top")],
        key=[F("top", "type")],
        transitions=[(0x8847, None, "label"), ("vs", None, "tail"), ("default", None, None)],
    )
    b.state(
        "label",
        [b.extract_next("labels")],
        key=[{"type": "stack_field", "value": ["labels", "bos"]}],
        transitions=[(1, None, "tail"), ("default", None, "label")],
    )
    b.state("tail", [b.extract("tail")])
    b.parse_vset("vs", 16)
    b.deparse("info", "top", "labels[0]", "labels[1]", "labels[2]", "tail")
    b.action(
        "rec",
        [],
        [
            P_add("info"),
            assign(F("info", "err"), F(SM, "parser_error")),
            assign(
                F("info", "nlabels"),
                X(
                    "+",
                    X("+", F("labels[0]", "$valid$"), F("labels[1]", "$valid$")),
                    F("labels[2]", "$valid$"),
                ),
            ),
            assign(F(SM, "egress_spec"), HX(1)),
        ],
    )
    b.init("ingress", b.call("rec"))
    return b


def P_add(h: str) -> dict:
    return {"op": "add_header", "parameters": [{"type": "header", "value": h}]}


def load(b: JsonBuilder) -> Switch:
    sw = Switch()
    sw.raise_internal_errors = True
    sw.load_pipeline(b.build())
    return sw


def test_stack_extraction_and_payload() -> None:
    sw = load(stack_program())
    pkt = bytes.fromhex("8847") + bytes([10, 0, 20, 1]) + bytes.fromhex("beef") + b"rest"
    out = sw.process_packet(0, pkt)
    assert out == [(1, bytes([0, 2]) + pkt)]


def test_stack_out_of_bounds_and_too_short_set_parser_error() -> None:
    sw = load(stack_program())
    pkt = bytes.fromhex("8847") + bytes([1, 0, 2, 0, 3, 0, 4, 0])
    out = sw.process_packet(0, pkt)
    # three labels extracted, the fourth overflows: StackOutOfBounds (3); the rest is payload
    assert out == [(1, bytes([3, 3]) + pkt)]
    out = sw.process_packet(0, bytes.fromhex("8847") + bytes([1]))
    assert out == [(1, bytes([1, 0]) + bytes.fromhex("8847") + bytes([1]))]  # PacketTooShort
    assert sw.process_packet(0, b"") == [(1, bytes([1, 0]))]


def test_parse_value_set() -> None:
    sw = load(stack_program())
    pkt = bytes.fromhex("1234abcd")
    assert sw.process_packet(0, pkt) == [(1, bytes([0, 0]) + pkt)]
    sw.parse_vset_add("vs", 0x1234)
    assert sw.parse_vset_get("vs") == [0x1234]
    assert sw.process_packet(0, pkt) == [(1, bytes([0, 0]) + pkt)]  # tail parsed and re-emitted
    assert sw.process_packet(0, bytes.fromhex("12")) == [(1, bytes([1, 0, 0x12]))]


def lookahead_program() -> Switch:
    b = JsonBuilder()
    b.add_header("a", [("x", 8)])
    b.add_header("b", [("y", 16)])
    b.add_header("info", [("err", 8)])
    b.state(
        "start",
        [],
        key=[{"type": "lookahead", "value": [4, 4]}],
        transitions=[(0xF, None, "pa"), ("default", None, "pb")],
    )
    b.state(
        "pa",
        [b.extract("a"), {"op": "verify", "parameters": [X("!=", F("a", "x"), HX(0xFF)), HX(2)]}],
    )
    b.state("pb", [b.extract("b")])
    b.deparse("info", "a", "b")
    b.action(
        "rec",
        [],
        [P_add("info"), assign(F("info", "err"), F(SM, "parser_error")), assign(F(SM, "egress_spec"), HX(1))],
    )
    b.init("ingress", b.call("rec"))
    return load(b)


def test_lookahead_and_verify() -> None:
    sw = lookahead_program()
    assert sw.process_packet(0, bytes([0x0F, 9])) == [(1, bytes([0, 0x0F, 9]))]
    assert sw.process_packet(0, bytes([0x10, 9])) == [(1, bytes([0, 0x10, 9]))]
    assert sw.process_packet(0, bytes([0xFF])) == [(1, bytes([2, 0xFF]))]  # verify failed: NoMatch (2)
    assert sw.process_packet(0, b"") == [(1, bytes([1]))]  # lookahead beyond the end


def test_trace_reports_states_tables_and_decisions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("P4KIT_NATIVE", "0")  # it reads the Python engine's generated source
    b = JsonBuilder()
    b.add_header("h", [("k", 8)])
    b.state("start", [b.extract("h")])
    b.deparse("h")
    b.action("fwd", [("port", 9)], [assign(F(SM, "egress_spec"), RD(0))])
    b.action("drop", [], [{"op": "mark_to_drop", "parameters": [{"type": "header", "value": SM}]}])
    b.table("t", [("exact", ["h", "k"])], ["fwd", "drop"], default=("drop", []))
    b.init("ingress", "t")
    sw = load(b)
    sw.table_add("t", [1], "fwd", [7])
    lines: list[str] = []
    sw.set_trace(lines.append)
    sw.process_packet(3, b"\x01")
    text = "\n".join(lines)
    assert "parser: state start" in text
    assert "extract h {k=0x1}" in text
    assert "table t: hit key={h.k=0x1}" in text and "fwd(port=0x7)" in text
    assert "emit 1 bytes on port 7" in text
    lines.clear()
    sw.process_packet(3, b"\x02")
    assert any("table t: miss" in x for x in lines)
    assert any(x.startswith("drop:") for x in lines)
    sw.set_trace(None)
    lines.clear()
    sw.process_packet(3, b"\x01")
    assert lines == []
    assert "TR(" not in sw._engine.comp.source  # no trace code when tracing is off


def basic_ipv4() -> Switch:
    b = JsonBuilder()
    b.add_header("eth", [("dst", 48), ("src", 48), ("type", 16)])
    ipf = [
        ("v", 4),
        ("ihl", 4),
        ("tos", 8),
        ("len", 16),
        ("id", 16),
        ("fl", 3),
        ("fo", 13),
        ("ttl", 8),
        ("p", 8),
        ("ck", 16),
        ("s", 32),
        ("d", 32),
    ]
    b.add_header("ip", ipf)
    b.state(
        "start",
        [b.extract("eth")],
        key=[F("eth", "type")],
        transitions=[(0x0800, None, "ip"), ("default", None, None)],
    )
    b.state("ip", [b.extract("ip")])
    b.deparse("eth", "ip")
    b.calculation("c", "csum16", [F("ip", n) for n, _ in ipf if n != "ck"])
    b.checksum("ck", ["ip", "ck"], "c", verify=True, update=True, cond=X("d2b", None, F("ip", "$valid$")))
    b.action(
        "fwd",
        [("mac", 48), ("port", 9)],
        [
            assign(F(SM, "egress_spec"), RD(1)),
            assign(F("eth", "src"), F("eth", "dst")),
            assign(F("eth", "dst"), RD(0)),
            assign(F("ip", "ttl"), X("&", X("+", F("ip", "ttl"), HX(0xFF)), HX(0xFF))),
        ],
    )
    b.action("drop", [], [{"op": "mark_to_drop", "parameters": [{"type": "header", "value": SM}]}])
    b.table("lpm", [("lpm", ["ip", "d"])], ["fwd", "drop"], default=("drop", []))
    b.conditional("c0", X("d2b", None, F("ip", "$valid$")), "lpm", None)
    b.init("ingress", "c0")
    sw = Switch()
    sw.load_pipeline(b.build())
    sw.table_add("lpm", [(0x0A000000, 8)], "fwd", [0x0A0B0C0D0E0F, 2])
    return sw


def test_ipv4_forwarding_end_to_end() -> None:
    sw = basic_ipv4()
    ip = bytearray(
        struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28, 1, 0, 64, 17, 0, bytes([1, 2, 3, 4]), bytes([10, 1, 2, 3]))
    )
    from p4kit.switch.hashes import csum16

    ip[10:12] = csum16(bytes(ip)).to_bytes(2, "big")
    pkt = bytes.fromhex("0000000000010000000000020800") + bytes(ip) + b"8bytes!!"
    [(port, out)] = sw.process_packet(1, pkt)
    assert port == 2
    assert out[:12] == bytes.fromhex("0a0b0c0d0e0f000000000001")
    assert out[14 + 8] == 63
    assert csum16(out[14:34]) == 0
    assert out[34:] == b"8bytes!!"


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=80), st.integers(0, 511))
def test_random_bytes_never_raise(data: bytes, port: int) -> None:
    for sw in (_IPV4, _STACK, _LOOK):
        out = sw.process_packet(port, data)
        assert isinstance(out, list)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 60), st.binary(min_size=60, max_size=60))
def test_truncated_valid_packets(cut: int, noise: bytes) -> None:
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28, 1, 0, 64, 17, 0, bytes(4), bytes([10, 1, 2, 3]))
    pkt = (bytes(12) + b"\x08\x00" + ip + noise)[:cut]
    out = _IPV4.process_packet(0, pkt)
    if cut < 34:
        # eth or ip too short: parser_error set, ip invalid, so no table: leaves on port 0 unchanged
        assert out == [(0, pkt)]


_IPV4 = basic_ipv4()
_STACK = load(stack_program())
_LOOK = lookahead_program()


def test_parse_value_set_values_are_unpadded_multi_field_keys() -> None:
    b = JsonBuilder()
    b.add_header("h", [("a", 12), ("b", 4)])
    b.add_header("t", [("x", 8)])
    b.state(
        "start",
        [b.extract("h")],
        key=[F("h", "a"), F("h", "b")],
        transitions=[("pvs", None, "tail"), ("default", None, None)],
    )
    b.state("tail", [b.extract("t")])
    b.parse_vset("pvs", 16)
    b.deparse("h", "t")
    b.action("x", [], [assign(F("t", "x"), HX(0x77)), assign(F(SM, "egress_spec"), HX(1))])
    b.init("ingress", b.call("x"))
    sw = load(b)
    assert sw.process_packet(0, bytes.fromhex("abc511")) == [
        (1, bytes.fromhex("abc511"))
    ]  # no match: t invalid
    sw.parse_vset_add("pvs", 0xABC5)  # a = 0xABC, b = 5, concatenated without padding
    assert sw.process_packet(0, bytes.fromhex("abc511")) == [(1, bytes.fromhex("abc577"))]
    assert sw.parse_vset_get("pvs") == [0xABC5]
    sw.parse_vset_remove("pvs", 0xABC5)
    assert sw.process_packet(0, bytes.fromhex("abc511")) == [(1, bytes.fromhex("abc511"))]


def test_endless_parser_loop_and_action_loop_end_with_a_reason() -> None:
    b = JsonBuilder()
    b.add_header("h", [("x", 8)])
    b.add_header("info", [("err", 8)])
    # `spin` loops on itself without extracting anything when x == 1
    b.state(
        "start", [b.extract("h")], key=[F("h", "x")], transitions=[(1, None, "spin"), ("default", None, None)]
    )
    b.state("spin", [], key=[F("h", "x")], transitions=[(1, None, "spin"), ("default", None, None)])
    b.deparse("info", "h")
    b.action(
        "loop",
        [],
        [
            P_add("info"),
            assign(F("info", "err"), F(SM, "parser_error")),
            assign(F(SM, "egress_spec"), HX(1)),
            {"op": "_jump_if_zero", "parameters": [X("==", F("h", "x"), HX(2)), HX(5)]},
            {"op": "_jump", "parameters": [HX(4)]},  # x == 2: jumps to itself forever
        ],
    )
    b.init("ingress", b.call("loop"))
    sw = Switch()
    sw.load_pipeline(b.build())
    assert sw.process_packet(0, b"\x01") == [(1, bytes([5, 1]))]  # ParserTimeout (5)
    assert sw.process_packet(0, b"\x02") == []
    assert "did not terminate" in sw.drop_log[0]
