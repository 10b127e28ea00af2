"""Does a P4Info belong to the BMv2 JSON it arrives with? The checks of SetForwardingPipelineConfig.

Why: the server translates every P4Runtime value with the P4Info's widths and the dataplane matches with
the JSON's. A P4Info from another program (or another version of this one) would be accepted entry by
entry and then match wrong bits -- an LPM prefix counted from the wrong end, a port truncated. So every
object the P4Info names must exist in the JSON with the same shape: tables with the same keys (name,
match kind, width), actions with the same parameters (name, width), counters, meters and registers by
name. Anything else is INVALID_ARGUMENT with a message that names the first difference.
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2

from p4kit.switch.errors import PipelineLoadError
from p4kit.switch.p4rt_codec import invalid
from p4kit.switch.program import MAX_FIELD_WIDTH, Program, TableInfo, load_program

_KINDS = {
    p4info_pb2.MatchField.EXACT: "exact",
    p4info_pb2.MatchField.LPM: "lpm",
    p4info_pb2.MatchField.TERNARY: "ternary",
    p4info_pb2.MatchField.RANGE: "range",
    p4info_pb2.MatchField.OPTIONAL: "optional",
}
# JSON match kinds a P4Info kind may stand for: p4c emits `valid` keys as exact, optional as ternary
_JSON_KINDS = {
    "exact": {"exact", "valid"},
    "lpm": {"lpm"},
    "ternary": {"ternary", "valid"},
    "range": {"range"},
    "optional": {"optional", "ternary", "exact", "valid"},
}


def _mismatch(what: str) -> Exception:
    return invalid(f"{what}: P4Info and BMv2 JSON do not match")


def _check_table(t: p4info_pb2.Table, jt: TableInfo) -> None:
    name = t.preamble.name
    if len(t.match_fields) != len(jt.keys):
        raise _mismatch(
            f"table {name!r} has {len(t.match_fields)} match field(s) in P4Info, {len(jt.keys)} in JSON"
        )
    keys = {k.name: k for k in jt.keys}
    for mf in t.match_fields:
        where = f"table {name!r} match field {mf.name!r}"
        key = keys.get(mf.name)
        if key is None:
            raise _mismatch(f"{where} is not a key of the JSON table")
        kind = _KINDS.get(mf.match_type)
        if kind is not None and key.match_type not in _JSON_KINDS[kind]:
            raise _mismatch(f"{where} is {kind} in P4Info, {key.match_type} in the JSON")
        # a masked JSON key (p4c's key slices) matches the field under a mask: P4Info may be narrower
        if mf.bitwidth != key.width and not (key.mask is not None and mf.bitwidth < key.width):
            raise _mismatch(f"{where} is {mf.bitwidth} bits wide in P4Info, {key.width} in the JSON")


def _check_actions(p4info: p4info_pb2.P4Info, prog: Program) -> None:
    for a in p4info.actions:
        name = a.preamble.name
        ja = prog.actions.get(name)
        if ja is None:
            raise _mismatch(f"P4Info action {name!r} is not in the BMv2 JSON")
        if len(a.params) != len(ja.params):
            raise _mismatch(
                f"action {name!r} has {len(a.params)} parameter(s) in P4Info, {len(ja.params)} in JSON"
            )
        for p, (jname, jwidth) in zip(a.params, ja.params, strict=True):
            if p.name != jname:
                raise _mismatch(f"action {name!r} parameter {p.name!r} is {jname!r} in the JSON")
            if p.bitwidth != jwidth:
                raise _mismatch(
                    f"action {name!r} parameter {p.name!r} is {p.bitwidth} bits wide in P4Info, {jwidth} in the JSON"
                )


def _check_references(p4info: p4info_pb2.P4Info) -> None:
    """The P4Info on its own: unique ids, and every id a table refers to names an object."""
    seen: dict[int, str] = {}
    groups = [
        p4info.tables, p4info.actions, p4info.action_profiles, p4info.counters, p4info.direct_counters,
        p4info.meters, p4info.direct_meters, p4info.registers, p4info.digests,
        p4info.controller_packet_metadata, p4info.value_sets,
    ]  # fmt: skip
    for objs in groups:
        for o in objs:
            pid, name = o.preamble.id, o.preamble.name
            if pid == 0 or pid in seen:
                raise invalid(
                    f"P4Info: {name!r} has id {pid:#x}, " + ("0" if pid == 0 else f"also {seen[pid]!r}'s")
                )
            seen[pid] = name
    actions = {a.preamble.id for a in p4info.actions}
    profiles = {a.preamble.id for a in p4info.action_profiles}
    direct = {o.preamble.id for o in [*p4info.direct_counters, *p4info.direct_meters]}
    for t in p4info.tables:
        name = t.preamble.name
        refs = {r.id for r in t.action_refs}
        for aid in refs - actions:
            raise invalid(f"P4Info table {name!r} lists action id {aid:#x}, which the P4Info does not define")
        if t.const_default_action_id and t.const_default_action_id not in refs:
            raise invalid(f"P4Info table {name!r}: its const default action is not one of its actions")
        if t.implementation_id and t.implementation_id not in profiles:
            raise invalid(
                f"P4Info table {name!r}: implementation id {t.implementation_id:#x} is not an action profile"
            )
        for rid in t.direct_resource_ids:
            if rid not in direct:
                raise invalid(
                    f"P4Info table {name!r}: direct resource id {rid:#x} is not a direct counter or meter"
                )
        for mf in t.match_fields:
            if mf.match_type == p4info_pb2.MatchField.UNSPECIFIED and not mf.other_match_type:
                raise invalid(f"P4Info table {name!r} match field {mf.name!r} has no match type")
    for h in p4info.controller_packet_metadata:
        for m in h.metadata:
            if not 0 < m.bitwidth <= MAX_FIELD_WIDTH:
                raise invalid(
                    f"P4Info packet metadata {h.preamble.name}.{m.name}: width {m.bitwidth} out of range"
                )


def _check_sizes(p4info: p4info_pb2.P4Info, prog: Program) -> None:
    pairs = [
        ("counter", p4info.counters, prog.counters),
        ("meter", p4info.meters, prog.meters),
        ("register", p4info.registers, prog.registers),
    ]
    for kind, objs, present in pairs:
        for o in objs:
            j = present.get(o.preamble.name)
            if j is not None and o.size != j.size:
                raise _mismatch(
                    f"{kind} {o.preamble.name!r} has {o.size} cells in P4Info, {j.size} in the JSON"
                )


def check_consistency(p4info: p4info_pb2.P4Info, doc: dict) -> Program:
    """Raise P4RTError(INVALID_ARGUMENT) when `doc` is not a BMv2 JSON program or `p4info` does not
    describe it; return the indexed program otherwise."""
    try:
        prog = load_program(doc)
    except PipelineLoadError as e:
        raise invalid(f"BMv2 JSON rejected: {e}") from None
    _check_references(p4info)
    for t in p4info.tables:
        jt = prog.tables.get(t.preamble.name)
        if jt is None:
            raise _mismatch(f"P4Info table {t.preamble.name!r} is not in the BMv2 JSON")
        _check_table(t, jt)
        if t.idle_timeout_behavior != p4info_pb2.Table.NO_TIMEOUT and not jt.support_timeout:
            # the dataplane stamps hits only where the JSON asks for it
            raise _mismatch(
                f"P4Info table {t.preamble.name!r} has an idle timeout but its BMv2 JSON table has no "
                "support_timeout"
            )
    _check_actions(p4info, prog)
    checks = [
        ("counter", [c.preamble.name for c in [*p4info.counters, *p4info.direct_counters]], prog.counters),
        ("meter", [m.preamble.name for m in [*p4info.meters, *p4info.direct_meters]], prog.meters),
        ("register", [r.preamble.name for r in p4info.registers], prog.registers),
    ]
    for kind, names, present in checks:
        missing = [n for n in names if n not in present]
        if missing:
            raise _mismatch(f"P4Info {kind} {missing[0]!r} is not in the BMv2 JSON")
    _check_sizes(p4info, prog)
    for r in p4info.registers:
        spec = r.type_spec.bitstring
        width = spec.bit.bitwidth or spec.int.bitwidth
        jr = prog.registers[r.preamble.name]
        if width and jr.bitwidth and width != jr.bitwidth:
            raise _mismatch(
                f"register {r.preamble.name!r} is {width} bits wide in P4Info, {jr.bitwidth} in the JSON"
            )
    return prog
