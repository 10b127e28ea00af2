"""A runner's heap, kept between allocations and faulted in before the timed part.

Why: an allreduce of 262,144 int32 allocates about five arrays of its vector's size (the lanes, their
wire bytes, the result rows, and the conversions back), and glibc hands every allocation above its mmap
threshold out as fresh pages and gives them back on free. Each page then costs a page fault and a zeroed
page inside the timed call: about 1,250 a worker, and on nine sites (eighteen workers on two cores) a
profile of the run's timed second put 15 % of all the machine's CPU in the kernel's page faults (`perf
record -a -g`, docs/switch.md "Tail copies and page faults"). A loop of the same conversions faults the
same 1,248 pages on every call, not only the first (glibc's dynamic threshold moves them to the heap,
whose top it then trims): 3.7 ms of CPU a call, against 0.6 ms in a heap kept and faulted in. A training
framework does not pay it per step: its gradient buffers persist (DDP's buckets, a caching allocator).
`warm_heap` gives the runner's process that: freed memory stays in the heap (mmap threshold at its
maximum, 32 MiB, and no trimming) and `nbytes` of it are faulted in, in pieces below the threshold,
before the common start. Every algorithm's runner does it (INC, the host baselines and the MPI ranks),
and what the call still faults in is reported (`page_faults`, edge/runner.py).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

import numpy as np

# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_MAX = 32 << 20  # glibc's largest mmap threshold on 64-bit hosts (4 MiB x sizeof(long))
PIECE = 16 << 20  # each warm allocation stays below the threshold, so it comes from the heap
TRIM_NEVER = (1 << 31) - 1  # mallopt takes an int


def _mallopt() -> Callable[[int, int], int] | None:
    """glibc's mallopt, or None where the C library has none (musl, macOS)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        fn = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return None
    fn.argtypes, fn.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return fn


def warm_heap(nbytes: int) -> bool:
    """Keep freed memory in the heap and fault in `nbytes` of it now. False where the C library cannot be
    told (no glibc): then nothing changes and the call faults its pages in as before."""
    if nbytes < 0:
        raise ValueError(f"a heap of {nbytes} bytes")
    mallopt = _mallopt()
    if mallopt is None:
        return False
    if not (mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX) and mallopt(M_TRIM_THRESHOLD, TRIM_NEVER)):
        return False
    pieces = [np.ones(min(PIECE, nbytes - at), dtype=np.uint8) for at in range(0, nbytes, PIECE)]
    del pieces  # back to the heap's free memory, faulted in and kept (no trimming)
    return True
