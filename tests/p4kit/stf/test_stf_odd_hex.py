"""Packet data with an odd number of hex digits, as p4c's STF runner treats it.

Why: p4c's early gauntlet tests were written by a generator that printed every header field as its
own hex digits (a 1-bit field as one digit, a 7-bit field as two), so a `packet` line could end in a
lone digit (`05 0 00` for an 8-bit field, a bool and 7 bits of padding). p4c's runner turns packet
data into bytes with `bytes.fromhex`, which refuses an odd number of digits: it reports "Invalid
packet data", sends nothing and goes on, so only the expectations decide the verdict. p4kit-stf used
to pad the last digit into a byte of its own and send a packet p4c never sends; these tests pin the
p4c behaviour. `expect` data keeps its meaning at any length: it is compared digit by digit against
the start of the received packet.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p4kit.stf.parser import PacketDirective, parse_stf
from tests.p4kit.stf.test_stf_runner import run

# A bool field followed by 7 bits of padding: `f = true` sets the top bit of that byte (0x80), which
# the field-per-digit notation would have written as `1 00`.
PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bool f; bit<7> pad; }
struct headers { h_t h; }
struct meta { }
parser P(packet_in pkt, out headers hdr, inout meta m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta m) { apply { } }
control I(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    apply { hdr.h.f = true; sm.egress_spec = 1; }
}
control E(inout headers hdr, inout meta m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture
def prog(tmp_path: Path) -> Path:
    src = tmp_path / "bool_flag.p4"
    src.write_text(PROGRAM)
    return src


def test_parser_keeps_odd_packet_data_as_written() -> None:
    (d,) = parse_stf("packet 0 20 5\n")
    assert isinstance(d, PacketDirective) and d.data == "205"


def test_odd_packet_is_not_sent(tmp_path: Path, prog: Path, capsys) -> None:
    """Only the second packet reaches the switch; the first would have matched the expectation and
    left a second, unexpected packet on port 1."""
    stf = "packet 0 05 0 00\npacket 0 05 00\nexpect 1 05 80 $\n"
    rc, out = run(tmp_path, prog, stf, capsys)
    assert rc == 0, out
    assert "PASS: 1 packet(s) sent, 1 expected packet(s) matched" in out
    assert "line 1: packet data has 5 hex digits" in out


def test_field_per_digit_test_fails_for_want_of_a_packet(tmp_path: Path, prog: Path, capsys) -> None:
    """A whole test in the early notation fails as under p4c: its packet is never sent, so its
    expectation is not met (and not because 0x80 would differ from `1 00`)."""
    rc, out = run(tmp_path, prog, "packet 0 05 0 00\nexpect 1 05 1 00\n", capsys)
    assert rc == 1
    assert "port 1, packet 0: expected 1 packet(s), got 0" in out
    assert "1 packet line(s) not sent" in out
    assert "differs" not in out


def test_odd_expect_data_is_compared_digit_by_digit(tmp_path: Path, prog: Path, capsys) -> None:
    rc, out = run(tmp_path, prog, "packet 0 05 00\nexpect 1 05 8\n", capsys)
    assert rc == 0, out
    rc, out = run(tmp_path, prog, "packet 0 05 00\nexpect 1 05 1\n", capsys)
    assert rc == 1 and "packet differs at nibble 2 (byte 1): expected 1, received 8" in out
