"""P4Info generation: the control-plane contract of a compiled program (p4.config.v1.P4Info).

A controller written against real p4c output hard-codes nothing but names, yet tools (and STF files,
ONOS pipeconfs, saved table dumps) often carry numeric ids. So ids here are assigned exactly as p4c's
control-plane serializer assigns them, and a program compiled with p4kit or with p4c yields the same
P4Info ids:

* `@id(N)` wins. When N has no resource-type prefix in its top byte, the prefix is added; a prefix of
  the wrong type is an error, and so is the same id on two objects.
* Every other object of a resource type gets `prefix << 24 | (hash(name) & 0xffffff)`, where hash is
  Bob Jenkins' one-at-a-time hash of the fully qualified control-plane name. Names are taken in sorted
  (byte-wise) order and a taken id is resolved by linear probing on the 24-bit hash value, so the result
  does not depend on declaration order.
* Objects annotated `@hidden` take part in id assignment (as in p4c, so they can shift a colliding id
  the same way) but are left out of the output.
* Aliases are the shortest dot-separated suffix of the name that no other control-plane name shares.
* Match fields, action parameters and packet-io metadata get ids 1, 2, ... in declaration order,
  except where `@id` gives one; a user id also consumes its position in the sequence, as in p4c.

`write_p4info` writes the three formats p4c writes (text, JSON, binary), choosing by file suffix the
way `--p4runtime-files` does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2, p4types_pb2

from p4kit.compiler.cpmodel import (
    ControlPlaneModel,
    CPAnnotation,
    CPField,
    CPMatchField,
    CPParam,
    CPTable,
)
from p4kit.compiler.diagnostics import CompileError

# Resource-type prefixes (top byte of an id), as p4.config.v1.P4Ids.Prefix defines them.
ACTION = p4info_pb2.P4Ids.ACTION
TABLE = p4info_pb2.P4Ids.TABLE
VALUE_SET = p4info_pb2.P4Ids.VALUE_SET
CONTROLLER_HEADER = p4info_pb2.P4Ids.CONTROLLER_HEADER
ACTION_PROFILE = p4info_pb2.P4Ids.ACTION_PROFILE
COUNTER = p4info_pb2.P4Ids.COUNTER
DIRECT_COUNTER = p4info_pb2.P4Ids.DIRECT_COUNTER
METER = p4info_pb2.P4Ids.METER
DIRECT_METER = p4info_pb2.P4Ids.DIRECT_METER
REGISTER = p4info_pb2.P4Ids.REGISTER
DIGEST = p4info_pb2.P4Ids.DIGEST

_PREFIX_NAMES = {
    ACTION: "action",
    TABLE: "table",
    VALUE_SET: "value set",
    CONTROLLER_HEADER: "controller header",
    ACTION_PROFILE: "action profile",
    COUNTER: "counter",
    DIRECT_COUNTER: "direct counter",
    METER: "meter",
    DIRECT_METER: "direct meter",
    REGISTER: "register",
    DIGEST: "digest",
}

# Annotations that P4Info represents elsewhere (name, id, documentation) and so never lists verbatim.
_NOT_COPIED = frozenset({"name", "id", "brief", "description"})

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}

_SCOPES = {
    "TABLE_AND_DEFAULT": p4info_pb2.ActionRef.TABLE_AND_DEFAULT,
    "TABLE_ONLY": p4info_pb2.ActionRef.TABLE_ONLY,
    "DEFAULT_ONLY": p4info_pb2.ActionRef.DEFAULT_ONLY,
}

_COUNTER_UNITS = {
    "BYTES": p4info_pb2.CounterSpec.BYTES,
    "PACKETS": p4info_pb2.CounterSpec.PACKETS,
    "BOTH": p4info_pb2.CounterSpec.BOTH,
    # The v1model enum spellings, in case a producer passes them through unchanged.
    "bytes": p4info_pb2.CounterSpec.BYTES,
    "packets": p4info_pb2.CounterSpec.PACKETS,
    "packets_and_bytes": p4info_pb2.CounterSpec.BOTH,
}

_METER_UNITS = {
    "BYTES": p4info_pb2.MeterSpec.BYTES,
    "PACKETS": p4info_pb2.MeterSpec.PACKETS,
    "bytes": p4info_pb2.MeterSpec.BYTES,
    "packets": p4info_pb2.MeterSpec.PACKETS,
}


# --------------------------------------------------------------------------------------------------
# Id assignment
# --------------------------------------------------------------------------------------------------


def jenkins_one_at_a_time(data: bytes) -> int:
    """Bob Jenkins' one-at-a-time hash over `data`, in 32-bit unsigned arithmetic (p4c's name hash)."""
    h = 0
    for byte in data:
        h = (h + byte) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    h = (h + (h << 15)) & 0xFFFFFFFF
    return h


def _find(annotations: Iterable[CPAnnotation], name: str) -> CPAnnotation | None:
    for a in annotations:
        if a.name == name:
            return a
    return None


def is_hidden(annotations: Iterable[CPAnnotation]) -> bool:
    return _find(annotations, "hidden") is not None


_INT_LITERAL = re.compile(r"^\s*(?:\d+\s*[ws])?\s*(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|[0-9_]+)\s*$")


def parse_int_literal(text: str) -> int | None:
    """A P4 integer literal as written in an annotation body (`5`, `0x0100_0005`, `32w7`), or None."""
    m = _INT_LITERAL.match(text)
    if not m:
        return None
    digits = m.group(1).replace("_", "")
    return int(digits, 0)


def _string_literal(text: str) -> str:
    """The value of a P4 string literal written in an annotation body (quotes removed, escapes undone)."""
    s = text.strip()
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        s = s[1:-1]
        return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), s)
    return s


def annotation_id(annotations: Iterable[CPAnnotation], what: str) -> int | None:
    """The value of an `@id(...)` annotation, or None when there is none."""
    anno = _find(annotations, "id")
    if anno is None:
        return None
    value = parse_int_literal(anno.body)
    if value is None or not 0 <= value <= 0xFFFFFFFF:
        raise CompileError(f"{what}: @id should be an unsigned 32-bit integer, got '@id({anno.body})'")
    return value


@dataclass
class IdAssigner:
    """Collects every control-plane symbol, then assigns ids as p4c's P4RuntimeSymbolTable does.

    Symbols must all be added before `assign()` is called, because a hashed id depends on which ids
    are already taken (user ids first, then names in sorted order).
    """

    _tables: dict[int, dict[str, int | None]] = field(default_factory=dict)
    _taken: set[int] = field(default_factory=set)
    _ids: dict[tuple[int, str], int] = field(default_factory=dict)
    _all_names: set[str] = field(default_factory=set)
    _suffix_counts: dict[tuple[str, ...], int] = field(default_factory=dict)

    def add(self, prefix: int, name: str, annotations: Iterable[CPAnnotation] = ()) -> None:
        table = self._tables.setdefault(prefix, {})
        if name in table:
            return  # the same object seen twice (e.g. an action inlined into two controls): harmless
        user = annotation_id(list(annotations), name)
        if user is not None:
            type_prefix = prefix << 24
            if user & 0xFF000000 and user & 0xFF000000 != type_prefix:
                raise CompileError(
                    f"{name}: @id 0x{user:08x} has the wrong 8-bit prefix for a "
                    f"{_PREFIX_NAMES.get(prefix, 'resource')} (expected 0x{prefix:02x})"
                )
            user |= type_prefix
            if user in self._taken:
                raise CompileError(f"@id 0x{user:08x} is assigned to multiple declarations (one is {name})")
            self._taken.add(user)
        table[name] = user
        self._add_suffixes(name)

    def _add_suffixes(self, name: str) -> None:
        if name in self._all_names:
            return
        self._all_names.add(name)
        parts = tuple(name.split("."))
        for i in range(len(parts)):
            key = parts[i:]
            self._suffix_counts[key] = self._suffix_counts.get(key, 0) + 1

    def assign(self) -> None:
        for prefix in sorted(self._tables):
            table = self._tables[prefix]
            for name, user in table.items():
                if user is not None:
                    self._ids[(prefix, name)] = user
            pending = sorted((n for n, u in table.items() if u is None), key=lambda n: n.encode())
            for name in pending:
                start = jenkins_one_at_a_time(name.encode())
                value = start
                while True:
                    candidate = (prefix << 24) | (value & 0xFFFFFF)
                    if candidate not in self._taken:
                        break
                    value = (value + 1) & 0xFFFFFFFF
                    if value == start:
                        raise CompileError(f"no available id to represent {name} in P4Runtime")
                self._taken.add(candidate)
                self._ids[(prefix, name)] = candidate

    def id_of(self, prefix: int, name: str) -> int:
        try:
            return self._ids[(prefix, name)]
        except KeyError:
            raise CompileError(
                f"P4Info: reference to unknown {_PREFIX_NAMES.get(prefix, 'object')} '{name}'"
            ) from None

    def has(self, prefix: int, name: str) -> bool:
        return (prefix, name) in self._ids

    def alias(self, name: str) -> str:
        """The shortest suffix of whole name components that is unique among all symbol names."""
        parts = tuple(name.split("."))
        for n in range(1, len(parts) + 1):
            if self._suffix_counts.get(parts[-n:], 0) < 2:
                return ".".join(parts[-n:])
        return name


def allocate_field_ids(annotation_lists: Sequence[Sequence[CPAnnotation]], what: str) -> list[int]:
    """Ids for the members of one object (match fields, params, metadata), in order.

    User `@id`s are taken first; the others count up from 1, skipping taken ids. As in p4c, an element
    with a user id still advances the counter by one.
    """
    user: list[int | None] = []
    taken: set[int] = set()
    for annos in annotation_lists:
        value = annotation_id(annos, what)
        if value is not None:
            if value == 0:
                raise CompileError(f"{what}: 0 is not a valid @id value")
            if value in taken:
                raise CompileError(f"{what}: @id {value} is used multiple times")
            taken.add(value)
        user.append(value)
    result: list[int] = []
    index = 1
    for value in user:
        if value is not None:
            result.append(value)
            index += 1
            continue
        while index in taken:
            index += 1
        taken.add(index)
        result.append(index)
    return result


# --------------------------------------------------------------------------------------------------
# Annotations and documentation
# --------------------------------------------------------------------------------------------------


def _annotation_text(a: CPAnnotation) -> str:
    return f"@{a.name}({a.body})" if a.body else f"@{a.name}"


def _copy_annotations(message, annotations: Iterable[CPAnnotation], skip: Iterable[str] = ()) -> None:
    """Annotations into the message's `annotations` field, minus those P4Info represents otherwise."""
    skipped = _NOT_COPIED | set(skip)
    for a in annotations:
        if a.name not in skipped:
            message.annotations.append(_annotation_text(a))


