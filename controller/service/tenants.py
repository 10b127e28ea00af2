"""Tenants: created and deleted by the admin; a tenant's token is shown once and stored as a hash."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from controller.service import auth
from controller.service.access import admin_only
from controller.service.auth import Principal
from controller.service.errors import BadRequest, Conflict, NotFound
from controller.service.state import ServiceState
from controller.service.store import JobRow

log = logging.getLogger("tributary.controller")

TENANT_NAME = re.compile(r"^[a-z][a-z0-9-]{0,31}$")


class Tenants:
    def __init__(self, state: ServiceState, forget_job: Callable[[JobRow], list[str]]) -> None:
        self.state = state
        self._forget_job = forget_job  # removes one job from the switches and the store (lock held)

    def create(self, principal: Principal, name: str) -> tuple[dict, str]:
        admin_only(principal)
        if not TENANT_NAME.match(name):
            raise BadRequest(
                f"tenant name {name!r}: use 1-32 lower-case letters, digits and '-', starting with a letter"
            )
        with self.state.lock:
            if self.state.store.tenant(name) is not None:
                raise Conflict(f"tenant {name!r} exists")
            token = auth.new_token()
            row = self.state.store.add_tenant(name, auth.token_hash(token))
        log.info("tenant %s created", name)
        return {"id": row.id, "created": row.created, "jobs": 0}, token

    def list(self, principal: Principal) -> list[dict]:
        admin_only(principal)
        counts: dict[str, int] = {}
        for j in self.state.store.jobs():
            counts[j.tenant] = counts.get(j.tenant, 0) + 1
        return [
            {"id": t.id, "created": t.created, "jobs": counts.get(t.id, 0)}
            for t in self.state.store.tenants()
        ]

    def delete(self, principal: Principal, name: str) -> int:
        """Removes the tenant's jobs from the switches, then the tenant; returns the jobs removed."""
        admin_only(principal)
        with self.state.lock:
            if self.state.store.tenant(name) is None:
                raise NotFound(f"no tenant {name!r}")
            jobs = self.state.store.jobs(name)
            busy = [j.id for j in jobs if j.state not in ("active",)]
            if busy:
                raise Conflict(f"job(s) {busy} of tenant {name} are being changed: try again in a moment")
            for job in jobs:
                self._forget_job(job)
            self.state.store.delete_tenant(name)
        log.info("tenant %s deleted with %d job(s)", name, len(jobs))
        return len(jobs)
