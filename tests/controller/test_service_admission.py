"""Admission on shared switches in the service core (JobManager, real p4kit-switch processes, a real SQLite
store): a job that other tenants' jobs leave too few cells gets fewer slots, below its minimum the host
path (nothing on the switches, the view says how to run the host allreduce instead) or a refusal with
nothing allocated; deleting frees what a job holds; a restarted controller restores all of it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.service.auth import ADMIN, Principal
from controller.service.errors import BadRequest, Conflict
from controller.service.manager import JobManager
from controller.service.plans import JobSpec, ScheduleSpec
from controller.service.store import Store
from controller.service.switches import SwitchPool
from tests.controller.service_fixtures import Switches, running_switches
from topo.pipeline import build_pipeline

CELLS = 512  # per switch: four jobs of 64 slots (128 cells each) fill it
HOSTS = ["TYOw1", "TYOw2", "NYCw1", "NYCw2", "LONw1", "LONw2"]
TENANTS = [Principal(f"t{i}") for i in range(1, 7)]
JOB_TABLES = ("inc_tenants", "inc_children", "inc_workers", "multicast_groups")


@pytest.fixture(scope="module")
def switches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Switches]:
    tmp = tmp_path_factory.mktemp("admission")
    with running_switches(tmp, build_pipeline(tmp / "build")) as sw:
        yield sw


def manager(switches: Switches, db: Path) -> JobManager:
    store = Store(db)
    m = JobManager(
        switches.topology, SwitchPool(switches.topology, switches.pipeline), store, "a" * 32, CELLS
    )
    m.start(monitor_interval_s=None)
    for p in TENANTS:
        if store.tenant(p.tenant or "") is None:
            store.add_tenant(p.tenant or "", f"hash-{p.tenant}")
    return m


def job_entries(m: JobManager) -> int:
    return sum(v for row in m.switches_view() for k, v in row.get("by_table", {}).items() if k in JOB_TABLES)


def free_cells(m: JobManager) -> dict[str, int]:
    return {name: res.free_cells() for name, res in m.allocator.switches.items()}


def fill(m: JobManager) -> list[dict]:
    """Four tenants' jobs of 64 slots over every site: no cell left on any switch."""
    views = [m.create_job(TENANTS[i], JobSpec(HOSTS, slots=64)) for i in range(4)]
    assert all(v["path"] == "switch" and v["slots"] == 64 for v in views)
    assert free_cells(m) == {"TYO": 0, "NYC": 0, "LON": 0}
    return views


def test_a_fifth_job_on_full_switches_runs_on_the_host_path(switches: Switches, tmp_path: Path) -> None:
    m = manager(switches, tmp_path / "db")
    try:
        fill(m)
        entries = job_entries(m)
        view = m.create_job(TENANTS[4], JobSpec(HOSTS, slots=64))
        assert view["state"] == "active" and view["path"] == "host"
        adm = view["admission"]
        assert adm["requested_slots"] == 64 and adm["granted_slots"] == 0 and adm["min_slots"] == 16
        assert "not even the minimum of 16 slots fits" in adm["reason"]
        assert view["switches"] == [] and view["trees"] == [] and view["slots"] == 0
        # nothing held on the switches: no cells, no group, no table entry
        assert free_cells(m) == {"TYO": 0, "NYC": 0, "LON": 0}
        assert job_entries(m) == entries
        assert not any(owner[0] == view["id"] for r in m.allocator.switches.values() for owner in r.used)
        # what the workers need to run the hierarchical host allreduce instead (edge.runner's spec)
        assert view["host"]["algorithm"] == "hierarchical"
        ranks = [w["spec"]["rank"] for w in view["workers"]]
        assert ranks == list(range(6)) and [w["host"] for w in view["workers"]] == HOSTS
        peers = view["workers"][0]["spec"]["peers"]
        assert [p["site"] for p in peers] == ["TYO", "TYO", "NYC", "NYC", "LON", "LON"]
        assert all(p["ip"].startswith("10.") for p in peers)
        # a second host-path job on the same hosts gets TCP ports of its own
        other = m.create_job(TENANTS[5], JobSpec(HOSTS, slots=8))
        a, b = view["host"]["port"], other["host"]["port"]
        assert other["path"] == "host" and (b >= a + 6 or a >= b + 6)
        summary = {j["id"]: j["path"] for j in m.list_jobs(ADMIN)}
        assert summary[view["id"]] == "host"
    finally:
        m.close()


