"""The traffic manager: per-port egress queues between ingress and egress, as simple_switch has them.

Why: programs such as ECN marking or in-band telemetry read how long a packet waited and how deep
its queue was (standard_metadata's enq_timestamp, enq_qdepth, deq_timedelta, deq_qdepth). Those
numbers only mean something if packets really wait: this module holds them until their port may
send them, and the engine runs egress when a packet leaves its queue, as BMv2's egress threads do.

The model (BMv2's QueueingLogicPriRL, read from its documentation and behaviour):

- Every egress port has `priorities` queues (1 unless `--priority-queues N`). A packet goes to the
  queue of its `standard_metadata.priority`; a priority >= N drops the packet. Higher priorities are
  served first (strict priority, so a busy high queue starves the lower ones).
- Each queue holds at most `depth` packets (64 by default, BMv2's default); a packet arriving at a
  full queue is tail-dropped.
- A queue may have a rate in packets per second (0: unlimited, the default). As in BMv2, a
  packet's earliest departure is fixed when it is queued: `max(now, previous departure + 1/rate)`.
- A port may also have a bit rate (the link emulation's rate): then its queues share the link, and
  a packet leaves only once the previous one has finished serialising (`length * 8 / bit rate`).
- Units as in BMv2: timestamps and time deltas in microseconds since the switch started, depths in
  packets. `enq_qdepth` is the depth of the packet's queue before it joined it; `deq_qdepth` the
  depth after it left.

The link emulation's rate (`--link PORT:rate=`), or the kernel's htb/tbf shaping found on the
interface (as Mininet's TCLink sets it for the p4lang tutorials), paces a port's queues when the
program reads the queue fields: packets then wait in the switch, where the program can see them
wait, as they do in BMv2 behind its blocking transmit. The shaper after egress still models the
serialisation (a packet leaves the queue when its serialisation starts), so nothing is counted twice.
Programs that do not read the fields leave the shaping to the link emulator alone.

A port with no rate never holds a packet: it is dequeued as soon as it is queued, so its depths are
0 and its time delta is 0, which is what BMv2 reports when its egress keeps up with its ingress.

Configuration API (what `simple_switch_CLI`'s set_queue_depth / set_queue_rate and the command
line's `--priority-queues` reach, through `runtime.Switch`):

    tm = TrafficManager(priorities=1, depth=64)
    tm.set_queue_depth(depth, port=None, priority=None)   # None: every port / every priority
    tm.set_queue_rate(pps, port=None, priority=None)      # packets per second, 0 = unlimited
    tm.set_port_bit_rate(port, bits_per_s)                 # a rate shared by the port's queues
    tm.set_link_rate(port, bits_per_s)                     # the port's link (see below)
    tm.rated(port) -> bool                                 # does the port ever hold packets?

The data plane uses `enqueue`, `pop_ready` and `next_departure`; the caller provides the locking
(the switch's lock).
"""

from __future__ import annotations

import collections
import itertools
import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from p4kit.switch.errors import InvalidOperationError

if TYPE_CHECKING:
    from p4kit.switch.runtime import Switch

log = logging.getLogger("p4kit.switch.queues")

DEFAULT_DEPTH = 64  # packets, simple_switch's default queue capacity
MAX_PRIORITIES = 8  # standard_metadata.priority is bit<3>


class QueueConfigError(InvalidOperationError):
    """A queue setting that cannot be applied (bad port, priority, depth or rate)."""


@dataclass
class _Queue:
    """One (port, priority) queue: FIFO of (departure, seq, length, item)."""

    depth: int
    pps: float = 0.0
    last_departure: float = 0.0
    items: collections.deque = field(default_factory=collections.deque)

    def next_departure(self, now: float) -> float:
        if not self.pps:
            return now
        gap = 1.0 / self.pps
        start = self.last_departure + gap
        return start if start > now else now


@dataclass
class _Port:
    queues: list[_Queue]
    bits_per_s: float = 0.0  # set for the queue model itself (set_port_bit_rate)
    link_bps: float = 0.0  # the port's link (--link rate, or the kernel's shaping of the interface)
    busy_until: float = 0.0  # when the link finishes serialising the last packet sent

    def size(self) -> int:
        return sum(len(q.items) for q in self.queues)


