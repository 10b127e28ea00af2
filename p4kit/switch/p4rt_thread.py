"""The life of a P4Runtime service's background thread (digest lists, idle timeouts): started once,
stopped by close(), and never joined from itself."""

from __future__ import annotations

import threading


class ServiceThread:
    """Mixin: the subclass sets ``_lock``, ``_closed = False`` and ``_thread = None`` in its
    ``__init__`` and provides ``_run`` (which returns once ``_closed`` is set) and ``_wake_to_close``
    (called with ``_lock`` held, it interrupts whatever ``_run`` waits on)."""

    thread_name = "p4rt-service"
    _lock: threading.Lock
    _closed: bool
    _thread: threading.Thread | None

    def _run(self) -> None:
        raise NotImplementedError

    def _wake_to_close(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        """Start the background thread (idempotent; not after close)."""
        with self._lock:
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(target=self._run, daemon=True, name=self.thread_name)
            self._thread.start()

    def close(self, timeout: float = 2.0) -> None:
        """Stop the background thread and wait for it (at most `timeout` seconds)."""
        with self._lock:
            self._closed = True
            self._wake_to_close()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def running(self) -> bool:
        """Whether the background thread is alive."""
        thread = self._thread
        return thread is not None and thread.is_alive()
