"""What the parts of the service share: the network, the switches, the store, the allocator, one lock,
and the entries being written outside that lock.

Why a lock plus an `in_flight` set rather than one lock held through every write: writing a job to the
switches takes seconds (thousands of cell resets); holding the lock for it made one tenant's large job
block every other tenant's requests. The lock now covers only decisions (ids, allocations, rows); the
writes happen after it is released, and their entries are listed in `in_flight` so that a reconcile
running meanwhile neither deletes them as strays nor takes them for a job's missing entries.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field

from controller.inc.allocation import Allocator
from controller.p4rt import P4InfoIndex
from controller.service.entities import Item, Key
from controller.service.quotas import Quotas
from controller.service.store import Store
from controller.service.switches import SwitchPool
from controller.service.topology import Topology


@dataclass
class ServiceState:
    topology: Topology
    pool: SwitchPool
    store: Store
    allocator: Allocator
    quotas: Quotas
    lock: threading.RLock = field(default_factory=threading.RLock)
    in_flight: dict[int, list[Item]] = field(default_factory=dict)  # ticket -> entries being written
    _tickets: itertools.count = field(default_factory=lambda: itertools.count(1))

    @property
    def index(self) -> P4InfoIndex:
        return self.pool.index

    def hold(self, items: list[Item]) -> int:
        """Mark entries as being written (call with the lock held); returns the ticket to release."""
        ticket = next(self._tickets)
        self.in_flight[ticket] = items
        return ticket

    def release_hold(self, ticket: int) -> None:
        with self.lock:
            self.in_flight.pop(ticket, None)

    def held_keys(self, switch: str) -> set[Key]:
        return {i.key for items in self.in_flight.values() for i in items if i.switch == switch}

    def switch_in_sync(self, name: str) -> bool:
        """Reachable, with its pipeline, and holding every entry the store asks for (last reconcile)."""
        st = self.pool.status.get(name)
        return st is not None and st.reachable and st.in_sync
