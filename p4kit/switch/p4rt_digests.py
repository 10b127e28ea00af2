"""Batching of learned digests into P4Runtime DigestList messages, as a DigestEntry's config asks.

Why separate: the buffering, duplicate suppression and timers are protocol state with their own rules
(P4Runtime specification, section "`DigestEntry`" (#sec-digestentry) with its pseudo-code; the stream
section "Digest Messages" points there); the gRPC service only feeds digests and acks in and puts the
finished lists on the streams.

Terms as in the spec: a *digest message* is one learned tuple (one `digest<T>()` call), a *digest list*
is the DigestList sent for one digest instance; two messages are *duplicates* when their values are
equal, *distinct* otherwise.

The rules, per digest id, with the DigestEntry.Config read again at every decision (so a MODIFY or
DELETE of the DigestEntry applies to what is already buffered):

- A message is dropped if the digest is not configured, or if a duplicate is already waiting in the
  buffer or is in the *cache* (sent in a list that is neither acknowledged nor older than the ack
  timeout). A list therefore never holds duplicates, and a value the controller has been told about is
  not repeated until it acks that list or the ack timeout passes.
- The buffer is sent as a list once it holds `max_list_size` distinct messages, or once
  `max_timeout_ns` has passed since the oldest buffered message arrived, whichever comes first. No list
  is longer than `max_list_size` (a longer buffer, left by a MODIFY that lowered it, goes out in
  several lists). Every list gets the next list id (ids only grow, across all digests) and one
  timestamp (ns since the epoch, when the list was made).
- With `ack_timeout_ns` > 0 a sent list's messages stay in the cache until a DigestListAck with the
  same digest id and list id arrives, or until they are `ack_timeout_ns` old.
- Deleting the DigestEntry drops the digest's buffer and cache; a new pipeline (`reset`) drops all.

The zero values, as the spec defines them:

- `max_timeout_ns` = 0: no buffering delay; every message not suppressed by the cache is sent at once
  as a list of one (the same as `max_list_size` = 1). This is the default config, so a DigestEntry
  written without a config behaves as the server did before batching.
- `max_list_size` = 0: no size limit set by the client; the spec lets the server pick any non-zero
  size as long as `max_timeout_ns` is honoured. Here the buffer is sent when the timeout expires, and
  at the latest when it reaches `UNLIMITED_LIST_SIZE` messages (which bounds memory and message size).
- `ack_timeout_ns` = 0: the cache is always empty, so nothing is suppressed across lists (duplicates
  are still merged within one buffer).

Negative values (the proto fields are signed) are read as 0.

Threads: `add` runs on the dataplane thread and only takes a short lock (no sending, no protobuf);
`ack` runs on a stream thread; one background thread (`start`) makes the lists whose timeout expired,
expires the cache and hands every finished list to `send`, in list id order. Tests use an injected
clock and call `poll` instead of starting the thread.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from p4.v1 import p4runtime_pb2

from p4kit.switch.p4rt_thread import ServiceThread

log = logging.getLogger("p4kit.switch.p4runtime")

UNLIMITED_LIST_SIZE = 4096  # the list size used when max_list_size is 0 ("no limit")

Values = tuple[int, ...]


@dataclass(frozen=True)
class DigestBatch:
    """One DigestList to send: the digest's messages (distinct values, in arrival order)."""

    digest_id: int
    list_id: int
    timestamp: int  # ns since the epoch
    values: tuple[Values, ...]


@dataclass(frozen=True)
class BatchConfig:
    """A DigestEntry.Config with the zero / negative values resolved."""

    max_timeout_ns: int
    list_size: int  # >= 1
    ack_timeout_ns: int

    @classmethod
    def of(cls, config: p4runtime_pb2.DigestEntry.Config) -> BatchConfig:
        size = config.max_list_size
        return cls(
            max_timeout_ns=max(0, config.max_timeout_ns),
            list_size=size if size > 0 else UNLIMITED_LIST_SIZE,
            ack_timeout_ns=max(0, config.ack_timeout_ns),
        )


@dataclass
class _SentList:
    sent_at: int  # clock ns
    values: tuple[Values, ...]


@dataclass
class _DigestState:
    buffer: dict[Values, int] = field(default_factory=dict)  # values -> arrival (clock ns), in order
    sent: dict[int, _SentList] = field(default_factory=dict)  # unacked lists by list id, oldest first
    cache: dict[Values, int] = field(default_factory=dict)  # values -> the unacked list holding them

    def empty(self) -> bool:
        return not self.buffer and not self.sent

    def forget(self, list_id: int) -> bool:
        lst = self.sent.pop(list_id, None)
        if lst is None:
            return False
        for v in lst.values:
            if self.cache.get(v) == list_id:
                del self.cache[v]
        return True


ConfigLookup = Callable[[int], p4runtime_pb2.DigestEntry.Config | None]


