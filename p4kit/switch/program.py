"""A validated, indexed view of a BMv2 JSON document.

Why: both the control API (validating keys and parameters) and the code generator need the same facts
-- header layouts, field widths, table keys, action signatures, extern arrays -- looked up by name. This
module reads the JSON once, resolves names to indices and raises ``PipelineLoadError`` with a clear
message for anything malformed, so the rest of the switch can trust the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4kit.switch.errors import PipelineLoadError

# Packet instance types of simple_switch (standard_metadata.instance_type).
PKT_NORMAL = 0
PKT_INGRESS_CLONE = 1
PKT_EGRESS_CLONE = 2
PKT_COALESCED = 3
PKT_RECIRC = 4
PKT_REPLICATION = 5
PKT_RESUBMIT = 6

# Limits a JSON document must respect. p4c refuses types wider than 2048 bits ("Compiler only supports
# widths up to 2048") and header stacks of more than 256 elements, so no program it compiles comes near
# them; a document beyond them is refused at load instead of making every packet build huge integers.
MAX_FIELD_WIDTH = 2048
MAX_HEADER_BYTES = 65535  # a varbit header's max_length: more than any frame can hold
MAX_STACK_SIZE = 256
MAX_ARRAY_SIZE = 1 << 24  # cells of one register, counter or meter array (each is a Python object)

# Default error codes (p4c's order for core.p4); programs override them through "errors".
DEFAULT_ERRORS = {
    "NoError": 0,
    "PacketTooShort": 1,
    "NoMatch": 2,
    "StackOutOfBounds": 3,
    "HeaderTooShort": 4,
    "ParserTimeout": 5,
    "ParserInvalidArgument": 6,
}


@dataclass
class FieldInfo:
    name: str
    width: int  # 0 for a varbit field (its width is dynamic)
    signed: bool = False
    varbit_max: int = 0  # maximum width of a varbit field


@dataclass
class HeaderType:
    name: str
    fields: list[FieldInfo]
    index: dict[str, int]  # field name -> position (0-based)

    @property
    def total_width(self) -> int:
        return sum(f.width for f in self.fields)


@dataclass
class HeaderInst:
    """A header (or metadata struct) instance; its slot ``id`` in the per-packet header list."""

    name: str
    id: int
    htype: HeaderType
    metadata: bool
    stack: str | None = None  # name of the stack this instance belongs to
    union: str | None = None  # name of the union this instance belongs to


@dataclass
class StackInfo:
    name: str
    id: int
    htype: HeaderType
    header_ids: list[int]


@dataclass
class UnionStackInfo:
    """A header union stack: `id` shares the numbering (and the next-index counters) of header stacks;
    `elems[i]` maps each union member name to the header id of element i."""

    name: str
    id: int
    elems: list[dict[str, int]]


@dataclass
class KeyField:
    """One key field of a table as the control plane sees it."""

    name: str  # control-plane name (the JSON "name", else the joined target)
    match_type: str  # exact | lpm | ternary | range | optional | valid
    width: int
    target: Any  # [header, field] or a header name (for "valid")
    mask: int | None = None  # p4c's masked-key mask (applied before matching)


@dataclass
class ActionInfo:
    name: str
    id: int
    params: list[tuple[str, int]]  # (name, bitwidth)
    primitives: list[dict]

    @property
    def param_names(self) -> list[str]:
        return [p[0] for p in self.params]


@dataclass
class TableInfo:
    name: str
    id: int
    pipeline: str
    keys: list[KeyField]
    match_type: str
    table_type: str  # simple | indirect | indirect_ws
    action_names: list[str]
    action_ids: list[int]  # parallel to action_names: p4c may give two actions one name
    next_tables: dict[str, str | None]
    base_default_next: str | None
    default_entry: dict | None
    const_entries: list[dict]  # entries the JSON carries (P4 const entries, or initial entries)
    max_size: int
    with_counters: bool
    direct_meters: str | None
    action_profile: str | None
    json: dict = field(repr=False, default_factory=dict)
    # the JSON's entries are P4 1.2.4 initial entries: the table stays writable, and only entries
    # marked "is_const" are fixed (p4kit-p4c's "initial_entries"; p4c's JSON has every entry const)
    initial_entries: bool = False

    @property
    def needs_priority(self) -> bool:
        return any(k.match_type in ("ternary", "range", "optional") for k in self.keys)

    @property
    def hit_miss(self) -> bool:
        return "__HIT__" in self.next_tables or "__MISS__" in self.next_tables

    @property
    def support_timeout(self) -> bool:
        """Entries remember their last hit (P4 `support_timeout = true`, P4Runtime idle timeout)."""
        return bool(self.json.get("support_timeout", False))


@dataclass
class ActionProfileInfo:
    name: str
    id: int
    max_size: int
    selector: dict | None  # {"algo", "input"} when the profile is a selector


@dataclass
class ExternArray:
    """A counter, meter or register array."""

    kind: str  # counter | meter | register
    name: str
    id: int
    size: int
    is_direct: bool = False
    binding: str | None = None  # table of a direct counter/meter
    bitwidth: int = 0  # registers
    meter_type: str = "packets"  # meters: packets | bytes
    rate_count: int = 2
    result_target: Any = None  # direct meters: [header, field]


@dataclass
class Program:
    """Everything the switch needs from one BMv2 JSON document, indexed by name."""

    json: dict
    header_types: dict[str, HeaderType]
    headers: list[HeaderInst]
    header_by_name: dict[str, HeaderInst]
    stacks: dict[str, StackInfo]
    unions: dict[str, list[int]]
    union_stacks: dict[str, UnionStackInfo]
    errors: dict[str, int]
    actions: dict[str, ActionInfo]
    actions_by_id: dict[int, ActionInfo]
    tables: dict[str, TableInfo]
    action_profiles: dict[str, ActionProfileInfo]
    counters: dict[str, ExternArray]
    meters: dict[str, ExternArray]
    registers: dict[str, ExternArray]
    calculations: dict[str, dict]
    field_lists: dict[int, dict]
    learn_lists: dict[int, dict]
    parse_vsets: dict[str, dict]
    pipelines: dict[str, dict]
    parser: dict | None
    deparser: dict | None
    checksums: list[dict]

    def field_ref(self, hdr: str, fld: str) -> tuple[int, int, FieldInfo | None]:
        """(header slot, list position, field info) of a field; position 0 is the valid bit."""
        inst = self.header_by_name.get(hdr)
        if inst is None:
            raise PipelineLoadError(f"unknown header instance '{hdr}'")
        if fld in ("$valid$", "_valid"):
            return inst.id, 0, None
        pos = inst.htype.index.get(fld)
        if pos is None:
            raise PipelineLoadError(f"header '{hdr}' has no field '{fld}'")
        return inst.id, pos + 1, inst.htype.fields[pos]

    def vset_layout(self, name: str) -> list[int]:
        """Real widths of the transition-key parts a parse value set is matched against (the
        control plane gives values without padding; the parser compares byte-padded keys)."""
        for st in (self.parser or {}).get("parse_states", []):
            if any(
                t.get("type") == "parse_vset" and t.get("value") == name for t in st.get("transitions", [])
            ):
                widths = []
                for kp in st.get("transition_key", []):
                    t, v = kp.get("type"), kp.get("value")
                    if t == "field":
                        widths.append(self.field_width(v[0], v[1]))
                    elif t == "stack_field":
                        st_info = self.stacks[v[0]]
                        widths.append(st_info.htype.fields[st_info.htype.index[v[1]]].width)
                    elif t == "lookahead":
                        widths.append(int(v[1]))
                    else:
                        widths.append(32)
                return widths
        bw = int(self.parse_vsets.get(name, {}).get("compressed_bitwidth", 0) or 0)
        return [bw] if bw else []

    def pad_vset_value(self, name: str, value: int) -> int:
        """A compressed value set entry as the byte-padded key the parser computes."""
        out = 0
        rest = value
        parts = []
        for w in reversed(self.vset_layout(name)):
            parts.append((rest & ((1 << w) - 1), w))
            rest >>= w
        for v, w in reversed(parts):
            out = (out << ((w + 7) // 8 * 8)) | v
        return out

    def field_width(self, hdr: str, fld: str) -> int:
        _, _pos, info = self.field_ref(hdr, fld)
        return 1 if info is None else info.width


def _width(v: Any, what: str, limit: int = MAX_FIELD_WIDTH) -> int:
    """A bit width from the JSON: an integer from 0 to `limit`, or a clear PipelineLoadError."""
    if isinstance(v, str) and v.strip().isdigit():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise PipelineLoadError(f"{what}: width must be an integer, got {v!r}")
    if not 0 <= v <= limit:
        raise PipelineLoadError(
            f"{what}: width {v} is outside 0..{limit} (p4c's limit is {MAX_FIELD_WIDTH} bits)"
        )
    return v


def _size(v: Any, what: str, limit: int = MAX_ARRAY_SIZE) -> int:
    """An array or stack size from the JSON: 0..limit."""
    n = _int(v)
    if not 0 <= n <= limit:
        raise PipelineLoadError(f"{what}: size {n} is outside 0..{limit}")
    return n


def _int(v: Any) -> int:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        return int(v, 0)
    raise PipelineLoadError(f"expected an integer, got {v!r}")


def _header_types(doc: dict) -> dict[str, HeaderType]:
    out: dict[str, HeaderType] = {}
    for ht in doc.get("header_types", []):
        fields: list[FieldInfo] = []
        for f in ht.get("fields", []):
            name, width = f[0], f[1]
            signed = bool(f[2]) if len(f) > 2 else False
            what = f"header type '{ht['name']}' field '{name}'"
            if width == "*":
                max_len = _size(
                    ht.get("max_length", 0) or 0, f"header type '{ht['name']}' max_length", MAX_HEADER_BYTES
                )
                fields.append(FieldInfo(name, 0, signed, max_len * 8))
            else:
                fields.append(FieldInfo(name, _width(width, what), signed))
        fixed = sum(f.width for f in fields)
        for f in fields:  # max_length is the whole header's maximum, in bytes
            if f.width == 0 and f.varbit_max:
                f.varbit_max = max(0, f.varbit_max - fixed)
        out[ht["name"]] = HeaderType(ht["name"], fields, {f.name: i for i, f in enumerate(fields)})
    return out


def _key_name(k: dict) -> str:
    if k.get("name"):
        return k["name"]
    t = k.get("target")
    return ".".join(t) if isinstance(t, list) else str(t)


def load_program(doc: dict) -> Program:
    """Index a BMv2 JSON document; raise PipelineLoadError when it is not one simple_switch accepts."""
    if not isinstance(doc, dict):
        raise PipelineLoadError("BMv2 JSON must be an object")
    try:
        return _load(doc)
    except PipelineLoadError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise PipelineLoadError(f"malformed BMv2 JSON: {type(exc).__name__}: {exc}") from exc


def _load(doc: dict) -> Program:
    htypes = _header_types(doc)
    headers: list[HeaderInst] = []
    by_name: dict[str, HeaderInst] = {}
    for i, h in enumerate(doc.get("headers", [])):
        ht = htypes.get(h["header_type"])
        if ht is None:
            raise PipelineLoadError(f"header '{h['name']}' has unknown type '{h['header_type']}'")
        inst = HeaderInst(h["name"], i, ht, bool(h.get("metadata", False)))
        headers.append(inst)
        by_name[inst.name] = inst
    _ensure_standard_metadata(htypes, headers, by_name)
    stacks: dict[str, StackInfo] = {}
    for s in doc.get("header_stacks", []):
        ids = [int(x) for x in s.get("header_ids", [])]
        _size(len(ids), f"header stack '{s['name']}'", MAX_STACK_SIZE)
        stacks[s["name"]] = StackInfo(s["name"], int(s.get("id", len(stacks))), htypes[s["header_type"]], ids)
        for hid in ids:
            headers[hid].stack = s["name"]
    unions: dict[str, list[int]] = {}
    for u in doc.get("header_unions", []):
        ids = [int(x) for x in u.get("header_ids", [])]
        unions[u["name"]] = ids
        for hid in ids:
            headers[hid].union = u["name"]
    union_stacks = _union_stacks(doc, stacks)
    errors = dict(DEFAULT_ERRORS)
    if doc.get("errors"):
        errors = {name: int(code) for name, code in doc["errors"]}
    actions: dict[str, ActionInfo] = {}
    actions_by_id: dict[int, ActionInfo] = {}
    for a in doc.get("actions", []):
        info = ActionInfo(
            a["name"],
            int(a["id"]),
            [
                (p["name"], _width(p["bitwidth"], f"action '{a['name']}' parameter '{p['name']}'"))
                for p in a.get("runtime_data", [])
            ],
            a.get("primitives", []),
        )
        actions_by_id[info.id] = info
        # Several actions may share a name in p4c output (same action used in several controls);
        # the first one keeps the name, the others stay reachable by id.
        actions.setdefault(info.name, info)
    prog = Program(
        json=doc,
        header_types=htypes,
        headers=headers,
        header_by_name=by_name,
        stacks=stacks,
        unions=unions,
        union_stacks=union_stacks,
        errors=errors,
        actions=actions,
        actions_by_id=actions_by_id,
        tables={},
        action_profiles={},
        counters={},
        meters={},
        registers={},
        calculations={c["name"]: c for c in doc.get("calculations", [])},
        field_lists={int(f["id"]): f for f in doc.get("field_lists", [])},
        learn_lists={int(f["id"]): f for f in doc.get("learn_lists", [])},
        parse_vsets={v["name"]: v for v in doc.get("parse_vsets", [])},
        pipelines={p["name"]: p for p in doc.get("pipelines", [])},
        parser=(doc.get("parsers") or [None])[0],
        deparser=(doc.get("deparsers") or [None])[0],
        checksums=list(doc.get("checksums", [])),
    )
    for pipe in doc.get("pipelines", []):
        for ap in pipe.get("action_profiles", []):
            prog.action_profiles[ap["name"]] = ActionProfileInfo(
                ap["name"], int(ap.get("id", 0)), int(ap.get("max_size", 0) or 0), ap.get("selector")
            )
        for t in pipe.get("tables", []):
            prog.tables[t["name"]] = _table(prog, pipe["name"], t)
    for c in doc.get("counter_arrays", []):
        prog.counters[c["name"]] = ExternArray(
            "counter",
            c["name"],
            int(c.get("id", 0)),
            _size(c.get("size", 0) or 0, f"counter '{c['name']}'"),
            bool(c.get("is_direct", False)),
            c.get("binding"),
        )
    for m in doc.get("meter_arrays", []):
        prog.meters[m["name"]] = ExternArray(
            "meter",
            m["name"],
            int(m.get("id", 0)),
            _size(m.get("size", 0) or 0, f"meter '{m['name']}'"),
            bool(m.get("is_direct", False)),
            m.get("binding"),
            meter_type=m.get("type", "packets"),
            rate_count=int(m.get("rate_count", 2)),
            result_target=m.get("result_target"),
        )
    for r in doc.get("register_arrays", []):
        prog.registers[r["name"]] = ExternArray(
            "register",
            r["name"],
            int(r.get("id", 0)),
            _size(r.get("size", 0), f"register '{r['name']}'"),
            bitwidth=_width(r["bitwidth"], f"register '{r['name']}'"),
        )
    return prog


def _union_stacks(doc: dict, stacks: dict[str, StackInfo]) -> dict[str, UnionStackInfo]:
    """`header_union_stacks`: each element is a header union (by id in `header_unions`), whose
    members are named by its `header_union_types` entry, in the order of its header ids."""
    members = {t["name"]: [m[0] for m in t.get("headers", [])] for t in doc.get("header_union_types", [])}
    unions = doc.get("header_unions", [])
    out: dict[str, UnionStackInfo] = {}
    next_id = max((st.id for st in stacks.values()), default=-1) + 1
    for us in doc.get("header_union_stacks", []):
        ids = [int(x) for x in us.get("header_union_ids", [])]
        _size(len(ids), f"header union stack '{us['name']}'", MAX_STACK_SIZE)
        elems = []
        for uid in ids:
            u = unions[uid]
            names = members[u["union_type"]]
            elems.append(dict(zip(names, [int(h) for h in u["header_ids"]], strict=True)))
        out[us["name"]] = UnionStackInfo(us["name"], next_id, elems)
        next_id += 1
    return out


# v1model's standard_metadata fields (name, width) as simple_switch defines them.
STANDARD_METADATA = (
    ("ingress_port", 9),
    ("egress_spec", 9),
    ("egress_port", 9),
    ("instance_type", 32),
    ("packet_length", 32),
    ("enq_timestamp", 32),
    ("enq_qdepth", 19),
    ("deq_timedelta", 32),
    ("deq_qdepth", 19),
    ("ingress_global_timestamp", 48),
    ("egress_global_timestamp", 48),
    ("mcast_grp", 16),
    ("egress_rid", 16),
    ("checksum_error", 1),
    ("parser_error", 32),
    ("priority", 3),
)


def _ensure_standard_metadata(htypes: dict, headers: list, by_name: dict) -> None:
    """Make sure a "standard_metadata" instance with every v1model field exists.

    p4c always emits it; small hand-written JSON may not, and the engine reads and writes these fields
    unconditionally. Missing fields are appended to a private copy of the type (metadata is never
    deparsed, so the layout change is invisible)."""
    inst = by_name.get("standard_metadata")
    if inst is None:
        ht = HeaderType("standard_metadata_t$", [], {})
        inst = HeaderInst("standard_metadata", len(headers), ht, True)
        headers.append(inst)
        by_name[inst.name] = inst
    missing = [(n, w) for n, w in STANDARD_METADATA if n not in inst.htype.index]
    if missing:
        fields = list(inst.htype.fields) + [FieldInfo(n, w) for n, w in missing]
        ht = HeaderType(inst.htype.name + "$", fields, {f.name: i for i, f in enumerate(fields)})
        htypes[ht.name] = ht
        inst.htype = ht
    inst.metadata = True


def _table(prog: Program, pipeline: str, t: dict) -> TableInfo:
    keys: list[KeyField] = []
    for k in t.get("key", []):
        mt = k["match_type"]
        target = k["target"]
        if mt == "valid" or not isinstance(target, list):
            width = 1
        else:
            width = prog.field_width(target[0], target[1])
        mask = k.get("mask")
        keys.append(KeyField(_key_name(k), mt, width, target, None if mask is None else _int(mask)))
    names = list(t.get("actions", []))
    ids = [int(i) for i in t.get("action_ids", [])]
    # Resolve by id when available: p4c may emit two actions with one name.
    if ids and len(ids) == len(names):
        names = [
            prog.actions_by_id[i].name if i in prog.actions_by_id else n
            for i, n in zip(ids, names, strict=False)
        ]
    else:
        ids = [prog.actions[n].id for n in names if n in prog.actions]
    return TableInfo(
        name=t["name"],
        id=int(t.get("id", 0)),
        pipeline=pipeline,
        keys=keys,
        match_type=t.get("match_type", "exact"),
        table_type=t.get("type", "simple"),
        action_names=names,
        action_ids=ids,
        next_tables=dict(t.get("next_tables", {})),
        base_default_next=t.get("base_default_next"),
        default_entry=t.get("default_entry"),
        const_entries=list(t.get("entries", [])),
        max_size=int(t.get("max_size", 0) or 0),
        with_counters=bool(t.get("with_counters", False)),
        direct_meters=t.get("direct_meters"),
        action_profile=t.get("action_profile"),
        json=t,
        initial_entries=bool(t.get("initial_entries", False)),
    )
