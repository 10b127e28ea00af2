"""From a job request to an installable plan: schedule -> rounds of cliques of hosts -> trees, cells, groups.

A schedule is rounds of cliques of *sites* (the optimiser's language); a job runs it over its own worker
hosts: a clique of sites is the job's workers at those sites. Each clique gets a tree planned on the
clique's own switches (so the cliques of one round never share a switch), with its own cells and
multicast group per switch. Data-plane round numbers start at the plan's `round_base`, so a replacement
schedule can be installed beside the old one (at other round numbers) before the old one is removed.

Planning reuses controller.inc.jobs.plan_job per clique; an adapter gives it a private view of the
shared allocator in which owners are (job, round, clique), so allocations of all cliques and rounds,
and of an old and a new schedule, never collide, and a failure releases everything planned so far.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field

from controller.fabric import Fabric
from controller.inc.allocation import AllocationError, Allocator, CellRange
from controller.inc.jobs import (
    HOST_PATH,
    JobPlan,
    LinkKey,
    SwitchRound,
    build_worker_spec,
    host_peers,
    host_port_base,
    max_min_rates,
    parent_links,
    plan_job,
)
from controller.inc.trees import TreeError
from controller.schedule import EdgeParams, ModelError, Network, optimise
from controller.schedule.units import UnitError, parse_bandwidth, parse_size
from controller.service.errors import BadRequest, Conflict, NoRoom
from controller.service.topology import Topology
from edge.protocol import worker_port
from edge.spec import WorkerSpec

STRATEGIES = ("core-tree", "core-cliques", "ring-baseline", "edge-cliques", "edge-all-to-all")
ROTATING = ("core-cliques", "edge-cliques")  # strategies that run a schedule of cliques
EDGE_STRATEGIES = ("edge-cliques", "edge-all-to-all")
FORMATS = ("int32", "float32")
ROUND_SPACE = 1 << 16  # the packet's round field
PLAN_VERSION = 2


@dataclass
class ScheduleSpec:
    """`auto`: ask the optimiser (memory and size per site and round); `explicit`: the given rounds."""

    mode: str  # "auto" | "explicit"
    rounds: list[list[list[str]]] | None = None  # explicit: rounds -> cliques -> sites
    memory: str | None = None
    size: str | None = None
    bandwidth: str | None = None  # default: the topology's real link rate
    families: list[str] | None = None


@dataclass
class EdgeStageSpec:
    """An Edge-INC job's stages at real scale (memory, vector size) and an optional pacing cap."""

    memory: str = "4MB"
    size: str = "64MB"
    max_rate_mbit: float | None = None


@dataclass
class JobSpec:
    workers: list[str]
    strategy: str = "core-tree"
    format: str = "int32"
    slots: int = 256
    name: str = ""
    schedule: ScheduleSpec | None = None
    edge: EdgeStageSpec | None = None  # the edge-* strategies
    # admission on shared switches (controller.inc.jobs.admit): the least window the job takes (None: a
    # quarter of `slots`) and what it runs on below that ("host": a host allreduce, "none": refused)
    min_slots: int | None = None
    fallback: str = "host"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict) -> JobSpec:
        sched = doc.get("schedule")
        edge = doc.get("edge")
        return cls(
            workers=list(doc["workers"]),
            strategy=doc.get("strategy", "core-tree"),
            format=doc.get("format", "int32"),
            slots=int(doc.get("slots", 256)),
            name=doc.get("name", ""),
            schedule=ScheduleSpec(**sched) if sched else None,
            edge=EdgeStageSpec(**edge) if edge else None,
            min_slots=None if doc.get("min_slots") is None else int(doc["min_slots"]),
            fallback=doc.get("fallback", "host"),
        )


@dataclass
class ScheduleChoice:
    """The site rounds a job runs, and where they came from."""

    rounds: list[list[list[str]]]
    source: str  # "explicit", "single tree", or the optimiser's strategy name
    predicted_time_s: float | None = None
    rounds_to_consensus: int | None = None
    exact_average: bool | None = None


@dataclass
class CliquePlan:
    sites: list[str]
    workers: list[str]
    root: str
    max_rtt_ms: float
    tree: dict[str, dict]  # switch -> {"parent": str | None, "children": [names]}


@dataclass
class RoundPlan:
    round: int  # the data-plane round number
    cliques: list[CliquePlan]


@dataclass
class WorkerPlan:
    host: str
    site: str
    switch_ip: str  # where the worker sends contributions
    udp_port: int  # where results come back
    rounds: dict[int, int]  # data-plane round -> workers in its clique (rounds it sits out are absent)
    rto_s: dict[int, float]
    path_rtt_s: dict[int, float] = field(default_factory=dict)  # round -> its tree's slowest path RTT
    rate_bps: dict[int, float] = field(default_factory=dict)  # round -> its tree's slowest link (pace)


