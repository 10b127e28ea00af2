"""The WAN model: the city table, subsets, topology files and their errors."""

from pathlib import Path

import pytest

from topo.wan import TopologyError, default_wan, load_topology


def test_default_is_full_mesh_of_nine_cities_with_table_rtts() -> None:
    wan = default_wan()
    assert wan.names == ["TYO", "HKG", "SIN", "NYC", "CHI", "LAX", "LON", "FRA", "AMS"]
    assert len(wan.links) == 36
    assert wan.rtt_ms("TYO", "LON") == 230
    assert wan.rtt_ms("LON", "TYO") == 230
    assert wan.rtt_ms("FRA", "AMS") == 11
    assert wan.site("SIN").continent == "asia"
    assert wan.rate_scale == pytest.approx(50 / 10_000)


def test_subset_accepts_comma_list_in_any_case() -> None:
    wan = default_wan("tyo, nyc,LON")
    assert wan.names == ["TYO", "NYC", "LON"]
    assert len(wan.links) == 3


@pytest.mark.parametrize(
    ("sites", "message"),
    [("TYO,XXX", "unknown city 'XXX'"), ("TYO,TYO", "listed twice"), ("", "at least one site")],
)
def test_bad_site_lists(sites: str, message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        default_wan(sites)


def test_sparse_topology_routes_over_the_lowest_rtt_path(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text(
        'sites = ["TYO", "NYC", "LON"]\nmesh = "none"\nrate_mbit = 20\n'
        '[[link]]\na = "TYO"\nb = "NYC"\n'
        '[[link]]\na = "NYC"\nb = "LON"\nloss_pct = 2.0\n'
    )
    wan = load_topology(f)
    assert len(wan.links) == 2
    assert wan.path("TYO", "LON") == ["TYO", "NYC", "LON"]
    assert wan.rtt_ms("TYO", "LON") == 162 + 78
    nyc_lon = wan.link("LON", "NYC")
    assert nyc_lon is not None and nyc_lon.loss_pct == 2.0 and nyc_lon.rate_mbit == 20


def test_custom_site_with_its_own_links(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text(
        'sites = ["TYO"]\nmesh = "none"\n[[site]]\nname = "SYD"\ncontinent = "oceania"\n'
        '[[link]]\na = "SYD"\nb = "TYO"\nrtt_ms = 110\n'
    )
    wan = load_topology(f)
    assert wan.names == ["TYO", "SYD"] and wan.rtt_ms("SYD", "TYO") == 110


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('sites = ["TYO", "NYC"]\nmesh = "none"\n', "not connected"),
        ('sites = ["TYO", "NYC"]\nrate_mbit = 0\n', "rate_mbit must be positive"),
        ('sites = ["TYO", "NYC"]\nloss_pct = 100\n', "loss_pct"),
        ('sites = ["TYO"]\nratembit = 5\n', "unknown key.*ratembit"),
        ('sites = ["TYO"]\n[[link]]\na = "TYO"\nb = "MARS"\n', "unknown site 'MARS'"),
        ('sites = ["TYO"]\n[[site]]\nname = "SYD"\n', "full mesh needs the RTT of TYO-SYD"),
        ('sites = ["TYO", "NYC"]\n[[link]]\na = "TYO"\nb = "NYC"\nrtt_ms = -1\n', "must not be negative"),
        ("sites = [\n", "not valid TOML"),
        ("sites = []\n", "no sites"),
        ('sites = "TYO"\n', "must be a list"),
    ],
)
def test_bad_topology_files_give_clear_errors(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(TopologyError, match=message):
        load_topology(f)


def test_missing_file_is_a_topology_error(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match="cannot read"):
        load_topology(tmp_path / "nope.toml")
