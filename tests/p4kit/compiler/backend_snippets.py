"""Helpers for the back-end tests: wrap a fragment of P4 in a complete v1model program and compile it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from p4kit.compiler.driver import CompileResult, compile_file

HEADERS = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
struct headers { ethernet_t ethernet; ipv4_t ipv4; }
"""

DEFAULT_PARSER = """
parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x0800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 { packet.extract(hdr.ipv4); transition accept; }
}
"""

DEFAULT_DEPARSER = """
control MyDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.ipv4); }
}
"""


def program(
    ingress_body: str = "apply { }",
    *,
    metadata: str = "struct metadata { bit<8> m; }",
    parser: str = DEFAULT_PARSER,
    egress_body: str = "apply { }",
    verify_body: str = "apply { }",
    compute_body: str = "apply { }",
    deparser: str = DEFAULT_DEPARSER,
    top: str = "",
) -> str:
    return f"""{HEADERS}
{metadata}
{top}
{parser}
control MyVerifyChecksum(inout headers hdr, inout metadata meta) {{ {verify_body} }}
control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {{
{ingress_body}
}}
control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {{
{egress_body}
}}
control MyComputeChecksum(inout headers hdr, inout metadata meta) {{ {compute_body} }}
{deparser}
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
"""


def compile_source(tmp_path: Path, source: str, name: str = "prog.p4") -> CompileResult:
    path = tmp_path / name
    path.write_text(source)
    result = compile_file(path)
    json.dumps(result.bmv2)  # must always serialise
    return result


def by_name(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for it in items:
        if it["name"] == name:
            return it
    raise KeyError(f"{name} not in {[i['name'] for i in items]}")


def pipeline(bmv2: dict[str, Any], name: str = "ingress") -> dict[str, Any]:
    return by_name(bmv2["pipelines"], name)


def action_ops(bmv2: dict[str, Any], name: str) -> list[str]:
    return [p["op"] for p in by_name(bmv2["actions"], name)["primitives"]]