def _copy_doc(message, annotations: Iterable[CPAnnotation]) -> None:
    """`@brief` / `@description` into the message's `doc`, set only when one of them is present."""
    brief = description = None
    for a in annotations:
        if a.name == "brief":
            brief = _string_literal(a.body)
        elif a.name == "description":
            description = _string_literal(a.body)
    if brief is not None:
        message.doc.brief = brief
    if description is not None:
        message.doc.description = description


def _preamble(
    pre: p4info_pb2.Preamble,
    ids: IdAssigner,
    prefix: int,
    name: str,
    annotations: list[CPAnnotation],
    display: str | None = None,
    alias: str | None = None,
) -> None:
    pre.id = ids.id_of(prefix, name)
    pre.name = display if display is not None else name
    pre.alias = alias if alias is not None else ids.alias(name)
    _copy_annotations(pre, annotations)
    _copy_doc(pre, annotations)


def _bitstring(spec: p4types_pb2.P4DataTypeSpec, bitwidth: int) -> None:
    spec.bitstring.bit.bitwidth = bitwidth


# --------------------------------------------------------------------------------------------------
# The builder
# --------------------------------------------------------------------------------------------------


def _direct_name_lists(cp: ControlPlaneModel) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """table name -> direct counters / meters attached to it, from both sides of the model."""
    counters: dict[str, list[str]] = {}
    meters: dict[str, list[str]] = {}
    for t in cp.tables:
        counters.setdefault(t.name, []).extend(t.direct_counters)
        meters.setdefault(t.name, []).extend(t.direct_meters)
    for c in cp.counters:
        if c.direct_table is not None:
            lst = counters.setdefault(c.direct_table, [])
            if c.name not in lst:
                lst.append(c.name)
    for m in cp.meters:
        if m.direct_table is not None:
            lst = meters.setdefault(m.direct_table, [])
            if m.name not in lst:
                lst.append(m.name)
    return counters, meters