@dataclass
class Plan:
    """Everything installed for a job; stored as JSON so a restarted controller re-derives its entries."""

    job: int
    nslots: int
    round_base: int
    schedule: ScheduleChoice
    rounds: list[RoundPlan] = field(default_factory=list)
    switch_rounds: list[SwitchRound] = field(default_factory=list)
    workers: dict[str, WorkerPlan] = field(default_factory=dict)
    ring: list[str] = field(default_factory=list)  # ring-baseline: the ring order of the hosts
    # the job's generation (controller.inc.jobs.new_epoch): new on creation and reset, kept when the
    # job is re-installed (reconcile, a restarted switch) or given a new schedule
    epoch: int = 0
    # the stored form: 1 before protocol v2 (no epochs, no children's addresses), 2 since
    version: int = PLAN_VERSION
    # an Edge-INC job's trees, groups, stage parameters and the specs of its processes
    # (controller.service.edge_jobs); None for the others
    edge: dict | None = None
    # admission: "switch" (sums in the switches; "edge" for Edge-INC's stages) or "host" (no switch state:
    # the workers run `host["algorithm"]` among `host["peers"]` from TCP port `host["port"]` + rank);
    # the slots asked for beside `nslots` (those granted) and why they differ
    path: str = "switch"
    requested_slots: int = 0
    min_slots: int = 0
    reason: str = ""
    host: dict | None = None

    @property
    def period(self) -> int:
        return len(self.rounds)

    def round_numbers(self) -> list[int]:
        return [r.round for r in self.rounds]

    def as_job_plan(self) -> JobPlan:
        """The shape controller.inc's installer functions take."""
        return JobPlan(self.job, self.nslots, [], list(self.switch_rounds), {}, epoch=self.epoch)

    def with_epoch(self, epoch: int) -> Plan:
        """The same plan in another generation (what POST /jobs/{id}/reset installs)."""
        new = Plan.from_json(self.to_json())
        new.epoch = epoch
        for sr in new.switch_rounds:
            sr.epoch = epoch
        if new.edge is not None:
            new.edge["plan"]["epoch"] = epoch
            for spec in (*new.edge["sites"].values(), *new.edge["receivers"].values()):
                spec["epoch"] = epoch
        return new

    def owners(self) -> list[tuple[int, int, int]]:
        """Every allocator owner the job holds resources under."""
        out = [(self.job, rp.round, c) for rp in self.rounds for c in range(len(rp.cliques))]
        for a in self.edge["allocations"] if self.edge else []:
            out.append((self.job, a[1], a[2]))
        return sorted(set(out))

    def worker_spec(
        self, host: str, stall_timeout_s: float = 30.0, share_bps: dict[int, float] | None = None
    ) -> WorkerSpec:
        """What worker `host` is told (edge.spec.WorkerSpec): one entry per round of the cycle;
        `share_bps` (round -> the job's fair share of its links, concurrent_shares) is the pace the
        worker starts at."""
        w = self.workers[host]
        return build_worker_spec(
            self.job, self.epoch, host, w.switch_ip, self.nslots, self.round_numbers(),
            w.rounds, w.rto_s, w.path_rtt_s, stall_timeout_s, w.rate_bps, share_bps,
        )  # fmt: skip

    def round_links(self, fabric: Fabric, index: int) -> dict[LinkKey, float]:
        """The links the cliques of the `index`-th round of the cycle put chunks on, with their rates."""
        links: dict[LinkKey, float] = {}
        for c in self.rounds[index].cliques:
            parents = {sw: node.get("parent") for sw, node in c.tree.items()}
            links.update(parent_links(fabric, parents, c.workers))
        return links

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict) -> Plan:
        """A stored plan; raises ValueError for a form newer than this controller knows."""
        if int(doc.get("version", 1)) > PLAN_VERSION:
            raise ValueError(f"plan version {doc['version']}: this controller knows up to {PLAN_VERSION}")
        srs = []
        for s in doc.get("switch_rounds", []):
            s = dict(s)
            s["cells"] = CellRange(**s["cells"])
            s["worker_children"] = [tuple(w) for w in s["worker_children"]]
            srs.append(SwitchRound(**s))
        rounds = [
            RoundPlan(r["round"], [CliquePlan(**c) for c in r["cliques"]]) for r in doc.get("rounds", [])
        ]
        workers = {}
        for host, w in doc.get("workers", {}).items():
            workers[host] = WorkerPlan(
                w["host"],
                w["site"],
                w["switch_ip"],
                w["udp_port"],
                {int(k): int(v) for k, v in w["rounds"].items()},
                {int(k): float(v) for k, v in w["rto_s"].items()},
                {int(k): float(v) for k, v in w.get("path_rtt_s", {}).items()},  # absent in old rows
                {int(k): float(v) for k, v in w.get("rate_bps", {}).items()},  # absent in older rows
            )
        return cls(
            doc["job"],
            doc["nslots"],
            doc["round_base"],
            ScheduleChoice(**doc["schedule"]),
            rounds,
            srs,
            workers,
            list(doc.get("ring", [])),
            int(doc.get("epoch", 0)),
            int(doc.get("version", 1)),
            doc.get("edge"),
            doc.get("path", "switch"),
            int(doc.get("requested_slots", doc["nslots"])),
            int(doc.get("min_slots", 0)),
            doc.get("reason", ""),
            doc.get("host"),
        )


