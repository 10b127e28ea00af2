"""Back end: parser states, ops, select transitions (masks, ranges, tuples, value sets), lookahead,
verify, varbit extraction, sub-parsers and `if` in states."""

from __future__ import annotations

from tests.p4kit.compiler.backend_snippets import by_name, compile_source, program


def states(bm):
    return {s["name"]: s for s in bm["parsers"][0]["parse_states"]}


def test_basic_states_and_transitions(tmp_path):
    bm = compile_source(tmp_path, program()).bmv2
    p = bm["parsers"][0]
    assert p["init_state"] == "start"
    st = states(bm)
    assert st["start"]["parser_ops"] == [
        {"op": "extract", "parameters": [{"type": "regular", "value": "ethernet"}]}
    ]
    assert st["start"]["transition_key"] == [{"type": "field", "value": ["ethernet", "etherType"]}]
    assert st["start"]["transitions"] == [
        {"type": "hexstr", "value": "0x0800", "mask": None, "next_state": "parse_ipv4"},
        {"type": "default", "value": None, "mask": None, "next_state": None},
    ]
    assert st["parse_ipv4"]["transitions"][0]["next_state"] is None
    ids = [s["id"] for s in p["parse_states"]]
    assert len(set(ids)) == len(ids)


def test_masks_ranges_tuples(tmp_path):
    parser = """
    parser MyParser(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
        state start {
            packet.extract(hdr.ethernet);
            transition select(hdr.ethernet.etherType, hdr.ethernet.dstAddr[7:0]) {
                (0x0800 &&& 0xff00, _): a;
                (16w4 .. 16w7, 1): a;
                (_, 2): reject;
                default: accept;
            }
        }
        state a { transition accept; }
    }"""
    bm = compile_source(tmp_path, program(parser=parser)).bmv2
    st = states(bm)["start"]
    # the slice is not a field: computed into a temporary by a `set` first
    assert st["parser_ops"][-1]["op"] == "set"
    tr = st["transitions"]
    assert tr[0] == {"type": "hexstr", "value": "0x080000", "mask": "0xff0000", "next_state": "a"}
    # 4..7 is one aligned block: value 4, mask ...fffc
    assert tr[1] == {"type": "hexstr", "value": "0x000401", "mask": "0xfffcff", "next_state": "a"}
    assert tr[2]["value"] == "0x000002" and tr[2]["mask"] == "0x0000ff" and tr[2]["next_state"] is None
    assert tr[3]["type"] == "default"


def test_range_expansion_multiple_blocks(tmp_path):
    parser = """
    parser MyParser(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
        state start {
            packet.extract(hdr.ethernet);
            transition select(hdr.ethernet.etherType) { 16w1 .. 16w6: accept; default: reject; }
        }
    }"""
    bm = compile_source(tmp_path, program(parser=parser)).bmv2
    tr = states(bm)["start"]["transitions"]
    covered = set()
    for t in tr[:-1]:
        v, m = int(t["value"], 16), int(t["mask"] or "0xffff", 16)
        covered |= {x for x in range(0, 16) if x & m == v}
    assert covered == {1, 2, 3, 4, 5, 6}


def test_lookahead_verify_advance_varbit(tmp_path):
    top = "header opt_t { varbit<320> options; }"
    parser = """
    parser MyParser(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
        state start {
            bit<16> peek = packet.lookahead<bit<16>>();
            verify(peek != 0, error.NoMatch);
            packet.advance(32);
            transition select(packet.lookahead<bit<8>>()) { 1: accept; default: accept; }
        }
    }"""
    bm = compile_source(tmp_path, program(parser=parser, top=top)).bmv2
    st = states(bm)["start"]
    ops = st["parser_ops"]
    assert ops[0]["op"] == "set" and ops[0]["parameters"][1] == {"type": "lookahead", "value": [0, 16]}
    assert ops[1]["op"] == "verify"
    assert ops[1]["parameters"][1] == {"type": "hexstr", "value": "0x00000002"}
    assert ops[2] == {"op": "advance", "parameters": [{"type": "hexstr", "value": "0x00000020"}]}
    assert st["transition_key"] == [{"type": "lookahead", "value": [0, 8]}]


def test_value_set(tmp_path):
    parser = """
    parser MyParser(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
        value_set<bit<16>>(4) pvs;
        state start {
            packet.extract(hdr.ethernet);
            transition select(hdr.ethernet.etherType) { pvs: parse_ipv4; default: accept; }
        }
        state parse_ipv4 { packet.extract(hdr.ipv4); transition accept; }
    }"""
    res = compile_source(tmp_path, program(parser=parser))
    bm = res.bmv2
    vs = by_name(bm["parse_vsets"], "MyParser.pvs")
    assert vs["compressed_bitwidth"] == 16
    tr = states(bm)["start"]["transitions"][0]
    assert tr == {"type": "parse_vset", "value": "MyParser.pvs", "mask": None, "next_state": "parse_ipv4"}
    assert res.control_plane.value_sets[0].name == "MyParser.pvs"


def test_if_in_state_and_subparser(tmp_path):
    parser = """
    parser Sub(packet_in packet, out ipv4_t ip) {
        state start { packet.extract(ip); transition accept; }
    }
    parser MyParser(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
        Sub() sub;
        state start {
            packet.extract(hdr.ethernet);
            if (hdr.ethernet.etherType == 0x0800) { meta.m = 1; } else { meta.m = 2; }
            sub.apply(packet, hdr.ipv4);
            transition accept;
        }
    }"""
    bm = compile_source(tmp_path, program(parser=parser)).bmv2
    st = states(bm)
    assert st["start"]["transitions"][0]["value"] == "0x01"
    extracts = [
        op["parameters"][0]["value"] for s in st.values() for op in s["parser_ops"] if op["op"] == "extract"
    ]
    assert extracts == ["ethernet", "ipv4"]
    # every state's next_state refers to an existing state
    for s in st.values():
        for t in s["transitions"]:
            assert t["next_state"] is None or t["next_state"] in st
