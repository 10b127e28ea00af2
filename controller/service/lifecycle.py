"""A job's life: planned, allocated and recorded under the lock, written to the switches outside it,
then switched on in the store; deleted, reset and given a new schedule the same way.

Invariants kept:
- a job in the store in state `active` has all its entries on every reachable switch (reconcile
  repairs what a restarted switch lost);
- a failed installation leaves nothing: the writer undoes its own writes, the allocation is released,
  and the job row (written first, as `installing`) is deleted; a controller that dies in between finds
  the `installing` row on restart and removes the job;
- a schedule replacement installs the new rounds (at new round numbers) before the store switches to
  the new plan, and removes the old rounds only after;
- a job being written (`installing`, `replacing`) cannot be deleted or replaced until the write ends
  (409), and its entries are in `state.in_flight` meanwhile, so reconcile leaves them alone.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from controller.inc.jobs import HOST_ALGORITHM, admit, default_min_slots, new_epoch
from controller.inc.trees import TreeError
from controller.p4rt import P4RuntimeError
from controller.service import quotas
from controller.service.access import visible_job
from controller.service.auth import Principal
from controller.service.edge_jobs import build_edge_plan
from controller.service.entities import ApplyError, Item, Stage, Writer, job_items, resets_for
from controller.service.errors import BadRequest, Conflict, Forbidden, NoRoom, Unauthorized, Unavailable
from controller.service.plans import (
    EDGE_STRATEGIES,
    JobSpec,
    Plan,
    ScheduleChoice,
    ScheduleSpec,
    allocation_rows,
    build_plan,
    check_workers,
    choose_schedule,
    host_plan,
    next_round_base,
)
from controller.service.state import ServiceState
from controller.service.store import AllocationRow, JobRow
from edge.protocol import MAX_TENANT

log = logging.getLogger("tributary.controller")


class Jobs:
    def __init__(self, state: ServiceState) -> None:
        self.state = state

    # --- create -----------------------------------------------------------------------------------

    def create(
        self, principal: Principal, spec: JobSpec, progress: Callable[[str], None] | None = None
    ) -> JobRow:
        if principal.is_admin:
            raise Forbidden("jobs belong to tenants: create a tenant (POST /tenants) and use its token")
        st, tenant = self.state, principal.tenant or ""
        quotas.check_job_count(st.quotas, tenant, st.store.jobs(tenant))
        self._check_requested_rounds(spec)
        by_site = check_workers(st.topology, spec.workers)
        sites = [s for s in st.topology.sites if s in by_site]
        if not spec.name:
            spec.name = f"{spec.strategy}-{len(spec.workers)}w"
        choice = choose_schedule(st.topology, spec, sites, progress)  # the optimiser: outside the lock
        quotas.check_rounds(st.quotas, len(choice.rounds))
        with st.lock:
            if st.store.tenant(tenant) is None:  # deleted while this request was being planned
                raise Unauthorized(f"tenant {tenant} no longer exists")
            mine = st.store.jobs(tenant)
            quotas.check_job_count(st.quotas, tenant, mine)
            job_id = st.store.next_job_id(MAX_TENANT)
            if job_id is None:
                raise Conflict(f"all {MAX_TENANT} job ids are in use")
            if spec.strategy in EDGE_STRATEGIES:
                plan = build_edge_plan(st.topology, st.allocator, job_id, spec, choice, new_epoch())
                plan.path = "edge"
            else:
                plan = self._admit(job_id, spec, choice, new_epoch())
            try:
                quotas.check_slots(st.quotas, tenant, quotas.tenant_slots(mine), plan)
                items = job_items(st.index, plan)
                now = time.time()
                row = JobRow(
                    job_id, tenant, spec.name, "installing", spec.to_json(), plan.to_json(), now, now
                )
                st.store.add_job(row, _alloc_rows(plan))
            except BaseException:
                self._release(plan)
                raise
            ticket = st.hold(items)
        try:
            self._write(plan, items)
        except BaseException:
            with st.lock:
                self._release(plan)
                st.store.delete_job(job_id)
            st.release_hold(ticket)
            raise
        with st.lock:
            st.store.update_job(job_id, state="active")
        st.release_hold(ticket)
        log.info("job %d of %s installed: %d round(s)", job_id, tenant, len(plan.rounds))
        return visible_job(st.store, principal, job_id)

    def _admit(self, job_id: int, spec: JobSpec, choice: ScheduleChoice, epoch: int) -> Plan:
        """Plan an INC job on shared switches (controller.inc.jobs.admit): the slots it asks for, fewer
        where other jobs hold the cells (halved down to its minimum), and below that the host path (a
        core-tree job whose fallback is "host": nothing allocated) or a 409. A rotating schedule has no
        host path, so a core-cliques job is refused there. Call with the lock held."""
        st = self.state
        others = [Plan.from_json(j.plan) for j in st.store.jobs()]
        if spec.strategy not in ("core-tree", "core-cliques"):
            return build_plan(st.topology, st.allocator, job_id, spec, choice, epoch, others=others)
        fallback = spec.fallback if spec.strategy == "core-tree" else "none"
        try:
            admission = admit(
                lambda slots: build_plan(
                    st.topology, st.allocator, job_id, replace(spec, slots=slots), choice, epoch
                ),
                spec.slots,
                spec.min_slots,
                fallback,
                no_room=(NoRoom,),
            )
        except TreeError as exc:
            raise BadRequest(str(exc)) from None
        except NoRoom as exc:
            floor = spec.min_slots or default_min_slots(spec.slots)
            why = (
                "a rotating schedule has no host path"
                if spec.strategy == "core-cliques"
                else 'the job asked for no host path (fallback "none")'
            )
            raise NoRoom(f"{exc.message}; not even {floor} slots fit and {why}") from None
        if admission.plan is None:
            plan = host_plan(
                st.topology, job_id, spec, choice, epoch, HOST_ALGORITHM, admission.reason, others
            )
        else:
            plan = admission.plan
        plan.requested_slots, plan.min_slots = admission.requested_slots, admission.min_slots
        plan.reason = admission.reason
        return plan

    def _check_requested_rounds(self, spec: JobSpec) -> None:
        """An explicit schedule over the quota is refused before any site of it is looked at."""
        if spec.schedule is not None and spec.schedule.mode == "explicit":
            quotas.check_rounds(self.state.quotas, len(spec.schedule.rounds or []))

    def _write(self, plan: Plan, items: list[Item]) -> None:
        if not items:
            return
        self.need_switches({i.switch for i in items})
        try:
            Writer(self.state.pool.live()).insert(items, resets_for(self.state.index, plan.switch_rounds))
        except ApplyError as exc:
            message = f"installation failed and was rolled back, nothing of the job stays: {exc}"
            if _tables_full(exc):  # the switch answered: it has no room (a 409), it is not unavailable
                raise Conflict(message) from None
            raise Unavailable(message) from None

    # --- delete and reset ----------------------------------------------------------------------------

    def delete(self, principal: Principal, job_id: int) -> list[str]:
        st = self.state
        visible_job(st.store, principal, job_id)
        with st.lock:
            job = visible_job(st.store, principal, job_id)
            _not_busy(job)
            return self.forget(job)

    def reset(self, principal: Principal, job_id: int) -> tuple[int, int]:
        """A new generation of the job: a fresh epoch in every tenant entry (from then on the switches
        drop what the old generation's stragglers send), then its cells zeroed, for workers that start
        numbering chunks from 0 again. Returns (cells reset, the new epoch)."""
        st = self.state
        with st.lock:
            job = visible_job(st.store, principal, job_id)
            _not_busy(job)
            old = Plan.from_json(job.plan)
            plan = old.with_epoch(new_epoch())
            tenants = [i for i in job_items(st.index, plan) if i.stage == Stage.TENANT]
            self.need_switches({i.switch for i in tenants})
            writer = Writer(st.pool.live())
            try:
                writer.modify(tenants)
                writer.insert([], resets_for(st.index, plan.switch_rounds))
            except (ApplyError, P4RuntimeError) as exc:
                # the stored plan still names the old epoch: the watcher's next pass makes the switches
                # agree with it again
                for name in {sr.switch for sr in plan.switch_rounds}:
                    if name in st.pool.status:
                        st.pool.status[name].in_sync = False
                raise Unavailable(f"resetting the job failed (its epoch stays {old.epoch}): {exc}") from None
            st.store.update_job(job_id, plan=plan.to_json())
        log.info("job %d reset: new epoch, %d switch round(s) zeroed", job_id, len(plan.switch_rounds))
        return sum(sr.cells.cells for sr in plan.switch_rounds), plan.epoch

    # --- replace the schedule ------------------------------------------------------------------------

    def replace_schedule(
        self, principal: Principal, job_id: int, schedule: ScheduleSpec, drain_s: float = 0.0
    ) -> list[str]:
        """New rounds first (at fresh round numbers), then the store, then the old rounds go (after
        `drain_s` seconds, so that workers still in an old round can finish it). Returns warnings."""
        st = self.state
        job = visible_job(st.store, principal, job_id)
        spec = JobSpec.from_json(job.spec)
        if spec.strategy != "core-cliques":
            hint = (
                " (an edge job's stages run its rounds from the specs: create a new job)" if spec.edge else ""
            )
            raise Conflict(
                f"job {job_id} uses {spec.strategy}: only core-cliques jobs have a replaceable schedule{hint}"
            )
        spec.schedule = schedule
        self._check_requested_rounds(spec)
        by_site = check_workers(st.topology, spec.workers)
        sites = [s for s in st.topology.sites if s in by_site]
        choice: ScheduleChoice = choose_schedule(st.topology, spec, sites)
        quotas.check_rounds(st.quotas, len(choice.rounds))
        with st.lock:
            job = visible_job(st.store, principal, job_id)
            _not_busy(job)
            old = Plan.from_json(job.plan)
            base = next_round_base(old, len(choice.rounds))
            # the window the job was granted at admission (fewer slots than asked, perhaps), not more
            granted = replace(spec, slots=old.nslots or spec.slots)
            new = build_plan(st.topology, st.allocator, job_id, granted, choice, old.epoch, round_base=base)
            try:
                held = quotas.tenant_slots(st.store.jobs(job.tenant))
                quotas.check_slots(st.quotas, job.tenant, held, new, replacing=old)
                old_items = job_items(st.index, old)
                new_items = job_items(st.index, new)
            except BaseException:
                self._release(new)
                raise
            old_keys = {(i.switch, i.key) for i in old_items}
            fresh = [i for i in new_items if (i.switch, i.key) not in old_keys]
            st.store.update_job(job_id, state="replacing")
            ticket = st.hold(new_items)
        try:
            self.need_switches({sr.switch for sr in new.switch_rounds})
            Writer(st.pool.live()).insert(fresh, resets_for(st.index, new.switch_rounds))
        except BaseException as exc:
            with st.lock:
                self._release(new)
                st.store.update_job(job_id, state="active")
            st.release_hold(ticket)
            if isinstance(exc, ApplyError):
                raise Unavailable(
                    f"the new schedule could not be installed (the old one runs on): {exc}"
                ) from None
            raise
        new_keys = {(i.switch, i.key) for i in new_items}
        stale = [i for i in old_items if (i.switch, i.key) not in new_keys]
        with st.lock:
            st.store.update_job(
                job_id, state="active", spec=spec.to_json(), plan=new.to_json(), allocations=_alloc_rows(new)
            )
            draining = st.hold(stale)  # reconcile leaves the old rounds to the drain
        st.release_hold(ticket)
        log.info(
            "job %d: schedule replaced, rounds %s -> %s", job_id, old.round_numbers(), new.round_numbers()
        )
        if drain_s > 0:
            timer = threading.Timer(drain_s, self._retire, args=(old, stale, draining))
            timer.daemon = True
            timer.start()
            return []
        return self._retire(old, stale, draining)

    def _retire(self, old: Plan, stale: list[Item], ticket: int) -> list[str]:
        """Remove a replaced schedule's entries and free its resources. (Should the controller stop
        before a delayed retirement, the entries belong to no job and reconcile removes them.)"""
        st = self.state
        with st.lock:
            errors = Writer(st.pool.live()).delete(stale)
            self._release(old)
            st.in_flight.pop(ticket, None)
        return errors

    # --- shared -----------------------------------------------------------------------------------------

    def need_switches(self, names: set[str]) -> None:
        pool = self.state.pool
        unknown = sorted(n for n in names if n not in pool.status)
        if unknown:
            raise Unavailable(f"switch(es) {', '.join(unknown)} are not part of this network")
        down = sorted(n for n in names if pool.connect(n) is None)
        if down:
            why = "; ".join(pool.status[n].last_error for n in down)
            raise Unavailable(f"switch(es) {', '.join(down)} unreachable: {why}")

    def _release(self, plan: Plan) -> None:
        for owner in plan.owners():
            self.state.allocator.release(owner)

    def forget(self, job: JobRow) -> list[str]:
        """Remove a job's entries (best effort: a down switch loses them anyway), resources and row.
        Call with the lock held."""
        st = self.state
        st.store.update_job(job.id, state="removing")
        plan = Plan.from_json(job.plan)
        errors = Writer(st.pool.live()).delete(
            [i for i in job_items(st.index, plan) if i.switch in st.pool.status]
        )
        self._release(plan)
        st.store.delete_job(job.id)
        log.info("job %d removed", job.id)
        return errors


def _tables_full(exc: ApplyError) -> bool:
    """True when every update the switch refused was refused for want of room (RESOURCE_EXHAUSTED)."""
    cause = exc.__cause__
    updates = cause.updates if isinstance(cause, P4RuntimeError) else []
    return bool(updates) and all(u.code_name == "RESOURCE_EXHAUSTED" for u in updates)


def _not_busy(job: JobRow) -> None:
    if job.state in ("installing", "replacing", "removing"):
        raise Conflict(f"job {job.id} is {job.state}: try again when that is done")


def _alloc_rows(plan: Plan) -> list[AllocationRow]:
    return [AllocationRow(plan.job, *row) for row in allocation_rows(plan)]
