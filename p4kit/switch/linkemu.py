"""WAN link emulation at a switch port's egress: one-way delay, jitter, rate limit and random loss.

Why here: this kernel has no netem qdisc (DESIGN §6), so a Mininet link cannot be shaped by tc. The
switch already owns every egress packet, so it shapes them itself, in the order netem would:

1. loss: a packet is dropped at random with probability `loss_pct / 100` before it queues;
2. rate: a bounded FIFO drains at `rate_mbit`; a packet finishes serialising at
   `max(now, link busy until) + bits / rate`; when `queue_pkts` packets are still waiting, the new one is
   tail-dropped (netem's default limit is 1000 packets);
3. delay: the packet leaves `delay_ms` (± a uniform `jitter_ms`) after it finished serialising.

Unlike netem with jitter, packets never overtake each other (a departure is never earlier than the one
before it on the same link), which is how a real WAN path behaves and what a sliding-window protocol
expects.

All links of a switch share one `DelayLine`: a heap of departures and one timer thread that sleeps until
the earliest one, sends everything due, and lets the next departures gather for half a millisecond
(`GRANULARITY_S`). DESIGN §6 measured this design at 80.26 ms for 80 ms configured.
"""

from __future__ import annotations

import collections
import contextlib
import heapq
import itertools
import random
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

SendFn = Callable[[bytes], object]


class LinkSpecError(ValueError):
    """A `--link` argument that cannot be understood; the message says which part and why."""


@dataclass(frozen=True)
class LinkParams:
    """Shaping of one port's egress. Zero means "not applied" for every knob."""

    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    rate_mbit: float = 0.0
    loss_pct: float = 0.0
    queue_pkts: int = 1000

    @property
    def active(self) -> bool:
        return bool(self.delay_ms or self.jitter_ms or self.rate_mbit or self.loss_pct)

    @property
    def needs_timer(self) -> bool:
        """Loss alone can be applied inline; delay, jitter and rate need the delay line."""
        return bool(self.delay_ms or self.jitter_ms or self.rate_mbit)

    def __str__(self) -> str:
        parts = []
        if self.delay_ms:
            parts.append(f"delay={self.delay_ms:g}ms")
        if self.jitter_ms:
            parts.append(f"jitter={self.jitter_ms:g}ms")
        if self.rate_mbit:
            parts.append(f"rate={self.rate_mbit:g}Mbit")
        if self.loss_pct:
            parts.append(f"loss={self.loss_pct:g}%")
        if self.rate_mbit:
            parts.append(f"limit={self.queue_pkts}")
        return " ".join(parts) or "unshaped"


_KEYS = {
    "delay": "delay_ms",
    "jitter": "jitter_ms",
    "rate": "rate_mbit",
    "loss": "loss_pct",
    "limit": "queue_pkts",
    "queue": "queue_pkts",
}
_SUFFIXES = {"delay_ms": ("ms",), "jitter_ms": ("ms",), "rate_mbit": ("mbit",), "loss_pct": ("%",)}


def parse_link_spec(spec: str) -> tuple[int, LinkParams]:
    """Parse `PORT:delay=MS,jitter=MS,rate=MBIT,loss=PCT[,limit=PKTS]` (units may be written: 80ms,
    10mbit, 1%). Raises LinkSpecError with a message fit for the command line."""
    port_text, sep, rest = spec.partition(":")
    if not sep:
        raise LinkSpecError(f"--link {spec!r}: expected PORT:key=value,...")
    try:
        port = int(port_text)
    except ValueError:
        raise LinkSpecError(f"--link {spec!r}: port {port_text!r} is not a number") from None
    values: dict[str, float | int] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, raw = item.partition("=")
        attr = _KEYS.get(key.strip().lower())
        if not eq or attr is None:
            raise LinkSpecError(
                f"--link {spec!r}: unknown setting {item!r} (use delay, jitter, rate, loss, limit)"
            )
        text = raw.strip().lower()
        for suffix in _SUFFIXES.get(attr, ()):
            if text.endswith(suffix):
                text = text[: -len(suffix)]
        try:
            number = float(text)
        except ValueError:
            raise LinkSpecError(f"--link {spec!r}: {key}={raw!r} is not a number") from None
        if number < 0 or (attr == "loss_pct" and number > 100):
            raise LinkSpecError(f"--link {spec!r}: {key}={raw!r} is out of range")
        values[attr] = int(number) if attr == "queue_pkts" else number
    if values.get("queue_pkts", 1) < 1:
        raise LinkSpecError(f"--link {spec!r}: limit must be at least 1 packet")
    return port, LinkParams(**values)  # type: ignore[arg-type]


_TC_RATE = re.compile(r"\brate (\d+(?:\.\d+)?)([KMGT]?)bit\b")
_TC_UNITS = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def kernel_rate_bps(iface: str) -> float:
    """The rate of the kernel's htb or tbf shaping on `iface` in bit/s (0.0: none, or no `tc`).

    Why: Mininet's TCLink (p4lang tutorials' `bw` in topology.json) shapes with htb; BMv2 then sees
    its queue fill because its transmit blocks. p4kit's queue model paces the port at this rate
    instead, so programs that read the queue fields see the same queue build up."""
    rates: list[float] = []
    for what in ("qdisc", "class"):
        try:
            out = subprocess.run(
                ["tc", what, "show", "dev", iface], capture_output=True, text=True, timeout=5, check=False
            ).stdout
        except (OSError, subprocess.SubprocessError):
            return 0.0
        for line in out.splitlines():
            if (what == "qdisc" and " tbf " in f" {line} ") or (
                what == "class" and line.startswith("class htb")
            ):
                m = _TC_RATE.search(line)
                if m:
                    rates.append(float(m.group(1)) * _TC_UNITS[m.group(2)])
    return min(rates) if rates else 0.0


