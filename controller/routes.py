"""The route planner: forwarding entries for every switch of a fabric (p4src/include/forwarding.p4).

Each host gets a /32 route to its port on its own switch; each other site's subnet a prefix route
towards the next hop on the lowest-RTT path; each host's MAC an L2 entry the same way (for frames
that are not IPv4). The entries are plain data (`RouteEntry`), turned into P4Runtime entities by the
caller with the pipeline's P4Info.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from controller import graph
from controller.fabric import Fabric

ROUTE_TABLE = "ipv4_routes"
L2_TABLE = "l2_switch"


@dataclass(frozen=True)
class RouteEntry:
    switch: str
    table: str
    match: dict[str, object]
    action: str
    params: dict[str, object]


def plan_routes(fabric: Fabric) -> list[RouteEntry]:
    entries: list[RouteEntry] = []
    edges = fabric.edges()
    for sw in fabric.switches:
        hops = graph.next_hops(sw.name, edges)
        for h in sw.hosts:
            entries.append(
                RouteEntry(sw.name, ROUTE_TABLE, {"hdr.ipv4.dst_addr": (h.ip, 32)}, "route", {"port": h.port})
            )
            entries.append(
                RouteEntry(sw.name, L2_TABLE, {"hdr.ethernet.dst_addr": h.mac}, "switch_to", {"port": h.port})
            )
        for other in fabric.switches:
            if other.name == sw.name:
                continue
            if other.name not in hops:
                raise graph.NoPathError(f"switch {sw.name} has no path to {other.name}")
            port = sw.neighbour_ports[hops[other.name]]
            net = ipaddress.IPv4Network(other.subnet)
            entries.append(
                RouteEntry(
                    sw.name,
                    ROUTE_TABLE,
                    {"hdr.ipv4.dst_addr": (str(net.network_address), net.prefixlen)},
                    "route",
                    {"port": port},
                )
            )
            for h in other.hosts:
                entries.append(
                    RouteEntry(
                        sw.name, L2_TABLE, {"hdr.ethernet.dst_addr": h.mac}, "switch_to", {"port": port}
                    )
                )
    return entries
