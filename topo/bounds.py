"""Lower bounds on an allreduce's time on the emulated WAN: what the bytes need on the busiest link at
its rate, plus the latency the algorithm cannot avoid. Every measured time is read against its bound
(docs/results.md); a baseline far above its own bound is a weak baseline, not a slow network.

All bounds count payload bytes of the algorithm's own packets on rate-limited links, ignore CPU
entirely and assume perfect pipelining within each phase, so a run can approach them but never beat
them. The links are the WAN's inter-city links and, on the access-limited model (`Wan.access_rate_mbit`),
each worker's access link to its city's switch, one per direction (up: worker to switch, down: switch
to worker), without delay of their own. On the full-mesh model a worker's link is not rate-limited and
traffic within a site is free.

- INC tree (per tenant, over its reduction tree): every chunk crosses each tree link once up and once
  down, as one frame of FRAME_LEN bytes, and each worker's access link once in each direction; the
  busiest directed link carries tenants x chunks frames. Latency: the tree's slowest root-to-leaf round
  trip. float32 runs the exponent agreement first: one more round trip and its chunks.
- flat ring (reduce-scatter + allgather over n workers in rank order): 2(n-1) steps, each moving a
  block of V/n bytes along every ring edge; a rank's step waits for its predecessor's previous one, so
  every result depends on a chain of 2(n-1) consecutive ring edges, each at least its one-way delay
  plus the block through its slowest link: the bound is the longest such chain. Behind access links
  each worker sends and receives 2(n-1)V/n through its own: the host algorithms' access-limited cost.
- parameter server (rank 0): every worker pushes V to the server and pulls V back: two phases, each at
  least the farthest worker's one-way delay plus the busiest link's bytes (behind access links the
  server's own carries (n-1)V each way).
- hierarchical (edge/hierarchical.py): each site's members send V to their leader, the L site leaders
  run a one-step reduce-scatter and a one-step allgather, each moving V/L bytes from every leader to
  every other (two phases of the farthest leader pair's one-way delay plus the busiest link's bytes),
  and each leader sends the result to its members. The local phases cost nothing on the full mesh;
  behind access links the leader's carries (w-1)V for w workers per site. With one worker per site a
  leader sends and receives 2(L-1)V/L through its access link, the ring's access cost.
- MPI (OpenMPI's tuned allreduce, edge/mpi_allreduce.py): the bound of the algorithm the library ran
  when it is one of the above in rank order (its ring); otherwise the lowest host bound here.

Which algorithm has the lower bound depends on the model (DESIGN §5b): on a full mesh the hierarchical
exchange spreads over all n-1 links of a site while a tree uses one; behind access links a host
algorithm pushes 2(n-1)V/n through each worker's link and a tree V, so INC's bound is lower by up to
2(n-1)/n.
"""

from __future__ import annotations

import math
from collections import Counter
from itertools import pairwise

from controller import graph
from controller.fabric import Fabric
from controller.inc.trees import Tree
from edge.formats import WIDE_MODES
from edge.protocol import FMT_WIDE32, FRAME_LEN, GROUPS, INC_LANES, WIDE_FRAME_LEN, WIDE_WORDS
from topo import addressing
from topo.wan import Wan

Hop = tuple[str, str]


def _rates_bps(wan: Wan, fabric: Fabric) -> dict[Hop, float]:
    out = {}
    for link in wan.links:
        out[(link.a, link.b)] = out[(link.b, link.a)] = link.rate_mbit * 1e6
    if wan.access_rate_mbit:
        for sw in fabric.switches:
            for h in sw.hosts:
                if h.role == "worker":
                    out[(h.name, sw.name)] = out[(sw.name, h.name)] = wan.access_rate_mbit * 1e6
    return out


def _one_way_s(wan: Wan) -> dict[Hop, float]:
    out = {}
    for link in wan.links:
        out[(link.a, link.b)] = out[(link.b, link.a)] = link.rtt_ms / 2000.0
    return out


def _site_path(fabric: Fabric, a: str, b: str) -> list[Hop]:
    """The directed WAN links the routes take from site a to site b (none within a site)."""
    if a == b:
        return []
    return list(pairwise(graph.path(a, b, fabric.edges())))