class TrafficManager:
    """Egress queues of every port. Not thread-safe by itself: callers hold the switch's lock."""

    def __init__(self, priorities: int = 1, depth: int = DEFAULT_DEPTH) -> None:
        if not 1 <= priorities <= MAX_PRIORITIES:
            raise QueueConfigError(
                f"priority queues must be between 1 and {MAX_PRIORITIES}, not {priorities}"
            )
        _check_depth(depth)
        self.priorities = priorities
        self.default_depth = depth
        self.default_pps = 0.0
        self._ports: dict[int, _Port] = {}
        self._seq = itertools.count()
        self.tail_drops = 0
        self.priority_drops = 0
        # Link rates pace the queues only for programs that read the queue fields (the engine sets
        # this per program): otherwise the link emulator alone shapes, with no queue bookkeeping.
        self.use_link_rates = False

    def with_priorities(self, priorities: int) -> TrafficManager:
        """A fresh manager with `priorities` queues per port that keeps the default depth, the
        default rate and the ports' link rates (what --priority-queues changes, and only that)."""
        tm = TrafficManager(priorities, self.default_depth)
        tm.default_pps = self.default_pps
        tm.use_link_rates = self.use_link_rates
        for number, p in self._ports.items():
            if p.link_bps:
                tm.set_link_rate(number, p.link_bps)
        return tm

    # ------------------------------------------------------------------ configuration
    def _port(self, port: int) -> _Port:
        p = self._ports.get(port)
        if p is None:
            _check_port(port)
            p = _Port([_Queue(self.default_depth, self.default_pps) for _ in range(self.priorities)])
            self._ports[port] = p
        return p

    def _targets(self, port: int | None, priority: int | None) -> list[_Queue]:
        if priority is not None and not 0 <= priority < self.priorities:
            raise QueueConfigError(
                f"priority {priority} out of range: the switch has {self.priorities} queue(s) per port"
            )
        ports = [self._port(port)] if port is not None else list(self._ports.values())
        return [q for p in ports for i, q in enumerate(p.queues) if priority is None or i == priority]

    def set_queue_depth(self, depth: int, port: int | None = None, priority: int | None = None) -> None:
        """Capacity in packets of one queue, every queue of a port, or (port None) every queue."""
        _check_depth(depth)
        if port is None and priority is None:
            self.default_depth = depth
        for q in self._targets(port, priority):
            q.depth = depth

    def set_queue_rate(self, pps: float, port: int | None = None, priority: int | None = None) -> None:
        """Departure rate in packets per second (0: unlimited), like simple_switch's set_queue_rate."""
        if pps < 0:
            raise QueueConfigError(f"queue rate must be >= 0 packets per second, not {pps}")
        if port is None and priority is None:
            self.default_pps = float(pps)
        for q in self._targets(port, priority):
            q.pps = float(pps)

    def set_port_bit_rate(self, port: int, bits_per_s: float) -> None:
        """The rate of the port's link (0: none): its queues share it, a packet at a time."""
        if bits_per_s < 0:
            raise QueueConfigError(f"port rate must be >= 0 bit/s, not {bits_per_s}")
        self._port(port).bits_per_s = float(bits_per_s)

    def set_link_rate(self, port: int, bits_per_s: float) -> None:
        """The rate at which the port's link really carries packets (see `use_link_rates`)."""
        if bits_per_s < 0:
            raise QueueConfigError(f"link rate must be >= 0 bit/s, not {bits_per_s}")
        self._port(port).link_bps = float(bits_per_s)

    def _bps(self, p: _Port) -> float:
        return p.bits_per_s or (p.link_bps if self.use_link_rates else 0.0)

    def rated(self, port: int) -> bool:
        p = self._ports.get(port)
        if p is None:
            return bool(self.default_pps)
        return bool(self._bps(p)) or any(q.pps for q in p.queues)

    @property
    def any_rate(self) -> bool:
        return bool(self.default_pps) or any(self.rated(n) for n in self._ports)

    def size(self, port: int, priority: int | None = None) -> int:
        p = self._ports.get(port)
        if p is None:
            return 0
        if priority is None:
            return p.size()
        return len(p.queues[priority].items)

    def pending(self) -> int:
        return sum(p.size() for p in self._ports.values())

    # ------------------------------------------------------------------ data plane
    def enqueue(self, port: int, priority: int, item: Any, length: int, now: float) -> int | None:
        """Queue `item` (`length` bytes) at time `now`; its queue's depth before it joined, or None
        when it was dropped (priority out of range, queue full)."""
        if not 0 <= priority < self.priorities:
            self.priority_drops += 1
            return None
        q = self._port(port).queues[priority]
        depth = len(q.items)
        if depth >= q.depth:
            self.tail_drops += 1
            return None
        departure = q.next_departure(now)
        q.last_departure = departure
        q.items.append((departure, next(self._seq), length, item))
        return depth

    def pop_ready(self, now: float) -> list[tuple[int, int, Any, int]]:
        """Every packet allowed to leave by `now`, in departure order per port and highest priority
        first: (port, priority, item, depth of its queue after it left)."""
        out: list[tuple[int, int, Any, int]] = []
        for number, p in self._ports.items():
            bps = self._bps(p)
            while True:
                if bps and p.busy_until > now:
                    break
                chosen = None
                for pri in range(self.priorities - 1, -1, -1):
                    items = p.queues[pri].items
                    if items and items[0][0] <= now:
                        chosen = pri
                        break
                if chosen is None:
                    break
                _, _, length, item = p.queues[chosen].items.popleft()
                if bps:
                    # The packet starts serialising now; the link emulator (or the kernel's shaper)
                    # after egress models the serialisation itself, so it is never counted twice.
                    start = p.busy_until if p.busy_until > now else now
                    p.busy_until = start + length * 8 / bps
                out.append((number, chosen, item, len(p.queues[chosen].items)))
        return out

    def next_departure(self) -> float | None:
        """The earliest time at which `pop_ready` would return something (None: queues empty)."""
        best: float | None = None
        for p in self._ports.values():
            head = min((q.items[0][0] for q in p.queues if q.items), default=None)
            if head is None:
                continue
            if self._bps(p) and p.busy_until > head:
                head = p.busy_until
            if best is None or head < best:
                best = head
        return best

    def clear(self) -> int:
        """Drop everything queued (pipeline replaced); how many packets were dropped."""
        n = 0
        for p in self._ports.values():
            for q in p.queues:
                n += len(q.items)
                q.items.clear()
        return n


