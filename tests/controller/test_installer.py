"""The one installer: JobInstaller (the tools') writes exactly the entries the service derives for the
same switch rounds, zeroes the same cells first, and removes everything again; a failed write leaves
nothing. Real p4kit-switch processes over P4Runtime."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from controller.inc.allocation import Allocator
from controller.inc.install import (
    RESET_REGISTERS,
    InstallError,
    JobInstaller,
    ZeroedCells,
    plan_items,
    resets_for,
    tenant_entry,
)
from controller.inc.jobs import JobPlan, plan_job
from controller.p4rt import P4InfoIndex, SwitchConnection
from controller.p4rt.entities import decode_value
from controller.provision import connect_all
from controller.service.entities import read_switch_state
from controller.service.plans import Plan, ScheduleChoice
from tests.controller.service_fixtures import running_switches
from topo.pipeline import build_pipeline


@contextmanager
def _connected(tmp_path: Path) -> Iterator[tuple[Any, P4InfoIndex, dict[str, SwitchConnection]]]:
    """Three real switches with the INC pipeline, and a connection to each (closed afterwards)."""
    pipeline = build_pipeline(tmp_path / "build")
    with running_switches(tmp_path, pipeline) as sw:
        conns = connect_all(sw.topology.fabric, election_id=(0, 3))
        try:
            yield sw, P4InfoIndex(pipeline.p4info), conns
        finally:
            for c in conns.values():
                c.close()


def _assert_zeroed(conns: dict[str, SwitchConnection], index: P4InfoIndex, plan: JobPlan) -> None:
    for sr in plan.switches:
        for r in RESET_REGISTERS:
            [e] = conns[sr.switch].read([index.register_entry(r, sr.cells.base)])
            assert decode_value(e.register_entry.data.bitstring) == 0, (sr.switch, r)


def test_the_tools_installer_writes_what_the_service_would(tmp_path: Path) -> None:
    with _connected(tmp_path) as (sw, index, conns):
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
        _assert_zeroed(conns, index, plan)
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


def test_cells_of_a_fresh_pipeline_are_not_reset_until_a_job_has_used_them() -> None:
    zeroed = ZeroedCells()
    assert zeroed.take("TYO", range(0, 8))  # never used: zeros since the pipeline was committed
    assert zeroed.take("TYO", range(8, 16))  # beside it, not over it
    assert zeroed.take("NYC", range(0, 8))  # another switch's cells are its own
    assert not zeroed.take("TYO", range(4, 12))  # over used cells: they must be reset
    assert not zeroed.take("TYO", range(0, 8))


def test_a_job_on_fresh_switches_writes_no_resets_and_the_next_one_over_its_cells_does(
    tmp_path: Path,
) -> None:
    with _connected(tmp_path) as (sw, index, conns):
        fabric = sw.topology.fabric
        allocator = Allocator(sw.topology.sites)
        zeroed = ZeroedCells()
        hosts = [["TYOw1", "NYCw1", "LONw1"]]
        first = plan_job(fabric, allocator, 5, [hosts], 4)
        assert resets_for(index, first.switches, ZeroedCells()) == {}  # what install() will leave out
        JobInstaller(conns, index, zeroed=zeroed).install(first)
        _assert_zeroed(conns, index, first)
        # the job ran and left its cells as its last chunk did; then it is removed
        for sr in first.switches:
            conns[sr.switch].modify([index.register_entry(r, sr.cells.base, 77) for r in RESET_REGISTERS])
        assert JobInstaller(conns, index, zeroed=zeroed).remove(first) == []
        for owner in first.owner_keys:
            allocator.release(owner)
        second = plan_job(fabric, allocator, 6, [hosts], 4)
        assert [(s.switch, s.cells.base) for s in second.switches] == [
            (s.switch, s.cells.base) for s in first.switches
        ]  # the same cells again
        JobInstaller(conns, index, zeroed=zeroed).install(second)
        _assert_zeroed(conns, index, second)
        JobInstaller(conns, index).remove(second)
