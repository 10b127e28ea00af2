"""P4Info generation from hand-built control-plane models: ids as p4c assigns them, what is left out,
what each message carries, and the three file formats."""

from __future__ import annotations

import copy
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2

from p4kit.compiler.cpmodel import (
    ControlPlaneModel,
    CPAction,
    CPActionProfile,
    CPActionRef,
    CPAnnotation,
    CPControllerHeader,
    CPCounter,
    CPDigest,
    CPField,
    CPMatchField,
    CPMeter,
    CPParam,
    CPRegister,
    CPTable,
    CPValueSet,
)
from p4kit.compiler.diagnostics import CompileError
from p4kit.compiler.p4info import (
    allocate_field_ids,
    build_p4info,
    format_for_path,
    jenkins_one_at_a_time,
    read_p4info,
    serialize_p4info,
    write_p4info,
)


def basic_model() -> ControlPlaneModel:
    """The control plane of p4lang/tutorials' basic.p4 (the exercise every P4 user has compiled)."""
    return ControlPlaneModel(
        program_name="basic.p4",
        tables=[
            CPTable(
                name="MyIngress.ipv4_lpm",
                match_fields=[CPMatchField("hdr.ipv4.dstAddr", 32, "lpm")],
                action_refs=[
                    CPActionRef("MyIngress.ipv4_forward"),
                    CPActionRef("MyIngress.drop"),
                    CPActionRef("NoAction"),
                ],
                size=1024,
            )
        ],
        actions=[
            CPAction("NoAction"),
            CPAction("MyIngress.drop"),
            CPAction(
                "MyIngress.ipv4_forward",
                params=[CPParam("dstAddr", 48), CPParam("port", 9)],
            ),
        ],
    )


def ids_by_name(p4info: p4info_pb2.P4Info) -> dict[str, int]:
    out: dict[str, int] = {}
    for kind in (
        "tables",
        "actions",
        "action_profiles",
        "counters",
        "direct_counters",
        "meters",
        "direct_meters",
        "controller_packet_metadata",
        "value_sets",
        "registers",
        "digests",
    ):
        for obj in getattr(p4info, kind):
            out[f"{kind}:{obj.preamble.name}"] = obj.preamble.id
    return out


# -------------------------------------------------------------------------------------------- ids


def test_ids_match_what_p4c_emits_for_the_tutorials_basic_program():
    # These numbers are in every basic.p4.p4info.txtpb that p4c has produced for p4lang/tutorials.
    p4info = build_p4info(basic_model())
    ids = ids_by_name(p4info)
    assert ids["tables:MyIngress.ipv4_lpm"] == 37375156
    assert ids["actions:MyIngress.ipv4_forward"] == 28792405
    assert ids["actions:MyIngress.drop"] == 25652968
    assert ids["actions:NoAction"] == 21257015


def test_hash_is_jenkins_one_at_a_time():
    assert jenkins_one_at_a_time(b"") == 0
    # Reference value of the published algorithm for "a".
    assert jenkins_one_at_a_time(b"a") == 0xCA2E9442


def test_every_id_carries_its_resource_type_prefix():
    p4info = build_p4info(full_model())
    expect = {
        "tables": 0x02,
        "actions": 0x01,
        "value_sets": 0x03,
        "controller_packet_metadata": 0x04,
        "action_profiles": 0x11,
        "counters": 0x12,
        "direct_counters": 0x13,
        "meters": 0x14,
        "direct_meters": 0x15,
        "registers": 0x16,
        "digests": 0x17,
    }
    for kind, prefix in expect.items():
        objs = list(getattr(p4info, kind))
        assert objs, kind
        for obj in objs:
            assert obj.preamble.id >> 24 == prefix, (kind, obj.preamble.name, hex(obj.preamble.id))


def test_at_id_is_honoured_with_and_without_prefix():
    cp = basic_model()
    cp.tables[0].annotations.append(CPAnnotation("id", "5"))
    cp.actions[1].annotations.append(CPAnnotation("id", "0x01000077"))
    cp.actions[2].annotations.append(CPAnnotation("id", "32w0x20"))
    ids = ids_by_name(build_p4info(cp))
    assert ids["tables:MyIngress.ipv4_lpm"] == 0x02000005
    assert ids["actions:MyIngress.drop"] == 0x01000077
    assert ids["actions:MyIngress.ipv4_forward"] == 0x01000020
    assert ids["actions:NoAction"] == 21257015  # untouched


