"""Externs: counters, meters (RFC 2698 with a controlled clock), registers, hashes against known
vectors, checksums (verify and update), log_msg, assert, and the control API's index errors."""

from __future__ import annotations

import pytest

from p4kit.switch import Switch, hashes
from p4kit.switch.errors import BadIndexError, InvalidOperationError, UnknownNameError
from p4kit.switch.jsonbuild import HX, NAMED, F, JsonBuilder, P, X, assign

SM = "standard_metadata"


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def base() -> JsonBuilder:
    b = JsonBuilder()
    b.add_header("h", [("a", 8), ("b", 8), ("r", 32)])
    b.state("start", [b.extract("h")])
    b.deparse("h")
    return b


def make(b: JsonBuilder, actions: list[str], **kw) -> Switch:
    prev = None
    for a in reversed(actions):
        prev = b.call(a, next_node=prev, name=f"t_{a}")
    b.init("ingress", prev)
    sw = Switch(**kw)
    sw.raise_internal_errors = True
    sw.load_pipeline(b.build())
    return sw


def test_known_hash_vectors() -> None:
    data = b"123456789"
    assert hashes.make_algorithm("crc16")(data) == 0xBB3D
    assert hashes.make_algorithm("crc32")(data) == 0xCBF43926
    assert hashes.make_algorithm("crcCCITT")(data) == 0x29B1
    assert hashes.make_algorithm("crc16_custom")(data) == 0xBB3D
    ip = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert hashes.csum16(ip) == 0xB861
    assert hashes.csum16_int(int.from_bytes(ip, "big"), len(ip) * 8) == 0xB861
    assert hashes.csum16(b"") == 0xFFFF
    assert hashes.xor16(bytes.fromhex("12345678")) == 0x1234 ^ 0x5678
    assert hashes.identity(bytes.fromhex("0102")) == 0x0102
    assert hashes.Crc(hashes.CrcParams(16, 0x1021, 0, 0, True, True))(data) == 0x2189  # CRC-16/KERMIT


@pytest.mark.parametrize("algo", ["crc16", "crc32", "crcCCITT", "csum16", "xor16", "identity"])
def test_hash_primitive_matches_the_algorithm(algo: str) -> None:
    b = base()
    b.calculation("c", algo, [F("h", "a"), F("h", "b")])
    b.action(
        "hash",
        [],
        [P("modify_field_with_hash_based_offset", F("h", "r"), HX(10), NAMED("calculation", "c"), HX(1000))],
    )
    sw = make(b, ["hash"])
    for a, bb in [(1, 2), (0xAB, 0xCD), (0, 0)]:
        out = sw.process_packet(0, bytes([a, bb, 0, 0, 0, 0]))[0][1]
        expect = 10 + hashes.make_algorithm(algo)(bytes([a, bb])) % 1000
        assert int.from_bytes(out[2:6], "big") == expect


def test_indirect_counter_counts_packets_and_bytes() -> None:
    b = base()
    b.counter("cnt", 4)
    b.action("count", [], [P("count", NAMED("counter_array", "cnt"), F("h", "a"))])
    sw = make(b, ["count"])
    for a in (1, 1, 2, 9):  # index 9 is out of range: ignored by the data plane
        sw.process_packet(0, bytes([a, 0, 0, 0, 0, 0]) + b"xx")
    assert sw.counter_read("cnt", 1) == (2, 16)
    assert sw.counter_read("cnt", 2) == (1, 8)
    sw.counter_write("cnt", 3, 5, 6)
    assert sw.counter_read("cnt", 3) == (5, 6)
    sw.counter_reset("cnt")
    assert sw.counter_read("cnt", 1) == (0, 0)
    with pytest.raises(BadIndexError):
        sw.counter_read("cnt", 4)
    with pytest.raises(UnknownNameError):
        sw.counter_read("nope", 0)