class EgressScheduler:
    """The thread that takes packets out of their queues when they may leave and runs their egress.

    Why a thread: a queued packet must leave at its departure time whether or not another packet
    arrives. It only exists while packets are queued (it ends after `IDLE_S` with empty queues), so
    a switch whose ports have no rate never starts one. Egress runs under the switch's lock; the
    outputs go to the switch's output callback (the port loop's transmit), or are kept for
    `Switch.take_outputs` when there is none."""

    IDLE_S = 1.0

    def __init__(self, switch: Switch) -> None:
        self.sw = switch
        self._wake = threading.Event()
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None

    def kick(self) -> None:
        """A packet was queued: make sure the thread runs and looks at the queues again."""
        self._wake.set()
        with self._guard:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="p4kit-egress-queues", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        sw = self.sw
        idle_since: float | None = None
        while True:
            self._wake.clear()
            with sw._lock:
                tm = sw.traffic_manager
                now = sw.clock()
                items = tm.pop_ready(now)
                engine = sw._engine
                if items and engine is not None:
                    for out in engine.dequeued(items, now):
                        try:
                            sw._deliver([out])
                        except Exception:  # a failing output callback loses this packet, not the queues
                            log.exception(
                                "egress queues: delivering a packet to port %d failed (dropped)", out[0]
                            )
                nxt = tm.next_departure()
                if nxt is None:
                    if idle_since is None:
                        idle_since = now
                    elif now - idle_since > self.IDLE_S:
                        with self._guard:
                            if not self._wake.is_set():
                                self._thread = None
                                return
                    timeout = self.IDLE_S / 4
                else:
                    idle_since = None
                    timeout = max(0.0, nxt - now)
            if timeout:
                self._wake.wait(timeout)


def _check_depth(depth: int) -> None:
    if not isinstance(depth, int) or depth < 1:
        raise QueueConfigError(f"queue depth must be a whole number of packets >= 1, not {depth!r}")


def _check_port(port: int) -> None:
    if not isinstance(port, int) or not 0 <= port < 512:
        raise QueueConfigError(f"port {port!r} is not a v1model port (0..511)")


__all__ = ["DEFAULT_DEPTH", "EgressScheduler", "QueueConfigError", "TrafficManager"]
