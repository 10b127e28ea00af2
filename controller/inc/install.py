"""Installing and removing a planned INC job on the switches over P4Runtime, all or nothing: the one
installer, used by the tools (`tributary allreduce`, scripts/inc_by_hand.py) through JobInstaller and
by the controller service through the same entries and Writer (controller/service/entities.py).

A job's switch state is a set of P4Runtime entities with identities (`Item`): a schedule replacement
installs new rounds beside the old ones and removes only what the new schedule no longer uses, and a
reconcile compares the set with what a switch reports.

Order (`Stage`) keeps packets from meeting half a configuration: zeroed cells first, then result
deliveries, multicast groups and children, then the tenant entry that turns a round on; removal in the
opposite order. If any write fails, everything the call wrote is removed again and the error raised.

Cell resets zero `cell_chunk` and `cell_arrivals` only: a cell with no arrivals is taken as unused, and
its first contribution overwrites lanes, bitmap and count (p4src/include/aggregation.p4), so half the
writes give the same state (on a pool of 8192 cells that is seconds saved per job); a chunk number of 0
also keeps the service's traffic counters (controller/service/counters.py) exact.

Cells that no job has used since their switch's pipeline was committed hold zeros already. A tool
that committed the pipelines itself (`tributary allreduce`, `tributary train`) says so with a
`ZeroedCells` record, and their resets are left out: at 4,096 slots on three switches they are
98,304 register writes, most of a job's installation time with Python protobuf.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import IntEnum

from p4.v1 import p4runtime_pb2

from controller.inc.allocation import repair_group
from controller.inc.jobs import JobPlan, SwitchRound
from controller.p4rt import P4InfoIndex, P4RuntimeError, SwitchConnection
from controller.p4rt.entities import multicast_group
from edge.protocol import worker_port

TENANT_TABLE = "inc_tenants"
CHILD_TABLE = "inc_children"
DELIVERY_TABLE = "inc_workers"


def repair_replicas(sr: SwitchRound) -> list[tuple[int, int]] | None:
    """The replicas of a switch's repair group, or None where it needs none. An aggregate completed by
    a repair or by one of the call's last chunks (RETRANSMIT or URGENT: p4src/include/aggregation.p4)
    is what every worker below waits for at the end of a call, and its loss on a WAN link costs each of
    them a repair round trip; a second copy on the link makes that loss the square of its rate
    (docs/protocol.md, "Urgent chunks and repairs twice"). A root's group lists every child once and each
    child switch a second time (instance 1); a non-root's lists its parent twice. Host links carry one
    copy: the emulated WAN is what loses. None: a root whose children are all workers."""
    if not sr.is_root:
        return [(sr.parent_port, 0), (sr.parent_port, 1)]
    workers = {port for port, _, _ in sr.worker_children}
    switches = [port for port in sr.children if port not in workers]
    if not switches:
        return None
    return [(port, 0) for port in sr.children] + [(port, 1) for port in switches]


def repair_group_of(sr: SwitchRound) -> int:
    """The group a switch sends twice-worthy aggregates to: the twin where it has one, else its own."""
    return repair_group(sr.group) if repair_replicas(sr) is not None else sr.group


def tenant_entry(index: P4InfoIndex, tenant: int, sr: SwitchRound) -> p4runtime_pb2.Entity:
    if not sr.epoch or not sr.switch_ip:
        raise ValueError(f"switch {sr.switch} round {sr.round}: the plan has no epoch or INC address")
    return index.table_entry(
        TENANT_TABLE,
        {"hdr.inc.tenant": tenant, "hdr.inc.round": sr.round},
        "set_config",
        {
            "base": sr.cells.base,
            "nslots": sr.cells.cells // 2,
            "fan_in": sr.fan_in,
            "is_root": int(sr.is_root),
            "parent_port": sr.parent_port,
            "mcast_grp": sr.group,
            "repair_grp": repair_group_of(sr),
            "epoch": sr.epoch,
            "switch_ip": sr.switch_ip,
        },
    )


def child_entries(index: P4InfoIndex, tenant: int, sr: SwitchRound) -> list[p4runtime_pb2.Entity]:
    """One entry per child: its port and source address (a worker's own, or a child switch's INC one)."""
    if len(sr.child_ips) != len(sr.children):
        raise ValueError(f"switch {sr.switch} round {sr.round}: the plan lacks its children's addresses")
    return [
        index.table_entry(
            CHILD_TABLE,
            {
                "hdr.inc.tenant": tenant,
                "hdr.inc.round": sr.round,
                "std_meta.ingress_port": port,
                "hdr.ipv4.src_addr": ip,
            },
            "set_child",
            {"child": i},
        )
        for i, (port, ip) in enumerate(zip(sr.children, sr.child_ips, strict=True))
    ]


def delivery_entry(
    index: P4InfoIndex, tenant: int, sr: SwitchRound, port: int, mac: str, ip: str
) -> p4runtime_pb2.Entity:
    """The egress rewrite that lets a result reach one worker's socket (per tenant and worker port)."""
    return index.table_entry(
        DELIVERY_TABLE,
        {"hdr.inc.tenant": tenant, "std_meta.egress_port": port},
        "to_worker",
        {
            "mac": mac,
            "ip": ip,
            "udp_port": worker_port(tenant),
            "switch_mac": sr.switch_mac,
            "switch_ip": sr.switch_ip,
        },
    )


