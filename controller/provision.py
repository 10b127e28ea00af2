"""Bring a fabric's switches up: connect as primary, push the pipeline, install the routes."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from p4.config.v1 import p4info_pb2

from controller.fabric import Fabric
from controller.p4rt import P4InfoIndex, SwitchConnection
from controller.routes import RouteEntry, plan_routes


@dataclass
class Pipeline:
    """A compiled switch program: its P4Info and the target's device config (BMv2 JSON bytes)."""

    p4info: p4info_pb2.P4Info
    device_config: bytes


def connect_all(
    fabric: Fabric, election_id: tuple[int, int] = (0, 1), timeout: float = 10.0
) -> dict[str, SwitchConnection]:
    """One primary connection per switch, opened in parallel; all or nothing."""
    conns = {
        sw.name: SwitchConnection(sw.name, sw.grpc_addr, sw.device_id, election_id, timeout)
        for sw in fabric.switches
    }
    with ThreadPoolExecutor(max_workers=max(1, len(conns))) as pool:
        futures = {name: pool.submit(c.connect) for name, c in conns.items()}
        errors = []
        for f in futures.values():
            try:
                f.result()
            except Exception as exc:  # collected, re-raised below
                errors.append(exc)
    if errors:
        for c in conns.values():
            c.close()
        raise errors[0]
    return conns


def route_entities(index: P4InfoIndex, entries: list[RouteEntry]) -> dict[str, list]:
    out: dict[str, list] = {}
    for e in entries:
        out.setdefault(e.switch, []).append(index.table_entry(e.table, e.match, e.action, e.params))
    return out


def provision(
    fabric: Fabric,
    conns: dict[str, SwitchConnection],
    pipeline: Pipeline,
    progress: Callable[[str], None] = lambda _msg: None,
) -> int:
    """Push the pipeline to every switch and install the routes; returns the number of entries written."""
    index = P4InfoIndex(pipeline.p4info)
    per_switch = route_entities(index, plan_routes(fabric))

    def one(name: str) -> int:
        conn = conns[name]
        conn.set_pipeline(pipeline.p4info, pipeline.device_config)
        entities = per_switch.get(name, [])
        conn.insert(entities)
        progress(f"{name}: pipeline loaded, {len(entities)} forwarding entries")
        return len(entities)

    with ThreadPoolExecutor(max_workers=max(1, len(conns))) as pool:
        return sum(pool.map(one, [sw.name for sw in fabric.switches]))
