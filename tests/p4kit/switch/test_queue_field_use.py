"""Which programs get their egress queues paced by the link rate: those that read the queue fields,
not every program whose JSON lists them among p4c's field aliases (p4src/inc.p4 does not read them;
pacing its WAN ports behind 64-packet queues tail-dropped its windows)."""

from __future__ import annotations

from pathlib import Path

from p4kit.compiler.driver import compile_file
from p4kit.switch.runtime import Switch

ROOT = Path(__file__).resolve().parents[3]


def test_a_program_that_never_reads_the_queue_fields_is_not_paced_by_them() -> None:
    program = ROOT / "p4src" / "inc.p4"
    bmv2 = compile_file(str(program), include_dirs=[str(program.parent)]).bmv2
    assert any("enq_qdepth" in str(alias) for alias in bmv2.get("field_aliases", []))  # p4c's aliases
    sw = Switch()
    sw.load_pipeline(bmv2)
    assert sw.traffic_manager.use_link_rates is False


def test_a_program_that_reads_a_queue_field_is(tmp_path: Path) -> None:
    src = tmp_path / "qdepth.p4"
    src.write_text(
        """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<32> depth; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { sm.egress_spec = 1; } }
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply { hdr.h.depth = (bit<32>) sm.enq_qdepth; }
}
control C(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""
    )
    sw = Switch()
    sw.load_pipeline(compile_file(str(src)).bmv2)
    assert sw.traffic_manager.use_link_rates is True
