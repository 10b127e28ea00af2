"""Back end: v1model externs (registers, counters, meters, hash, random, digests, clone/resubmit field
lists, log_msg/assert), checksums, action profiles and their control-plane description."""

from __future__ import annotations

import pytest

from tests.p4kit.compiler.backend_snippets import (
    action_ops,
    by_name,
    compile_source,
    pipeline,
    program,
)

IPV4_FIELDS = """{ hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
    hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl, hdr.ipv4.protocol,
    hdr.ipv4.srcAddr, hdr.ipv4.dstAddr }"""


def test_register_counter_meter(tmp_path):
    body = """
    register<bit<32>>(64) r;
    counter(16, CounterType.packets_and_bytes) c;
    meter(8, MeterType.bytes) m;
    action a(bit<32> i) {
        bit<32> v;
        r.read(v, i);
        r.write(i, v + 1);
        c.count(i);
        m.execute_meter(i, meta.m);
    }
    table t { key = { meta.m: exact; } actions = { a; } }
    apply { t.apply(); }"""
    res = compile_source(tmp_path, program(body))
    bm, cp = res.bmv2, res.control_plane
    assert by_name(bm["register_arrays"], "MyIngress.r") == {
        "name": "MyIngress.r",
        "id": 0,
        "size": 64,
        "bitwidth": 32,
    }
    ca = by_name(bm["counter_arrays"], "MyIngress.c")
    assert ca["size"] == 16 and ca["is_direct"] is False
    ma = by_name(bm["meter_arrays"], "MyIngress.m")
    assert ma["type"] == "bytes" and ma["rate_count"] == 2 and ma["size"] == 8
    prims = by_name(bm["actions"], "MyIngress.a")["primitives"]
    assert [p["op"] for p in prims] == ["register_read", "register_write", "count", "execute_meter"]
    assert prims[0]["parameters"][1] == {"type": "register_array", "value": "MyIngress.r"}
    assert prims[0]["parameters"][2] == {"type": "runtime_data", "value": 0}
    assert prims[2]["parameters"][0] == {"type": "counter_array", "value": "MyIngress.c"}
    assert [x.name for x in cp.registers] == ["MyIngress.r"] and cp.registers[0].bitwidth == 32
    assert cp.counters[0].unit == "BOTH" and cp.meters[0].unit == "BYTES"


def test_direct_counter_and_meter(tmp_path):
    body = """
    direct_counter(CounterType.packets) dc;
    direct_meter<bit<8>>(MeterType.packets) dm;
    action a() { dm.read(meta.m); }
    table t { key = { meta.m: exact; } actions = { a; } counters = dc; meters = dm; size = 32; }
    apply { t.apply(); }"""
    res = compile_source(tmp_path, program(body))
    bm = res.bmv2
    t = by_name(pipeline(bm)["tables"], "MyIngress.t")
    assert t["with_counters"] is True and t["direct_meters"] == "MyIngress.dm"
    dc = by_name(bm["counter_arrays"], "MyIngress.dc")
    assert dc["is_direct"] is True and dc["binding"] == "MyIngress.t"
    dm = by_name(bm["meter_arrays"], "MyIngress.dm")
    assert dm["is_direct"] is True and dm["binding"] == "MyIngress.t"
    assert dm["result_target"] == ["scalars", "userMetadata.m"]
    cpt = next(x for x in res.control_plane.tables if x.name == "MyIngress.t")
    assert cpt.direct_counters == ["MyIngress.dc"] and cpt.direct_meters == ["MyIngress.dm"]


