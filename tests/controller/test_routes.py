"""The route planner sends every destination along the lowest-RTT path."""

from pathlib import Path

from controller.routes import plan_routes
from topo import addressing
from topo.wan import default_wan, load_topology


def _routes(entries, switch):  # type: ignore[no-untyped-def]
    return {
        e.match["hdr.ipv4.dst_addr"]: e.params["port"]
        for e in entries
        if e.switch == switch and e.table == "ipv4_routes"
    }


def test_full_mesh_routes_directly_and_hosts_locally() -> None:
    wan = default_wan("TYO,NYC,LON")
    fab = addressing.fabric(wan)
    entries = plan_routes(fab)
    tyo = fab.switch("TYO")
    routes = _routes(entries, "TYO")
    # the two local workers and the edge host on ports 1, 2, 3
    assert routes[("10.0.1.1", 32)] == 1 and routes[("10.0.1.2", 32)] == 2 and routes[("10.0.1.100", 32)] == 3
    assert routes[("10.0.2.0", 24)] == tyo.neighbour_ports["NYC"]
    assert routes[("10.0.3.0", 24)] == tyo.neighbour_ports["LON"]
    assert len(routes) == 5


def test_sparse_mesh_routes_through_the_middle_site(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text(
        'sites = ["TYO", "NYC", "LON"]\nmesh = "none"\n[[link]]\na = "TYO"\nb = "NYC"\n[[link]]\na = "NYC"\nb = "LON"\n'
    )
    fab = addressing.fabric(load_topology(f))
    entries = plan_routes(fab)
    assert _routes(entries, "TYO")[("10.0.3.0", 24)] == fab.switch("TYO").neighbour_ports["NYC"]
    l2 = {
        e.match["hdr.ethernet.dst_addr"]: e.params["port"]
        for e in entries
        if e.switch == "TYO" and e.table == "l2_switch"
    }
    lon_w1 = fab.host("LONw1")[1]
    assert l2[lon_w1.mac] == fab.switch("TYO").neighbour_ports["NYC"]


def test_port_plan_numbers_wan_ports_after_hosts() -> None:
    wan = default_wan()
    fab = addressing.fabric(wan)
    for sw in fab.switches:
        host_ports = sorted(h.port for h in sw.hosts)
        assert host_ports == [1, 2, 3]
        assert sorted(sw.neighbour_ports.values()) == list(range(4, 4 + 8))
    assert len({sw.grpc_addr for sw in fab.switches}) == 9
