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
from dataclasses import asdict, dataclass, field
from typing import Protocol

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

    def switches(self) -> list[str]:
        return sorted({g.switch for g in self.groups} | {h.switch for h in self.rewrites})

    def to_json(self) -> dict:
        return {
            "tenant": self.tenant,
            "epoch": self.epoch,
            "rounds": [[list(c) for c in cliques] for cliques in self.rounds],
            "groups": [asdict(g) for g in self.groups],
            "rewrites": [asdict(h) for h in self.rewrites],
            "site_ids": dict(self.site_ids),
        }

    @classmethod
    def from_json(cls, doc: dict) -> EdgeJobPlan:
        return cls(
            int(doc["tenant"]),
            int(doc["epoch"]),
            [[tuple(c) for c in cliques] for cliques in doc["rounds"]],
            [
                TreeGroup(
                    g["switch"],
                    int(g["round"]),
                    g["source"],
                    g["source_ip"],
                    int(g["group"]),
                    tuple(g["ports"]),
                    tuple(g.get("next_switches", ())),
                )
                for g in doc.get("groups", [])
            ],
            [HostRewrite(**h) for h in doc.get("rewrites", [])],
            {k: int(v) for k, v in doc.get("site_ids", {}).items()},
        )

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


class Groups(Protocol):
    """Where a plan gets its multicast group ids: one per (switch, round, source) tree part."""

    def take(self, switch: str, round: int, source: str) -> int: ...

    def release(self, plan: EdgeJobPlan) -> None: ...


class GroupPool:
    """Multicast group ids per switch for Edge-INC (EDGE_FIRST_GROUP..EDGE_LAST_GROUP), for tools that
    run one network's jobs themselves; the service takes them from its shared allocator instead."""

    def __init__(self) -> None:
        self.used: dict[str, set[int]] = {}

    def take(self, switch: str, round: int = 0, source: str = "") -> int:
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
    pool: Groups | None = None,
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
                            group = pool.take(switch, r, src)
                            plan.groups.append(
                                TreeGroup(switch, r, src, src_ip, group, tuple(ports), tuple(sorted(nxt)))
                            )
            plan.rounds.append(kept)
    except BaseException:
        pool.release(plan)
        raise
    plan.rewrites = sorted(rewrites.values(), key=lambda h: h.switch)
    return plan


INT_RANGE = 1 << 24  # the runs' inputs lie in [-2**24, 2**24)
MAX_CONTRIBUTIONS = (1 << 31) // INT_RANGE  # 128: sums of inputs below 2**24 stay in int32


def contributions(rounds: Sequence[Sequence[Sequence[str]]]) -> int:
    """The most initial site vectors one site's sum counts after `rounds` (with multiplicity)."""
    counts: dict[str, int] = {}
    worst = 1
    for cliques in rounds:
        nxt = dict(counts)
        for c in cliques:
            if len(c) < 2:
                continue
            n = sum(counts.get(m, 1) for m in c)
            worst = max(worst, n)
            for m in c:
                nxt[m] = n
        counts = nxt
    return worst


def runnable(rounds: Sequence[Sequence[Sequence[str]]]) -> str | None:
    """Why a schedule cannot be run as sums (None when it can). The stages sum; a site's next vector is
    its clique's sum, so values grow with the number of contributions they count. Finite-time designs
    (the grid, all-to-all) count each site once; averaging schedules that only approach the mean (pairs
    to eps) count sites many times over and would overflow int32 and the 16-bit count."""
    worst = contributions(rounds)
    if worst > MAX_CONTRIBUTIONS:
        return (
            f"its sums would count {worst} contributions (at most {MAX_CONTRIBUTIONS} fit int32): the edge runs "
            "carry finite-time designs (exact sums); averaging schedules that approach the mean are not run"
        )
    return None


FORMATS = ("int32", "float32")


def data_plane_rounds(
    rounds: Sequence[Sequence[Sequence[str]]], fmt: str = "int32"
) -> tuple[list[list[tuple[str, ...]]], list[str]]:
    """The rounds the data plane runs for a schedule, and each one's kind ("sum" or "max"). int32: the
    schedule's rounds; float32: each round twice, its exponents' max round before its sum round
    (edge.edge_float), on the same trees."""
    if fmt not in FORMATS:
        raise EdgePlanError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    out: list[list[tuple[str, ...]]] = []
    kinds: list[str] = []
    for cliques in rounds:
        r = [tuple(c) for c in cliques]
        if fmt == "float32":
            out.append(r)
            kinds.append("max")
        out.append(r)
        kinds.append("sum")
    return out, kinds
