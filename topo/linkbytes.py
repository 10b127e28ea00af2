"""Bytes per link class, measured: the kernel's counters of every switch interface in the emulated WAN.

Why the interfaces and not the workers' own counts: they see what really crossed each link - the
retransmissions, the duplicates a lossy link causes upstream, the results multicast down - whatever
the algorithm (INC or a host baseline). A host link's bytes are read at the switch end (rx: host to
switch, tx: switch to host); a WAN link's at the sending end (tx of both switches), so every byte on
a link is counted once per direction. Mininet names a switch's port p interface "<switch>-eth<p>".
"""

from __future__ import annotations

from pathlib import Path

from controller.fabric import Fabric

SYS_NET = Path("/sys/class/net")


def _counter(iface: str, name: str) -> int:
    return int((SYS_NET / iface / "statistics" / name).read_text())


def snapshot(fabric: Fabric) -> dict[str, int]:
    """The current totals: host_up (hosts to switches), host_down (switches to hosts), wan."""
    out = {"host_up": 0, "host_down": 0, "wan": 0}
    for sw in fabric.switches:
        for h in sw.hosts:
            iface = f"{sw.name}-eth{h.port}"
            out["host_up"] += _counter(iface, "rx_bytes")
            out["host_down"] += _counter(iface, "tx_bytes")
        for port in sw.neighbour_ports.values():
            out["wan"] += _counter(f"{sw.name}-eth{port}", "tx_bytes")
    return out


def since(fabric: Fabric, before: dict[str, int]) -> dict[str, int]:
    """Bytes moved since `before` per link class, with host = host_up + host_down."""
    now = snapshot(fabric)
    moved = {k: now[k] - before[k] for k in now}
    moved["host"] = moved["host_up"] + moved["host_down"]
    return moved
