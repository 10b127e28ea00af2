"""Planning an Edge-INC job: per round, clique and source, the distribution tree over the fabric, and
what every switch must hold for it (a multicast group and an edge_mcast entry per tree it is on, an
edge_hosts rewrite towards its site's edge host).

A source's tree is the union of its lowest-latency paths (the same paths the router and the model use,
controller.graph) to the other members of its clique: at each switch of the tree the group holds the
ports towards the tree's next switches and, when the switch's site is a receiving member, its edge host's
port. So a stream leaves its site once and crosses every link of its tree once; on a full mesh every
tree is a star of direct links.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from controller.fabric import Fabric, FabricSwitch, HostAttachment
from controller.graph import shortest_path_tree

EDGE_FIRST_GROUP = 16384  # Core-INC's allocator takes group ids from 1 upward; Edge-INC keeps to the top half
EDGE_LAST_GROUP = 32767
MAX_ROUNDS = 65535  # the round is 16 bits in the header; 0 is not used by Edge-INC


class EdgePlanError(ValueError):
    """A schedule the fabric cannot carry (unknown site, site without an edge host, a site twice in a
    round, no path); the message says which."""


@dataclass(frozen=True)
class TreeGroup:
    """One switch's part in one source's tree: replicate to `ports` (multicast group `group`)."""

    switch: str
    round: int
    source: str  # the source site
    source_ip: str  # its edge host's address (the key in edge_mcast)
    group: int
    ports: tuple[int, ...]
    next_switches: tuple[str, ...] = ()


@dataclass(frozen=True)
class HostRewrite:
    """The egress rewrite towards a site's edge host (edge_hosts)."""

    switch: str
    port: int
    mac: str
    ip: str


@dataclass
class EdgeJobPlan:
    tenant: int
    epoch: int
    rounds: list[list[tuple[str, ...]]]  # per data-plane round 1..R: its cliques (site names)
    groups: list[TreeGroup] = field(default_factory=list)
    rewrites: list[HostRewrite] = field(default_factory=list)
    site_ids: dict[str, int] = field(default_factory=dict)  # the `sender` id of each site (1..255)

    def link_streams(self) -> dict[tuple[str, str], list[tuple[int, str]]]:
        """Per directed WAN link (switch, next switch): the (round, source) streams it carries, each
        once: what the switches' edge_tx counters must show."""
        out: dict[tuple[str, str], list[tuple[int, str]]] = {}
        for g in self.groups:
            for nxt in g.next_switches:
                out.setdefault((g.switch, nxt), []).append((g.round, g.source))
        return out


def edge_host(sw: FabricSwitch) -> HostAttachment:
    hosts = [h for h in sw.hosts if h.role == "edge"]
    if len(hosts) != 1:
        raise EdgePlanError(f"site {sw.name} needs exactly one edge host, has {len(hosts)}")
    return hosts[0]


def tree_children(fabric: Fabric, source: str, receivers: Sequence[str]) -> dict[str, set[str]]:
    """Switch -> next switches of `source`'s tree to `receivers` (union of lowest-latency paths)."""
    dist, prev = shortest_path_tree(source, fabric.edges())
    children: dict[str, set[str]] = {source: set()}
    for r in receivers:
        if r not in dist:
            raise EdgePlanError(f"no path from {source} to {r}")
        node = r
        while node != source:
            parent = prev[node]
            children.setdefault(parent, set()).add(node)
            children.setdefault(node, set())
            node = parent
    return children


class GroupPool:
    """Multicast group ids per switch for Edge-INC (EDGE_FIRST_GROUP..EDGE_LAST_GROUP)."""

    def __init__(self) -> None:
        self.used: dict[str, set[int]] = {}

    def take(self, switch: str) -> int:
        used = self.used.setdefault(switch, set())
        for g in range(EDGE_FIRST_GROUP, EDGE_LAST_GROUP + 1):
            if g not in used:
                used.add(g)
                return g
        raise EdgePlanError(f"switch {switch} has no free Edge-INC multicast group")

    def release(self, plan: EdgeJobPlan) -> None:
        for g in plan.groups:
            self.used.get(g.switch, set()).discard(g.group)


def plan_edge_job(
    fabric: Fabric,
    tenant: int,
    epoch: int,
    rounds: Sequence[Sequence[Sequence[str]]],
    pool: GroupPool | None = None,
) -> EdgeJobPlan:
    """Trees, groups and rewrites for `rounds` (per round, its cliques of site names; singletons idle)."""
    pool = pool or GroupPool()
    names = [sw.name for sw in fabric.switches]
    if not 1 <= tenant <= 16384:
        raise EdgePlanError(f"tenant id must be in 1..16384, got {tenant}")
    if not rounds or len(rounds) > MAX_ROUNDS:
        raise EdgePlanError(f"a job needs 1..{MAX_ROUNDS} rounds, got {len(rounds)}")
    site_ids = {n: i for i, n in enumerate(names, start=1)}
    if len(names) > 255:
        raise EdgePlanError("Edge-INC names sites with 8-bit ids: at most 255 sites")
    plan = EdgeJobPlan(tenant, epoch, [], site_ids=site_ids)
    rewrites: dict[str, HostRewrite] = {}
    try:
        for r, cliques in enumerate(rounds, start=1):
            seen: set[str] = set()
            kept: list[tuple[str, ...]] = []
            for clique in cliques:
                members = tuple(clique)
                for m in members:
                    if m not in site_ids:
                        raise EdgePlanError(f"round {r}: unknown site {m!r}; known: {', '.join(names)}")
                    if m in seen:
                        raise EdgePlanError(f"round {r}: site {m} is in two cliques (or twice in one)")
                    seen.add(m)
                kept.append(members)
                if len(members) < 2:
                    continue
                for m in members:
                    sw = fabric.switch(m)
                    h = edge_host(sw)
                    rewrites.setdefault(m, HostRewrite(m, h.port, h.mac, h.ip))
                for src in members:
                    src_ip = edge_host(fabric.switch(src)).ip
                    receivers = [m for m in members if m != src]
                    for switch, nxt in sorted(tree_children(fabric, src, receivers).items()):
                        sw = fabric.switch(switch)
                        ports = sorted(sw.neighbour_ports[n] for n in nxt)
                        if switch in receivers:
                            ports.append(edge_host(sw).port)
                        if ports:
                            group = pool.take(switch)
                            plan.groups.append(
                                TreeGroup(switch, r, src, src_ip, group, tuple(ports), tuple(sorted(nxt)))
                            )
            plan.rounds.append(kept)
    except BaseException:
        pool.release(plan)
        raise
    plan.rewrites = sorted(rewrites.values(), key=lambda h: h.switch)
    return plan
