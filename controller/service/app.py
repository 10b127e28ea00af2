"""The REST API: a thin FastAPI layer over the JobManager (OpenAPI at /docs).

Every route authenticates (Authorization: Bearer <token>), turns the body into the core's types and
maps the core's errors to status codes with one handler, so the rules live in one place: the manager.
Every error, the framework's own included (unknown path, wrong method, a body over the size limit), is
`{"error": "<sentence>"}` with a 4xx/5xx status, and each route's OpenAPI entry lists the ones it gives.
"""

from __future__ import annotations

import copy
import logging
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Path, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from controller.service.access import admin_only
from controller.service.auth import Principal
from controller.service.bodylimit import DEFAULT_MAX_BODY, BodyLimit
from controller.service.errors import ServiceError
from controller.service.manager import JobManager
from controller.service.models import (
    ErrorBody,
    JobCreate,
    ScheduleReplace,
    TenantCreate,
    job_example,
    schedule_spec,
)
from edge.protocol import MAX_TENANT

DESCRIPTION = """In-network aggregation jobs on the WAN's P4 switches.

The admin (token from `TRIBUTARY_ADMIN_TOKEN` or the run's token file) creates tenants; each tenant gets
a bearer token once and sees only its own jobs. A job is a set of worker hosts and a strategy; the
controller plans its reduction trees (per round for rotating schedules), allocates slots and multicast
groups on every switch, and installs them over P4Runtime, all or nothing. Tenants have quotas (jobs,
slots, rounds per job). Every error is `{"error": "..."}`. See docs/api.md.
"""

log = logging.getLogger("tributary.controller")

bearer = HTTPBearer(auto_error=False, description="a tenant's token, or the admin token")