# --- entries with identities ----------------------------------------------------------------------


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


def plan_items(
    index: P4InfoIndex, tenant: int, switch_rounds: list[SwitchRound], rounds: Iterable[int] | None = None
) -> list[Item]:
    """The entities of a job's switch rounds (optionally of some rounds only; deliveries always, once
    per worker port even when the worker is in several rounds)."""
    keep = None if rounds is None else set(rounds)
    items: list[Item] = []
    seen: set[tuple[str, int]] = set()
    for sr in switch_rounds:
        for port, mac, ip in sr.worker_children:
            if (sr.switch, port) in seen:
                continue
            seen.add((sr.switch, port))
            e = delivery_entry(index, tenant, sr, port, mac, ip)
            items.append(Item(sr.switch, Stage.DELIVERY, entity_key(e), e, tenant))
    for sr in switch_rounds:
        if keep is not None and sr.round not in keep:
            continue
        g = multicast_group(sr.group, [(p, 0) for p in sr.children])
        items.append(Item(sr.switch, Stage.GROUP, entity_key(g), g, tenant))
        twin = repair_replicas(sr)
        if twin is not None:
            g = multicast_group(repair_group(sr.group), twin)
            items.append(Item(sr.switch, Stage.GROUP, entity_key(g), g, tenant))
        for e in child_entries(index, tenant, sr):
            items.append(Item(sr.switch, Stage.CHILD, entity_key(e), e, tenant))
        t = tenant_entry(index, tenant, sr)
        items.append(Item(sr.switch, Stage.TENANT, entity_key(t), t, tenant))
    return items


RESET_REGISTERS = ("cell_chunk", "cell_arrivals", "wcell_chunk", "wcell_arrivals")  # int32 and wide cells
WRITE_BATCH = 2048  # updates per Write: a pool's worth of resets in one call outlives any deadline


@dataclass
class ZeroedCells:
    """Which cells of each switch still hold the zeros of a freshly committed pipeline.

    Why it is safe: committing a pipeline zeroes every register, and no packet writes a cell before a
    job's tenant entry turns its round on. A cell stops counting as zeroed as soon as a job is
    installed over it and never counts again (a removed job leaves its cells as its last chunk left
    them; a failed installation may have let packets in). Only the process that committed the
    pipelines may keep one, and one for all its installers (it is shared state of the running WAN)."""

    used: dict[str, list[range]] = field(default_factory=dict)

    def take(self, switch: str, cells: range) -> bool:
        """Mark `cells` of `switch` used; True if none of them had been used before (all zero)."""
        spans = self.used.setdefault(switch, [])
        clean = all(cells.stop <= r.start or r.stop <= cells.start for r in spans)
        spans.append(cells)
        return clean


def resets_for(
    index: P4InfoIndex, srs: Iterable[SwitchRound], zeroed: ZeroedCells | None = None
) -> dict[str, list[p4runtime_pb2.Entity]]:
    """Zeroed cells for switch rounds about to be (re)installed, so no stale chunk is taken for new;
    with `zeroed`, none for cells that still hold a fresh pipeline's zeros."""
    out: dict[str, list[p4runtime_pb2.Entity]] = {}
    for sr in srs:
        cells = range(sr.cells.base, sr.cells.base + sr.cells.cells)
        if zeroed is not None and zeroed.take(sr.switch, cells):
            continue
        out.setdefault(sr.switch, []).extend(
            index.register_entry(name, c, 0) for name in RESET_REGISTERS for c in cells
        )
    return out


# --- writing ------------------------------------------------------------------------------------------


class ApplyError(RuntimeError):
    """A write failed; everything written by the failed call was undone."""


class InstallError(ApplyError):
    """JobInstaller's error: the job could not be installed and nothing of it stays."""


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


@dataclass
class JobInstaller:
    """A planned job (controller.inc.jobs.JobPlan) onto connected switches, for tools without the
    service; the same entries, resets and order as the service writes."""

    conns: dict[str, SwitchConnection]
    index: P4InfoIndex
    progress: Callable[[str], None] = lambda _msg: None
    # the running WAN's record of cells untouched since its pipelines were committed (None: reset all)
    zeroed: ZeroedCells | None = None

    def install(self, plan: JobPlan) -> None:
        try:
            items = plan_items(self.index, plan.tenant, plan.switches)
            Writer(self.conns).insert(items, resets_for(self.index, plan.switches, self.zeroed))
        except (ApplyError, KeyError, ValueError) as exc:  # a write refused, or a plan that cannot be one
            raise InstallError(
                f"job of tenant {plan.tenant}: installation failed and was rolled back: {exc}"
            ) from exc
        self.progress(f"tenant {plan.tenant}: installed on {len({s.switch for s in plan.switches})} switches")

    def remove(self, plan: JobPlan) -> list[str]:
        """Delete every entry and group of the job; returns the errors met (it goes on past them)."""
        return Writer(self.conns).delete(plan_items(self.index, plan.tenant, plan.switches))