def test_at_id_with_wrong_prefix_is_an_error():
    cp = basic_model()
    cp.tables[0].annotations.append(CPAnnotation("id", "0x01000005"))
    with pytest.raises(CompileError, match="wrong 8-bit prefix"):
        build_p4info(cp)


def test_duplicate_at_id_is_an_error():
    cp = basic_model()
    cp.actions[0].annotations.append(CPAnnotation("id", "7"))
    cp.actions[1].annotations.append(CPAnnotation("id", "0x01000007"))
    with pytest.raises(CompileError, match="multiple declarations"):
        build_p4info(cp)


def test_non_integer_at_id_is_an_error():
    cp = basic_model()
    cp.actions[0].annotations.append(CPAnnotation("id", '"seven"'))
    with pytest.raises(CompileError, match="@id"):
        build_p4info(cp)


def test_a_taken_id_is_resolved_by_linear_probing():
    # Give the table the id that "MyIngress.drop" would hash to: drop moves to the next free id.
    drop_id = 0x01000000 | (jenkins_one_at_a_time(b"MyIngress.drop") & 0xFFFFFF)
    cp = basic_model()
    cp.actions[0].annotations.append(CPAnnotation("id", hex(drop_id)))  # NoAction takes drop's id
    ids = ids_by_name(build_p4info(cp))
    assert ids["actions:NoAction"] == drop_id
    assert ids["actions:MyIngress.drop"] == drop_id + 1


def test_probing_wraps_within_24_bits():
    name = "MyIngress.a1450672"  # found by search: its 24-bit hash is 0xfffff8, near the top
    h = jenkins_one_at_a_time(name.encode()) & 0xFFFFFF
    assert h == 0xFFFFF8
    # Occupy every id from the hash to the top of the 24-bit range; the next candidate is 0x01000000.
    cp = ControlPlaneModel(actions=[CPAction(name)])
    blockers = list(range(h, 0x1000000))
    for i, value in enumerate(blockers):
        cp.actions.append(CPAction(f"blocker{i}", annotations=[CPAnnotation("id", hex(value))]))
    ids = ids_by_name(build_p4info(cp))
    assert ids[f"actions:{name}"] == 0x01000000


def test_ids_do_not_depend_on_declaration_order():
    cp = full_model()
    shuffled = copy.deepcopy(cp)
    rnd = random.Random(4)
    for attr in ("tables", "actions", "counters", "meters", "registers", "digests", "action_profiles"):
        rnd.shuffle(getattr(shuffled, attr))
    assert ids_by_name(build_p4info(cp)) == ids_by_name(build_p4info(shuffled))


def test_output_is_identical_across_processes():
    """Ids must not depend on Python's per-process string hashing (PYTHONHASHSEED)."""
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[3])!r}); sys.path.insert(0, {str(Path(__file__).resolve().parent)!r});"
        "from test_p4info import full_model;"
        "from p4kit.compiler.p4info import build_p4info, serialize_p4info;"
        "sys.stdout.buffer.write(serialize_p4info(build_p4info(full_model()), 'binary'))"
    )
    outs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outs.append(
            subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True).stdout
        )
    assert outs[0] == outs[1]
    assert outs[0] == serialize_p4info(build_p4info(full_model()), "binary")


def test_field_ids_count_from_one_and_honour_at_id():
    assert allocate_field_ids([[], [], []], "t") == [1, 2, 3]
    # A user id takes its own value and still uses up its position, as in p4c.
    assert allocate_field_ids([[CPAnnotation("id", "3")], [], []], "t") == [3, 2, 4]
    assert allocate_field_ids([[], [CPAnnotation("id", "1")], []], "t") == [2, 1, 3]
    with pytest.raises(CompileError):
        allocate_field_ids([[CPAnnotation("id", "0")]], "t")
    with pytest.raises(CompileError):
        allocate_field_ids([[CPAnnotation("id", "2")], [CPAnnotation("id", "2")]], "t")


# ------------------------------------------------------------------------------- a full model


