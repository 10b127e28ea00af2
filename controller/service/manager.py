"""The job manager: tenants and jobs from request to switch entries and back, and the reconciler.

Independent of HTTP (the REST layer only translates), so tests and tools drive it directly. One lock
orders every change to jobs and switches (create, delete, replace, reconcile): a reconcile never sees a
job half-installed by a concurrent request, and resources are never promised twice. Reads take no lock.

Invariants kept:
- a job in the store in state `active` has all its entries on every reachable switch (reconcile
  repairs what a restarted switch lost);
- a failed installation leaves nothing: the writer undoes its own writes, the allocation is released,
  and the job row (written first, as `installing`) is deleted; a controller that dies in between finds
  the `installing` row on restart and removes the job;
- a schedule replacement installs the new rounds (at new round numbers) before the store switches to
  the new plan, and removes the old rounds only after.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from p4.v1 import p4runtime_pb2

from controller.inc.allocation import INC_CELLS, Allocator, CellRange
from controller.inc.install import tenant_entry
from controller.p4rt import P4InfoIndex, P4RuntimeError
from controller.service import auth
from controller.service.auth import ADMIN, Principal
from controller.service.counters import STAT_NAMES, round_traffic, switch_stats
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
from controller.service.errors import BadRequest, Conflict, Forbidden, NotFound, Unauthorized, Unavailable
from controller.service.plans import (
    JobSpec,
    Plan,
    ScheduleSpec,
    allocation_rows,
    build_plan,
    check_workers,
    choose_schedule,
    next_round_base,
)
from controller.service.store import AllocationRow, JobRow, Store
from controller.service.switches import SwitchPool
from controller.service.topology import Topology
from edge.protocol import MAX_TENANT

log = logging.getLogger("tributary.controller")

TENANT_NAME = re.compile(r"^[a-z][a-z0-9-]{0,31}$")


@dataclass
class ReconcileReport:
    switches: dict[str, dict[str, int | str]] = field(default_factory=dict)

    def total(self, key: str) -> int:
        return sum(int(v.get(key, 0)) for v in self.switches.values())


class JobManager:
    def __init__(
        self,
        topology: Topology,
        pool: SwitchPool,
        store: Store,
        admin_token: str,
        cells_per_switch: int = INC_CELLS,
    ) -> None:
        self.topology = topology
        self.pool = pool
        self.index = pool.index
        self.store = store
        self._admin_token = admin_token
        self.allocator = Allocator(topology.sites, cells_per_switch)
        self._lock = threading.RLock()
        self._monitor: threading.Thread | None = None
        self._stop = threading.Event()
        self._conn_ids: dict[str, int] = {}
        self.started = time.time()
        self.reconciles = 0

    # --- life cycle -----------------------------------------------------------------------------------

    def start(self, monitor_interval_s: float | None = 2.0) -> ReconcileReport:
        """Load what the store promises, make the switches match it, and watch them from then on."""
        with self._lock:
            for a in self.store.allocations():
                self.allocator.reserve(
                    (a.job, a.round, a.clique), a.switch, CellRange(a.base, a.cells), a.group
                )
            for job in self.store.jobs():
                if job.state == "installing":
                    log.warning("job %d was being installed when the controller stopped: removing it", job.id)
                    self._forget(job)
                elif job.state == "removing":
                    self._forget(job)
            report = self.reconcile()
        if monitor_interval_s:
            self._monitor = threading.Thread(
                target=self._watch, args=(monitor_interval_s,), daemon=True, name="switch-monitor"
            )
            self._monitor.start()
        return report

    def close(self) -> None:
        self._stop.set()
        if self._monitor is not None:
            self._monitor.join(timeout=10)
        self.pool.close()

    # --- auth -----------------------------------------------------------------------------------------

    def authenticate(self, token: str | None) -> Principal:
        if not token:
            raise Unauthorized("missing bearer token (Authorization: Bearer <token>)")
        if auth.same_token(token, self._admin_token):
            return ADMIN
        row = self.store.tenant_by_token_hash(auth.token_hash(token))
        if row is None:
            raise Unauthorized("unknown token")
        return Principal(row.id)

    # --- tenants --------------------------------------------------------------------------------------

    def create_tenant(self, principal: Principal, name: str) -> tuple[dict, str]:
        _admin_only(principal)
        if not TENANT_NAME.match(name):
            raise BadRequest(
                f"tenant name {name!r}: use 1-32 lower-case letters, digits and '-', starting with a letter"
            )
        with self._lock:
            if self.store.tenant(name) is not None:
                raise Conflict(f"tenant {name!r} exists")
            token = auth.new_token()
            row = self.store.add_tenant(name, auth.token_hash(token))
        log.info("tenant %s created", name)
        return {"id": row.id, "created": row.created, "jobs": 0}, token

    def list_tenants(self, principal: Principal) -> list[dict]:
        _admin_only(principal)
        counts: dict[str, int] = {}
        for j in self.store.jobs():
            counts[j.tenant] = counts.get(j.tenant, 0) + 1
        return [{"id": t.id, "created": t.created, "jobs": counts.get(t.id, 0)} for t in self.store.tenants()]

    def delete_tenant(self, principal: Principal, name: str) -> int:
        """Removes the tenant's jobs from the switches, then the tenant; returns the jobs removed."""
        _admin_only(principal)
        with self._lock:
            if self.store.tenant(name) is None:
                raise NotFound(f"no tenant {name!r}")
            jobs = self.store.jobs(name)
            for job in jobs:
                self._forget(job)
            self.store.delete_tenant(name)
        log.info("tenant %s deleted with %d job(s)", name, len(jobs))
        return len(jobs)

    # --- jobs -----------------------------------------------------------------------------------------

    def create_job(
        self, principal: Principal, spec: JobSpec, progress: Callable[[str], None] | None = None
    ) -> dict:
        if principal.is_admin:
            raise Forbidden("jobs belong to tenants: create a tenant (POST /tenants) and use its token")
        by_site = check_workers(self.topology, spec.workers)
        sites = [s for s in self.topology.sites if s in by_site]
        if not spec.name:
            spec.name = f"{spec.strategy}-{len(spec.workers)}w"
        choice = choose_schedule(self.topology, spec, sites, progress)  # the optimiser: outside the lock
        with self._lock:
            job_id = self.store.next_job_id(MAX_TENANT)
            if job_id is None:
                raise Conflict(f"all {MAX_TENANT} job ids are in use")
            plan = build_plan(self.topology, self.allocator, job_id, spec, choice)
            now = time.time()
            row = JobRow(
                job_id,
                principal.tenant or "",
                spec.name,
                "installing",
                spec.to_json(),
                plan.to_json(),
                now,
                now,
            )
            self.store.add_job(row, _alloc_rows(plan))
            try:
                self._install(plan)
            except BaseException:
                self._release(plan)
                self.store.delete_job(job_id)
                raise
            self.store.update_job(job_id, state="active")
        log.info("job %d of %s installed: %d round(s)", job_id, row.tenant, len(plan.rounds))
        return self.job_view(self._visible(principal, job_id), counters=False)

    def get_job(self, principal: Principal, job_id: int, counters: bool = True) -> dict:
        return self.job_view(self._visible(principal, job_id), counters)

    def list_jobs(self, principal: Principal) -> list[dict]:
        rows = self.store.jobs(None if principal.is_admin else principal.tenant)
        return [self._summary(r) for r in rows]

    def delete_job(self, principal: Principal, job_id: int) -> dict:
        job = self._visible(principal, job_id)
        with self._lock:
            job = self._visible(principal, job_id)
            errors = self._forget(job)
        log.info("job %d deleted", job_id)
        return {"id": job_id, "removed": True, "warnings": errors}

    def reset_cells(self, principal: Principal, job_id: int) -> dict:
        """Zero the job's cells on every switch: for workers that start numbering chunks from 0 again
        (a cell that already saw chunk k would take chunk k again for a retransmission, or drop it)."""
        with self._lock:
            job = self._visible(principal, job_id)
            plan = Plan.from_json(job.plan)
            self._need_switches({sr.switch for sr in plan.switch_rounds})
            try:
                Writer(self.pool.live()).insert([], resets_for(self.index, plan.switch_rounds))
            except ApplyError as exc:
                raise Unavailable(f"resetting the cells failed: {exc}") from None
        cells = sum(sr.cells.cells for sr in plan.switch_rounds)
        return {"id": job_id, "cells_reset": cells}

    def replace_schedule(
        self, principal: Principal, job_id: int, schedule: ScheduleSpec, drain_s: float = 0.0
    ) -> dict:
        """New rounds first (at fresh round numbers), then the store, then the old rounds go (after
        `drain_s` seconds, so that workers still in an old round can finish it)."""
        job = self._visible(principal, job_id)
        spec = JobSpec.from_json(job.spec)
        if spec.strategy != "core-cliques":
            raise BadRequest(f"job {job_id} uses {spec.strategy}: only core-cliques jobs have a schedule")
        spec.schedule = schedule
        by_site = check_workers(self.topology, spec.workers)
        sites = [s for s in self.topology.sites if s in by_site]
        choice = choose_schedule(self.topology, spec, sites)
        with self._lock:
            job = self._visible(principal, job_id)
            old = Plan.from_json(job.plan)
            base = next_round_base(old, len(choice.rounds))
            new = build_plan(self.topology, self.allocator, job_id, spec, choice, round_base=base)
            old_items = job_items(self.index, old)
            new_items = job_items(self.index, new)
            old_keys = {(i.switch, i.key) for i in old_items}
            new_keys = {(i.switch, i.key) for i in new_items}
            try:
                self._need_switches({sr.switch for sr in new.switch_rounds})
                Writer(self.pool.live()).insert(
                    [i for i in new_items if (i.switch, i.key) not in old_keys],
                    resets_for(self.index, new.switch_rounds),
                )
            except ApplyError as exc:
                self._release(new)
                raise Unavailable(
                    f"the new schedule could not be installed (the old one runs on): {exc}"
                ) from None
            except BaseException:
                self._release(new)
                raise
            self.store.update_job(
                job_id, spec=spec.to_json(), plan=new.to_json(), allocations=_alloc_rows(new)
            )
            stale = [i for i in old_items if (i.switch, i.key) not in new_keys]
            errors: list[str] = []
            if drain_s > 0:
                timer = threading.Timer(drain_s, self._retire, args=(old, stale))
                timer.daemon = True
                timer.start()
            else:
                errors = self._retire(old, stale)
        log.info(
            "job %d: schedule replaced, rounds %s -> %s", job_id, old.round_numbers(), new.round_numbers()
        )
        view = self.job_view(self._visible(principal, job_id), counters=False)
        view["warnings"] = errors
        return view

    # --- internals ------------------------------------------------------------------------------------

    def _visible(self, principal: Principal, job_id: int) -> JobRow:
        job = self.store.job(job_id)
        if job is None or not (principal.is_admin or job.tenant == principal.tenant):
            raise NotFound(f"no job {job_id}")
        return job

    def _need_switches(self, names: set[str]) -> None:
        down = sorted(n for n in names if self.pool.connect(n) is None)
        if down:
            why = "; ".join(self.pool.status[n].last_error for n in down)
            raise Unavailable(f"switch(es) {', '.join(down)} unreachable: {why}")

    def _install(self, plan: Plan) -> None:
        if not plan.switch_rounds:
            return
        self._need_switches({sr.switch for sr in plan.switch_rounds})
        try:
            Writer(self.pool.live()).insert(
                job_items(self.index, plan), resets_for(self.index, plan.switch_rounds)
            )
        except ApplyError as exc:
            raise Unavailable(
                f"installation failed and was rolled back, nothing of the job stays: {exc}"
            ) from None

    def _retire(self, old: Plan, stale: list[Item]) -> list[str]:
        """Remove a replaced schedule's entries and free its resources. (Should the controller stop
        before a delayed retirement, the entries belong to no job and reconcile removes them.)"""
        with self._lock:
            errors = Writer(self.pool.live()).delete(stale)
            self._release(old)
        return errors

    def _release(self, plan: Plan) -> None:
        for rp in plan.rounds:
            for c in range(len(rp.cliques)):
                self.allocator.release((plan.job, rp.round, c))

    def _forget(self, job: JobRow) -> list[str]:
        """Remove a job's entries (best effort: a down switch loses them anyway), resources and row."""
        self.store.update_job(job.id, state="removing")
        plan = Plan.from_json(job.plan)
        errors = Writer(self.pool.live()).delete(job_items(self.index, plan))
        self._release(plan)
        self.store.delete_job(job.id)
        return errors

    # --- reconcile --------------------------------------------------------------------------------------

    def reconcile(self, only: str | None = None) -> ReconcileReport:
        """Make every reachable switch hold exactly the routes and the active jobs' entries."""
        report = ReconcileReport()
        with self._lock:
            plans = [Plan.from_json(j.plan) for j in self.store.jobs() if j.state in ("active", "replacing")]
            desired: dict[str, list[Item]] = {}
            for item in route_items(self.index, self.topology):
                desired.setdefault(item.switch, []).append(item)
            for plan in plans:
                for item in job_items(self.index, plan):
                    desired.setdefault(item.switch, []).append(item)
            for sw in self.topology.sites:
                if only is not None and sw != only:
                    continue
                report.switches[sw] = self._reconcile_switch(sw, desired.get(sw, []), plans)
            self.reconciles += 1
        for sw, r in report.switches.items():
            if r.get("inserted") or r.get("deleted") or r.get("modified") or r.get("pipeline_pushed"):
                log.info("reconcile %s: %s", sw, r)
        return report

    def _reconcile_switch(self, name: str, desired: list[Item], plans: list[Plan]) -> dict[str, int | str]:
        conn = self.pool.connect(name)
        if conn is None:
            return {"error": self.pool.status[name].last_error}
        self._conn_ids[name] = id(conn)
        out: dict[str, int | str] = {"inserted": 0, "deleted": 0, "modified": 0, "pipeline_pushed": 0}
        try:
            if not self.pool.has_pipeline(conn):
                self.pool.push_pipeline(conn)
                self.pool.status[name].reprovisioned += 1
                out["pipeline_pushed"] = 1
            self.pool.note(name, True)
            held = read_switch_state(conn, self.index)
            want = {i.key: i for i in desired}
            missing = [i for k, i in want.items() if k not in held]
            extra = [Item(name, _stage_of(self.index, e), k, e) for k, e in held.items() if k not in want]
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
                if sr.switch == name and entity_key(tenant_entry(self.index, plan.job, sr)) in missing_keys
            ]
            writer.insert(missing, resets_for(self.index, srs))
            out.update(inserted=len(missing), deleted=len(extra), modified=len(changed))
            if errors:
                out["error"] = "; ".join(errors)
        except (P4RuntimeError, ApplyError) as exc:
            self.pool.mark_down(name, str(exc))
            out["error"] = str(exc)
        return out

    def _watch(self, interval: float) -> None:
        """Notice restarted or returning switches and bring them back to what the store says."""
        while not self._stop.wait(interval):
            for name in self.topology.sites:
                try:
                    conn = self.pool.connect(name)
                    if conn is None:
                        continue
                    fresh = self._conn_ids.get(name) != id(conn)
                    if fresh or not self.pool.has_pipeline(conn):
                        log.warning("switch %s (re)connected or lost its pipeline: reconciling", name)
                        self.reconcile(only=name)
                except P4RuntimeError as exc:
                    self.pool.mark_down(name, str(exc))
                except Exception:  # the watcher must survive anything
                    log.exception("switch monitor: %s", name)

    # --- views ------------------------------------------------------------------------------------------

    def _summary(self, job: JobRow) -> dict:
        plan = Plan.from_json(job.plan)
        return {
            "id": job.id,
            "tenant": job.tenant,
            "name": job.name,
            "state": job.state,
            "strategy": job.spec.get("strategy"),
            "workers": job.spec.get("workers"),
            "rounds": len(plan.rounds),
            "created": job.created,
        }

    def job_view(self, job: JobRow, counters: bool = True) -> dict:
        plan = Plan.from_json(job.plan)
        view = self._summary(job)
        spec = job.spec
        view.update(
            format=spec.get("format"),
            slots=plan.nslots,
            schedule={
                "source": plan.schedule.source,
                "sites": plan.schedule.rounds,
                "predicted_time_s": plan.schedule.predicted_time_s,
                "rounds_to_consensus": plan.schedule.rounds_to_consensus,
                "exact_average": plan.schedule.exact_average,
                "requested": spec.get("schedule"),
            },
            round_base=plan.round_base,
            trees=[
                {
                    "round": rp.round,
                    "cliques": [
                        {
                            "sites": c.sites,
                            "workers": c.workers,
                            "root": c.root,
                            "max_rtt_ms": c.max_rtt_ms,
                            "switches": c.tree,
                        }
                        for c in rp.cliques
                    ],
                }
                for rp in plan.rounds
            ],
            switches=[
                {
                    "switch": sr.switch,
                    "round": sr.round,
                    "cells": [sr.cells.base, sr.cells.base + sr.cells.cells - 1],
                    "slots": sr.cells.cells // 2,
                    "multicast_group": sr.group,
                    "fan_in": sr.fan_in,
                    "root": sr.is_root,
                    "parent_port": sr.parent_port,
                    "children": sr.children,
                }
                for sr in plan.switch_rounds
            ],
            workers=[
                {
                    "host": w.host,
                    "site": w.site,
                    "switch_ip": w.switch_ip,
                    "udp_port": w.udp_port,
                    "rounds": [
                        {"round": r, "clique_size": k, "rto_s": w.rto_s.get(r)}
                        for r, k in sorted(w.rounds.items())
                    ],
                }
                for w in plan.workers.values()
            ],
        )
        if plan.ring:
            view["ring"] = plan.ring
        if counters:
            view["counters"] = self.job_counters(plan)
        return view

    def job_counters(self, plan: Plan) -> dict:
        conns = self.pool.live()
        per: list[dict] = []
        done_rounds = 0
        root_chunks: dict[int, list[int]] = {}
        for sr in plan.switch_rounds:
            conn = conns.get(sr.switch)
            if conn is None:
                per.append({"switch": sr.switch, "round": sr.round, "error": "switch not connected"})
                continue
            try:
                t = round_traffic(conn, self.index, sr)
            except P4RuntimeError as exc:
                per.append({"switch": sr.switch, "round": sr.round, "error": str(exc)})
                continue
            per.append(
                {
                    "switch": sr.switch,
                    "round": sr.round,
                    "chunks": t.chunks,
                    "packets": t.packets,
                    "bytes": t.bytes,
                }
            )
            if sr.is_root:
                root_chunks.setdefault(sr.round, []).append(t.chunks)
        for rp in plan.rounds:
            chunks = root_chunks.get(rp.round, [])
            if chunks and len(chunks) == len(rp.cliques) and min(chunks) > 0:
                done_rounds += 1
        return {
            "packets": sum(int(p.get("packets", 0)) for p in per),
            "bytes": sum(int(p.get("bytes", 0)) for p in per),
            "rounds_completed": done_rounds,
            "per_switch_round": per,
        }

    def switches_view(self) -> list[dict]:
        out = []
        for sw in self.topology.fabric.switches:
            st = self.pool.status[sw.name]
            row: dict = {
                "name": sw.name,
                "address": sw.grpc_addr,
                "device_id": sw.device_id,
                "reachable": False,
                "pipeline_loaded": False,
                "reprovisioned": st.reprovisioned,
            }
            conn = self.pool.connect(sw.name)
            if conn is not None:
                try:
                    row["pipeline_loaded"] = self.pool.has_pipeline(conn)
                    row["reachable"] = True
                    if row["pipeline_loaded"]:
                        held = read_switch_state(conn, self.index)
                        tables: dict[str, int] = {}
                        for e in held.values():
                            kind = _kind_name(self.index, e)
                            tables[kind] = tables.get(kind, 0) + 1
                        row["entries"] = sum(tables.values())
                        row["by_table"] = tables
                        row["inc_stats"] = {k: v[0] for k, v in switch_stats(conn, self.index).items()}
                except P4RuntimeError as exc:
                    self.pool.mark_down(sw.name, str(exc))
            if not row["reachable"]:
                row["error"] = self.pool.status[sw.name].last_error
            out.append(row)
        return out

    def topology_view(self) -> dict:
        return {
            "sites": [
                {
                    "name": sw.name,
                    "region": self.topology.regions.get(sw.name, ""),
                    "subnet": sw.subnet,
                    "switch": {"address": sw.grpc_addr, "device_id": sw.device_id, "inc_ip": sw.inc_ip},
                }
                for sw in self.topology.fabric.switches
            ],
            "hosts": [
                {"name": h.name, "site": sw.name, "ip": h.ip, "mac": h.mac, "port": h.port, "role": h.role}
                for sw in self.topology.fabric.switches
                for h in sw.hosts
            ],
            "links": [
                {
                    "a": link.a,
                    "b": link.b,
                    "rtt_ms": link.rtt_ms,
                    "rate_mbit": link.rate_mbit,
                    "loss_pct": link.loss_pct,
                }
                for link in self.topology.links
            ],
            "real_rate_mbit": self.topology.real_rate_mbit,
        }

    def metrics(self) -> str:
        """Prometheus text exposition (version 0.0.4)."""
        lines: list[str] = []

        def metric(
            name: str, kind: str, help_: str, samples: list[tuple[dict[str, str | int], float]]
        ) -> None:
            lines.append(f"# HELP {name} {help_}")
            lines.append(f"# TYPE {name} {kind}")
            for labels, value in samples:
                lab = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
                lines.append(f"{name}{{{lab}}} {value:g}" if lab else f"{name} {value:g}")

        jobs = self.store.jobs()
        states: dict[str, int] = {}
        for j in jobs:
            states[j.state] = states.get(j.state, 0) + 1
        metric("tributary_tenants", "gauge", "Tenants.", [({}, len(self.store.tenants()))])
        metric(
            "tributary_jobs",
            "gauge",
            "Jobs by state.",
            [({"state": s}, n) for s, n in sorted(states.items())] or [({"state": "active"}, 0)],
        )
        up, entries, agg, stats = [], [], [], []
        for row in self.switches_view():
            up.append(({"switch": row["name"]}, 1 if row["reachable"] and row["pipeline_loaded"] else 0))
            if "entries" in row:
                entries.append(({"switch": row["name"]}, row["entries"]))
            st = row.get("inc_stats", {})
            if st:
                agg.append(({"switch": row["name"]}, st.get("absorbed", 0) + st.get("completed", 0)))
                for reason in STAT_NAMES:
                    stats.append(({"switch": row["name"], "reason": reason}, st.get(reason, 0)))
        metric("tributary_switch_up", "gauge", "Switch reachable with the pipeline loaded.", up)
        metric(
            "tributary_switch_entries", "gauge", "Table entries and multicast groups on the switch.", entries
        )
        metric(
            "tributary_switch_aggregated_packets_total",
            "counter",
            "INC contributions the switch added (inc_stats absorbed + completed).",
            agg,
        )
        metric("tributary_switch_inc_packets_total", "counter", "INC packets by outcome (inc_stats).", stats)
        pk, rc = [], []
        for j in jobs:
            if j.state != "active":
                continue
            c = self.job_counters(Plan.from_json(j.plan))
            labels: dict[str, str | int] = {"job": j.id, "tenant": j.tenant}
            pk.append((labels, c["packets"]))
            rc.append((labels, c["rounds_completed"]))
        metric("tributary_job_packets_total", "counter", "Contributions the job's switches aggregated.", pk)
        metric(
            "tributary_job_rounds_completed",
            "gauge",
            "Schedule rounds whose every clique produced a result.",
            rc,
        )
        metric("tributary_reconciles_total", "counter", "Reconcile passes.", [({}, self.reconciles)])
        return "\n".join(lines) + "\n"


def _admin_only(principal: Principal) -> None:
    if not principal.is_admin:
        raise Forbidden("only the admin manages tenants")


def _alloc_rows(plan: Plan) -> list[AllocationRow]:
    return [AllocationRow(plan.job, *row) for row in allocation_rows(plan)]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _stage_of(index: P4InfoIndex, entity: p4runtime_pb2.Entity) -> Stage:
    if entity.HasField("packet_replication_engine_entry"):
        return Stage.GROUP
    return {
        "inc_tenants": Stage.TENANT,
        "inc_children": Stage.CHILD,
        "inc_workers": Stage.DELIVERY,
    }.get(_kind_name(index, entity), Stage.ROUTE)


def _kind_name(index: P4InfoIndex, entity: p4runtime_pb2.Entity) -> str:
    """The short table name of an entry ("inc_tenants"), or "multicast_groups"."""
    if entity.HasField("packet_replication_engine_entry"):
        return "multicast_groups"
    for name, t in index.tables.items():
        if t.preamble.id == entity.table_entry.table_id:
            return name.rsplit(".", 1)[-1]
    return str(entity.table_entry.table_id)
