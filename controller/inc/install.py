"""Installing and removing a planned INC job on the switches over P4Runtime, all or nothing.

Order matters so that no packet meets half a configuration: multicast groups and zeroed cells first,
then the children, then the tenant entry that turns the job on; removal in the opposite order. If any
write fails, everything already written for the job is removed again and the error is raised.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from p4.v1 import p4runtime_pb2

from controller.inc.jobs import JobPlan, SwitchRound
from controller.p4rt import P4InfoIndex, P4RuntimeError, SwitchConnection
from controller.p4rt.entities import multicast_group
from edge.protocol import worker_port

TENANT_TABLE = "inc_tenants"
CHILD_TABLE = "inc_children"
DELIVERY_TABLE = "inc_workers"
CELL_REGISTERS = ("cell_chunk", "cell_bitmap", "cell_arrivals", "cell_count")


class InstallError(RuntimeError):
    pass


def tenant_entry(index: P4InfoIndex, tenant: int, sr: SwitchRound) -> p4runtime_pb2.Entity:
    if not sr.epoch or not sr.switch_ip:
        raise ValueError(f"switch {sr.switch} round {sr.round}: the plan has no epoch or INC address")
    return index.table_entry(
        TENANT_TABLE,
        {"hdr.inc.tenant": tenant, "hdr.inc.round": sr.round},
        "set_config",
        {
            "base": sr.cells.base,
            "nslots": sr.cells.cells // 2,
            "fan_in": sr.fan_in,
            "is_root": int(sr.is_root),
            "parent_port": sr.parent_port,
            "mcast_grp": sr.group,
            "epoch": sr.epoch,
            "switch_ip": sr.switch_ip,
        },
    )


def child_entries(index: P4InfoIndex, tenant: int, sr: SwitchRound) -> list[p4runtime_pb2.Entity]:
    """One entry per child: its port and source address (a worker's own, or a child switch's INC one)."""
    if len(sr.child_ips) != len(sr.children):
        raise ValueError(f"switch {sr.switch} round {sr.round}: the plan lacks its children's addresses")
    return [
        index.table_entry(
            CHILD_TABLE,
            {
                "hdr.inc.tenant": tenant,
                "hdr.inc.round": sr.round,
                "std_meta.ingress_port": port,
                "hdr.ipv4.src_addr": ip,
            },
            "set_child",
            {"child": i},
        )
        for i, (port, ip) in enumerate(zip(sr.children, sr.child_ips, strict=True))
    ]


def delivery_entry(
    index: P4InfoIndex, tenant: int, sr: SwitchRound, port: int, mac: str, ip: str
) -> p4runtime_pb2.Entity:
    """The egress rewrite that lets a result reach one worker's socket (per tenant and worker port)."""
    return index.table_entry(
        DELIVERY_TABLE,
        {"hdr.inc.tenant": tenant, "std_meta.egress_port": port},
        "to_worker",
        {
            "mac": mac,
            "ip": ip,
            "udp_port": worker_port(tenant),
            "switch_mac": sr.switch_mac,
            "switch_ip": sr.switch_ip,
        },
    )


def _deliveries(index: P4InfoIndex, plan: JobPlan) -> dict[str, list[p4runtime_pb2.Entity]]:
    """Delivery entries per switch, once per worker port even when the worker is in several rounds."""
    out: dict[str, list[p4runtime_pb2.Entity]] = {}
    seen: set[tuple[str, int]] = set()
    for sr in plan.switches:
        for port, mac, ip in sr.worker_children:
            if (sr.switch, port) not in seen:
                seen.add((sr.switch, port))
                out.setdefault(sr.switch, []).append(delivery_entry(index, plan.tenant, sr, port, mac, ip))
    return out


def cell_resets(index: P4InfoIndex, sr: SwitchRound) -> list[p4runtime_pb2.Entity]:
    out = []
    for name in CELL_REGISTERS:
        for cell in range(sr.cells.base, sr.cells.base + sr.cells.cells):
            out.append(index.register_entry(name, cell, 0))
    return out


@dataclass
class JobInstaller:
    conns: dict[str, SwitchConnection]
    index: P4InfoIndex
    progress: Callable[[str], None] = lambda _msg: None

    def install(self, plan: JobPlan) -> None:
        done: list[tuple[str, str, list[p4runtime_pb2.Entity]]] = []  # (switch, kind, entities) for rollback
        try:
            for switch, entities in _deliveries(self.index, plan).items():
                self._conn(switch).insert(entities)
                done.append((switch, "insert", entities))
            for sr in plan.switches:
                conn = self._conn(sr.switch)
                group = multicast_group(sr.group, [(p, 0) for p in sr.children])
                conn.insert([group])
                done.append((sr.switch, "insert", [group]))
                conn.modify(cell_resets(self.index, sr))
                children = child_entries(self.index, plan.tenant, sr)
                conn.insert(children)
                done.append((sr.switch, "insert", children))
            for sr in plan.switches:
                entry = tenant_entry(self.index, plan.tenant, sr)
                self._conn(sr.switch).insert([entry])
                done.append((sr.switch, "insert", [entry]))
        except (P4RuntimeError, KeyError, ValueError) as exc:
            self._undo(done)
            raise InstallError(
                f"job of tenant {plan.tenant}: installation failed and was rolled back: {exc}"
            ) from exc
        self.progress(f"tenant {plan.tenant}: installed on {len({s.switch for s in plan.switches})} switches")

    def remove(self, plan: JobPlan) -> list[str]:
        """Delete every entry and group of the job; returns the errors met (it goes on past them)."""
        errors: list[str] = []
        steps: list[tuple[str, list[p4runtime_pb2.Entity]]] = []
        for sr in plan.switches:
            steps.append((sr.switch, [tenant_entry(self.index, plan.tenant, sr)]))
        for sr in plan.switches:
            steps.append((sr.switch, child_entries(self.index, plan.tenant, sr)))
            steps.append((sr.switch, [multicast_group(sr.group, [])]))
        steps.extend(_deliveries(self.index, plan).items())
        for switch, entities in steps:
            try:
                self._conn(switch).delete(entities)
            except P4RuntimeError as exc:
                errors.append(str(exc))
        return errors

    def _undo(self, done: list[tuple[str, str, list[p4runtime_pb2.Entity]]]) -> None:
        for switch, _kind, entities in reversed(done):
            # best effort: a write that failed may have left nothing to delete
            with contextlib.suppress(P4RuntimeError):
                self._conn(switch).delete(entities)

    def _conn(self, switch: str) -> SwitchConnection:
        try:
            return self.conns[switch]
        except KeyError:
            raise InstallError(f"no connection to switch {switch}") from None
