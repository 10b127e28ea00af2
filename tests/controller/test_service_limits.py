"""The service's limits and edges, on a real service process over real p4kit-switch processes: quotas,
the request-size limit, ids out of range, what a tenant may see of the switches and metrics, the
OpenAPI schema's errors and example, and a large job that does not hold up another tenant's."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.controller.service_fixtures import Service, Switches, switches_and_service

QUOTAS = ("--quota-jobs", "3", "--quota-rounds", "4", "--quota-slots", "12400", "--max-body", "65536")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Switches, Service]]:
    with switches_and_service(tmp_path_factory.mktemp("limits"), extra=QUOTAS) as env:
        yield env


@pytest.fixture(scope="module")
def admin(env: tuple[Switches, Service]) -> Iterator[httpx.Client]:
    with env[1].client() as c:
        yield c


def tenant(env: tuple[Switches, Service], admin: httpx.Client, name: str) -> httpx.Client:
    admin.delete(f"/tenants/{name}")
    r = admin.post("/tenants", json={"name": name})
    assert r.status_code == 201, r.text
    return env[1].client(r.json()["token"])


def test_quotas_refuse_with_the_numbers(env: tuple[Switches, Service], admin: httpx.Client) -> None:
    t = tenant(env, admin, "quota")
    assert t.get("/quotas").json() == {"jobs": 3, "slots": 12400, "rounds": 4}
    rounds = [[["TYO", "NYC"]], [["NYC", "LON"]]] * 3  # six rounds
    body = {"workers": ["TYOw1", "NYCw1", "LONw1"], "strategy": "core-cliques", "slots": 1}
    r = t.post("/jobs", json={**body, "schedule": {"mode": "explicit", "rounds": rounds}})
    assert r.status_code == 403 and "6 rounds" in r.json()["error"] and "quota is 4" in r.json()["error"], (
        r.text
    )
    # slots: 3 switches x 4096 = 12288 fit, one more job of 3 x 64 does not
    r = t.post("/jobs", json={"workers": ["TYOw1", "NYCw1", "LONw1"], "slots": 4096})
    assert r.status_code == 201, r.text
    big = r.json()["id"]
    small = {"workers": ["TYOw2", "NYCw2", "LONw2"], "slots": 64}
    r = t.post("/jobs", json={**small, "fallback": "none"})
    assert r.status_code in (403, 409), r.text  # the quota, or the switches' pools (both are full)
    # on the host path it holds no slots, so the slot quota has nothing to refuse
    r = t.post("/jobs", json=small)
    assert r.status_code == 201 and r.json()["path"] == "host", r.text
    assert t.delete(f"/jobs/{r.json()['id']}").status_code == 200
    assert t.delete(f"/jobs/{big}").status_code == 200
    ids = []
    for _ in range(3):
        r = t.post("/jobs", json={"workers": ["TYOw1", "NYCw1"], "slots": 8})
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    r = t.post("/jobs", json={"workers": ["TYOw1", "NYCw1"], "slots": 8})
    assert r.status_code == 403 and "holds 3 job(s), its quota is 3" in r.json()["error"], r.text
    for job in ids:
        assert t.delete(f"/jobs/{job}").status_code == 200


def test_oversized_bodies_get_413(env: tuple[Switches, Service], admin: httpx.Client) -> None:
    t = tenant(env, admin, "bulky")
    huge = {"workers": ["TYOw1"] * 1, "name": "x" * 10, "pad": "y" * 100_000}
    r = t.post("/jobs", json=huge)
    assert r.status_code == 413 and "larger than 65536 bytes" in r.json()["error"], r.text

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit counts what arrives
        yield b'{"workers": ["TYOw1"], "name": "'
        for _ in range(20):
            yield b"z" * 8192
        yield b'"}'

    r = t.post("/jobs", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "larger than" in r.json()["error"], r.text
    # and the service still serves
    assert t.get("/jobs").status_code == 200


@pytest.mark.parametrize(
    "job_id", ["0", "-1", "16385", str(2**63), str(2**64 + 5), "99999999999999999999999"]
)
def test_ids_out_of_range_are_never_a_500(
    env: tuple[Switches, Service], admin: httpx.Client, job_id: str
) -> None:
    t = env[1].client(admin.headers["authorization"].split()[1])
    for method, path, body in (
        ("GET", f"/jobs/{job_id}", None),
        ("DELETE", f"/jobs/{job_id}", None),
        ("POST", f"/jobs/{job_id}/reset", None),
        ("PUT", f"/jobs/{job_id}/schedule", {"schedule": {"mode": "auto"}}),
    ):
        r = t.request(method, path, json=body)
        assert r.status_code in (404, 422), (method, path, r.status_code, r.text)
        assert r.json()["error"]
    r = t.get("/jobs/16384")  # in range, but no such job
    assert r.status_code == 404 and r.json()["error"] == "no job 16384"


def test_a_tenant_sees_only_its_own(env: tuple[Switches, Service], admin: httpx.Client) -> None:
    a, b = tenant(env, admin, "seer"), tenant(env, admin, "hidden-owner")
    ja = a.post("/jobs", json={"workers": ["TYOw1", "NYCw1"], "slots": 4}).json()["id"]
    jb = b.post("/jobs", json={"workers": ["TYOw2", "LONw2"], "slots": 4}).json()["id"]
    try:
        mine = a.get("/switches").json()
        assert {s["name"] for s in mine} == {"TYO", "NYC", "LON"}
        for s in mine:
            assert "by_table" not in s and "inc_stats" not in s and "address" not in s, s
            assert s["jobs"] == ([ja] if s["name"] in ("TYO", "NYC") else []), s
        text = a.get("/metrics").text
        assert "hidden-owner" not in text and f'job="{jb}"' not in text
        assert f'tributary_job_packets_total{{job="{ja}",tenant="seer"}}' in text
        assert "tributary_tenants" not in text and "tributary_switch_inc_packets_total" not in text
        assert 'tributary_jobs{state="active"} 1' in text
        assert "hidden-owner" not in json.dumps(a.get("/jobs").json())
        # the admin sees all of it
        every = admin.get("/metrics").text
        assert "hidden-owner" in every and "tributary_switch_inc_packets_total" in every
        assert all("by_table" in s for s in admin.get("/switches").json())
    finally:
        a.delete(f"/jobs/{ja}")
        b.delete(f"/jobs/{jb}")


def test_openapi_documents_errors_and_its_example_works(
    env: tuple[Switches, Service], admin: httpx.Client
) -> None:
    schema = admin.get("/openapi.json").json()
    for path, ops in schema["paths"].items():
        for method, op in ops.items():
            if path == "/health":
                continue
            codes = set(op["responses"])
            assert {"401", "422"} <= codes, (method, path, codes)
            for code in codes - {"200", "201"}:
                ref = op["responses"][code]["content"]["application/json"]["schema"]["$ref"]
                assert ref.endswith("/ErrorBody"), (method, path, code)
    assert {"404"} <= set(schema["paths"]["/jobs/{job_id}"]["get"]["responses"])
    assert {"403", "409", "503"} <= set(schema["paths"]["/jobs"]["post"]["responses"])
    [example] = schema["components"]["schemas"]["JobCreate"]["examples"]
    t = tenant(env, admin, "example")
    r = t.post("/jobs", json=example)
    assert r.status_code == 201, r.text
    assert t.delete(f"/jobs/{r.json()['id']}").status_code == 200


def test_a_large_job_does_not_hold_up_another_tenants(
    env: tuple[Switches, Service], admin: httpx.Client
) -> None:
    """While one job's 4096 cells per switch are being reset, another tenant's small job goes in."""
    big, small = tenant(env, admin, "elephant"), tenant(env, admin, "mouse")
    answer: dict[str, httpx.Response] = {}

    def submit_big() -> None:
        answer["big"] = big.post("/jobs", json={"workers": ["TYOw1", "NYCw1", "LONw1"], "slots": 2048})

    thread = threading.Thread(target=submit_big)
    thread.start()
    deadline = time.monotonic() + 30
    seen = False
    while time.monotonic() < deadline and not seen and thread.is_alive():
        seen = any(j["state"] == "installing" for j in admin.get("/jobs").json())
        time.sleep(0.02)
    assert seen, "the large job was never seen installing"
    r = small.post("/jobs", json={"workers": ["TYOw2", "NYCw2"], "slots": 2})
    big_still_installing = thread.is_alive()
    thread.join(timeout=120)
    assert r.status_code == 201, r.text
    assert answer["big"].status_code == 201, answer["big"].text
    assert big_still_installing, "the small job was answered only after the large one was installed"
    assert small.delete(f"/jobs/{r.json()['id']}").status_code == 200
    assert big.delete(f"/jobs/{answer['big'].json()['id']}").status_code == 200


def test_a_full_table_is_a_409_with_the_switchs_reason(tmp_path: Path) -> None:
    """With the rounds quota lifted, a schedule of 1100 rounds exceeds inc_tenants (1024 entries per
    switch): the answer is 409 naming the full table, nothing stays installed, and the service serves on."""
    with (
        switches_and_service(tmp_path, extra=("--quota-rounds", "2000")) as (_switches, svc),
        svc.client() as admin,
    ):
        token = admin.post("/tenants", json={"name": "greedy"}).json()["token"]
        before = {s["name"]: s["entries"] for s in admin.get("/switches").json()}
        with svc.client(token) as t:
            rounds = [[["TYO", "NYC"]]] * 1100
            body = {"workers": ["TYOw1", "NYCw1"], "strategy": "core-cliques", "slots": 1}
            r = t.post("/jobs", json={**body, "schedule": {"mode": "explicit", "rounds": rounds}})
            assert r.status_code == 409, r.text
            assert "is full" in r.json()["error"] and "rolled back" in r.json()["error"], r.text
            assert t.get("/jobs").json() == []
            assert {s["name"]: s["entries"] for s in admin.get("/switches").json()} == before
            r = t.post("/jobs", json={"workers": ["TYOw1", "NYCw1"], "slots": 2})
            assert r.status_code == 201, r.text


def test_a_bad_content_length_is_a_400_and_the_database_is_private(env: tuple[Switches, Service]) -> None:
    import socket
    import stat

    host, port = env[1].url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(
            b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: lots\r\n\r\n{}"
        )
        answer = s.recv(4096).decode(errors="replace")
    assert answer.startswith("HTTP/1.1 400"), answer
    db = Path(env[0].dir) / "controller.db"
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
