"""Ranks of a collective run as threads in lockstep, for tests that drive several workers in one process."""

from __future__ import annotations

import threading
from collections.abc import Callable


def run_ranks(n: int, fn: Callable[[int], object], barrier: threading.Barrier) -> list:
    """`fn(rank)` for ranks 0..n-1 at once, one thread each, and their results in rank order. The ranks
    meet at `barrier`; the first failure aborts it, so that the others stop waiting instead of hanging,
    and is re-raised here."""
    out: list[object] = [None] * n
    errors: list[BaseException] = []

    def one(rank: int) -> None:
        try:
            out[rank] = fn(rank)
        except BaseException as exc:  # handed to the caller's thread
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=one, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out