# --- validation and schedules ----------------------------------------------------------------------


def concurrent_shares(fabric: Fabric, plan: Plan, others: Iterable[Plan]) -> dict[int, float]:
    """Round number -> `plan`'s max-min fair share (controller.inc.jobs.fair_shares) of its links among
    the `others` on the switch path, the jobs installed beside it: what its workers start their pace
    at. A REST job cannot know whether the others are sending; they were installed to run, and a worker
    whose links turn out idle grows to the link's rate within a few RTTs (edge.worker.RateControl), while
    k jobs that all start at the link's rate queue k-fold and lose their tails. The i-th round of every
    cycle is taken to run beside the i-th of the others, as the CLI's tenants do."""
    peers = [o for o in others if o.job != plan.job and o.path == "switch" and o.edge is None and o.rounds]
    shares: dict[int, float] = {}
    for i, rp in enumerate(plan.rounds):
        links = {plan.job: plan.round_links(fabric, i)}
        for o in peers:
            links[o.job] = o.round_links(fabric, i % len(o.rounds))
        shares[rp.round] = max_min_rates(links)[plan.job]
    return shares


def check_workers(topology: Topology, workers: list[str]) -> dict[str, list[str]]:
    """The job's workers by site; raises BadRequest for unknown hosts, edge hosts and duplicates."""
    if not workers:
        raise BadRequest("a job needs at least one worker")
    dups = sorted({w for w in workers if workers.count(w) > 1})
    if dups:
        raise BadRequest(f"worker(s) listed twice: {', '.join(dups)}")
    by_site: dict[str, list[str]] = {}
    known = topology.workers()
    for w in workers:
        try:
            sw, att = topology.fabric.host(w)
        except KeyError:
            hint = ", ".join(known[:6]) + (", ..." if len(known) > 6 else "")
            raise BadRequest(f"unknown host {w!r} (worker hosts: {hint})") from None
        if att.role != "worker":
            raise BadRequest(f"host {w!r} is a {att.role} host, not a worker")
        by_site.setdefault(sw.name, []).append(w)
    return by_site


def check_rounds(topology: Topology, rounds: list[list[list[str]]], job_sites: set[str]) -> None:
    if not rounds:
        raise BadRequest("a schedule needs at least one round")
    known = set(topology.sites)
    for r, cliques in enumerate(rounds):
        seen: dict[str, int] = {}
        for c, clique in enumerate(cliques):
            for site in clique:
                if site not in known:
                    raise BadRequest(
                        f"schedule round {r}: unknown site {site!r} (sites: {', '.join(topology.sites)})"
                    )
                if site not in job_sites:
                    raise BadRequest(
                        f"schedule round {r}: site {site} has none of the job's workers "
                        f"(the job's sites: {', '.join(sorted(job_sites))})"
                    )
                if site in seen:
                    raise BadRequest(f"schedule round {r}: site {site} is in cliques {seen[site]} and {c}")
                seen[site] = c
        if not any(len(c) > 1 for c in cliques):
            raise BadRequest(f"schedule round {r} has no clique of two or more sites: nothing to average")


