"""The end-to-end path a new user takes: `tributary run --detach`, the REST API with curl's requests,
traffic through the installed trees in the Mininet hosts, `tributary controller restart`, `tributary
stop`; real switches, real service, real Mininet."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from edge.schedule_worker import spec_from_job_view
from tests.localports import free_port
from topo import cleanup, ledger

pytestmark = [pytest.mark.mininet, pytest.mark.root]

ROOT = Path(__file__).resolve().parents[2]


SITES = ("--sites", "TYO,NYC,LON", "--workers-per-site", "1")
ADMIN_TOKEN = "detach-admin-token-0123456789abcdef"


def tributary(*args: str, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "topo.cli", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env,
    )  # fmt: skip


@pytest.fixture(scope="module")
def wan(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    from tests.topo.conftest import needs_root

    needs_root()
    tmp = tmp_path_factory.mktemp("detach")
    state = tmp / "state.json"
    port = free_port()
    procs_before = {pid for pid, _ in cleanup.leftover_processes()}
    env = {**os.environ, "TRIBUTARY_ADMIN_TOKEN": ADMIN_TOKEN, "TRIBUTARY_DATA_DIR": str(tmp / "data")}
    argv = ["--state", str(state), "--listen", f"127.0.0.1:{port}"]
    r = tributary("run", "--detach", *SITES, *argv, "--run-dir", str(tmp / "run"), env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"controller at http://127.0.0.1:{port}" in r.stdout
    doc = json.loads(state.read_text())
    info = {"state": state, "doc": doc, "url": f"http://127.0.0.1:{port}", "before": procs_before}
    info.update(env=env, argv=argv, tmp=tmp)
    try:
        yield info
    finally:
        if state.exists():
            tributary("stop", "--state", str(state))


def client(url: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120)


def run_workers(
    wan: dict, job: dict, inputs: dict[str, np.ndarray], rounds: int, tmp: Path
) -> dict[str, np.ndarray]:
    """edge.schedule_worker in each worker's Mininet host, following the job's rounds."""
    from topo import detach

    procs = {}
    for w in job["workers"]:
        host = w["host"]
        spec = {
            "worker": spec_from_job_view(job, host, stall_timeout_s=30.0).model_dump(),
            "input": str(tmp / f"{host}.in.npy"),
            "out": str(tmp / f"{host}.out.npy"),
            "report": str(tmp / f"{host}.report.json"),
            "rounds": rounds,
        }
        np.save(spec["input"], inputs[host])
        (tmp / f"{host}.spec.json").write_text(json.dumps(spec))
        argv = [sys.executable, "-m", "edge.schedule_worker", str(tmp / f"{host}.spec.json")]
        procs[host] = subprocess.Popen(detach.host_command(wan["doc"], host, argv), cwd=ROOT)
    out = {}
    for host, proc in procs.items():
        proc.wait(timeout=180)
        report = json.loads((tmp / f"{host}.report.json").read_text())
        assert "error" not in report, report
        out[host] = np.load(tmp / f"{host}.out.npy")
    return out


def environ(pid: int) -> bytes:
    return Path(f"/proc/{pid}/environ").read_bytes()


def keeper_record(wan: dict) -> ledger.Record:
    rec = ledger.for_owner(wan["doc"]["pid"])
    assert rec is not None, "the keeper recorded nothing"
    return rec


def test_no_child_inherits_the_admin_token(wan: dict) -> None:
    rec = keeper_record(wan)
    kinds = {what.split(" ")[0] for _, _, what in rec.processes}
    assert {"switch", "Mininet", "controller"} <= kinds, rec.processes
    for pid in [wan["doc"]["pid"], *(p for p, _, _ in rec.processes)]:
        if ledger.start_time(pid) is not None:
            assert b"TRIBUTARY_ADMIN_TOKEN" not in environ(pid), pid
            assert ADMIN_TOKEN.encode() not in environ(pid), pid
    # and a program started in a worker's namespace
    from topo import detach

    out = subprocess.run(detach.host_command(wan["doc"], "TYOw1", ["env"]), capture_output=True, text=True)
    assert out.returncode == 0 and "TRIBUTARY_ADMIN_TOKEN" not in out.stdout
    assert Path(wan["doc"]["admin_token_file"]).read_text().strip() == ADMIN_TOKEN


def test_a_killed_switch_is_restarted_and_its_job_repaired(wan: dict) -> None:
    with client(wan["url"], ADMIN_TOKEN) as admin:
        token = admin.post("/tenants", json={"name": "phoenix"}).json()["token"]
        t = client(wan["url"], token)
        r = t.post("/jobs", json={"workers": ["TYOw1", "NYCw1", "LONw1"], "slots": 16})
        assert r.status_code == 201, r.text
        job = r.json()["id"]
        before = {s["name"]: s["by_table"] for s in admin.get("/switches").json()}
        [(pid, _, _)] = [p for p in keeper_record(wan).processes if p[2] == "switch NYC"]
        os.kill(pid, signal.SIGKILL)
        states = set()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            view = t.get(f"/jobs/{job}", params={"counters": "false"}).json()
            states.add(view["state"])
            nyc = next(s for s in admin.get("/switches").json() if s["name"] == "NYC")
            if view["state"] == "active" and nyc.get("by_table") == before["NYC"] and "degraded" in states:
                break
            time.sleep(0.2)
        assert "degraded" in states, states
        assert view["state"] == "active" and nyc["by_table"] == before["NYC"], (view["state"], nyc)
        assert nyc["reprovisioned"] >= 1
        [(new_pid, _, _)] = [p for p in keeper_record(wan).processes if p[2] == "switch NYC" and p[0] != pid]
        assert ledger.start_time(new_pid) is not None and ledger.start_time(pid) is None
        assert t.delete(f"/jobs/{job}").status_code == 200
        assert admin.delete("/tenants/phoenix").status_code == 200


def test_a_killed_controller_is_restarted_with_its_jobs(wan: dict) -> None:
    with client(wan["url"], ADMIN_TOKEN) as admin:
        token = admin.post("/tenants", json={"name": "survivor"}).json()["token"]
        t = client(wan["url"], token)
        job = t.post("/jobs", json={"workers": ["TYOw1", "NYCw1"], "slots": 8}).json()
        before = {s["name"]: s["by_table"] for s in admin.get("/switches").json()}
        old = json.loads(wan["state"].read_text())["controller"]["pid"]
        os.kill(old, signal.SIGKILL)
        deadline = time.monotonic() + 90
        new = old
        while time.monotonic() < deadline:
            new = json.loads(wan["state"].read_text())["controller"]["pid"]
            if new and new != old:
                try:
                    if t.get("/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
            time.sleep(0.3)
        assert new != old and ledger.start_time(new) is not None, "the keeper did not restart the controller"
        again = t.get(f"/jobs/{job['id']}", params={"counters": "false"}).json()
        assert again["state"] == "active" and again["epoch"] == job["epoch"], again
        assert {s["name"]: s["by_table"] for s in admin.get("/switches").json()} == before
        assert t.delete(f"/jobs/{job['id']}").status_code == 200
        assert admin.delete("/tenants/survivor").status_code == 200
    wan["doc"] = json.loads(wan["state"].read_text())  # the later tests check the current controller


def test_an_edge_job_from_the_rest_api_runs_on_the_edge_stages(wan: dict, tmp_path: Path) -> None:
    """POST /jobs with edge-all-to-all, then start every site's stage and every worker's receiver from
    the job view's specs alone, as a user would: every worker ends with the exact sum of the three
    sites, the switches' per-round counters show each site's stream, DELETE removes every edge entry."""
    from topo.edge_job import run_edge_job

    with client(wan["url"], ADMIN_TOKEN) as admin:
        token = admin.post("/tenants", json={"name": "edger"}).json()["token"]
        t = client(wan["url"], token)
        body = {
            "workers": ["TYOw1", "NYCw1", "LONw1"],
            "strategy": "edge-all-to-all",
            "edge": {"memory": "256MB", "size": "64MB", "max_rate_mbit": 1.3},
        }
        r = t.post("/jobs", json=body)
        assert r.status_code == 201, r.text
        job = r.json()
        edge = job["edge"]
        chunks = edge["stage"]["chunks"]
        assert chunks == 32  # 64e6 B x 1.3 Mbit/s / 10 Gbit/s = 8320 B, in 256-byte chunks
        rng = np.random.default_rng(7)
        vectors = {
            site: rng.integers(-(1 << 24), 1 << 24, size=(chunks, 64), dtype=np.int32).view(np.uint32)
            for site in edge["sites"]
        }
        run = run_edge_job(wan["doc"], job, vectors, tmp_path, timeout_s=120)
        assert run.errors == []
        total = sum(vectors.values())  # uint32 arithmetic: the switches' and stages' wrap-around sum
        for w in job["workers"]:
            assert run.workers[w["host"]]["count"] == [3], run.workers[w["host"]]
            assert np.array_equal(run.results[w["host"]], total)
        assert run.measured_s() is not None and run.measured_s() > 0
        counters = t.get(f"/jobs/{job['id']}").json()["counters"]
        [rnd] = counters["per_round"]
        assert set(rnd["streams"]) == {"TYO", "NYC", "LON"}
        for stream in rnd["streams"].values():
            assert stream["packets"] >= chunks  # the live stream (its last chunk twice); repairs are unicast
        # on the full mesh each stream is replicated at its own switch to two, then once to each edge host
        assert rnd["tree_packets"] == 3 * sum(s["packets"] for s in rnd["streams"].values())
        assert t.delete(f"/jobs/{job['id']}").status_code == 200
        for s in admin.get("/switches").json():
            assert not {"edge_mcast", "edge_hosts", "multicast_groups"} & set(s["by_table"]), s
        assert admin.delete("/tenants/edger").status_code == 200


def test_a_new_users_session(wan: dict, tmp_path: Path) -> None:
    admin_token = Path(wan["doc"]["admin_token_file"]).read_text().strip()
    assert admin_token not in (Path(wan["doc"]["run_dir"]) / "controller.log").read_text()
    with client(wan["url"], admin_token) as admin:
        tokens = {n: admin.post("/tenants", json={"name": n}).json()["token"] for n in ("acme", "bob")}
        a, b = client(wan["url"], tokens["acme"]), client(wan["url"], tokens["bob"])
        body = {
            "workers": ["TYOw1", "NYCw1", "LONw1"],
            "strategy": "core-cliques",
            "slots": 32,
            "schedule": {"mode": "explicit", "rounds": [[["TYO", "NYC"]], [["NYC", "LON"]]]},
        }
        r = a.post("/jobs", json=body)
        assert r.status_code == 201, r.text
        job = r.json()
        assert b.get(f"/jobs/{job['id']}").status_code == 404
        bad = a.post("/jobs", json={"workers": ["TYOw1", "TYOw1"]})
        assert bad.status_code == 422 and "listed twice" in bad.json()["error"]

        # traffic: two rounds of averaging through the per-round trees
        inputs = {
            h: np.arange(2048, dtype=np.int32) * 4 * (i + 1)
            for i, h in enumerate(["TYOw1", "NYCw1", "LONw1"])
        }
        out = run_workers(wan, job, inputs, 2, tmp_path)
        t, n, lo = (inputs[h].astype(np.int64) for h in ("TYOw1", "NYCw1", "LONw1"))
        r0 = (t + n) // 2
        assert np.array_equal(out["TYOw1"], r0)
        assert np.array_equal(out["NYCw1"], (r0 + lo) // 2)
        assert np.array_equal(out["LONw1"], (r0 + lo) // 2)
        counters = a.get(f"/jobs/{job['id']}").json()["counters"]
        assert counters["rounds_completed"] == 2 and counters["packets"] >= 4 * 32

        before = {s["name"]: s["by_table"] for s in admin.get("/switches").json()}
        r = tributary("controller", "restart", "--state", str(wan["state"]))
        assert r.returncode == 0, r.stderr
        assert a.get(f"/jobs/{job['id']}", params={"counters": "false"}).json()["state"] == "active"
        assert {s["name"]: s["by_table"] for s in admin.get("/switches").json()} == before

        # the trees still carry traffic after the restart (cells zeroed: the workers start at chunk 0)
        reset = a.post(f"/jobs/{job['id']}/reset")
        assert reset.status_code == 200 and reset.json()["epoch"] != job["epoch"]
        job = a.get(f"/jobs/{job['id']}", params={"counters": "false"}).json()  # the new generation
        out = run_workers(wan, job, inputs, 1, tmp_path)
        assert np.array_equal(out["TYOw1"], r0)

        assert a.delete(f"/jobs/{job['id']}").status_code == 200
        for s in admin.get("/switches").json():
            assert set(s["by_table"]) <= {"ipv4_routes", "l2_switch", "source_guard"}, s
    r = tributary("stop", "--state", str(wan["state"]))
    assert r.returncode == 0, r.stderr
    assert not wan["state"].exists()
    from topo.detach import alive

    assert not alive(wan["doc"]["pid"]) and not alive(wan["doc"]["controller"]["pid"])
    assert {pid for pid, _ in cleanup.leftover_processes()} <= wan["before"]
    assert not [
        i for i in cleanup.leftover_interfaces() if i.split("-")[0].rstrip("w1e") in ("TYO", "NYC", "LON")
    ]


def test_stop_then_run_keeps_tenants_and_jobs(wan: dict) -> None:
    """The database outlives the run: a second `run --detach` (no --db) serves the same tenants, whose
    tokens still work, and installs their jobs on the new switches."""
    state = wan["state"]
    r = tributary(
        "run", "--detach", *SITES, *wan["argv"], "--run-dir", str(wan["tmp"] / "run1"), env=wan["env"]
    )
    assert r.returncode == 0, r.stderr + r.stdout
    with client(wan["url"], ADMIN_TOKEN) as admin:
        token = admin.post("/tenants", json={"name": "stayer"}).json()["token"]
        t = client(wan["url"], token)
        job = t.post("/jobs", json={"workers": ["TYOw1", "LONw1"], "slots": 8}).json()
        entries = {s["name"]: s["by_table"] for s in admin.get("/switches").json()}
    assert tributary("stop", "--state", str(state)).returncode == 0
    assert (wan["tmp"] / "data" / "controller.db").exists()
    assert not any((wan["tmp"] / "run1").glob("*.db")), "the run folder holds only the run's own files"
    r = tributary(
        "run", "--detach", *SITES, *wan["argv"], "--run-dir", str(wan["tmp"] / "run2"), env=wan["env"]
    )
    assert r.returncode == 0, r.stderr + r.stdout
    try:
        t = client(wan["url"], token)
        again = t.get(f"/jobs/{job['id']}", params={"counters": "false"}).json()
        assert again["state"] == "active" and again["switches"] == job["switches"], again
        with client(wan["url"], ADMIN_TOKEN) as admin:
            assert "stayer" in {x["id"] for x in admin.get("/tenants").json()}
            assert {s["name"]: s["by_table"] for s in admin.get("/switches").json()} == entries
        assert t.delete(f"/jobs/{job['id']}").status_code == 200
    finally:
        assert tributary("stop", "--state", str(state)).returncode == 0
