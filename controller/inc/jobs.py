"""Planning an INC job: one reduction tree per clique of each round, cells and groups on every switch
the trees use, and what each worker needs to know (its switch's INC address, the window, the round)."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from controller.fabric import Fabric
from controller.inc.allocation import AllocationError, Allocator, CellRange
from controller.inc.trees import Tree, TreeError, plan_tree
from edge.protocol import MAX_TENANT, worker_port
from edge.spec import MAX_EPOCH, RoundSpec, WorkerSpec

DEFAULT_SLOTS = 256


def new_epoch() -> int:
    """A job generation: random and non-zero, so a reused job id, a reset job or a guess never matches
    what an earlier generation's stragglers carry (p4src/include/aggregation.p4 drops other epochs)."""
    return 1 + secrets.randbelow(MAX_EPOCH)


@dataclass
class SwitchRound:
    """What one switch holds for one round of a job."""

    switch: str
    round: int
    cells: CellRange
    group: int
    fan_in: int
    is_root: bool
    parent_port: int
    children: list[int]  # ports; a child's index is its position here
    worker_children: list[tuple[int, str, str]]  # (port, mac, ip) of children that are workers
    switch_mac: str = ""  # the switch's INC address: the source of results delivered to workers
    switch_ip: str = ""
    # the source address of each child (same order as `children`): a worker's own address, or a child
    # switch's INC address; a contribution counts only from its port and this address
    child_ips: list[str] = field(default_factory=list)
    epoch: int = 0  # the job generation the switch accepts (0: never installed; see new_epoch)


@dataclass
class WorkerAssignment:
    host: str
    port: int  # UDP port the worker receives results on
    switch: str
    inc_ip: str
    rounds: list[int]  # rounds this worker takes part in
    clique_size: dict[int, int]  # round -> workers summed in its clique
    rto_s: dict[int, float]
    path_rtt_s: dict[int, float] = field(default_factory=dict)  # round -> the tree's slowest path RTT
    rate_bps: dict[int, float] = field(default_factory=dict)  # round -> the tree's slowest link rate
    share_bps: dict[int, float] = field(default_factory=dict)  # round -> its fair share (share_links)


@dataclass
class JobPlan:
    tenant: int
    nslots: int
    trees: list[list[Tree]]  # round -> cliques
    switches: list[SwitchRound] = field(default_factory=list)
    workers: dict[str, WorkerAssignment] = field(default_factory=dict)
    epoch: int = 0

    @property
    def owner_keys(self) -> list[tuple[int, int]]:
        return [(self.tenant, r) for r in range(len(self.trees))]

    def worker_spec(self, host: str, stall_timeout_s: float = 30.0) -> WorkerSpec:
        """What worker `host` is told (edge.spec): every parameter the planner computed for it."""
        a = self.workers[host]
        return build_worker_spec(
            self.tenant, self.epoch, host, a.inc_ip, self.nslots, range(len(self.trees)),
            a.clique_size, a.rto_s, a.path_rtt_s, stall_timeout_s, a.rate_bps, a.share_bps,
        )  # fmt: skip


def build_worker_spec(
    tenant: int,
    epoch: int,
    host: str,
    switch_ip: str,
    nslots: int,
    round_numbers: Iterable[int],
    clique_size: dict[int, int],
    rto_s: dict[int, float],
    path_rtt_s: dict[int, float],
    stall_timeout_s: float = 30.0,
    rate_bps: dict[int, float] | None = None,
    share_bps: dict[int, float] | None = None,
) -> WorkerSpec:
    """A worker's spec from what a plan holds for it, one entry per round of the cycle (None for the
    rounds it sits out): the one place a plan becomes an edge.spec.WorkerSpec (the tools' JobPlan and
    the service's stored plans both). `rate_bps` (round -> the tree's slowest link, where the fabric
    knows its rates) caps the worker's pace; `share_bps` (round -> the job's fair share of those links
    among the jobs admitted beside it, fair_shares) is the pace it starts at and sets its first window."""
    rates, shares = rate_bps or {}, share_bps or {}
    period = [
        RoundSpec(
            round=r,
            clique_size=clique_size[r],
            rto_s=rto_s.get(r, 1.0),
            path_rtt_s=path_rtt_s.get(r, 0.0),
            rate_bps=rates.get(r, 0.0),
            share_bps=min(shares.get(r, 0.0), rates.get(r, 0.0)),
        )
        if r in clique_size
        else None
        for r in round_numbers
    ]
    return WorkerSpec(
        tenant=tenant,
        epoch=epoch,
        host=host,
        switch_ip=switch_ip,
        nslots=nslots,
        period=period,
        stall_timeout_s=stall_timeout_s,
    )


