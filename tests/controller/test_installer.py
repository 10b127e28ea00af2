"""The one installer: JobInstaller (the tools') writes exactly the entries the service derives for the
same switch rounds, zeroes the same cells first, and removes everything again; a failed write leaves
nothing. Real p4kit-switch processes over P4Runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.inc.allocation import Allocator
from controller.inc.install import (
    RESET_REGISTERS,
    InstallError,
    JobInstaller,
    plan_items,
    tenant_entry,
)
from controller.inc.jobs import plan_job
from controller.p4rt import P4InfoIndex
from controller.p4rt.entities import decode_value
from controller.provision import connect_all
from controller.service.entities import read_switch_state
from controller.service.plans import Plan, ScheduleChoice
from tests.controller.service_fixtures import running_switches
from topo.pipeline import build_pipeline


def test_the_tools_installer_writes_what_the_service_would(tmp_path: Path) -> None:
    pipeline = build_pipeline(tmp_path / "build")
    with running_switches(tmp_path, pipeline) as sw:
        index = P4InfoIndex(pipeline.p4info)
        conns = connect_all(sw.topology.fabric, election_id=(0, 3))
        try:
            fabric = sw.topology.fabric
            routes = {n: set(read_switch_state(c, index)) for n, c in conns.items()}
            plan = plan_job(fabric, Allocator(sw.topology.sites), 5, [[["TYOw1", "NYCw1", "LONw1"]]], 4)
            # dirty cells where the job goes: the installer must zero them before turning the job on
            for sr in plan.switches:
                dirty = [index.register_entry(r, sr.cells.base, 77) for r in RESET_REGISTERS]
                conns[sr.switch].modify(dirty)
            JobInstaller(conns, index).install(plan)
            service_view = Plan(
                plan.tenant, plan.nslots, 0, ScheduleChoice([], "test"), switch_rounds=plan.switches
            )
            want: dict[str, set] = {}
            for item in plan_items(index, plan.tenant, service_view.switch_rounds):
                want.setdefault(item.switch, set()).add(item.key)
            for name, conn in conns.items():
                held = set(read_switch_state(conn, index)) - routes[name]
                assert held == want.get(name, set()), name
            for sr in plan.switches:
                for r in RESET_REGISTERS:
                    [e] = conns[sr.switch].read([index.register_entry(r, sr.cells.base)])
                    assert decode_value(e.register_entry.data.bitstring) == 0, (sr.switch, r)
            assert JobInstaller(conns, index).remove(plan) == []
            for name, conn in conns.items():
                assert set(read_switch_state(conn, index)) == routes[name]
            # a job whose last write fails (its tenant entry exists already) leaves nothing behind
            last = plan.switches[-1]
            squatter = tenant_entry(index, plan.tenant, last)
            conns[last.switch].insert([squatter])
            with pytest.raises(InstallError, match=r"rolled back.*ALREADY_EXISTS"):
                JobInstaller(conns, index).install(plan)
            conns[last.switch].delete([squatter])
            for name, conn in conns.items():
                assert set(read_switch_state(conn, index)) == routes[name], name
        finally:
            for c in conns.values():
                c.close()
