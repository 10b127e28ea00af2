"""Edge-INC jobs in the service: from a request to trees, groups and the specs of the job's processes.

An edge job runs on sites, not on single workers: each site with workers of the job takes part through
its edge host's stage (edge.edge_site), which delivers the sums to the job's workers at that site
(edge.edge_receiver). The service plans the trees (controller.edge.plan) with multicast group ids from
its shared allocator (so Core-INC's and Edge-INC's groups never collide, and a restarted controller
reserves them again from its store), scales the stages' memory and the vector from real scale to the
emulated links as `tributary schedule --run` does (DESIGN.md section 6), and stores the model's pacing
per clique and round (controller.schedule.emulated) with the specs, so the job view tells each process
what to run and how fast, and what the model predicts for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.edge.plan import EdgeJobPlan, EdgePlanError, plan_edge_job, runnable
from controller.edge.stage_specs import receiver_spec, site_specs
from controller.inc.allocation import AllocationError, Allocator
from controller.schedule.emulated import CHUNK_BYTES, EmulatedParams, emulated_params, predict_schedule
from controller.schedule.model import ModelError, Network
from controller.schedule.units import UnitError, parse_size
from controller.service.errors import BadRequest, Conflict
from controller.service.plans import (
    CliquePlan,
    EdgeStageSpec,
    JobSpec,
    Plan,
    RoundPlan,
    ScheduleChoice,
    check_workers,
)
from controller.service.topology import Topology

# allocator owners of an edge job's groups: (job, round, SOURCE_OWNER + the source's site id), apart
# from Core-INC's (job, round, clique index)
SOURCE_OWNER = 1 << 16


@dataclass
class _AllocatorGroups:
    """controller.edge.plan's group source, backed by the service's allocator (no cells, one group)."""

    allocator: Allocator
    job: int
    site_ids: dict[str, int]

    def __post_init__(self) -> None:
        self.taken: list[tuple[str, int, int, int]] = []  # (switch, round, owner index, group)

    def take(self, switch: str, round: int, source: str) -> int:
        owner = (self.job, round, SOURCE_OWNER + self.site_ids[source])
        try:
            [(_, group)] = self.allocator.allocate(owner, {switch: 0}).values()
        except AllocationError as exc:
            raise Conflict(f"not enough switch resources: {exc}") from None
        self.taken.append((switch, round, owner[2], group))
        return group

    def release(self, plan: EdgeJobPlan | None = None) -> None:
        for _switch, rnd, idx, _group in self.taken:
            self.allocator.release((self.job, rnd, idx))
        self.taken.clear()


def emulated_rate_bps(topology: Topology, sites: list[str], cap_mbit: float | None) -> float:
    """The rate the streams are paced for: the slowest link among the job's sites, or the cap."""
    keep = set(sites)
    rates = [
        link.rate_mbit for link in topology.links if link.a in keep and link.b in keep and link.rate_mbit > 0
    ]
    candidates = [min(rates) * 1e6] if rates else []
    if cap_mbit:
        candidates.append(cap_mbit * 1e6)
    if not candidates:
        raise BadRequest("the topology gives no link rate for these sites: set edge.max_rate_mbit")
    return min(candidates)


def stage_params(topology: Topology, sites: list[str], edge: EdgeStageSpec) -> EmulatedParams:
    try:
        memory, size = parse_size(edge.memory), parse_size(edge.size)
        keep = set(sites)
        loss = max(
            (link.loss_pct / 100 for link in topology.links if link.a in keep and link.b in keep), default=0.0
        )
        return emulated_params(
            memory,
            size,
            topology.real_rate_mbit * 1e6,
            emulated_rate_bps(topology, sites, edge.max_rate_mbit),
            loss=loss,
        )
    except (UnitError, ModelError) as exc:
        raise BadRequest(f"edge: {exc}") from None


def build_edge_plan(
    topology: Topology, allocator: Allocator, job_id: int, spec: JobSpec, choice: ScheduleChoice, epoch: int
) -> Plan:
    """Plan an Edge-INC job and take its groups, all or nothing; raises BadRequest or Conflict."""
    by_site = check_workers(topology, spec.workers)
    sites = [s for s in topology.sites if s in by_site]
    why = runnable(choice.rounds)
    if why is not None:
        raise BadRequest(f"schedule: {why}")
    params = stage_params(topology, sites, spec.edge or EdgeStageSpec())
    names = {sw.name: i for i, sw in enumerate(topology.fabric.switches, start=1)}
    groups = _AllocatorGroups(allocator, job_id, names)
    try:
        net = Network(tuple(sites), topology.latency_matrix_s(sites), params.payload_bps)
        sp = predict_schedule(net, params, choice.rounds, spec.format)
    except (ModelError, EdgePlanError) as exc:
        raise BadRequest(f"schedule: {exc}") from None
    predicted, total = sp.predicted, sp.total_s
    try:
        eplan = plan_edge_job(topology.fabric, job_id, epoch, sp.rounds, groups)
    except EdgePlanError as exc:
        groups.release()
        raise BadRequest(str(exc)) from None
    except BaseException:
        groups.release()
        raise
    ips = {h.name: h.ip for sw in topology.fabric.switches for h in sw.hosts}
    specs = site_specs(
        eplan, predicted, params, topology.fabric, topology.rtt_ms,
        {s: [ips[w] for w in ws] for s, ws in by_site.items()}, fmt=spec.format, kinds=sp.kinds,
    )  # fmt: skip
    receivers = {
        w: receiver_spec(eplan, specs[s], ips[w], params.chunks)
        for s, ws in by_site.items()
        for w in ws
        if s in specs
    }
    plan = Plan(job_id, 0, 1, choice, epoch=epoch)
    for rp in predicted:
        plan.rounds.append(
            RoundPlan(
                rp.round,
                [
                    CliquePlan(
                        list(c.members),
                        [w for m in c.members for w in by_site.get(m, [])],
                        "",
                        max(topology.rtt_ms(a, b) for a in c.members for b in c.members),
                        {},
                    )
                    for c in rp.cliques
                ],
            )
        )
    plan.edge = {
        "plan": eplan.to_json(),
        "allocations": [[sw, rnd, idx, 0, 0, grp] for sw, rnd, idx, grp in groups.taken],
        "stage": {
            **params.to_json(),
            "accumulators": params.memory_bytes // CHUNK_BYTES,
            "frame_s": params.frame_s,
            "real_memory": (spec.edge or EdgeStageSpec()).memory,
            "real_size": (spec.edge or EdgeStageSpec()).size,
        },
        "predicted_s": total if total != float("inf") else None,
        "rounds": [
            {
                "round": rp.round,
                "kind": sp.kinds[rp.round - 1],
                "predicted_s": _finite(rp.time_s),
                "cliques": [
                    {
                        "members": list(c.members),
                        "rate_mbit": round(c.rate_Bps * 8 / 1e6, 6),
                        "gap_s": c.gap_s,
                        "agree_s": c.agree_s,
                        "limit": c.limit,
                        "predicted_s": _finite(c.time_s),
                    }
                    for c in rp.cliques
                ],
            }
            for rp in predicted
        ],
        "sites": specs,
        "receivers": receivers,
    }
    return plan


def _finite(x: float) -> float | None:
    return round(x, 6) if x != float("inf") else None


def edge_plan_of(plan: Plan) -> EdgeJobPlan | None:
    return EdgeJobPlan.from_json(plan.edge["plan"]) if plan.edge else None
