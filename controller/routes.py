"""The route planner: forwarding entries for every switch of a fabric (p4src/include/forwarding.p4).

Each host gets a /32 route to its port on its own switch; each other site's subnet a prefix route
towards the next hop on the lowest-RTT path; each host's MAC an L2 entry the same way (for frames
that are not IPv4). Each host port also gets its source guard: the host's own address is permitted,
every other source denied (so no host poses as another, or as a switch's INC address). The entries are plain data (`RouteEntry`), turned into P4Runtime entities by the
caller with the pipeline's P4Info.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from controller import graph
from controller.fabric import Fabric

ROUTE_TABLE = "ipv4_routes"
L2_TABLE = "l2_switch"
GUARD_TABLE = "source_guard"


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
            entries.extend(source_guard(sw.name, h.port, h.ip))
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


def source_guard(switch: str, port: int, ip: str) -> list[RouteEntry]:
    """A host port accepts only its host's own source address: /32 permit, anything else (prefix length
    0, which P4Runtime expresses by leaving the field out) deny."""
    return [
        RouteEntry(
            switch, GUARD_TABLE, {"std_meta.ingress_port": port, "hdr.ipv4.src_addr": (ip, 32)}, "permit", {}
        ),
        RouteEntry(switch, GUARD_TABLE, {"std_meta.ingress_port": port}, "deny", {}),
    ]
