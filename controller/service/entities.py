"""A job's switch state as a set of P4Runtime entities with identities, and the writes that move a
switch from what it holds to what it should hold.

Why a set rather than a script: a schedule replacement installs the new rounds beside the old ones and
then removes only what the new schedule no longer uses (the per-worker delivery entries stay); and a
restarted controller compares the set with what each switch reports and fixes the difference. The
entities themselves come from controller.inc.install's builders, so they are the same as a plain
JobInstaller would write.

Order (`Stage`) keeps packets from meeting half a configuration: deliveries, groups and children before
the tenant entry that turns a round on; removal in the opposite order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

from p4.v1 import p4runtime_pb2

from controller.inc.install import child_entries, delivery_entry, tenant_entry
from controller.inc.jobs import SwitchRound
from controller.p4rt import P4InfoIndex, P4RuntimeError, SwitchConnection
from controller.p4rt.entities import multicast_group
from controller.provision import route_entities
from controller.routes import GUARD_TABLE, L2_TABLE, ROUTE_TABLE, plan_routes
from controller.service.plans import Plan
from controller.service.topology import Topology

JOB_TABLES = ("inc_tenants", "inc_children", "inc_workers")
ROUTE_TABLES = (ROUTE_TABLE, L2_TABLE, GUARD_TABLE)  # every table controller.routes plans for


class Stage(IntEnum):
    ROUTE = 0
    DELIVERY = 1
    GROUP = 2
    CHILD = 3
    TENANT = 4


Key = tuple


@dataclass
class Item:
    switch: str
    stage: Stage
    key: Key
    entity: p4runtime_pb2.Entity
    owner: int | None = None  # job id; None for routes


def _canon(value: bytes) -> bytes:
    return value.lstrip(b"\0") or b"\0"


def entity_key(entity: p4runtime_pb2.Entity) -> Key:
    """What identifies an entity on a switch (table + match + priority, or the group id)."""
    if entity.HasField("packet_replication_engine_entry"):
        return ("mcast", entity.packet_replication_engine_entry.multicast_group_entry.multicast_group_id)
    te = entity.table_entry
    fields = []
    for m in sorted(te.match, key=lambda m: m.field_id):
        kind = m.WhichOneof("field_match_type")
        if kind == "exact":
            fields.append((m.field_id, _canon(m.exact.value)))
        elif kind == "lpm":
            fields.append((m.field_id, _canon(m.lpm.value), m.lpm.prefix_len))
        elif kind == "ternary":
            fields.append((m.field_id, _canon(m.ternary.value), _canon(m.ternary.mask)))
        elif kind == "range":
            fields.append((m.field_id, _canon(m.range.low), _canon(m.range.high)))
        else:
            fields.append((m.field_id, _canon(m.optional.value)))
    return ("table", te.table_id, tuple(fields), te.priority)


def entity_content(entity: p4runtime_pb2.Entity) -> tuple:
    """What an entity does (action and parameters, or replicas): equal content needs no write."""
    if entity.HasField("packet_replication_engine_entry"):
        grp = entity.packet_replication_engine_entry.multicast_group_entry
        return tuple(sorted((r.egress_port, r.instance) for r in grp.replicas))
    act = entity.table_entry.action.action
    return (act.action_id, tuple(sorted((p.param_id, _canon(p.value)) for p in act.params)))


def job_items(index: P4InfoIndex, plan: Plan, rounds: Iterable[int] | None = None) -> list[Item]:
    """The entities of a job (optionally of some of its rounds only: deliveries always)."""
    keep = None if rounds is None else set(rounds)
    items: list[Item] = []
    seen: set[tuple[str, int]] = set()
    for sr in plan.switch_rounds:
        for port, mac, ip in sr.worker_children:
            if (sr.switch, port) in seen:
                continue
            seen.add((sr.switch, port))
            e = delivery_entry(index, plan.job, sr, port, mac, ip)
            items.append(Item(sr.switch, Stage.DELIVERY, entity_key(e), e, plan.job))
    for sr in plan.switch_rounds:
        if keep is not None and sr.round not in keep:
            continue
        g = multicast_group(sr.group, [(p, 0) for p in sr.children])
        items.append(Item(sr.switch, Stage.GROUP, entity_key(g), g, plan.job))
        for e in child_entries(index, plan.job, sr):
            items.append(Item(sr.switch, Stage.CHILD, entity_key(e), e, plan.job))
        t = tenant_entry(index, plan.job, sr)
        items.append(Item(sr.switch, Stage.TENANT, entity_key(t), t, plan.job))
    return items


def route_items(index: P4InfoIndex, topology: Topology) -> list[Item]:
    out = []
    for switch, entities in route_entities(index, plan_routes(topology.fabric)).items():
        for e in entities:
            out.append(Item(switch, Stage.ROUTE, entity_key(e), e))
    return out


RESET_REGISTERS = ("cell_chunk", "cell_arrivals")
WRITE_BATCH = 2048  # updates per Write: a pool's worth of resets in one call outlives any deadline


def resets_for(index: P4InfoIndex, srs: Iterable[SwitchRound]) -> dict[str, list[p4runtime_pb2.Entity]]:
    """Zeroed cells for switch rounds about to be (re)installed, so no stale chunk is taken for new.

    Only `cell_chunk` and `cell_arrivals` are reset (controller.inc.install.cell_resets also clears the
    bitmap and count): a cell with chunk 0 and no arrivals is treated as unused, and its first
    contribution overwrites lanes, bitmap and count (p4src/include/aggregation.p4), so half the writes
    give the same state; on a pool of 8192 cells that is seconds saved per job."""
    out: dict[str, list[p4runtime_pb2.Entity]] = {}
    for sr in srs:
        cells = range(sr.cells.base, sr.cells.base + sr.cells.cells)
        out.setdefault(sr.switch, []).extend(
            index.register_entry(name, c, 0) for name in RESET_REGISTERS for c in cells
        )
    return out


class ApplyError(RuntimeError):
    """A write failed; everything written by the failed call was undone."""


@dataclass
class Writer:
    """Inserts and deletes items in stage order over a set of connections, undoing on failure."""

    conns: dict[str, SwitchConnection]

    def _conn(self, switch: str) -> SwitchConnection:
        conn = self.conns.get(switch)
        if conn is None:
            raise ApplyError(f"switch {switch} is not connected")
        return conn

    def insert(self, items: list[Item], resets: dict[str, list[p4runtime_pb2.Entity]] | None = None) -> None:
        """All or nothing: on any failure, delete what this call inserted and raise ApplyError."""
        done: list[Item] = []
        try:
            for switch, entities in (resets or {}).items():
                conn = self._conn(switch)
                for at in range(0, len(entities), WRITE_BATCH):
                    conn.modify(entities[at : at + WRITE_BATCH])
            for stage in sorted({i.stage for i in items}):
                for switch, batch in _by_switch(i for i in items if i.stage == stage).items():
                    conn = self._conn(switch)
                    try:
                        conn.insert([i.entity for i in batch])
                    except P4RuntimeError as exc:
                        # the updates that did not fail were written; without details, assume all
                        failed = {u.index for u in exc.updates}
                        done.extend(item for n, item in enumerate(batch) if n not in failed)
                        raise
                    done.extend(batch)
        except (P4RuntimeError, ApplyError, KeyError, ValueError) as exc:
            self._undo(done)
            raise ApplyError(str(exc)) from exc

    def delete(self, items: list[Item]) -> list[str]:
        """Best effort (a switch may already have lost them): returns the errors met."""
        errors: list[str] = []
        for stage in sorted({i.stage for i in items}, reverse=True):
            for switch, batch in _by_switch(i for i in items if i.stage == stage).items():
                try:
                    self._conn(switch).delete([i.entity for i in batch])
                except (P4RuntimeError, ApplyError) as exc:
                    errors.append(str(exc))
        return errors

    def modify(self, items: list[Item]) -> None:
        for switch, batch in _by_switch(items).items():
            self._conn(switch).modify([i.entity for i in batch])

    def _undo(self, done: list[Item]) -> None:
        for stage in sorted({i.stage for i in done}, reverse=True):
            for switch, batch in _by_switch(i for i in done if i.stage == stage).items():
                for item in batch:  # one by one: a batch delete stops at nothing, but says little
                    with contextlib.suppress(P4RuntimeError, ApplyError):
                        self._conn(switch).delete([item.entity])


def _by_switch(items: Iterable[Item]) -> dict[str, list[Item]]:
    out: dict[str, list[Item]] = {}
    for i in items:
        out.setdefault(i.switch, []).append(i)
    return out


def read_switch_state(conn: SwitchConnection, index: P4InfoIndex) -> dict[Key, p4runtime_pb2.Entity]:
    """Every entry of the job and route tables and every multicast group the switch holds."""
    probes = [index.table_entry(t) for t in (*JOB_TABLES, *ROUTE_TABLES)]
    grp = p4runtime_pb2.Entity()
    grp.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
    probes.append(grp)
    out: dict[Key, p4runtime_pb2.Entity] = {}
    for e in conn.read(probes):
        if e.HasField("table_entry") and e.table_entry.is_default_action:
            continue
        out[entity_key(e)] = e
    return out
