"""Restarts with real processes: the controller restarted on its database keeps jobs and entries and
repairs drift; a restarted switch is re-provisioned; a failed installation leaves nothing; a schedule is
replaced without a moment in which the job has no round installed."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from p4.v1 import p4runtime_pb2_grpc

from controller.p4rt import P4InfoIndex, SwitchConnection
from controller.provision import Pipeline
from tests.controller.service_fixtures import Service, Switches, running_switches, start_service, stop
from topo.pipeline import build_pipeline

JOB_TABLES = ("inc_tenants", "inc_children", "inc_workers", "multicast_groups")
# set_config of an entry no job owns
STRAY = {
    "base": 0,
    "nslots": 1,
    "fan_in": 1,
    "is_root": 0,
    "parent_port": 0,
    "mcast_grp": 0,
    "repair_grp": 0,
    "epoch": 7,
}
STRAY["switch_ip"] = "10.0.1.254"


@pytest.fixture(scope="module")
def switches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Switches]:
    tmp = tmp_path_factory.mktemp("restart")
    pipeline: Pipeline = build_pipeline(tmp / "build")
    with running_switches(tmp, pipeline) as sw:
        yield sw


def reader(switches: Switches, name: str) -> SwitchConnection:
    """A read-only P4Runtime client (reads need no arbitration, so it never disturbs the primary)."""
    sw = switches.topology.fabric.switch(name)
    conn = SwitchConnection(name, sw.grpc_addr, sw.device_id)
    conn._channel = grpc.insecure_channel(sw.grpc_addr)
    conn._stub = p4runtime_pb2_grpc.P4RuntimeStub(conn._channel)
    return conn


def tenant_rounds(switches: Switches, conn: SwitchConnection, job: int) -> set[int]:
    index = P4InfoIndex(switches.pipeline.p4info)
    out = set()
    for e in conn.read([index.table_entry("inc_tenants")]):
        m = {f.field_id: int.from_bytes(f.exact.value, "big") for f in e.table_entry.match}
        if m[1] == job:
            out.add(m[2])
    return out


def job_entries(admin: httpx.Client) -> dict[str, dict[str, int]]:
    return {
        s["name"]: {k: v for k, v in s.get("by_table", {}).items() if k in JOB_TABLES}
        for s in admin.get("/switches").json()
    }


def new_tenant(svc: Service, name: str) -> httpx.Client:
    with svc.client() as admin:
        r = admin.post("/tenants", json={"name": name})
        assert r.status_code == 201, r.text
        return svc.client(r.json()["token"])


def wait_for(get, done, timeout: float):  # type: ignore[no-untyped-def]
    """Poll `get()` until `done(value)` or the timeout; returns the last value."""
    deadline = time.monotonic() + timeout
    value = get()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(0.3)
        value = get()
    return value


def test_controller_restart_keeps_jobs_and_repairs_the_switches(switches: Switches, tmp_path: Path) -> None:
    db = tmp_path / "controller.db"
    svc = start_service(switches, db)
    try:
        t = new_tenant(svc, "keep")
        job = t.post("/jobs", json={"workers": ["TYOw1", "NYCw1", "LONw2"], "slots": 16}).json()["id"]
        with svc.client() as admin:
            before = job_entries(admin)
    finally:
        stop(svc.proc)
    # while the controller is down: one switch loses a job entry, another gains a stray one
    index = P4InfoIndex(switches.pipeline.p4info)
    with SwitchConnection("LON", switches.topology.fabric.switch("LON").grpc_addr, 3, (5, 0)) as lon:
        lon.delete([e for e in lon.read([index.table_entry("inc_workers")])][:1])
    with SwitchConnection("TYO", switches.topology.fabric.switch("TYO").grpc_addr, 1, (5, 0)) as tyo:
        tyo.insert(
            [
                index.table_entry(
                    "inc_tenants",
                    {"hdr.inc.tenant": 777, "hdr.inc.round": 0},
                    "set_config",
                    {**STRAY, "is_root": 1},
                )
            ]
        )
    svc = start_service(switches, db, port=int(svc.url.rsplit(":", 1)[1]))  # same address
    try:
        with svc.client() as admin:
            assert job_entries(admin) == before
        assert t.get(f"/jobs/{job}").json()["state"] == "active"  # the tenant's token still works
        assert t.delete(f"/jobs/{job}").status_code == 200
        with svc.client() as admin:
            assert all(v == {} for v in job_entries(admin).values())
    finally:
        stop(svc.proc)


def test_restarted_switch_is_reprovisioned(switches: Switches, tmp_path: Path) -> None:
    svc = start_service(switches, tmp_path / "controller.db")
    try:
        t = new_tenant(svc, "phoenix")
        job = t.post("/jobs", json={"workers": ["TYOw2", "NYCw2", "LONw1"], "slots": 16}).json()["id"]
        with svc.client() as admin:
            before = {s["name"]: s["entries"] for s in admin.get("/switches").json()}
            switches.kill("NYC")
            # until it is back and repaired, the job reads as degraded, naming the switch
            view = wait_for(lambda: t.get(f"/jobs/{job}", params={"counters": "false"}).json(),
                            lambda v: v["state"] == "degraded", 15)  # fmt: skip
            assert view["degraded_switches"] == ["NYC"], view
            assert [j["state"] for j in t.get("/jobs").json()] == ["degraded"]
            assert 'tributary_jobs{state="degraded"} 1' in admin.get("/metrics").text
            switches.start("NYC")  # back without a pipeline, as after a crash
            nyc = wait_for(
                lambda: next(s for s in admin.get("/switches").json() if s["name"] == "NYC"),
                lambda n: n.get("pipeline_loaded") and n.get("entries") == before["NYC"],
                60,
            )
            assert nyc["pipeline_loaded"] and nyc["entries"] == before["NYC"], nyc
            assert nyc["reprovisioned"] >= 1
            view = wait_for(lambda: t.get(f"/jobs/{job}", params={"counters": "false"}).json(),
                            lambda v: v["state"] == "active", 15)  # fmt: skip
            assert view["state"] == "active" and "degraded_switches" not in view, view
        assert t.delete(f"/jobs/{job}").status_code == 200
    finally:
        stop(svc.proc)


def test_failed_installation_leaves_nothing(switches: Switches, tmp_path: Path) -> None:
    svc = start_service(switches, tmp_path / "controller.db")
    try:
        t = new_tenant(svc, "unlucky")
        index = P4InfoIndex(switches.pipeline.p4info)
        # a foreign entry where the next job's last write goes (its tenant entry on LON): taking
        # primary for a moment, then handing it back to the service
        with SwitchConnection("LON", switches.topology.fabric.switch("LON").grpc_addr, 3, (5, 0)) as lon:
            lon.insert(
                [
                    index.table_entry(
                        "inc_tenants",
                        {"hdr.inc.tenant": 1, "hdr.inc.round": 0},
                        "set_config",
                        STRAY,
                    )
                ]
            )
        time.sleep(0.5)
        r = t.post("/jobs", json={"workers": ["TYOw1", "NYCw1", "LONw1"], "slots": 16})
        assert r.status_code == 503 and "rolled back" in r.json()["error"], r.text
        with svc.client() as admin:
            entries = job_entries(admin)
            assert entries["TYO"] == {} and entries["NYC"] == {}, entries
            assert t.get("/jobs").json() == []
            admin.post("/reconcile")  # the foreign entry belongs to no job
            assert all(v == {} for v in job_entries(admin).values())
        r = t.post("/jobs", json={"workers": ["TYOw1", "NYCw1", "LONw1"], "slots": 16})
        assert r.status_code == 201  # the slots of the failed attempt were released
        t.delete(f"/jobs/{r.json()['id']}")
    finally:
        stop(svc.proc)


def test_schedule_replaced_while_the_job_is_installed(switches: Switches, tmp_path: Path) -> None:
    """A reader polls the switches throughout the replacement: the job always has a round installed on
    every switch of its schedules, and ends with exactly the new rounds."""
    svc = start_service(switches, tmp_path / "controller.db")
    try:
        t = new_tenant(svc, "rotor")
        body = {
            "workers": ["TYOw1", "NYCw1", "LONw1"],
            "strategy": "core-cliques",
            "slots": 32,
            "schedule": {"mode": "explicit", "rounds": [[["TYO", "NYC", "LON"]], [["NYC", "LON"]]]},
        }
        job = t.post("/jobs", json=body).json()["id"]
        conns = {n: reader(switches, n) for n in ("NYC", "LON")}
        seen: list[dict[str, set[int]]] = []
        stop_flag = threading.Event()

        def poll() -> None:
            while not stop_flag.is_set():
                seen.append({n: tenant_rounds(switches, c, job) for n, c in conns.items()})

        th = threading.Thread(target=poll)
        th.start()
        new = {"mode": "explicit", "rounds": [[["NYC", "LON"]], [["TYO", "NYC", "LON"]], [["TYO", "LON"]]]}
        r = t.put(f"/jobs/{job}/schedule", json={"schedule": new})
        time.sleep(0.3)
        stop_flag.set()
        th.join()
        assert r.status_code == 200, r.text
        assert [x["round"] for x in r.json()["trees"]] == [2, 3, 4]
        assert len(seen) > 2
        assert all(s["NYC"] and s["LON"] for s in seen), "a moment with no round of the job installed"
        assert seen[0]["LON"] == {0, 1} and seen[-1]["LON"] == {2, 3, 4}
        assert t.delete(f"/jobs/{job}").status_code == 200
    finally:
        stop(svc.proc)


def test_a_stopped_switch_costs_seconds_not_a_hang(switches: Switches, tmp_path: Path) -> None:
    """A switch that listens but does not answer (SIGSTOP): the job view answers within the views'
    timeout, names the switch, reads degraded; once the switch runs again the job is active again."""
    import os
    import signal

    svc = start_service(switches, tmp_path / "controller.db")
    try:
        t = new_tenant(svc, "frozen")
        job = t.post("/jobs", json={"workers": ["TYOw1", "NYCw1", "LONw1"], "slots": 4}).json()["id"]
        pgid = switches.procs["NYC"].pid
        os.killpg(pgid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            view = t.get(f"/jobs/{job}").json()
            took = time.monotonic() - t0
            assert took < 25, f"the view took {took:.1f} s"
            nyc = [p for p in view["counters"]["per_switch_round"] if p["switch"] == "NYC"]
            assert nyc and all("error" in p for p in nyc), view["counters"]
            view = wait_for(lambda: t.get(f"/jobs/{job}", params={"counters": "false"}).json(),
                            lambda v: v["state"] == "degraded", 20)  # fmt: skip
            assert view["degraded_switches"] == ["NYC"], view
            t0 = time.monotonic()
            assert t.get(f"/jobs/{job}").status_code == 200
            assert time.monotonic() - t0 < 15
        finally:
            os.killpg(pgid, signal.SIGCONT)
        view = wait_for(lambda: t.get(f"/jobs/{job}", params={"counters": "false"}).json(),
                        lambda v: v["state"] == "active", 60)  # fmt: skip
        assert view["state"] == "active", view
        assert t.delete(f"/jobs/{job}").status_code == 200
    finally:
        stop(svc.proc)