def tree_rate_bps(fabric: Fabric, tree: Tree) -> float:
    """The rate of the slowest link `tree` uses, in bits/s (0 when the fabric does not know one): each
    chunk crosses every tree link once per direction, so it is the pace the tree's workers can send at."""
    rates = [fabric.rate_mbit(n.switch, n.parent) for n in tree.nodes.values() if n.parent is not None]
    if fabric.access_rate_mbit and tree.workers:
        rates.append(fabric.access_rate_mbit)
    if not rates or min(rates) <= 0:
        return 0.0
    return min(rates) * 1e6


LinkKey = tuple[str, str]  # a WAN link (its two switches, sorted) or ("access", host)


def tree_links(fabric: Fabric, tree: Tree) -> dict[LinkKey, float]:
    """Every link `tree` puts its chunks on, with its rate in bits/s (links of unknown rate left out):
    the tree's WAN links and, where sites are access-limited, each worker's access link."""
    return parent_links(fabric, {n.switch: n.parent for n in tree.nodes.values()}, tree.workers)


def parent_links(
    fabric: Fabric, parents: dict[str, str | None], workers: Iterable[str]
) -> dict[LinkKey, float]:
    """tree_links of a tree given as switch -> its parent (None at the root), as stored plans keep it."""
    links: dict[LinkKey, float] = {}
    for switch, parent in parents.items():
        if parent is not None:
            rate = fabric.rate_mbit(switch, parent)
            if rate > 0:
                a, b = sorted((switch, parent))
                links[(a, b)] = rate * 1e6
    if fabric.access_rate_mbit > 0:
        for host in workers:
            links[("access", host)] = fabric.access_rate_mbit * 1e6
    return links


def fair_shares(fabric: Fabric, trees: dict[int, list[Tree]]) -> dict[int, float]:
    """Max-min fair rates (bits/s) of jobs that run at the same time: job -> the pace its workers start at.

    `trees` holds each job's trees that are busy at once (one round's cliques). Why: every job's workers
    pace at their tree's slowest link, so k jobs on one link start k times faster than it drains, the
    queue shows in every RTT, and the last chunks of whichever job is unlucky wait behind it: one tenant
    then finishes seconds after the others. Water-filling (Bertsekas and Gallager, Data Networks,
    section 6.5.2): raise every unfrozen job's rate together until a link is full, freeze the jobs on it
    at that rate, repeat. A job's rate then is the smallest share it gets on any of its links, and no job
    can get more without taking from one with less. A job none of whose links has a known rate gets 0
    (its workers do not pace), as one alone would."""
    return max_min_rates(
        {
            job: {k: v for tree in job_trees for k, v in tree_links(fabric, tree).items()}
            for job, job_trees in trees.items()
        }
    )


def max_min_rates(links: dict[int, dict[LinkKey, float]]) -> dict[int, float]:
    """fair_shares' water-filling over each job's links (link -> its rate in bits/s)."""
    uses = {job: set(job_links) for job, job_links in links.items()}
    capacity = {k: v for job_links in links.values() for k, v in job_links.items()}
    rates = {job: 0.0 for job in links}
    active = {job for job, links in uses.items() if links}
    level = 0.0  # the common rate of every job not yet frozen
    while active:
        # the link that fills first as the active jobs' common rate grows
        step, full = min(
            ((capacity[link] - _load(link, uses, rates, active, level)) / n, link)
            for link in capacity
            if (n := sum(1 for j in active if link in uses[j]))
        )
        level += max(0.0, step)
        frozen = {j for j in active if full in uses[j]}
        for j in frozen:
            rates[j] = level
        active -= frozen
    return rates


def share_links(fabric: Fabric, plans: list[JobPlan]) -> None:
    """Set every worker's fair share (WorkerAssignment.share_bps) of the links its job shares with the
    other `plans`, round by round (round r of every job is taken to run beside round r of the others: a
    plain allreduce has one round). The CLI's tenants start together, so each is told its share of all."""
    rounds = max((len(p.trees) for p in plans), default=0)
    for r in range(rounds):
        shares = fair_shares(fabric, {i: p.trees[r] for i, p in enumerate(plans) if r < len(p.trees)})
        for i, p in enumerate(plans):
            if r < len(p.trees):
                for a in p.workers.values():
                    if r in a.clique_size:
                        a.share_bps[r] = shares[i]


def _load(
    link: LinkKey, uses: dict[int, set[LinkKey]], rates: dict[int, float], active: set[int], level: float
) -> float:
    """What `link` carries while the active jobs run at `level` and the frozen ones at their rates."""
    return sum(level if j in active else rates[j] for j, links in uses.items() if link in links)


