"""Back end: actions, tables, conditionals, hidden tables, hit/miss, switch, exit/return, inlining,
and the control-plane model."""

from __future__ import annotations

from tests.p4kit.compiler.backend_snippets import (
    action_ops,
    by_name,
    compile_source,
    pipeline,
    program,
)

FORWARD = """
    action drop() { mark_to_drop(standard_metadata); }
    action forward(bit<9> port, bit<48> mac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.dstAddr = mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { forward; drop; NoAction; }
        size = 512;
        default_action = drop();
    }
"""


def test_table_and_actions(tmp_path):
    res = compile_source(
        tmp_path, program(FORWARD + "apply { if (hdr.ipv4.isValid()) { ipv4_lpm.apply(); } }")
    )
    bm = res.bmv2
    ing = pipeline(bm)
    t = by_name(ing["tables"], "MyIngress.ipv4_lpm")
    assert t["match_type"] == "lpm" and t["max_size"] == 512 and t["type"] == "simple"
    assert t["key"] == [
        {"match_type": "lpm", "name": "hdr.ipv4.dstAddr", "target": ["ipv4", "dstAddr"], "mask": None}
    ]
    assert t["actions"] == ["MyIngress.forward", "MyIngress.drop", "NoAction"]
    assert set(t["next_tables"]) == set(t["actions"])
    drop = by_name(bm["actions"], "MyIngress.drop")
    assert t["default_entry"]["action_id"] == drop["id"]
    assert drop["primitives"][0] == {
        "op": "mark_to_drop",
        "parameters": [{"type": "header", "value": "standard_metadata"}],
        "source_info": drop["primitives"][0]["source_info"],
    }
    fwd = by_name(bm["actions"], "MyIngress.forward")
    assert fwd["runtime_data"] == [{"name": "port", "bitwidth": 9}, {"name": "mac", "bitwidth": 48}]
    assert fwd["primitives"][0]["parameters"] == [
        {"type": "field", "value": ["standard_metadata", "egress_spec"]},
        {"type": "runtime_data", "value": 0},
    ]
    ttl = fwd["primitives"][2]["parameters"][1]
    assert ttl["type"] == "expression" and ttl["value"]["value"]["op"] == "&"  # masked to 8 bits
    cond = ing["conditionals"][0]
    assert cond["expression"]["value"]["op"] == "d2b"
    assert ing["init_table"] == cond["name"] and cond["true_next"] == "MyIngress.ipv4_lpm"
    cp = res.control_plane
    cpt = next(x for x in cp.tables if x.name == "MyIngress.ipv4_lpm")
    assert cpt.size == 512 and cpt.match_fields[0].name == "hdr.ipv4.dstAddr"
    assert cpt.match_fields[0].bitwidth == 32 and cpt.match_fields[0].match_type == "lpm"
    assert {a.name for a in cp.actions} >= {"MyIngress.forward", "MyIngress.drop", "NoAction"}


def test_direct_action_call_becomes_hidden_table(tmp_path):
    res = compile_source(tmp_path, program(FORWARD + "apply { drop(); }"))
    ing = pipeline(res.bmv2)
    t = ing["tables"][0]
    assert t["name"] == "tbl_drop" and t["key"] == []
    assert t["default_entry"]["action_const"] is True
    cpt = next(x for x in res.control_plane.tables if x.name == "tbl_drop")
    assert any(a.name == "hidden" for a in cpt.annotations)


def test_assignments_grouped_into_one_action(tmp_path):
    body = "apply { meta.m = 1; hdr.ethernet.etherType = 2; standard_metadata.egress_spec = 3; }"
    bm = compile_source(tmp_path, program(body)).bmv2
    ing = pipeline(bm)
    assert [t["name"] for t in ing["tables"]] == ["tbl_act"]
    assert action_ops(bm, "act") == ["assign", "assign", "assign"]


