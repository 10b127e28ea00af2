"""Reduction trees over the fabric.

A job's workers sit behind their sites' switches. The tree's root is the switch that minimises the
slowest root-to-leaf path (the RTT from the root to the farthest participating site, along lowest-RTT
paths): an allreduce pays that path once up and once down. The tree is the union of the lowest-RTT
paths from the root to every participating site; switches on those paths that host no worker join as
transit nodes with the children they relay for. Every switch aggregates its children (local workers
and child switches) before passing one stream up, so each WAN link carries each chunk once per
direction.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from controller import graph
from controller.fabric import Fabric


class TreeError(ValueError):
    pass


@dataclass
class Child:
    port: int
    name: str  # host or switch name
    is_switch: bool


@dataclass
class TreeNode:
    switch: str
    parent: str | None  # None at the root
    parent_port: int = 0  # this switch's port towards its parent
    children: list[Child] = field(default_factory=list)

    @property
    def is_root(self) -> bool:
        return self.parent is None

    @property
    def fan_in(self) -> int:
        return len(self.children)


@dataclass
class Tree:
    root: str
    nodes: dict[str, TreeNode]
    workers: list[str]
    max_rtt_ms: float  # root to the farthest participating site

    def node(self, switch: str) -> TreeNode:
        return self.nodes[switch]


def _sites_of(fabric: Fabric, workers: list[str]) -> dict[str, list[str]]:
    if not workers:
        raise TreeError("a job needs at least one worker")
    if len(set(workers)) != len(workers):
        dup = sorted({w for w in workers if workers.count(w) > 1})
        raise TreeError(f"worker(s) listed twice: {', '.join(dup)}")
    by_site: dict[str, list[str]] = {}
    for w in workers:
        try:
            sw, _ = fabric.host(w)
        except KeyError:
            raise TreeError(f"unknown host {w!r}") from None
        by_site.setdefault(sw.name, []).append(w)
    return by_site


def choose_root(fabric: Fabric, sites: list[str]) -> tuple[str, float]:
    """The switch with the smallest maximum RTT to the participating sites (ties: by name)."""
    edges = fabric.edges()
    best: tuple[float, str] | None = None
    for sw in sorted(s.name for s in fabric.switches):
        dist, _ = graph.shortest_path_tree(sw, edges)
        if any(s not in dist for s in sites):
            continue
        cost = max(dist[s] for s in sites)
        if best is None or cost < best[0] - 1e-9:
            best = (cost, sw)
    if best is None:
        raise TreeError("no switch reaches every participating site")
    return best[1], best[0]


def plan_tree(fabric: Fabric, workers: list[str], root: str | None = None) -> Tree:
    by_site = _sites_of(fabric, workers)
    sites = sorted(by_site)
    if root is None:
        root, cost = choose_root(fabric, sites)
    else:
        fabric.switch(root)
        dist, _ = graph.shortest_path_tree(root, fabric.edges())
        cost = max(dist[s] for s in sites)
    nodes: dict[str, TreeNode] = {root: TreeNode(root, None)}
    for site in sites:
        hops = graph.path(root, site, fabric.edges())
        for parent, child in itertools.pairwise(hops):
            if child in nodes:
                continue
            psw, csw = fabric.switch(parent), fabric.switch(child)
            nodes[child] = TreeNode(child, parent, parent_port=csw.neighbour_ports[parent])
            nodes[parent].children.append(Child(psw.neighbour_ports[child], child, True))
    for site, hosts in by_site.items():
        for h in sorted(hosts):
            _, att = fabric.host(h)
            nodes[site].children.append(Child(att.port, h, False))
    for node in nodes.values():
        node.children.sort(key=lambda c: c.port)
        if node.fan_in > 64:
            raise TreeError(f"switch {node.switch} would have {node.fan_in} children; the limit is 64")
    return Tree(root, nodes, list(workers), cost)
