"""The control API of p4kit-switch: what BMv2's runtime interface offers, as Python calls.

The P4Runtime server, the CLI and the STF runner all drive the switch through ``Switch``. It is
modelled on BMv2's runtime interface (bm_runtime / simple_switch_CLI), with P4Runtime's needs in
mind. Conventions:

* Names are the BMv2 JSON names (equal to P4Info names): "MyIngress.ipv4_lpm", "MyIngress.forward".
* Keys: one value per key field, in the JSON key order, or a mapping {key field name: value}.
  exact / valid: ``int``; lpm: ``(value, prefix_len)``; ternary: ``(value, mask)``; range: ``(lo, hi)``;
  optional: ``(value, is_wildcard)``. ``None`` for a ternary/lpm/range/optional field means "don't
  care" (how P4Runtime sends omitted fields). LPM values and ternary values are masked on insert.
* Priority: P4Runtime's convention -- a larger number wins; ties go to the older entry. Only tables
  with ternary/range/optional fields use it (0 when not given). Const entries from the JSON (where
  BMv2 numbers 1 = best) are shown with priorities N..1 in their original order.
* Action parameters: a sequence of ints in declaration order, or a mapping {param name: int}.
* Entry handles are ints, unique per table, never reused while the pipeline stays loaded;
  ``table_find(table, keys, priority)`` maps a key (how P4Runtime names entries) to its handle.
* Tables that carry entries in the JSON (P4 `const entries`) are immutable, as in BMv2.
* Meter rates: ``[(cir, cburst), (pir, pburst)]`` with rates in units per MICROSECOND and bursts in
  units, as BMv2 takes them (P4Runtime's rates are per second: divide by 1e6).
* Idle time: entries of tables with ``support_timeout`` remember their last hit on the ``now_ns``
  clock (insertion counts as a hit); views carry it as ``idle_ns``, the P4Runtime idle timeout's input.
* Every error is a subclass of ``errors.SwitchError`` with a clear message and a ``grpc_code``; a
  failing call leaves all state unchanged.
* Thread-safe: every public method takes one re-entrant lock, so the gRPC threads may call while
  packets are processed (packets are processed one at a time under the same lock).

Packets: ``process_packet(port, data)`` runs one packet through the whole v1model pipeline and
returns the packets it emits as ``[(port, bytes), ...]`` in emission order. Packets whose egress port
is the CPU port go to the packet-in callback instead (when both a CPU port and a callback are set).
``packet_out(data)`` injects a controller packet as if received on the CPU port.
Callbacks run on the calling thread, inside the lock: they must not block or call back into the switch
from another thread.
"""

from __future__ import annotations

import contextlib
import json as _json
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from p4kit.switch import flowcache, hashes
from p4kit.switch.errors import (
    BadActionError,
    BadIndexError,
    BadKeyError,
    ConstViolationError,
    DuplicateEntryError,
    EntryNotFoundError,
    InvalidOperationError,
    NoPipelineError,
    PipelineLoadError,
    TableFullError,
    UnknownNameError,
)
from p4kit.switch.meters import Meter
from p4kit.switch.pre import CloneSession
from p4kit.switch.program import ActionInfo, Program, TableInfo, load_program
from p4kit.switch.queues import EgressScheduler, TrafficManager
from p4kit.switch.state import Group, Member, ProfileState, SwitchState
from p4kit.switch.tables import Entry, TableState, denormalize_key, normalize_key

if TYPE_CHECKING:
    from p4kit.switch.engine import Engine

KeyValue = int | tuple[int, int] | tuple[int, bool] | None
Keys = Sequence[KeyValue] | Mapping[str, KeyValue]
Params = Sequence[int] | Mapping[str, int]
Rates = Sequence[tuple[float, int]]


_log = logging.getLogger("p4kit.switch.dataplane")  # which data plane runs each program


@dataclass(frozen=True)
class TableEntryView:
    """A table entry as read back (P4Runtime Read, simple_switch_CLI table_dump)."""

    table: str
    handle: int | None  # None for the default entry
    keys: list
    action: str | None
    params: tuple[int, ...]
    priority: int | None
    member: int | None
    group: int | None
    is_const: bool
    is_default: bool
    packets: int | None = None  # direct counter values, when the table has a direct counter
    bytes: int | None = None
    idle_ns: int | None = None  # ns since the last hit (support_timeout tables; None for defaults)


@dataclass(frozen=True)
class DigestMessage:
    """One learned tuple from generate_digest / digest<T>(): ``name`` is the learn list (= P4Info digest)
    name, ``values`` the field values in declaration order."""

    name: str
    list_id: int
    values: tuple[int, ...]


@dataclass(frozen=True)
class PacketIn:
    """A packet the pipeline sent to the CPU port."""

    data: bytes
    ingress_port: int


TraceFn = Callable[[str], None]


