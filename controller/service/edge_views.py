"""What the API shows of an Edge-INC job: its trees and groups per round, the stages' parameters and
the model's pacing, the specs each process runs with, and the switches' per-round counters."""

from __future__ import annotations

from controller.edge.install import read_tree_traffic
from controller.edge.plan import EdgeJobPlan
from controller.p4rt import P4RuntimeError
from controller.service.counters import VIEW_TIMEOUT_S
from controller.service.plans import Plan
from controller.service.state import ServiceState


def edge_view(plan: Plan) -> dict:
    doc = plan.edge or {}
    eplan = EdgeJobPlan.from_json(doc["plan"])
    groups: dict[int, list[dict]] = {}
    for g in eplan.groups:
        groups.setdefault(g.round, []).append(
            {
                "switch": g.switch,
                "source": g.source,
                "multicast_group": g.group,
                "ports": list(g.ports),
                "next_switches": list(g.next_switches),
            }
        )
    return {
        "stage": doc["stage"],
        "predicted_s": doc.get("predicted_s"),
        "site_ids": eplan.site_ids,
        "rounds": [{**r, "groups": groups.get(r["round"], [])} for r in doc["rounds"]],
        "sites": doc["sites"],
        "host_rewrites": [
            {"switch": h.switch, "port": h.port, "mac": h.mac, "ip": h.ip} for h in eplan.rewrites
        ],
        "run": (
            "per site: `python -m edge.edge_site SPEC.json` on its edge host with `sites[SITE]` plus "
            "lanes_path (the site's chunks x 64 int32 vector, .npy), start_at (a common start, Unix "
            "seconds) and report; per worker: `python -m edge.edge_receiver SPEC.json` with its "
            "`receiver` plus out, report and timeout_s"
        ),
    }


def edge_worker_views(plan: Plan) -> list[dict]:
    """Per worker of the job: its site and the spec of its receiver (its stage's results)."""
    doc = plan.edge or {}
    site_of_stage = {spec["ip"]: site for site, spec in doc["sites"].items()}
    return [
        {"host": host, "site": site_of_stage.get(rs["stage_ip"], ""), "receiver": rs}
        for host, rs in doc["receivers"].items()
    ]


def edge_counters(state: ServiceState, plan: Plan) -> dict:
    """Per round: each source's stream as its own switch counted it (the live packets it sent; repairs
    are unicast and not counted here) and the replicas every switch of the trees handed on."""
    eplan = EdgeJobPlan.from_json((plan.edge or {})["plan"])
    conns = state.pool.live()
    ip_site = {g.source_ip: g.source for g in eplan.groups}
    per_round: dict[int, dict] = {
        r: {"round": r, "streams": {}, "tree_packets": 0, "tree_bytes": 0}
        for r in range(1, len(eplan.rounds) + 1)
    }
    errors = []
    for switch in eplan.switches():
        conn = conns.get(switch)
        if conn is None:
            errors.append({"switch": switch, "error": "switch not connected"})
            continue
        try:
            traffic = read_tree_traffic(conn, state.index, switch, eplan.tenant, timeout=VIEW_TIMEOUT_S)
        except P4RuntimeError as exc:
            errors.append({"switch": switch, "error": str(exc)})
            state.pool.mark_down(switch, str(exc))
            continue
        for t in traffic:
            row = per_round.get(t.round)
            if row is None:
                continue
            row["tree_packets"] += t.packets
            row["tree_bytes"] += t.bytes
            source = ip_site.get(t.source_ip, t.source_ip)
            if source == switch:
                row["streams"][source] = {"packets": t.packets, "bytes": t.bytes}
    rounds = list(per_round.values())
    out: dict = {
        "packets": sum(s["packets"] for r in rounds for s in r["streams"].values()),
        "bytes": sum(s["bytes"] for r in rounds for s in r["streams"].values()),
        "rounds_started": sum(1 for r in rounds if r["streams"]),
        "per_round": rounds,
    }
    if errors:
        out["errors"] = errors
    return out
