"""Per-switch resources of INC jobs: register cells for slots and multicast group ids.

Each switch has a pool of INC_CELLS register cells (p4src/include/aggregation.p4); a tenant's round
needs two cells per slot. Ranges are first-fit and disjoint, so tenants never see each other's cells;
a request that does not fit anywhere is refused whole (nothing is half-allocated).

Every group id granted comes with its repair twin, `repair_group(g)` = g + REPAIR_GROUP_OFFSET, which
no other owner gets: a switch sends the aggregates that a repair or an urgent chunk completed to the
twin, which lists each link to another switch twice (controller/inc/install.py, repair_replicas).
Granted ids stay below the offset, and Edge-INC's tools keep to the ids above both
(controller/edge/plan.py, EDGE_FIRST_GROUP).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

INC_CELLS = 8192
FIRST_GROUP = 1
REPAIR_GROUP_OFFSET = 8192
LAST_GROUP = REPAIR_GROUP_OFFSET - 1  # the twins take the next 8,191; simple_switch's clone sessions 32768 up


def repair_group(group: int) -> int:
    """The repair twin of a granted group id (see the module's docstring)."""
    if not FIRST_GROUP <= group <= LAST_GROUP:
        raise ValueError(f"group {group} is outside {FIRST_GROUP}..{LAST_GROUP} and has no repair twin")
    return group + REPAIR_GROUP_OFFSET


class AllocationError(RuntimeError):
    """Not enough cells or group ids on a switch."""


@dataclass
class CellRange:
    base: int
    cells: int


@dataclass
class SwitchResources:
    name: str
    cells: int = INC_CELLS
    used: dict[object, CellRange] = field(default_factory=dict)  # owner -> range
    groups: dict[object, int] = field(default_factory=dict)  # owner -> group id

    def free_cells(self) -> int:
        return self.cells - sum(r.cells for r in self.used.values())

    def _fit(self, cells: int) -> int | None:
        pos = 0
        for r in sorted(self.used.values(), key=lambda r: r.base):
            if r.base - pos >= cells:
                return pos
            pos = max(pos, r.base + r.cells)
        return pos if self.cells - pos >= cells else None

    def _free_group(self) -> int | None:
        taken = set(self.groups.values())  # their twins are above LAST_GROUP: never candidates
        return next((g for g in range(FIRST_GROUP, LAST_GROUP + 1) if g not in taken), None)


class Allocator:
    """Thread-safe allocation across switches; `allocate` is all-or-nothing over its requests."""

    def __init__(self, switches: list[str], cells_per_switch: int = INC_CELLS) -> None:
        self._lock = threading.Lock()
        self.switches = {s: SwitchResources(s, cells_per_switch) for s in switches}

    def allocate(self, owner: object, requests: dict[str, int]) -> dict[str, tuple[CellRange, int]]:
        """For each switch: `cells` register cells and one multicast group, owned by `owner`."""
        with self._lock:
            plan: dict[str, tuple[CellRange, int]] = {}
            for sw, cells in requests.items():
                res = self.switches.get(sw)
                if res is None:
                    raise AllocationError(f"unknown switch {sw!r}")
                if owner in res.used:
                    raise AllocationError(f"{owner} already holds cells on {sw}")
                base = res._fit(cells)
                if base is None:
                    raise AllocationError(
                        f"switch {sw} has {res.free_cells()} free INC cells in pieces too small for {cells} "
                        f"(pool {res.cells})"
                    )
                group = res._free_group()
                if group is None:
                    raise AllocationError(f"switch {sw} has no free multicast group id")
                plan[sw] = (CellRange(base, cells), group)
            for sw, (rng, group) in plan.items():
                self.switches[sw].used[owner] = rng
                self.switches[sw].groups[owner] = group
            return plan

    def reserve(self, owner: object, switch: str, rng: CellRange, group: int) -> None:
        """Record an allocation that already exists (a controller restarting from its store)."""
        with self._lock:
            res = self.switches[switch]
            res.used[owner] = rng
            res.groups[owner] = group

    def release(self, owner: object) -> None:
        with self._lock:
            for res in self.switches.values():
                res.used.pop(owner, None)
                res.groups.pop(owner, None)
