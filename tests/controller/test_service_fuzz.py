"""The REST API fuzzed with schemathesis: requests generated from the service's own OpenAPI schema (valid
and invalid bodies, parameters, ids) against the real app, a real SQLite store and real p4kit-switch
processes. No request may get a 5xx other than a 503 for a switch that is down (none is here), every
answer's status must be one the schema documents, and every error must be a JSON `{"error": ...}`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, status_code_conformance

from controller.service.app import create_app
from controller.service.manager import JobManager
from controller.service.plans import JobSpec
from controller.service.quotas import Quotas
from controller.service.store import Store
from controller.service.switches import SwitchPool
from tests.controller.service_fixtures import ADMIN_TOKEN, Switches, running_switches
from topo.pipeline import build_pipeline

pytestmark = pytest.mark.slow

EXAMPLES = 20  # per operation and mode: 28 x 20 requests, one to three minutes on this machine


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[JobManager, str]]:
    tmp: Path = tmp_path_factory.mktemp("fuzz")
    with running_switches(tmp, build_pipeline(tmp / "build")) as sw:
        yield from _manager(sw, tmp)


def _manager(sw: Switches, tmp: Path) -> Iterator[tuple[JobManager, str]]:
    store = Store(tmp / "controller.db")
    m = JobManager(
        sw.topology, SwitchPool(sw.topology, sw.pipeline), store, ADMIN_TOKEN, quotas=Quotas(jobs=4)
    )
    m.start(monitor_interval_s=None)
    _, token = m.create_tenant(m.authenticate(ADMIN_TOKEN), "fuzzer")
    tenant = m.authenticate(token)
    for workers in (["TYOw1", "NYCw1"], ["NYCw2", "LONw2"]):  # ids 1 and 2: the fuzzer's boundary values
        m.create_job(tenant, JobSpec(workers, slots=4))
    try:
        yield m, token
    finally:
        m.close()
        store.close()


@pytest.fixture(scope="module")
def api(service: tuple[JobManager, str]) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_asgi("/openapi.json", create_app(service[0]))


@pytest.fixture(scope="module")
def tenant_token(service: tuple[JobManager, str]) -> str:
    return service[1]


OPERATIONS = [
    ("GET", "/topology"),
    ("GET", "/switches"),
    ("POST", "/tenants"),
    ("GET", "/tenants"),
    ("DELETE", "/tenants/{tenant_id}"),
    ("POST", "/jobs"),
    ("GET", "/jobs"),
    ("GET", "/jobs/{job_id}"),
    ("DELETE", "/jobs/{job_id}"),
    ("PUT", "/jobs/{job_id}/schedule"),
    ("POST", "/jobs/{job_id}/reset"),
    ("POST", "/reconcile"),
    ("GET", "/quotas"),
    ("GET", "/metrics"),
]
MODES = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]


def test_the_schema_lists_every_operation(api: schemathesis.BaseSchema) -> None:
    listed = {(op.ok().method.upper(), op.ok().path) for op in api.get_all_operations()}
    assert listed == {*OPERATIONS, ("GET", "/health")}


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize(("method", "path"), OPERATIONS)
def test_no_request_gets_a_server_error(
    api: schemathesis.BaseSchema, tenant_token: str, method: str, path: str, mode: GenerationMode
) -> None:
    operation = api[path][method]
    # tenant routes as the tenant (so jobs get created, read, changed and deleted), admin routes as admin
    token = ADMIN_TOKEN if path.startswith(("/tenants", "/reconcile")) else tenant_token

    @given(case=operation.as_strategy(mode))
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def check(case: schemathesis.Case) -> None:
        response = case.call(headers={"Authorization": f"Bearer {token}"})
        case.validate_response(
            response, checks=[not_a_server_error, status_code_conformance, content_type_conformance]
        )
        if response.status_code >= 400:
            assert isinstance(response.json().get("error"), str) and response.json()["error"], response.text

    check()
