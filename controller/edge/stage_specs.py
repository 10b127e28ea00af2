"""What each process of an Edge-INC job is told: a site's stage process (edge.edge_site.SiteSpec) and a
worker's receiver (edge.edge_receiver), derived from the plan and the model's per-clique pacing.

One builder for the tools (`tributary schedule --run`) and for the service (the job view lists these
specs, so a user starts the processes from what POST /jobs answered). The fields a run supplies itself
(the site's input vector, the common start time, where reports go) are left out: `RUNTIME_FIELDS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from controller.edge.plan import EdgeJobPlan, edge_host
from controller.fabric import Fabric
from controller.schedule.emulated import EmulatedParams, RoundPrediction

RUNTIME_FIELDS = ("lanes_path", "start_at", "report")  # a site's; a receiver's: out, report, timeout_s
MIN_IDLE_S = 0.1  # a stream silent this long (and at least 6 gaps) past its paced end: ask for its tail


def site_rounds(
    plan: EdgeJobPlan, predicted: Sequence[RoundPrediction], site: str, rtt_ms: Callable[[str, str], float],
    frame_s: float, kinds: Sequence[str] | None = None,
) -> list[dict]:  # fmt: skip
    """The rounds `site` takes part in, with its clique's pacing and start agreement from the model and
    each round's kind (data_plane_rounds: "sum", or "max" for a float32 round's exponents)."""
    ids = plan.site_ids
    out = []
    for i, rp in enumerate(predicted):
        clique = next((c for c in rp.cliques if site in c.members), None)
        if clique is None:
            continue
        out.append(
            {
                "round": rp.round,
                "members": [ids[m] for m in clique.members],
                "gap_s": clique.gap_s,
                "agree_s": clique.agree_s,
                "rtt_s": {str(ids[m]): rtt_ms(site, m) / 1e3 for m in clique.members if m != site},
                "idle_s": max(6 * clique.gap_s, MIN_IDLE_S),
                "frame_s": frame_s,
                "kind": kinds[i] if kinds else "sum",
            }
        )
    return out


def site_specs(
    plan: EdgeJobPlan,
    predicted: Sequence[RoundPrediction],
    params: EmulatedParams,
    fabric: Fabric,
    rtt_ms: Callable[[str, str], float],
    workers: dict[str, list[str]],
    stall_timeout_s: float = 30.0,
    fmt: str = "int32",
    kinds: Sequence[str] | None = None,
) -> dict[str, dict]:
    """Site name -> its stage spec without the runtime fields, for the sites that take part in a round;
    `workers` maps a site to the addresses of the workers its stage delivers to; `kinds` per data-plane
    round (controller.edge.plan.data_plane_rounds)."""
    edge_ip = {sw.name: edge_host(sw).ip for sw in fabric.switches if any(h.role == "edge" for h in sw.hosts)}
    out = {}
    for sw in fabric.switches:
        rounds = site_rounds(plan, predicted, sw.name, rtt_ms, params.frame_s, kinds)
        if not rounds:
            continue
        members = {m for r in rounds for m in r["members"]}
        out[sw.name] = {
            "site": plan.site_ids[sw.name],
            "ip": edge_ip[sw.name],
            "tenant": plan.tenant,
            "epoch": plan.epoch,
            "memory_bytes": params.memory_bytes,
            "stream_ip": sw.inc_ip,
            "peers": {
                str(plan.site_ids[n]): ip
                for n, ip in edge_ip.items()
                if plan.site_ids[n] in members and n != sw.name
            },
            "workers": list(workers.get(sw.name, [])),
            "rounds": rounds,
            "replicate": "network",
            "stall_timeout_s": stall_timeout_s,
            "linger_s": 2.0,
            "format": fmt,
        }
    return out


def receiver_spec(plan: EdgeJobPlan, site_spec: dict, worker_ip: str, chunks: int) -> dict:
    """A worker's receiver: where its stage is, and the rounds (and chunks) it receives: the sum rounds
    (a float32 job's exponent rounds stay with the stages; its results arrive as float32)."""
    return {
        "ip": worker_ip,
        "stage_ip": site_spec["ip"],
        "tenant": plan.tenant,
        "epoch": plan.epoch,
        "rounds": [
            {"round": r["round"], "chunks": chunks}
            for r in site_spec["rounds"]
            if r.get("kind", "sum") == "sum"
        ],
        "format": site_spec.get("format", "int32"),
    }