def choose_schedule(
    topology: Topology, spec: JobSpec, sites: list[str], progress: Callable[[str], None] | None = None
) -> ScheduleChoice:
    if spec.strategy == "edge-all-to-all":
        if len(sites) < 2:
            raise BadRequest("edge-all-to-all needs workers at two sites or more")
        return ScheduleChoice([[sites]], "all-to-all", exact_average=True, rounds_to_consensus=1)
    if spec.strategy not in ROTATING:
        return ScheduleChoice([[sites]], "single tree")
    sched = spec.schedule
    if sched is None:
        raise BadRequest(
            f"strategy {spec.strategy} needs a schedule: {{'mode': 'auto', ...}} or explicit rounds"
        )
    if sched.mode == "explicit":
        check_rounds(topology, sched.rounds or [], set(sites))
        return ScheduleChoice([[list(c) for c in rnd] for rnd in sched.rounds or []], "explicit")
    if len(sites) < 2:
        raise BadRequest("an automatic schedule needs workers at two sites or more")
    try:
        memory = parse_size(sched.memory or "4MB")
        size = parse_size(sched.size or "64MB")
        bandwidth = parse_bandwidth(sched.bandwidth) if sched.bandwidth else topology.real_rate_mbit * 1e6
        net = Network(
            tuple(sites),
            topology.latency_matrix_s(sites),
            bandwidth,
            tuple(topology.regions.get(s, "") for s in sites) if topology.regions else (),
        )
        kwargs = {"families": tuple(sched.families)} if sched.families else {}
        result = optimise(net, EdgeParams(memory, size), progress=progress, **kwargs)
    except (UnitError, ModelError, KeyError, ValueError) as exc:
        raise BadRequest(f"schedule: {exc}") from None
    if not result.candidates:
        raise BadRequest("the optimiser found no schedule that reaches consensus for these sites")
    best = result.best
    t = best.time_s
    if spec.strategy == "edge-cliques":
        # the stages sum: a run is the cycle repeated until consensus (a finite-time design's rounds)
        cycle = best.named_rounds(net)
        n = best.mixing.rounds if best.mixing.reaches else len(cycle)
        return ScheduleChoice(
            [[list(c) for c in cycle[r % len(cycle)]] for r in range(n)],
            best.strategy,
            t if math.isfinite(t) else None,
            best.mixing.rounds if best.mixing.reaches else None,
            best.mixing.exact,
        )
    return ScheduleChoice(
        best.named_rounds(net),
        best.strategy,
        t if math.isfinite(t) else None,
        best.mixing.rounds if best.mixing.reaches else None,
        best.mixing.exact,
    )


def next_round_base(old: Plan | None, period: int) -> int:
    """Round numbers for a new schedule that do not overlap the old one's."""
    if old is None or not old.rounds:
        return 0
    start = old.round_base + old.period
    if start + period <= ROUND_SPACE:
        return start
    if period <= old.round_base:
        return 0
    raise Conflict(f"no free range of {period} round numbers beside the current schedule")


# --- planning ---------------------------------------------------------------------------------------


class _CliqueAllocator:
    """plan_job's view of the shared allocator: its owner (tenant, 0) becomes (job, round, clique)."""

    def __init__(self, shared: Allocator, owner: tuple[int, int, int], taken: list[object]) -> None:
        self.shared, self.owner, self.taken = shared, owner, taken

    def allocate(self, _owner: object, requests: dict[str, int]) -> dict[str, tuple[CellRange, int]]:
        grants = self.shared.allocate(self.owner, requests)
        self.taken.append(self.owner)
        return grants

    def release(self, _owner: object) -> None:
        self.shared.release(self.owner)
        if self.owner in self.taken:
            self.taken.remove(self.owner)


def build_plan(
    topology: Topology,
    allocator: Allocator,
    job_id: int,
    spec: JobSpec,
    choice: ScheduleChoice,
    epoch: int,
    round_base: int = 0,
    others: Sequence[Plan] = (),
) -> Plan:
    """Plan every clique of every round and allocate its resources, all or nothing; every switch round
    carries the job's `epoch`; `others` are the other jobs' plans (a ring-baseline job's TCP ports avoid
    theirs).

    Raises BadRequest for a job that cannot be built and Conflict when a switch lacks cells or groups."""
    by_site = check_workers(topology, spec.workers)
    plan = Plan(job_id, spec.slots, round_base, choice, epoch=epoch, requested_slots=spec.slots)
    if spec.strategy == "ring-baseline":
        plan = host_plan(
            topology, job_id, spec, choice, epoch, "ring", "the job asked for a host ring", others
        )
        plan.ring = list(spec.workers)
        return plan
    if round_base + len(choice.rounds) > ROUND_SPACE:
        raise BadRequest(f"a schedule has at most {ROUND_SPACE} rounds")
    taken: list[object] = []
    try:
        for r, cliques in enumerate(choice.rounds):
            number = round_base + r
            rp = RoundPlan(number, [])
            # a site alone sits the round out
            kept = [s for s in cliques if len(s) > 1 or spec.strategy != "core-cliques"]
            for c, sites in enumerate(kept):
                hosts = [h for s in sites for h in by_site.get(s, [])]
                sub = plan_job_on(
                    topology, allocator, (job_id, number, c), taken, job_id, hosts, spec.slots, sites, epoch
                )
                _merge(plan, rp, sub, number, sites, hosts, topology)
            plan.rounds.append(rp)
    except BaseException:
        for owner in list(taken):
            allocator.release(owner)
        raise
    return plan