_WHY = {
    400: "a body that cannot be read at all (not UTF-8, a Content-Length that is not a number)",
    401: "no bearer token, or an unknown one",
    403: "not allowed for this caller, or over the tenant's quota",
    404: "no such job or tenant (another tenant's job is a 404 too)",
    409: "the switches lack room (cells, groups, ids), a name in use, or the job is being changed",
    413: "the request body is larger than the service accepts",
    422: "a malformed body or parameter, or a job that cannot be built (unknown host, bad schedule)",
    503: "a switch the request needs does not answer; nothing of the request stays installed",
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for the error statuses a route gives (400, 401, 413, 422 on every route);
    always JSON, also on a route whose answer is text."""
    body = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    return {
        c: {"model": ErrorBody, "description": _WHY[c], "content": body}
        for c in sorted({400, 401, 413, 422, *codes})
    }


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


def _allowed_methods(app: FastAPI, request: Request) -> list[str]:
    methods: set[str] = set()
    for route in app.routes:
        match, _ = route.matches(request.scope)
        if match != Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)


def principal(
    request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> Principal:
    """Who calls: the admin or a tenant, from the bearer token (401 without a known one)."""
    manager: JobManager = request.app.state.manager
    return manager.authenticate(creds.credentials if creds else None)


# module level: with postponed annotations FastAPI resolves these names in the module's globals
Caller = Annotated[Principal, Depends(principal)]
JobId = Annotated[int, Path(ge=1, le=MAX_TENANT, description=f"a job id, 1..{MAX_TENANT}")]
TenantId = Annotated[str, Path(min_length=1, max_length=64, description="the tenant's name")]


def create_app(manager: JobManager, max_body: int = DEFAULT_MAX_BODY) -> FastAPI:
    app = FastAPI(title="Tributary controller", version="2", description=DESCRIPTION)
    app.state.manager = manager
    app.add_middleware(BodyLimit, max_bytes=max_body)

    @app.exception_handler(ServiceError)
    async def _service_error(_request: Request, exc: ServiceError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return JSONResponse({"error": exc.message}, status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        detail = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in exc.errors()]
        return JSONResponse({"error": _error_message(exc), "detail": detail}, status_code=422)

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
        # a bug, not the caller's fault: said as such, in the same shape, with the details in the log
        log.exception("unexpected error", exc_info=exc)
        return JSONResponse(
            {"error": f"internal error ({type(exc).__name__}); the controller's log has the details"},
            status_code=500,
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = str(exc.detail)
        headers = dict(exc.headers or {})
        if exc.status_code == 400 and message == "There was an error parsing the body":
            message = "the body cannot be read: it is not UTF-8 JSON"
        if exc.status_code == 405:  # every method of the path, not only the first route's
            allowed = _allowed_methods(app, request)
            headers["Allow"] = ", ".join(allowed)
            message = f"{request.method} is not allowed here; the path takes {', '.join(allowed)}"
        return JSONResponse({"error": message}, status_code=exc.status_code, headers=headers or None)

    @app.get("/health", tags=["service"], summary="liveness (no token needed)")
    def health() -> dict:
        return {"ok": True}

    @app.get(
        "/topology", tags=["network"], summary="sites, hosts and links with RTT and rate", responses=errors()
    )
    def topology(_who: Caller) -> dict:
        return manager.topology_view()

    @app.get(
        "/switches",
        tags=["network"],
        summary="each switch: reachable, pipeline loaded, in sync (the admin: entries and counters too)",
        responses=errors(),
    )
    def switches(who: Caller) -> list[dict]:
        return manager.switches_view(who)

    @app.post(
        "/tenants",
        status_code=201,
        tags=["tenants"],
        summary="create a tenant (admin); its token is shown once",
        responses=errors(403, 409),
    )
    def create_tenant(body: TenantCreate, who: Caller, response: Response) -> dict:
        view, token = manager.create_tenant(who, body.name)
        response.headers["Location"] = f"/tenants/{view['id']}"
        return {**view, "token": token}

    @app.get("/tenants", tags=["tenants"], summary="list tenants (admin)", responses=errors(403))
    def list_tenants(who: Caller) -> list[dict]:
        return manager.list_tenants(who)

    @app.delete(
        "/tenants/{tenant_id}",
        tags=["tenants"],
        summary="delete a tenant and all its jobs (admin)",
        responses=errors(403, 404, 409),
    )
    def delete_tenant(tenant_id: TenantId, who: Caller) -> dict:
        return {"id": tenant_id, "deleted": True, "jobs_removed": manager.delete_tenant(who, tenant_id)}

    @app.post(
        "/jobs",
        status_code=201,
        tags=["jobs"],
        summary="plan, allocate and install a job",
        responses=errors(403, 409, 503),
    )
    async def create_job(body: JobCreate, who: Caller, response: Response) -> dict:
        view = await run_in_threadpool(manager.create_job, who, body.to_spec())
        response.headers["Location"] = f"/jobs/{view['id']}"
        return view

    @app.get("/jobs", tags=["jobs"], summary="your jobs (the admin sees all)", responses=errors())
    def list_jobs(who: Caller) -> list[dict]:
        return manager.list_jobs(who)

    @app.get(
        "/jobs/{job_id}",
        tags=["jobs"],
        summary="a job: state, trees per round, slots, groups, workers' parameters, counters",
        responses=errors(404),
    )
    def get_job(job_id: JobId, who: Caller, counters: bool = True) -> dict:
        return manager.get_job(who, job_id, counters)

    @app.delete(
        "/jobs/{job_id}",
        tags=["jobs"],
        summary="remove every entry of the job from the switches",
        responses=errors(404, 409),
    )
    def delete_job(job_id: JobId, who: Caller) -> dict:
        return manager.delete_job(who, job_id)

    @app.put(
        "/jobs/{job_id}/schedule",
        tags=["jobs"],
        summary="replace the schedule without stopping the job",
        responses=errors(403, 404, 409, 503),
    )
    async def replace_schedule(job_id: JobId, body: ScheduleReplace, who: Caller) -> dict:
        return await run_in_threadpool(
            manager.replace_schedule, who, job_id, schedule_spec(body.schedule), body.drain_s
        )

    @app.post(
        "/jobs/{job_id}/reset",
        tags=["jobs"],
        summary="zero the job's cells (workers restart at chunk 0)",
        responses=errors(404, 409, 503),
    )
    def reset_job(job_id: JobId, who: Caller) -> dict:
        return manager.reset_cells(who, job_id)

    @app.post(
        "/reconcile",
        tags=["service"],
        summary="compare every switch with the jobs and repair (admin)",
        responses=errors(403),
    )
    def reconcile(who: Caller) -> dict:
        admin_only(who, "reconciles")
        return manager.reconcile().switches

    @app.get("/quotas", tags=["service"], summary="the per-tenant limits", responses=errors())
    def quotas(_who: Caller) -> dict:
        return manager.quotas()

    @app.get(
        "/metrics",
        tags=["service"],
        summary="Prometheus text format (a tenant: its own jobs only)",
        response_class=PlainTextResponse,
        responses={
            200: {"content": {"text/plain": {"schema": {"type": "string"}}}, "description": "the metrics"},
            **errors(),
        },
    )
    def metrics(who: Caller) -> PlainTextResponse:
        return PlainTextResponse(manager.metrics(who), media_type="text/plain; version=0.0.4")

    def openapi() -> dict:
        """The generated schema, with a POST /jobs example made of this network's own worker hosts."""
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            firsts = [
                next(h.name for h in sw.hosts if h.role == "worker")
                for sw in manager.topology.fabric.switches
                if any(h.role == "worker" for h in sw.hosts)
            ]
            example = job_example(firsts)
            job = schema["components"]["schemas"]["JobCreate"]
            job["examples"] = [example]
            workers = job["properties"]["workers"]
            workers["examples"] = [copy.deepcopy(example["workers"])]
            # this network's worker hosts, each at most once: what the service accepts, said in the schema
            workers["items"]["enum"] = manager.topology.workers()
            workers["uniqueItems"] = True
            explicit = schema["components"]["schemas"].get("ExplicitSchedule")
            if explicit is not None:
                one_round = explicit["properties"]["rounds"]["items"]
                one_round["items"]["items"]["enum"] = manager.topology.sites
                one_round["contains"] = {"type": "array", "minItems": 2}  # something to average
            for code, answer in schema["paths"]["/metrics"]["get"]["responses"].items():
                keep = "text/plain" if code == "200" else "application/json"  # errors are JSON there too
                answer["content"] = {k: v for k, v in answer.get("content", {}).items() if k == keep}
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