def test_fewer_slots_then_refusal_with_nothing_allocated(switches: Switches, tmp_path: Path) -> None:
    m = manager(switches, tmp_path / "db")
    try:
        for i in range(3):  # 384 of the 512 cells held: 64 slots left
            m.create_job(TENANTS[i], JobSpec(HOSTS, slots=64))
        view = m.create_job(TENANTS[3], JobSpec(HOSTS, slots=256, min_slots=32))
        adm = view["admission"]
        assert view["path"] == "switch" and view["slots"] == 64  # 256 -> 128 -> 64
        assert (
            adm["requested_slots"] == 256 and adm["granted_slots"] == 64 and "64 of the 256" in adm["reason"]
        )
        assert all(s["slots"] == 64 for s in view["switches"])
        assert all(w["spec"]["nslots"] == 64 for w in view["workers"])  # the window the workers are told
        entries, jobs = job_entries(m), len(m.store.jobs())
        # full now: fallback "none" is refused (409), nothing allocated, no job left behind
        with pytest.raises(Conflict, match="not even 16 slots fit and the job asked for no host path"):
            m.create_job(TENANTS[4], JobSpec(HOSTS, slots=64, fallback="none"))
        # a rotating schedule has no host path: refused too
        rounds = ScheduleSpec("explicit", rounds=[[["TYO", "NYC"]], [["NYC", "LON"]]])
        with pytest.raises(Conflict, match="a rotating schedule has no host path"):
            m.create_job(TENANTS[4], JobSpec(HOSTS, strategy="core-cliques", slots=64, schedule=rounds))
        assert free_cells(m) == {"TYO": 0, "NYC": 0, "LON": 0}
        assert job_entries(m) == entries and len(m.store.jobs()) == jobs
        with pytest.raises(BadRequest, match="min_slots"):
            m.create_job(TENANTS[4], JobSpec(HOSTS, slots=8, min_slots=9))
        # DELETE frees what the job holds: the next one gets its whole request again
        m.delete_job(TENANTS[3], view["id"])
        assert free_cells(m) == {"TYO": 128, "NYC": 128, "LON": 128}
        again = m.create_job(TENANTS[4], JobSpec(HOSTS, slots=64))
        assert again["path"] == "switch" and again["slots"] == 64 and again["admission"]["reason"] == ""
    finally:
        m.close()


def test_a_restarted_controller_restores_admitted_jobs(switches: Switches, tmp_path: Path) -> None:
    m = manager(switches, tmp_path / "db")
    try:
        for i in range(3):
            m.create_job(TENANTS[i], JobSpec(HOSTS, slots=64))
        fewer = m.create_job(TENANTS[3], JobSpec(HOSTS, slots=128))
        host = m.create_job(TENANTS[4], JobSpec(HOSTS, slots=64))
        assert (fewer["path"], fewer["slots"], host["path"]) == ("switch", 64, "host")
        entries = job_entries(m)
    finally:
        m.close()
    m = manager(switches, tmp_path / "db")  # a new controller on the same store
    try:
        keys = ("path", "slots", "admission", "host", "workers", "switches")
        for before in (fewer, host):
            after = m.get_job(TENANTS[3 if before is fewer else 4], before["id"], counters=False)
            assert {k: after.get(k) for k in keys} == {k: before.get(k) for k in keys}
        assert free_cells(m) == {"TYO": 0, "NYC": 0, "LON": 0} and job_entries(m) == entries
        # the restored host-path job's ports stay its own
        third = m.create_job(TENANTS[5], JobSpec(HOSTS[:2], slots=8))
        assert third["path"] == "host" and third["host"]["port"] >= host["host"]["port"] + 6
        for p in (TENANTS[4], TENANTS[5]):  # deleting host-path jobs touches no switch
            for j in m.list_jobs(p):
                m.delete_job(p, j["id"])
        assert job_entries(m) == entries
    finally:
        for p in TENANTS:
            for j in m.list_jobs(p):
                m.delete_job(p, j["id"])
        m.close()
