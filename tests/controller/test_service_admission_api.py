"""Admission through the REST API of a real service process over real p4kit-switch processes: four tenants
fill the switches, a fifth gets the host path (its view says so and carries what its workers run instead),
a refusal leaves nothing, DELETE frees the cells, and a restarted service restores every job as it was."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.controller.service_fixtures import Service, Switches, running_switches, start_service, stop
from topo.pipeline import build_pipeline

HOSTS = ["TYOw1", "TYOw2", "NYCw1", "NYCw2", "LONw1", "LONw2"]
JOB_TABLES = ("inc_tenants", "inc_children", "inc_workers", "multicast_groups")


@pytest.fixture(scope="module")
def switches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Switches]:
    tmp = tmp_path_factory.mktemp("admission-api")
    with running_switches(tmp, build_pipeline(tmp / "build")) as sw:
        yield sw


def new_tenant(svc: Service, name: str) -> httpx.Client:
    with svc.client() as admin:
        r = admin.post("/tenants", json={"name": name})
        assert r.status_code == 201, r.text
        return svc.client(r.json()["token"])


def job_entries(svc: Service) -> dict[str, int]:
    with svc.client() as admin:
        return {
            s["name"]: sum(v for k, v in s["by_table"].items() if k in JOB_TABLES)
            for s in admin.get("/switches").json()
        }


def test_a_fifth_tenant_on_full_switches_falls_back_to_the_host_path(switches: Switches, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "controller.db"
    svc = start_service(switches, db)
    try:
        tenants = [new_tenant(svc, f"t{i}") for i in range(1, 7)]
        jobs = []
        for t in tenants[:4]:  # 4 x 1024 slots = every one of the 8192 cells of each switch
            r = t.post("/jobs", json={"workers": HOSTS, "slots": 1024})
            assert r.status_code == 201 and r.json()["path"] == "switch" and r.json()["slots"] == 1024, r.text
            jobs.append(r.json()["id"])
        full = job_entries(svc)
        fifth = tenants[4]
        r = fifth.post("/jobs", json={"workers": HOSTS, "slots": 1024, "min_slots": 128})
        assert r.status_code == 201, r.text
        view = r.json()
        assert view["path"] == "host" and view["switches"] == [] and view["slots"] == 0
        assert view["admission"] == {
            "path": "host",
            "requested_slots": 1024,
            "granted_slots": 0,
            "min_slots": 128,
            "reason": view["admission"]["reason"],
        }
        assert "not even the minimum of 128 slots fits" in view["admission"]["reason"]
        spec = view["workers"][3]["spec"]
        assert spec["algorithm"] == "hierarchical" and spec["rank"] == 3 and len(spec["peers"]) == 6
        assert job_entries(svc) == full  # nothing written for it
        listed = {j["id"]: j["path"] for j in fifth.get("/jobs").json()}
        assert listed == {view["id"]: "host"}
        # no host path asked for: 409, nothing left; a minimum above the request: 422
        r = tenants[5].post("/jobs", json={"workers": HOSTS, "slots": 64, "fallback": "none"})
        assert r.status_code == 409 and "no host path" in r.json()["error"], r.text
        r = tenants[5].post("/jobs", json={"workers": HOSTS, "slots": 64, "min_slots": 65})
        assert r.status_code == 422 and "min_slots (65) must not exceed slots (64)" in r.json()["error"], (
            r.text
        )
        r = tenants[5].post("/jobs", json={"workers": HOSTS, "fallback": "switch"})
        assert r.status_code == 422 and "fallback" in r.json()["error"], r.text
        assert tenants[5].get("/jobs").json() == [] and job_entries(svc) == full
        # DELETE frees the cells: a job that asks for 2048 now gets the 1024 slots one tenant left
        assert tenants[0].delete(f"/jobs/{jobs[0]}").status_code == 200
        r = tenants[5].post("/jobs", json={"workers": HOSTS, "slots": 2048})
        assert r.status_code == 201 and r.json()["path"] == "switch" and r.json()["slots"] == 1024, r.text
        fewer = r.json()
        before = {j: c.get(f"/jobs/{j}", params={"counters": "false"}).json() for j, c in
                  ((view["id"], fifth), (fewer["id"], tenants[5]))}  # fmt: skip
        entries = job_entries(svc)
    finally:
        stop(svc.proc)
    svc = start_service(switches, db, port=int(svc.url.rsplit(":", 1)[1]))  # the same store
    try:
        for j, c in ((view["id"], fifth), (fewer["id"], tenants[5])):
            after = c.get(f"/jobs/{j}", params={"counters": "false"}).json()
            for key in ("path", "slots", "admission", "host", "workers", "switches", "state"):
                assert after.get(key) == before[j].get(key), key
        assert job_entries(svc) == entries
        for t in tenants:
            for j in t.get("/jobs").json():
                assert t.delete(f"/jobs/{j['id']}").status_code == 200
        assert all(n == 0 for n in job_entries(svc).values())
    finally:
        stop(svc.proc)
