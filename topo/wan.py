"""The WAN model: sites (cities), the links between them, and what each link emulates.

The nine default cities and their median round-trip times come from `data/wan9_rtt_ms.csv` (Azure's
published network round-trip latency statistics; see the header of that file). A topology file (TOML)
may pick a subset of cities, add sites of its own, give sparse links and per-link RTT, rate and loss.

Two WAN models share this description. By default every worker hangs off its city's switch by an
unshaped link, so the only bottlenecks are the inter-city links (a full mesh of per-pair links). With
`access_rate_mbit` set, each worker reaches its city's switch over an access link of that rate in each
direction (the site's egress, as a data centre's uplink is); the switches, where INC aggregates, sit
beyond it, and the inter-city links keep their rates (DESIGN §5b: the access-limited model).

Rates are scaled down for a Python data plane (DESIGN §6): a link emulated at `rate_mbit` stands for a
real link of `real_rate_mbit`; `rate_scale` records the factor so that experiments can scale the edge
memory by the same amount and keep memory / (bandwidth x RTT) equal to the real network's.
"""

from __future__ import annotations

import csv
import itertools
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from controller import graph

DATA_DIR = Path(__file__).resolve().parent / "data"
CITY_FILE = DATA_DIR / "wan9_rtt_ms.csv"

DEFAULT_RATE_MBIT = 50.0  # what Python switches forward comfortably per link
DEFAULT_REAL_RATE_MBIT = 10_000.0  # the 10 Gbit/s WAN links the emulation stands for
DEFAULT_WORKERS_PER_SITE = 2


class TopologyError(ValueError):
    """A topology that cannot be built: unknown city, bad value, disconnected network, ..."""


@dataclass(frozen=True)
class Site:
    name: str
    continent: str = "unknown"
    lat: float = 0.0
    lon: float = 0.0


@dataclass(frozen=True)
class Link:
    """A bidirectional WAN link; delay, rate and loss apply in each direction."""

    a: str
    b: str
    rtt_ms: float
    rate_mbit: float = DEFAULT_RATE_MBIT
    loss_pct: float = 0.0
    jitter_ms: float = 0.0

    @property
    def one_way_ms(self) -> float:
        return self.rtt_ms / 2.0

    def other(self, name: str) -> str:
        return self.b if name == self.a else self.a


@dataclass
class Wan:
    sites: list[Site]
    links: list[Link]
    workers_per_site: int = DEFAULT_WORKERS_PER_SITE
    real_rate_mbit: float = DEFAULT_REAL_RATE_MBIT
    access_rate_mbit: float = 0.0  # 0: workers' links unshaped (full-mesh model); else each one's rate
    _by_name: dict[str, Site] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name = {s.name: s for s in self.sites}

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.sites]

    @property
    def rate_scale(self) -> float:
        """Emulated rate / real rate of the slowest link (1/200 for 50 Mbit/s standing for 10 Gbit/s)."""
        if not self.links:
            return 1.0
        return min(link.rate_mbit for link in self.links) / self.real_rate_mbit

    def site(self, name: str) -> Site:
        try:
            return self._by_name[name]
        except KeyError:
            raise TopologyError(f"unknown site {name!r} (sites: {', '.join(self.names)})") from None

    def link(self, a: str, b: str) -> Link | None:
        for link in self.links:
            if {link.a, link.b} == {a, b}:
                return link
        return None

    def neighbours(self, name: str) -> list[tuple[str, Link]]:
        return [(link.other(name), link) for link in self.links if name in (link.a, link.b)]

    def edges(self) -> list[tuple[str, str, float]]:
        """The links as (a, b, rtt_ms) for the graph routines."""
        return [(link.a, link.b, link.rtt_ms) for link in self.links]

    def path(self, a: str, b: str) -> list[str]:
        """The lowest-RTT path from a to b as a list of site names."""
        self.site(a), self.site(b)
        try:
            return graph.path(a, b, self.edges())
        except graph.NoPathError as exc:
            raise TopologyError(str(exc)) from None

    def rtt_ms(self, a: str, b: str) -> float:
        """Round-trip time between two sites along the lowest-RTT path (0 for a site and itself)."""
        hops = self.path(a, b)
        total = 0.0
        for u, v in itertools.pairwise(hops):
            link = self.link(u, v)
            assert link is not None
            total += link.rtt_ms
        return total

    def is_connected(self) -> bool:
        if not self.sites:
            return False
        seen = {self.sites[0].name}
        todo = [self.sites[0].name]
        while todo:
            for v, _ in self.neighbours(todo.pop()):
                if v not in seen:
                    seen.add(v)
                    todo.append(v)
        return len(seen) == len(self.sites)


