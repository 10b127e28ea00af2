"""Lowest-latency paths over a weighted undirected graph of sites (Dijkstra).

Used by the route planner, the tree planner and the WAN model alike, so every part of Tributary agrees
on which way traffic between two sites goes.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable


class NoPathError(ValueError):
    pass


def adjacency(edges: Iterable[tuple[str, str, float]]) -> dict[str, list[tuple[str, float]]]:
    adj: dict[str, list[tuple[str, float]]] = {}
    for a, b, w in edges:
        adj.setdefault(a, []).append((b, w))
        adj.setdefault(b, []).append((a, w))
    return adj


def shortest_path_tree(
    source: str, edges: Iterable[tuple[str, str, float]]
) -> tuple[dict[str, float], dict[str, str]]:
    """Distances from `source` and each reached node's predecessor on its lowest-weight path.

    Ties are broken by node name so the result is deterministic."""
    adj = adjacency(edges)
    dist = {source: 0.0}
    prev: dict[str, str] = {}
    heap = [(0.0, source)]
    done: set[str] = set()
    while heap:
        d, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        for v, w in sorted(adj.get(u, ())):
            nd = d + w
            if nd < dist.get(v, float("inf")) - 1e-12:
                dist[v], prev[v] = nd, u
                heapq.heappush(heap, (nd, v))
    return dist, prev


def path(source: str, target: str, edges: Iterable[tuple[str, str, float]]) -> list[str]:
    """The lowest-weight path from source to target, both ends included."""
    dist, prev = shortest_path_tree(source, edges)
    if target not in dist:
        raise NoPathError(f"no path from {source} to {target}")
    hops = [target]
    while hops[-1] != source:
        hops.append(prev[hops[-1]])
    return hops[::-1]


def next_hops(source: str, edges: Iterable[tuple[str, str, float]]) -> dict[str, str]:
    """For every node reachable from source, the neighbour of source on the lowest-weight path."""
    dist, prev = shortest_path_tree(source, edges)
    out: dict[str, str] = {}
    for node in dist:
        if node == source:
            continue
        hop = node
        while prev[hop] != source:
            hop = prev[hop]
        out[node] = hop
    return out
