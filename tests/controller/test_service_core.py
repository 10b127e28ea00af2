"""The service core (JobManager) against real p4kit-switch processes, without HTTP: planning, installation,
rollback of a failed installation, reconcile after a restart, schedule replacement."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.provision import Pipeline
from controller.service.auth import Principal
from controller.service.entities import read_switch_state
from controller.service.errors import BadRequest, Conflict, NotFound, Unavailable
from controller.service.manager import JobManager
from controller.service.plans import JobSpec, Plan, ScheduleSpec
from controller.service.store import Store
from controller.service.switches import SwitchPool
from tests.controller.service_fixtures import Switches, running_switches
from topo.pipeline import build_pipeline

ACME = Principal("acme")
OTHER = Principal("other")
JOB_TABLES = ("inc_tenants", "inc_children", "inc_workers", "multicast_groups")


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Pipeline:
    return build_pipeline(tmp_path_factory.mktemp("pipeline") / "build")


@pytest.fixture(scope="module")
def switches(tmp_path_factory: pytest.TempPathFactory, pipeline: Pipeline) -> Iterator[Switches]:
    tmp = tmp_path_factory.mktemp("switches")
    (tmp / "build").mkdir()
    with running_switches(tmp, pipeline) as sw:
        yield sw


def manager(switches: Switches, db: Path) -> JobManager:
    m = JobManager(switches.topology, SwitchPool(switches.topology, switches.pipeline), Store(db), "a" * 32)
    m.start(monitor_interval_s=None)
    for t in ("acme", "other"):
        if m.store.tenant(t) is None:
            m.store.add_tenant(t, f"hash-{t}")
    return m


def job_entries(m: JobManager) -> dict[str, dict[str, int]]:
    """Per switch: entries of the job tables (routes left out)."""
    out = {}
    for row in m.switches_view():
        out[row["name"]] = {k: v for k, v in row.get("by_table", {}).items() if k in JOB_TABLES}
    return out


def test_create_read_delete_leaves_nothing(switches: Switches, tmp_path: Path) -> None:
    m = manager(switches, tmp_path / "db")
    try:
        view = m.create_job(ACME, JobSpec(["TYOw1", "NYCw1", "LONw1"], slots=32))
        assert view["state"] == "active"
        [tree] = view["trees"]
        assert tree["cliques"][0]["root"] in ("TYO", "NYC", "LON")
        assert {s["switch"] for s in view["switches"]} == {"TYO", "NYC", "LON"}
        assert sum(sum(v.values()) for v in job_entries(m).values()) > 0
        with pytest.raises(NotFound):
            m.get_job(OTHER, view["id"])
        m.delete_job(ACME, view["id"])
        assert all(v == {} for v in job_entries(m).values())
        assert m.allocator.switches["NYC"].used == {}
    finally:
        m.close()


def test_bad_jobs_are_refused_with_a_reason(switches: Switches, tmp_path: Path) -> None:
    m = manager(switches, tmp_path / "db")
    try:
        with pytest.raises(BadRequest, match="unknown host 'SYDw1'"):
            m.create_job(ACME, JobSpec(["TYOw1", "SYDw1"]))
        with pytest.raises(BadRequest, match="listed twice"):
            m.create_job(ACME, JobSpec(["TYOw1", "TYOw1"]))
        with pytest.raises(BadRequest, match="unknown site 'PAR'"):
            m.create_job(
                ACME,
                JobSpec(
                    ["TYOw1", "NYCw1"], "core-cliques", schedule=ScheduleSpec("explicit", [[["TYO", "PAR"]]])
                ),
            )
        m.create_job(ACME, JobSpec(["TYOw1", "TYOw2"], slots=4096))  # every cell of TYO
        with pytest.raises(Conflict, match="free INC cells"):  # no room, and no host path asked for
            m.create_job(ACME, JobSpec(["TYOw1", "NYCw2"], slots=1, fallback="none"))
        assert len(m.store.jobs()) == 1  # the refused job left no row
        # by default such a job runs on the host path instead, holding nothing on the switches
        assert m.create_job(ACME, JobSpec(["TYOw1", "NYCw2"], slots=1))["path"] == "host"
    finally:
        for j in m.store.jobs():
            m.delete_job(ACME, j.id)
        m.close()


def test_failed_installation_is_rolled_back_everywhere(switches: Switches, tmp_path: Path) -> None:
    """A stray tenant entry on one switch makes the last stage of the installation fail there; every
    entry already written on the other switches must be gone again, and the resources free."""
    m = manager(switches, tmp_path / "db")
    conn = m.pool.connect("LON")
    assert conn is not None
    stray = m.index.table_entry(
        "inc_tenants",
        {"hdr.inc.tenant": 1, "hdr.inc.round": 0},
        "set_config",
        {"base": 0, "nslots": 1, "fan_in": 1, "is_root": 1, "parent_port": 0, "mcast_grp": 0, "repair_grp": 0,
         "epoch": 7, "switch_ip": "10.0.3.254"},
    )  # fmt: skip
    conn.insert([stray])
    try:
        with pytest.raises(Unavailable, match="rolled back"):
            m.create_job(ACME, JobSpec(["TYOw1", "NYCw1", "LONw1"], slots=16))
        entries = job_entries(m)
        assert entries["TYO"] == {} and entries["NYC"] == {}
        assert entries["LON"] == {"inc_tenants": 1}  # only the stray entry
        assert m.store.jobs() == [] and m.store.allocations() == []
        assert all(not r.used and not r.groups for r in m.allocator.switches.values())
        m.reconcile()  # and the stray entry belongs to no job: reconcile removes it
        assert job_entries(m)["LON"] == {}
    finally:
        m.close()


def test_restarted_controller_reinstalls_missing_and_removes_strays(
    switches: Switches, tmp_path: Path
) -> None:
    db = tmp_path / "db"
    m = manager(switches, db)
    view = m.create_job(ACME, JobSpec(["TYOw1", "NYCw2", "LONw1"], slots=8))
    before = job_entries(m)
    nyc = m.pool.connect("NYC")
    assert nyc is not None
    held = read_switch_state(nyc, m.index)
    m.close()  # the controller goes away; meanwhile the switches drift
    m2 = JobManager(switches.topology, SwitchPool(switches.topology, switches.pipeline), Store(db), "a" * 32)
    try:
        conn = m2.pool.connect("NYC")
        assert conn is not None
        tenant_entries = [e for e in held.values() if e.HasField("table_entry")]
        conn.delete(tenant_entries[:3])  # lost entries (routes and job alike)
        stray = m2.index.table_entry(
            "inc_children",
            {
                "hdr.inc.tenant": 999,
                "hdr.inc.round": 0,
                "std_meta.ingress_port": 1,
                "hdr.ipv4.src_addr": "10.0.2.1",
            },
            "set_child",
            {"child": 0},
        )
        conn.insert([stray])
        report = m2.start(monitor_interval_s=None)
        assert report.switches["NYC"]["inserted"] == 3 and report.switches["NYC"]["deleted"] == 1
        assert job_entries(m2) == before
        assert m2.get_job(ACME, view["id"])["state"] == "active"
        # the restored allocation is known: a new job does not get the same cells
        other = m2.create_job(ACME, JobSpec(["TYOw2", "NYCw1"], slots=8))
        ranges = {(s["switch"], tuple(s["cells"])) for s in view["switches"]}
        assert not ranges & {(s["switch"], tuple(s["cells"])) for s in other["switches"]}
    finally:
        for j in m2.store.jobs():
            m2.delete_job(ACME, j.id)
        m2.close()


def test_schedule_replacement_installs_new_rounds_before_removing_old(
    switches: Switches, tmp_path: Path
) -> None:
    m = manager(switches, tmp_path / "db")
    try:
        spec = JobSpec(
            ["TYOw1", "NYCw1", "LONw1"],
            "core-cliques",
            slots=8,
            schedule=ScheduleSpec("explicit", [[["TYO", "NYC"]], [["NYC", "LON"]]]),
        )
        view = m.create_job(ACME, spec)
        assert [t["round"] for t in view["trees"]] == [0, 1]
        assert {w["host"]: [r["round"] for r in w["rounds"]] for w in view["workers"]} == {
            "TYOw1": [0],
            "NYCw1": [0, 1],
            "LONw1": [1],
        }
        new = m.replace_schedule(
            ACME, view["id"], ScheduleSpec("explicit", [[["TYO", "LON"]], [["TYO", "NYC", "LON"]]])
        )
        assert [t["round"] for t in new["trees"]] == [2, 3]
        tenants = {sw: v.get("inc_tenants", 0) for sw, v in job_entries(m).items()}
        assert tenants == {"TYO": 2, "NYC": 1, "LON": 2}  # only the new rounds remain
        assert m.reconcile().total("inserted") == 0
        # with a drain time the old rounds stay for workers still in them, then go
        m.replace_schedule(ACME, view["id"], ScheduleSpec("explicit", [[["NYC", "LON"]]]), drain_s=1.0)
        assert job_entries(m)["LON"]["inc_tenants"] == 3  # rounds 2, 3 (draining) and 4
        time.sleep(2.0)
        assert job_entries(m)["LON"]["inc_tenants"] == 1
        assert m.reconcile().total("deleted") == 0
        with pytest.raises(BadRequest, match="unknown site"):
            m.replace_schedule(ACME, view["id"], ScheduleSpec("explicit", [[["TYO", "XXX"]]]))
        assert [t["round"] for t in m.get_job(ACME, view["id"], counters=False)["trees"]] == [4]
    finally:
        for j in m.store.jobs():
            m.delete_job(ACME, j.id)
        m.close()


def test_schedule_workers_read_their_rounds_from_the_job(switches: Switches, tmp_path: Path) -> None:
    from edge.schedule_worker import spec_from_job_view

    m = manager(switches, tmp_path / "db")
    try:
        rounds = [[["TYO", "NYC"]], [["NYC", "LON"]], [["TYO", "NYC", "LON"]]]
        spec = JobSpec(
            ["TYOw1", "TYOw2", "NYCw1", "LONw1"],
            "core-cliques",
            slots=8,
            schedule=ScheduleSpec("explicit", rounds),
        )
        view = m.create_job(ACME, spec)
        tyo = spec_from_job_view(view, "TYOw2")
        # TYO has two workers: cliques of 3 and 4
        assert [(r.round, r.clique_size) if r else None for r in tyo.period] == [(0, 3), None, (2, 4)]
        assert tyo.switch_ip == "10.0.1.254" and tyo.tenant == view["id"] and tyo.nslots == 8
        assert tyo.epoch == view["epoch"] and tyo.epoch > 0
        # every timing parameter the planner computed reaches the worker (TYO-NYC's tree: RTT > 100 ms)
        assert all(r.path_rtt_s > 0.1 and r.rto_s >= 1.0 for r in tyo.rounds)
        assert all(r.rate_bps == 50e6 for r in tyo.rounds)  # the pace: its tree's slowest link
        # as a restarted controller reads the stored plan back: the same specs, pace included
        stored = m.store.jobs()[0].plan
        again = Plan.from_json(json.loads(json.dumps(Plan.from_json(stored).to_json())))
        assert again.worker_spec("TYOw2") == Plan.from_json(stored).worker_spec("TYOw2")
        assert all(r.rate_bps == 50e6 for r in again.worker_spec("TYOw2").rounds)
        lon = spec_from_job_view(view, "LONw1")
        assert [(r.round, r.clique_size) if r else None for r in lon.period] == [None, (1, 2), (2, 4)]
        with pytest.raises(ValueError, match="not a worker"):
            spec_from_job_view(view, "NYCw2")
    finally:
        for j in m.store.jobs():
            m.delete_job(ACME, j.id)
        m.close()


def test_epoch_is_new_per_generation_and_kept_on_reinstall(switches: Switches, tmp_path: Path) -> None:
    """A job's epoch is in its view, its workers' specs and its switches' tenant entries; a reset makes a
    new one (and zeroes the cells); a restarted controller re-installs the job with the same one."""
    from controller.p4rt.entities import decode_value

    def switch_epochs(m: JobManager, job: int) -> set[int]:
        out = set()
        for name in ("TYO", "NYC", "LON"):
            conn = m.pool.connect(name)
            assert conn is not None
            for e in conn.read([m.index.table_entry("inc_tenants")]):
                te = e.table_entry
                if decode_value(te.match[0].exact.value) == job:
                    info = m.index.action("set_config")
                    pid = next(p.id for p in info.params if p.name == "epoch")
                    out.add(next(decode_value(p.value) for p in te.action.action.params if p.param_id == pid))
        return out

    db = tmp_path / "db"
    m = manager(switches, db)
    view = m.create_job(ACME, JobSpec(["TYOw1", "NYCw1", "LONw1"], slots=8))
    job, epoch = view["id"], view["epoch"]
    assert 0 < epoch < 2**32
    assert {w["spec"]["epoch"] for w in view["workers"]} == {epoch}
    assert all(w["spec"]["period"][0]["path_rtt_s"] > 0 for w in view["workers"])
    assert switch_epochs(m, job) == {epoch}
    reset = m.reset_cells(ACME, job)
    assert reset["epoch"] != epoch and reset["cells_reset"] == 3 * 16
    assert m.get_job(ACME, job, counters=False)["epoch"] == reset["epoch"]
    assert switch_epochs(m, job) == {reset["epoch"]}
    m.close()
    m2 = manager(switches, db)
    try:
        assert m2.get_job(ACME, job, counters=False)["epoch"] == reset["epoch"]
        assert m2.reconcile().total("modified") == 0
        assert switch_epochs(m2, job) == {reset["epoch"]}
        other = m2.create_job(ACME, JobSpec(["TYOw2", "NYCw2"], slots=4))
        assert other["epoch"] not in (epoch, reset["epoch"])
    finally:
        for j in m2.store.jobs():
            m2.delete_job(ACME, j.id)
        m2.close()


def test_a_database_from_a_larger_network_is_served_not_crashed_on(
    switches: Switches, tmp_path: Path
) -> None:
    """The database outlives runs: started on a network without LON, the controller keeps the job that
    uses LON, shows it degraded (naming LON), and can still delete it; jobs within the network work."""
    from controller.service.topology import Topology

    db = tmp_path / "db"
    m = manager(switches, db)
    job = m.create_job(ACME, JobSpec(["TYOw1", "LONw1"], slots=4))["id"]
    m.close()
    small = Topology(switches.topology.sub_fabric(["TYO", "NYC"]), [], switches.topology.regions, 50.0)
    m2 = JobManager(small, SwitchPool(small, switches.pipeline), Store(db), "a" * 32)
    try:
        m2.start(monitor_interval_s=None)
        view = m2.get_job(ACME, job)
        assert view["state"] == "degraded" and view["degraded_switches"] == ["LON"], view
        assert 'tributary_jobs{state="degraded"} 1' in m2.metrics()
        other = m2.create_job(ACME, JobSpec(["TYOw2", "NYCw2"], slots=4))
        assert other["state"] == "active"
        assert m2.delete_job(ACME, job)["removed"]
        assert m2.delete_job(ACME, other["id"])["removed"]
    finally:
        m2.close()
    # the entries the job had on LON are strays now: a controller for the whole network removes them
    m3 = manager(switches, db)  # (it reconciles on start)
    try:
        assert all(v == {} for v in job_entries(m3).values()), job_entries(m3)
    finally:
        m3.close()


def test_jobs_installed_side_by_side_start_at_their_fair_share(switches: Switches, tmp_path: Path) -> None:
    """Two jobs over the same sites split each 50 Mbit/s link of their trees: every worker's spec starts
    at 25 Mbit/s (and may grow to the link's 50); once one is deleted, the other starts at the link."""
    from edge.schedule_worker import spec_from_job_view

    m = manager(switches, tmp_path / "db")
    try:
        workers = ["TYOw1", "NYCw1", "LONw1"]
        a = m.create_job(ACME, JobSpec(workers, "core-tree", slots=8))
        assert {r.share_bps for r in spec_from_job_view(a, "TYOw1").rounds} == {50e6}  # alone
        b = m.create_job(OTHER, JobSpec(workers, "core-tree", slots=8))
        for view in (m.get_job(ACME, a["id"], counters=False), b):
            for host in workers:
                rounds = spec_from_job_view(view, host).rounds
                assert {(r.share_bps, r.rate_bps) for r in rounds} == {(25e6, 50e6)}, (host, rounds)
        # a job on one link only (TYO-NYC) shares that one: a third of it, and the others keep
        # a third of TYO-NYC too (their NYC-LON share is larger, but the pace is the smallest)
        c = m.create_job(ACME, JobSpec(["TYOw2", "NYCw2"], "core-tree", slots=8))
        assert [r.share_bps for r in spec_from_job_view(c, "TYOw2").rounds] == [pytest.approx(50e6 / 3)]
        a_now = m.get_job(ACME, a["id"], counters=False)
        assert [r.share_bps for r in spec_from_job_view(a_now, "LONw1").rounds] == [pytest.approx(50e6 / 3)]
        m.delete_job(OTHER, b["id"])
        m.delete_job(ACME, c["id"])
        alone = spec_from_job_view(m.get_job(ACME, a["id"], counters=False), "LONw1").rounds
        assert {r.share_bps for r in alone} == {50e6}
    finally:
        for j in m.store.jobs():
            m.delete_job(ACME if j.tenant == "acme" else OTHER, j.id)
        m.close()