def _collect_symbols(cp: ControlPlaneModel) -> IdAssigner:
    ids = IdAssigner()
    for t in cp.tables:
        ids.add(TABLE, t.name, t.annotations)
    for a in cp.actions:
        ids.add(ACTION, a.name, a.annotations)
    for p in cp.action_profiles:
        ids.add(ACTION_PROFILE, p.name, p.annotations)
    for c in cp.counters:
        ids.add(DIRECT_COUNTER if c.direct_table is not None else COUNTER, c.name, c.annotations)
    for m in cp.meters:
        ids.add(DIRECT_METER if m.direct_table is not None else METER, m.name, m.annotations)
    for r in cp.registers:
        ids.add(REGISTER, r.name, r.annotations)
    for d in cp.digests:
        ids.add(DIGEST, d.name, d.annotations)
    for v in cp.value_sets:
        ids.add(VALUE_SET, v.name, v.annotations)
    for h in cp.controller_headers:
        # p4c hashes the header *type* name; the P4Info name is the @controller_header string.
        ids.add(CONTROLLER_HEADER, _controller_symbol(h), h.annotations)
    ids.assign()
    return ids


def _controller_symbol(h) -> str:
    return h.type_name or h.name


def _add_match_fields(
    out, fields: list[CPMatchField], owner: str, skip_kinds: frozenset[str] = frozenset({"selector"})
) -> None:
    """Match fields with their ids. `selector` keys feed the action selector's hash and are not
    control-plane match fields, but (as in p4c) they still occupy a position in the id sequence."""
    field_ids = allocate_field_ids([f.annotations for f in fields], owner)
    for f, fid in zip(fields, field_ids, strict=True):
        if f.match_type in skip_kinds:
            continue
        mf = out.add()
        mf.id = fid
        mf.name = f.name
        _copy_annotations(mf, f.annotations)
        _copy_doc(mf, f.annotations)
        mf.bitwidth = f.bitwidth
        kind = _MATCH_TYPES.get(f.match_type)
        if kind is not None:
            mf.match_type = kind
        else:
            mf.other_match_type = f.match_type


