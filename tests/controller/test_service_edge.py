"""Edge-INC jobs through the REST API of a real controller service over real p4kit-switch processes:
edge-all-to-all and edge-cliques (explicit and the optimiser's), what the job view says (trees and
groups per round, the stages' scaled memory and pacing, the specs of every process), the entries on the
switches, refusals, and DELETE removing all of it. Running the stages from these specs on the emulated
WAN is tests/topo/test_detach_mininet.py's."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.controller.service_fixtures import Service, Switches, switches_and_service

EDGE_TABLES = ("edge_mcast", "edge_hosts", "multicast_groups")
WORKERS = ["TYOw1", "NYCw1", "LONw1", "TYOw2"]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Switches, Service]]:
    with switches_and_service(tmp_path_factory.mktemp("edge-api")) as env:
        yield env


@pytest.fixture(scope="module")
def admin(env: tuple[Switches, Service]) -> Iterator[httpx.Client]:
    with env[1].client() as c:
        yield c


@pytest.fixture(scope="module")
def user(env: tuple[Switches, Service], admin: httpx.Client) -> Iterator[httpx.Client]:
    r = admin.post("/tenants", json={"name": "edgy"})
    assert r.status_code == 201, r.text
    with env[1].client(r.json()["token"]) as c:
        yield c


def edge_entries(admin: httpx.Client) -> dict[str, dict[str, int]]:
    return {
        s["name"]: {k: v for k, v in s["by_table"].items() if k in EDGE_TABLES}
        for s in admin.get("/switches").json()
    }


def test_all_to_all_job_installs_one_tree_per_source_and_delete_removes_it(
    admin: httpx.Client, user: httpx.Client
) -> None:
    before = edge_entries(admin)
    r = user.post(
        "/jobs",
        json={"workers": WORKERS, "strategy": "edge-all-to-all", "edge": {"memory": "4MB", "size": "16MB"}},
    )
    assert r.status_code == 201, r.text
    job = r.json()
    assert job["strategy"] == "edge-all-to-all" and job["rounds"] == 1 and job["state"] == "active"
    edge = job["edge"]
    # scaled by the links' 50 Mbit/s over the real 10 Gbit/s: 4 MB -> 20 kB = 78 accumulators, 16 MB ->
    # 80 kB = 312 chunks of 256 bytes
    assert edge["stage"]["scale"] == pytest.approx(0.005)
    assert edge["stage"]["accumulators"] == 78 and edge["stage"]["memory_bytes"] == 78 * 256
    assert edge["stage"]["chunks"] == 312 and edge["stage"]["wire_mbit"] == 50
    [rnd] = edge["rounds"]
    [clique] = rnd["cliques"]
    assert sorted(clique["members"]) == ["LON", "NYC", "TYO"]
    assert clique["rate_mbit"] > 0 and clique["gap_s"] > 0 and rnd["predicted_s"] > 0
    # one tree per source; on the full mesh a star: the source's switch replicates to the two others,
    # each receiving switch hands the stream to its edge host
    sources = {g["source"] for g in rnd["groups"]}
    assert sources == {"TYO", "NYC", "LON"}
    for g in rnd["groups"]:
        assert (len(g["next_switches"]) == 2) == (g["switch"] == g["source"])
    assert len({(g["switch"], g["multicast_group"]) for g in rnd["groups"]}) == len(rnd["groups"]) == 9
    # the specs: every site's stage, every worker's receiver (TYO's stage delivers to both TYO workers)
    sites = edge["sites"]
    assert set(sites) == {"TYO", "NYC", "LON"}
    assert len(sites["TYO"]["workers"]) == 2 and sites["TYO"]["memory_bytes"] == 78 * 256
    assert sites["TYO"]["epoch"] == job["epoch"] and sites["TYO"]["tenant"] == job["id"]
    [r1] = sites["NYC"]["rounds"]
    assert r1["gap_s"] == clique["gap_s"] and sorted(r1["members"]) == sorted(edge["site_ids"].values())
    receivers = {w["host"]: w for w in job["workers"]}
    assert set(receivers) == set(WORKERS)
    assert receivers["TYOw2"]["receiver"]["stage_ip"] == sites["TYO"]["ip"]
    assert receivers["TYOw2"]["receiver"]["rounds"] == [{"round": 1, "chunks": 312}]
    # on the switches: per site 3 trees' entries and groups, one rewrite to its edge host
    held = edge_entries(admin)
    for site in ("TYO", "NYC", "LON"):
        assert held[site]["edge_mcast"] - before[site].get("edge_mcast", 0) == 3
        assert held[site]["edge_hosts"] - before[site].get("edge_hosts", 0) == 1
    counters = user.get(f"/jobs/{job['id']}").json()["counters"]
    assert counters["packets"] == 0 and [r["round"] for r in counters["per_round"]] == [1]
    assert user.delete(f"/jobs/{job['id']}").status_code == 200
    assert edge_entries(admin) == before


def test_edge_cliques_explicit_and_automatic_schedules(admin: httpx.Client, user: httpx.Client) -> None:
    before = edge_entries(admin)
    rounds = [[["TYO", "NYC"]], [["NYC", "LON"]], [["TYO", "LON"]]]
    r = user.post(
        "/jobs",
        json={
            "workers": WORKERS,
            "strategy": "edge-cliques",
            "schedule": {"mode": "explicit", "rounds": rounds},
            "edge": {"memory": "256MB", "size": "8MB", "max_rate_mbit": 2},
        },
    )
    assert r.status_code == 201, r.text
    job = r.json()
    assert job["rounds"] == 3 and job["schedule"]["sites"] == rounds
    edge = job["edge"]
    assert edge["stage"]["wire_mbit"] == 2  # the cap, below the links' 50 Mbit/s
    assert [sorted(c["members"]) for r in edge["rounds"] for c in r["cliques"]] == [
        sorted(c[0]) for c in rounds
    ]
    # round 2's trees start at NYC and LON only; TYO takes part in rounds 1 and 3
    assert {g["source"] for g in edge["rounds"][1]["groups"]} == {"NYC", "LON"}
    assert [x["round"] for x in edge["sites"]["TYO"]["rounds"]] == [1, 3]
    auto = user.post(
        "/jobs",
        json={
            "workers": WORKERS,
            "strategy": "edge-cliques",
            "schedule": {"mode": "auto", "memory": "4MB", "size": "64MB"},
            "edge": {"max_rate_mbit": 5},
        },
    )
    assert auto.status_code == 201, auto.text
    a = auto.json()
    assert a["schedule"]["source"] and a["edge"]["stage"]["real_memory"] == "4MB"
    assert a["edge"]["stage"]["wire_mbit"] == 5
    assert a["schedule"]["exact_average"] is True and a["rounds"] == len(a["edge"]["rounds"]) >= 1
    # both jobs' groups are distinct on every switch
    groups = [
        (g["switch"], g["multicast_group"])
        for j in (job, a)
        for rr in j["edge"]["rounds"]
        for g in rr["groups"]
    ]
    assert len(groups) == len(set(groups))
    for j in (job, a):
        assert user.delete(f"/jobs/{j['id']}").status_code == 200
    assert edge_entries(admin) == before


def test_a_float32_edge_job_runs_an_exponent_round_before_each_sum(
    admin: httpx.Client, user: httpx.Client
) -> None:
    before = edge_entries(admin)
    r = user.post(
        "/jobs",
        json={
            "workers": WORKERS,
            "strategy": "edge-all-to-all",
            "format": "float32",
            "edge": {"size": "16MB"},
        },
    )
    assert r.status_code == 201, r.text
    job = r.json()
    edge = job["edge"]
    assert [x["kind"] for x in edge["rounds"]] == ["max", "sum"] and job["rounds"] == 2
    # both data-plane rounds have their trees; the exponent round is 312 / 64 -> 5 chunks
    assert {g["source"] for x in edge["rounds"] for g in x["groups"]} == {"TYO", "NYC", "LON"}
    assert edge["sites"]["TYO"]["format"] == "float32"
    assert [x["kind"] for x in edge["sites"]["TYO"]["rounds"]] == ["max", "sum"]
    [w] = [w for w in job["workers"] if w["host"] == "NYCw1"]
    assert w["receiver"]["rounds"] == [{"round": 2, "chunks": 312}] and w["receiver"]["format"] == "float32"
    assert 0 < edge["rounds"][0]["predicted_s"] < edge["rounds"][1]["predicted_s"]
    assert user.delete(f"/jobs/{job['id']}").status_code == 200
    assert edge_entries(admin) == before


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"strategy": "edge-cliques"}, 422, "needs a schedule"),
        ({"strategy": "edge-all-to-all", "schedule": {"mode": "auto"}}, 422, "takes no schedule"),
        ({"strategy": "core-tree", "edge": {"memory": "4MB"}}, 422, "no edge stages"),
        (
            {"strategy": "edge-cliques", "schedule": {"mode": "auto"}, "edge": {"memory": "1MB"}},
            422,
            "automatic schedule",
        ),
        ({"strategy": "edge-all-to-all", "edge": {"memory": "10kB"}}, 422, "less than one"),
        ({"strategy": "edge-all-to-all", "edge": {"size": "lots"}}, 422, "edge:"),
        ({"strategy": "edge-all-to-all", "workers": ["TYOw1", "TYOw2"]}, 422, "two sites"),
        ({"strategy": "edge-all-to-all", "edge": {"max_rate_mbit": 0}}, 422, "greater than 0"),
    ],
)
def test_bad_edge_jobs_are_refused_with_the_reason(
    admin: httpx.Client, user: httpx.Client, body: dict, status: int, words: str
) -> None:
    before = edge_entries(admin)
    r = user.post("/jobs", json={"workers": WORKERS, **body})
    assert r.status_code == status, r.text
    assert words in r.text
    assert edge_entries(admin) == before