def test_registers_read_write_reset() -> None:
    b = base()
    b.register("reg", 4, 16)
    b.action(
        "rw",
        [],
        [
            P("register_read", F("h", "r"), NAMED("register_array", "reg"), F("h", "a")),
            P(
                "register_write",
                NAMED("register_array", "reg"),
                F("h", "a"),
                X("+", F("h", "r"), F("h", "b")),
            ),
        ],
    )
    sw = make(b, ["rw"])
    sw.register_write("reg", 1, 0x1_0005)  # truncated to 16 bits
    assert sw.register_read("reg", 1) == 5
    out = sw.process_packet(0, bytes([1, 3, 0, 0, 0, 0]))[0][1]
    assert int.from_bytes(out[2:6], "big") == 5
    assert sw.register_read("reg", 1) == 8
    out = sw.process_packet(0, bytes([7, 3, 0, 0, 0, 0]))[0][1]  # out of range: reads 0, write ignored
    assert out[2:6] == b"\0\0\0\0"
    assert sw.register_read_all("reg") == [0, 8, 0, 0]
    sw.register_reset("reg")
    assert sw.register_read("reg", 1) == 0
    with pytest.raises(BadIndexError):
        sw.register_write("reg", 4, 1)


def test_meter_two_rate_three_colour() -> None:
    b = base()
    b.meter("m", 2, "packets")
    b.action("meter", [], [P("execute_meter", NAMED("meter_array", "m"), HX(0), F("h", "r"))])
    clock = Clock()
    sw = make(b, ["meter"], clock=clock)

    def colours(n: int) -> list[int]:
        return [sw.process_packet(0, bytes(6))[0][1][5] for _ in range(n)]

    assert colours(3) == [0, 0, 0]  # unconfigured meters say GREEN
    sw.meter_set_rates("m", 0, [(0.000001, 2), (0.000002, 4)])  # 1 and 2 packets per second
    assert sw.meter_get_rates("m", 0) == [(0.000001, 2), (0.000002, 4)]
    assert colours(6) == [0, 0, 1, 1, 2, 2]
    clock.t += 1.0  # one second refills 1 committed and 2 peak tokens
    assert colours(3) == [0, 1, 2]
    sw.meter_reset_rates("m", 0)
    assert colours(1) == [0]
    sw.meter_array_set_rates("m", [(0.000001, 1), (0.000001, 1)])
    assert colours(2) == [0, 2]
    with pytest.raises(InvalidOperationError):
        sw.meter_set_rates("m", 0, [(1, 1), (1, 1), (1, 1)])


def test_byte_meter_uses_packet_length() -> None:
    b = base()
    b.meter("m", 1, "bytes")
    b.action("meter", [], [P("execute_meter", NAMED("meter_array", "m"), HX(0), F("h", "r"))])
    clock = Clock()
    sw = make(b, ["meter"], clock=clock)
    sw.meter_set_rates("m", 0, [(0.0, 10), (0.0, 100)])
    assert sw.process_packet(0, bytes(6))[0][1][5] == 0
    assert sw.process_packet(0, bytes(6))[0][1][5] == 1  # 4 committed tokens left < 6 bytes
    assert sw.process_packet(0, bytes(60))[0][1][5] == 1
    assert sw.process_packet(0, bytes(60))[0][1][5] == 2


def ipv4_program(verify: bool, update: bool) -> Switch:
    b = JsonBuilder()
    fields = [
        ("vihl", 8),
        ("tos", 8),
        ("len", 16),
        ("id", 16),
        ("frag", 16),
        ("ttl", 8),
        ("proto", 8),
        ("csum", 16),
        ("src", 32),
        ("dst", 32),
    ]
    b.add_header("ip", fields)
    b.state("start", [b.extract("ip")])
    b.deparse("ip")
    b.calculation("c", "csum16", [F("ip", n) for n, _ in fields if n != "csum"])
    b.checksum(
        "ck", ["ip", "csum"], "c", verify=verify, update=update, cond=X("d2b", None, F("ip", "$valid$"))
    )
    b.action(
        "rec",
        [],
        [
            assign(F("ip", "tos"), F(SM, "checksum_error")),
            assign(F("ip", "ttl"), X("&", X("-", F("ip", "ttl"), HX(1)), HX(0xFF))),
        ],
    )
    b.init("ingress", b.call("rec"))
    sw = Switch()
    sw.raise_internal_errors = True
    sw.load_pipeline(b.build())
    return sw