def host_ranges(plans: Iterable[Plan]) -> list[tuple[int, int]]:
    """The (first port, ranks) of every host-path job's TCP ports."""
    return [(int(p.host["port"]), len(p.host["peers"])) for p in plans if p.host]


def host_plan(
    topology: Topology,
    job_id: int,
    spec: JobSpec,
    choice: ScheduleChoice,
    epoch: int,
    algorithm: str,
    reason: str,
    others: Sequence[Plan] = (),
) -> Plan:
    """A job on the host path: no switch state at all; its workers run `algorithm` (edge.runner's
    "hierarchical" or "ring") among themselves, rank r listening on TCP port `port` + r, a range no other
    host-path job (`others`) uses, so jobs that share hosts never share ports."""
    check_workers(topology, spec.workers)
    try:
        base = host_port_base(host_ranges(others), len(spec.workers))
    except AllocationError as exc:
        raise Conflict(str(exc)) from None
    plan = Plan(job_id, 0, 0, choice, epoch=epoch, path=HOST_PATH, requested_slots=spec.slots, reason=reason)
    plan.min_slots = spec.min_slots or 0
    plan.host = {
        "algorithm": algorithm,
        "port": base,
        "peers": host_peers(topology.fabric, list(spec.workers)),
    }
    return plan


def plan_job_on(
    topology: Topology,
    allocator: Allocator,
    owner: tuple[int, int, int],
    taken: list[object],
    job_id: int,
    hosts: list[str],
    nslots: int,
    sites: list[str],
    epoch: int,
) -> JobPlan:
    """One clique's tree on its own sites' switches (the whole fabric when those are not connected)."""
    alloc = _CliqueAllocator(allocator, owner, taken)
    fabrics = (
        [topology.sub_fabric(sites), topology.fabric]
        if len(sites) < len(topology.sites)
        else [topology.fabric]
    )
    last: Exception | None = None
    for fabric in fabrics:
        try:
            return plan_job(fabric, alloc, job_id, [[hosts]], nslots, epoch)  # type: ignore[arg-type]
        except TreeError as exc:
            last = exc
        except AllocationError as exc:
            raise NoRoom(f"not enough switch resources: {exc}") from None
    raise BadRequest(f"cannot build a tree over {', '.join(sites)}: {last}")


def _merge(
    plan: Plan,
    rp: RoundPlan,
    sub: JobPlan,
    number: int,
    sites: list[str],
    hosts: list[str],
    topology: Topology,
) -> None:
    tree = sub.trees[0][0]
    used = {sr.switch for sr in plan.switch_rounds if sr.round == number}
    for sr in sub.switches:
        if sr.switch in used:
            raise BadRequest(f"round {number - plan.round_base}: two cliques need switch {sr.switch}")
        sr.round = number
        plan.switch_rounds.append(sr)
    rp.cliques.append(
        CliquePlan(
            list(sites),
            list(hosts),
            tree.root,
            tree.max_rtt_ms,
            {
                name: {"parent": node.parent, "children": [c.name for c in node.children]}
                for name, node in tree.nodes.items()
            },
        )
    )
    for host, a in sub.workers.items():
        w = plan.workers.get(host)
        if w is None:
            site = topology.fabric.switch(a.switch)
            w = plan.workers[host] = WorkerPlan(host, a.switch, site.inc_ip, worker_port(plan.job), {}, {})
        w.rounds[number] = a.clique_size[0]
        w.rto_s[number] = a.rto_s[0]
        w.path_rtt_s[number] = a.path_rtt_s[0]
        w.rate_bps[number] = a.rate_bps.get(0, 0.0)


def allocation_rows(plan: Plan) -> list[tuple[str, int, int, int, int]]:
    """(switch, round, clique, base, cells, group) of every switch round, for the store."""
    clique_of: dict[tuple[str, int], int] = {}
    for rp in plan.rounds:
        for c, cp in enumerate(rp.cliques):
            for sw in cp.tree:
                clique_of[(sw, rp.round)] = c
    return [
        (
            sr.switch,
            sr.round,
            clique_of.get((sr.switch, sr.round), 0),
            sr.cells.base,
            sr.cells.cells,
            sr.group,
        )
        for sr in plan.switch_rounds
    ]