class DigestBatcher(ServiceThread):
    """Per-digest buffers and ack caches; `send(batch)` receives each finished list.

    `config_of(digest_id)` answers the digest's current DigestEntry.Config, or None when the digest is
    not configured; it is called with the batcher's lock held, so it must not block or take locks.
    `clock` is a monotonic ns clock (deadlines), `wall_clock` gives list timestamps.
    """

    thread_name = "p4rt-digests"

    def __init__(
        self,
        send: Callable[[DigestBatch], None],
        config_of: ConfigLookup,
        clock: Callable[[], int] = time.monotonic_ns,
        wall_clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self._send = send
        self._config_of = config_of
        self._clock = clock
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._send_lock = threading.Lock()  # lists leave in list id order
        self._states: dict[int, _DigestState] = {}
        self._ready: deque[DigestBatch] = deque()
        self._list_ids = itertools.count(1)
        self._poke = False  # something changed since the timer thread last looked
        self._closed = False
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ inputs
    def add(self, digest_id: int, values: Values) -> bool:
        """A digest message from the dataplane. False when dropped (not configured, or a duplicate)."""
        config = self._config_of(digest_id)
        if config is None:
            return False
        cfg = BatchConfig.of(config)
        values = tuple(values)
        with self._lock:
            if self._closed:
                return False
            now = self._clock()
            state = self._states.setdefault(digest_id, _DigestState())
            self._expire(state, cfg, now)
            if values in state.buffer or values in state.cache:
                return False
            state.buffer[values] = now
            if len(state.buffer) >= cfg.list_size or cfg.max_timeout_ns == 0:
                self._flush(digest_id, state, cfg, now)
            if self._ready or len(state.buffer) == 1:  # a list to send, or a new deadline
                self._wake_locked()
        return True

    def ack(self, digest_id: int, list_id: int) -> bool:
        """A DigestListAck: the list's messages leave the cache. False for an unknown (or expired) list."""
        with self._lock:
            state = self._states.get(digest_id)
            if state is None or not state.forget(list_id):
                return False
            if state.empty():
                del self._states[digest_id]
            return True

    def wake(self) -> None:
        """A DigestEntry was written: let the timer thread look at the deadlines again."""
        with self._lock:
            self._wake_locked()

    def reset(self) -> None:
        """Drop every buffer, cache and list not yet sent (a new pipeline)."""
        with self._lock:
            self._states.clear()
            self._ready.clear()
            self._wake_locked()

    # ------------------------------------------------------------------ the timer
    def poll(self) -> int | None:
        """Make the lists that are due, expire the cache and send what is ready (in this thread).
        Returns the clock time at which something next falls due, or None."""
        with self._send_lock:
            with self._lock:
                self._poke = False
                due = self._check_locked(self._clock())
                ready = list(self._ready)
                self._ready.clear()
            for batch in ready:
                try:
                    self._send(batch)
                except Exception:  # a failed send must not stop the timer thread
                    log.exception("sending digest list %d failed", batch.list_id)
        return due

    def _wake_to_close(self) -> None:
        self._cond.notify_all()  # after close, later digests are dropped

    def pending(self, digest_id: int) -> int:
        """Messages buffered for the digest (not yet in a list)."""
        with self._lock:
            state = self._states.get(digest_id)
            return len(state.buffer) if state else 0

    # ------------------------------------------------------------------ internals (lock held)
    def _wake_locked(self) -> None:
        self._poke = True
        self._cond.notify_all()

    def _run(self) -> None:
        while True:
            due = self.poll()
            with self._lock:
                if self._closed:
                    return
                if self._poke or self._ready:
                    continue
                timeout = None if due is None else max(0.0, (due - self._clock()) / 1e9)
                self._cond.wait(timeout)
                if self._closed:
                    return

    def _check_locked(self, now: int) -> int | None:
        due: int | None = None
        for digest_id in list(self._states):
            state = self._states[digest_id]
            config = self._config_of(digest_id)
            if config is None:  # the DigestEntry was deleted: learning is off for it
                del self._states[digest_id]
                continue
            cfg = BatchConfig.of(config)
            self._expire(state, cfg, now)
            self._flush(digest_id, state, cfg, now)
            if state.empty():
                del self._states[digest_id]
                continue
            if state.buffer:
                first = next(iter(state.buffer.values()))
                due = _earliest(due, first + cfg.max_timeout_ns)
            if state.sent:
                oldest = next(iter(state.sent.values()))
                due = _earliest(due, oldest.sent_at + cfg.ack_timeout_ns)
        return due

    def _expire(self, state: _DigestState, cfg: BatchConfig, now: int) -> None:
        if cfg.ack_timeout_ns == 0:
            state.sent.clear()
            state.cache.clear()
            return
        while state.sent:
            list_id, lst = next(iter(state.sent.items()))
            if now - lst.sent_at < cfg.ack_timeout_ns:
                break
            state.forget(list_id)

    def _flush(self, digest_id: int, state: _DigestState, cfg: BatchConfig, now: int) -> None:
        """Turn the buffer into lists while it is full or its oldest message has waited long enough."""
        while state.buffer:
            first = next(iter(state.buffer.values()))
            if len(state.buffer) < cfg.list_size and now - first < cfg.max_timeout_ns:
                return
            values = tuple(itertools.islice(state.buffer, cfg.list_size))
            for v in values:
                del state.buffer[v]
            list_id = next(self._list_ids)
            if cfg.ack_timeout_ns > 0:
                state.sent[list_id] = _SentList(now, values)
                for v in values:
                    state.cache[v] = list_id
            self._ready.append(DigestBatch(digest_id, list_id, self._wall_clock(), values))


def _earliest(a: int | None, b: int) -> int:
    return b if a is None else min(a, b)