def full_model() -> ControlPlaneModel:
    """Every kind of P4Info object, including hidden ones."""
    return ControlPlaneModel(
        program_name="full.p4",
        tables=[
            CPTable(
                name="MyIngress.fwd",
                match_fields=[
                    CPMatchField("hdr.ipv4.dstAddr", 32, "lpm", [CPAnnotation("name", '"dst"')]),
                    CPMatchField("meta.flag", 1, "optional"),
                    CPMatchField("meta.sel", 16, "selector"),
                    CPMatchField("meta.port", 9, "range"),
                    CPMatchField("meta.vendor", 8, "my_kind"),
                ],
                action_refs=[
                    CPActionRef("MyIngress.set_port"),
                    CPActionRef(
                        "MyIngress.drop", scope="TABLE_ONLY", annotations=[CPAnnotation("tableonly")]
                    ),
                    CPActionRef("NoAction", scope="DEFAULT_ONLY", annotations=[CPAnnotation("defaultonly")]),
                ],
                const_default_action="NoAction",
                size=4096,
                implementation="MyIngress.ecmp",
                direct_counters=["MyIngress.fwd_counter"],
                idle_timeout=True,
                annotations=[
                    CPAnnotation("brief", '"Forwarding"'),
                    CPAnnotation("description", '"Longest-prefix forwarding table"'),
                    CPAnnotation("name", '"MyIngress.fwd"'),
                    CPAnnotation("my_anno", '"x", 3'),
                ],
            ),
            CPTable(
                name="MyIngress.acl",
                match_fields=[CPMatchField("hdr.ethernet.etherType", 16, "ternary")],
                action_refs=[CPActionRef("MyIngress.drop"), CPActionRef("NoAction")],
                is_const_table=True,
                has_initial_entries=True,
                direct_meters=["MyIngress.acl_meter"],
            ),
            CPTable(
                name="tbl_hidden_call",
                action_refs=[CPActionRef("hidden_act")],
                const_default_action="hidden_act",
                annotations=[CPAnnotation("hidden")],
            ),
        ],
        actions=[
            CPAction("NoAction", annotations=[CPAnnotation("noWarn", '"unused"')]),
            CPAction("MyIngress.drop"),
            CPAction(
                "MyIngress.set_port",
                params=[
                    CPParam("port", 9, [CPAnnotation("brief", '"egress port"')]),
                    CPParam("mac", 48),
                ],
            ),
            CPAction("hidden_act", annotations=[CPAnnotation("hidden")]),
        ],
        action_profiles=[
            CPActionProfile("MyIngress.ecmp", table_names=["MyIngress.fwd"], with_selector=True, size=128)
        ],
        counters=[
            CPCounter("MyIngress.port_pkts", "PACKETS", size=512),
            CPCounter("MyIngress.fwd_counter", "BOTH", direct_table="MyIngress.fwd"),
            CPCounter("MyIngress.secret", "BYTES", size=4, annotations=[CPAnnotation("hidden")]),
        ],
        meters=[
            CPMeter("MyIngress.port_meter", "BYTES", size=64),
            CPMeter("MyIngress.acl_meter", "PACKETS", direct_table="MyIngress.acl"),
        ],
        registers=[CPRegister("MyIngress.agg", 32, 1024)],
        digests=[CPDigest("mac_learn_digest_t", [CPField("srcAddr", 48), CPField("ingress_port", 9)])],
        controller_headers=[
            CPControllerHeader(
                "packet_in",
                [CPField("ingress_port", 9), CPField("_pad", 7)],
                [CPAnnotation("controller_header", '"packet_in"')],
                type_name="packet_in_header_t",
            ),
            CPControllerHeader(
                "packet_out",
                [CPField("egress_port", 9, [CPAnnotation("id", "5")]), CPField("mcast", 16)],
                [CPAnnotation("controller_header", '"packet_out"')],
                type_name="packet_out_header_t",
            ),
        ],
        value_sets=[
            CPValueSet("MyParser.pvs", [CPMatchField("etherType", 16, "exact")], size=4),
        ],
    )


def by_name(objs, name):
    for o in objs:
        if o.preamble.name == name:
            return o
    raise KeyError(name)


def test_hidden_objects_are_left_out():
    p4info = build_p4info(full_model())
    names = set(ids_by_name(p4info))
    assert "tables:tbl_hidden_call" not in names
    assert "actions:hidden_act" not in names
    assert "counters:MyIngress.secret" not in names
    assert "tables:MyIngress.fwd" in names


