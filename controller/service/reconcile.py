"""Making the switches hold what the store says, at start, on request, and whenever a switch returns.

Each switch is read over P4Runtime (job tables, route tables, multicast groups); what is missing is
inserted (its cells zeroed first), what differs is modified, what belongs to no job is deleted, except
entries another request is writing right now (`state.in_flight`). A switch without a pipeline (it
restarted) gets the pipeline first. The watcher notices within one interval a switch that went away
(its jobs read as degraded from then on) and one that came back (reconciled at once).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from p4.v1 import p4runtime_pb2

from controller.inc.allocation import CellRange
from controller.inc.install import tenant_entry
from controller.p4rt import P4InfoIndex, P4RuntimeError
from controller.service.entities import (
    ApplyError,
    Item,
    Stage,
    Writer,
    entity_content,
    entity_key,
    job_items,
    read_switch_state,
    resets_for,
    route_items,
)
from controller.service.plans import Plan
from controller.service.state import ServiceState
from controller.service.store import JobRow

log = logging.getLogger("tributary.controller")

LIVE_STATES = ("active", "replacing")
WATCH_TIMEOUT_S = 5.0  # the watcher's look at a switch: one that does not answer is taken as down


@dataclass
class ReconcileReport:
    switches: dict[str, dict[str, int | str]] = field(default_factory=dict)

    def total(self, key: str) -> int:
        return sum(int(v.get(key, 0)) for v in self.switches.values())


class Reconciler:
    def __init__(self, state: ServiceState, forget_job: Callable[[JobRow], list[str]]) -> None:
        self.state = state
        self._forget_job = forget_job
        self._conn_ids: dict[str, int] = {}
        self._switch_locks = {name: threading.Lock() for name in state.topology.sites}
        self._monitor: threading.Thread | None = None
        self._stop = threading.Event()
        self.passes = 0

    def load(self) -> None:
        """Reserve what the store promises; drop jobs a stopped controller left half-written."""
        st = self.state
        with st.lock:
            for a in st.store.allocations():
                if a.switch not in st.allocator.switches:
                    log.warning("job %d holds cells on %s, which this network lacks", a.job, a.switch)
                    continue
                st.allocator.reserve(
                    (a.job, a.round, a.clique), a.switch, CellRange(a.base, a.cells), a.group
                )
            for job in st.store.jobs():
                plan = Plan.from_json(job.plan)
                # an Edge-INC job's groups (no cells) are in its plan, not in the allocation rows
                for sw, rnd, idx, base, cells, group in (plan.edge or {}).get("allocations", []):
                    if sw in st.allocator.switches:
                        st.allocator.reserve((job.id, rnd, idx), sw, CellRange(base, cells), group)
                if plan.switch_rounds and (plan.version < 2 or not plan.epoch):
                    # written before jobs had generations: its entries cannot be rebuilt; reconcile
                    # removes whatever of it a switch still holds
                    log.warning("job %d predates epochs (protocol v2): removing it", job.id)
                    for a in st.store.allocations(job.id):
                        st.allocator.release((a.job, a.round, a.clique))
                    st.store.delete_job(job.id)
                    continue
                if job.state == "installing":
                    log.warning("job %d was being installed when the controller stopped: removing it", job.id)
                    self._forget_job(job)
                elif job.state == "removing":
                    self._forget_job(job)
                elif job.state == "replacing":  # the old plan is still the stored one: it runs on
                    st.store.update_job(job.id, state="active")

    def reconcile(self, only: str | None = None) -> ReconcileReport:
        """Make every reachable switch hold exactly the routes and the live jobs' entries.

        A switch without a pipeline gets it first, outside the lock (compiling and loading a pipeline
        takes seconds and concerns no job); the comparison and the writes that follow are made under
        the lock, so they never meet a job half-changed by a request."""
        st = self.state
        report = ReconcileReport()
        for sw in st.topology.sites:
            if only is not None and sw != only:
                continue
            # one pass per switch at a time (the watcher and POST /reconcile): a second pipeline push
            # would wipe what the first pass had just written
            with self._switch_locks[sw]:
                pushed = self._pipeline(sw)
                if isinstance(pushed, str):
                    report.switches[sw] = {"error": pushed}
                    continue
                with st.lock:
                    plans = [Plan.from_json(j.plan) for j in st.store.jobs() if j.state in LIVE_STATES]
                    desired = [i for i in route_items(st.index, st.topology) if i.switch == sw]
                    for plan in plans:
                        desired.extend(i for i in job_items(st.index, plan) if i.switch == sw)
                    report.switches[sw] = {**self._switch(sw, desired, plans), "pipeline_pushed": pushed}
        with st.lock:
            self.passes += 1
        for sw, r in report.switches.items():
            if r.get("inserted") or r.get("deleted") or r.get("modified") or r.get("pipeline_pushed"):
                log.info("reconcile %s: %s", sw, r)
        return report

    def _pipeline(self, name: str) -> int | str:
        """1 if the switch had no pipeline and got one, 0 if it had one; the error otherwise."""
        pool = self.state.pool
        conn = pool.connect(name)
        if conn is None:
            return pool.status[name].last_error
        try:
            if pool.has_pipeline(conn):
                return 0
            pool.push_pipeline(conn)
        except P4RuntimeError as exc:
            pool.mark_down(name, str(exc))
            return str(exc)
        pool.status[name].reprovisioned += 1
        return 1

    def _switch(self, name: str, desired: list[Item], plans: list[Plan]) -> dict[str, int | str]:
        st = self.state
        pool, index = st.pool, st.index
        conn = pool.connect(name)
        if conn is None:
            return {"error": pool.status[name].last_error}
        self._conn_ids[name] = id(conn)
        out: dict[str, int | str] = {"inserted": 0, "deleted": 0, "modified": 0}
        try:
            if not pool.has_pipeline(conn):  # lost it again since: the next pass starts over
                raise P4RuntimeError(name, "reconcile", None, "the switch lost its pipeline meanwhile")
            pool.note(name, True)
            held = read_switch_state(conn, index)
            want = {i.key: i for i in desired}
            busy = st.held_keys(name)
            missing = [i for k, i in want.items() if k not in held]
            extra = [
                Item(name, _stage_of(index, e), k, e)
                for k, e in held.items()
                if k not in want and k not in busy
            ]
            changed = [
                i
                for k, i in want.items()
                if k in held and entity_content(held[k]) != entity_content(i.entity)
            ]
            writer = Writer({name: conn})
            errors = writer.delete(extra)
            if changed:
                writer.modify(changed)
            # cells of rounds whose tenant entry is missing are reset before the round is turned on again
            missing_keys = {i.key for i in missing}
            srs = [
                sr
                for plan in plans
                for sr in plan.switch_rounds
                if sr.switch == name and entity_key(tenant_entry(index, plan.job, sr)) in missing_keys
            ]
            writer.insert(missing, resets_for(index, srs))
            out.update(inserted=len(missing), deleted=len(extra), modified=len(changed))
            if errors:
                out["error"] = "; ".join(errors)
            pool.note(name, True, in_sync=not errors)
        except (P4RuntimeError, ApplyError) as exc:
            pool.mark_down(name, str(exc))
            out["error"] = str(exc)
        return out

    # --- the watcher -------------------------------------------------------------------------------------

    def watch(self, interval_s: float) -> None:
        self._monitor = threading.Thread(
            target=self._watch, args=(interval_s,), daemon=True, name="switch-monitor"
        )
        self._monitor.start()

    def stop(self) -> None:
        self._stop.set()
        if self._monitor is not None:
            self._monitor.join(timeout=10)

    def _watch(self, interval: float) -> None:
        """Notice restarted or returning switches and bring them back to what the store says."""
        pool = self.state.pool
        while not self._stop.wait(interval):
            for name in self.state.topology.sites:
                try:
                    conn = pool.connect(name)
                    if conn is None:
                        continue
                    fresh = self._conn_ids.get(name) != id(conn)
                    if fresh or not pool.status[name].in_sync or not pool.has_pipeline(conn, WATCH_TIMEOUT_S):
                        log.warning(
                            "switch %s (re)connected, lost its pipeline or is behind: reconciling", name
                        )
                        self.reconcile(only=name)
                except P4RuntimeError as exc:
                    pool.mark_down(name, str(exc))
                except Exception:  # the watcher must survive anything
                    log.exception("switch monitor: %s", name)


def _stage_of(index: P4InfoIndex, entity: p4runtime_pb2.Entity) -> Stage:
    if entity.HasField("packet_replication_engine_entry"):
        return Stage.GROUP
    return {
        "inc_tenants": Stage.TENANT,
        "inc_children": Stage.CHILD,
        "inc_workers": Stage.DELIVERY,
        "edge_mcast": Stage.TENANT,
        "edge_hosts": Stage.DELIVERY,
    }.get(kind_name(index, entity), Stage.ROUTE)


def kind_name(index: P4InfoIndex, entity: p4runtime_pb2.Entity) -> str:
    """The short table name of an entry ("inc_tenants"), or "multicast_groups"."""
    if entity.HasField("packet_replication_engine_entry"):
        return "multicast_groups"
    for name, t in index.tables.items():
        if t.preamble.id == entity.table_entry.table_id:
            return name.rsplit(".", 1)[-1]
    return str(entity.table_entry.table_id)
