"""Back end: header types, instances, scalars, standard_metadata, errors, enums, the top-level shape."""

from __future__ import annotations

from tests.p4kit.compiler.backend_snippets import by_name, compile_source, program

TOP_KEYS = [
    "header_types", "headers", "header_stacks", "header_union_types", "header_unions", "header_union_stacks",
    "field_lists", "errors", "enums", "parsers", "parse_vsets", "deparsers", "meter_arrays", "counter_arrays",
    "register_arrays", "calculations", "learn_lists", "actions", "pipelines", "checksums", "force_arith",
    "extern_instances", "field_aliases", "program", "__meta__",
]  # fmt: skip


def test_top_level_keys_and_meta(tmp_path):
    bm = compile_source(tmp_path, program()).bmv2
    assert list(bm) == TOP_KEYS
    assert bm["__meta__"]["version"] == [2, 23]
    assert [p["name"] for p in bm["pipelines"]] == ["ingress", "egress"]
    assert bm["parsers"][0]["name"] == "parser" and bm["deparsers"][0]["name"] == "deparser"


def test_header_types_and_instances(tmp_path):
    bm = compile_source(tmp_path, program()).bmv2
    eth = by_name(bm["header_types"], "ethernet_t")
    assert eth["fields"] == [["dstAddr", 48, False], ["srcAddr", 48, False], ["etherType", 16, False]]
    hdrs = {h["name"]: h for h in bm["headers"]}
    assert hdrs["scalars"]["id"] == 0 and hdrs["scalars"]["metadata"] is True
    assert hdrs["standard_metadata"]["metadata"] is True
    assert hdrs["ethernet"]["header_type"] == "ethernet_t" and hdrs["ethernet"]["metadata"] is False
    assert hdrs["ipv4"]["header_type"] == "ipv4_t"
    ids = [h["id"] for h in bm["headers"]]
    assert ids == list(range(len(ids)))


def test_scalars_hold_metadata_and_are_byte_padded(tmp_path):
    src = program(metadata="struct metadata { bit<3> a; bool b; bit<9> c; }")
    bm = compile_source(tmp_path, src).bmv2
    sc = by_name(bm["header_types"], "scalars_0")
    names = [f[0] for f in sc["fields"]]
    assert "userMetadata.a" in names and "userMetadata.b" in names
    widths = {f[0]: f[1] for f in sc["fields"]}
    assert widths["userMetadata.b"] == 1
    assert sum(f[1] for f in sc["fields"]) % 8 == 0


def test_nested_metadata_struct_becomes_metadata_header(tmp_path):
    src = program(
        metadata="struct inner_t { bit<16> x; bit<8> y; } struct metadata { inner_t inner; bit<8> m; }"
    )
    bm = compile_source(tmp_path, src).bmv2
    h = by_name(bm["headers"], "inner")
    assert h["metadata"] is True and h["header_type"] == "inner_t"


def test_standard_metadata_fields(tmp_path):
    bm = compile_source(tmp_path, program()).bmv2
    sm = by_name(bm["header_types"], "standard_metadata")
    widths = {f[0]: f[1] for f in sm["fields"]}
    assert widths["ingress_port"] == 9 and widths["egress_spec"] == 9 and widths["instance_type"] == 32
    assert widths["parser_error"] == 32 and widths["mcast_grp"] == 16
    assert sum(widths.values()) % 8 == 0
    aliases = dict((a, tuple(t)) for a, t in bm["field_aliases"])
    assert aliases["intrinsic_metadata.mcast_grp"] == ("standard_metadata", "mcast_grp")


def test_errors_numbering_and_enums(tmp_path):
    top = "error { MyError } enum Color { Red, Green }"
    bm = compile_source(tmp_path, program(top=top)).bmv2
    errs = dict(bm["errors"])
    assert errs["NoError"] == 0 and errs["PacketTooShort"] == 1 and errs["NoMatch"] == 2
    assert errs["StackOutOfBounds"] == 3 and errs["HeaderTooShort"] == 4 and errs["ParserTimeout"] == 5
    assert errs["ParserInvalidArgument"] == 6 and errs["MyError"] == 7
    color = by_name(bm["enums"], "Color")
    assert color["entries"] == [["Red", 0], ["Green", 1]]


def test_header_stack_and_union(tmp_path):
    top = """
    header a_t { bit<8> x; } header b_t { bit<16> y; }
    header_union u_t { a_t a; b_t b; }
    struct headers2 { ethernet_t ethernet; a_t[3] st; u_t u; }
    """
    parser = """
    parser MyParser(packet_in packet, out headers2 hdr, inout metadata meta, inout standard_metadata_t sm) {
        state start { packet.extract(hdr.ethernet); packet.extract(hdr.st.next); packet.extract(hdr.u.a);
                      transition accept; }
    }"""
    src = program(
        parser=parser,
        top=top,
        deparser="""
    control MyDeparser(packet_out packet, in headers2 hdr) { apply { packet.emit(hdr); } }""",
    )
    src = src.replace("inout headers hdr", "inout headers2 hdr")
    bm = compile_source(tmp_path, src).bmv2
    st = by_name(bm["header_stacks"], "st")
    assert st["header_type"] == "a_t" and len(st["header_ids"]) == 3
    names = {h["id"]: h["name"] for h in bm["headers"]}
    assert [names[i] for i in st["header_ids"]] == ["st[0]", "st[1]", "st[2]"]
    u = by_name(bm["header_unions"], "u")
    assert [names[i] for i in u["header_ids"]] == ["u.a", "u.b"]
    assert by_name(bm["header_union_types"], "u_t")["headers"] == [["a", "a_t"], ["b", "b_t"]]
    ops = bm["parsers"][0]["parse_states"][0]["parser_ops"]
    assert ops[1] == {"op": "extract", "parameters": [{"type": "stack", "value": "st"}]}
    assert ops[2]["parameters"][0] == {"type": "regular", "value": "u.a"}
    assert bm["deparsers"][0]["order"] == ["ethernet", "st[0]", "st[1]", "st[2]", "u.a", "u.b"]