def test_verify_and_update_checksum() -> None:
    good = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    good = good[:10] + (0xB861).to_bytes(2, "big") + good[12:]
    sw = ipv4_program(verify=True, update=True)
    out = sw.process_packet(0, good)[0][1]
    assert out[1] == 0  # checksum_error 0
    assert out[8] == 0x3F
    assert hashes.csum16(out) == 0  # updated checksum is valid
    bad = good[:10] + b"\x12\x34" + good[12:]
    out = sw.process_packet(0, bad)[0][1]
    assert out[1] == 1
    assert hashes.csum16(out) == 0


def test_log_msg_and_assert() -> None:
    b = base()
    b.action(
        "log",
        [],
        [
            P(
                "log_msg",
                {"type": "string", "value": "a={} b={}"},
                {"type": "parameters_vector", "value": [F("h", "a"), F("h", "b")]},
            )
        ],
    )
    b.action("check", [], [P("assert", X("!=", F("h", "a"), HX(0)))])
    sw = make(b, ["log", "check"])
    msgs: list[str] = []
    sw.set_log_callback(msgs.append)
    assert sw.process_packet(0, bytes([1, 2, 0, 0, 0, 0]))
    assert msgs == ["a=1 b=2"]
    assert sw.process_packet(0, bytes([0, 2, 0, 0, 0, 0])) == []
    assert "assert failed" in sw.drop_log[0]


def test_random_within_bounds() -> None:
    b = base()
    b.action("rnd", [], [P("modify_field_rng_uniform", F("h", "r"), HX(5), HX(9))])
    sw = make(b, ["rnd"])
    vals = {int.from_bytes(sw.process_packet(0, bytes(6))[0][1][2:6], "big") for _ in range(200)}
    assert vals <= set(range(5, 10)) and len(vals) > 1


def test_signed_arithmetic_and_saturation() -> None:
    b = JsonBuilder()
    b.add_header("h", [("s", 8, True), ("u", 8), ("sat", 8, True)])
    b.state("start", [b.extract("h")])
    b.deparse("h")
    b.action(
        "arith",
        [],
        [
            assign(F("h", "s"), X("two_comp_mod", X("-", F("h", "s"), HX(100)), HX(8))),
            assign(F("h", "u"), X("usat_cast", X("+", F("h", "u"), HX(200)), HX(8))),
            assign(F("h", "sat"), X("sat_cast", X("-", F("h", "sat"), HX(100)), HX(8))),
        ],
    )
    sw = make(b, ["arith"])
    out = sw.process_packet(0, bytes([0x80 + 10, 100, 0xB0]))[0][1]
    # s: -118 - 100 = -218 -> wraps to 38; u: 300 saturates to 255; sat: -80 - 100 saturates to -128
    assert out == bytes([38, 255, 0x80])


def test_unknown_extern_names() -> None:
    sw = make(base(), [])
    with pytest.raises(UnknownNameError):
        sw.register_read("x", 0)
    with pytest.raises(UnknownNameError):
        sw.meter_get_rates("x", 0)