def test_hash_and_random(tmp_path):
    body = """
    action a() {
        hash(meta.m, HashAlgorithm.crc16, 8w0, { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, 8w7 }, 16w64);
        random(hdr.ipv4.ttl, 8w1, 8w100);
    }
    table t { actions = { a; } }
    apply { t.apply(); }"""
    bm = compile_source(tmp_path, program(body)).bmv2
    prims = by_name(bm["actions"], "MyIngress.a")["primitives"]
    assert [p["op"] for p in prims] == ["modify_field_with_hash_based_offset", "modify_field_rng_uniform"]
    calc = by_name(bm["calculations"], prims[0]["parameters"][2]["value"])
    assert calc["algo"] == "crc16"
    assert calc["input"] == [
        {"type": "field", "value": ["ipv4", "srcAddr"]},
        {"type": "field", "value": ["ipv4", "dstAddr"]},
        {"type": "hexstr", "value": "0x07", "bitwidth": 8},
    ]


def test_digest_learn_list_and_cp(tmp_path):
    top = "struct learn_t { bit<48> mac; bit<9> port; }"
    body = """
    action learn() { digest<learn_t>(1, { hdr.ethernet.srcAddr, standard_metadata.ingress_port }); }
    table t { actions = { learn; } }
    apply { t.apply(); }"""
    res = compile_source(tmp_path, program(body, top=top))
    ll = res.bmv2["learn_lists"][0]
    assert ll["name"] == "learn_t" and ll["id"] == 1
    assert ll["elements"] == [
        {"type": "field", "value": ["ethernet", "srcAddr"]},
        {"type": "field", "value": ["standard_metadata", "ingress_port"]},
    ]
    prim = by_name(res.bmv2["actions"], "MyIngress.learn")["primitives"][0]
    assert prim["op"] == "generate_digest" and prim["parameters"][1] == {"type": "hexstr", "value": "0x1"}
    d = res.control_plane.digests[0]
    assert d.name == "learn_t" and [(f.name, f.bitwidth) for f in d.fields] == [("mac", 48), ("port", 9)]


def test_clone_resubmit_field_lists(tmp_path):
    meta = "struct metadata { @field_list(1) bit<8> m; bit<8> other; }"
    body = """
    action a() {
        clone(CloneType.I2E, 5);
        clone_preserving_field_list(CloneType.I2E, 6, 1);
        resubmit_preserving_field_list(1);
    }
    table t { actions = { a; } }
    apply { t.apply(); }"""
    egress = """
    action e() { recirculate_preserving_field_list(1); }
    table te { actions = { e; } }
    apply { te.apply(); }"""  # egress only, as p4c's BMv2 back end requires
    bm = compile_source(tmp_path, program(body, metadata=meta, egress_body=egress)).bmv2
    prims = by_name(bm["actions"], "MyIngress.a")["primitives"]
    assert [p["op"] for p in prims] == [
        "clone_ingress_pkt_to_egress",
        "clone_ingress_pkt_to_egress",
        "resubmit",
    ]
    assert [p["op"] for p in by_name(bm["actions"], "MyEgress.e")["primitives"]] == ["recirculate"]
    assert prims[0]["parameters"][1] == {"type": "hexstr", "value": "0x0"}
    fl = bm["field_lists"][0]
    assert prims[1]["parameters"][1] == {"type": "hexstr", "value": hex(fl["id"])}
    assert fl["elements"] == [{"type": "field", "value": ["scalars", "userMetadata.m"]}]


def test_mark_to_drop_truncate_log_assert(tmp_path):
    body = """
    action a() {
        mark_to_drop(standard_metadata);
        truncate(32w64);
        log_msg("m={}", { meta.m });
        assert(meta.m != 0);
    }
    table t { actions = { a; } }
    apply { t.apply(); }"""
    bm = compile_source(tmp_path, program(body)).bmv2
    prims = by_name(bm["actions"], "MyIngress.a")["primitives"]
    assert [p["op"] for p in prims] == ["mark_to_drop", "truncate", "log_msg", "assert"]
    assert prims[2]["parameters"][0] == {"type": "string", "value": "m={}"}
    assert prims[2]["parameters"][1]["type"] == "parameters_vector"


