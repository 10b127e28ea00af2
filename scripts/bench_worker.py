#!/usr/bin/env python3
"""CPU per packet of a worker's stream logic (edge.worker.ReduceStream), without sockets.

    scripts/bench_worker.py [--chunks N] [--repeat K] [--gc default|quiet] [--json]

A worker's CPU is part of every allreduce's CPU floor (topo/shortfall.py): the switches and the workers
share the machine's cores. This drives one stream of N chunks against an echoing switch in virtual time
(each contribution comes back as its result one 160 ms RTT later, paced at 50 Mbit/s as a job on the
3-site tree is) and counts only the process time spent in `pump` and `receive`, so that the figure is
the stream's own: building the results stands in for the switch and is not counted. The system calls
of the real worker (sendto, recvfrom_into, select) come on top. Prints the best and the median of K
repetitions, in microseconds per packet sent or received. `--gc quiet` runs each stream with the set-up's
objects frozen (gc.freeze) and young collections every 50,000 allocations instead of 700, to see what
the cyclic collector costs the stream; the collections each stream ran are reported beside.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from edge.protocol import (
    F_RESULT,
    F_VERSION,
    INC_LANES,
    INC_UDP_PORT,
    KIND_SUM,
    IncHeader,
    decode,
    encode,
)
from edge.runner import collections
from edge.worker import IncJob, PathTiming, ReduceStream, TransferStats

SWITCH = ("10.0.1.254", INC_UDP_PORT)
RTT_S = 0.16
STEP_S = 0.001


def _result_of(packet: bytes) -> bytes:
    header, values = decode(packet)
    reply = IncHeader(
        header.tenant,
        header.round,
        header.slot,
        header.chunk,
        kind=header.kind,
        flags=(header.flags & F_VERSION) | F_RESULT,
        epoch=header.epoch,
        format=header.format,
        count=1,
    )
    return encode(reply, values)


@contextmanager
def collector_quiet() -> Iterator[None]:
    """The cyclic collector out of the stream's way: what exists is frozen, young collections rare."""
    gc.freeze()
    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], 50_000), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def one_run(chunks: int) -> float:
    """Microseconds of process time per packet sent or received by one stream of `chunks` chunks."""
    return stream_run(chunks)[0]


def stream_run(chunks: int) -> tuple[float, int]:
    """One stream of `chunks` chunks: microseconds of process time per packet sent or received, and the
    garbage collections that ran meanwhile."""
    g0 = collections()
    job = IncJob(
        tenant=3, switch_ip=SWITCH[0], nslots=4096, workers=1, epoch=9, path_rtt_s=RTT_S, rate_bps=50e6
    )
    lanes = np.arange(chunks * INC_LANES, dtype=np.uint32).reshape(chunks, INC_LANES)
    sent: list[bytes] = []
    stream = ReduceStream(
        job,
        lanes,
        KIND_SUM,
        0,
        PathTiming.for_job(job),
        TransferStats(),
        lambda p: sent.append(p) or True,
        0.0,
    )
    now, pending, cpu = 0.0, [], 0.0
    while not stream.finished:
        c0 = time.process_time()
        stream.pump(now)
        cpu += time.process_time() - c0
        pending += [(now + RTT_S, _result_of(p)) for p in sent]
        sent.clear()
        due = [r for t, r in pending if t <= now]
        pending = [(t, r) for t, r in pending if t > now]
        c0 = time.process_time()
        for r in due:
            stream.receive(r, SWITCH, now)
        cpu += time.process_time() - c0
        now += STEP_S
    packets = stream.stats.packets_sent + stream.stats.results
    return 1e6 * cpu / packets, collections() - g0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=4096, help="chunks of 64 int32 per stream (default 4096)")
    ap.add_argument("--repeat", type=int, default=5, help="repetitions (default 5)")
    ap.add_argument(
        "--gc", choices=("default", "quiet"), default="default",
        help="the cyclic collector as Python sets it, or as edge.runner sets it for the timed call",
    )  # fmt: skip
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    args = ap.parse_args(argv)
    if args.chunks < 1 or args.repeat < 1:
        ap.error("--chunks and --repeat must be positive")
    runs, collected = [], []
    for i in range(args.repeat):
        if args.gc == "quiet":
            with collector_quiet():
                us, n = stream_run(args.chunks)
        else:
            us, n = stream_run(args.chunks)
        runs.append(us)
        collected.append(n)
        if not args.json:
            print(f"run {i + 1}/{args.repeat}: {us:.2f} us per packet, {n} collections", file=sys.stderr)
    out = {
        "chunks": args.chunks,
        "gc": args.gc,
        "us_per_packet_best": round(min(runs), 3),
        "us_per_packet_median": round(statistics.median(runs), 3),
        "runs": [round(r, 3) for r in runs],
        "gc_collections": collected,
    }
    print(json.dumps(out) if args.json else json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
