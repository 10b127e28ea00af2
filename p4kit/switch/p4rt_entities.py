"""P4Runtime entities <-> the switch's control API: validation, translation, Write and Read.

Why a module of its own: this is where the P4Runtime specification's rules live (match formats, don't
care fields, priorities, action scopes, default entries, const tables, wildcard reads), separate from
the gRPC plumbing in p4runtime_server.py. Every update is validated completely before it touches the
switch, and every switch call either succeeds or raises without changing state, so a failed update
leaves the switch as it was.

The switch is the source of truth for entries, members, groups, multicast groups, clone sessions and
extern values; this layer only remembers what the dataplane has no place for (an entry's
controller_metadata, metadata and idle timeout; group max sizes and weights; multicast group
metadata; digest configurations), so Read answers exactly what was written (read-write symmetry).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4data_pb2, p4runtime_pb2

from p4kit.switch.errors import InvalidOperationError, SwitchError
from p4kit.switch.p4info_index import (
    EXACT,
    LPM,
    OPTIONAL,
    RANGE,
    SCOPE_DEFAULT_ONLY,
    SCOPE_TABLE_ONLY,
    TERNARY,
    ActionInfo,
    ActionProfileInfo,
    CounterInfo,
    MeterInfo,
    P4InfoIndex,
    RegisterInfo,
    TableInfo,
)
from p4kit.switch.p4rt_codec import P4RTError, decode, encode, invalid, not_found
from p4kit.switch.p4rt_idle import IdleWatcher
from p4kit.switch.runtime import Switch, TableEntryView

Update = p4runtime_pb2.Update
INSERT, MODIFY, DELETE = Update.INSERT, Update.MODIFY, Update.DELETE
_UNIT_BOTH = p4info_pb2.CounterSpec.Unit.Value("BOTH")
_UNIT_BYTES = p4info_pb2.CounterSpec.Unit.Value("BYTES")
_UNIT_PACKETS = p4info_pb2.CounterSpec.Unit.Value("PACKETS")


def from_switch_error(err: SwitchError) -> P4RTError:
    return P4RTError(getattr(grpc.StatusCode, err.grpc_code, grpc.StatusCode.UNKNOWN), str(err))


def unimplemented(message: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.UNIMPLEMENTED, message)


@dataclass
class EntryExtras:
    """What P4Runtime stores with a table entry that the dataplane does not keep."""

    controller_metadata: int = 0
    metadata: bytes = b""
    idle_timeout_ns: int = 0


@dataclass
class ServerStore:
    entries: dict[tuple[str, int], EntryExtras] = field(default_factory=dict)  # (table, handle)
    defaults: dict[str, EntryExtras] = field(default_factory=dict)  # table -> extras of default entry
    group_sizes: dict[tuple[int, int], int] = field(default_factory=dict)  # (profile id, group) -> max
    group_weights: dict[tuple[int, int], dict[int, int]] = field(default_factory=dict)
    mc_metadata: dict[int, bytes] = field(default_factory=dict)
    digests: dict[int, p4runtime_pb2.DigestEntry.Config] = field(default_factory=dict)


class EntityService:
    """Applies Write updates and answers Read entities for one pipeline (index + switch).

    ``idle``, when given, is told which entries have an idle timeout (INSERT and MODIFY arm an
    entry, DELETE forgets it); it reports the ones that stay idle."""

    def __init__(self, index: P4InfoIndex, switch: Switch, idle: IdleWatcher | None = None) -> None:
        self.index = index
        self.switch = switch
        self.idle = idle
        self.store = ServerStore()
        self._orders: dict[int, list[int] | bool | None] = {}
        self._writers: dict[str, Callable[[int, Any], None]] = {
            "table_entry": self._write_table_entry,
            "action_profile_member": self._write_member,
            "action_profile_group": self._write_group,
            "counter_entry": self._write_counter,
            "direct_counter_entry": self._write_direct_counter,
            "meter_entry": self._write_meter,
            "direct_meter_entry": self._write_direct_meter,
            "register_entry": self._write_register,
            "packet_replication_engine_entry": self._write_pre,
            "digest_entry": self._write_digest,
            "value_set_entry": self._write_value_set,
        }
        self._readers: dict[str, Callable[[Any], Iterator[p4runtime_pb2.Entity]]] = {
            "table_entry": self._read_table_entries,
            "action_profile_member": self._read_members,
            "action_profile_group": self._read_groups,
            "counter_entry": self._read_counters,
            "direct_counter_entry": self._read_direct_counters,
            "meter_entry": self._read_meters,
            "direct_meter_entry": self._read_direct_meters,
            "register_entry": self._read_registers,
            "packet_replication_engine_entry": self._read_pre,
            "digest_entry": self._read_digests,
            "value_set_entry": self._read_value_sets,
        }

    # ===================================================================== entry points
    def write(self, update: p4runtime_pb2.Update) -> None:
        if update.type not in (INSERT, MODIFY, DELETE):
            raise invalid("update type must be INSERT, MODIFY or DELETE")
        kind = update.entity.WhichOneof("entity")
        if kind is None:
            raise invalid("update without an entity")
        writer = self._writers.get(kind)
        if writer is None:
            raise unimplemented(f"writing {kind} is not supported")
        try:
            writer(update.type, getattr(update.entity, kind))
        except SwitchError as e:
            raise from_switch_error(e) from None

    def read(self, entity: p4runtime_pb2.Entity) -> Iterator[p4runtime_pb2.Entity]:
        kind = entity.WhichOneof("entity")
        if kind is None:
            raise invalid("read of an empty entity")
        reader = self._readers.get(kind)
        if reader is None:
            raise unimplemented(f"reading {kind} is not supported")
        try:
            yield from reader(getattr(entity, kind))
        except SwitchError as e:
            raise from_switch_error(e) from None

    # ===================================================================== lookups
    def _table(self, table_id: int) -> TableInfo:
        t = self.index.tables.get(table_id)
        if t is None:
            raise not_found(f"unknown table id {table_id:#x}")
        return t

    def _action(self, action_id: int) -> ActionInfo:
        a = self.index.actions.get(action_id)
        if a is None:
            raise invalid(f"unknown action id {action_id:#x}")
        return a

    # ===================================================================== match keys
    def _keys(self, t: TableInfo, matches: Any) -> dict[str, Any]:
        """FieldMatch list -> the control API's {field name: value}; omitted fields are don't care."""
        keys: dict[str, Any] = {f.name: None for f in t.match_fields}
        seen: set[int] = set()
        for m in matches:
            f = t.fields_by_id.get(m.field_id)
            if f is None:
                raise invalid(f"table {t.name}: unknown match field id {m.field_id}")
            if m.field_id in seen:
                raise invalid(f"table {t.name}: match field {f.name} given twice")
            seen.add(m.field_id)
            what = f"table {t.name} field {f.name}"
            kind = m.WhichOneof("field_match_type")
            expected = {EXACT: "exact", LPM: "lpm", TERNARY: "ternary", RANGE: "range", OPTIONAL: "optional"}
            if expected.get(f.match_type) != kind:
                raise invalid(f"{what}: is a {f.kind} field, got a {kind} match")
            w = f.bitwidth
            if kind == "exact":
                keys[f.name] = decode(m.exact.value, w, what)
            elif kind == "lpm":
                value = decode(m.lpm.value, w, what)
                plen = m.lpm.prefix_len
                if plen == 0:
                    raise invalid(f"{what}: a don't care LPM match must be omitted, not sent with prefix 0")
                if not 0 < plen <= w:
                    raise invalid(f"{what}: prefix length {plen} out of range 1..{w}")
                if value & ((1 << (w - plen)) - 1):
                    raise invalid(f"{what}: bits beyond the /{plen} prefix must be zero")
                keys[f.name] = (value, plen)
            elif kind == "ternary":
                value = decode(m.ternary.value, w, what)
                mask = decode(m.ternary.mask, w, what + " mask")
                if mask == 0:
                    raise invalid(f"{what}: a don't care ternary match must be omitted, not sent with mask 0")
                if value & ~mask:
                    raise invalid(f"{what}: value has bits set outside the mask")
                keys[f.name] = (value, mask)
            elif kind == "range":
                lo = decode(m.range.low, w, what + " low")
                hi = decode(m.range.high, w, what + " high")
                if lo > hi:
                    raise invalid(f"{what}: low bound {lo} is above high bound {hi}")
                if lo == 0 and hi == (1 << w) - 1:
                    raise invalid(f"{what}: a don't care range match must be omitted")
                keys[f.name] = (lo, hi)
            else:
                keys[f.name] = (decode(m.optional.value, w, what), False)
        for f in t.match_fields:
            if f.match_type == EXACT and keys[f.name] is None:
                raise invalid(f"table {t.name}: exact match field {f.name} is missing")
        return keys

    def _matches(self, t: TableInfo, keys: list) -> list[p4runtime_pb2.FieldMatch]:
        """The control API's key values (in P4Info field order) -> FieldMatch, don't cares omitted."""
        out = []
        for f, v in zip(t.match_fields, keys, strict=True):
            w = f.bitwidth
            m = p4runtime_pb2.FieldMatch(field_id=f.id)
            if f.match_type == EXACT:
                m.exact.value = encode(v if isinstance(v, int) else v[0])
            elif f.match_type == LPM:
                value, plen = v
                if plen == 0:
                    continue
                m.lpm.value, m.lpm.prefix_len = encode(value), plen
            elif f.match_type == TERNARY:
                value, mask = v
                if mask == 0:
                    continue
                m.ternary.value, m.ternary.mask = encode(value), encode(mask)
            elif f.match_type == RANGE:
                lo, hi = v
                if lo == 0 and hi == (1 << w) - 1:
                    continue
                m.range.low, m.range.high = encode(lo), encode(hi)
            elif f.match_type == OPTIONAL:
                value, wildcard = v
                if wildcard:
                    continue
                m.optional.value = encode(value)
            else:
                continue
            out.append(m)
        return out

    def _json_order(self, t: TableInfo) -> list[int] | None:
        """Positions of the P4Info match fields in the BMv2 JSON key, matched by name (p4c gives both
        the same names); None when the names differ and the order is taken as is."""
        order = self._orders.get(t.id, False)
        if order is False:
            json_names = [k.name for k in self.switch.table_info(t.name).keys]
            names = [f.name for f in t.match_fields]
            order = [json_names.index(n) for n in names] if sorted(json_names) == sorted(names) else None
            self._orders[t.id] = order
        return order  # type: ignore[return-value]

    def _api_keys(self, t: TableInfo, keys: dict[str, Any]) -> list[Any]:
        """{P4Info field name: value} -> the values in BMv2 JSON key order (what the switch takes)."""
        values = [keys[f.name] for f in t.match_fields]
        order = self._json_order(t)
        if order is None:
            return values
        out: list[Any] = [None] * len(values)
        for p4info_pos, json_pos in enumerate(order):
            out[json_pos] = values[p4info_pos]
        return out

    def _view_keys(self, t: TableInfo, view: TableEntryView) -> list:
        """A view's keys (BMv2 JSON key order) in P4Info field order."""
        order = self._json_order(t)
        if order is None:
            return list(view.keys)
        return [view.keys[json_pos] for json_pos in order]

    def _priority(self, t: TableInfo, priority: int) -> int | None:
        if t.needs_priority:
            if priority <= 0:
                raise invalid(f"table {t.name} has ternary/range/optional fields: priority must be > 0")
            return priority
        if priority != 0:
            raise invalid(f"table {t.name} has no ternary/range/optional field: priority must be 0")
        return None

    # ===================================================================== actions
    def _action_args(self, a: ActionInfo, action: p4runtime_pb2.Action) -> dict[str, int]:
        values: dict[str, int] = {}
        for p in action.params:
            info = a.params.get(p.param_id)
            if info is None:
                raise invalid(f"action {a.name}: unknown parameter id {p.param_id}")
            if info.name in values:
                raise invalid(f"action {a.name}: parameter {info.name} given twice")
            values[info.name] = decode(p.value, info.bitwidth, f"action {a.name} parameter {info.name}")
        missing = [p.name for p in a.params.values() if p.name not in values]
        if missing:
            raise invalid(f"action {a.name}: missing parameter(s) {', '.join(missing)}")
        return values

    def _action_msg(self, action_name: str | None, params: tuple[int, ...]) -> p4runtime_pb2.Action:
        a = self.index.action_by_name(action_name or "")
        msg = p4runtime_pb2.Action()
        if a is None:
            return msg
        msg.action_id = a.id
        for p, v in zip(a.params.values(), params, strict=False):
            msg.params.add(param_id=p.id, value=encode(v))
        return msg

    def _table_action(self, t: TableInfo, ta: p4runtime_pb2.TableAction, default: bool) -> dict[str, Any]:
        """TableAction -> keyword arguments of table_add / table_modify / table_set_default."""
        kind = ta.WhichOneof("type")
        if t.implementation_id:
            if kind == "action_profile_member_id":
                return {"member": ta.action_profile_member_id}
            if kind == "action_profile_group_id":
                return {"group": ta.action_profile_group_id}
            if kind == "action_profile_action_set":
                raise unimplemented("one-shot action selector programming is not supported")
            raise invalid(f"table {t.name} is indirect: give an action profile member or group id")
        if kind != "action":
            raise invalid(f"table {t.name} is direct: give an action, not a member or group")
        a = self._action(ta.action.action_id)
        scope = t.action_scopes.get(a.id)
        if scope is None:
            raise invalid(f"action {a.name} is not an action of table {t.name}")
        if default and scope == SCOPE_TABLE_ONLY:
            raise P4RTError(grpc.StatusCode.PERMISSION_DENIED, f"action {a.name} is @tableonly in {t.name}")
        if not default and scope == SCOPE_DEFAULT_ONLY:
            raise P4RTError(grpc.StatusCode.PERMISSION_DENIED, f"action {a.name} is @defaultonly in {t.name}")
        return {"action": a.name, "params": self._action_args(a, ta.action)}

    # ===================================================================== table entries
    def _write_table_entry(self, op: int, te: p4runtime_pb2.TableEntry) -> None:
        t = self._table(te.table_id)
        if te.is_const:
            raise invalid("is_const must be false in a write")
        if te.HasField("time_since_last_hit"):
            raise invalid("time_since_last_hit must be unset in a write")
        if te.idle_timeout_ns and not t.supports_idle_timeout:
            raise invalid(f"table {t.name} does not support idle timeout")
        if te.is_default_action:
            return self._write_default_entry(op, t, te)
        if not t.match_fields and op == INSERT:
            raise invalid(f"table {t.name} is keyless: only its default entry can be written")
        keys = self._api_keys(t, self._keys(t, te.match))
        priority = self._priority(t, te.priority)
        has_counter_data = te.HasField("counter_data")
        has_meter = te.HasField("meter_config")
        if has_counter_data and not t.direct_counter_id and op != DELETE:
            raise invalid(f"table {t.name} has no direct counter")
        if (has_meter or te.HasField("meter_counter_data")) and not t.direct_meter_id and op != DELETE:
            raise invalid(f"table {t.name} has no direct meter")
        sw = self.switch
        if op == INSERT:
            if t.is_const_table:
                raise P4RTError(grpc.StatusCode.PERMISSION_DENIED, f"table {t.name} is const")
            if not te.HasField("action"):
                raise invalid("INSERT needs an action")
            kwargs = self._table_action(t, te.action, default=False)
            rates = self._meter_rates(te.meter_config) if has_meter else None
            if sw.table_find(t.name, keys, priority) is not None:
                raise P4RTError(grpc.StatusCode.ALREADY_EXISTS, f"table {t.name}: the entry already exists")
            if t.size and sw.table_num_entries(t.name) >= t.size:
                raise P4RTError(grpc.StatusCode.RESOURCE_EXHAUSTED, f"table {t.name} is full ({t.size})")
            handle = sw.table_add(t.name, keys, priority=priority, **kwargs)
            if has_counter_data:
                sw.direct_counter_write(
                    t.name, handle, te.counter_data.packet_count, te.counter_data.byte_count
                )
            if rates:
                sw.direct_meter_set_rates(t.name, handle, rates)
            self.store.entries[(t.name, handle)] = EntryExtras(
                te.controller_metadata, te.metadata, te.idle_timeout_ns
            )
            self._arm_idle(t, handle, te.idle_timeout_ns)
            return None
        handle = sw.table_find(t.name, keys, priority)
        if handle is None:
            raise not_found(f"table {t.name}: no such entry")
        if op == DELETE:
            if t.is_const_table:
                raise P4RTError(grpc.StatusCode.PERMISSION_DENIED, f"table {t.name} is const")
            sw.table_delete(t.name, handle)
            self.store.entries.pop((t.name, handle), None)
            if self.idle is not None:
                self.idle.forget(t.name, handle)
            return None
        # MODIFY
        view = sw.table_get_entry(t.name, handle)
        if te.HasField("action"):
            if t.is_const_table or view.is_const:
                raise P4RTError(grpc.StatusCode.PERMISSION_DENIED, f"table {t.name}: the entry is const")
            kwargs = self._table_action(t, te.action, default=False)
        else:
            kwargs = None
        rates = self._meter_rates(te.meter_config) if has_meter else None
        if kwargs is not None:
            sw.table_modify(t.name, handle, **kwargs)
        if has_counter_data:
            sw.direct_counter_write(t.name, handle, te.counter_data.packet_count, te.counter_data.byte_count)
        if t.direct_meter_id:
            if rates:
                sw.direct_meter_set_rates(t.name, handle, rates)
            else:
                sw.direct_meter_reset_rates(t.name, handle)
        self.store.entries[(t.name, handle)] = EntryExtras(
            te.controller_metadata, te.metadata, te.idle_timeout_ns
        )
        self._arm_idle(t, handle, te.idle_timeout_ns)  # any MODIFY restarts the idle countdown
        return None

    def _arm_idle(self, t: TableInfo, handle: int, idle_timeout_ns: int) -> None:
        if self.idle is not None and t.supports_idle_timeout:
            self.idle.arm(t.name, handle, idle_timeout_ns)  # 0 (never expires) disarms

    def idle_entry_msg(self, table: str, handle: int) -> p4runtime_pb2.TableEntry | None:
        """The TableEntry an IdleTimeoutNotification carries for an entry: its key (table_id, match,
        priority), controller_metadata, metadata and idle_timeout_ns, as the specification asks; the
        action is left out, as BMv2 sends it. None when the entry is gone."""
        t = self.index.table_by_name(table)
        if t is None:
            return None
        try:
            view = self.switch.table_get_entry(table, handle)
        except SwitchError:
            return None
        te = self._entry_msg(t, view, p4runtime_pb2.TableEntry())
        te.ClearField("action")
        return te

    def _write_default_entry(self, op: int, t: TableInfo, te: p4runtime_pb2.TableEntry) -> None:
        if op != MODIFY:
            raise invalid("the default entry can only be modified (INSERT and DELETE are not allowed)")
        if len(te.match) or te.priority:
            raise invalid("a default entry has no match and priority 0")
        if te.idle_timeout_ns:
            raise invalid("default entries have no idle timeout")
        if t.const_default_action_id:
            raise P4RTError(grpc.StatusCode.PERMISSION_DENIED, f"table {t.name}: the default action is const")
        if te.HasField("action"):
            kwargs = self._table_action(t, te.action, default=True)
            self.switch.table_set_default(t.name, **kwargs)
            self.store.defaults[t.name] = EntryExtras(te.controller_metadata, te.metadata)
        else:
            self.switch.table_reset_default(t.name)
            self.store.defaults.pop(t.name, None)

    @staticmethod
    def _meter_rates(cfg: p4runtime_pb2.MeterConfig) -> list[tuple[float, int]]:
        if min(cfg.cir, cfg.cburst, cfg.pir, cfg.pburst) < 0:
            raise invalid("meter config: rates and bursts must not be negative")
        if cfg.cir > cfg.pir:
            raise invalid("meter config: cir must not exceed pir")
        return [(cfg.cir / 1e6, cfg.cburst), (cfg.pir / 1e6, cfg.pburst)]

    @staticmethod
    def _meter_config(rates: list[tuple[float, int]]) -> p4runtime_pb2.MeterConfig | None:
        if not rates:
            return None
        (cir, cburst), (pir, pburst) = rates[0], rates[-1]
        return p4runtime_pb2.MeterConfig(
            cir=round(cir * 1e6), cburst=cburst, pir=round(pir * 1e6), pburst=pburst
        )

    def _entry_msg(
        self, t: TableInfo, view: TableEntryView, request: p4runtime_pb2.TableEntry
    ) -> p4runtime_pb2.TableEntry:
        te = p4runtime_pb2.TableEntry(table_id=t.id)
        if view.is_default:
            te.is_default_action = True
            extras = self.store.defaults.get(t.name, EntryExtras())
        else:
            te.match.extend(self._matches(t, self._view_keys(t, view)))
            if t.needs_priority and view.priority is not None:
                te.priority = view.priority
            extras = self.store.entries.get((t.name, view.handle), EntryExtras())  # type: ignore[arg-type]
            te.is_const = view.is_const
        if view.member is not None:
            te.action.action_profile_member_id = view.member
        elif view.group is not None:
            te.action.action_profile_group_id = view.group
        elif view.action is not None:
            te.action.action.CopyFrom(self._action_msg(view.action, view.params))
        te.controller_metadata = extras.controller_metadata
        te.metadata = extras.metadata
        te.idle_timeout_ns = extras.idle_timeout_ns
        if request.HasField("counter_data") and t.direct_counter_id and not view.is_default:
            te.counter_data.packet_count = view.packets or 0
            te.counter_data.byte_count = view.bytes or 0
        if request.HasField("meter_config") and t.direct_meter_id and not view.is_default:
            cfg = self._meter_config(self.switch.direct_meter_get_rates(t.name, view.handle))  # type: ignore[arg-type]
            if cfg is not None:
                te.meter_config.CopyFrom(cfg)
        if request.HasField("time_since_last_hit") and t.supports_idle_timeout and view.idle_ns is not None:
            # Set iff requested (_read_table_entries rejects the request for a table without idle
            # timeout support and for default entries). A wildcard read over all tables also reaches
            # tables without support, for which the spec gives no rule: the field stays unset there.
            te.time_since_last_hit.elapsed_ns = view.idle_ns
        return te

    def _selected_views(self, t: TableInfo, req: p4runtime_pb2.TableEntry) -> list[TableEntryView]:
        sw = self.switch
        if req.is_default_action:
            return [sw.table_get_default(t.name)]
        if len(req.match):
            keys = self._keys(t, req.match)
            priority = req.priority if t.needs_priority else None
            if t.needs_priority and not priority:
                wanted = self._matches(t, [keys[f.name] for f in t.match_fields])
                views = sw.table_get_entries(t.name)
                return [v for v in views if self._matches(t, self._view_keys(t, v)) == wanted]
            handle = sw.table_find(t.name, self._api_keys(t, keys), priority)
            return [] if handle is None else [sw.table_get_entry(t.name, handle)]
        return sw.table_get_entries(t.name)

    def _read_table_entries(self, req: p4runtime_pb2.TableEntry) -> Iterator[p4runtime_pb2.Entity]:
        if req.table_id == 0:
            tables = list(self.index.tables.values())
        else:
            tables = [self._table(req.table_id)]
        if req.HasField("time_since_last_hit"):  # spec: only for tables with idle timeout support
            if req.is_default_action:
                raise invalid("default entries have no idle timeout: time_since_last_hit must be unset")
            if req.table_id and not tables[0].supports_idle_timeout:
                raise invalid(f"table {tables[0].name} does not support idle timeout (time_since_last_hit)")
        for t in tables:
            for view in self._selected_views(t, req):
                te = self._entry_msg(t, view, req)
                if req.priority and te.priority != req.priority and not req.is_default_action:
                    continue
                if req.HasField("action") and req.action.WhichOneof("type") == "action":
                    if te.action.action.action_id != req.action.action.action_id:
                        continue
                if req.controller_metadata and te.controller_metadata != req.controller_metadata:
                    continue
                if req.metadata and te.metadata != req.metadata:
                    continue
                yield p4runtime_pb2.Entity(table_entry=te)

    # ===================================================================== action profiles
    def _profile(self, profile_id: int) -> ActionProfileInfo:
        ap = self.index.action_profiles.get(profile_id)
        if ap is None:
            raise not_found(f"unknown action profile id {profile_id:#x}")
        return ap

    def _profile_action(
        self, ap: ActionProfileInfo, action: p4runtime_pb2.Action
    ) -> tuple[str, dict[str, int]]:
        a = self._action(action.action_id)
        allowed = any(
            a.id in self.index.tables[tid].action_scopes for tid in ap.table_ids if tid in self.index.tables
        )
        if not allowed:
            raise invalid(f"action {a.name} is not an action of the tables using profile {ap.name}")
        return a.name, self._action_args(a, action)

    def _write_member(self, op: int, m: p4runtime_pb2.ActionProfileMember) -> None:
        ap = self._profile(m.action_profile_id)
        sw = self.switch
        if m.member_id == 0:
            raise invalid("member id must not be 0")
        if op == DELETE:
            try:
                sw.act_prof_delete_member(ap.name, m.member_id)
            except InvalidOperationError as e:
                raise P4RTError(grpc.StatusCode.FAILED_PRECONDITION, str(e)) from None
            return
        if not m.HasField("action"):
            raise invalid("an action profile member needs an action")
        name, args = self._profile_action(ap, m.action)
        if op == INSERT:
            if ap.size and len(sw.act_prof_get_members(ap.name)) >= ap.size:
                raise P4RTError(grpc.StatusCode.RESOURCE_EXHAUSTED, f"action profile {ap.name} is full")
            sw.act_prof_add_member(ap.name, m.member_id, name, args)
        else:
            sw.act_prof_modify_member(ap.name, m.member_id, name, args)

    def _read_members(self, req: p4runtime_pb2.ActionProfileMember) -> Iterator[p4runtime_pb2.Entity]:
        profiles = (
            [self._profile(req.action_profile_id)]
            if req.action_profile_id
            else list(self.index.action_profiles.values())
        )
        for ap in profiles:
            for member_id, action, params in self.switch.act_prof_get_members(ap.name):
                if req.member_id and member_id != req.member_id:
                    continue
                msg = p4runtime_pb2.ActionProfileMember(action_profile_id=ap.id, member_id=member_id)
                msg.action.CopyFrom(self._action_msg(action, params))
                yield p4runtime_pb2.Entity(action_profile_member=msg)

    def _write_group(self, op: int, g: p4runtime_pb2.ActionProfileGroup) -> None:
        ap = self._profile(g.action_profile_id)
        sw = self.switch
        if g.group_id == 0:
            raise invalid("group id must not be 0")
        key = (ap.id, g.group_id)
        if op == DELETE:
            try:
                sw.act_prof_delete_group(ap.name, g.group_id)
            except InvalidOperationError as e:
                raise P4RTError(grpc.StatusCode.FAILED_PRECONDITION, str(e)) from None
            self.store.group_sizes.pop(key, None)
            self.store.group_weights.pop(key, None)
            return
        if not ap.with_selector:
            raise invalid(f"action profile {ap.name} has no selector: it has no groups")
        members: list[int] = []
        weights: dict[int, int] = {}
        for m in g.members:
            if m.member_id in weights:
                raise invalid(f"group {g.group_id}: member {m.member_id} given twice")
            if m.weight < 1:
                raise invalid(f"group {g.group_id}: member {m.member_id} needs a weight >= 1")
            weights[m.member_id] = m.weight
            members.append(m.member_id)
        limit = g.max_size or self.store.group_sizes.get(key, 0) or ap.max_group_size
        if ap.max_group_size and g.max_size > ap.max_group_size:
            raise invalid(f"group max_size {g.max_size} exceeds the profile's {ap.max_group_size}")
        if limit and sum(weights.values()) > limit:
            raise P4RTError(
                grpc.StatusCode.RESOURCE_EXHAUSTED, f"group {g.group_id}: more than {limit} members"
            )
        known = {mid for mid, _, _ in sw.act_prof_get_members(ap.name)}
        for mid in members:
            if mid not in known:
                raise not_found(f"action profile {ap.name}: no member {mid}")
        if op == INSERT:
            sw.act_prof_create_group(ap.name, g.group_id, members)
        else:
            sw.act_prof_set_group_members(ap.name, g.group_id, members)
        if g.max_size or op == INSERT:
            self.store.group_sizes[key] = g.max_size
        self.store.group_weights[key] = weights

    def _read_groups(self, req: p4runtime_pb2.ActionProfileGroup) -> Iterator[p4runtime_pb2.Entity]:
        profiles = (
            [self._profile(req.action_profile_id)]
            if req.action_profile_id
            else list(self.index.action_profiles.values())
        )
        for ap in profiles:
            if not ap.with_selector:
                continue
            for group_id, members in self.switch.act_prof_get_groups(ap.name):
                if req.group_id and group_id != req.group_id:
                    continue
                key = (ap.id, group_id)
                msg = p4runtime_pb2.ActionProfileGroup(
                    action_profile_id=ap.id, group_id=group_id, max_size=self.store.group_sizes.get(key, 0)
                )
                weights = self.store.group_weights.get(key, {})
                for mid in members:
                    msg.members.add(member_id=mid, weight=weights.get(mid, 1))
                yield p4runtime_pb2.Entity(action_profile_group=msg)

    # ===================================================================== counters
    def _counter(self, counter_id: int) -> CounterInfo:
        c = self.index.counters.get(counter_id)
        if c is None:
            raise not_found(f"unknown counter id {counter_id:#x}")
        return c

    @staticmethod
    def _check_index(name: str, index: int, size: int) -> None:
        if not 0 <= index < size:
            raise P4RTError(grpc.StatusCode.OUT_OF_RANGE, f"{name}: index {index} out of range (size {size})")

    def _write_counter(self, op: int, ce: p4runtime_pb2.CounterEntry) -> None:
        c = self._counter(ce.counter_id)
        if op != MODIFY:
            raise invalid("counter entries can only be modified")
        if not ce.HasField("index"):
            raise unimplemented("writing all cells of a counter at once is not supported; give an index")
        self._check_index(c.name, ce.index.index, c.size)
        self.switch.counter_write(c.name, ce.index.index, ce.data.packet_count, ce.data.byte_count)

    def _counter_data(self, unit: int, packets: int, nbytes: int) -> p4runtime_pb2.CounterData:
        d = p4runtime_pb2.CounterData()
        if unit in (_UNIT_BOTH, _UNIT_PACKETS, 0):
            d.packet_count = packets
        if unit in (_UNIT_BOTH, _UNIT_BYTES, 0):
            d.byte_count = nbytes
        return d

    def _read_counters(self, req: p4runtime_pb2.CounterEntry) -> Iterator[p4runtime_pb2.Entity]:
        counters = [self._counter(req.counter_id)] if req.counter_id else list(self.index.counters.values())
        for c in counters:
            if req.HasField("index"):
                self._check_index(c.name, req.index.index, c.size)
                indices: range | list[int] = [req.index.index]
            else:
                indices = range(c.size)
            for i in indices:
                packets, nbytes = self.switch.counter_read(c.name, i)
                msg = p4runtime_pb2.CounterEntry(counter_id=c.id)
                msg.index.index = i
                msg.data.CopyFrom(self._counter_data(c.unit, packets, nbytes))
                yield p4runtime_pb2.Entity(counter_entry=msg)

    def _direct_target(self, te: p4runtime_pb2.TableEntry, kind: str) -> tuple[TableInfo, int]:
        t = self._table(te.table_id)
        if (kind == "counter" and not t.direct_counter_id) or (kind == "meter" and not t.direct_meter_id):
            raise invalid(f"table {t.name} has no direct {kind}")
        if te.is_default_action:
            raise unimplemented(f"the direct {kind} of a default entry is not supported")
        keys = self._api_keys(t, self._keys(t, te.match))
        handle = self.switch.table_find(t.name, keys, self._priority(t, te.priority))
        if handle is None:
            raise not_found(f"table {t.name}: no such entry")
        return t, handle

    def _write_direct_counter(self, op: int, dc: p4runtime_pb2.DirectCounterEntry) -> None:
        if op != MODIFY:
            raise invalid("direct counter entries can only be modified")
        t, handle = self._direct_target(dc.table_entry, "counter")
        self.switch.direct_counter_write(t.name, handle, dc.data.packet_count, dc.data.byte_count)

    def _direct_views(
        self, te: p4runtime_pb2.TableEntry, kind: str
    ) -> Iterator[tuple[TableInfo, TableEntryView]]:
        if te.table_id == 0:
            tables = [
                t
                for t in self.index.tables.values()
                if (t.direct_counter_id if kind == "counter" else t.direct_meter_id)
            ]
        else:
            t = self._table(te.table_id)
            if not (t.direct_counter_id if kind == "counter" else t.direct_meter_id):
                raise invalid(f"table {t.name} has no direct {kind}")
            tables = [t]
        for t in tables:
            if te.table_id and len(te.match):
                _, handle = self._direct_target(te, kind)
                yield t, self.switch.table_get_entry(t.name, handle)
            else:
                for view in self.switch.table_get_entries(t.name):
                    yield t, view

    def _read_direct_counters(self, req: p4runtime_pb2.DirectCounterEntry) -> Iterator[p4runtime_pb2.Entity]:
        for t, view in self._direct_views(req.table_entry, "counter"):
            msg = p4runtime_pb2.DirectCounterEntry()
            msg.table_entry.CopyFrom(self._entry_msg(t, view, p4runtime_pb2.TableEntry()))
            unit = self.index.direct_counters[t.direct_counter_id].unit
            msg.data.CopyFrom(self._counter_data(unit, view.packets or 0, view.bytes or 0))
            yield p4runtime_pb2.Entity(direct_counter_entry=msg)

    # ===================================================================== meters
    def _meter(self, meter_id: int) -> MeterInfo:
        m = self.index.meters.get(meter_id)
        if m is None:
            raise not_found(f"unknown meter id {meter_id:#x}")
        return m

    def _write_meter(self, op: int, me: p4runtime_pb2.MeterEntry) -> None:
        m = self._meter(me.meter_id)
        if op != MODIFY:
            raise invalid("meter entries can only be modified")
        if not me.HasField("index"):
            if me.HasField("config"):
                self.switch.meter_array_set_rates(m.name, self._meter_rates(me.config))
                return
            raise unimplemented("resetting all cells of a meter at once is not supported; give an index")
        self._check_index(m.name, me.index.index, m.size)
        if me.HasField("config"):
            self.switch.meter_set_rates(m.name, me.index.index, self._meter_rates(me.config))
        else:
            self.switch.meter_reset_rates(m.name, me.index.index)

    def _read_meters(self, req: p4runtime_pb2.MeterEntry) -> Iterator[p4runtime_pb2.Entity]:
        meters = [self._meter(req.meter_id)] if req.meter_id else list(self.index.meters.values())
        for m in meters:
            if req.HasField("index"):
                self._check_index(m.name, req.index.index, m.size)
                indices: range | list[int] = [req.index.index]
            else:
                indices = range(m.size)
            for i in indices:
                msg = p4runtime_pb2.MeterEntry(meter_id=m.id)
                msg.index.index = i
                cfg = self._meter_config(self.switch.meter_get_rates(m.name, i))
                if cfg is not None:
                    msg.config.CopyFrom(cfg)
                yield p4runtime_pb2.Entity(meter_entry=msg)

    def _write_direct_meter(self, op: int, dm: p4runtime_pb2.DirectMeterEntry) -> None:
        if op != MODIFY:
            raise invalid("direct meter entries can only be modified")
        t, handle = self._direct_target(dm.table_entry, "meter")
        if dm.HasField("config"):
            self.switch.direct_meter_set_rates(t.name, handle, self._meter_rates(dm.config))
        else:
            self.switch.direct_meter_reset_rates(t.name, handle)

    def _read_direct_meters(self, req: p4runtime_pb2.DirectMeterEntry) -> Iterator[p4runtime_pb2.Entity]:
        for t, view in self._direct_views(req.table_entry, "meter"):
            msg = p4runtime_pb2.DirectMeterEntry()
            msg.table_entry.CopyFrom(self._entry_msg(t, view, p4runtime_pb2.TableEntry()))
            cfg = self._meter_config(self.switch.direct_meter_get_rates(t.name, view.handle))  # type: ignore[arg-type]
            if cfg is not None:
                msg.config.CopyFrom(cfg)
            yield p4runtime_pb2.Entity(direct_meter_entry=msg)

    # ===================================================================== registers
    def _register(self, register_id: int) -> RegisterInfo:
        r = self.index.registers.get(register_id)
        if r is None:
            raise not_found(f"unknown register id {register_id:#x}")
        return r

    def _write_register(self, op: int, re: p4runtime_pb2.RegisterEntry) -> None:
        r = self._register(re.register_id)
        if op != MODIFY:
            raise invalid("register entries can only be modified")
        if re.data.WhichOneof("data") != "bitstring":
            raise invalid(f"register {r.name}: data must be a bitstring")
        value = decode(re.data.bitstring, r.bitwidth, f"register {r.name}")
        if re.HasField("index"):
            self._check_index(r.name, re.index.index, r.size)
            self.switch.register_write(r.name, re.index.index, value)
        else:
            for i in range(r.size):  # no index: every cell (validated above, cannot fail half way)
                self.switch.register_write(r.name, i, value)

    def _read_registers(self, req: p4runtime_pb2.RegisterEntry) -> Iterator[p4runtime_pb2.Entity]:
        registers = (
            [self._register(req.register_id)] if req.register_id else list(self.index.registers.values())
        )
        for r in registers:
            if req.HasField("index"):
                self._check_index(r.name, req.index.index, r.size)
                cells = [(req.index.index, self.switch.register_read(r.name, req.index.index))]
            else:
                cells = list(enumerate(self.switch.register_read_all(r.name)))
            for i, value in cells:
                msg = p4runtime_pb2.RegisterEntry(register_id=r.id)
                msg.index.index = i
                msg.data.bitstring = encode(value)
                yield p4runtime_pb2.Entity(register_entry=msg)

    # ===================================================================== packet replication
    @staticmethod
    def _replicas(replicas: Any, what: str) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for r in replicas:
            if r.WhichOneof("port_kind") == "port":
                port = decode(r.port, 32, f"{what} replica port")
            else:
                port = r.egress_port
            if (port, r.instance) in out:
                raise invalid(f"{what}: replica (port {port}, instance {r.instance}) given twice")
            out.append((port, r.instance))
        return out

    def _write_pre(self, op: int, pre: p4runtime_pb2.PacketReplicationEngineEntry) -> None:
        kind = pre.WhichOneof("type")
        sw = self.switch
        if kind == "multicast_group_entry":
            g = pre.multicast_group_entry
            gid = g.multicast_group_id
            if gid == 0:
                raise invalid("multicast group id must not be 0")
            exists = gid in sw.mc_groups()
            if op == DELETE:
                if not exists:
                    raise not_found(f"multicast group {gid} does not exist")
                sw.mc_group_delete(gid)
                self.store.mc_metadata.pop(gid, None)
                return
            replicas = self._replicas(g.replicas, f"multicast group {gid}")
            if op == INSERT:
                if exists:
                    raise P4RTError(grpc.StatusCode.ALREADY_EXISTS, f"multicast group {gid} already exists")
                sw.mc_group_create(gid, replicas)
            else:
                if not exists:
                    raise not_found(f"multicast group {gid} does not exist")
                sw.mc_group_modify(gid, replicas)
            self.store.mc_metadata[gid] = g.metadata
        elif kind == "clone_session_entry":
            s = pre.clone_session_entry
            sid = s.session_id
            if sid == 0:
                raise invalid("clone session id must not be 0")
            exists = sid in sw.clone_sessions()
            if op == DELETE:
                if not exists:
                    raise not_found(f"clone session {sid} does not exist")
                sw.clone_session_delete(sid)
                return
            if op == INSERT and exists:
                raise P4RTError(grpc.StatusCode.ALREADY_EXISTS, f"clone session {sid} already exists")
            if op == MODIFY and not exists:
                raise not_found(f"clone session {sid} does not exist")
            replicas = self._replicas(s.replicas, f"clone session {sid}")
            sw.clone_session_set(
                sid,
                replicas=replicas,
                truncate_length=s.packet_length_bytes,
                class_of_service=s.class_of_service,
            )
        else:
            raise invalid("empty packet replication engine entry")

    def _read_pre(self, req: p4runtime_pb2.PacketReplicationEngineEntry) -> Iterator[p4runtime_pb2.Entity]:
        kind = req.WhichOneof("type")
        sw = self.switch
        if kind in ("multicast_group_entry", None):
            want = req.multicast_group_entry.multicast_group_id if kind else 0
            groups = sw.mc_groups()
            if want and want not in groups:
                raise not_found(f"multicast group {want} does not exist")
            for gid, replicas in groups.items():
                if want and gid != want:
                    continue
                g = p4runtime_pb2.MulticastGroupEntry(
                    multicast_group_id=gid, metadata=self.store.mc_metadata.get(gid, b"")
                )
                for port, rid in replicas:
                    g.replicas.add(egress_port=port, instance=rid)
                yield p4runtime_pb2.Entity(
                    packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
                        multicast_group_entry=g
                    )
                )
        if kind in ("clone_session_entry", None):
            want = req.clone_session_entry.session_id if kind else 0
            sessions = sw.clone_sessions()
            if want and want not in sessions:
                raise not_found(f"clone session {want} does not exist")
            for sid, s in sorted(sessions.items()):
                if want and sid != want:
                    continue
                c = p4runtime_pb2.CloneSessionEntry(
                    session_id=sid, class_of_service=s.class_of_service, packet_length_bytes=s.truncate_length
                )
                if s.replicas is not None:
                    for port, rid in s.replicas:
                        c.replicas.add(egress_port=port, instance=rid)
                elif s.port is not None:
                    c.replicas.add(egress_port=s.port, instance=0)
                yield p4runtime_pb2.Entity(
                    packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
                        clone_session_entry=c
                    )
                )

    # ===================================================================== digests
    def _write_digest(self, op: int, d: p4runtime_pb2.DigestEntry) -> None:
        if d.digest_id not in self.index.digests:
            raise not_found(f"unknown digest id {d.digest_id:#x}")
        exists = d.digest_id in self.store.digests
        if op == DELETE:
            if not exists:
                raise not_found("digest is not configured")
            del self.store.digests[d.digest_id]
            return
        if op == INSERT and exists:
            raise P4RTError(grpc.StatusCode.ALREADY_EXISTS, "digest is already configured")
        if op == MODIFY and not exists:
            raise not_found("digest is not configured")
        self.store.digests[d.digest_id] = d.config

    def _read_digests(self, req: p4runtime_pb2.DigestEntry) -> Iterator[p4runtime_pb2.Entity]:
        for did, cfg in sorted(self.store.digests.items()):
            if req.digest_id and did != req.digest_id:
                continue
            yield p4runtime_pb2.Entity(digest_entry=p4runtime_pb2.DigestEntry(digest_id=did, config=cfg))

    def digest_data(self, digest_id: int, values: tuple[int, ...]) -> p4data_pb2.P4Data:
        """A learned tuple as P4Data: a struct of bitstrings (a single bitstring for a 1-field digest
        whose P4Info type is not a struct)."""
        spec = next(d.type_spec for d in self.index.p4info.digests if d.preamble.id == digest_id)
        data = p4data_pb2.P4Data()
        if spec.WhichOneof("type_spec") == "bitstring" and len(values) == 1:
            data.bitstring = encode(values[0])
            return data
        container = data.tuple if spec.WhichOneof("type_spec") == "tuple" else data.struct
        for v in values:
            container.members.add(bitstring=encode(v))
        return data

    # ===================================================================== value sets
    def _value_set(self, vs_id: int) -> str:
        name = self.index.value_sets.get(vs_id)
        if name is None:
            raise not_found(f"unknown value set id {vs_id:#x}")
        return name

    def _write_value_set(self, op: int, vs: p4runtime_pb2.ValueSetEntry) -> None:
        name = self._value_set(vs.value_set_id)
        if op != MODIFY:
            raise invalid("value set entries can only be modified (the whole set at once)")
        spec = next(v for v in self.index.p4info.value_sets if v.preamble.id == vs.value_set_id)
        values = []
        for member in vs.members:
            if len(member.match) != len(spec.match) or any(
                m.WhichOneof("field_match_type") != "exact" for m in member.match
            ):
                raise unimplemented("value set members must give every field as an exact match")
            value = 0
            for m, f in zip(member.match, spec.match, strict=True):
                value = (value << f.bitwidth) | decode(m.exact.value, f.bitwidth, f"value set {name}")
            values.append(value)
        self.switch.parse_vset_clear(name)
        for v in values:
            self.switch.parse_vset_add(name, v)

    def _read_value_sets(self, req: p4runtime_pb2.ValueSetEntry) -> Iterator[p4runtime_pb2.Entity]:
        ids = [req.value_set_id] if req.value_set_id else list(self.index.value_sets)
        for vs_id in ids:
            name = self._value_set(vs_id)
            spec = next(v for v in self.index.p4info.value_sets if v.preamble.id == vs_id)
            msg = p4runtime_pb2.ValueSetEntry(value_set_id=vs_id)
            for value in self.switch.parse_vset_get(name):
                member = msg.members.add()
                shift = sum(f.bitwidth for f in spec.match)
                for f in spec.match:
                    shift -= f.bitwidth
                    member.match.add(field_id=f.id).exact.value = encode(
                        (value >> shift) & ((1 << f.bitwidth) - 1)
                    )
            yield p4runtime_pb2.Entity(value_set_entry=msg)