def test_checksums_verify_update_payload(tmp_path):
    verify = f"apply {{ verify_checksum(hdr.ipv4.isValid(), {IPV4_FIELDS}, hdr.ipv4.hdrChecksum, HashAlgorithm.csum16); }}"
    compute = f"""apply {{
        update_checksum(hdr.ipv4.isValid(), {IPV4_FIELDS}, hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
        update_checksum_with_payload(true, {{ hdr.ipv4.srcAddr, 8w0, hdr.ipv4.protocol }},
                                     hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }}"""
    bm = compile_source(tmp_path, program(verify_body=verify, compute_body=compute)).bmv2
    cks = bm["checksums"]
    assert [(c["verify"], c["update"]) for c in cks] == [(True, False), (False, True), (False, True)]
    assert cks[0]["calculation"] == cks[1]["calculation"]  # identical field lists share a calculation
    assert cks[0]["target"] == ["ipv4", "hdrChecksum"] and cks[0]["type"] == "generic"
    assert cks[0]["if_cond"]["value"]["op"] == "d2b" and cks[2]["if_cond"] is None
    payload_calc = by_name(bm["calculations"], cks[2]["calculation"])
    assert payload_calc["input"][-1] == {"type": "payload", "value": None}
    assert payload_calc["input"][1] == {"type": "hexstr", "value": "0x00", "bitwidth": 8}


def test_action_profile_and_selector(tmp_path):
    body = """
    action_profile(128) ap;
    action_selector(HashAlgorithm.crc16, 64, 14) as;
    action setp(bit<9> p) { standard_metadata.egress_spec = p; }
    table tp { key = { hdr.ethernet.dstAddr: exact; } actions = { setp; } implementation = ap; }
    table ts { key = { hdr.ethernet.dstAddr: exact; hdr.ipv4.srcAddr: selector; }
               actions = { setp; } implementation = as; }
    apply { tp.apply(); ts.apply(); }"""
    res = compile_source(tmp_path, program(body))
    ing = pipeline(res.bmv2)
    tp, ts = by_name(ing["tables"], "MyIngress.tp"), by_name(ing["tables"], "MyIngress.ts")
    assert tp["type"] == "indirect" and tp["action_profile"] == "MyIngress.ap"
    assert ts["type"] == "indirect_ws" and ts["action_profile"] == "MyIngress.as"
    assert len(ts["key"]) == 1  # the selector key feeds the selector, not the match
    prof = by_name(ing["action_profiles"], "MyIngress.as")
    assert prof["max_size"] == 64
    assert prof["selector"] == {"algo": "crc16", "input": [{"type": "field", "value": ["ipv4", "srcAddr"]}]}
    cps = {p.name: p for p in res.control_plane.action_profiles}
    assert cps["MyIngress.as"].with_selector and cps["MyIngress.as"].table_names == ["MyIngress.ts"]
    assert not cps["MyIngress.ap"].with_selector and cps["MyIngress.ap"].size == 128


def test_controller_header_and_program_name(tmp_path):
    top = '@controller_header("packet_in") header packet_in_t { bit<9> ingress_port; bit<7> pad; }'
    res = compile_source(tmp_path, program(top=top), name="cpu.p4")
    ch = res.control_plane.controller_headers[0]
    assert ch.name == "packet_in" and [(f.name, f.bitwidth) for f in ch.fields] == [
        ("ingress_port", 9),
        ("pad", 7),
    ]
    assert res.control_plane.program_name == "cpu"


def test_unsupported_is_reported_with_location(tmp_path):
    from p4kit.compiler.diagnostics import UnsupportedError

    body = """
    table t { key = { meta.m: exact; } actions = { NoAction; } }
    apply { t.apply(); t.apply(); }"""
    with pytest.raises(UnsupportedError) as ei:
        compile_source(tmp_path, program(body))
    assert ei.value.loc is not None and ei.value.loc.line > 1
    assert "unsupported" in str(ei.value)


def test_action_ops_helper_sanity(tmp_path):
    bm = compile_source(
        tmp_path, program("action a() { meta.m = 1; } table t { actions = { a; } } apply { t.apply(); }")
    ).bmv2
    assert action_ops(bm, "MyIngress.a") == ["assign"]
