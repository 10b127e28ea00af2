"""p4kit-stf: the STF parser, packet comparison, directive execution and exit codes, using small
BMv2 JSON programs (so these tests do not depend on the compiler) plus one compiled program."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p4kit.stf.cli import main
from p4kit.stf.parser import CheckCounter, PacketDirective, StfSyntaxError, TableAdd, parse_stf
from p4kit.stf.runner import compare_packet
from p4kit.switch.jsonbuild import HX, NAMED, RD, F, JsonBuilder, P, assign

SM = "standard_metadata"


def program() -> dict:
    """h = k(16) v(8); ternary table `MyIngress.tern`, lpm `MyIngress.route`, a counter and a register."""
    b = JsonBuilder()
    b.add_header("h", [("k", 16), ("v", 8)])
    b.state("start", [b.extract("h")])
    b.deparse("h")
    b.counter("MyIngress.cnt", 4)
    b.register("MyIngress.reg", 4, 8)
    b.action("MyIngress.set_v", [("val", 8)], [assign(F("h", "v"), RD(0))])
    b.action(
        "MyIngress.fwd",
        [("port", 9)],
        [assign(F(SM, "egress_spec"), RD(0)), P("count", NAMED("counter_array", "MyIngress.cnt"), HX(1))],
    )
    b.action(
        "MyIngress.rd", [], [P("register_read", F("h", "v"), NAMED("register_array", "MyIngress.reg"), HX(2))]
    )
    b.action("NoAction", [], [])
    b.table(
        "MyIngress.tern",
        [("ternary", ["h", "k"])],
        ["MyIngress.set_v", "NoAction"],
        default=("NoAction", []),
        base_default_next="MyIngress.route",
        key_names=["hdr.h.k"],
    )
    b.table(
        "MyIngress.route",
        [("lpm", ["h", "k"])],
        ["MyIngress.fwd", "NoAction"],
        default=("NoAction", []),
        base_default_next="c",
        key_names=["hdr.h.k"],
    )
    b.call("MyIngress.rd", name="MyIngress.regtbl")
    b.conditional(
        "c",
        {"type": "expression", "value": {"op": "==", "left": F("h", "v"), "right": HX(0xEE)}},
        "MyIngress.regtbl",
        None,
    )
    b.init("ingress", "MyIngress.tern")
    return b.build()


@pytest.fixture
def prog(tmp_path: Path) -> Path:
    p = tmp_path / "prog.json"
    p.write_text(json.dumps(program()))
    return p


def run(tmp_path: Path, prog: Path, stf: str, capsys) -> tuple[int, str]:
    s = tmp_path / "t.stf"
    s.write_text(stf)
    rc = main([str(prog), str(s)])
    cap = capsys.readouterr()
    return rc, cap.out + cap.err


def test_parse_stf_lines() -> None:
    ds = parse_stf(
        """
        # comment
        add MyIngress.tern 10 hdr.h.k:0x12** MyIngress.set_v(val:1) = A
        packet 0 12 34 05  # trailing comment
        expect 1 12 3* 01 $
        EXPECT 2
        check_counter cnt(A) packets == 2
        mirroring_add 5 3
        """
    )
    assert isinstance(ds[0], TableAdd)
    assert ds[0].priority == 10 and ds[0].keys == [("hdr.h.k", "0x12**")] and ds[0].params == [("val", "1")]
    assert ds[0].handle_name == "A"
    assert isinstance(ds[1], PacketDirective) and ds[1].data == "123405"
    assert isinstance(ds[2], PacketDirective) and ds[2].data == "123*01$"
    assert ds[3].cmd == "expect" and ds[3].data == ""
    assert isinstance(ds[4], CheckCounter) and ds[4].index == "A" and ds[4].count_type == "packets"
    assert ds[5].cmd == "mirroring_add" and ds[5].args == ["5", "3"]
    with pytest.raises(StfSyntaxError, match="line 2: unknown or unsupported STF command 'frobnicate'"):
        parse_stf("\nfrobnicate 1 2\n")
    with pytest.raises(StfSyntaxError):
        parse_stf("packet x 00")
    assert parse_stf("packet 0 20 5")[0].data == "205"  # kept as written: the runner does not send it


def test_compare_packet() -> None:
    assert compare_packet("1234", bytes.fromhex("123456")) is None  # prefix match
    assert "too long" in compare_packet("1234$", bytes.fromhex("123456"))
    assert compare_packet("1*3*$", bytes.fromhex("1234")) is None
    assert "too short" in compare_packet("123456", bytes.fromhex("1234"))
    assert "nibble 1" in compare_packet("1F", bytes.fromhex("12"))


def test_pass_with_tables_counters_registers(tmp_path: Path, prog: Path, capsys) -> None:
    stf = """
    add MyIngress.tern 10 hdr.h.k:0x12** MyIngress.set_v(val:0x11)
    add MyIngress.tern 20 h.k:0x1234&&&0xFFFF MyIngress.set_v(val:0x22)
    add route k:0x1200/8 fwd(port:2)
    add route k:0x123* fwd(port:3)
    add route k:0x3456/16 fwd(port:4)
    register_write MyIngress.reg 2 0x5A
    packet 0 1234 00
    expect 3 1234 22 $
    packet 0 12FF 00
    expect 2 12FF 11 $
    packet 0 3456 EE
    expect 4 3456 5A $
    packet 0 9999 00
    expect 0 9999 00
    check_counter cnt(1) packets == 3
    check_counter MyIngress.cnt(1) bytes == 9
    check_counter cnt(0) packets < 1
    """
    rc, out = run(tmp_path, prog, stf, capsys)
    assert rc == 0, out
    assert "PASS" in out


def test_packet_on_unmentioned_port_is_not_checked(tmp_path: Path, prog: Path, capsys) -> None:
    rc, out = run(tmp_path, prog, "packet 1 9999 00\n", capsys)  # leaves on port 0, which no line names
    assert rc == 0, out


def test_mismatch_prints_port_expected_and_got(tmp_path: Path, prog: Path, capsys) -> None:
    stf = "add route k:0x1200/8 fwd(port:2)\npacket 0 1234 00\nexpect 2 1234 01\n"
    rc, out = run(tmp_path, prog, stf, capsys)
    assert rc == 1
    assert "port 2, packet 0" in out and "expected: 123401" in out and "got:      123400" in out


def test_missing_and_unexpected_packets(tmp_path: Path, prog: Path, capsys) -> None:
    rc, out = run(tmp_path, prog, "packet 5 1234 00\nexpect 2 1234 00\n", capsys)
    assert rc == 1 and "expected 1 packet(s), got 0" in out
    rc, out = run(tmp_path, prog, "packet 0 1234 00\nexpect 0 1234 00\npacket 0 1234 00\n", capsys)
    assert rc == 1 and "unexpected packet" in out
    rc, out = run(tmp_path, prog, "packet 0 1234 00\npacket 0 1234 00\nexpect 0\n", capsys)
    assert rc == 0, out  # `expect PORT` without data accepts anything


def test_failed_check_counter(tmp_path: Path, prog: Path, capsys) -> None:
    rc, out = run(tmp_path, prog, "check_counter cnt(1) packets == 5\n", capsys)
    assert rc == 1 and "check_counter MyIngress.cnt(1) packets is 0, expected == 5" in out


@pytest.mark.parametrize(
    "line, message",
    [
        ("add nope k:1 fwd(port:1)", "no table named 'nope'"),
        ("add route zz:1 fwd(port:1)", "has no key field 'zz'"),
        ("add route k:0x1/8 fwd(bad:1)", "has no parameter 'bad'"),
        ("add route k:0x1/8 fwd()", "missing parameter"),
        ("register_write MyIngress.reg 9 1", "out of range"),
        ("mc_node_associate 1 0", "does not exist"),
        ("remove 3", "only 'remove all'"),
    ],
)
def test_directive_errors_exit_1(tmp_path: Path, prog: Path, capsys, line: str, message: str) -> None:
    rc, out = run(tmp_path, prog, line + "\n", capsys)
    assert rc == 1
    assert message in out and "line 1" in out
    assert "Traceback" not in out


def test_multicast_and_mirroring_directives(tmp_path: Path, capsys) -> None:
    b = JsonBuilder()
    b.add_header("h", [("x", 8)])
    b.state("start", [b.extract("h")])
    b.deparse("h")
    b.action("mc", [], [assign(F(SM, "mcast_grp"), HX(1)), P("clone_ingress_pkt_to_egress", HX(5), HX(0))])
    b.init("ingress", b.call("mc"))
    p = tmp_path / "mc.json"
    p.write_text(json.dumps(b.build()))
    stf = """
    mc_mgrp_create 1
    mc_node_create 0 1 2
    mc_node_associate 1 0
    mirroring_add 5 7
    mirroring_get 5
    packet 0 AA
    expect 7 AA
    expect 1 AA
    expect 2 AA
    """
    rc, out = run(tmp_path, p, stf, capsys)
    assert rc == 0, out


def test_compiled_program_and_compile_errors(tmp_path: Path, capsys) -> None:
    pytest.importorskip("p4kit.compiler.driver")
    src = tmp_path / "fwd.p4"
    src.write_text(
        """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers { h_t h; }