def rto_for(tree: Tree) -> float:
    """First retransmission timeout, before the worker has measured any RTT: RFC 6298's 1 s, or more
    when the tree's slowest path is long (the worker adapts it from its own measurements)."""
    return max(1.0, 2.0 * tree.max_rtt_ms / 1000.0)


def plan_job(
    fabric: Fabric,
    allocator: Allocator,
    tenant: int,
    rounds: list[list[list[str]]],
    nslots: int = DEFAULT_SLOTS,
    epoch: int | None = None,
) -> JobPlan:
    """Plan (and allocate resources for) a job whose round r has cliques `rounds[r]` of worker hosts.

    A single round with a single clique is a plain allreduce over one tree. `epoch` is the job's
    generation (a fresh one when None); whoever re-installs the same job passes the same epoch. Raises
    TreeError for a bad job and AllocationError when a switch lacks cells or groups (nothing stays
    allocated then)."""
    if not 0 < tenant <= MAX_TENANT:
        raise TreeError(f"tenant id must be in 1..{MAX_TENANT}, got {tenant}")
    if not 1 <= nslots <= 4096:
        raise TreeError(f"slots must be in 1..4096, got {nslots}")
    if not rounds:
        raise TreeError("a job needs at least one round")
    trees: list[list[Tree]] = []
    for r, cliques in enumerate(rounds):
        round_trees = [plan_tree(fabric, clique) for clique in cliques]
        used: dict[str, int] = {}
        for i, tree in enumerate(round_trees):
            for sw in tree.nodes:
                if sw in used:
                    raise TreeError(f"round {r}: cliques {used[sw]} and {i} both need switch {sw}")
                used[sw] = i
        trees.append(round_trees)
    if epoch is None:
        epoch = new_epoch()
    if not 1 <= epoch <= MAX_EPOCH:
        raise TreeError(f"an epoch is in 1..{MAX_EPOCH}, got {epoch}")
    plan = JobPlan(tenant, nslots, trees, epoch=epoch)
    allocated: list[tuple[int, int]] = []
    try:
        for r, round_trees in enumerate(trees):
            requests = {sw: 2 * nslots for tree in round_trees for sw in tree.nodes}
            grants = allocator.allocate((tenant, r), requests)
            allocated.append((tenant, r))
            for tree in round_trees:
                for sw, node in tree.nodes.items():
                    cells, group = grants[sw]
                    workers = []
                    child_ips = []
                    for c in node.children:
                        if c.is_switch:
                            child_ips.append(fabric.switch(c.name).inc_ip)
                        else:
                            _, att = fabric.host(c.name)
                            workers.append((c.port, att.mac, att.ip))
                            child_ips.append(att.ip)
                    plan.switches.append(
                        SwitchRound(
                            sw,
                            r,
                            cells,
                            group,
                            node.fan_in,
                            node.is_root,
                            node.parent_port,
                            [c.port for c in node.children],
                            workers,
                            fabric.switch(sw).inc_mac,
                            fabric.switch(sw).inc_ip,
                            child_ips,
                            epoch,
                        )
                    )
                for host in tree.workers:
                    site, _ = fabric.host(host)
                    a = plan.workers.setdefault(
                        host, WorkerAssignment(host, worker_port(tenant), site.name, site.inc_ip, [], {}, {})
                    )
                    a.rounds.append(r)
                    a.clique_size[r] = len(tree.workers)
                    a.rto_s[r] = rto_for(tree)
                    a.path_rtt_s[r] = tree.max_rtt_ms / 1000.0
                    a.rate_bps[r] = tree_rate_bps(fabric, tree)
    except BaseException:
        for owner in allocated:
            allocator.release(owner)
        raise
    return plan


def plan_job_with_fewer_slots(
    fabric: Fabric,
    allocator: Allocator,
    tenant: int,
    rounds: list[list[list[str]]],
    nslots: int = DEFAULT_SLOTS,
    min_slots: int = 1,
    epoch: int | None = None,
) -> JobPlan:
    """Admission for shared switches: plan_job with `nslots` slots, or, where the switches' cells do not
    hold that many, with fewer - halved until they fit, never below `min_slots` (a job with fewer slots
    has a smaller window, so it runs slower but exactly). The plan's `nslots` says what was granted.
    Raises AllocationError, with nothing allocated, when not even `min_slots` fit: the caller then runs
    the job on the host path (see `admit`) or refuses it."""
    admission = admit(
        lambda slots: plan_job(fabric, allocator, tenant, rounds, slots, epoch), nslots, min_slots, "none"
    )
    assert admission.plan is not None  # fallback "none" raises instead of giving the host path
    return admission.plan


