"""The REST API of a real controller service process over real p4kit-switch processes, through httpx:
tenants and tokens, isolation, validation messages, 20 concurrent jobs, deletion, metrics."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.controller.service_fixtures import Service, Switches, switches_and_service

JOB_TABLES = ("inc_tenants", "inc_children", "inc_workers", "multicast_groups")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Switches, Service]]:
    with switches_and_service(tmp_path_factory.mktemp("api")) as env:
        yield env


@pytest.fixture(scope="module")
def admin(env: tuple[Switches, Service]) -> Iterator[httpx.Client]:
    with env[1].client() as c:
        yield c


def tenant(env: tuple[Switches, Service], admin: httpx.Client, name: str) -> httpx.Client:
    r = admin.post("/tenants", json={"name": name})
    assert r.status_code == 201, r.text
    assert r.headers["location"] == f"/tenants/{name}"
    return env[1].client(r.json()["token"])


def job_entries(admin: httpx.Client) -> dict[str, int]:
    return {
        s["name"]: sum(v for k, v in s["by_table"].items() if k in JOB_TABLES)
        for s in admin.get("/switches").json()
    }


def test_topology_and_switches(admin: httpx.Client) -> None:
    topo = admin.get("/topology").json()
    assert [s["name"] for s in topo["sites"]] == ["TYO", "NYC", "LON"]
    assert {"TYOw1", "NYCw2", "LONe"} <= {h["name"] for h in topo["hosts"]}
    link = next(x for x in topo["links"] if {x["a"], x["b"]} == {"TYO", "NYC"})
    assert link["rtt_ms"] > 100 and link["rate_mbit"] == 50
    switches = admin.get("/switches").json()
    assert all(s["reachable"] and s["pipeline_loaded"] and s["entries"] > 0 for s in switches)
    assert admin.get("/docs").status_code == 200
    assert "/jobs/{job_id}/schedule" in admin.get("/openapi.json").json()["paths"]


def test_tokens_and_isolation(env: tuple[Switches, Service], admin: httpx.Client) -> None:
    with env[1].client(None) as anon:
        r = anon.get("/jobs")
        assert r.status_code == 401 and "bearer token" in r.json()["error"]
    with env[1].client("trib_not-a-token") as bad:
        assert bad.get("/jobs").status_code == 401
    a, b = tenant(env, admin, "alpha"), tenant(env, admin, "beta")
    assert a.post("/tenants", json={"name": "gamma"}).status_code == 403
    assert admin.post("/tenants", json={"name": "alpha"}).status_code == 409
    r = a.post("/jobs", json={"workers": ["TYOw1", "NYCw1", "LONw1"], "slots": 16})
    assert r.status_code == 201, r.text
    job = r.json()["id"]
    assert r.headers["location"] == f"/jobs/{job}"
    assert a.get(f"/jobs/{job}").json()["state"] == "active"
    assert b.get(f"/jobs/{job}").status_code == 404
    assert b.delete(f"/jobs/{job}").status_code == 404
    assert b.put(f"/jobs/{job}/schedule", json={"schedule": {"mode": "auto"}}).status_code == 404
    assert b.get("/jobs").json() == []
    assert [j["id"] for j in a.get("/jobs").json()] == [job]
    assert job in [j["id"] for j in admin.get("/jobs").json()]
    tenants = {t["id"]: t["jobs"] for t in admin.get("/tenants").json()}
    assert tenants["alpha"] == 1 and tenants["beta"] == 0
    assert "token" not in str(admin.get("/tenants").json())
    # deleting a tenant removes its jobs from the switches
    assert admin.delete("/tenants/alpha").json()["jobs_removed"] == 1
    assert a.get("/jobs").status_code == 401
    assert all(n == 0 for n in job_entries(admin).values())
    admin.delete("/tenants/beta")


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"workers": ["TYOw1", "SYDw1"]}, 422, "unknown host 'SYDw1'"),
        ({"workers": ["TYOw1", "TYOw1"]}, 422, "listed twice: TYOw1"),
        ({"workers": ["TYOe", "NYCw1"]}, 422, "is a edge host"),
        ({"workers": ["TYOw1", "NYCw1"], "strategy": "core-cliques"}, 422, "needs a schedule"),
        (
            {
                "workers": ["TYOw1", "NYCw1"],
                "strategy": "core-cliques",
                "schedule": {"mode": "explicit", "rounds": [[["TYO", "PAR"]]]},
            },
            422,
            "unknown site 'PAR'",
        ),
        (
            {
                "workers": ["TYOw1", "NYCw1"],
                "strategy": "core-cliques",
                "schedule": {"mode": "explicit", "rounds": [[["TYO", "LON"]]]},
            },
            422,
            "site LON has none of the job's workers",
        ),
        ({"workers": ["TYOw1"], "slots": 0}, 422, "slots: Input should be greater than or equal to 1"),
        ({"workers": ["TYOw1"], "strategy": "star"}, 422, "strategy"),
        ({"workers": ["TYOw1"], "colour": "red"}, 422, "colour: Extra inputs are not permitted"),
    ],
)
def test_bad_bodies_get_a_clear_4xx(
    env: tuple[Switches, Service], admin: httpx.Client, body: dict, status: int, message: str
) -> None:
    token = _token_of(env, admin, "delta")
    with env[1].client(token) as c:
        r = c.post("/jobs", json=body)
        assert r.status_code == status, r.text
        assert message in r.json()["error"], r.json()
    assert r.json()["error"]


_TOKENS: dict[str, str] = {}


def _token_of(env: tuple[Switches, Service], admin: httpx.Client, name: str) -> str:
    if name not in _TOKENS:
        admin.delete(f"/tenants/{name}")
        _TOKENS[name] = admin.post("/tenants", json={"name": name}).json()["token"]
    return _TOKENS[name]


def test_twenty_concurrent_jobs_get_disjoint_slots(
    env: tuple[Switches, Service], admin: httpx.Client
) -> None:
    token = _token_of(env, admin, "crowd")
    workers = ["TYOw1", "TYOw2", "NYCw1", "NYCw2", "LONw1", "LONw2"]

    def submit(i: int) -> httpx.Response:
        body = {
            "name": f"job{i}",
            "workers": [workers[i % 6], workers[(i + 2) % 6], workers[(i + 4) % 6]],
            "slots": 64,
        }
        with env[1].client(token) as c:
            return c.post("/jobs", json=body)

    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(submit, range(20)))
    assert [r.status_code for r in answers] == [201] * 20, [r.text for r in answers if r.status_code != 201]
    ids = [r.json()["id"] for r in answers]
    assert len(set(ids)) == 20
    with env[1].client(token) as c:
        cells: dict[str, list[tuple[int, int]]] = {}
        groups: dict[str, list[int]] = {}
        for job in ids:
            for s in c.get(f"/jobs/{job}", params={"counters": "false"}).json()["switches"]:
                cells.setdefault(s["switch"], []).append(tuple(s["cells"]))
                groups.setdefault(s["switch"], []).append(s["multicast_group"])
        for sw, ranges in cells.items():
            ranges.sort()
            assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges)), (sw, ranges)
            assert len(set(groups[sw])) == len(groups[sw])
        # the switches hold exactly one tenant entry per job and switch
        per_switch = {s["name"]: s["by_table"].get("inc_tenants", 0) for s in admin.get("/switches").json()}
        assert per_switch == {sw: len(r) for sw, r in cells.items()}
        # no room for a pool-sized job now: 409 and nothing installed
        big = {"workers": ["TYOw1", "NYCw1"], "slots": 4096}
        r = c.post("/jobs", json={**big, "min_slots": 4096, "fallback": "none"})
        assert r.status_code == 409 and "free INC cells" in r.json()["error"], r.text
        # with a smaller minimum it gets what is left: fewer slots
        r = c.post("/jobs", json=big)
        got = r.json()
        assert r.status_code == 201 and got["path"] == "switch" and 1024 <= got["slots"] < 4096, r.text
        assert (
            got["admission"]["requested_slots"] == 4096 and "of the 4096 slots" in got["admission"]["reason"]
        )
        assert c.delete(f"/jobs/{got['id']}").status_code == 200
        metrics = admin.get("/metrics").text
        assert 'tributary_jobs{state="active"} 20' in metrics
        assert "tributary_switch_entries{switch=" in metrics
        assert "tributary_switch_aggregated_packets_total{switch=" in metrics
        assert "tributary_job_rounds_completed{" in metrics
        with ThreadPoolExecutor(max_workers=5) as pool:
            deleted = list(pool.map(lambda j: c.delete(f"/jobs/{j}").status_code, ids))
        assert deleted == [200] * 20
    assert all(n == 0 for n in job_entries(admin).values())


def test_core_cliques_auto_schedule_and_replacement(
    env: tuple[Switches, Service], admin: httpx.Client
) -> None:
    with env[1].client(_token_of(env, admin, "rot")) as c:
        body = {
            "workers": ["TYOw1", "NYCw1", "LONw1"],
            "strategy": "core-cliques",
            "slots": 8,
            "schedule": {
                "mode": "explicit",
                "rounds": [[["TYO", "NYC"]], [["NYC", "LON"]], [["LON", "TYO"]]],
            },
        }
        r = c.post("/jobs", json=body)
        assert r.status_code == 201, r.text
        job = r.json()
        assert [len(t["cliques"]) for t in job["trees"]] == [1, 1, 1]
        r = c.put(
            f"/jobs/{job['id']}/schedule",
            json={"schedule": {"mode": "auto", "memory": "4MB", "size": "64MB"}},
        )
        assert r.status_code == 200, r.text
        new = r.json()
        assert new["schedule"]["source"] == "all-to-all" and new["schedule"]["exact_average"] is True
        assert [t["round"] for t in new["trees"]] == [3]
        shown = c.get(f"/jobs/{job['id']}").json()
        assert shown["counters"]["packets"] == 0 and len(shown["counters"]["per_switch_round"]) == 3
        r = c.put(
            f"/jobs/{job['id']}/schedule",
            json={"schedule": {"mode": "explicit", "rounds": [[["TYO", "SIN"]]]}},
        )
        assert r.status_code == 422 and "unknown site 'SIN'" in r.json()["error"]
        assert c.delete(f"/jobs/{job['id']}").status_code == 200
        assert c.get(f"/jobs/{job['id']}").status_code == 404


def test_ring_baseline_installs_nothing(env: tuple[Switches, Service], admin: httpx.Client) -> None:
    with env[1].client(_token_of(env, admin, "ringer")) as c:
        body = {"workers": ["TYOw1", "NYCw1", "LONw1"], "strategy": "ring-baseline", "format": "float32"}
        r = c.post("/jobs", json=body)
        assert r.status_code == 201, r.text
        job = r.json()
        assert (
            job["ring"] == ["TYOw1", "NYCw1", "LONw1"]
            and job["switches"] == []
            and job["format"] == "float32"
        )
        assert all(n == 0 for n in job_entries(admin).values())
        assert c.delete(f"/jobs/{job['id']}").status_code == 200


def test_health_needs_no_token(env: tuple[Switches, Service], tmp_path: Path) -> None:
    with env[1].client(None) as anon:
        assert anon.get("/health").json() == {"ok": True}
        assert anon.get("/metrics").status_code == 401