@dataclass
class LinkStats:
    submitted: int = 0
    sent: int = 0
    lost: int = 0  # random loss
    tail_dropped: int = 0  # queue full


# After each wake the timer thread waits this long, so that departures a few hundred microseconds apart
# go in one wake. A wake costs the thread tens of microseconds (the condition, the GIL, the heap); at
# 20 Mbit/s a link's 322-byte frames leave every 129 us, and one wake per frame cost a three-site
# allreduce's switches 15-20 % more CPU than grouping them. A packet then leaves at most this much
# late (half of it on average: 0.3 % of a 80 ms link), and never early.
GRANULARITY_S = 0.0005


class DelayLine:
    """Departures ordered by time, sent by one timer thread. `schedule` is cheap and thread-safe."""

    def __init__(self, name: str = "p4kit-delayline", granularity: float = GRANULARITY_S) -> None:
        self.granularity = granularity  # 0: wake for every departure
        self.wakes = 0  # times the thread woke to send (its CPU cost is per wake, not per packet)
        self._heap: list[tuple[float, int, SendFn, bytes]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def schedule(self, when: float, send: SendFn, packet: bytes) -> None:
        """Call `send(packet)` at monotonic time `when`."""
        with self._cond:
            heapq.heappush(self._heap, (when, next(self._seq), send, packet))
            if self._heap[0][0] == when:
                self._cond.notify()

    def pending(self) -> int:
        with self._cond:
            return len(self._heap)

    def close(self, flush: bool = False) -> None:
        """Stop the thread; with flush, send what is still queued first (ignoring its time)."""
        with self._cond:
            self._stopped = True
            leftovers = sorted(self._heap) if flush else []
            self._heap.clear()
            self._cond.notify()
        self._thread.join(timeout=2)
        for _, _, send, packet in leftovers:
            _safe_send(send, packet)

    def _run(self) -> None:
        heap = self._heap
        grain = self.granularity
        while True:
            due: list[tuple[SendFn, bytes]] = []
            with self._cond:
                while not self._stopped:
                    if not heap:
                        self._cond.wait()
                        continue
                    wait = heap[0][0] - time.monotonic()
                    if wait <= 0:
                        break
                    self._cond.wait(wait)
                if self._stopped:
                    return
                self.wakes += 1
                now = time.monotonic()
                while heap and heap[0][0] <= now:
                    _, _, send, packet = heapq.heappop(heap)
                    due.append((send, packet))
            for send, packet in due:
                _safe_send(send, packet)
            if grain:
                time.sleep(grain)  # let the next departures gather: one wake sends them together


def _safe_send(send: SendFn, packet: bytes) -> None:
    # A transmit error (interface gone, buffer full) loses this packet only, as a wire would.
    with contextlib.suppress(OSError):
        send(packet)


@dataclass
class LinkShaper:
    """Applies `params` to the packets of one egress port and hands survivors to `send`."""

    params: LinkParams
    send: SendFn
    line: DelayLine | None = None
    rng: random.Random = field(default_factory=random.Random)
    stats: LinkStats = field(default_factory=LinkStats)
    # When the packet reached the switch. The port loop passes its receive time, so the switch's own
    # processing counts against the link's delay instead of adding to it: the emulated WAN then has the
    # configured latency end to end, as with a hardware switch whose processing time is negligible.
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        if self.params.needs_timer and self.line is None:
            raise ValueError("a shaper with delay, jitter or rate needs a DelayLine")
        self._lock = threading.Lock()
        self._busy_until = 0.0  # when the link finishes serialising what it already holds
        self._last_departure = 0.0
        self._finishes: collections.deque[float] = collections.deque()
        self._loss = self.params.loss_pct / 100.0
        self._bytes_per_s = self.params.rate_mbit * 1e6 / 8.0
        self._delay = self.params.delay_ms / 1000.0
        self._jitter = self.params.jitter_ms / 1000.0

    def clock_state(self) -> tuple[float, float]:
        """(when the link finishes serialising what it holds, the last departure): what another
        emulator of the same link (the native port loop) continues from, so that handing the link
        over neither reorders its packets nor forgets its queue."""
        with self._lock:
            return self._busy_until, self._last_departure

    def set_clock_state(self, busy_until: float, last_departure: float) -> None:
        with self._lock:
            self._busy_until = max(self._busy_until, busy_until)
            self._last_departure = max(self._last_departure, last_departure)

    def submit(self, packet: bytes) -> bool:
        """Queue one packet; False when it was lost or tail-dropped."""
        stats = self.stats
        stats.submitted += 1
        if self._loss and self.rng.random() < self._loss:
            stats.lost += 1
            return False
        if self.line is None:
            _safe_send(self.send, packet)
            stats.sent += 1
            return True
        with self._lock:
            now = self.clock()
            depart = now
            if self._bytes_per_s:
                finishes = self._finishes
                while finishes and finishes[0] <= now:
                    finishes.popleft()
                if len(finishes) >= self.params.queue_pkts:
                    stats.tail_dropped += 1
                    return False
                start = self._busy_until if self._busy_until > now else now
                depart = self._busy_until = start + len(packet) / self._bytes_per_s
                finishes.append(depart)
            depart += self._delay
            if self._jitter:
                depart += self.rng.uniform(-self._jitter, self._jitter)
            if depart < self._last_departure:
                depart = self._last_departure  # no reordering on one link
            self._last_departure = depart
        stats.sent += 1
        self.line.schedule(depart, self.send, packet)
        return True