# --- admission: fewer slots, or the host path (ATP's best effort) ---------------------------------------

SWITCH_PATH = "switch"  # the job's sums are taken in the switches
HOST_PATH = "host"  # no switch state at all: the workers run a host allreduce among themselves
FALLBACKS = ("host", "none")  # what a job that cannot get even its minimum slots asks for
HOST_ALGORITHM = "hierarchical"  # edge/hierarchical.py: the best host algorithm on this WAN (docs/results.md)
HOST_PORT_FIRST = 20000  # host-path jobs' TCP ports (base + rank), below the kernel's ephemeral range
HOST_PORT_END = 32768

PlanT = TypeVar("PlanT")


@dataclass
class Admission(Generic[PlanT]):
    """What a job was given: its path, the slots it asked for and got (0 on the host path), and why."""

    path: str
    requested_slots: int
    granted_slots: int
    min_slots: int
    reason: str = ""  # empty when the job got what it asked for
    plan: PlanT | None = None  # the switch path's plan (None on the host path)


def default_min_slots(nslots: int) -> int:
    """The least a job accepts when it states no minimum: a quarter of the window it asked for. A job
    whose window is below that would stay behind the host path on this WAN (one tenant alone is bound
    by its window and the round trips, docs/obstacles.md), so it is better off there."""
    quarter = max(1, nslots // 4)
    return quarter - quarter % 8 if quarter >= 8 else quarter


def fewer_slots(slots: int, min_slots: int) -> int:
    """The next window to try: half, kept a multiple of 8 where it can (the packed formats' packets carry
    up to 8 chunks, int4), never below `min_slots`."""
    half = slots // 2
    return max(min_slots, half - half % 8 if half >= 8 else half)


def admit(
    plan_with: Callable[[int], PlanT],
    nslots: int,
    min_slots: int | None = None,
    fallback: str = "host",
    no_room: tuple[type[BaseException], ...] = (AllocationError,),
) -> Admission[PlanT]:
    """Admit a job on shared switches: `plan_with(slots)` plans and allocates it (all or nothing) or
    raises one of `no_room` when the switches lack the cells. Tries `nslots`, then halves down to
    `min_slots` (default: default_min_slots); below that the job gets the host path (`fallback` "host":
    nothing is allocated for it) or the last refusal is raised ("none"). Any other error propagates.
    The one admission rule of the REST service and of `tributary allreduce --tenants`."""
    if fallback not in FALLBACKS:
        raise TreeError(f"fallback must be one of {', '.join(FALLBACKS)}, got {fallback!r}")
    floor = default_min_slots(nslots) if min_slots is None else min_slots
    if not 1 <= floor <= nslots:
        raise TreeError(f"min_slots must be in 1..{nslots}, got {floor}")
    slots = nslots
    while True:
        try:
            plan = plan_with(slots)
        except no_room as exc:
            last: BaseException = exc
            if slots <= floor:
                break
            slots = fewer_slots(slots, floor)
            continue
        reason = (
            ""
            if slots == nslots
            else f"the switches' free cells hold {slots} of the {nslots} slots asked for (other jobs hold the "
            "rest): fewer slots, a smaller window"
        )
        return Admission(SWITCH_PATH, nslots, slots, floor, reason, plan)
    if fallback == "none":
        raise last
    return Admission(
        HOST_PATH,
        nslots,
        0,
        floor,
        f"not even the minimum of {floor} slots fits ({last}): the workers run a host allreduce, "
        "nothing is held on the switches",
    )


def host_peers(fabric: Fabric, hosts: list[str]) -> list[dict[str, object]]:
    """The peers of a host-path job in rank order, as edge.runner's host algorithms take them."""
    out: list[dict[str, object]] = []
    for rank, host in enumerate(hosts):
        site, att = fabric.host(host)
        out.append({"rank": rank, "host": host, "ip": att.ip, "site": site.name})
    return out


def host_port_base(taken: Iterable[tuple[int, int]], workers: int) -> int:
    """A first TCP port for a host-path job of `workers` ranks (rank r listens on base + r) whose range
    overlaps none of the `taken` (base, workers) ranges of the other host-path jobs: jobs that share a
    host never share a port. Raises AllocationError when no range is free."""
    pos = HOST_PORT_FIRST
    for base, n in sorted(taken):
        if base - pos >= workers:
            break
        pos = max(pos, base + n)
    if pos + workers > HOST_PORT_END:
        raise AllocationError(f"no free range of {workers} TCP ports for a host-path job")
    return pos