def _add_table(p4info: p4info_pb2.P4Info, ids: IdAssigner, cp: ControlPlaneModel, t: CPTable, direct) -> None:
    direct_counters, direct_meters = direct
    table = p4info.tables.add()
    _preamble(table.preamble, ids, TABLE, t.name, t.annotations)
    _add_match_fields(table.match_fields, t.match_fields, t.name)
    for ref in t.action_refs:
        ar = table.action_refs.add()
        ar.id = ids.id_of(ACTION, ref.name)
        scope = ref.scope
        names = {a.name for a in ref.annotations}
        if "tableonly" in names and "defaultonly" in names:
            raise CompileError(
                f"table '{t.name}' has an action reference ('{ref.name}') annotated with both "
                "'@tableonly' and '@defaultonly'"
            )
        if "tableonly" in names:
            scope = "TABLE_ONLY"
        elif "defaultonly" in names:
            scope = "DEFAULT_ONLY"
        ar.scope = _SCOPES.get(scope, p4info_pb2.ActionRef.TABLE_AND_DEFAULT)
        _copy_annotations(ar, ref.annotations)
    if t.const_default_action is not None:
        table.const_default_action_id = ids.id_of(ACTION, t.const_default_action)
    if t.implementation is not None:
        table.implementation_id = ids.id_of(ACTION_PROFILE, t.implementation)
    seen: set[int] = set()
    for name in direct_counters.get(t.name, []):
        rid = ids.id_of(DIRECT_COUNTER, name)
        if rid not in seen:
            seen.add(rid)
            table.direct_resource_ids.append(rid)
    for name in direct_meters.get(t.name, []):
        rid = ids.id_of(DIRECT_METER, name)
        if rid not in seen:
            seen.add(rid)
            table.direct_resource_ids.append(rid)
    table.size = t.size
    table.idle_timeout_behavior = (
        p4info_pb2.Table.NOTIFY_CONTROL if t.idle_timeout else p4info_pb2.Table.NO_TIMEOUT
    )
    if t.is_const_table:
        table.is_const_table = True
    if t.has_initial_entries:
        table.has_initial_entries = True