def test_hit_miss_and_switch(tmp_path):
    body = (
        FORWARD
        + """
    table t2 { key = { hdr.ethernet.etherType: exact; } actions = { drop; NoAction; } }
    apply {
        if (ipv4_lpm.apply().hit) { meta.m = 1; } else { meta.m = 2; }
        switch (t2.apply().action_run) {
            drop: { meta.m = 3; }
            default: { meta.m = 4; }
        }
    }"""
    )
    bm = compile_source(tmp_path, program(body)).bmv2
    ing = pipeline(bm)
    t = by_name(ing["tables"], "MyIngress.ipv4_lpm")
    assert set(t["next_tables"]) == {"__HIT__", "__MISS__"}
    assert t["next_tables"]["__HIT__"] != t["next_tables"]["__MISS__"]
    t2 = by_name(ing["tables"], "MyIngress.t2")
    nt = t2["next_tables"]
    assert set(nt) == {"MyIngress.drop", "NoAction"} and nt["MyIngress.drop"] != nt["NoAction"]


def test_complex_hit_condition_uses_temporary(tmp_path):
    body = FORWARD + "apply { if (!ipv4_lpm.apply().hit && meta.m == 1) { drop(); } }"
    bm = compile_source(tmp_path, program(body)).bmv2
    ing = pipeline(bm)
    t = by_name(ing["tables"], "MyIngress.ipv4_lpm")
    assert set(t["next_tables"]) == {"__HIT__", "__MISS__"}
    assert ing["conditionals"]


def test_exit_and_return(tmp_path):
    body = """
    action a_exit() { meta.m = 1; exit; }
    table t { key = { meta.m: exact; } actions = { a_exit; } }
    apply {
        if (meta.m == 5) { return; }
        t.apply();
        if (meta.m == 6) { exit; }
        meta.m = 7;
    }"""
    bm = compile_source(tmp_path, program(body)).bmv2
    assert action_ops(bm, "MyIngress.a_exit") == ["assign", "exit"]
    ing = pipeline(bm)
    first = by_name(ing["conditionals"], ing["init_table"])
    assert first["true_next"] is None  # `return` at the top level ends the pipeline
    second = next(c for c in ing["conditionals"] if c is not first)
    exit_table = by_name(ing["tables"], second["true_next"])
    assert exit_table["base_default_next"] is None
    assert action_ops(bm, exit_table["actions"][0]) == ["exit"]


def test_if_inside_action_is_predicated(tmp_path):
    body = """
    action a(bit<8> x) { if (x == 1) { meta.m = 2; } else { meta.m = 3; } }
    table t { key = { meta.m: exact; } actions = { a; } }
    apply { t.apply(); }"""
    bm = compile_source(tmp_path, program(body)).bmv2
    prims = by_name(bm["actions"], "MyIngress.a")["primitives"]
    assert [p["op"] for p in prims] == ["assign", "assign", "assign"]
    # the condition is saved first; both branches are conditional assignments
    assert prims[0]["parameters"][0]["value"][0] == "scalars"
    for p in prims[1:]:
        assert p["parameters"][1]["value"]["value"]["op"] == "?"


def test_conditional_return_guards_the_rest(tmp_path):
    body = """
    action a() { if (meta.m == 1) { return; } meta.m = 5; }
    table t { key = { meta.m: exact; } actions = { a; } }
    apply { t.apply(); }"""
    bm = compile_source(tmp_path, program(body)).bmv2
    prims = by_name(bm["actions"], "MyIngress.a")["primitives"]
    assert [p["op"] for p in prims] == ["assign", "assign"]
    assert prims[1]["parameters"][1]["value"]["value"]["op"] == "?"


def test_if_with_extern_call_falls_back_to_jumps(tmp_path):
    body = """
    action a() { if (meta.m == 1) { mark_to_drop(standard_metadata); } else { meta.m = 3; } }
    table t { key = { meta.m: exact; } actions = { a; } }
    apply { t.apply(); }"""
    bm = compile_source(tmp_path, program(body)).bmv2
    assert action_ops(bm, "MyIngress.a") == ["_jump_if_zero", "mark_to_drop", "_jump", "assign"]
    prims = by_name(bm["actions"], "MyIngress.a")["primitives"]
    assert prims[0]["parameters"][1] == {"type": "hexstr", "value": "0x3"}
    assert prims[2]["parameters"][0] == {"type": "hexstr", "value": "0x4"}