class Switch:
    """A BMv2 simple_switch-compatible v1model switch, driven in-process.

    ``drop_port`` (511) is where mark_to_drop sends packets; ``cpu_port`` (None) is simple_switch_grpc's
    --cpu-port; ``clock`` returns seconds (time.monotonic) and feeds timestamps and meters;
    ``max_recirculations`` bounds resubmit/recirculate loops per injected packet.
    """

    def __init__(
        self,
        *,
        drop_port: int = 511,
        cpu_port: int | None = None,
        clock: Callable[[], float] | None = None,
        max_recirculations: int = 32,
        seed: int | None = None,
        egress_spec_init_to_drop: bool = False,
        flow_cache: bool = True,
        native: bool | None = None,
    ) -> None:
        # Entries of the cache of pipeline results (flowcache.py); 0 runs every packet through the
        # pipeline (p4kit-switch --no-flow-cache).
        self.flow_cache_size = flowcache.DEFAULT_SIZE if flow_cache else 0
        self.flow_cache_insert_inv_prob = flowcache.DEFAULT_INSERT_INV_PROB  # one miss in N is stored
        self._drop_port = drop_port
        self._egress_spec_to_drop = egress_spec_init_to_drop  # simple_switch_grpc's target option
        self._cpu_port = cpu_port
        self.clock = clock or time.monotonic
        self.max_recirculations = max_recirculations
        self.seed = seed
        self._t0 = self.clock()
        self._lock = threading.RLock()
        self._program: Program | None = None
        self._state: SwitchState | None = None
        self._engine: Any = None
        self._json: dict | None = None
        self._trace: TraceFn | None = None
        self._digest_cb: Callable[[DigestMessage], None] | None = None
        self._packet_in_cb: Callable[[PacketIn], None] | None = None
        self._log_cb: Callable[[str], None] | None = None
        self.drop_log: list[str] = []  # drop reasons of the last process_packet (or process_batch)
        self.raise_internal_errors = False  # tests: let internal errors propagate instead of dropping
        # Egress queues between ingress and egress (queues.py); see the traffic manager section.
        self.traffic_manager = TrafficManager()
        self._scheduler = EgressScheduler(self)
        self._output_cb: Callable[[int, bytes], object] | None = None
        self._late_outputs: deque[tuple[int, bytes]] = deque(maxlen=65536)
        # The native data plane (native/): None follows P4KIT_NATIVE (default on). `native_reason`
        # says why the loaded program runs on the Python data plane, when it does.
        self.native = _native_default() if native is None else bool(native)
        self.native_reason: str | None = None

    @property
    def drop_port(self) -> int:
        return self._drop_port

    @drop_port.setter
    def drop_port(self, port: int) -> None:
        """Changing it regenerates the pipeline code (the drop port is a constant there)."""
        with self._lock:
            self._drop_port = port
            self._recompile()

    @property
    def cpu_port(self) -> int | None:
        return self._cpu_port

    @cpu_port.setter
    def cpu_port(self, port: int | None) -> None:
        with self._lock:
            self._cpu_port = port
            self._recompile()

    def _recompile(self) -> None:
        if self._engine is not None:
            self._state.egress_spec_init = self._drop_port if self._egress_spec_to_drop else 0
            self._engine.compile(self._trace is not None)
            self._rebind_all()

    # ================================================================ pipeline
    def load_pipeline(self, bmv2_json: dict | str | bytes) -> None:
        """Load (or replace) the program. All tables, externs, groups and sessions are reset, as when
        simple_switch is given a new JSON. Raises PipelineLoadError and keeps the old pipeline on error."""
        if isinstance(bmv2_json, bytes | bytearray):
            bmv2_json = bmv2_json.decode("utf-8")
        if isinstance(bmv2_json, str):
            try:
                bmv2_json = _json.loads(bmv2_json)
            except ValueError as exc:
                raise PipelineLoadError(f"BMv2 JSON does not parse: {exc}") from exc
        program = load_program(bmv2_json)
        try:
            state = SwitchState.fresh(program, self.seed)
            state.egress_spec_init = self._drop_port if self._egress_spec_to_drop else 0
        except KeyError as exc:
            raise PipelineLoadError(f"unsupported hash algorithm {exc}") from exc
        with self._lock:
            try:
                engine = self._new_engine(program, state)
                engine.compile(self._trace is not None)
            except PipelineLoadError:
                raise
            except Exception as exc:
                raise PipelineLoadError(f"cannot compile pipeline: {type(exc).__name__}: {exc}") from exc
            old = (self._program, self._state, self._engine, self._json)
            self._program, self._state, self._engine, self._json = program, state, engine, bmv2_json
            self.traffic_manager.clear()  # queued packets belong to the old program's layout
            try:
                self._install_defaults_and_const_entries()
            except Exception as exc:
                engine.retire()
                self._program, self._state, self._engine, self._json = old
                if isinstance(exc, PipelineLoadError):
                    raise
                raise PipelineLoadError(
                    f"cannot install the program's entries: {type(exc).__name__}: {exc}"
                ) from exc
            if old[2] is not None:
                old[2].retire()  # a native port loop running the old data plane comes back

    def _new_engine(self, program: Program, state: SwitchState) -> Any:
        """The native engine when the program is within what it covers (and it is wanted), else the
        Python one; `native_reason` says why not."""
        from p4kit.switch.engine import Engine  # late import: engine imports codegen

        if not self.native:
            self.native_reason = "off (--no-native)"
            _log.info("data plane: Python (the native one is off)")
            return Engine(self, program, state)
        from p4kit.switch.native import NativeEngine, plan

        native, why = plan(program)
        self.native_reason = why
        if native is None:
            _log.info("data plane: Python (the native one does not cover %s)", why)
            return Engine(self, program, state)
        try:
            engine = NativeEngine(self, program, state, native)
        except (PipelineLoadError, OSError) as exc:  # no usable compiler or cache: the switch still runs
            self.native_reason = f"the native build failed: {exc}"
            _log.warning("data plane: Python (%s)", self.native_reason)
            return Engine(self, program, state)
        _log.info("data plane: native (%s)", native.name)
        return engine

    def port_target(self) -> Any:
        """The active native data plane as the native port loop runs it (ports.py), or None: no
        program, the Python data plane, or the native one off for now (tracing, a rated port)."""
        eng = self._engine
        return eng.port_target() if eng is not None else None

    @property
    def native_active(self) -> bool:
        """Packets run on the native data plane now (not while tracing or with a rated port)."""
        return bool(getattr(self._engine, "active", False))

    @property
    def has_pipeline(self) -> bool:
        return self._program is not None

    @property
    def program(self) -> Program:
        return self._need()[0]

    def get_pipeline_json(self) -> dict | None:
        return self._json

    def tables(self) -> list[str]:
        return list(self._need()[0].tables)

    def table_info(self, table: str) -> TableInfo:
        return self._table(table).info

    def action_info(self, action: str, table: str | None = None) -> ActionInfo:
        """An action by name; give ``table`` to get the action that table uses (p4c may emit several
        actions with one name, e.g. one per binding of a directional parameter)."""
        prog = self._need()[0]
        if table is not None:
            ts = self._table(table)
            allowed = self._profile_actions(ts.info.action_profile) if ts.info.action_profile else None
            a = (allowed or self._table_actions(ts.info)).get(action)
        else:
            a = prog.actions.get(action)
        if a is None:
            raise UnknownNameError(f"unknown action '{action}'" + (f" in table '{table}'" if table else ""))
        return a

    def _table_actions(self, info: TableInfo) -> dict[str, ActionInfo]:
        prog = self._need()[0]
        out: dict[str, ActionInfo] = {}
        for name, aid in zip(info.action_names, info.action_ids, strict=False):
            a = prog.actions_by_id.get(aid)
            if a is not None:
                out.setdefault(name, a)
        return out

    # ================================================================ tables
    def table_add(
        self,
        table: str,
        keys: Keys,
        action: str | None = None,
        params: Params = (),
        priority: int | None = None,
        *,
        member: int | None = None,
        group: int | None = None,
    ) -> int:
        """Add an entry; return its handle. Indirect tables take ``member=`` or ``group=`` instead of
        an action. Raises UnknownNameError, BadKeyError, BadActionError, DuplicateEntryError."""
        with self._lock:
            ts = self._table(table)
            if ts.info.const_entries and not ts.info.initial_entries:
                raise ConstViolationError(
                    f"table '{table}' has entries in the program (const entries): it is immutable, as in BMv2"
                )
            match = normalize_key(ts.info, keys)
            e = Entry()
            e.match = match
            e.priority = self._priority(ts, priority)
            self._set_entry_action(ts, e, action, params, member, group, default=False)
            if ts.info.max_size and len(ts.entries) >= ts.info.max_size:
                raise TableFullError(f"table '{table}' is full ({ts.info.max_size} entries)")
            if ts.find(match, e.priority) is not None:
                raise DuplicateEntryError(f"table '{table}': an entry with this key already exists")
            self._attach_direct(ts, e)
            e.hit_ns = self.now_ns()  # a new entry counts as just hit
            return ts.insert(e)

    def table_modify(
        self,
        table: str,
        handle: int,
        action: str | None = None,
        params: Params = (),
        *,
        member: int | None = None,
        group: int | None = None,
    ) -> None:
        """Change the action (or member/group) of an entry; its counters and meter stay."""
        with self._lock:
            ts = self._table(table)
            e = self._entry(ts, handle)
            if e.const:
                raise ConstViolationError(f"table '{table}': entry {handle} is a const entry")
            tmp = Entry()
            self._set_entry_action(ts, tmp, action, params, member, group, default=False)
            for slot in ("action", "args", "fn", "nxt", "member", "group"):
                setattr(e, slot, getattr(tmp, slot))

    def table_delete(self, table: str, handle: int) -> None:
        with self._lock:
            ts = self._table(table)
            e = self._entry(ts, handle)
            if e.const:
                raise ConstViolationError(f"table '{table}': entry {handle} is a const entry")
            ts.remove(handle)

    def table_find(self, table: str, keys: Keys, priority: int | None = None) -> int | None:
        """The handle of the entry with exactly this key (and priority), or None. P4Runtime's
        MODIFY/DELETE identify entries by key; this maps them to handles."""
        with self._lock:
            ts = self._table(table)
            return ts.find(normalize_key(ts.info, keys), self._priority(ts, priority))

    def table_clear(self, table: str) -> None:
        """Delete every non-const entry."""
        with self._lock:
            self._table(table).clear(keep_const=True)

    def table_set_default(
        self,
        table: str,
        action: str | None = None,
        params: Params = (),
        *,
        member: int | None = None,
        group: int | None = None,
    ) -> None:
        with self._lock:
            ts = self._table(table)
            dflt = ts.info.default_entry or {}
            tmp = Entry()
            self._set_entry_action(ts, tmp, action, params, member, group, default=True)
            if dflt.get("action_const") and tmp.action != ts.default.action:
                raise ConstViolationError(
                    f"table '{table}': the default action is const ({ts.default.action}) and cannot be changed"
                )
            if (
                dflt.get("action_entry_const")
                and "action_data" in dflt
                and (tmp.action, tmp.args)
                != (
                    ts.default.action,
                    ts.default.args,
                )
            ):
                raise ConstViolationError(f"table '{table}': the default entry is const")
            d = ts.default
            for slot in ("action", "args", "fn", "nxt", "member", "group"):
                setattr(d, slot, getattr(tmp, slot))

    def table_reset_default(self, table: str) -> None:
        """Restore the default entry the program declared."""
        with self._lock:
            ts = self._table(table)
            self._install_default(ts)

    def table_get_default(self, table: str) -> TableEntryView:
        with self._lock:
            ts = self._table(table)
            return self._view(ts, ts.default)

    def table_get_entries(self, table: str) -> list[TableEntryView]:
        """All entries (const ones included), in handle order."""
        with self._lock:
            ts = self._table(table)
            return [self._view(ts, e) for _, e in sorted(ts.entries.items())]

    def table_get_entry(self, table: str, handle: int) -> TableEntryView:
        with self._lock:
            ts = self._table(table)
            return self._view(ts, self._entry(ts, handle))

    def table_num_entries(self, table: str) -> int:
        with self._lock:
            return len(self._table(table).entries)

    def table_hit_ns(self, table: str, handle: int) -> int:
        """When the entry was last hit (or inserted), on the ``now_ns`` clock. Only tables with
        ``support_timeout`` stamp hits; on others this stays the insertion time."""
        with self._lock:
            ts = self._table(table)
            return self._entry(ts, handle).hit_ns

    # ================================================================ action profiles
    def act_prof_add_member(self, profile: str, member_id: int, action: str, params: Params = ()) -> None:
        with self._lock:
            ps = self._profile(profile)
            if member_id in ps.members:
                raise DuplicateEntryError(f"action profile '{profile}': member {member_id} already exists")
            if ps.max_size and len(ps.members) >= ps.max_size:
                raise TableFullError(f"action profile '{profile}' is full ({ps.max_size} members)")
            info, args = self._check_action(
                self._profile_actions(profile), action, params, f"profile '{profile}'"
            )
            m = Member(member_id, info.name, info.id, args)
            self._engine.bind_member(profile, m)
            ps.members[member_id] = m

    def act_prof_modify_member(self, profile: str, member_id: int, action: str, params: Params = ()) -> None:
        with self._lock:
            ps = self._profile(profile)
            m = self._member(ps, member_id)
            info, args = self._check_action(
                self._profile_actions(profile), action, params, f"profile '{profile}'"
            )
            m.action, m.action_id, m.args = info.name, info.id, args
            self._engine.bind_member(profile, m)

    def act_prof_delete_member(self, profile: str, member_id: int) -> None:
        with self._lock:
            ps = self._profile(profile)
            m = self._member(ps, member_id)
            users = self._profile_users(profile, member=m)
            if users:
                raise InvalidOperationError(
                    f"action profile '{profile}': member {member_id} is still used ({users[0]})"
                )
            del ps.members[member_id]

    def act_prof_create_group(self, profile: str, group_id: int, members: Sequence[int] = ()) -> None:
        with self._lock:
            ps = self._profile(profile)
            if not ps.has_selector:
                raise InvalidOperationError(f"action profile '{profile}' has no selector: no groups")
            if group_id in ps.groups:
                raise DuplicateEntryError(f"action profile '{profile}': group {group_id} already exists")
            for mid in members:
                self._member(ps, mid)
            g = Group(group_id)
            g.member_ids = list(dict.fromkeys(members))
            ps.refresh_group(g)
            ps.groups[group_id] = g

    def act_prof_delete_group(self, profile: str, group_id: int) -> None:
        with self._lock:
            ps = self._profile(profile)
            g = self._group(ps, group_id)
            users = self._profile_users(profile, group=g)
            if users:
                raise InvalidOperationError(
                    f"action profile '{profile}': group {group_id} is still used ({users[0]})"
                )
            del ps.groups[group_id]

    def act_prof_add_member_to_group(self, profile: str, group_id: int, member_id: int) -> None:
        with self._lock:
            ps = self._profile(profile)
            g = self._group(ps, group_id)
            self._member(ps, member_id)
            if member_id in g.member_ids:
                raise DuplicateEntryError(f"member {member_id} is already in group {group_id}")
            g.member_ids.append(member_id)
            ps.refresh_group(g)

    def act_prof_remove_member_from_group(self, profile: str, group_id: int, member_id: int) -> None:
        with self._lock:
            ps = self._profile(profile)
            g = self._group(ps, group_id)
            if member_id not in g.member_ids:
                raise EntryNotFoundError(f"member {member_id} is not in group {group_id}")
            g.member_ids.remove(member_id)
            ps.refresh_group(g)

    def act_prof_set_group_members(self, profile: str, group_id: int, members: Sequence[int]) -> None:
        """Replace a group's member list (P4Runtime's MODIFY of an ActionProfileGroup)."""
        with self._lock:
            ps = self._profile(profile)
            g = self._group(ps, group_id)
            for mid in members:
                self._member(ps, mid)
            g.member_ids = list(dict.fromkeys(members))
            ps.refresh_group(g)

    def act_prof_get_members(self, profile: str) -> list[tuple[int, str, tuple[int, ...]]]:
        """[(member_id, action, params)] sorted by member id."""
        with self._lock:
            ps = self._profile(profile)
            return [(m.member_id, m.action, m.args) for _, m in sorted(ps.members.items())]

    def act_prof_get_groups(self, profile: str) -> list[tuple[int, list[int]]]:
        """[(group_id, [member ids])] sorted by group id."""
        with self._lock:
            ps = self._profile(profile)
            return [(g.group_id, list(g.member_ids)) for _, g in sorted(ps.groups.items())]

    # ================================================================ counters
    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        """(packets, bytes) of one cell of an indirect counter."""
        with self._lock:
            c = self._counter(name)
            self._index(name, index, c.size)
            return c.packets[index], c.bytes[index]

    def counter_write(self, name: str, index: int, packets: int, bytes_: int) -> None:
        with self._lock:
            c = self._counter(name)
            self._index(name, index, c.size)
            c.packets[index], c.bytes[index] = int(packets), int(bytes_)

    def counter_reset(self, name: str) -> None:
        with self._lock:
            c = self._counter(name)
            c.packets[:] = [0] * c.size
            c.bytes[:] = [0] * c.size

    def counter_size(self, name: str) -> int:
        with self._lock:
            return self._counter(name).size

    def direct_counter_read(self, table: str, handle: int) -> tuple[int, int]:
        with self._lock:
            e = self._direct_entry(table, handle, "counter")
            return e.counter[0], e.counter[1]

    def direct_counter_write(self, table: str, handle: int, packets: int, bytes_: int) -> None:
        with self._lock:
            e = self._direct_entry(table, handle, "counter")
            e.counter[0], e.counter[1] = int(packets), int(bytes_)

    def direct_counter_reset(self, table: str) -> None:
        with self._lock:
            ts = self._table(table)
            if not ts.info.with_counters:
                raise InvalidOperationError(f"table '{table}' has no direct counter")
            for e in ts.entries.values():
                e.counter[0] = e.counter[1] = 0

    # ================================================================ meters
    def meter_set_rates(self, name: str, index: int, rates: Rates) -> None:
        """Configure one meter cell: [(cir, cburst), (pir, pburst)], rates per microsecond."""
        with self._lock:
            cells = self._meter(name)
            self._index(name, index, len(cells))
            cells[index].set_rates(self._rates(name, rates), self.now_us())

    def meter_array_set_rates(self, name: str, rates: Rates) -> None:
        with self._lock:
            cells = self._meter(name)
            r = self._rates(name, rates)
            now = self.now_us()
            for m in cells:
                m.set_rates(r, now)

    def meter_get_rates(self, name: str, index: int) -> list[tuple[float, int]]:
        """The configured rates ([] when unset, meaning every packet is GREEN)."""
        with self._lock:
            cells = self._meter(name)
            self._index(name, index, len(cells))
            return list(cells[index].rates)

    def meter_reset_rates(self, name: str, index: int) -> None:
        with self._lock:
            cells = self._meter(name)
            self._index(name, index, len(cells))
            cells[index].reset()

    def direct_meter_set_rates(self, table: str, handle: int, rates: Rates) -> None:
        with self._lock:
            e = self._direct_entry(table, handle, "meter")
            e.meter.set_rates(self._rates(table, rates), self.now_us())

    def direct_meter_get_rates(self, table: str, handle: int) -> list[tuple[float, int]]:
        with self._lock:
            return list(self._direct_entry(table, handle, "meter").meter.rates)

    def direct_meter_reset_rates(self, table: str, handle: int) -> None:
        with self._lock:
            self._direct_entry(table, handle, "meter").meter.reset()

    # ================================================================ registers
    def register_read(self, name: str, index: int) -> int:
        with self._lock:
            cells = self._register(name)
            self._index(name, index, len(cells))
            return cells[index]

    def register_read_all(self, name: str) -> list[int]:
        with self._lock:
            return list(self._register(name))

    def register_write(self, name: str, index: int, value: int) -> None:
        """Write one cell; the value is truncated to the register's width (as BMv2 does)."""
        with self._lock:
            cells = self._register(name)
            self._index(name, index, len(cells))
            width = self._need()[0].registers[name].bitwidth
            cells[index] = int(value) & ((1 << width) - 1)

    def register_reset(self, name: str) -> None:
        with self._lock:
            cells = self._register(name)
            cells[:] = [0] * len(cells)

    def register_size(self, name: str) -> int:
        with self._lock:
            return len(self._register(name))

    # ================================================================ multicast (PRE)
    def mc_group_create(self, group_id: int, replicas: Sequence[tuple[int, int]] = ()) -> None:
        """Create a group from (egress_port, rid) replicas (P4Runtime MulticastGroupEntry)."""
        with self._lock:
            self._need()
            self._state.pre.group_create(group_id, [(int(p), int(r)) for p, r in replicas])

    def mc_group_modify(self, group_id: int, replicas: Sequence[tuple[int, int]]) -> None:
        with self._lock:
            self._need()
            self._state.pre.group_modify(group_id, [(int(p), int(r)) for p, r in replicas])

    def mc_group_delete(self, group_id: int) -> None:
        with self._lock:
            self._need()
            self._state.pre.group_delete(group_id)

    def mc_group_get(self, group_id: int) -> list[tuple[int, int]]:
        """[(port, rid)] in replication order."""
        with self._lock:
            self._need()
            pre = self._state.pre
            if group_id not in pre.groups:
                raise EntryNotFoundError(f"multicast group {group_id} does not exist")
            return list(pre.replicas(group_id))

    def mc_groups(self) -> dict[int, list[tuple[int, int]]]:
        with self._lock:
            self._need()
            pre = self._state.pre
            return {g: list(pre.replicas(g)) for g in sorted(pre.groups)}

    # BMv2 CLI style (used by STF): groups made of nodes.
    def mc_mgrp_create(self, group_id: int) -> None:
        with self._lock:
            self._need()
            self._state.pre.mgrp_create(group_id)

    def mc_mgrp_destroy(self, group_id: int) -> None:
        with self._lock:
            self._need()
            self._state.pre.mgrp_destroy(group_id)

    def mc_node_create(self, rid: int, ports: Sequence[int]) -> int:
        """Create a node (rid, ports); return its handle (0, 1, 2... like BMv2)."""
        with self._lock:
            self._need()
            return self._state.pre.node_create(rid, [int(p) for p in ports])

    def mc_node_update(self, handle: int, ports: Sequence[int]) -> None:
        with self._lock:
            self._need()
            self._state.pre.node_update(handle, [int(p) for p in ports])

    def mc_node_destroy(self, handle: int) -> None:
        with self._lock:
            self._need()
            self._state.pre.node_destroy(handle)

    def mc_node_associate(self, group_id: int, handle: int) -> None:
        with self._lock:
            self._need()
            self._state.pre.node_associate(group_id, handle)

    def mc_node_dissociate(self, group_id: int, handle: int) -> None:
        with self._lock:
            self._need()
            self._state.pre.node_dissociate(group_id, handle)

    # ================================================================ clone sessions
    def clone_session_set(
        self,
        session_id: int,
        *,
        port: int | None = None,
        mcast_grp: int | None = None,
        replicas: Sequence[tuple[int, int]] | None = None,
        truncate_length: int = 0,
        class_of_service: int = 0,
    ) -> None:
        """Create or replace a clone (mirroring) session: to one port (BMv2 mirroring_add), to a
        multicast group (mirroring_add_mc), or to a replica list (P4Runtime CloneSessionEntry).
        ``truncate_length`` > 0 truncates clones to that many bytes."""
        with self._lock:
            self._need()
            reps = None if replicas is None else [(int(p), int(r)) for p, r in replicas]
            self._state.pre.session_set(
                CloneSession(session_id, port, mcast_grp, reps, int(truncate_length), class_of_service)
            )

    def clone_session_delete(self, session_id: int) -> None:
        with self._lock:
            self._need()
            self._state.pre.session_delete(session_id)

    def clone_session_get(self, session_id: int) -> CloneSession:
        with self._lock:
            self._need()
            s = self._state.pre.sessions.get(session_id)
            if s is None:
                raise EntryNotFoundError(f"clone session {session_id} does not exist")
            return s

    def clone_sessions(self) -> dict[int, CloneSession]:
        with self._lock:
            self._need()
            return dict(self._state.pre.sessions)

    # ================================================================ parse value sets
    def parse_vset_add(self, name: str, value: int) -> None:
        """Add a value (unpadded, ``compressed_bitwidth`` bits, fields concatenated) to a value set."""
        with self._lock:
            prog, st = self._need()
            self._vset(name)
            bw = int(prog.parse_vsets[name].get("compressed_bitwidth", 0) or 0)
            if not isinstance(value, int) or value < 0 or (bw and value >> bw):
                raise BadKeyError(f"parse value set '{name}': value {value!r} does not fit in {bw} bits")
            st.vset_values[name].add(value)
            st.vsets[name].add(prog.pad_vset_value(name, value))

    def parse_vset_remove(self, name: str, value: int) -> None:
        with self._lock:
            prog, st = self._need()
            self._vset(name)
            if value not in st.vset_values[name]:
                raise EntryNotFoundError(f"value {value:#x} is not in parse value set '{name}'")
            st.vset_values[name].discard(value)
            st.vsets[name].discard(prog.pad_vset_value(name, value))

    def parse_vset_get(self, name: str) -> list[int]:
        with self._lock:
            _, st = self._need()
            self._vset(name)
            return sorted(st.vset_values[name])

    def parse_vset_clear(self, name: str) -> None:
        with self._lock:
            _, st = self._need()
            self._vset(name)
            st.vset_values[name].clear()
            st.vsets[name].clear()

    # ================================================================ hashes
    def calculation_algo(self, calculation: str) -> str:
        """The algorithm of a calculation of the program (crc16, crc32_custom, csum16, ...)."""
        with self._lock:
            prog, _ = self._need()
            calc = prog.calculations.get(calculation)
            if calc is None:
                raise UnknownNameError(f"unknown calculation '{calculation}'")
            return str(calc.get("algo", ""))

    def set_crc_parameters(
        self,
        calculation: str,
        polynomial: int,
        initial: int,
        final_xor: int,
        reflect_data: bool,
        reflect_remainder: bool,
    ) -> None:
        """Reconfigure a crc16_custom / crc32_custom calculation (BMv2 set_crc16/32_parameters)."""
        with self._lock:
            prog, st = self._need()
            calc = prog.calculations.get(calculation)
            if calc is None:
                raise UnknownNameError(f"unknown calculation '{calculation}'")
            algo = calc.get("algo", "")
            if algo not in ("crc16_custom", "crc32_custom"):
                raise InvalidOperationError(f"calculation '{calculation}' uses {algo}, not a custom CRC")
            width = 16 if algo == "crc16_custom" else 32
            st.hash_fns[calculation] = hashes.Crc(
                hashes.CrcParams(width, polynomial, initial, final_xor, reflect_data, reflect_remainder)
            )

    # ================================================================ callbacks
    def set_digest_callback(self, fn: Callable[[DigestMessage], None] | None) -> None:
        with self._lock:
            self._digest_cb = fn

    def set_packet_in_callback(self, fn: Callable[[PacketIn], None] | None) -> None:
        with self._lock:
            self._packet_in_cb = fn

    def set_log_callback(self, fn: Callable[[str], None] | None) -> None:
        """Receives log_msg() output (default: Python logging at INFO)."""
        with self._lock:
            self._log_cb = fn

    def set_trace(self, fn: TraceFn | None) -> None:
        """Per-packet trace lines (parser states, extracted fields, tables hit/miss with action and
        parameters, drops and why, egress decisions). None turns tracing off; the pipeline is then
        regenerated without any trace code, so it costs nothing."""
        with self._lock:
            was = self._trace is not None
            self._trace = fn
            if was != (fn is not None):
                self._recompile()

    # ================================================================ traffic manager (queues.py)
    def set_priority_queues(self, n: int) -> None:
        """simple_switch's --priority-queues N: N queues per egress port, chosen by
        standard_metadata.priority (higher is served first). Per-port depths and rates start
        afresh; the defaults and the links' rates are kept."""
        with self._lock:
            if self.traffic_manager.pending():
                raise InvalidOperationError(
                    "cannot change the number of priority queues while packets are queued"
                )
            self.traffic_manager = self.traffic_manager.with_priorities(n)
            self._recompile()

    def set_queue_depth(self, depth: int, port: int | None = None, priority: int | None = None) -> None:
        """Capacity in packets (simple_switch_CLI set_queue_depth); None: every port / priority."""
        with self._lock:
            self.traffic_manager.set_queue_depth(depth, port, priority)

    def set_queue_rate(self, pps: float, port: int | None = None, priority: int | None = None) -> None:
        """Departure rate in packets per second, 0 = unlimited (simple_switch_CLI set_queue_rate)."""
        with self._lock:
            before = self.traffic_manager.any_rate
            self.traffic_manager.set_queue_rate(pps, port, priority)
            if self.traffic_manager.any_rate != before:
                self._recompile()  # the fast path checks for rated ports only when there are some

    def set_port_bit_rate(self, port: int, bits_per_s: float) -> None:
        """A link rate for the port's queues (they share it): what `--link PORT:rate=` emulates."""
        with self._lock:
            before = self.traffic_manager.any_rate
            self.traffic_manager.set_port_bit_rate(port, bits_per_s)
            if self.traffic_manager.any_rate != before:
                self._recompile()

    def set_link_rate(self, port: int, bits_per_s: float) -> None:
        """The rate of the port's link (--link rate, or the kernel's shaping of its interface): it
        paces the port's queue for programs that read the queue fields (see queues.py)."""
        with self._lock:
            before = self.traffic_manager.any_rate
            self.traffic_manager.set_link_rate(port, bits_per_s)
            if self.traffic_manager.any_rate != before:
                self._recompile()  # only for programs that read the queue fields (queues.py)

    def set_output_callback(self, fn: Callable[[int, bytes], object] | None) -> None:
        """Receives (port, bytes) of packets that leave a queue later than their ingress returned
        (ports with a rate); without one they are kept for ``take_outputs``."""
        with self._lock:
            self._output_cb = fn

    def take_outputs(self) -> list[tuple[int, bytes]]:
        """Packets that left a rated queue since the last call (when no output callback is set)."""
        with self._lock:
            out = list(self._late_outputs)
            self._late_outputs.clear()
            return out

    def wait_queues_empty(self, timeout: float = 5.0) -> bool:
        """Block until every egress queue is empty (True) or ``timeout`` seconds passed (False)."""
        end = time.monotonic() + timeout
        while True:
            with self._lock:
                if not self.traffic_manager.pending():
                    return True
            if time.monotonic() >= end:
                return False
            time.sleep(0.001)

    def _queued(self) -> None:
        self._scheduler.kick()

    def _deliver(self, outputs: list[tuple[int, bytes]]) -> None:
        if self._output_cb is None:
            self._late_outputs.extend(outputs)
            return
        for port, data in outputs:
            self._output_cb(port, data)

    # ================================================================ packets
    def process_packet(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Run one packet received on ``port``; return [(egress_port, bytes)] it produced.
        Never raises for packet content: malformed packets are dropped (reason in ``drop_log``)."""
        if type(data) is not bytes:
            data = bytes(data)
        if type(port) is not int:
            port = int(port)
        with self._lock:
            engine = self._engine  # _live_engine() written out: a call costs as much as the check
            if engine is None:
                raise NoPipelineError("no pipeline loaded")
            return engine.process(port, data)

    def process_batch(
        self,
        port: int,
        frames: Sequence[bytes],
        on_error: Callable[[int], object] | None = None,
        sinks: Mapping[int, Callable[[bytes], bool]] | None = None,
    ) -> list[tuple[int, bytes]]:
        """Run several packets received on ``port`` in order; return all their outputs in order.

        Why: the port loop hands over a whole receive batch, and taking the lock and checking
        arguments once per batch instead of once per packet is a measurable part of a packet's
        cost. A packet the dataplane raises on is dropped and reported to ``on_error(port)``
        (re-raised without it); the rest of the batch still runs. ``sinks`` maps egress ports to a
        function that may take a unicast output (True: taken, e.g. queued for transmission); what
        no sink took is returned."""
        if type(port) is not int:
            port = int(port)
        if not all(type(data) is bytes for data in frames):
            frames = [bytes(data) for data in frames]
        with self._lock:
            return self._live_engine().process_batch(port, frames, on_error, sinks)

    def _live_engine(self) -> Engine:
        """The loaded pipeline's engine (call with the lock held)."""
        engine = self._engine
        if engine is None:
            raise NoPipelineError("no pipeline loaded")
        return engine

    def packet_out(self, data: bytes, ingress_port: int | None = None) -> list[tuple[int, bytes]]:
        """Inject a controller packet (P4Runtime PacketOut): it enters ingress on the CPU port."""
        port = self.cpu_port if ingress_port is None else ingress_port
        if port is None:
            raise InvalidOperationError("packet_out needs a CPU port (Switch(cpu_port=...))")
        return self.process_packet(port, data)

    def now_us(self) -> int:
        """Microseconds since the switch started (ingress_global_timestamp's clock)."""
        return int((self.clock() - self._t0) * 1_000_000)

    def now_ns(self) -> int:
        """Nanoseconds since the switch started, on the same clock (entry hit times)."""
        return int((self.clock() - self._t0) * 1_000_000_000)

    def set_flow_cache(
        self,
        enabled: bool,
        size: int = flowcache.DEFAULT_SIZE,
        insert_inv_prob: int = flowcache.DEFAULT_INSERT_INV_PROB,
    ) -> None:
        """Serve stateless programs' repeated packets from the cache of results, or not (it
        regenerates the fast path, which holds the cache); one miss in `insert_inv_prob` is stored."""
        if type(insert_inv_prob) is not int or insert_inv_prob < 1:
            raise ValueError(f"insert_inv_prob must be an integer >= 1, not {insert_inv_prob!r}")
        with self._lock:
            self.flow_cache_size = size if enabled else 0
            self.flow_cache_insert_inv_prob = insert_inv_prob
            self._recompile()

    def flow_cache_entries(self) -> int:
        """How many results the cache holds now (0 when the program cannot be cached)."""
        with self._lock:
            fc = self._engine.flow_cache if self._engine is not None else None
            return 0 if fc is None else len(fc.entries)

    def reset_state(self) -> None:
        """Clear all run-time state (entries, groups, sessions, externs) but keep the program."""
        with self._lock:
            if self._json is not None:
                self.load_pipeline(self._json)

    # ================================================================ internals
    def _need(self) -> tuple[Program, SwitchState]:
        if self._program is None or self._state is None:
            raise NoPipelineError("no pipeline loaded")
        return self._program, self._state

    def _table(self, name: str) -> TableState:
        _, st = self._need()
        ts = st.tables.get(name)
        if ts is None:
            raise UnknownNameError(f"unknown table '{name}'")
        return ts

    def _entry(self, ts: TableState, handle: int) -> Entry:
        e = ts.entries.get(handle)
        if e is None:
            raise EntryNotFoundError(f"table '{ts.name}': no entry with handle {handle}")
        return e

    def _profile(self, name: str) -> ProfileState:
        _, st = self._need()
        ps = st.profiles.get(name)
        if ps is None:
            raise UnknownNameError(f"unknown action profile '{name}'")
        return ps

    def _member(self, ps: ProfileState, mid: int) -> Member:
        m = ps.members.get(mid)
        if m is None:
            raise EntryNotFoundError(f"action profile '{ps.name}': no member {mid}")
        return m

    def _group(self, ps: ProfileState, gid: int) -> Group:
        g = ps.groups.get(gid)
        if g is None:
            raise EntryNotFoundError(f"action profile '{ps.name}': no group {gid}")
        return g

    def _profile_tables(self, profile: str) -> list[TableState]:
        _, st = self._need()
        return [ts for ts in st.tables.values() if ts.info.action_profile == profile]

    def _profile_actions(self, profile: str) -> dict[str, ActionInfo]:
        out: dict[str, ActionInfo] = {}
        for ts in self._profile_tables(profile):
            for name, a in self._table_actions(ts.info).items():
                out.setdefault(name, a)
        return out

    def _profile_users(
        self, profile: str, member: Member | None = None, group: Group | None = None
    ) -> list[str]:
        users = []
        for ts in self._profile_tables(profile):
            for e in [*ts.entries.values(), ts.default]:
                if (member is not None and e.member is member) or (group is not None and e.group is group):
                    users.append(f"table '{ts.name}' entry {e.handle if e.handle is not None else 'default'}")
        return users

    def _counter(self, name: str):
        prog, st = self._need()
        c = st.counters.get(name)
        if c is None:
            info = prog.counters.get(name)
            if info is not None and info.is_direct:
                raise InvalidOperationError(
                    f"counter '{name}' is direct: use direct_counter_* with its table"
                )
            raise UnknownNameError(f"unknown counter '{name}'")
        return c

    def _meter(self, name: str) -> list[Meter]:
        prog, st = self._need()
        m = st.meters.get(name)
        if m is None:
            info = prog.meters.get(name)
            if info is not None and info.is_direct:
                raise InvalidOperationError(f"meter '{name}' is direct: use direct_meter_* with its table")
            raise UnknownNameError(f"unknown meter '{name}'")
        return m

    def _register(self, name: str) -> list[int]:
        _, st = self._need()
        r = st.registers.get(name)
        if r is None:
            raise UnknownNameError(f"unknown register '{name}'")
        return r

    def _vset(self, name: str) -> set[int]:
        _, st = self._need()
        vs = st.vsets.get(name)
        if vs is None:
            raise UnknownNameError(f"unknown parse value set '{name}'")
        return vs

    @staticmethod
    def _index(name: str, index: int, size: int) -> None:
        if not isinstance(index, int) or not 0 <= index < size:
            raise BadIndexError(f"index {index} out of range for '{name}' (size {size})")

    @staticmethod
    def _rates(name: str, rates: Rates) -> list[tuple[float, int]]:
        out = []
        for r in rates:
            if len(r) != 2 or r[0] < 0 or r[1] < 0:
                raise InvalidOperationError(f"meter '{name}': rates are [(rate, burst), ...], got {rates!r}")
            out.append((float(r[0]), int(r[1])))
        if len(out) not in (1, 2):
            raise InvalidOperationError(f"meter '{name}': give 1 or 2 (rate, burst) pairs, got {len(out)}")
        return out

    def _direct_entry(self, table: str, handle: int, what: str) -> Entry:
        ts = self._table(table)
        if what == "counter" and not ts.info.with_counters:
            raise InvalidOperationError(f"table '{table}' has no direct counter")
        if what == "meter" and not ts.info.direct_meters:
            raise InvalidOperationError(f"table '{table}' has no direct meter")
        return self._entry(ts, handle)

    @staticmethod
    def _priority(ts: TableState, priority: int | None) -> int | None:
        if not ts.info.needs_priority:
            return None
        if priority is None:
            return 0
        if not isinstance(priority, int) or priority < 0:
            raise InvalidOperationError(
                f"table '{ts.name}': priority must be a non-negative int, got {priority!r}"
            )
        return priority

    def _check_action(
        self, allowed: Mapping[str, ActionInfo], action: str | None, params: Params, where: str
    ) -> tuple[ActionInfo, tuple[int, ...]]:
        if action is None:
            raise BadActionError(f"{where}: an action is required")
        info = allowed.get(action)
        if info is None:
            raise BadActionError(f"{where}: action '{action}' is not one of {list(allowed)}")
        if isinstance(params, Mapping):
            unknown = set(params) - set(info.param_names)
            if unknown:
                raise BadActionError(f"{where}: action '{action}' has no parameter(s) {sorted(unknown)}")
            missing = [n for n in info.param_names if n not in params]
            if missing:
                raise BadActionError(f"{where}: action '{action}' is missing parameter(s) {missing}")
            values = [params[n] for n in info.param_names]
        else:
            values = list(params)
            if len(values) != len(info.params):
                raise BadActionError(
                    f"{where}: action '{action}' takes {len(info.params)} parameter(s) "
                    f"{info.param_names}, got {len(values)}"
                )
        out = []
        for (pname, width), v in zip(info.params, values, strict=False):
            if isinstance(v, bool):
                v = int(v)
            if not isinstance(v, int) or v < 0 or v >> width:
                raise BadActionError(
                    f"{where}: parameter '{pname}' of '{action}' = {v!r} does not fit in {width} bits"
                )
            out.append(v)
        return info, tuple(out)

    def _set_entry_action(
        self,
        ts: TableState,
        e: Entry,
        action: str | None,
        params: Params,
        member: int | None,
        group: int | None,
        default: bool,
    ) -> None:
        info = ts.info
        where = f"table '{ts.name}'"
        if info.action_profile:
            ps = self._profile(info.action_profile)
            if (member is None) == (group is None):
                if action is not None and member is None and group is None:
                    raise InvalidOperationError(
                        f"{where} uses action profile '{ps.name}': give member= or group="
                    )
                raise InvalidOperationError(f"{where}: give exactly one of member= or group=")
            if member is not None:
                e.member = self._member(ps, member)
                e.group = None
            else:
                e.group = self._group(ps, group)
                e.member = None
            e.action = None
            e.args = ()
            return
        if member is not None or group is not None:
            raise InvalidOperationError(f"{where} has no action profile: member/group not allowed")
        a, args = self._check_action(self._table_actions(info), action, params, where)
        scope = self._action_scope(info, a.name)
        if default and scope == "TABLE_ONLY":
            raise BadActionError(f"{where}: action '{a.name}' is @tableonly, not allowed as default")
        if not default and scope == "DEFAULT_ONLY":
            raise BadActionError(f"{where}: action '{a.name}' is @defaultonly, not allowed in entries")
        e.action, e.args = a.name, args
        self._engine.bind_entry(ts, e, a.id)

    @staticmethod
    def _action_scope(info: TableInfo, action: str) -> str:
        scopes = info.json.get("action_scopes") or {}
        return scopes.get(action, "TABLE_AND_DEFAULT")

    def _attach_direct(self, ts: TableState, e: Entry) -> None:
        if ts.info.with_counters:
            e.counter = [0, 0]
        if ts.info.direct_meters:
            e.meter = Meter()

    def _install_default(self, ts: TableState) -> None:
        prog, _ = self._need()
        d = ts.default
        dflt = ts.info.default_entry
        d.member = d.group = None
        if dflt and dflt.get("action_id") is not None and int(dflt["action_id"]) in prog.actions_by_id:
            a = prog.actions_by_id[int(dflt["action_id"])]
            d.action = a.name
            d.args = _json_action_data(a, dflt.get("action_data", []), ts.name)
            self._engine.bind_entry(ts, d, a.id)
        else:
            d.action, d.args = None, ()
            self._engine.bind_entry(ts, d, None)

    def _install_defaults_and_const_entries(self) -> None:
        prog, st = self._need()
        for ts in st.tables.values():
            self._install_default(ts)
            entries = ts.info.const_entries
            if not entries:
                continue
            top = max(int(x.get("priority", 0) or 0) for x in entries) + 1
            for x in entries:
                keys = []
                for kf, mk in zip(ts.info.keys, x.get("match_key", []), strict=False):
                    keys.append(_json_key(kf.match_type, mk))
                aentry = x.get("action_entry", {})
                a = prog.actions_by_id[int(aentry["action_id"])]
                params = list(_json_action_data(a, aentry.get("action_data", []), ts.name))
                e = Entry()
                e.match = normalize_key(ts.info, keys)
                e.priority = (top - int(x.get("priority", 0) or 0)) if ts.info.needs_priority else None
                e.action, e.args = a.name, tuple(params)
                e.const = not ts.info.initial_entries or bool(x.get("is_const"))
                e.hit_ns = self.now_ns()
                self._engine.bind_entry(ts, e, a.id)
                self._attach_direct(ts, e)
                with contextlib.suppress(DuplicateEntryError):  # p4c rejects duplicates; BMv2 keeps the first
                    ts.insert(e)

    def _rebind_all(self) -> None:
        _prog, st = self._need()
        for ts in st.tables.values():
            for e in [*ts.entries.values(), ts.default]:
                if e.action is not None:
                    aid = self._action_id_in_table(ts, e.action)
                    self._engine.bind_entry(ts, e, aid)
                elif e.member is None and e.group is None:
                    self._engine.bind_entry(ts, e, None)
        for pname, ps in st.profiles.items():
            for m in ps.members.values():
                self._engine.bind_member(pname, m)

    def _action_id_in_table(self, ts: TableState, action: str) -> int:
        a = self._table_actions(ts.info).get(action)
        return a.id if a is not None else self._need()[0].actions[action].id

    def _view(self, ts: TableState, e: Entry) -> TableEntryView:
        is_default = e.handle is None
        idle = None if is_default or not ts.info.support_timeout else max(0, self.now_ns() - e.hit_ns)
        return TableEntryView(
            table=ts.name,
            handle=e.handle,
            keys=[] if is_default else denormalize_key(ts.info, e.match),
            action=e.action,
            params=tuple(e.args),
            priority=e.priority,
            member=e.member.member_id if e.member is not None else None,
            group=e.group.group_id if e.group is not None else None,
            is_const=e.const,
            is_default=is_default,
            packets=e.counter[0] if e.counter is not None else None,
            bytes=e.counter[1] if e.counter is not None else None,
            idle_ns=idle,
        )


# Public methods that only read, or run packets: every other public method may change what a
# packet's run gives (entries, defaults, groups, sessions, value sets, hash parameters, callbacks,
# rates), so it empties the cache of results once it has done its work, under the switch's lock.
_KEEPS_RESULTS = frozenset(
    {
        "get_pipeline_json",
        "tables",
        "table_info",
        "action_info",
        "table_find",
        "table_get_default",
        "table_get_entries",
        "table_get_entry",
        "table_num_entries",
        "table_hit_ns",
        "act_prof_get_members",
        "act_prof_get_groups",
        "counter_read",
        "counter_size",
        "direct_counter_read",
        "meter_get_rates",
        "direct_meter_get_rates",
        "register_read",
        "register_read_all",
        "register_size",
        "mc_group_get",
        "mc_groups",
        "clone_session_get",
        "clone_sessions",
        "parse_vset_get",
        "take_outputs",
        "wait_queues_empty",
        "process_packet",
        "process_batch",
        "packet_out",
        "now_us",
        "now_ns",
        "flow_cache_entries",
        "port_target",  # the port loop asks before every stretch: it changes nothing
    }
)


def _native_default() -> bool:
    """P4KIT_NATIVE=0 turns the native data plane off for every switch that does not say."""
    return os.environ.get("P4KIT_NATIVE", "1").strip().lower() not in ("0", "no", "off", "false")


def _emptying_the_cache(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(self: Switch, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            try:
                return fn(self, *args, **kwargs)
            finally:
                if self._engine is not None:
                    self._engine.flow_cache_clear()

    wrapper.__name__ = fn.__name__
    wrapper.__qualname__ = fn.__qualname__
    wrapper.__doc__ = fn.__doc__
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


for _name, _fn in list(vars(Switch).items()):
    if not _name.startswith("_") and callable(_fn) and _name not in _KEEPS_RESULTS:
        setattr(Switch, _name, _emptying_the_cache(_fn))


def _json_action_data(a: ActionInfo, data: list, table: str) -> tuple[int, ...]:
    """Action data from the JSON, checked for count and truncated to each parameter's width."""
    if len(data) != len(a.params):
        raise PipelineLoadError(
            f"table '{table}': action '{a.name}' takes {len(a.params)} argument(s), the JSON gives {len(data)}"
        )
    out = []
    for (_, w), v in zip(a.params, data, strict=True):
        n = (
            int(v, 16)
            if isinstance(v, str) and v.lower().lstrip("-").startswith("0x")
            else int(v, 0)
            if isinstance(v, str)
            else int(v)
        )
        out.append(n & ((1 << w) - 1))
    return tuple(out)


def _json_key(match_type: str, mk: dict) -> Any:
    """A const entry's JSON match key in the API's key format."""

    def num(v: Any) -> int:
        return int(v, 16) if isinstance(v, str) else int(v)

    mt = mk.get("match_type", match_type)
    if mt in ("exact", "valid"):
        return num(mk["key"])
    if mt == "lpm":
        return (num(mk["key"]), int(mk["prefix_length"]))
    if mt == "ternary":
        return (num(mk["key"]), num(mk["mask"]))
    if mt == "range":
        return (num(mk["start"]), num(mk["end"]))
    if mt == "optional":
        if "mask" in mk:
            return (num(mk["key"]), num(mk["mask"]) == 0)
        return (num(mk["key"]), False)
    raise PipelineLoadError(f"unsupported const entry match type '{mt}'")
