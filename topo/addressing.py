"""The address and port plan of the emulated WAN.

Site i (1-based, in the WAN's order) owns 10.0.i.0/24. Its workers are 10.0.i.1, 10.0.i.2, ...; its
edge host (the FPGA-like stage) is 10.0.i.100; its switch's INC address (where workers send
contributions; every host has a static ARP entry for it) is 10.0.i.254. MACs spell the IP: 00:00:0a:00:<i>:<h>. On the site's
switch, ports 1..k are the workers, port k+1 the edge host, and the WAN links follow from k+2 in the
order of the WAN's link list. Switch i listens for P4Runtime on 127.0.0.1:(19550+i) with device id i.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.fabric import Fabric, FabricLink, FabricSwitch, HostAttachment
from topo.wan import Wan

# Below the kernel's ephemeral range (32768-60999 by default): a port inside it is, now and then, the
# local port of an outgoing connection of this machine (the start-up probes of the switches' own
# addresses, a controller's channels), and a switch that starts then cannot listen on it
# ("Address already in use" with nothing listening).
GRPC_BASE_PORT = 19550
EDGE_HOST_OCTET = 100
INC_GATEWAY_OCTET = 254


@dataclass(frozen=True)
class HostPlan:
    name: str  # Mininet node name, e.g. "TYOw1" or "TYOe"
    site: str
    ip: str
    mac: str
    port: int
    role: str


@dataclass(frozen=True)
class WanPortPlan:
    site: str
    peer: str
    port: int


def _mac(site_index: int, host_octet: int) -> str:
    return f"00:00:0a:00:{site_index:02x}:{host_octet:02x}"


def host_plan(wan: Wan) -> list[HostPlan]:
    hosts: list[HostPlan] = []
    for i, site in enumerate(wan.sites, start=1):
        for w in range(1, wan.workers_per_site + 1):
            hosts.append(HostPlan(f"{site.name}w{w}", site.name, f"10.0.{i}.{w}", _mac(i, w), w, "worker"))
        e = wan.workers_per_site + 1
        hosts.append(
            HostPlan(
                f"{site.name}e", site.name, f"10.0.{i}.{EDGE_HOST_OCTET}", _mac(i, EDGE_HOST_OCTET), e, "edge"
            )
        )
    return hosts


def wan_port_plan(wan: Wan) -> list[WanPortPlan]:
    """Switch ports of the WAN links: both ends of every link, numbered per switch after the hosts."""
    next_port = {s.name: wan.workers_per_site + 2 for s in wan.sites}
    plan: list[WanPortPlan] = []
    for link in wan.links:
        for here, peer in ((link.a, link.b), (link.b, link.a)):
            plan.append(WanPortPlan(here, peer, next_port[here]))
            next_port[here] += 1
    return plan


def grpc_address(site_index: int) -> str:
    return f"127.0.0.1:{GRPC_BASE_PORT + site_index}"


def fabric(wan: Wan) -> Fabric:
    """The controller's view of the emulated WAN."""
    hosts = host_plan(wan)
    ports = wan_port_plan(wan)
    switches = []
    for i, site in enumerate(wan.sites, start=1):
        switches.append(
            FabricSwitch(
                name=site.name,
                grpc_addr=grpc_address(i),
                device_id=i,
                subnet=f"10.0.{i}.0/24",
                hosts=[
                    HostAttachment(h.name, h.ip, h.mac, h.port, h.role) for h in hosts if h.site == site.name
                ],
                neighbour_ports={p.peer: p.port for p in ports if p.site == site.name},
                inc_ip=f"10.0.{i}.{INC_GATEWAY_OCTET}",
                inc_mac=_mac(i, INC_GATEWAY_OCTET),
            )
        )
    links = [FabricLink(link.a, link.b, link.rtt_ms, link.rate_mbit) for link in wan.links]
    return Fabric(switches, links, wan.access_rate_mbit)
