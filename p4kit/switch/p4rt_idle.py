"""Idle timeout of table entries: which entries to report in IdleTimeoutNotification, and when.

Why separate: when an entry counts as idle, how often to look and when to report it again are
protocol state with their own rules (P4Runtime specification, sections "Idle-timeout"
(#sec-idle-timeout) and "Table Idle Timeout Notification" (#sec-table-idle-timeout-notification));
the dataplane only stamps each hit of an entry (``Entry.hit_ns``, tables with ``support_timeout``),
and the gRPC service only turns the reported entries into a stream message.

The rules, for every entry whose TableEntry was written with ``idle_timeout_ns`` > 0 (an *armed*
entry; 0 means the entry never expires):

- An entry is *idle* once it has not been hit for at least its ``idle_timeout_ns``. The countdown
  starts at the entry's last hit; a new entry counts as just hit, and an INSERT or MODIFY of the
  entry restarts the countdown (as BMv2 does when the TTL is set), without changing the hit time a
  Read reports in ``time_since_last_hit``.
- Reporting an entry restarts its countdown, as the specification asks: an entry that stays idle is
  reported again every ``idle_timeout_ns`` until it is hit, modified or deleted (the controller
  decides what to do with it; BMv2 also repeats, at its own sweep period).
- Every entry found idle in one check goes into one notification (``send`` gets the list); nothing
  is sent when none is. A deleted entry (``forget``) or one of an old pipeline (``reset``) is never
  reported, even when a check that saw it idle is under way: reported entries are confirmed under
  ``guard``, the lock the writes of entries take.

When to look: the thread sleeps until the earliest moment an armed entry can become idle (a hit can
only push that moment later), but at least ``MIN_PERIOD_NS`` and at most ``MAX_PERIOD_NS``; that
suits timeouts from about 10 ms to hours, and notifications are at most about one
``MIN_PERIOD_NS`` late. With no armed entry it sleeps until an entry is armed. It sleeps on an event,
so ``close`` returns at once.

Threads: ``arm`` / ``forget`` / ``reset`` run on gRPC threads with the guard held and only take a short
lock; the background thread (``start``) asks for hit times (``hit_ns``, the switch's lock) without
any lock of its own, then confirms and sends under the guard. Tests use an injected clock and call
``poll`` instead of starting the thread.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from p4kit.switch.p4rt_thread import ServiceThread

log = logging.getLogger("p4kit.switch.p4runtime")

MIN_PERIOD_NS = 10_000_000  # 10 ms: never look more often than this
MAX_PERIOD_NS = 1_000_000_000  # 1 s: look at least this often while an entry is armed

Key = tuple[str, int]  # (table name, entry handle)


@dataclass(eq=False)
class _Armed:
    """One armed entry. A new object on every (re-)arm, so a check can tell whether its entry was
    re-armed or forgotten while it was looking."""

    timeout_ns: int
    armed_ns: int  # clock ns the countdown runs from besides the last hit: INSERT / MODIFY / report


class IdleWatcher(ServiceThread):
    """Reports armed entries that stay idle; ``send(keys)`` receives the keys of one check.

    ``hit_ns(table, handle)`` answers the entry's last hit time on ``clock`` (ns), or None when the
    entry is gone. ``send`` is called with ``guard`` held and the watcher's own lock free.
    """

    thread_name = "p4rt-idle"

    def __init__(
        self,
        send: Callable[[list[Key]], None],
        hit_ns: Callable[[str, int], int | None],
        clock: Callable[[], int],
        guard: AbstractContextManager[Any] | None = None,
    ) -> None:
        self._send = send
        self._hit_ns = hit_ns
        self._clock = clock
        self._guard: AbstractContextManager[Any] = guard if guard is not None else contextlib.nullcontext()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._armed: dict[Key, _Armed] = {}
        self._closed = False
        self._thread: threading.Thread | None = None
        self._planned: int | None = None  # when the thread checks next (None: not before an arm)
        self._soonest: int | None = None  # earliest idle time of an entry armed since it planned

    # ------------------------------------------------------------------ inputs
    def arm(self, table: str, handle: int, timeout_ns: int) -> None:
        """An entry was inserted or modified with this idle_timeout_ns: (re)start its countdown. A
        timeout <= 0 disarms it."""
        with self._lock:
            if timeout_ns <= 0:
                self._armed.pop((table, handle), None)
                return
            st = self._armed[(table, handle)] = _Armed(timeout_ns, self._clock())
            idle_at = st.armed_ns + timeout_ns
            if self._planned is not None and idle_at >= self._planned:
                return  # the thread looks before this entry can be idle
            self._soonest = idle_at if self._soonest is None else min(self._soonest, idle_at)
        self._wake.set()  # let the thread plan its next check again (it does not check at once)

    def forget(self, table: str, handle: int) -> None:
        """The entry was deleted: it is never reported again."""
        with self._lock:
            self._armed.pop((table, handle), None)

    def reset(self) -> None:
        """A new pipeline: no entry is armed any more."""
        with self._lock:
            self._armed.clear()

    def armed(self) -> int:
        """How many entries are armed."""
        with self._lock:
            return len(self._armed)

    # ------------------------------------------------------------------ the check
    def poll(self) -> int | None:
        """Look at every armed entry once and report the idle ones (in this thread). Returns the clock
        time at which the next check is due, or None when no entry is armed."""
        with self._lock:
            armed = list(self._armed.items())
        if not armed:
            return None
        now = self._clock()
        due = now + MAX_PERIOD_NS
        idle: list[tuple[Key, _Armed, int]] = []
        for key, st in armed:
            hit = self._hit_ns(*key)
            if hit is None:  # deleted under us; its DELETE forgets it
                continue
            idle_at = max(hit, st.armed_ns) + st.timeout_ns
            if idle_at <= now:
                idle.append((key, st, hit))
            else:
                due = min(due, idle_at)
        if idle:
            with self._guard:  # no entry write runs until the report is out
                with self._lock:
                    keys = []
                    for key, st, _ in idle:
                        if self._armed.get(key) is st:  # not deleted, re-armed or reset meanwhile
                            st.armed_ns = now  # reported: the countdown starts again
                            keys.append(key)
                if keys:
                    try:
                        self._send(keys)
                    except Exception:  # a failed send must not stop the thread
                        log.exception("sending an idle timeout notification failed")
            for _, st, _ in idle:
                due = min(due, now + st.timeout_ns)
        return max(due, now + MIN_PERIOD_NS)

    # ------------------------------------------------------------------ the thread
    def _wake_to_close(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while True:
            with self._lock:
                self._planned = None  # checking: an arm from now on is taken into account below
            try:
                due = self.poll()
            except Exception:  # e.g. the switch failing a hit lookup; try again later
                log.exception("idle timeout check failed")
                due = self._clock() + MAX_PERIOD_NS
            earliest = self._clock() + MIN_PERIOD_NS
            while True:  # sleep until the check is due; an arm may bring it forward
                self._wake.clear()  # before reading the state: a later arm wakes the wait below
                with self._lock:
                    if self._closed:
                        return
                    if self._soonest is not None:
                        due = self._soonest if due is None else min(due, self._soonest)
                        self._soonest = None
                    if due is not None:
                        due = max(due, earliest)
                    self._planned = due
                now = self._clock()
                if due is not None and due <= now:
                    break
                self._wake.wait(None if due is None else (due - now) / 1e9)
