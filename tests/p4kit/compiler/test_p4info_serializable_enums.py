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


DIGEST_PROGRAM = """
#include <core.p4>
#include <v1model.p4>
enum bit<8> Proto { TCP = 6, UDP = 17 }
header h_t { bit<32> addr; Proto p; }
struct headers_t { h_t h; }
struct meta_t { }
struct learn_t { bit<32> addr; Proto p; bit<9> port; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply { digest<learn_t>(1, { hdr.h.addr, hdr.h.p, sm.ingress_port }); }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_digest_member_of_an_enum_type_names_the_enum(tmp_path: Path) -> None:
    """A digested struct's member of a serializable enum type is `serializable_enum { name }` in
    type_info.structs (p4c's TypeSpecConverter), and the enum is listed with its members."""
    src = tmp_path / "learn.p4"
    src.write_text(DIGEST_PROGRAM)
    p4info = build_p4info(compile_file(src).control_plane)
    members = {m.name: m.type_spec for m in p4info.type_info.structs["learn_t"].members}
    assert members["p"].serializable_enum.name == "Proto"
    assert members["addr"].bitstring.bit.bitwidth == 32 and members["port"].bitstring.bit.bitwidth == 9
    proto = p4info.type_info.serializable_enums["Proto"]
    assert [(m.name, m.value) for m in proto.members] == [("TCP", b"\x06"), ("UDP", b"\x11")]
