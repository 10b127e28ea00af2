"""The control-plane view of a compiled program: what P4Info describes.

The back end fills a `ControlPlaneModel` while it lowers the program to BMv2 JSON; `p4info.py` turns it
into a P4Info message (ids, annotations, serialisation). Keeping this plain data between the two means
the P4Info writer does not depend on the compiler's internal AST.

Names are the fully qualified control-plane names after `@name` was applied (e.g. "MyIngress.ipv4_lpm"),
and they are exactly the names used in the BMv2 JSON, so the switch can map P4Info ids to JSON objects.
Objects annotated `@hidden` are still listed here (with the annotation); the P4Info writer leaves them out.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CPAnnotation:
    """One annotation as written: `@name(body)`; `body` is the raw text between the parentheses
    (e.g. '"ingress.t"' or '0x01000005'), empty when there were none."""

    name: str
    body: str = ""


@dataclass
class CPMatchField:
    name: str  # as p4c names it: the key expression's text, or its @name annotation
    bitwidth: int
    match_type: str  # "exact" | "lpm" | "ternary" | "range" | "optional" | other (other_match_type)
    annotations: list[CPAnnotation] = field(default_factory=list)


@dataclass
class CPParam:
    name: str
    bitwidth: int
    annotations: list[CPAnnotation] = field(default_factory=list)


@dataclass
class CPAction:
    name: str
    params: list[CPParam] = field(default_factory=list)
    annotations: list[CPAnnotation] = field(default_factory=list)


@dataclass
class CPActionRef:
    name: str  # action name
    scope: str = (
        "TABLE_AND_DEFAULT"  # "TABLE_AND_DEFAULT" | "TABLE_ONLY" (@tableonly) | "DEFAULT_ONLY" (@defaultonly)
    )
    annotations: list[CPAnnotation] = field(default_factory=list)


@dataclass
class CPTable:
    name: str
    match_fields: list[CPMatchField] = field(default_factory=list)
    action_refs: list[CPActionRef] = field(default_factory=list)
    const_default_action: str | None = None  # set when `const default_action = ...`
    size: int = 1024  # p4c's default when the program gives none
    is_const_table: bool = False  # `const entries` (entries cannot be changed)
    has_initial_entries: bool = False
    implementation: str | None = None  # name of the action profile / selector instance
    direct_counters: list[str] = field(default_factory=list)
    direct_meters: list[str] = field(default_factory=list)
    idle_timeout: bool = False  # support_timeout = true
    annotations: list[CPAnnotation] = field(default_factory=list)


@dataclass
class CPActionProfile:
    name: str
    table_names: list[str] = field(default_factory=list)
    with_selector: bool = False
    size: int = 0
    max_group_size: int = 0
    annotations: list[CPAnnotation] = field(default_factory=list)


@dataclass
class CPCounter:
    name: str
    unit: str  # "BYTES" | "PACKETS" | "BOTH"
    size: int = 0  # ignored for direct counters
    direct_table: str | None = None  # set for direct_counter
    annotations: list[CPAnnotation] = field(default_factory=list)


@dataclass
class CPMeter:
    name: str
    unit: str  # "BYTES" | "PACKETS"
    size: int = 0
    direct_table: str | None = None  # set for direct_meter
    annotations: list[CPAnnotation] = field(default_factory=list)


@dataclass
class CPRegister:
    name: str
    bitwidth: int  # width of one cell (bit<W>); for a struct/other type, its total width
    size: int
    annotations: list[CPAnnotation] = field(default_factory=list)


@dataclass
class CPField:
    name: str
    bitwidth: int
    annotations: list[CPAnnotation] = field(default_factory=list)
    type_name: str = ""  # a serializable enum's name when the field has that type (P4Info type_name)


@dataclass
class CPSerEnum:
    """A serializable enum the control plane sees (P4Info type_info.serializable_enums)."""

    name: str
    bitwidth: int
    members: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class CPDigest:
    """A digest<T>(receiver, data) call; named after T's type name, as p4c does."""

    name: str
    fields: list[CPField] = field(default_factory=list)
    annotations: list[CPAnnotation] = field(default_factory=list)


@dataclass
class CPControllerHeader:
    """A header annotated @controller_header("packet_in"|"packet_out"); `name` is that string."""

    name: str
    fields: list[CPField] = field(default_factory=list)
    annotations: list[CPAnnotation] = field(default_factory=list)
    # The header type's control-plane name (e.g. "packet_in_header_t"): p4c derives the P4Info id from
    # it, not from `name`. Empty means unknown; the id is then derived from `name`.
    type_name: str = ""


@dataclass
class CPValueSet:
    name: str
    match_fields: list[CPMatchField] = field(default_factory=list)
    size: int = 0
    annotations: list[CPAnnotation] = field(default_factory=list)


@dataclass
class ControlPlaneModel:
    arch: str = "v1model"
    program_name: str = ""
    tables: list[CPTable] = field(default_factory=list)
    actions: list[CPAction] = field(default_factory=list)
    action_profiles: list[CPActionProfile] = field(default_factory=list)
    counters: list[CPCounter] = field(default_factory=list)  # indirect and direct (direct_table set)
    meters: list[CPMeter] = field(default_factory=list)  # indirect and direct (direct_table set)
    registers: list[CPRegister] = field(default_factory=list)
    digests: list[CPDigest] = field(default_factory=list)
    controller_headers: list[CPControllerHeader] = field(default_factory=list)
    value_sets: list[CPValueSet] = field(default_factory=list)
    serializable_enums: dict[str, CPSerEnum] = field(default_factory=dict)