def test_table_fields():
    p4info = build_p4info(full_model())
    t = by_name(p4info.tables, "MyIngress.fwd")
    # The selector key is not a control-plane match field, but keeps its place in the id sequence.
    assert [(m.id, m.name, m.bitwidth) for m in t.match_fields] == [
        (1, "hdr.ipv4.dstAddr", 32),
        (2, "meta.flag", 1),
        (4, "meta.port", 9),
        (5, "meta.vendor", 8),
    ]
    kinds = [m.match_type for m in t.match_fields]
    assert kinds[:3] == [
        p4info_pb2.MatchField.LPM,
        p4info_pb2.MatchField.OPTIONAL,
        p4info_pb2.MatchField.RANGE,
    ]
    assert t.match_fields[3].other_match_type == "my_kind"
    assert list(t.match_fields[0].annotations) == []  # @name is represented by the name itself

    drop = by_name(p4info.actions, "MyIngress.drop").preamble.id
    noaction = by_name(p4info.actions, "NoAction").preamble.id
    scopes = {r.id: (r.scope, list(r.annotations)) for r in t.action_refs}
    assert scopes[drop] == (p4info_pb2.ActionRef.TABLE_ONLY, ["@tableonly"])
    assert scopes[noaction] == (p4info_pb2.ActionRef.DEFAULT_ONLY, ["@defaultonly"])
    assert t.const_default_action_id == noaction
    assert t.implementation_id == by_name(p4info.action_profiles, "MyIngress.ecmp").preamble.id
    assert list(t.direct_resource_ids) == [
        by_name(p4info.direct_counters, "MyIngress.fwd_counter").preamble.id
    ]
    assert t.size == 4096
    assert t.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL
    assert not t.is_const_table
    assert t.preamble.doc.brief == "Forwarding"
    assert t.preamble.doc.description == "Longest-prefix forwarding table"
    assert list(t.preamble.annotations) == ['@my_anno("x", 3)']

    acl = by_name(p4info.tables, "MyIngress.acl")
    assert acl.is_const_table and acl.has_initial_entries
    assert acl.size == 1024
    assert acl.idle_timeout_behavior == p4info_pb2.Table.NO_TIMEOUT
    assert list(acl.direct_resource_ids) == [by_name(p4info.direct_meters, "MyIngress.acl_meter").preamble.id]


def test_actions_and_params():
    p4info = build_p4info(full_model())
    a = by_name(p4info.actions, "MyIngress.set_port")
    assert [(p.id, p.name, p.bitwidth) for p in a.params] == [(1, "port", 9), (2, "mac", 48)]
    assert a.params[0].doc.brief == "egress port"
    assert list(by_name(p4info.actions, "NoAction").preamble.annotations) == ['@noWarn("unused")']


def test_aliases_are_shortest_unique_suffixes():
    cp = full_model()
    cp.actions.append(CPAction("MyEgress.drop"))
    p4info = build_p4info(cp)
    assert by_name(p4info.tables, "MyIngress.fwd").preamble.alias == "fwd"
    assert by_name(p4info.actions, "MyIngress.drop").preamble.alias == "MyIngress.drop"
    assert by_name(p4info.actions, "MyEgress.drop").preamble.alias == "MyEgress.drop"
    assert by_name(p4info.actions, "NoAction").preamble.alias == "NoAction"


def test_externs():
    p4info = build_p4info(full_model())
    prof = by_name(p4info.action_profiles, "MyIngress.ecmp")
    assert prof.with_selector and prof.size == 128
    assert list(prof.table_ids) == [by_name(p4info.tables, "MyIngress.fwd").preamble.id]

    c = by_name(p4info.counters, "MyIngress.port_pkts")
    assert c.spec.unit == p4info_pb2.CounterSpec.PACKETS and c.size == 512
    dc = by_name(p4info.direct_counters, "MyIngress.fwd_counter")
    assert dc.spec.unit == p4info_pb2.CounterSpec.BOTH
    assert dc.direct_table_id == by_name(p4info.tables, "MyIngress.fwd").preamble.id

    m = by_name(p4info.meters, "MyIngress.port_meter")
    assert m.spec.unit == p4info_pb2.MeterSpec.BYTES and m.size == 64
    dm = by_name(p4info.direct_meters, "MyIngress.acl_meter")
    assert dm.direct_table_id == by_name(p4info.tables, "MyIngress.acl").preamble.id

    r = by_name(p4info.registers, "MyIngress.agg")
    assert r.size == 1024 and r.type_spec.bitstring.bit.bitwidth == 32

    vs = by_name(p4info.value_sets, "MyParser.pvs")
    assert vs.size == 4
    assert [(f.id, f.name, f.bitwidth, f.match_type) for f in vs.match] == [
        (1, "etherType", 16, p4info_pb2.MatchField.EXACT)
    ]
    assert p4info.pkg_info.arch == "v1model"


