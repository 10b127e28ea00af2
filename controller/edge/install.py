"""Installing and removing an Edge-INC job over P4Runtime, all or nothing, and reading its counters.

A job's entries are `Item`s with identities and stages, like Core-INC's (controller.inc.install), so the
same Writer installs them for the tools and for the service, and the service's reconcile compares them
with what a switch holds. Order, so that no packet meets half a configuration: the edge-host rewrites
(stage DELIVERY) and the multicast groups (GROUP) first, then the edge_mcast entries (TENANT) that send
packets into the groups; removal in the opposite order. If any write fails, everything already written
for the job is deleted again and the error raised.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from p4.v1 import p4runtime_pb2

from controller.edge.plan import EdgeJobPlan, HostRewrite, TreeGroup
from controller.inc.install import ApplyError, Item, Stage, Writer, entity_key
from controller.p4rt import P4InfoIndex, SwitchConnection
from controller.p4rt.entities import decode_value, multicast_group

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


def edge_items(index: P4InfoIndex, plan: EdgeJobPlan) -> list[Item]:
    """Every entity of an Edge-INC job, with its identity and stage."""
    items: list[Item] = []
    for h in plan.rewrites:
        e = host_entry(index, plan.tenant, h)
        items.append(Item(h.switch, Stage.DELIVERY, entity_key(e), e, plan.tenant))
    for g in plan.groups:
        e = multicast_group(g.group, [(p, 0) for p in g.ports])
        items.append(Item(g.switch, Stage.GROUP, entity_key(e), e, plan.tenant))
    for g in plan.groups:
        e = mcast_entry(index, plan.tenant, g)
        items.append(Item(g.switch, Stage.TENANT, entity_key(e), e, plan.tenant))
    return items


@dataclass
class EdgeInstaller:
    """An Edge-INC plan onto connected switches, for tools without the service (the same entries and
    order the service writes)."""

    conns: dict[str, SwitchConnection]
    index: P4InfoIndex
    progress: Callable[[str], None] = lambda _msg: None

    def install(self, plan: EdgeJobPlan) -> None:
        try:
            Writer(self.conns).insert(edge_items(self.index, plan))
        except ApplyError as exc:
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
        return Writer(self.conns).delete(edge_items(self.index, plan))


@dataclass(frozen=True)
class TreeTraffic:
    """What one switch's edge_mcast entry for (tenant, round, source) counted: the stream's packets
    that entered that switch's part of the source's tree."""

    switch: str
    round: int
    source_ip: str
    packets: int
    bytes: int


def read_tree_traffic(
    conn: SwitchConnection, index: P4InfoIndex, switch: str, tenant: int, timeout: float | None = None
) -> list[TreeTraffic]:
    """The edge_tree_traffic direct counter of every edge_mcast entry of `tenant` on one switch."""
    probe = index.table_entry(MCAST_TABLE)
    probe.table_entry.counter_data.SetInParent()
    table_id = probe.table_entry.table_id
    fields = {f.name: f.id for f in index.table(MCAST_TABLE).match_fields}
    out = []
    for e in conn.read([probe], timeout=timeout):
        te = e.table_entry
        if te.table_id != table_id or te.is_default_action:
            continue
        match = {m.field_id: decode_value(m.exact.value) for m in te.match}
        if match.get(fields["hdr.inc.tenant"]) != tenant:
            continue
        ip = match.get(fields["hdr.ipv4.src_addr"], 0)
        out.append(
            TreeTraffic(
                switch,
                int(match.get(fields["hdr.inc.round"], 0)),
                ".".join(str((ip >> s) & 0xFF) for s in (24, 16, 8, 0)),
                te.counter_data.packet_count,
                te.counter_data.byte_count,
            )
        )
    return out


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
