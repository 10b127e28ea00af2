"""The service's view of switch state: a job's entries from its stored plan, the routes, and what a
switch holds. The entries, their identities and the writer are controller.inc.install's, the same a
plain JobInstaller writes (one installer for the tools and the service).
"""

from __future__ import annotations

from collections.abc import Iterable

from p4.v1 import p4runtime_pb2

from controller.edge.install import HOSTS_TABLE, MCAST_TABLE, edge_items
from controller.edge.plan import EdgeJobPlan
from controller.inc.install import (
    WRITE_BATCH,
    ApplyError,
    Item,
    Key,
    Stage,
    Writer,
    entity_content,
    entity_key,
    plan_items,
    resets_for,
)
from controller.p4rt import P4InfoIndex, SwitchConnection
from controller.provision import route_entities
from controller.routes import GUARD_TABLE, L2_TABLE, ROUTE_TABLE, plan_routes
from controller.service.plans import Plan
from controller.service.topology import Topology

__all__ = [
    "WRITE_BATCH",
    "ApplyError",
    "Item",
    "Key",
    "Stage",
    "Writer",
    "entity_content",
    "entity_key",
    "job_items",
    "read_switch_state",
    "resets_for",
    "route_items",
]

JOB_TABLES = ("inc_tenants", "inc_children", "inc_workers", MCAST_TABLE, HOSTS_TABLE)
ROUTE_TABLES = (ROUTE_TABLE, L2_TABLE, GUARD_TABLE)  # every table controller.routes plans for


def job_items(index: P4InfoIndex, plan: Plan, rounds: Iterable[int] | None = None) -> list[Item]:
    """The entities of a job (optionally of some of its rounds only: deliveries always)."""
    if plan.edge is not None:
        return edge_items(index, EdgeJobPlan.from_json(plan.edge["plan"]))
    return plan_items(index, plan.job, plan.switch_rounds, rounds)


def route_items(index: P4InfoIndex, topology: Topology) -> list[Item]:
    out = []
    for switch, entities in route_entities(index, plan_routes(topology.fabric)).items():
        for e in entities:
            out.append(Item(switch, Stage.ROUTE, entity_key(e), e))
    return out


def read_switch_state(
    conn: SwitchConnection, index: P4InfoIndex, timeout: float | None = None
) -> dict[Key, p4runtime_pb2.Entity]:
    """Every entry of the job and route tables and every multicast group the switch holds."""
    probes = [index.table_entry(t) for t in (*JOB_TABLES, *ROUTE_TABLES)]
    grp = p4runtime_pb2.Entity()
    grp.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
    probes.append(grp)
    out: dict[Key, p4runtime_pb2.Entity] = {}
    for e in conn.read(probes, timeout=timeout):
        if e.HasField("table_entry") and e.table_entry.is_default_action:
            continue
        out[entity_key(e)] = e
    return out
