"""The REST API: a thin FastAPI layer over the JobManager (OpenAPI at /docs).

Every route authenticates (Authorization: Bearer <token>), turns the body into the core's types and
maps the core's errors to status codes with one handler, so the rules live in one place: the manager.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, FastAPI, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from controller.service.auth import Principal
from controller.service.errors import ServiceError
from controller.service.manager import JobManager
from controller.service.models import JobCreate, ScheduleReplace, TenantCreate, schedule_spec

DESCRIPTION = """In-network aggregation jobs on the WAN's P4 switches.

The admin (token from `TRIBUTARY_ADMIN_TOKEN` or the run's token file) creates tenants; each tenant gets
a bearer token once and sees only its own jobs. A job is a set of worker hosts and a strategy; the
controller plans its reduction trees (per round for rotating schedules), allocates slots and multicast
groups on every switch, and installs them over P4Runtime, all or nothing. See docs/api.md.
"""

bearer = HTTPBearer(auto_error=False, description="a tenant's token, or the admin token")


def _error_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        if err.get("type") == "json_invalid":
            parts.append("the body is not valid JSON")
            continue
        loc = ".".join(str(x) for x in err.get("loc", ()) if x not in ("body",))
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts) or "invalid request"


def principal(
    request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> Principal:
    """Who calls: the admin or a tenant, from the bearer token (401 without a known one)."""
    manager: JobManager = request.app.state.manager
    return manager.authenticate(creds.credentials if creds else None)


# module level: with postponed annotations FastAPI resolves these names in the module's globals
Caller = Annotated[Principal, Depends(principal)]


def create_app(manager: JobManager) -> FastAPI:
    app = FastAPI(title="Tributary controller", version="1", description=DESCRIPTION)
    app.state.manager = manager

    @app.exception_handler(ServiceError)
    async def _service_error(_request: Request, exc: ServiceError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return JSONResponse({"error": exc.message}, status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        detail = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in exc.errors()]
        return JSONResponse({"error": _error_message(exc), "detail": detail}, status_code=422)

    @app.get("/health", tags=["service"], summary="liveness (no token needed)")
    def health() -> dict:
        return {"ok": True}

    @app.get("/topology", tags=["network"], summary="sites, hosts and links with RTT and rate")
    def topology(_who: Caller) -> dict:
        return manager.topology_view()

    @app.get("/switches", tags=["network"], summary="each switch: reachable, pipeline loaded, entries")
    def switches(_who: Caller) -> list[dict]:
        return manager.switches_view()

    @app.post(
        "/tenants",
        status_code=201,
        tags=["tenants"],
        summary="create a tenant (admin); its token is shown once",
    )
    def create_tenant(body: TenantCreate, who: Caller, response: Response) -> dict:
        view, token = manager.create_tenant(who, body.name)
        response.headers["Location"] = f"/tenants/{view['id']}"
        return {**view, "token": token}

    @app.get("/tenants", tags=["tenants"], summary="list tenants (admin)")
    def list_tenants(who: Caller) -> list[dict]:
        return manager.list_tenants(who)

    @app.delete("/tenants/{tenant_id}", tags=["tenants"], summary="delete a tenant and all its jobs (admin)")
    def delete_tenant(tenant_id: str, who: Caller) -> dict:
        return {"id": tenant_id, "deleted": True, "jobs_removed": manager.delete_tenant(who, tenant_id)}

    @app.post("/jobs", status_code=201, tags=["jobs"], summary="plan, allocate and install a job")
    async def create_job(body: JobCreate, who: Caller, response: Response) -> dict:
        view = await run_in_threadpool(manager.create_job, who, body.to_spec())
        response.headers["Location"] = f"/jobs/{view['id']}"
        return view

    @app.get("/jobs", tags=["jobs"], summary="your jobs (the admin sees all)")
    def list_jobs(who: Caller) -> list[dict]:
        return manager.list_jobs(who)

    @app.get("/jobs/{job_id}", tags=["jobs"], summary="a job: trees per round, slots, groups, counters")
    def get_job(job_id: int, who: Caller, counters: bool = True) -> dict:
        return manager.get_job(who, job_id, counters)

    @app.delete("/jobs/{job_id}", tags=["jobs"], summary="remove every entry of the job from the switches")
    def delete_job(job_id: int, who: Caller) -> dict:
        return manager.delete_job(who, job_id)

    @app.put(
        "/jobs/{job_id}/schedule", tags=["jobs"], summary="replace the schedule without stopping the job"
    )
    def replace_schedule(job_id: int, body: ScheduleReplace, who: Caller) -> dict:
        return manager.replace_schedule(who, job_id, schedule_spec(body.schedule), body.drain_s)

    @app.post(
        "/jobs/{job_id}/reset", tags=["jobs"], summary="zero the job's cells (workers restart at chunk 0)"
    )
    def reset_job(job_id: int, who: Caller) -> dict:
        return manager.reset_cells(who, job_id)

    @app.post("/reconcile", tags=["service"], summary="compare every switch with the jobs and repair (admin)")
    def reconcile(who: Caller) -> dict:
        if not who.is_admin:
            from controller.service.errors import Forbidden

            raise Forbidden("only the admin reconciles")
        return manager.reconcile().switches

    @app.get("/metrics", tags=["service"], summary="Prometheus text format", response_class=PlainTextResponse)
    def metrics(_who: Caller) -> str:
        return manager.metrics()

    return app
