"""What the API shows: jobs (with the state the switches give them), switches, the topology.

A job stored as `active` reads as `degraded` while any switch of its trees is down or not yet given its
entries back (a killed switch, until the run's keeper restarts it and reconcile re-installs the job):
`degraded_switches` says which. Switch views are scoped: the admin sees every table's entry count and
the switch-wide counters; a tenant sees whether each switch is up and which of its own jobs use it,
nothing that counts or names another tenant's jobs.
"""

from __future__ import annotations

from controller.edge.plan import EdgeJobPlan
from controller.p4rt import P4RuntimeError
from controller.service.auth import Principal
from controller.service.counters import VIEW_TIMEOUT_S, round_traffic, switch_stats
from controller.service.edge_views import edge_counters, edge_view, edge_worker_views
from controller.service.entities import read_switch_state
from controller.service.plans import Plan, concurrent_shares
from controller.service.reconcile import kind_name
from controller.service.state import ServiceState
from controller.service.store import JobRow


def job_switches(plan: Plan) -> list[str]:
    if plan.edge is not None:
        return EdgeJobPlan.from_json(plan.edge["plan"]).switches()
    return sorted({sr.switch for sr in plan.switch_rounds})


def shown_state(state: ServiceState, job: JobRow, plan: Plan) -> tuple[str, list[str]]:
    """(state as shown, the switches that make it degraded)."""
    if job.state != "active":
        return job.state, []
    down = [sw for sw in job_switches(plan) if not state.switch_in_sync(sw)]
    return ("degraded", down) if down else ("active", [])


def summary(state: ServiceState, job: JobRow, plan: Plan | None = None) -> dict:
    plan = plan or Plan.from_json(job.plan)
    shown, down = shown_state(state, job, plan)
    out = {
        "id": job.id,
        "tenant": job.tenant,
        "name": job.name,
        "state": shown,
        "strategy": job.spec.get("strategy"),
        "path": plan.path,
        "workers": job.spec.get("workers"),
        "rounds": len(plan.rounds),
        "created": job.created,
    }
    if down:
        out["degraded_switches"] = down
    return out


def worker_views(plan: Plan, shares: dict[int, float] | None = None) -> list[dict]:
    """Per worker: where it is, and its WorkerSpec (edge/spec.py), the one schema a worker reads; the
    flat fields beside it are taken from that spec. `shares`: the job's fair share of its links per
    round among the jobs installed beside it (plans.concurrent_shares), the pace its workers start at."""
    out = []
    for w in plan.workers.values():
        spec = plan.worker_spec(w.host, share_bps=shares)
        out.append(
            {
                "host": w.host,
                "site": w.site,
                "switch_ip": spec.switch_ip,
                "udp_port": w.udp_port,
                "rounds": [r.model_dump(exclude={"version"}) for r in spec.rounds],
                "spec": spec.model_dump(mode="json"),
            }
        )
    return out


def host_worker_views(plan: Plan) -> list[dict]:
    """Per worker of a host-path job: what edge.runner needs to run the host allreduce instead (its
    rank, the algorithm, every peer with its site, the TCP port base), under `spec`."""
    host = plan.host or {}
    return [
        {
            "host": p["host"],
            "site": p["site"],
            "ip": p["ip"],
            "rank": p["rank"],
            "spec": {
                "algorithm": host.get("algorithm"),
                "rank": p["rank"],
                "port": host.get("port"),
                "peers": [
                    {"rank": q["rank"], "ip": q["ip"], "site": q["site"]} for q in host.get("peers", [])
                ],
            },
        }
        for p in host.get("peers", [])
    ]


def admission_view(plan: Plan) -> dict:
    """The job's admission on shared switches: its path, the slots asked for and granted, and why."""
    return {
        "path": plan.path,
        "requested_slots": plan.requested_slots,
        "granted_slots": plan.nslots,
        "min_slots": plan.min_slots,
        "reason": plan.reason,
    }


def installed_shares(state: ServiceState, job: JobRow, plan: Plan) -> dict[int, float]:
    """`plan`'s fair share of its links beside every other active job's (plans.concurrent_shares)."""
    others = [Plan.from_json(j.plan) for j in state.store.jobs() if j.id != job.id and j.state == "active"]
    return concurrent_shares(state.topology.fabric, plan, others)


def job_view(state: ServiceState, job: JobRow, counters: bool = True) -> dict:
    plan = Plan.from_json(job.plan)
    view = summary(state, job, plan)
    spec = job.spec
    view.update(
        format=spec.get("format"),
        slots=plan.nslots,
        epoch=plan.epoch,
        schedule={
            "source": plan.schedule.source,
            "sites": plan.schedule.rounds,
            "predicted_time_s": plan.schedule.predicted_time_s,
            "rounds_to_consensus": plan.schedule.rounds_to_consensus,
            "exact_average": plan.schedule.exact_average,
            "requested": spec.get("schedule"),
        },
        round_base=plan.round_base,
        trees=[
            {
                "round": rp.round,
                "cliques": [
                    {
                        "sites": c.sites,
                        "workers": c.workers,
                        "root": c.root,
                        "max_rtt_ms": c.max_rtt_ms,
                        "switches": c.tree,
                    }
                    for c in rp.cliques
                ],
            }
            for rp in plan.rounds
        ],
        switches=[
            {
                "switch": sr.switch,
                "round": sr.round,
                "cells": [sr.cells.base, sr.cells.base + sr.cells.cells - 1],
                "slots": sr.cells.cells // 2,
                "multicast_group": sr.group,
                "fan_in": sr.fan_in,
                "root": sr.is_root,
                "parent_port": sr.parent_port,
                "children": sr.children,
            }
            for sr in plan.switch_rounds
        ],
        admission=admission_view(plan),
        workers=(
            host_worker_views(plan)
            if plan.host is not None
            else worker_views(plan, installed_shares(state, job, plan))
            if plan.edge is None
            else edge_worker_views(plan)
        ),
    )
    if plan.host is not None:
        view["host"] = plan.host
    if plan.ring:
        view["ring"] = plan.ring
    if plan.edge is not None:
        view["edge"] = edge_view(plan)
    if counters:
        view["counters"] = job_counters(state, plan) if plan.edge is None else edge_counters(state, plan)
    return view


