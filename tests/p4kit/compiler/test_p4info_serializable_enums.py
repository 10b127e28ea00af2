"""Serializable enums in P4Info: p4c lists each enum that types a packet-in/out field in
type_info.serializable_enums (underlying width, members with values as bytestrings of that width) and
names it in the metadata's type_name; controllers such as the tutorials' flowcache read them."""

from __future__ import annotations

from pathlib import Path

from p4kit.compiler.driver import compile_file
from p4kit.compiler.p4info import build_p4info

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "controller_serializable_enum.p4"


def test_enum_typed_packet_io_fields_name_their_enum() -> None:
    p4info = build_p4info(compile_file(PROGRAM).control_plane)
    meta = {c.preamble.name: c for c in p4info.controller_packet_metadata}
    out = {m.name: m for m in meta["packet_out"].metadata}
    assert out["opcode"].type_name.name == "ControllerOpcode_t" and out["opcode"].bitwidth == 8
    assert not out["egress_port"].HasField("type_name")
    pin = {m.name: m for m in meta["packet_in"].metadata}
    assert pin["reason"].type_name.name == "PuntReason_t"


def test_type_info_lists_each_enum_with_its_members() -> None:
    enums = build_p4info(compile_file(PROGRAM).control_plane).type_info.serializable_enums
    assert set(enums) == {"ControllerOpcode_t", "PuntReason_t"}
    op = enums["ControllerOpcode_t"]
    assert op.underlying_type.bitwidth == 8
    assert [(m.name, m.value) for m in op.members] == [
        ("NO_OP", b"\0"),
        ("SEND_TO_PORT", b"\x01"),
        ("ECHO", b"\x2a"),
    ]
    assert [(m.name, m.value) for m in enums["PuntReason_t"].members] == [
        ("FLOW_UNKNOWN", b"\x01"),
        ("ECHOED", b"\x02"),
    ]
