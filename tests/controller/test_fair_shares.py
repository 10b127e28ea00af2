"""Fair shares of links among jobs that run at once (controller.inc.jobs.fair_shares, share_links): the
pace each job's workers start at, and what their specs say."""

import dataclasses

import pytest

from controller.inc.allocation import Allocator
from controller.inc.jobs import fair_shares, plan_job, share_links, tree_links
from controller.inc.trees import plan_tree
from topo import addressing
from topo.wan import default_wan

SIX = ["TYOw1", "TYOw2", "NYCw1", "NYCw2", "LONw1", "LONw2"]


def test_jobs_on_the_same_tree_split_every_link_evenly() -> None:
    fab = addressing.fabric(default_wan("TYO,NYC,LON", rate_mbit=50))
    tree = plan_tree(fab, SIX)
    assert set(tree_links(fab, tree)) == {("NYC", "TYO"), ("LON", "NYC")}
    shares = fair_shares(fab, {t: [tree] for t in range(4)})
    assert shares == pytest.approx({t: 12.5e6 for t in range(4)})
    assert fair_shares(fab, {1: [tree]}) == pytest.approx({1: 50e6})  # alone: the whole link


def test_max_min_gives_what_a_bottleneck_leaves_to_the_others() -> None:
    """A on TYO-NYC, B on TYO-NYC and NYC-LON, C on NYC-LON, with NYC-LON at 20 Mbit/s: B and C split
    NYC-LON (10 each), and A takes what B leaves of TYO-NYC (40), not half of it."""
    wan = default_wan("TYO,NYC,LON", rate_mbit=50)
    wan.links = [
        dataclasses.replace(link, rate_mbit=20.0) if {link.a, link.b} == {"NYC", "LON"} else link
        for link in wan.links
    ]
    fab = addressing.fabric(wan)
    a = plan_tree(fab, ["TYOw1", "NYCw1"])
    b = plan_tree(fab, ["TYOw2", "NYCw2", "LONw1"])
    c = plan_tree(fab, ["NYCw1", "LONw2"])
    assert b.root == "NYC"
    shares = fair_shares(fab, {"a": [a], "b": [b], "c": [c]})  # type: ignore[dict-item]
    assert shares == pytest.approx({"a": 40e6, "b": 10e6, "c": 10e6})
    # no link carries more than its rate, and every job has a full link (no one can get more alone)
    for link, cap in {("NYC", "TYO"): 50e6, ("LON", "NYC"): 20e6}.items():
        assert sum(r for j, r in shares.items() if link in tree_links(fab, {"a": a, "b": b, "c": c}[j])) == (
            pytest.approx(cap)
        )


def test_access_links_are_shared_by_the_jobs_of_a_host() -> None:
    """Access-limited sites: two jobs on the same workers split each worker's access link, which is
    slower than the WAN here."""
    fab = addressing.fabric(default_wan("TYO,NYC", rate_mbit=50, access_rate_mbit=10))
    tree = plan_tree(fab, ["TYOw1", "NYCw1"])
    assert tree_links(fab, tree)[("access", "TYOw1")] == 10e6
    assert fair_shares(fab, {1: [tree], 2: [tree]}) == pytest.approx({1: 5e6, 2: 5e6})


def test_a_job_on_links_of_unknown_rate_is_not_paced() -> None:
    fab = addressing.fabric(default_wan("TYO", rate_mbit=50))  # one site: no WAN link at all
    tree = plan_tree(fab, ["TYOw1", "TYOw2"])
    assert fair_shares(fab, {1: [tree], 2: [tree]}) == {1: 0.0, 2: 0.0}


def test_share_links_reaches_the_worker_specs() -> None:
    """Four tenants over the same six workers: each worker's spec starts at a quarter of the slowest link
    and keeps the link's rate as the cap it may grow to."""
    fab = addressing.fabric(default_wan("TYO,NYC,LON", rate_mbit=50))
    alloc = Allocator([s.name for s in fab.switches])
    plans = [plan_job(fab, alloc, t, [[SIX]], nslots=512) for t in range(1, 5)]
    share_links(fab, plans)
    for p in plans:
        (role,) = p.worker_spec("LONw2").rounds
        assert role.rate_bps == pytest.approx(50e6) and role.share_bps == pytest.approx(12.5e6)
    alone = plan_job(fab, Allocator([s.name for s in fab.switches]), 9, [[SIX]], nslots=512)
    (role,) = alone.worker_spec("TYOw1").rounds
    assert role.share_bps == 0.0  # never shared: the worker starts at the link's rate
