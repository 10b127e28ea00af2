"""The MPI baseline on the emulated WAN: OpenMPI's allreduce between three sites' workers, launched into
their namespaces by the agent, exact, and its algorithm told from its traffic."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.topo.conftest import wan_from_toml
from topo.allreduce_run import AllreduceSpec, run_baseline

pytestmark = [pytest.mark.mininet, pytest.mark.root]


@pytest.fixture(scope="module")
def wan3_near(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """LON, FRA, AMS (11-16 ms apart) at 50 Mbit/s, one worker per site: short launches."""
    toml = 'sites = ["LON", "FRA", "AMS"]\nrate_mbit = 50\nworkers_per_site = 1\n'
    with wan_from_toml(tmp_path_factory.mktemp("mpi3"), toml) as running:
        yield running


def test_openmpi_allreduce_between_the_hosts_is_exact(wan3_near) -> None:  # type: ignore[no-untyped-def]
    res = run_baseline(wan3_near, AllreduceSpec(elements=20000, mode="int32"), "mpi", print)
    assert res.errors == [], res.errors
    assert res.exact and res.max_abs_error == 0.0
    assert len(res.digests) == 3 and len(set(res.digests)) == 1
    assert "Open MPI" in str(res.extra["library"])
    assert res.bound_s > 0 and res.extra["bound_of"]
    # every rank's traffic went to other ranks over the emulated WAN, at least its share of the vector
    sent = res.extra["sent_bytes"]
    assert all(sum(row) >= 2 * 80000 // 3 for row in sent), sent


def test_a_forced_ring_is_recognised_from_its_traffic(wan3_near) -> None:  # type: ignore[no-untyped-def]
    spec = AllreduceSpec(elements=20000, mode="int32")
    spec.mpi_mca = {"coll_tuned_use_dynamic_rules": "1", "coll_tuned_allreduce_algorithm": "4"}
    res = run_baseline(wan3_near, spec, "mpi", print)
    assert res.errors == [] and res.exact
    assert res.extra["algorithm"] == "ring", res.extra["sent_bytes"]
    assert res.extra["bound_of"] == "ring"