def test_calculation_skips_invalid_headers_and_adds_payload() -> None:
    b = JsonBuilder()
    b.add_header("h", [("x", 16)])
    b.add_header("opt", [("y", 16)])
    b.add_header("out", [("r", 16), ("p", 16)])
    b.state(
        "start", [b.extract("h")], key=[F("h", "x")], transitions=[(1, None, "o"), ("default", None, None)]
    )
    b.state("o", [b.extract("opt")])
    b.deparse("out", "h", "opt")
    b.calculation("c", "csum16", [F("h", "x"), F("opt", "y")])
    b.calculation("cp", "csum16", [F("h", "x"), {"type": "payload"}])
    b.action(
        "hash",
        [],
        [
            {"op": "add_header", "parameters": [{"type": "header", "value": "out"}]},
            P(
                "modify_field_with_hash_based_offset",
                F("out", "r"),
                HX(0),
                NAMED("calculation", "c"),
                HX(0x10000),
            ),
            P(
                "modify_field_with_hash_based_offset",
                F("out", "p"),
                HX(0),
                NAMED("calculation", "cp"),
                HX(0x10000),
            ),
        ],
    )
    sw = make(b, ["hash"])
    out = sw.process_packet(0, bytes.fromhex("0001 1234 0101".replace(" ", "")))[0][1]
    assert out[0:2] == hashes.csum16(bytes.fromhex("00011234")).to_bytes(2, "big")
    # payload: the valid headers after h in deparser order (opt) and the unparsed bytes (0101)
    assert out[2:4] == hashes.csum16(bytes.fromhex("000112340101")).to_bytes(2, "big")
    out = sw.process_packet(0, bytes.fromhex("0002"))[0][1]
    assert out[0:2] == hashes.csum16(bytes.fromhex("0002")).to_bytes(2, "big")  # opt invalid: skipped


def test_custom_crc_parameters() -> None:
    b = base()
    b.calculation("c", "crc16_custom", [F("h", "a"), F("h", "b")])
    b.action(
        "hash",
        [],
        [
            P(
                "modify_field_with_hash_based_offset",
                F("h", "r"),
                HX(0),
                NAMED("calculation", "c"),
                HX(1 << 16),
            )
        ],
    )
    sw = make(b, ["hash"])

    def h(data: bytes) -> int:
        return int.from_bytes(sw.process_packet(0, data + bytes(4))[0][1][2:6], "big")

    assert h(b"12") == hashes.make_algorithm("crc16")(b"12")  # defaults: crc16's parameters
    sw.set_crc_parameters("c", 0x1021, 0, 0, True, True)  # CRC-16/KERMIT
    assert h(b"12") == hashes.Crc(hashes.CrcParams(16, 0x1021, 0, 0, True, True))(b"12")
    with pytest.raises(UnknownNameError):
        sw.set_crc_parameters("nope", 1, 0, 0, False, False)


def test_field_values_flow_through_an_action_in_order() -> None:
    """An action's writes are seen by its later reads, whatever reads them: expressions, add_to_field,
    register indices and values, and a hash calculation (a separate function reading the headers)."""
    b = base()
    b.register("reg", 256, 32)
    b.calculation("c", "identity", [F("h", "r")])
    b.action(
        "chain",
        [],
        [
            assign(F("h", "r"), F("h", "a")),  # r = a
            P("add_to_field", F("h", "r"), HX(5)),  # r = a + 5
            P("register_write", NAMED("register_array", "reg"), F("h", "b"), F("h", "r")),  # reg[b] = a + 5
            assign(F("h", "b"), X("+", F("h", "b"), HX(1))),  # b = b + 1
            P("register_read", F("h", "r"), NAMED("register_array", "reg"), X("-", F("h", "b"), HX(1))),
            P("add_to_field", F("h", "r"), HX(1)),  # r = a + 6
            # the hash reads the header lists directly: r must be there already
            P("modify_field_with_hash_based_offset", F("h", "a"), HX(0), NAMED("calculation", "c"), HX(256)),
        ],
    )
    sw = make(b, ["chain"])
    for a, bb in ((10, 3), (200, 7), (255, 100)):
        out = sw.process_packet(0, bytes([a, bb, 0, 0, 0, 0]))[0][1]
        r = a + 6
        assert out == bytes([r % 256, (bb + 1) % 256]) + r.to_bytes(4, "big")
        assert sw.register_read("reg", bb) == a + 5