def test_extern_call_after_conditional_return_uses_jumps(tmp_path):
    body = """
    action a() { if (meta.m == 1) { return; } mark_to_drop(standard_metadata); meta.m = 2; }
    table t { key = { meta.m: exact; } actions = { a; } }
    apply { t.apply(); }"""
    bm = compile_source(tmp_path, program(body)).bmv2
    assert action_ops(bm, "MyIngress.a") == ["_jump_if_zero", "_jump", "mark_to_drop", "assign"]
    prims = by_name(bm["actions"], "MyIngress.a")["primitives"]
    assert prims[0]["parameters"][1] == {"type": "hexstr", "value": "0x2"}
    assert prims[1]["parameters"][0] == {"type": "hexstr", "value": "0x4"}


def test_nested_control_inlined_with_qualified_names(tmp_path):
    top = """
    control Inner(inout headers h, inout standard_metadata_t sm) {
        action setp(bit<9> p) { sm.egress_spec = p; }
        table tin { key = { h.ethernet.dstAddr: exact; } actions = { setp; } }
        apply { tin.apply(); }
    }"""
    body = "Inner() inner1; Inner() inner2; apply { inner1.apply(hdr, standard_metadata); inner2.apply(hdr, standard_metadata); }"
    res = compile_source(tmp_path, program(body, top=top))
    names = [t["name"] for t in pipeline(res.bmv2)["tables"]]
    assert "MyIngress.inner1.tin" in names and "MyIngress.inner2.tin" in names
    assert {"MyIngress.inner1.setp", "MyIngress.inner2.setp"} <= {a["name"] for a in res.bmv2["actions"]}


def test_name_annotation_and_key_name(tmp_path):
    body = """
    @name(".global_drop") action drop() { mark_to_drop(standard_metadata); }
    @name("renamed") table t { key = { hdr.ethernet.dstAddr: exact @name("dmac"); hdr.ipv4.isValid(): exact; }
                               actions = { drop; } }
    apply { t.apply(); }"""
    res = compile_source(tmp_path, program(body))
    t = by_name(pipeline(res.bmv2)["tables"], "MyIngress.renamed")
    assert [k["name"] for k in t["key"]] == ["dmac", "hdr.ipv4.$valid$"]
    assert t["key"][1]["target"] == ["ipv4", "$valid$"]
    assert t["actions"] == ["global_drop", "NoAction"]


def test_const_entries_and_ternary(tmp_path):
    body = """
    action setm(bit<8> v) { meta.m = v; }
    table t {
        key = { hdr.ethernet.etherType: ternary; meta.m: range; }
        actions = { setm; NoAction; }
        const entries = {
            (0x0800 &&& 0xff00, 1 .. 5): setm(7);
            (_, _): NoAction();
        }
    }
    apply { t.apply(); }"""
    res = compile_source(tmp_path, program(body))
    t = by_name(pipeline(res.bmv2)["tables"], "MyIngress.t")
    assert t["match_type"] == "range"
    e0 = t["entries"][0]
    assert e0["match_key"][0] == {"match_type": "ternary", "key": "0x0800", "mask": "0xff00"}
    assert e0["match_key"][1] == {"match_type": "range", "start": "0x01", "end": "0x05"}
    assert e0["action_entry"]["action_data"] == ["0x07"]
    assert e0["priority"] == 1 and t["entries"][1]["priority"] == 2
    cpt = next(x for x in res.control_plane.tables if x.name == "MyIngress.t")
    assert cpt.is_const_table and cpt.has_initial_entries


