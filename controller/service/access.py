"""Who may do what: bearer tokens to principals, and which jobs a principal may see.

A tenant sees only its own jobs; another tenant's job, and any id that is not a job id at all (0, a
negative number, 2^63 or more), is a 404 as if it did not exist, so ids reveal nothing and no id reaches
SQLite's 64-bit integers.
"""

from __future__ import annotations

from controller.service import auth
from controller.service.auth import ADMIN, Principal
from controller.service.errors import Forbidden, NotFound, Unauthorized
from controller.service.store import JobRow, Store
from edge.protocol import MAX_TENANT


def authenticate(store: Store, admin_token: str, token: str | None) -> Principal:
    if not token:
        raise Unauthorized("missing bearer token (Authorization: Bearer <token>)")
    if auth.same_token(token, admin_token):
        return ADMIN
    row = store.tenant_by_token_hash(auth.token_hash(token))
    if row is None:
        raise Unauthorized("unknown token")
    return Principal(row.id)


def admin_only(principal: Principal, what: str = "manages tenants") -> None:
    if not principal.is_admin:
        raise Forbidden(f"only the admin {what}")


def valid_job_id(job_id: int) -> bool:
    return 0 < job_id <= MAX_TENANT


def visible_job(store: Store, principal: Principal, job_id: int) -> JobRow:
    job = store.job(job_id) if valid_job_id(job_id) else None
    if job is None or not (principal.is_admin or job.tenant == principal.tenant):
        raise NotFound(f"no job {job_id}")
    return job
