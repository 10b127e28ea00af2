"""Installing and removing an Edge-INC job over P4Runtime, all or nothing, and reading its counters.

Order, so that no packet meets half a configuration: the edge-host rewrites and the multicast groups
first, then the edge_mcast entries that send packets into the groups; removal in the opposite order. If
any write fails, everything already written for the job is deleted again and InstallError is raised.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from p4.v1 import p4runtime_pb2

from controller.edge.plan import EdgeJobPlan, HostRewrite, TreeGroup
from controller.p4rt import P4InfoIndex, P4RuntimeError, SwitchConnection
from controller.p4rt.entities import multicast_group

MCAST_TABLE = "edge_mcast"
HOSTS_TABLE = "edge_hosts"
TX_COUNTER = "edge_tx"
RX_COUNTER = "edge_rx"
STATS_COUNTER = "edge_stats"


class EdgeInstallError(RuntimeError):
    pass


def mcast_entry(index: P4InfoIndex, tenant: int, g: TreeGroup) -> p4runtime_pb2.Entity:
    return index.table_entry(
        MCAST_TABLE,
        {"hdr.inc.tenant": tenant, "hdr.inc.round": g.round, "hdr.ipv4.src_addr": g.source_ip},
        "edge_replicate",
        {"grp": g.group},
    )


def host_entry(index: P4InfoIndex, tenant: int, h: HostRewrite) -> p4runtime_pb2.Entity:
    return index.table_entry(
        HOSTS_TABLE,
        {"hdr.inc.tenant": tenant, "std_meta.egress_port": h.port},
        "edge_to_host",
        {"mac": h.mac, "ip": h.ip},
    )


@dataclass
class EdgeInstaller:
    conns: dict[str, SwitchConnection]
    index: P4InfoIndex
    progress: Callable[[str], None] = lambda _msg: None

    def _conn(self, switch: str) -> SwitchConnection:
        try:
            return self.conns[switch]
        except KeyError:
            raise KeyError(f"no connection to switch {switch}") from None

    def _steps(self, plan: EdgeJobPlan) -> list[tuple[str, list[p4runtime_pb2.Entity]]]:
        steps: list[tuple[str, list[p4runtime_pb2.Entity]]] = []
        for h in plan.rewrites:
            steps.append((h.switch, [host_entry(self.index, plan.tenant, h)]))
        per_switch: dict[str, list[TreeGroup]] = {}
        for g in plan.groups:
            per_switch.setdefault(g.switch, []).append(g)
        for switch, groups in per_switch.items():
            steps.append((switch, [multicast_group(g.group, [(p, 0) for p in g.ports]) for g in groups]))
        for switch, groups in per_switch.items():
            steps.append((switch, [mcast_entry(self.index, plan.tenant, g) for g in groups]))
        return steps

    def install(self, plan: EdgeJobPlan) -> None:
        done: list[tuple[str, list[p4runtime_pb2.Entity]]] = []
        try:
            for switch, entities in self._steps(plan):
                self._conn(switch).insert(entities)
                done.append((switch, entities))
        except (P4RuntimeError, KeyError, ValueError) as exc:
            for switch, entities in reversed(done):
                with contextlib.suppress(P4RuntimeError):
                    self._conn(switch).delete(entities)
            raise EdgeInstallError(
                f"Edge-INC job of tenant {plan.tenant}: installation failed and was rolled back: {exc}"
            ) from exc
        switches = {g.switch for g in plan.groups}
        self.progress(
            f"edge tenant {plan.tenant}: {len(plan.groups)} tree groups on {len(switches)} switches, "
            f"{len(plan.rounds)} round(s)"
        )

    def remove(self, plan: EdgeJobPlan) -> list[str]:
        """Delete everything of the job, last written first; returns the errors met (it goes on)."""
        errors: list[str] = []
        for switch, entities in reversed(self._steps(plan)):
            try:
                self._conn(switch).delete(entities)
            except (P4RuntimeError, KeyError) as exc:
                errors.append(str(exc))
        return errors


def read_port_counters(conn: SwitchConnection, index: P4InfoIndex, name: str) -> dict[int, tuple[int, int]]:
    """Port -> (packets, bytes) of a per-port counter array, for the ports that counted anything."""
    out: dict[int, tuple[int, int]] = {}
    for e in conn.read([index.counter_entry(name)]):
        c = e.counter_entry
        if c.data.packet_count or c.data.byte_count:
            out[c.index.index] = (c.data.packet_count, c.data.byte_count)
    return out


def read_stats(conn: SwitchConnection, index: P4InfoIndex) -> dict[str, int]:
    names = ("replicated", "no_tree", "malformed")
    out = dict.fromkeys(names, 0)
    for e in conn.read([index.counter_entry(STATS_COUNTER)]):
        i = e.counter_entry.index.index
        if i < len(names):
            out[names[i]] = e.counter_entry.data.packet_count
    return out
