"""The service core behind the REST API: one object that wires the parts together, independent of HTTP
(the REST layer only translates), so tests and tools drive it directly.

The parts, one concern each: access (tokens, who sees which job), tenants, lifecycle (jobs from request
to switch entries and back), reconcile (switches made to match the store, and watched), views (what a
job or a switch looks like to its caller), metrics (Prometheus text) and quotas. They share one
`ServiceState` (controller/service/state.py), whose lock orders decisions, not switch writes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from controller.inc.allocation import INC_CELLS, Allocator
from controller.service import access, views
from controller.service.auth import ADMIN, Principal
from controller.service.lifecycle import Jobs
from controller.service.metrics import metrics_text
from controller.service.plans import JobSpec, ScheduleSpec
from controller.service.quotas import Quotas
from controller.service.reconcile import Reconciler, ReconcileReport
from controller.service.state import ServiceState
from controller.service.store import Store
from controller.service.switches import SwitchPool
from controller.service.tenants import Tenants
from controller.service.topology import Topology

log = logging.getLogger("tributary.controller")

__all__ = ["JobManager", "ReconcileReport"]


class JobManager:
    def __init__(
        self,
        topology: Topology,
        pool: SwitchPool,
        store: Store,
        admin_token: str,
        cells_per_switch: int = INC_CELLS,
        quotas: Quotas | None = None,
    ) -> None:
        self.state = ServiceState(
            topology, pool, store, Allocator(topology.sites, cells_per_switch), quotas or Quotas()
        )
        self._admin_token = admin_token
        self.jobs = Jobs(self.state)
        self.tenants = Tenants(self.state, self.jobs.forget)
        self.reconciler = Reconciler(self.state, self.jobs.forget)
        self.started = time.time()

    # the parts tests and tools reach for
    @property
    def topology(self) -> Topology:
        return self.state.topology

    @property
    def pool(self) -> SwitchPool:
        return self.state.pool

    @property
    def store(self) -> Store:
        return self.state.store

    @property
    def allocator(self) -> Allocator:
        return self.state.allocator

    @property
    def index(self):  # type: ignore[no-untyped-def]
        return self.state.index

    # --- life cycle -----------------------------------------------------------------------------------

    def start(self, monitor_interval_s: float | None = 2.0) -> ReconcileReport:
        """Load what the store promises, make the switches match it, and watch them from then on."""
        self.reconciler.load()
        report = self.reconciler.reconcile()
        if monitor_interval_s:
            self.reconciler.watch(monitor_interval_s)
        return report

    def close(self) -> None:
        self.reconciler.stop()
        self.state.pool.close()

    # --- access and tenants -----------------------------------------------------------------------------

    def authenticate(self, token: str | None) -> Principal:
        return access.authenticate(self.state.store, self._admin_token, token)

    def create_tenant(self, principal: Principal, name: str) -> tuple[dict, str]:
        return self.tenants.create(principal, name)

    def list_tenants(self, principal: Principal) -> list[dict]:
        return self.tenants.list(principal)

    def delete_tenant(self, principal: Principal, name: str) -> int:
        return self.tenants.delete(principal, name)

    # --- jobs -----------------------------------------------------------------------------------------

    def create_job(
        self, principal: Principal, spec: JobSpec, progress: Callable[[str], None] | None = None
    ) -> dict:
        row = self.jobs.create(principal, spec, progress)
        return views.job_view(self.state, row, counters=False)

    def get_job(self, principal: Principal, job_id: int, counters: bool = True) -> dict:
        return views.job_view(self.state, access.visible_job(self.state.store, principal, job_id), counters)

    def list_jobs(self, principal: Principal) -> list[dict]:
        rows = self.state.store.jobs(None if principal.is_admin else principal.tenant)
        return [views.summary(self.state, r) for r in rows]

    def delete_job(self, principal: Principal, job_id: int) -> dict:
        errors = self.jobs.delete(principal, job_id)
        return {"id": job_id, "removed": True, "warnings": errors}

    def reset_cells(self, principal: Principal, job_id: int) -> dict:
        cells, epoch = self.jobs.reset(principal, job_id)
        return {"id": job_id, "cells_reset": cells, "epoch": epoch}

    def replace_schedule(
        self, principal: Principal, job_id: int, schedule: ScheduleSpec, drain_s: float = 0.0
    ) -> dict:
        errors = self.jobs.replace_schedule(principal, job_id, schedule, drain_s)
        view = views.job_view(
            self.state, access.visible_job(self.state.store, principal, job_id), counters=False
        )
        view["warnings"] = errors
        return view

    # --- switches, reconcile, views ------------------------------------------------------------------------

    def reconcile(self, only: str | None = None) -> ReconcileReport:
        return self.reconciler.reconcile(only)

    def switches_view(self, principal: Principal | None = None) -> list[dict]:
        return views.switches_view(self.state, principal or ADMIN)

    def topology_view(self) -> dict:
        return views.topology_view(self.state)

    def metrics(self, principal: Principal | None = None) -> str:
        return metrics_text(self.state, principal or ADMIN, self.reconciler.passes)

    def quotas(self) -> dict[str, int]:
        return self.state.quotas.as_dict()
