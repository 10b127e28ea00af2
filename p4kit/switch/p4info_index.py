"""Lookup tables over a P4Info message: ids to names, widths, match kinds and action scopes.

Why: every P4Runtime request names objects by 32-bit id and carries values as bytestrings, while the
dataplane is driven by BMv2 JSON names (equal to P4Info names). Indexing the P4Info once per pipeline
turns each request's validation into dictionary lookups.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4.config.v1 import p4info_pb2, p4types_pb2

MatchType = p4info_pb2.MatchField.MatchType

EXACT = MatchType.Value("EXACT")
LPM = MatchType.Value("LPM")
TERNARY = MatchType.Value("TERNARY")
RANGE = MatchType.Value("RANGE")
OPTIONAL = MatchType.Value("OPTIONAL")
_MATCH_NAMES = {EXACT: "exact", LPM: "lpm", TERNARY: "ternary", RANGE: "range", OPTIONAL: "optional"}

SCOPE_TABLE_AND_DEFAULT = p4info_pb2.ActionRef.Scope.Value("TABLE_AND_DEFAULT")
SCOPE_TABLE_ONLY = p4info_pb2.ActionRef.Scope.Value("TABLE_ONLY")
SCOPE_DEFAULT_ONLY = p4info_pb2.ActionRef.Scope.Value("DEFAULT_ONLY")


@dataclass
class MatchFieldInfo:
    id: int
    name: str
    bitwidth: int
    match_type: int  # p4info MatchType enum value; 0 when `other_match_type` is used
    other_match_type: str = ""

    @property
    def kind(self) -> str:
        return _MATCH_NAMES.get(self.match_type, self.other_match_type or "unspecified")


@dataclass
class ParamInfo:
    id: int
    name: str
    bitwidth: int


@dataclass
class ActionInfo:
    id: int
    name: str
    params: dict[int, ParamInfo] = field(default_factory=dict)


@dataclass
class TableInfo:
    id: int
    name: str
    match_fields: list[MatchFieldInfo]
    fields_by_id: dict[int, MatchFieldInfo]
    action_scopes: dict[int, int]  # action id -> scope
    const_default_action_id: int
    implementation_id: int  # action profile id, 0 for a direct table
    direct_counter_id: int
    direct_meter_id: int
    size: int
    is_const_table: bool
    supports_idle_timeout: bool

    @property
    def needs_priority(self) -> bool:
        return any(f.match_type in (TERNARY, RANGE, OPTIONAL) for f in self.match_fields)


@dataclass
class ActionProfileInfo:
    id: int
    name: str
    table_ids: list[int]
    with_selector: bool
    size: int
    max_group_size: int


@dataclass
class CounterInfo:
    id: int
    name: str
    unit: int  # CounterSpec.Unit
    size: int
    direct_table_id: int = 0


@dataclass
class MeterInfo:
    id: int
    name: str
    unit: int  # MeterSpec.Unit
    size: int
    direct_table_id: int = 0


@dataclass
class RegisterInfo:
    id: int
    name: str
    bitwidth: int
    size: int


@dataclass
class DigestInfo:
    id: int
    name: str
    field_widths: list[int]  # members of the digested struct, in order; [] when not a flat struct


@dataclass
class ControllerHeaderInfo:
    id: int
    name: str  # "packet_in" | "packet_out"
    fields: list[ParamInfo]  # id, name, bitwidth in header order

    @property
    def byte_length(self) -> int:
        return (sum(f.bitwidth for f in self.fields) + 7) // 8


class P4InfoIndex:
    """All P4Info objects by id and by name (`preamble.name`)."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self.actions: dict[int, ActionInfo] = {}
        self.tables: dict[int, TableInfo] = {}
        self.action_profiles: dict[int, ActionProfileInfo] = {}
        self.counters: dict[int, CounterInfo] = {}
        self.direct_counters: dict[int, CounterInfo] = {}
        self.meters: dict[int, MeterInfo] = {}
        self.direct_meters: dict[int, MeterInfo] = {}
        self.registers: dict[int, RegisterInfo] = {}
        self.digests: dict[int, DigestInfo] = {}
        self.controller_headers: dict[str, ControllerHeaderInfo] = {}
        self.value_sets: dict[int, str] = {}
        self.names: dict[str, int] = {}

        for a in p4info.actions:
            params = {p.id: ParamInfo(p.id, p.name, p.bitwidth) for p in a.params}
            self.actions[a.preamble.id] = ActionInfo(a.preamble.id, a.preamble.name, params)
        for t in p4info.tables:
            fields = [
                MatchFieldInfo(m.id, m.name, m.bitwidth, m.match_type, m.other_match_type)
                for m in t.match_fields
            ]
            direct_counter = direct_meter = 0
            for rid in t.direct_resource_ids:
                if rid >> 24 == 0x13:
                    direct_counter = rid
                elif rid >> 24 == 0x15:
                    direct_meter = rid
            self.tables[t.preamble.id] = TableInfo(
                id=t.preamble.id,
                name=t.preamble.name,
                match_fields=fields,
                fields_by_id={f.id: f for f in fields},
                action_scopes={r.id: r.scope for r in t.action_refs},
                const_default_action_id=t.const_default_action_id,
                implementation_id=t.implementation_id,
                direct_counter_id=direct_counter,
                direct_meter_id=direct_meter,
                size=t.size,
                is_const_table=t.is_const_table,
                supports_idle_timeout=t.idle_timeout_behavior != 0,
            )
        for ap in p4info.action_profiles:
            self.action_profiles[ap.preamble.id] = ActionProfileInfo(
                ap.preamble.id,
                ap.preamble.name,
                list(ap.table_ids),
                ap.with_selector,
                ap.size,
                ap.max_group_size,
            )
        for c in p4info.counters:
            self.counters[c.preamble.id] = CounterInfo(c.preamble.id, c.preamble.name, c.spec.unit, c.size)
        for c in p4info.direct_counters:
            self.direct_counters[c.preamble.id] = CounterInfo(
                c.preamble.id, c.preamble.name, c.spec.unit, 0, c.direct_table_id
            )
        for m in p4info.meters:
            self.meters[m.preamble.id] = MeterInfo(m.preamble.id, m.preamble.name, m.spec.unit, m.size)
        for m in p4info.direct_meters:
            self.direct_meters[m.preamble.id] = MeterInfo(
                m.preamble.id, m.preamble.name, m.spec.unit, 0, m.direct_table_id
            )
        for r in p4info.registers:
            spec = r.type_spec
            width = spec.bitstring.bit.bitwidth or spec.bitstring.int.bitwidth
            self.registers[r.preamble.id] = RegisterInfo(r.preamble.id, r.preamble.name, width, r.size)
        for d in p4info.digests:
            self.digests[d.preamble.id] = DigestInfo(
                d.preamble.id, d.preamble.name, _struct_widths(p4info, d.type_spec)
            )
        for h in p4info.controller_packet_metadata:
            fields = [ParamInfo(m.id, m.name, m.bitwidth) for m in h.metadata]
            self.controller_headers[h.preamble.name] = ControllerHeaderInfo(
                h.preamble.id, h.preamble.name, fields
            )
        for vs in p4info.value_sets:
            self.value_sets[vs.preamble.id] = vs.preamble.name
        for group in (
            self.actions,
            self.tables,
            self.action_profiles,
            self.counters,
            self.direct_counters,
            self.meters,
            self.direct_meters,
            self.registers,
            self.digests,
        ):
            for oid, obj in group.items():
                self.names[obj.name] = oid  # type: ignore[attr-defined]

    def action_by_name(self, name: str) -> ActionInfo | None:
        oid = self.names.get(name)
        return self.actions.get(oid) if oid is not None else None

    def table_by_name(self, name: str) -> TableInfo | None:
        oid = self.names.get(name)
        return self.tables.get(oid) if oid is not None else None

    def digest_by_name(self, name: str) -> DigestInfo | None:
        oid = self.names.get(name)
        return self.digests.get(oid) if oid is not None else None


def _struct_widths(p4info: p4info_pb2.P4Info, spec: p4types_pb2.P4DataTypeSpec) -> list[int]:
    """Bitwidths of a digest's struct members (flat bit<W> members only; P4 digests are such structs)."""
    kind = spec.WhichOneof("type_spec")
    if kind == "struct":
        struct = p4info.type_info.structs.get(spec.struct.name)
        if struct is None:
            return []
        widths = []
        for member in struct.members:
            m = member.type_spec
            if m.WhichOneof("type_spec") == "serializable_enum":  # p4c names such members by type
                enum = p4info.type_info.serializable_enums.get(m.serializable_enum.name)
                if enum is None:
                    return []
                widths.append(enum.underlying_type.bitwidth)
                continue
            if m.WhichOneof("type_spec") != "bitstring":
                return []
            widths.append(m.bitstring.bit.bitwidth or m.bitstring.int.bitwidth)
        return widths
    if kind == "bitstring":
        return [spec.bitstring.bit.bitwidth]
    if kind == "tuple":
        return [m.bitstring.bit.bitwidth for m in spec.tuple.members]
    return []