def job_counters(state: ServiceState, plan: Plan) -> dict:
    conns = state.pool.live()
    per: list[dict] = []
    root_chunks: dict[int, list[int]] = {}
    for sr in plan.switch_rounds:
        conn = conns.get(sr.switch)
        if conn is None:
            per.append({"switch": sr.switch, "round": sr.round, "error": "switch not connected"})
            continue
        try:
            t = round_traffic(conn, state.index, sr, timeout=VIEW_TIMEOUT_S)
        except P4RuntimeError as exc:
            per.append({"switch": sr.switch, "round": sr.round, "error": str(exc)})
            state.pool.mark_down(sr.switch, str(exc))  # the job's other rounds there need not wait too
            conns.pop(sr.switch, None)
            continue
        per.append(
            {
                "switch": sr.switch,
                "round": sr.round,
                "chunks": t.chunks,
                "packets": t.packets,
                "bytes": t.bytes,
            }
        )
        if sr.is_root:
            root_chunks.setdefault(sr.round, []).append(t.chunks)
    done_rounds = 0
    for rp in plan.rounds:
        chunks = root_chunks.get(rp.round, [])
        if chunks and len(chunks) == len(rp.cliques) and min(chunks) > 0:
            done_rounds += 1
    return {
        "packets": sum(int(p.get("packets", 0)) for p in per),
        "bytes": sum(int(p.get("bytes", 0)) for p in per),
        "rounds_completed": done_rounds,
        "per_switch_round": per,
    }


def switches_view(state: ServiceState, principal: Principal) -> list[dict]:
    """Every switch; the admin also gets entries by table and `inc_stats`, a tenant its own jobs there."""
    mine: dict[str, list[int]] = {}
    if not principal.is_admin:
        for job in state.store.jobs(principal.tenant):
            for sw in job_switches(Plan.from_json(job.plan)):
                mine.setdefault(sw, []).append(job.id)
    pool = state.pool
    out = []
    for sw in state.topology.fabric.switches:
        st = pool.status[sw.name]
        row: dict = {
            "name": sw.name,
            "reachable": False,
            "pipeline_loaded": False,
            "in_sync": False,
        }
        if principal.is_admin:
            row.update(address=sw.grpc_addr, device_id=sw.device_id, reprovisioned=st.reprovisioned)
        else:
            row["jobs"] = mine.get(sw.name, [])
        conn = pool.connect(sw.name)
        if conn is not None:
            try:
                row["pipeline_loaded"] = pool.has_pipeline(conn, timeout=VIEW_TIMEOUT_S)
                row["reachable"] = True
                if row["pipeline_loaded"] and principal.is_admin:
                    held = read_switch_state(conn, state.index, timeout=VIEW_TIMEOUT_S)
                    tables: dict[str, int] = {}
                    for e in held.values():
                        kind = kind_name(state.index, e)
                        tables[kind] = tables.get(kind, 0) + 1
                    row["entries"] = sum(tables.values())
                    row["by_table"] = tables
                    stats = switch_stats(conn, state.index, timeout=VIEW_TIMEOUT_S)
                    row["inc_stats"] = {k: v[0] for k, v in stats.items()}
            except P4RuntimeError as exc:
                pool.mark_down(sw.name, str(exc))
                row["reachable"] = row["pipeline_loaded"] = False
        row["in_sync"] = row["reachable"] and state.switch_in_sync(sw.name)
        if not row["reachable"]:
            row["error"] = st.last_error if principal.is_admin else "unreachable"
        out.append(row)
    return out


def topology_view(state: ServiceState) -> dict:
    topo = state.topology
    return {
        "sites": [
            {
                "name": sw.name,
                "region": topo.regions.get(sw.name, ""),
                "subnet": sw.subnet,
                "switch": {"address": sw.grpc_addr, "device_id": sw.device_id, "inc_ip": sw.inc_ip},
            }
            for sw in topo.fabric.switches
        ],
        "hosts": [
            {"name": h.name, "site": sw.name, "ip": h.ip, "mac": h.mac, "port": h.port, "role": h.role}
            for sw in topo.fabric.switches
            for h in sw.hosts
        ],
        "links": [
            {
                "a": link.a,
                "b": link.b,
                "rtt_ms": link.rtt_ms,
                "rate_mbit": link.rate_mbit,
                "loss_pct": link.loss_pct,
            }
            for link in topo.links
        ],
        "real_rate_mbit": topo.real_rate_mbit,
    }
