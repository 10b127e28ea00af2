"""What the controller knows of the network it programs: switches, their ports, hosts and links.

Plain data, filled by whoever built the network (topo/ for the emulated WAN, or a user's file for a
real one), so the controller never depends on how the network was made.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class HostAttachment:
    """A host plugged into a switch port."""

    name: str
    ip: str
    mac: str
    port: int
    role: str = "worker"  # "worker" | "edge"


@dataclass
class FabricSwitch:
    name: str  # the site, e.g. "TYO"
    grpc_addr: str
    device_id: int
    subnet: str  # e.g. "10.0.1.0/24": every host of the site lives in it
    hosts: list[HostAttachment] = field(default_factory=list)
    neighbour_ports: dict[str, int] = field(default_factory=dict)  # neighbour switch -> local port
    inc_ip: str = ""  # address workers send INC packets to (any address routed to this switch works)
    inc_mac: str = ""


@dataclass(frozen=True)
class FabricLink:
    a: str
    b: str
    rtt_ms: float
    rate_mbit: float = 0.0  # each direction's rate (0: unknown): workers pace at their tree's slowest


@dataclass
class Fabric:
    switches: list[FabricSwitch]
    links: list[FabricLink]
    access_rate_mbit: float = 0.0  # each worker's link to its switch, when sites are access-limited (0: not)

    def switch(self, name: str) -> FabricSwitch:
        for sw in self.switches:
            if sw.name == name:
                return sw
        raise KeyError(f"unknown switch {name!r}")

    def host(self, name: str) -> tuple[FabricSwitch, HostAttachment]:
        for sw in self.switches:
            for h in sw.hosts:
                if h.name == name:
                    return sw, h
        raise KeyError(f"unknown host {name!r}")

    def edges(self) -> list[tuple[str, str, float]]:
        return [(link.a, link.b, link.rtt_ms) for link in self.links]

    def rate_mbit(self, a: str, b: str) -> float:
        """The rate of the link between switches a and b (0: unknown, or no such link)."""
        for link in self.links:
            if {link.a, link.b} == {a, b}:
                return link.rate_mbit
        return 0.0