def test_complex_key_computed_into_temporary(tmp_path):
    body = """
    table t { key = { hdr.ethernet.etherType[7:0]: exact; hdr.ethernet.srcAddr & 0xffff: ternary; }
              actions = { NoAction; } }
    apply { t.apply(); }"""
    bm = compile_source(tmp_path, program(body)).bmv2
    ing = pipeline(bm)
    t = by_name(ing["tables"], "MyIngress.t")
    assert t["key"][0]["target"][0] == "scalars"
    assert t["key"][1]["target"] == ["ethernet", "srcAddr"] and t["key"][1]["mask"] == "0x00000000ffff"
    pre = by_name(ing["tables"], ing["init_table"])
    assert pre["next_tables"] == {pre["actions"][0]: "MyIngress.t"}


def test_action_bound_to_directional_arguments(tmp_path):
    top = "action set_to(out bit<8> dst, bit<8> v) { dst = v; }"
    body = """
    table t1 { key = { meta.m: exact; } actions = { set_to(hdr.ipv4.ttl); } }
    table t2 { key = { meta.m: exact; } actions = { set_to(hdr.ipv4.protocol); }
               default_action = set_to(hdr.ipv4.protocol, 7); }
    apply { t1.apply(); t2.apply(); }"""
    res = compile_source(tmp_path, program(body, top=top))
    acts = [a for a in res.bmv2["actions"] if a["name"] == "set_to"]
    assert len(acts) == 2  # one copy per binding, both named as the control plane knows them
    targets = sorted(a["primitives"][0]["parameters"][0]["value"][1] for a in acts)
    assert targets == ["protocol", "ttl"]
    assert all(a["runtime_data"] == [{"name": "v", "bitwidth": 8}] for a in acts)
    t2 = by_name(pipeline(res.bmv2)["tables"], "MyIngress.t2")
    assert t2["default_entry"]["action_data"] == ["0x07"]
    assert [a.name for a in res.control_plane.actions].count("set_to") == 1


def test_for_loop_in_action_uses_jumps(tmp_path):
    body = """
    action a() { for (bit<8> i = 0; i < meta.m; i = i + 1) { hdr.ipv4.ttl = hdr.ipv4.ttl + 1; } }
    table t { actions = { a; } }
    apply { t.apply(); }"""
    bm = compile_source(tmp_path, program(body)).bmv2
    prims = by_name(bm["actions"], "MyIngress.a")["primitives"]
    ops = [p["op"] for p in prims]
    assert ops == ["assign", "_jump_if_zero", "assign", "assign", "_jump"]
    assert prims[-1]["parameters"][0] == {"type": "hexstr", "value": "0x1"}  # back to the test
    assert prims[1]["parameters"][1] == {"type": "hexstr", "value": "0x5"}  # out of the loop


def test_short_circuit_skips_calls(tmp_path):
    top = "bool touch(inout bit<8> v) { v = 1; return true; }"
    body = "apply { bool b = true || touch(meta.m); if (b) { hdr.ipv4.ttl = 2; } }"
    bm = compile_source(tmp_path, program(body, top=top)).bmv2
    for a in bm["actions"]:
        for p in a["primitives"]:
            assert p["parameters"][0].get("value") != ["scalars", "userMetadata.m"]


def test_nested_slice_assignment(tmp_path):
    body = "apply { hdr.ipv4.identification[11:4][3:0] = 4w0xf; }"
    bm = compile_source(tmp_path, program(body)).bmv2
    v = bm["actions"][0]["primitives"][0]["parameters"][1]["value"]["value"]
    assert v["left"]["value"]["right"]["value"] == "0xff0f"  # bits 7..4 replaced


def test_short_circuit_guards_table_apply(tmp_path):
    body = (
        FORWARD
        + "apply { if (hdr.ipv4.isValid() && ipv4_lpm.apply().hit) { meta.m = 1; } else { meta.m = 2; } }"
    )
    bm = compile_source(tmp_path, program(body)).bmv2
    ing = pipeline(bm)
    first = by_name(ing["conditionals"], ing["init_table"])  # validity is tested before the table runs
    assert first["true_next"] == "MyIngress.ipv4_lpm"
    t = by_name(ing["tables"], "MyIngress.ipv4_lpm")
    assert t["next_tables"]["__MISS__"] == first["false_next"]  # both failures reach the else branch
    assert t["next_tables"]["__HIT__"] != first["false_next"]
