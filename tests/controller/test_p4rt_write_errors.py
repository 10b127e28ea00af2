"""A Write whose every failed update carries its reason: a batch far larger than a table must report the
switch's own cause (the table is full), not gRPC's metadata limit, and stay readable."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.p4rt import P4InfoIndex, P4RuntimeError, SwitchConnection
from tests.controller.service_fixtures import running_switches
from topo.pipeline import build_pipeline


def test_a_batch_over_a_tables_size_reports_the_real_cause(tmp_path: Path) -> None:
    pipeline = build_pipeline(tmp_path / "build")
    with running_switches(tmp_path, pipeline, sites="TYO,NYC") as sw:
        index = P4InfoIndex(pipeline.p4info)
        action = next(a for name, a in index.actions.items() if name.endswith("set_config"))
        params = {p.name: 0 for p in action.params}
        entries = [
            index.table_entry(
                "inc_tenants", {"hdr.inc.tenant": 1 + n // 64, "hdr.inc.round": n % 64}, "set_config", params
            )
            for n in range(3000)
        ]
        tyo = sw.topology.fabric.switch("TYO")
        with SwitchConnection("TYO", tyo.grpc_addr, tyo.device_id, (9, 0)) as conn:
            with pytest.raises(P4RuntimeError) as caught:
                conn.insert(entries)
            conn.delete(entries[:1024])
    err = caught.value
    assert len(err.updates) == 3000 - 1024, str(err)[:500]
    assert {u.index for u in err.updates} == set(range(1024, 3000))
    assert all(u.code_name == "RESOURCE_EXHAUSTED" and "is full" in u.message for u in err.updates)
    assert "metadata" not in str(err)
    assert len(str(err)) < 1000 and "and 1973 more failed update(s)" in str(err)
