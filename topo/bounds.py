"""Lower bounds on an allreduce's time on the emulated WAN: what the bytes need on the busiest link at
its rate, plus the latency the algorithm cannot avoid. Every measured time is read against its bound
(docs/results.md); a baseline far above its own bound is a weak baseline, not a slow network.

All bounds count payload bytes of the algorithm's own packets on WAN links (host links are not
rate-limited here), ignore CPU entirely and assume perfect pipelining within each phase, so a run can
approach them but never beat them:

- INC tree (per tenant, over its reduction tree): every chunk crosses each tree link once up and once
  down, as one frame of FRAME_LEN bytes; the busiest directed link carries tenants x chunks frames.
  Latency: the tree's slowest root-to-leaf round trip. float32 runs the exponent agreement first: one
  more round trip and its chunks.
- flat ring (reduce-scatter + allgather over n workers in rank order): 2(n-1) synchronous steps, each
  moving V/n bytes along every ring edge; a step takes at least the slowest ring edge's one-way delay
  plus the busiest link's share of that step's bytes.
- parameter server (rank 0): every worker pushes V to the server and pulls V back: two phases, each at
  least the farthest worker's one-way delay plus the busiest link's bytes.
- hierarchical (edge/hierarchical.py): within a site nothing is rate-limited; between the L site leaders
  a one-step reduce-scatter and a one-step allgather, each moving V/L bytes from every leader to every
  other: two phases of the farthest leader pair's one-way delay plus the busiest link's bytes.
"""

from __future__ import annotations

import math
from collections import Counter
from itertools import pairwise

from controller import graph
from controller.fabric import Fabric
from controller.inc.trees import Tree
from edge.protocol import FRAME_LEN, INC_LANES
from topo.wan import Wan


def _rates_bps(wan: Wan) -> dict[tuple[str, str], float]:
    out = {}
    for link in wan.links:
        out[(link.a, link.b)] = out[(link.b, link.a)] = link.rate_mbit * 1e6
    return out


def _one_way_s(wan: Wan) -> dict[tuple[str, str], float]:
    out = {}
    for link in wan.links:
        out[(link.a, link.b)] = out[(link.b, link.a)] = link.rtt_ms / 2000.0
    return out


def _site_path(fabric: Fabric, a: str, b: str) -> list[tuple[str, str]]:
    """The directed WAN links the routes take from site a to site b (none within a site)."""
    if a == b:
        return []
    return list(pairwise(graph.path(a, b, fabric.edges())))


def _busiest(load: Counter, rates: dict[tuple[str, str], float]) -> float:
    """Seconds the most loaded directed link needs for its bytes."""
    return max((8.0 * b / rates[link] for link, b in load.items()), default=0.0)


def inc_bound_s(wan: Wan, trees: list[Tree], elements: int, mode: str, tenants: int = 1) -> float:
    """Tenants share the switches and links; `trees` holds each tenant's tree."""
    rates = _rates_bps(wan)
    chunks = -(-elements // INC_LANES)
    phases = [chunks]
    if mode == "float32":  # exponents and special flags, one entry per block each, 64 to a packet
        phases.insert(0, -(-2 * chunks // INC_LANES))
    load: Counter = Counter()
    for tree in trees:
        for node in tree.nodes.values():
            if node.parent is not None:
                load[(node.switch, node.parent)] += 1
                load[(node.parent, node.switch)] += 1
    rtt = max(t.max_rtt_ms for t in trees) / 1000.0
    per_frame = _busiest(Counter({k: v * FRAME_LEN for k, v in load.items()}), rates)
    return sum(n * per_frame + rtt for n in phases) if load else len(phases) * rtt


def ring_bound_s(wan: Wan, fabric: Fabric, hosts: list[str], bytes_per_worker: int) -> float:
    n = len(hosts)
    if n < 2:
        return 0.0
    rates, delay = _rates_bps(wan), _one_way_s(wan)
    sites = [fabric.host(h)[0].name for h in hosts]
    load: Counter = Counter()
    slowest = 0.0
    for i in range(n):
        path = _site_path(fabric, sites[i], sites[(i + 1) % n])
        slowest = max(slowest, sum(delay[link] for link in path))
        for link in path:
            load[link] += math.ceil(bytes_per_worker / n)
    return 2 * (n - 1) * (slowest + _busiest(load, rates))


def ps_bound_s(wan: Wan, fabric: Fabric, hosts: list[str], bytes_per_worker: int) -> float:
    rates, delay = _rates_bps(wan), _one_way_s(wan)
    sites = [fabric.host(h)[0].name for h in hosts]
    server = sites[0]
    push: Counter = Counter()
    pull: Counter = Counter()
    farthest = 0.0
    for site in sites[1:]:
        to_server = _site_path(fabric, site, server)
        farthest = max(farthest, sum(delay[link] for link in to_server))
        for link in to_server:
            push[link] += bytes_per_worker
        for link in _site_path(fabric, server, site):
            pull[link] += bytes_per_worker
    return 2 * farthest + _busiest(push, rates) + _busiest(pull, rates)


def hierarchical_bound_s(wan: Wan, fabric: Fabric, hosts: list[str], bytes_per_worker: int) -> float:
    rates, delay = _rates_bps(wan), _one_way_s(wan)
    leaders = list(dict.fromkeys(fabric.host(h)[0].name for h in hosts))
    if len(leaders) < 2:
        return 0.0
    share = math.ceil(bytes_per_worker / len(leaders))
    load: Counter = Counter()
    farthest = 0.0
    for a in leaders:
        for b in leaders:
            path = _site_path(fabric, a, b)
            farthest = max(farthest, sum(delay[link] for link in path))
            for link in path:
                load[link] += share
    return 2 * (farthest + _busiest(load, rates))
