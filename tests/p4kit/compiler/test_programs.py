"""Every program in tests/p4kit/programs compiles with p4kit-p4c, and its BMv2 JSON and P4Info carry
the facts that p4c-bm2-ss's output carries for the same program.

The facts live beside each program in NAME.expect.json. They name only what the P4 source fixes
(header types and field widths, parser state names, control-plane names of tables, actions and
externs, match kinds, primitive operations, hash algorithms, sizes), never the compiler's private
names for temporaries. Keys of an expect file:

  header_types        {type: {field: width}}            fields that must exist with these widths
  signed_fields       {type: [field, ...]}              fields flagged signed (int<N>)
  varbit_fields       {type: field}                     a varbit field of the header type
  header_stacks       {header type: size}
  header_union_types  [name, ...]
  errors              [name, ...]
  parser_states       [name, ...]                       states of the (only) parser
  parse_ops           [op, ...]                         parser operations used somewhere
  transition_types    [type, ...]                       "hexstr", "default", "parse_vset"
  transition_masks    true                              some transition has a mask
  parse_vsets         {name suffix: compressed bitwidth}
  tables              {name: {match_type, key_match_types, max_size, type, actions, default_action,
                              const_default_action, const_entries, action_profile, with_counters,
                              direct_meters, next_tables_by_action}}
  actions             {name: {params: {name: width}, ops: [primitive, ...]}}
  ops                 [primitive, ...]                  used by some action
  calculations        [algorithm, ...]
  register_arrays / counter_arrays / meter_arrays   {name: {size, bitwidth, is_direct, type}}
  action_profiles     {name: {max_size, selector: algorithm or null}}
  checksums_min, checksum_updates_verify, calculation_with_payload, field_lists_min, learn_lists_min
  p4info              {tables|actions|registers|counters|direct_counters|meters|direct_meters|
                       action_profiles|digests|controller_packet_metadata|value_sets: [name, ...]}
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
PROGRAMS_DIR = ROOT / "tests" / "p4kit" / "programs"
P4C = Path(sys.executable).parent / "p4kit-p4c"
PROGRAMS = sorted(PROGRAMS_DIR.glob("*.p4"))

TOP_LEVEL_KEYS = (
    "header_types",
    "headers",
    "header_stacks",
    "errors",
    "parsers",
    "deparsers",
    "meter_arrays",
    "counter_arrays",
    "register_arrays",
    "calculations",
    "learn_lists",
    "actions",
    "pipelines",
    "checksums",
    "__meta__",
)


def compile_program(src: Path, out_dir: Path) -> tuple[dict[str, Any], str]:
    """Compile `src` the way p4c-bm2-ss is called; return the BMv2 JSON and the P4Info text."""
    out_json = out_dir / f"{src.stem}.json"
    out_p4info = out_dir / f"{src.stem}.p4info.txtpb"
    proc = subprocess.run(
        [str(P4C), "--p4v", "16", "-o", str(out_json), "--p4runtime-files", str(out_p4info), str(src)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"p4kit-p4c failed on {src.name}:\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr
    return json.loads(out_json.read_text()), out_p4info.read_text()


def all_tables(bm: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for p in bm["pipelines"] for t in p["tables"]}


def all_action_profiles(bm: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {a["name"]: a for p in bm["pipelines"] for a in p.get("action_profiles", [])}


def action_names_by_id(bm: dict[str, Any]) -> dict[int, str]:
    return {a["id"]: a["name"] for a in bm["actions"]}


def primitive_ops(action: dict[str, Any]) -> set[str]:
    return {p["op"] for p in action.get("primitives", [])}


def check_header_types(bm: dict[str, Any], facts: dict[str, Any]) -> None:
    types = {ht["name"]: ht for ht in bm["header_types"]}
    for tname, fields in facts.get("header_types", {}).items():
        assert tname in types, f"header type {tname} missing; have {sorted(types)}"
        widths = {f[0]: f[1] for f in types[tname]["fields"]}
        for fname, width in fields.items():
            assert fname in widths, f"{tname}.{fname} missing; have {sorted(widths)}"
            assert widths[fname] == width, f"{tname}.{fname}: width {widths[fname]}, expected {width}"
    for tname, fnames in facts.get("signed_fields", {}).items():
        signed = {f[0]: (len(f) > 2 and f[2] is True) for f in types[tname]["fields"]}
        for fname in fnames:
            assert signed.get(fname), f"{tname}.{fname} should be signed"
    for tname, fname in facts.get("varbit_fields", {}).items():
        assert tname in types, f"header type {tname} missing"
        assert fname in {f[0] for f in types[tname]["fields"]}, f"varbit {tname}.{fname} missing"
        assert types[tname].get("max_length"), f"{tname} has a varbit field, so max_length is expected"
    for tname, size in facts.get("header_stacks", {}).items():
        stacks = [s for s in bm["header_stacks"] if s["header_type"] == tname]
        assert stacks and stacks[0]["size"] == size, (
            f"stack of {tname} (size {size}) missing: {bm['header_stacks']}"
        )
        assert len(stacks[0]["header_ids"]) == size
    unions = {u["name"] for u in bm.get("header_union_types", [])}
    for uname in facts.get("header_union_types", []):
        assert uname in unions, f"header union type {uname} missing; have {sorted(unions)}"
    errors = {e[0] for e in bm["errors"]}
    for ename in facts.get("errors", []):
        assert ename in errors, f"error {ename} missing; have {sorted(errors)}"


def check_parser(bm: dict[str, Any], facts: dict[str, Any]) -> None:
    assert len(bm["parsers"]) == 1
    parser = bm["parsers"][0]
    states = {s["name"]: s for s in parser["parse_states"]}
    assert parser["init_state"] in states
    for sname in facts.get("parser_states", []):
        assert sname in states, f"parser state {sname} missing; have {sorted(states)}"
    ops = {op["op"] for s in states.values() for op in s["parser_ops"]}
    for op in facts.get("parse_ops", []):
        assert op in ops, f"parser op {op} missing; have {sorted(ops)}"
    transitions = [t for s in states.values() for t in s["transitions"]]
    ttypes = {t.get("type", "hexstr") for t in transitions}
    for tt in facts.get("transition_types", []):
        assert tt in ttypes, f"transition type {tt} missing; have {sorted(ttypes)}"
    if facts.get("transition_masks"):
        assert any(t.get("mask") not in (None, "") for t in transitions), "no masked transition"
    for suffix, width in facts.get("parse_vsets", {}).items():
        vsets = [v for v in bm.get("parse_vsets", []) if v["name"].endswith(suffix)]
        assert vsets, f"parse_vset {suffix} missing: {bm.get('parse_vsets')}"
        assert vsets[0]["compressed_bitwidth"] == width


def check_tables(bm: dict[str, Any], facts: dict[str, Any]) -> None:
    tables = all_tables(bm)
    names = action_names_by_id(bm)
    for tname, want in facts.get("tables", {}).items():
        assert tname in tables, f"table {tname} missing; have {sorted(tables)}"
        t = tables[tname]
        if "match_type" in want:
            assert t["match_type"] == want["match_type"], f"{tname}: match_type {t['match_type']}"
        if "key_match_types" in want:
            assert [k["match_type"] for k in t["key"]] == want["key_match_types"], f"{tname}: key {t['key']}"
        if "key_names" in want:
            assert [k["name"] for k in t["key"]] == want["key_names"], f"{tname}: key {t['key']}"
        if "max_size" in want:
            assert t["max_size"] == want["max_size"]
        if "type" in want:
            assert t["type"] == want["type"], f"{tname}: type {t['type']}"
        if "actions" in want:
            assert set(want["actions"]) <= set(t["actions"]), f"{tname}: actions {t['actions']}"
            assert [names[i] for i in t["action_ids"]] == t["actions"]
        if "default_action" in want:
            assert names[t["default_entry"]["action_id"]] == want["default_action"]
        if "const_default_action" in want:
            assert names[t["default_entry"]["action_id"]] == want["const_default_action"]
            assert t["default_entry"]["action_const"] is True
        if "const_entries" in want:
            assert len(t.get("entries", [])) == want["const_entries"], f"{tname}: entries {t.get('entries')}"
        if "action_profile" in want:
            assert t["action_profile"] == want["action_profile"]
        if want.get("with_counters"):
            assert t["with_counters"] is True
        if "direct_meters" in want:
            assert t["direct_meters"] == want["direct_meters"]
        if want.get("next_tables_by_action"):
            for a in want.get("actions", []):
                assert a in t["next_tables"], f"{tname}: next_tables {t['next_tables']} lacks {a}"
    profiles = all_action_profiles(bm)
    for pname, want in facts.get("action_profiles", {}).items():
        assert pname in profiles, f"action profile {pname} missing; have {sorted(profiles)}"
        assert profiles[pname]["max_size"] == want["max_size"]
        if want["selector"] is None:
            assert "selector" not in profiles[pname] or not profiles[pname]["selector"]
        else:
            assert profiles[pname]["selector"]["algo"] == want["selector"]


def check_actions(bm: dict[str, Any], facts: dict[str, Any]) -> None:
    actions = {a["name"]: a for a in bm["actions"]}
    for aname, want in facts.get("actions", {}).items():
        assert aname in actions, f"action {aname} missing; have {sorted(actions)}"
        params = {r["name"]: r["bitwidth"] for r in actions[aname]["runtime_data"]}
        if "params" in want:
            assert params == want["params"], f"{aname}: runtime_data {params}"
        missing = set(want.get("ops", [])) - primitive_ops(actions[aname])
        assert not missing, f"{aname}: primitives {sorted(missing)} missing"
    used = set().union(*(primitive_ops(a) for a in bm["actions"])) if bm["actions"] else set()
    missing = set(facts.get("ops", [])) - used
    assert not missing, f"primitives {sorted(missing)} missing; have {sorted(used)}"


def check_externs(bm: dict[str, Any], facts: dict[str, Any]) -> None:
    algos = {c["algo"] for c in bm["calculations"]}
    for algo in facts.get("calculations", []):
        assert algo in algos, f"calculation {algo} missing; have {sorted(algos)}"
    for key in ("register_arrays", "counter_arrays", "meter_arrays"):
        have = {a["name"]: a for a in bm[key]}
        for name, want in facts.get(key, {}).items():
            assert name in have, f"{key}: {name} missing; have {sorted(have)}"
            for attr, value in want.items():
                assert have[name][attr] == value, f"{name}.{attr} = {have[name][attr]}, expected {value}"
    assert len(bm["checksums"]) >= facts.get("checksums_min", 0)
    if facts.get("checksum_updates_verify"):
        assert any(c.get("verify") for c in bm["checksums"]) and any(c.get("update") for c in bm["checksums"])
    if facts.get("calculation_with_payload"):
        inputs = [i for c in bm["calculations"] for i in c["input"]]
        assert any(i["type"] == "payload" for i in inputs), "no calculation includes the payload"
    assert len(bm.get("field_lists", [])) >= facts.get("field_lists_min", 0)
    assert len(bm["learn_lists"]) >= facts.get("learn_lists_min", 0)


def check_p4info(p4info_text: str, facts: dict[str, Any]) -> None:
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    info = text_format.Parse(p4info_text, p4info_pb2.P4Info())
    for kind, want in facts.get("p4info", {}).items():
        have = {e.preamble.name for e in getattr(info, kind)}
        missing = set(want) - have
        assert not missing, f"P4Info {kind}: {sorted(missing)} missing; have {sorted(have)}"
    tables = {t.preamble.name: t for t in info.tables}
    for tname, want_fields in facts.get("p4info_match_fields", {}).items():
        assert tname in tables, f"P4Info table {tname} missing"
        have_fields = [(f.name, f.bitwidth) for f in tables[tname].match_fields]
        assert have_fields == [tuple(f) for f in want_fields], f"P4Info {tname} match fields {have_fields}"


@pytest.mark.parametrize("src", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_program_compiles_with_expected_structure(src: Path, tmp_path: Path) -> None:
    facts_file = src.with_suffix(".expect.json")
    assert facts_file.exists(), f"{facts_file.name} is missing"
    facts = json.loads(facts_file.read_text())
    bm, p4info_text = compile_program(src, tmp_path)

    for key in TOP_LEVEL_KEYS:
        assert key in bm, f"top-level key {key} missing"
    assert bm["__meta__"]["version"][0] == 2
    assert [p["name"] for p in bm["pipelines"]] == ["ingress", "egress"]
    assert len(bm["deparsers"]) == 1
    assert any(h["name"] == "standard_metadata" for h in bm["headers"])

    check_header_types(bm, facts)
    check_parser(bm, facts)
    check_tables(bm, facts)
    check_actions(bm, facts)
    check_externs(bm, facts)
    check_p4info(p4info_text, facts)


def test_every_program_has_an_stf_and_expect_file() -> None:
    assert len(PROGRAMS) >= 26
    for src in PROGRAMS:
        assert src.with_suffix(".stf").exists(), f"{src.stem}.stf is missing"
        assert src.with_suffix(".expect.json").exists(), f"{src.stem}.expect.json is missing"
        text = src.read_text()
        assert "#include <core.p4>" in text and "#include <v1model.p4>" in text
