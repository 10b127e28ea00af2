"""The network the service controls, as a plain JSON document (written by whoever built the network).

The service runs in its own process and must not import the emulation (topo/), so `tributary run`
describes the network in the state file: the fabric (switches, ports, hosts, P4Runtime addresses) plus
what the REST API and the schedule optimiser need beyond it (link rates, regions, the real rate the
emulated one stands for).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np

from controller import graph
from controller.fabric import Fabric, FabricLink, FabricSwitch, HostAttachment


@dataclass(frozen=True)
class LinkInfo:
    a: str
    b: str
    rtt_ms: float
    rate_mbit: float = 0.0
    loss_pct: float = 0.0


@dataclass
class Topology:
    """The fabric plus per-link rates and per-site regions."""

    fabric: Fabric
    links: list[LinkInfo] = field(default_factory=list)
    regions: dict[str, str] = field(default_factory=dict)  # site -> continent
    real_rate_mbit: float = 10_000.0

    @property
    def sites(self) -> list[str]:
        return [sw.name for sw in self.fabric.switches]

    def site_of(self, host: str) -> str:
        sw, _ = self.fabric.host(host)
        return sw.name

    def workers(self) -> list[str]:
        return [h.name for sw in self.fabric.switches for h in sw.hosts if h.role == "worker"]

    def rtt_ms(self, a: str, b: str) -> float:
        """Along the lowest-RTT path (the path traffic takes), 0 for a site and itself."""
        dist, _ = graph.shortest_path_tree(a, self.fabric.edges())
        return dist[b]

    def latency_matrix_s(self, names: list[str]) -> np.ndarray:
        """One-way latencies (seconds) between the given sites: half the path RTT, as the optimiser wants."""
        n = len(names)
        lat = np.zeros((n, n))
        for i, a in enumerate(names):
            dist, _ = graph.shortest_path_tree(a, self.fabric.edges())
            for j, b in enumerate(names):
                if i != j:
                    lat[i, j] = dist.get(b, float("inf")) / 2e3
        return lat

    def sub_fabric(self, sites: list[str]) -> Fabric:
        """The switches of `sites` and the links among them: a clique's tree stays inside its sites."""
        keep = set(sites)
        return Fabric(
            [sw for sw in self.fabric.switches if sw.name in keep],
            [link for link in self.fabric.links if link.a in keep and link.b in keep],
        )

    # --- JSON -----------------------------------------------------------------------------------------

    def to_json(self) -> dict[str, object]:
        return {
            "switches": [asdict(sw) for sw in self.fabric.switches],
            "links": [asdict(link) for link in self.links],
            "regions": dict(self.regions),
            "real_rate_mbit": self.real_rate_mbit,
        }

    @classmethod
    def from_json(cls, doc: dict) -> Topology:
        switches = []
        for s in doc["switches"]:
            hosts = [HostAttachment(**h) for h in s.get("hosts", [])]
            switches.append(
                FabricSwitch(
                    name=s["name"],
                    grpc_addr=s["grpc_addr"],
                    device_id=int(s["device_id"]),
                    subnet=s["subnet"],
                    hosts=hosts,
                    neighbour_ports={k: int(v) for k, v in s.get("neighbour_ports", {}).items()},
                    inc_ip=s.get("inc_ip", ""),
                    inc_mac=s.get("inc_mac", ""),
                )
            )
        links = [LinkInfo(**link) for link in doc.get("links", [])]
        fabric = Fabric(switches, [FabricLink(link.a, link.b, link.rtt_ms, link.rate_mbit) for link in links])
        return cls(fabric, links, dict(doc.get("regions", {})), float(doc.get("real_rate_mbit", 10_000.0)))

    @classmethod
    def from_fabric(cls, fabric: Fabric, rate_mbit: float = 0.0) -> Topology:
        """`rate_mbit` is every link's rate where the fabric does not know it (what workers pace at)."""
        links = [LinkInfo(link.a, link.b, link.rtt_ms, link.rate_mbit or rate_mbit) for link in fabric.links]
        rated = [
            FabricLink(link.a, link.b, link.rtt_ms, link.rate_mbit or rate_mbit) for link in fabric.links
        ]
        return cls(replace(fabric, links=rated), links)