def _add_params(out, params: list[CPParam], owner: str) -> None:
    param_ids = allocate_field_ids([p.annotations for p in params], owner)
    for p, pid in zip(params, param_ids, strict=True):
        param = out.add()
        param.id = pid
        param.name = p.name
        _copy_annotations(param, p.annotations)
        _copy_doc(param, p.annotations)
        param.bitwidth = p.bitwidth


def _add_struct_type(p4info: p4info_pb2.P4Info, name: str, fields: list[CPField]) -> None:
    """A struct in type_info (digests name their data type): members are bit<W>, or a serializable
    enum named by the member's type_name (its values are in type_info.serializable_enums)."""
    struct = p4info.type_info.structs[name]
    del struct.members[:]
    for f in fields:
        member = struct.members.add()
        member.name = f.name
        if f.type_name:
            member.type_spec.serializable_enum.name = f.type_name
        else:
            _bitstring(member.type_spec, f.bitwidth)


def build_p4info(cp: ControlPlaneModel) -> p4info_pb2.P4Info:
    """The P4Info message for a compiled program's control-plane model.

    Raises CompileError for id conflicts (wrong prefix, duplicate @id) and dangling references, as p4c
    reports them; never returns a half-built message.
    """
    ids = _collect_symbols(cp)
    p4info = p4info_pb2.P4Info()
    p4info.pkg_info.arch = cp.arch or "v1model"

    direct = _direct_name_lists(cp)
    for t in cp.tables:
        if not is_hidden(t.annotations):
            _add_table(p4info, ids, cp, t, direct)

    emitted_actions: set[str] = set()
    for a in cp.actions:
        if is_hidden(a.annotations) or a.name in emitted_actions:
            continue
        emitted_actions.add(a.name)
        action = p4info.actions.add()
        _preamble(action.preamble, ids, ACTION, a.name, a.annotations)
        _add_params(action.params, a.params, a.name)

    tables_by_name = {t.name: t for t in cp.tables}
    for p in cp.action_profiles:
        if is_hidden(p.annotations):
            continue
        prof = p4info.action_profiles.add()
        _preamble(prof.preamble, ids, ACTION_PROFILE, p.name, p.annotations)
        users = list(p.table_names)
        users += [t.name for t in cp.tables if t.implementation == p.name and t.name not in users]
        for tname in users:
            if tname in tables_by_name:
                prof.table_ids.append(ids.id_of(TABLE, tname))
        prof.with_selector = p.with_selector
        prof.size = p.size
        if p.max_group_size:
            prof.max_group_size = p.max_group_size

    for c in cp.counters:
        if is_hidden(c.annotations):
            continue
        unit = _COUNTER_UNITS.get(c.unit)
        if unit is None:
            raise CompileError(f"counter '{c.name}': unknown unit '{c.unit}'")
        if c.direct_table is None:
            ctr = p4info.counters.add()
            _preamble(ctr.preamble, ids, COUNTER, c.name, c.annotations)
            ctr.spec.unit = unit
            ctr.size = c.size
        else:
            dctr = p4info.direct_counters.add()
            _preamble(dctr.preamble, ids, DIRECT_COUNTER, c.name, c.annotations)
            dctr.spec.unit = unit
            dctr.direct_table_id = ids.id_of(TABLE, c.direct_table)

    for m in cp.meters:
        if is_hidden(m.annotations):
            continue
        unit = _METER_UNITS.get(m.unit)
        if unit is None:
            raise CompileError(f"meter '{m.name}': unknown unit '{m.unit}'")
        if m.direct_table is None:
            mtr = p4info.meters.add()
            _preamble(mtr.preamble, ids, METER, m.name, m.annotations)
            mtr.spec.unit = unit
            mtr.size = m.size
        else:
            dmtr = p4info.direct_meters.add()
            _preamble(dmtr.preamble, ids, DIRECT_METER, m.name, m.annotations)
            dmtr.spec.unit = unit
            dmtr.direct_table_id = ids.id_of(TABLE, m.direct_table)

    for h in cp.controller_headers:
        if is_hidden(h.annotations):
            continue
        cpm = p4info.controller_packet_metadata.add()
        # The P4Info name and alias of packet-io metadata are the @controller_header string.
        _preamble(
            cpm.preamble,
            ids,
            CONTROLLER_HEADER,
            _controller_symbol(h),
            [a for a in h.annotations if a.name != "controller_header"],
            display=h.name,
            alias=h.name,
        )
        md_ids = allocate_field_ids([f.annotations for f in h.fields], h.name)
        for f, fid in zip(h.fields, md_ids, strict=True):
            if is_hidden(f.annotations):
                continue
            md = cpm.metadata.add()
            md.id = fid
            md.name = f.name
            _copy_annotations(md, f.annotations)
            md.bitwidth = f.bitwidth
            if f.type_name:
                md.type_name.name = f.type_name

    for v in cp.value_sets:
        if is_hidden(v.annotations):
            continue
        vs = p4info.value_sets.add()
        _preamble(vs.preamble, ids, VALUE_SET, v.name, v.annotations)
        _add_match_fields(vs.match, v.match_fields, v.name, skip_kinds=frozenset())
        vs.size = v.size

    for r in cp.registers:
        if is_hidden(r.annotations):
            continue
        reg = p4info.registers.add()
        _preamble(reg.preamble, ids, REGISTER, r.name, r.annotations)
        _bitstring(reg.type_spec, r.bitwidth)
        reg.size = r.size

    for d in cp.digests:
        if is_hidden(d.annotations):
            continue
        dig = p4info.digests.add()
        _preamble(dig.preamble, ids, DIGEST, d.name, d.annotations)
        dig.type_spec.struct.name = d.name
        _add_struct_type(p4info, d.name, d.fields)

    for e in cp.serializable_enums.values():
        spec = p4info.type_info.serializable_enums[e.name]
        spec.underlying_type.bitwidth = e.bitwidth
        for member, value in e.members:
            m = spec.members.add()
            m.name = member
            m.value = (value & ((1 << e.bitwidth) - 1)).to_bytes((e.bitwidth + 7) // 8, "big")
    return p4info


# --------------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------------

FORMATS = ("text", "json", "binary")

# Suffixes p4c recognises for --p4runtime-files (.txtpb is what newer p4c and the tutorials use).
_SUFFIX_FORMATS = {".txt": "text", ".txtpb": "text", ".json": "json", ".bin": "binary"}


def format_for_path(path: str | Path) -> str:
    """The serialisation format p4c infers from a P4Info file name; CompileError when it cannot."""
    suffix = Path(path).suffix
    if not suffix:
        raise CompileError(f"{path}: unknown P4Info file kind; known suffixes are .bin, .txt, .txtpb, .json")
    fmt = _SUFFIX_FORMATS.get(suffix)
    if fmt is None:
        raise CompileError(f"{path}: could not detect the P4Info file format from the file suffix {suffix}")
    return fmt


def serialize_p4info(p4info: p4info_pb2.P4Info, fmt: str) -> bytes:
    """P4Info as bytes in `fmt` ("text", "json" or "binary")."""
    if fmt == "text":
        return text_format.MessageToString(p4info).encode()
    if fmt == "json":
        return (json_format.MessageToJson(p4info, indent=2) + "\n").encode()
    if fmt == "binary":
        return p4info.SerializeToString(deterministic=True)
    raise CompileError(f"unknown P4Info format '{fmt}' (expected one of: {', '.join(FORMATS)})")


def write_p4info(p4info: p4info_pb2.P4Info, path: str | Path, fmt: str | None = None) -> None:
    """Write `p4info` to `path`. With `fmt` None the format follows the suffix, as p4c does:
    .txt/.txtpb text, .json JSON, .bin binary."""
    fmt = fmt or format_for_path(path)
    data = serialize_p4info(p4info, fmt)
    try:
        Path(path).write_bytes(data)
    except OSError as e:
        raise CompileError(f"couldn't write P4Runtime API file {path}: {e.strerror or e}") from None


def read_p4info(path: str | Path, fmt: str | None = None) -> p4info_pb2.P4Info:
    """Read a P4Info file in any of the three formats (the inverse of write_p4info)."""
    fmt = fmt or format_for_path(path)
    data = Path(path).read_bytes()
    msg = p4info_pb2.P4Info()
    if fmt == "text":
        text_format.Parse(data.decode(), msg)
    elif fmt == "json":
        json_format.Parse(data.decode(), msg)
    elif fmt == "binary":
        msg.ParseFromString(data)
    else:
        raise CompileError(f"unknown P4Info format '{fmt}'")
    return msg