@cache
def city_table() -> tuple[dict[str, Site], dict[frozenset[str], float]]:
    """The nine cities and their pairwise median RTTs (ms), read from the data file."""
    rows = [line for line in CITY_FILE.read_text().splitlines() if line and not line.startswith("#")]
    reader = csv.DictReader(rows)
    sites: dict[str, Site] = {}
    rtts: dict[frozenset[str], float] = {}
    names = [n for n in (reader.fieldnames or []) if n not in ("city", "continent", "lat", "lon")]
    for row in reader:
        name = row["city"]
        sites[name] = Site(name, row["continent"], float(row["lat"]), float(row["lon"]))
        for other in names:
            if other != name:
                rtts[frozenset((name, other))] = float(row[other])
    return sites, rtts


def _parse_site_list(names: list[str] | str | None) -> list[str]:
    known, _ = city_table()
    if names is None:
        return list(known)
    if isinstance(names, str):
        names = [n for n in names.replace(" ", "").split(",") if n]
    out: list[str] = []
    for raw in names:
        name = raw.upper()
        if name not in known:
            raise TopologyError(f"unknown city {raw!r}; known cities: {', '.join(known)}")
        if name in out:
            raise TopologyError(f"city {name} listed twice")
        out.append(name)
    if not out:
        raise TopologyError("a WAN needs at least one site")
    return out


def default_wan(
    sites: list[str] | str | None = None,
    rate_mbit: float = DEFAULT_RATE_MBIT,
    loss_pct: float = 0.0,
    workers_per_site: int = DEFAULT_WORKERS_PER_SITE,
    real_rate_mbit: float = DEFAULT_REAL_RATE_MBIT,
    access_rate_mbit: float = 0.0,
) -> Wan:
    """A full mesh over the given cities (default: all nine) with the table's RTTs."""
    names = _parse_site_list(sites)
    _check_link_values(rate_mbit, loss_pct, 0.0, "default")
    check_access_rate(access_rate_mbit, "--access-rate")
    if workers_per_site < 1:
        raise TopologyError("workers_per_site must be at least 1")
    known, rtts = city_table()
    links = [
        Link(a, b, rtts[frozenset((a, b))], rate_mbit, loss_pct) for a, b in itertools.combinations(names, 2)
    ]
    return Wan([known[n] for n in names], links, workers_per_site, real_rate_mbit, access_rate_mbit)


def check_access_rate(rate_mbit: float, where: str) -> None:
    """0 switches the access limit off; anything else must be a positive rate."""
    if rate_mbit < 0 or rate_mbit != rate_mbit:
        raise TopologyError(
            f"{where}: the access rate must be positive (Mbit/s) or 0 for none, got {rate_mbit}"
        )


def _check_link_values(rate_mbit: float, loss_pct: float, jitter_ms: float, where: str) -> None:
    if not rate_mbit > 0:
        raise TopologyError(f"{where}: rate_mbit must be positive, got {rate_mbit}")
    if not 0 <= loss_pct < 100:
        raise TopologyError(f"{where}: loss_pct must be in [0, 100), got {loss_pct}")
    if jitter_ms < 0:
        raise TopologyError(f"{where}: jitter_ms must not be negative, got {jitter_ms}")


_TOP_KEYS = {
    "sites",
    "site",
    "link",
    "mesh",
    "rate_mbit",
    "loss_pct",
    "jitter_ms",
    "workers_per_site",
    "real_rate_mbit",
    "access_rate_mbit",
}
_SITE_KEYS = {"name", "continent", "lat", "lon"}
_LINK_KEYS = {"a", "b", "rtt_ms", "rate_mbit", "loss_pct", "jitter_ms"}


def _number(table: dict, key: str, default: float, where: str) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TopologyError(f"{where}: {key} must be a number, got {value!r}")
    return float(value)


def _unknown_keys(table: dict, allowed: set[str], where: str) -> None:
    extra = sorted(set(table) - allowed)
    if extra:
        raise TopologyError(
            f"{where}: unknown key(s) {', '.join(extra)}; allowed: {', '.join(sorted(allowed))}"
        )


