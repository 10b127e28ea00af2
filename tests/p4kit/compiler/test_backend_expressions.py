"""Back end: expressions follow p4c's width conventions (masking, two_comp_mod, saturating casts,
d2b/b2d, slices, concatenation, casts, `?:`, run-time stack indices)."""

from __future__ import annotations

from tests.p4kit.compiler.backend_snippets import by_name, compile_source, program

META = "struct metadata { bit<8> m; bit<8> n; int<8> s; int<8> t; bool f; bit<16> w; bit<3> k; }"


def rhs(tmp_path, stmt: str, meta: str = META):
    """The right-hand side JSON of the single assignment `stmt` inside an action."""
    body = f"action a() {{ {stmt} }} table t {{ actions = {{ a; }} }} apply {{ t.apply(); }}"
    bm = compile_source(tmp_path, program(body, metadata=meta)).bmv2
    prim = by_name(bm["actions"], "MyIngress.a")["primitives"][-1]
    assert prim["op"] == "assign"
    v = prim["parameters"][1]
    return v["value"]["value"] if v["type"] == "expression" else v


def test_unsigned_add_is_masked(tmp_path):
    e = rhs(tmp_path, "meta.m = meta.m + meta.n;")
    assert e["op"] == "&" and e["right"] == {"type": "hexstr", "value": "0xff"}
    assert e["left"]["value"]["op"] == "+"


def test_signed_sub_uses_two_comp_mod(tmp_path):
    e = rhs(tmp_path, "meta.s = meta.s - meta.t;")
    assert e["op"] == "two_comp_mod" and e["right"] == {"type": "hexstr", "value": "0x8"}


def test_saturating_add(tmp_path):
    e = rhs(tmp_path, "meta.m = meta.m |+| meta.n;")
    assert e["op"] == "usat_cast" and e["left"]["value"]["op"] == "+"
    e = rhs(tmp_path, "meta.s = meta.s |-| meta.t;")
    assert e["op"] == "sat_cast" and e["left"]["value"]["op"] == "-"


def test_slice_and_concat(tmp_path):
    e = rhs(tmp_path, "meta.k = meta.w[10:8];")
    assert e["op"] == "&" and e["right"]["value"] == "0x07"
    assert e["left"]["value"] == {
        "op": ">>",
        "left": {"type": "field", "value": ["scalars", "userMetadata.w"]},
        "right": {"type": "hexstr", "value": "0x8"},
    }
    e = rhs(tmp_path, "meta.w = meta.m ++ meta.n;")
    assert e["op"] == "&" and e["left"]["value"]["op"] == "|"
    assert e["left"]["value"]["left"]["value"]["op"] == "<<"


def test_slice_assignment_keeps_other_bits(tmp_path):
    e = rhs(tmp_path, "meta.w[7:4] = 4w0xa;")
    assert e["op"] == "|"
    keep = e["left"]["value"]
    assert keep["op"] == "&" and keep["right"]["value"] == "0xff0f"


def test_casts(tmp_path):
    e = rhs(tmp_path, "meta.m = (bit<8>)meta.w;")
    assert e["op"] == "&" and e["right"]["value"] == "0xff"
    e = rhs(tmp_path, "meta.w = (bit<16>)meta.m;")
    assert e == {"type": "field", "value": ["scalars", "userMetadata.m"]}
    e = rhs(tmp_path, "meta.s = (int<8>)meta.m;")
    assert e["op"] == "two_comp_mod"


def test_bool_conversions(tmp_path):
    e = rhs(tmp_path, "meta.f = meta.m == 3;")
    assert e["op"] == "b2d" and e["right"]["value"]["op"] == "=="
    e = rhs(tmp_path, "meta.m = meta.f ? 8w1 : 8w2;")
    assert e["op"] == "?" and e["cond"]["value"]["op"] == "d2b"
    e = rhs(tmp_path, "meta.f = hdr.ipv4.isValid() && !meta.f;")
    assert e["op"] == "b2d"
    inner = e["right"]["value"]
    assert inner["op"] == "and" and inner["right"]["value"]["op"] == "not"


def test_constants_are_padded_hexstr(tmp_path):
    e = rhs(tmp_path, "meta.w = 16w0x800;")
    assert e == {"type": "hexstr", "value": "0x0800"}
    e = rhs(tmp_path, "meta.s = -8s3;")
    assert e["type"] == "hexstr" and e["value"] in ("-0x03", "0xfd")


def test_runtime_stack_index(tmp_path):
    top = "header e_t { bit<8> v; } struct headers2 { ethernet_t ethernet; e_t[4] st; }"
    parser = """
    parser MyParser(packet_in packet, out headers2 hdr, inout metadata meta, inout standard_metadata_t sm) {
        state start { packet.extract(hdr.ethernet); transition accept; }
    }"""
    body = """
    action a() { hdr.st[meta.m].v = 1; }
    table t { actions = { a; } }
    apply { t.apply(); }"""
    src = program(
        body,
        top=top,
        parser=parser,
        metadata=META,
        deparser="control MyDeparser(packet_out p, in headers2 hdr) { apply { p.emit(hdr); } }",
    )
    src = src.replace("inout headers hdr", "inout headers2 hdr")
    bm = compile_source(tmp_path, src).bmv2
    prim = by_name(bm["actions"], "MyIngress.a")["primitives"][0]
    lhs = prim["parameters"][0]
    assert lhs["type"] == "expression" and lhs["value"]["type"] == "expression"
    acc = lhs["value"]["value"]
    assert acc["op"] == "access_field" and acc["right"] == 0
    assert acc["left"]["value"]["op"] == "dereference_header_stack"
    assert acc["left"]["value"]["left"] == {"type": "header_stack", "value": "st"}


def test_action_params_are_local_inside_expressions(tmp_path):
    body = """
    action a(bit<8> x) { meta.m = x + 1; }
    table t { key = { meta.m: exact; } actions = { a; } }
    apply { t.apply(); }"""
    bm = compile_source(tmp_path, program(body, metadata=META)).bmv2
    e = by_name(bm["actions"], "MyIngress.a")["primitives"][0]["parameters"][1]["value"]["value"]
    assert e["left"]["value"]["left"] == {"type": "local", "value": 0}