def _host_path(wan: Wan, fabric: Fabric, a: str, b: str) -> list[Hop]:
    """The rate-limited directed links from worker host a to worker host b: a's access link up, the
    WAN links between their sites, b's access link down (the access links only on that model)."""
    if a == b:
        return []
    sa, sb = fabric.host(a)[0].name, fabric.host(b)[0].name
    path = _site_path(fabric, sa, sb)
    if wan.access_rate_mbit:
        path = [(a, sa), *path, (sb, b)]
    return path


def _delay(path: list[Hop], delay: dict[Hop, float]) -> float:
    return sum(delay.get(hop, 0.0) for hop in path)  # access links add no delay


def _busiest(load: Counter, rates: dict[Hop, float]) -> float:
    """Seconds the most loaded directed link needs for its bytes."""
    return max((8.0 * b / rates[link] for link, b in load.items()), default=0.0)


def inc_bound_s(
    wan: Wan,
    trees: list[Tree],
    elements: int,
    mode: str,
    tenants: int = 1,
    union_blocks: int | None = None,
    values_per_packet: int = INC_LANES,
) -> float:
    """Tenants share the switches and links; `trees` holds each tenant's tree. Sparse (`union_blocks`:
    the blocks some worker held): the block agreement (packed indicator fields, edge.sparse), then the
    union's blocks, which the root sends down with values on every link; sparse float32 has the union's
    exponent call between them (a sparse run that went dense is bounded in its dense mode).
    `values_per_packet` 256: int32 and float32's sums travel four chunks to a wide frame (WIDE_FRAME_LEN
    for 256 values instead of 4 x FRAME_LEN), which lowers the bytes and so the bound."""
    rates = _rates_bps(wan, addressing.fabric(wan))
    chunks = -(-elements // INC_LANES)
    phases = [(chunks, FRAME_LEN)]  # (packets, frame bytes on the busiest link) per phase
    if values_per_packet == WIDE_WORDS and mode in WIDE_MODES:
        phases = [(-(-chunks // GROUPS[FMT_WIDE32]), WIDE_FRAME_LEN)]
    if mode in ("sparse", "sparse-float32"):
        from edge.sparse import FLOAT_EXPONENT_LANES, agreement_chunks

        workers = max(len(t.workers) for t in trees)
        union = chunks if union_blocks is None else union_blocks
        phases = [(agreement_chunks(chunks, workers), FRAME_LEN), (union, FRAME_LEN)]
        if mode == "sparse-float32":  # the union's exponents and inf/NaN flags, 64 to a packet
            phases.insert(1, (-(-FLOAT_EXPONENT_LANES * union // INC_LANES), FRAME_LEN))
    if mode == "float32":  # exponents and special flags, one entry per block each, 64 to a packet
        phases.insert(0, (-(-2 * chunks // INC_LANES), FRAME_LEN))
    if mode in ("int8", "int4", "mxint8"):  # 4 or 8 chunks per packet; a switch sends one wide frame
        phases = [(-(-chunks // (8 if mode == "int4" else 4)), WIDE_FRAME_LEN)]
    if mode == "mxint8":  # first the agreement: a scale per 32 elements and a flag per 64, 64 to a packet
        phases.insert(0, (-(-3 * chunks // INC_LANES), FRAME_LEN))
    load: Counter = Counter()
    for tree in trees:
        for node in tree.nodes.values():
            if node.parent is not None:
                load[(node.switch, node.parent)] += 1
                load[(node.parent, node.switch)] += 1
            if wan.access_rate_mbit:
                for child in node.children:
                    if not child.is_switch:
                        load[(child.name, node.switch)] += 1
                        load[(node.switch, child.name)] += 1
    rtt = max(t.max_rtt_ms for t in trees) / 1000.0
    if not load:
        return len(phases) * rtt
    return sum(
        n * _busiest(Counter({k: v * frame for k, v in load.items()}), rates) + rtt
        for n, frame in phases
        if n  # a phase with nothing to send (a sparse union that is empty) costs no round trip
    )


def ring_bound_s(wan: Wan, fabric: Fabric, hosts: list[str], bytes_per_worker: int) -> float:
    n = len(hosts)
    if n < 2:
        return 0.0
    rates, delay = _rates_bps(wan, fabric), _one_way_s(wan)
    block = math.ceil(bytes_per_worker / n)
    # a step of ring edge i -> i+1: its one-way delay plus its block through its slowest link
    edge = []
    for i in range(n):
        path = _host_path(wan, fabric, hosts[i], hosts[(i + 1) % n])
        edge.append(_delay(path, delay) + max((8.0 * block / rates[link] for link in path), default=0.0))
    # a block's last step depends on the one before it at the previous rank: 2(n-1) consecutive edges
    steps = 2 * (n - 1)
    return max(sum(edge[(s + k) % n] for k in range(steps)) for s in range(n))


def ps_bound_s(wan: Wan, fabric: Fabric, hosts: list[str], bytes_per_worker: int) -> float:
    rates, delay = _rates_bps(wan, fabric), _one_way_s(wan)
    server = hosts[0]
    push: Counter = Counter()
    pull: Counter = Counter()
    farthest = 0.0
    for host in hosts[1:]:
        to_server = _host_path(wan, fabric, host, server)
        farthest = max(farthest, _delay(to_server, delay))
        for link in to_server:
            push[link] += bytes_per_worker
        for link in _host_path(wan, fabric, server, host):
            pull[link] += bytes_per_worker
    return 2 * farthest + _busiest(push, rates) + _busiest(pull, rates)


def hierarchical_bound_s(wan: Wan, fabric: Fabric, hosts: list[str], bytes_per_worker: int) -> float:
    rates, delay = _rates_bps(wan, fabric), _one_way_s(wan)
    by_site: dict[str, list[str]] = {}
    for h in hosts:
        by_site.setdefault(fabric.host(h)[0].name, []).append(h)
    leaders = [members[0] for members in by_site.values()]
    gather: Counter = Counter()  # members to their leader, and (the same bytes reversed) back
    scatter: Counter = Counter()
    for members in by_site.values():
        for m in members[1:]:
            for link in _host_path(wan, fabric, m, members[0]):
                gather[link] += bytes_per_worker
    local = _busiest(gather, rates) + _busiest(Counter({(b, a): v for (a, b), v in gather.items()}), rates)
    if len(leaders) < 2:
        return local
    share = math.ceil(bytes_per_worker / len(leaders))
    farthest = 0.0
    for a in leaders:
        for b in leaders:
            path = _host_path(wan, fabric, a, b)
            farthest = max(farthest, _delay(path, delay))
            for link in path:
                scatter[link] += share
    return local + 2 * (farthest + _busiest(scatter, rates))


def best_host_bound_s(wan: Wan, fabric: Fabric, hosts: list[str], bytes_per_worker: int) -> tuple[str, float]:
    """The host algorithm with the lowest bound here, and that bound (the parameter server included)."""
    found = {
        "ring": ring_bound_s(wan, fabric, hosts, bytes_per_worker),
        "hierarchical": hierarchical_bound_s(wan, fabric, hosts, bytes_per_worker),
        "ps": ps_bound_s(wan, fabric, hosts, bytes_per_worker),
    }
    name = min(found, key=lambda k: found[k])
    return name, found[name]


def traffic_bound_s(wan: Wan, fabric: Fabric, hosts: list[str], sent: list[list[int]]) -> float:
    """The least time the bytes an algorithm actually sent need (`sent[i][j]`: bytes host i sent host
    j, as the MPI baseline measures them): the busiest link's share of all of them plus the farthest
    one-way delay any of them crossed. Weaker than an algorithm's own bound (one latency, no steps),
    it shows what the traffic pattern alone costs."""
    rates, delay = _rates_bps(wan, fabric), _one_way_s(wan)
    load: Counter = Counter()
    farthest = 0.0
    for i, row in enumerate(sent):
        for j, b in enumerate(row):
            if b and i != j:
                path = _host_path(wan, fabric, hosts[i], hosts[j])
                farthest = max(farthest, _delay(path, delay))
                for link in path:
                    load[link] += b
    return farthest + _busiest(load, rates)