def parse_topology(doc: dict, source: str = "<topology>") -> Wan:
    """Build a Wan from a parsed topology document (see `load_topology` for the format)."""
    _unknown_keys(doc, _TOP_KEYS, source)
    known, rtts = city_table()
    rate = _number(doc, "rate_mbit", DEFAULT_RATE_MBIT, source)
    loss = _number(doc, "loss_pct", 0.0, source)
    jitter = _number(doc, "jitter_ms", 0.0, source)
    real_rate = _number(doc, "real_rate_mbit", DEFAULT_REAL_RATE_MBIT, source)
    access_rate = _number(doc, "access_rate_mbit", 0.0, source)
    check_access_rate(access_rate, f"{source}: access_rate_mbit")
    _check_link_values(rate, loss, jitter, source)
    workers = doc.get("workers_per_site", DEFAULT_WORKERS_PER_SITE)
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise TopologyError(f"{source}: workers_per_site must be a whole number >= 1, got {workers!r}")
    mesh = doc.get("mesh", "full")
    if mesh not in ("full", "none"):
        raise TopologyError(f'{source}: mesh must be "full" or "none", got {mesh!r}')

    sites: dict[str, Site] = {}
    listed = doc.get("sites")
    if listed is not None and not isinstance(listed, list):
        raise TopologyError(f"{source}: sites must be a list of city names")
    if listed:
        names = _parse_site_list(listed)
    elif listed is None and "site" not in doc:
        names = list(known)  # neither cities nor own sites given: the nine cities
    else:
        names = []
    for name in names:
        sites[name] = known[name]
    for i, entry in enumerate(doc.get("site", [])):
        where = f"{source}: [[site]] #{i + 1}"
        _unknown_keys(entry, _SITE_KEYS, where)
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise TopologyError(f"{where}: needs a name")
        if name in sites:
            raise TopologyError(f"{where}: site {name} defined twice")
        sites[name] = Site(
            name,
            str(entry.get("continent", "unknown")),
            _number(entry, "lat", 0.0, where),
            _number(entry, "lon", 0.0, where),
        )
    if not sites:
        raise TopologyError(f"{source}: no sites")

    links: dict[frozenset[str], Link] = {}
    for i, entry in enumerate(doc.get("link", [])):
        where = f"{source}: [[link]] #{i + 1}"
        _unknown_keys(entry, _LINK_KEYS, where)
        a, b = entry.get("a"), entry.get("b")
        for end in (a, b):
            if end not in sites:
                raise TopologyError(f"{where}: unknown site {end!r} (sites: {', '.join(sites)})")
        if a == b:
            raise TopologyError(f"{where}: a link needs two different sites")
        key = frozenset((a, b))
        if key in links:
            raise TopologyError(f"{where}: link {a}-{b} given twice")
        if "rtt_ms" in entry:
            rtt = _number(entry, "rtt_ms", 0.0, where)
        elif key in rtts:
            rtt = rtts[key]
        else:
            raise TopologyError(f"{where}: rtt_ms is needed for {a}-{b} (not in the city table)")
        if rtt < 0:
            raise TopologyError(f"{where}: rtt_ms must not be negative, got {rtt}")
        link_rate = _number(entry, "rate_mbit", rate, where)
        link_loss = _number(entry, "loss_pct", loss, where)
        link_jitter = _number(entry, "jitter_ms", jitter, where)
        _check_link_values(link_rate, link_loss, link_jitter, where)
        links[key] = Link(a, b, rtt, link_rate, link_loss, link_jitter)
    if mesh == "full":
        for a, b in itertools.combinations(sites, 2):
            key = frozenset((a, b))
            if key in links:
                continue
            if key not in rtts:
                raise TopologyError(
                    f'{source}: full mesh needs the RTT of {a}-{b}; give it in a [[link]] or set mesh = "none"'
                )
            links[key] = Link(a, b, rtts[key], rate, loss, jitter)
    wan = Wan(list(sites.values()), list(links.values()), workers, real_rate, access_rate)
    if not wan.is_connected():
        raise TopologyError(f"{source}: the topology is not connected")
    return wan


def load_topology(path: str | Path) -> Wan:
    """Read a TOML topology file.

    Example::

        sites = ["TYO", "NYC", "LON"]      # cities of the table; omit for all nine
        mesh = "none"                     # "full" (default): every pair linked with the table's RTT
        rate_mbit = 50                    # default rate of every link (emulated)
        real_rate_mbit = 10000            # what that rate stands for (records the scale factor)
        loss_pct = 0.0
        workers_per_site = 2
        access_rate_mbit = 20             # each worker's link to its city's switch (0: unshaped)

        [[site]]                          # a site not in the table
        name = "SYD"
        continent = "oceania"

        [[link]]
        a = "TYO"
        b = "NYC"                         # rtt_ms defaults to the table's
        rate_mbit = 20
        loss_pct = 1.0
        [[link]]
        a = "SYD"
        b = "TYO"
        rtt_ms = 110
    """
    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text())
    except OSError as exc:
        raise TopologyError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise TopologyError(f"{path}: not valid TOML: {exc}") from None
    return parse_topology(doc, str(path))
