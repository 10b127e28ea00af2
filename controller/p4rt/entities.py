"""Building P4Runtime entities by name from a P4Info: tables, actions, multicast groups, registers.

Values may be ints, bytes, dotted IPv4 strings ("10.0.1.0") or colon MAC strings ("00:aa:..");
they are encoded as canonical bytestrings (no leading zero bytes), as the P4Runtime spec asks.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

Value = int | bytes | str


def encode_value(value: Value, bitwidth: int) -> bytes:
    """A value as a canonical P4Runtime bytestring; rejects values that do not fit in bitwidth."""
    if isinstance(value, bytes):
        number = int.from_bytes(value, "big")
    elif isinstance(value, str):
        if ":" in value:
            number = int(value.replace(":", ""), 16)
        elif value.count(".") == 3:
            number = int(ipaddress.IPv4Address(value))
        else:
            number = int(value, 0)
    else:
        number = int(value)
    if number < 0 or number.bit_length() > bitwidth:
        raise ValueError(f"value {value!r} does not fit in {bitwidth} bits")
    return number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")


def decode_value(data: bytes) -> int:
    return int.from_bytes(data, "big")


@dataclass
class P4InfoIndex:
    """Name -> object lookups over one P4Info."""

    p4info: p4info_pb2.P4Info

    def __post_init__(self) -> None:
        self.tables = {t.preamble.name: t for t in self.p4info.tables}
        self.actions = {a.preamble.name: a for a in self.p4info.actions}
        self.registers = {r.preamble.name: r for r in self.p4info.registers}
        self.counters = {c.preamble.name: c for c in self.p4info.counters}
        self.direct_counters = {c.preamble.name: c for c in self.p4info.direct_counters}
        self.meters = {m.preamble.name: m for m in self.p4info.meters}
        self.controller_metadata = {c.preamble.name: c for c in self.p4info.controller_packet_metadata}

    @staticmethod
    def _find(kind: str, objects: dict, name: str):  # type: ignore[no-untyped-def]
        if name in objects:
            return objects[name]
        # Accept a unique suffix ("ipv4_routes" for "TributaryIngress.forwarding.ipv4_routes").
        hits = [o for full, o in objects.items() if full.endswith("." + name)]
        if len(hits) == 1:
            return hits[0]
        known = ", ".join(sorted(objects)) or "none"
        why = "ambiguous" if hits else "unknown"
        raise KeyError(f"{why} {kind} {name!r} (known: {known})")

    def table(self, name: str) -> p4info_pb2.Table:
        return self._find("table", self.tables, name)

    def action(self, name: str) -> p4info_pb2.Action:
        return self._find("action", self.actions, name)

    def register(self, name: str) -> p4info_pb2.Register:
        return self._find("register", self.registers, name)

    def counter(self, name: str) -> p4info_pb2.Counter:
        return self._find("counter", self.counters, name)

    def action_call(self, name: str, params: dict[str, Value] | None = None) -> p4runtime_pb2.Action:
        info = self.action(name)
        params = dict(params or {})
        out = p4runtime_pb2.Action(action_id=info.preamble.id)
        for p in info.params:
            if p.name not in params:
                raise KeyError(f"action {info.preamble.name} needs parameter {p.name!r}")
            out.params.add(param_id=p.id, value=encode_value(params.pop(p.name), p.bitwidth))
        if params:
            raise KeyError(f"action {info.preamble.name} has no parameter(s) {', '.join(params)}")
        return out

    def table_entry(
        self,
        table: str,
        match: dict[str, object] | None = None,
        action: str | None = None,
        params: dict[str, Value] | None = None,
        priority: int = 0,
        default: bool = False,
    ) -> p4runtime_pb2.Entity:
        """A table entry. Match values by kind: exact `v`; lpm `(v, prefix_len)`; ternary `(v, mask)`;
        range `(lo, hi)`; optional `v`. Fields left out are wildcards (ternary/range/optional/lpm)."""
        info = self.table(table)
        entity = p4runtime_pb2.Entity()
        entry = entity.table_entry
        entry.table_id = info.preamble.id
        entry.priority = priority
        entry.is_default_action = default
        match = dict(match or {})
        for mf in info.match_fields:
            if mf.name not in match:
                continue
            value = match.pop(mf.name)
            fm = entry.match.add(field_id=mf.id)
            kind = mf.match_type
            if kind == p4info_pb2.MatchField.EXACT:
                fm.exact.value = encode_value(value, mf.bitwidth)  # type: ignore[arg-type]
            elif kind == p4info_pb2.MatchField.LPM:
                v, plen = value  # type: ignore[misc]
                masked = _mask_to_prefix(encode_value(v, mf.bitwidth), mf.bitwidth, plen)
                fm.lpm.value, fm.lpm.prefix_len = masked, plen
            elif kind == p4info_pb2.MatchField.TERNARY:
                v, mask = value  # type: ignore[misc]
                m = decode_value(encode_value(mask, mf.bitwidth))
                fm.ternary.value = encode_value(decode_value(encode_value(v, mf.bitwidth)) & m, mf.bitwidth)
                fm.ternary.mask = encode_value(m, mf.bitwidth)
            elif kind == p4info_pb2.MatchField.RANGE:
                lo, hi = value  # type: ignore[misc]
                fm.range.low, fm.range.high = encode_value(lo, mf.bitwidth), encode_value(hi, mf.bitwidth)
            elif kind == p4info_pb2.MatchField.OPTIONAL:
                fm.optional.value = encode_value(value, mf.bitwidth)  # type: ignore[arg-type]
            else:
                raise ValueError(f"match kind {kind} of {mf.name} is not supported by this client")
        if match:
            names = ", ".join(mf.name for mf in info.match_fields)
            raise KeyError(
                f"table {info.preamble.name} has no key field(s) {', '.join(match)} (keys: {names})"
            )
        if action is not None:
            entry.action.action.CopyFrom(self.action_call(action, params))
        return entity

    def register_entry(
        self, name: str, index: int | None = None, value: Value | None = None
    ) -> p4runtime_pb2.Entity:
        """A register cell (or, with index None, every cell for a read)."""
        info = self.register(name)
        entity = p4runtime_pb2.Entity()
        entity.register_entry.register_id = info.preamble.id
        if index is not None:
            entity.register_entry.index.index = index
        if value is not None:
            entity.register_entry.data.bitstring = encode_value(value, info.type_spec.bitstring.bit.bitwidth)
        return entity

    def counter_entry(self, name: str, index: int | None = None) -> p4runtime_pb2.Entity:
        info = self.counter(name)
        entity = p4runtime_pb2.Entity()
        entity.counter_entry.counter_id = info.preamble.id
        if index is not None:
            entity.counter_entry.index.index = index
        return entity


def multicast_group(group_id: int, replicas: list[tuple[int, int]]) -> p4runtime_pb2.Entity:
    """A multicast group of (egress_port, instance) replicas."""
    entity = p4runtime_pb2.Entity()
    grp = entity.packet_replication_engine_entry.multicast_group_entry
    grp.multicast_group_id = group_id
    for port, instance in replicas:
        grp.replicas.add(egress_port=port, instance=instance)
    return entity


def _mask_to_prefix(value: bytes, bitwidth: int, prefix_len: int) -> bytes:
    if not 0 <= prefix_len <= bitwidth:
        raise ValueError(f"prefix length {prefix_len} outside 0..{bitwidth}")
    number = decode_value(value)
    mask = ((1 << prefix_len) - 1) << (bitwidth - prefix_len)
    return encode_value(number & mask, bitwidth)