def test_digests_name_their_struct_in_type_info():
    p4info = build_p4info(full_model())
    d = by_name(p4info.digests, "mac_learn_digest_t")
    assert d.preamble.id == 0x17000000 | (jenkins_one_at_a_time(b"mac_learn_digest_t") & 0xFFFFFF)
    assert d.type_spec.struct.name == "mac_learn_digest_t"
    members = p4info.type_info.structs["mac_learn_digest_t"].members
    assert [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in members] == [
        ("srcAddr", 48),
        ("ingress_port", 9),
    ]


def test_controller_packet_metadata():
    p4info = build_p4info(full_model())
    pin = by_name(p4info.controller_packet_metadata, "packet_in")
    # Named by the @controller_header string; the id comes from the header type's name, as in p4c.
    assert pin.preamble.alias == "packet_in"
    assert pin.preamble.id == 0x04000000 | (jenkins_one_at_a_time(b"packet_in_header_t") & 0xFFFFFF)
    assert list(pin.preamble.annotations) == []
    assert [(m.id, m.name, m.bitwidth) for m in pin.metadata] == [(1, "ingress_port", 9), (2, "_pad", 7)]
    pout = by_name(p4info.controller_packet_metadata, "packet_out")
    assert [(m.id, m.name, m.bitwidth) for m in pout.metadata] == [(5, "egress_port", 9), (2, "mcast", 16)]


def test_dangling_reference_is_a_compile_error_not_a_crash():
    cp = basic_model()
    cp.tables[0].action_refs.append(CPActionRef("MyIngress.missing"))
    with pytest.raises(CompileError, match=r"MyIngress\.missing"):
        build_p4info(cp)


# ------------------------------------------------------------------------------------ formats


@pytest.mark.parametrize(
    "suffix,fmt", [(".txt", "text"), (".txtpb", "text"), (".json", "json"), (".bin", "binary")]
)
def test_formats_round_trip(tmp_path: Path, suffix: str, fmt: str):
    p4info = build_p4info(full_model())
    path = tmp_path / f"prog.p4info{suffix}"
    write_p4info(p4info, path)
    assert format_for_path(path) == fmt
    assert read_p4info(path) == p4info


def test_explicit_format_overrides_suffix(tmp_path: Path):
    p4info = build_p4info(basic_model())
    path = tmp_path / "p4info.out"
    write_p4info(p4info, path, fmt="text")
    assert 'name: "MyIngress.ipv4_lpm"' in path.read_text()
    assert read_p4info(path, fmt="text") == p4info


def test_text_and_json_look_like_p4c_output(tmp_path: Path):
    p4info = build_p4info(basic_model())
    text = serialize_p4info(p4info, "text").decode()
    assert 'pkg_info {\n  arch: "v1model"\n}' in text
    assert "id: 37375156" in text
    assert "match_type: LPM" in text
    js = serialize_p4info(p4info, "json").decode()
    assert '"pkgInfo"' in js and '"matchFields"' in js  # protobuf's JSON mapping, as p4c writes it


def test_unknown_suffix_is_an_error(tmp_path: Path):
    p4info = build_p4info(basic_model())
    with pytest.raises(CompileError, match="suffix"):
        write_p4info(p4info, tmp_path / "p4info.yaml")
    with pytest.raises(CompileError):
        write_p4info(p4info, tmp_path / "p4info")


def test_unwritable_path_is_a_compile_error(tmp_path: Path):
    with pytest.raises(CompileError, match="couldn't write"):
        write_p4info(build_p4info(basic_model()), tmp_path / "missing" / "p4info.txt")