struct meta { }
parser P(packet_in pkt, out headers hdr, inout meta m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta m) { apply { } }
control I(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; hdr.h.a = hdr.h.a + 1; }
    table t { key = { hdr.h.a: exact; } actions = { fwd; NoAction; } default_action = NoAction(); }
    apply { t.apply(); }
}
control E(inout headers hdr, inout meta m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    )
    rc, out = run(tmp_path, src, "add t hdr.h.a:5 fwd(port:3)\npacket 1 05\nexpect 3 06 $\n", capsys)
    assert rc == 0, out
    bad = tmp_path / "bad.p4"
    bad.write_text("this is not P4;\n")
    rc, out = run(tmp_path, bad, "packet 1 05\n", capsys)
    assert rc == 1 and "error" in out and "Traceback" not in out


def test_add_on_an_action_profile_table_uses_implicit_members(tmp_path: Path, capsys) -> None:
    b = JsonBuilder()
    b.add_header("h", [("k", 8)])
    b.state("start", [b.extract("h")])
    b.deparse("h")
    b.action("fwd", [("port", 9)], [assign(F(SM, "egress_spec"), RD(0))])
    b.action("NoAction", [], [])
    b.action_profile("ap")
    b.table("t", [("exact", ["h", "k"])], ["fwd", "NoAction"], default=("NoAction", []), action_profile="ap")
    b.init("ingress", "t")
    p = tmp_path / "ap.json"
    p.write_text(json.dumps(b.build()))
    stf = "add t k:1 fwd(port:4)\nadd t k:2 fwd(port:4)\nadd t k:3 fwd(port:5)\npacket 0 01\nexpect 4 01\npacket 0 03\nexpect 5 03\n"
    rc, out = run(tmp_path, p, stf, capsys)
    assert rc == 0, out
