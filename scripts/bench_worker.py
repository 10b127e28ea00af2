#!/usr/bin/env python3
"""CPU per packet of a worker's stream logic (edge.worker.ReduceStream), without sockets.

    scripts/bench_worker.py [--chunks N] [--repeat K] [--gc default|quiet] [--json]
    scripts/bench_worker.py --sockets [--chunks N] [--repeat K] [--json]

A worker's CPU is part of every allreduce's CPU floor (topo/shortfall.py): the switches and the workers
share the machine's cores. This drives one stream of N chunks against an echoing switch in virtual time
(each contribution comes back as its result one 160 ms RTT later, paced at 50 Mbit/s as a job on the
3-site tree is) and counts only the process time spent in `pump` and `receive`, so that the figure is
the stream's own: building the results stands in for the switch and is not counted. The system calls
of the real worker (sendto, recvfrom_into, select) come on top. Prints the best and the median of K
repetitions, in microseconds per packet sent or received. `--gc quiet` runs each stream with the set-up's
objects frozen (gc.freeze) and young collections every 50,000 allocations instead of 700, to see what
the cyclic collector costs the stream; the collections each stream ran are reported beside.

`--sockets` measures the whole worker instead, system calls included: IncWorker.allreduce over
loopback UDP against an echoing switch in a child process (which holds each contribution one 160 ms
RTT and sends it back as its result, with no loss), once with the Python I/O and once with the
native one (edge/native/chunkio.c), and reports the worker process's user and system CPU
(getrusage) per packet sent or received. The echo runs on the other core, so the worker's CPU is its
own; at 50 Mbit/s a stream of 4,096 chunks takes about 0.37 s, and the pace, not the CPU, sets it.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import os
import resource
import socket
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from edge.native import ENV_IO
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
from edge.worker import IncJob, IncWorker, PathTiming, ReduceStream, TransferStats

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


ECHO_IP, WORKER_IP = "127.0.0.9", "127.0.0.8"


def _echo(ready: multiprocessing.synchronize.Event, stop: multiprocessing.synchronize.Event) -> None:
    """The switch of a one-worker job: every contribution back as its result, one RTT later."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind((ECHO_IP, INC_UDP_PORT))
    sock.settimeout(0.002)
    ready.set()
    held: list[tuple[float, bytes, tuple[str, int]]] = []
    while not stop.is_set():
        try:
            packet, worker = sock.recvfrom(2048)
            flags = packet[2] | F_RESULT
            held.append((time.monotonic() + RTT_S, packet[:2] + bytes([flags]) + packet[3:], worker))
        except TimeoutError:
            pass
        now, k = time.monotonic(), 0
        while k < len(held) and held[k][0] <= now:
            sock.sendto(held[k][1], held[k][2])
            k += 1
        del held[:k]


def socket_run(chunks: int, io: str, values_per_packet: int = INC_LANES) -> dict[str, float]:
    """One allreduce of `chunks` chunks over loopback with the `io` path ("python" or "native"): the
    worker's user and system CPU in microseconds per packet sent or received, and its seconds."""
    os.environ[ENV_IO] = io
    job = IncJob(
        tenant=5, switch_ip=ECHO_IP, bind_ip=WORKER_IP, nslots=4096, workers=1, epoch=9,
        path_rtt_s=RTT_S, rate_bps=50e6, rto_s=1.0,
    )  # fmt: skip
    values = np.arange(chunks * INC_LANES, dtype=np.int64) % 1000
    with IncWorker(job) as worker:
        if not worker.connected:
            raise SystemExit("the worker's socket could not be connected to the echo on loopback")
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
        out = worker.allreduce(values, "int32", values_per_packet=values_per_packet)
        r1, seconds = resource.getrusage(resource.RUSAGE_SELF), time.monotonic() - t0
    if not np.array_equal(out, values):
        raise SystemExit(f"the {io} path returned a wrong result")
    if (worker.stats.native_calls > 0) != (io == "native"):
        raise SystemExit(f"the {io} path was asked for, but native_calls = {worker.stats.native_calls}")
    packets = worker.stats.packets_sent + worker.stats.results
    return {
        "user_us": round(1e6 * (r1.ru_utime - r0.ru_utime) / packets, 3),
        "system_us": round(1e6 * (r1.ru_stime - r0.ru_stime) / packets, 3),
        "seconds": round(seconds, 3),
        "packets": packets,
    }


def sockets_main(chunks: int, repeat: int, as_json: bool, values_per_packet: int = INC_LANES) -> int:
    ctx = multiprocessing.get_context("fork")
    ready, stop = ctx.Event(), ctx.Event()
    echo = ctx.Process(target=_echo, args=(ready, stop), daemon=True)
    echo.start()
    try:
        if not ready.wait(10):
            raise SystemExit("the echo did not start")
        runs: dict[str, list[dict[str, float]]] = {"python": [], "native": []}
        for i in range(repeat):
            for io in runs:
                # the echo still holds the last call's tail copies for an RTT: a new worker of the same
                # job (its chunk numbers start again at 0) would take their results as its own
                time.sleep(2 * RTT_S)
                r = socket_run(chunks, io, values_per_packet)
                runs[io].append(r)
                if not as_json:
                    print(
                        f"run {i + 1}/{repeat} {io}: user {r['user_us']:.2f} + system {r['system_us']:.2f} "
                        f"us per packet, {r['seconds']:.3f} s",
                        file=sys.stderr,
                    )
    finally:
        stop.set()
        echo.join(5)
    out: dict[str, object] = {
        "chunks": chunks, "sockets": True, "rtt_s": RTT_S, "rate_mbit": 50, "values_per_packet": values_per_packet,
    }  # fmt: skip
    for io, rs in runs.items():
        out[io] = {
            "user_us_median": statistics.median(r["user_us"] for r in rs),
            "system_us_median": statistics.median(r["system_us"] for r in rs),
            "seconds_median": statistics.median(r["seconds"] for r in rs),
            "runs": rs,
        }
    print(json.dumps(out) if as_json else json.dumps(out, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=4096, help="chunks of 64 int32 per stream (default 4096)")
    ap.add_argument("--repeat", type=int, default=5, help="repetitions (default 5)")
    ap.add_argument(
        "--gc", choices=("default", "quiet"), default="default",
        help="the cyclic collector as Python sets it, or as edge.runner sets it for the timed call",
    )  # fmt: skip
    ap.add_argument(
        "--sockets", action="store_true",
        help="the whole worker over loopback sockets, Python I/O against native I/O (system calls included)",
    )  # fmt: skip
    ap.add_argument(
        "--values-per-packet", type=int, choices=(64, 256), default=64,
        help="with --sockets: int32 sums 64 to a packet, or 256 (wide32; docs/protocol.md) (default 64)",
    )  # fmt: skip
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    args = ap.parse_args(argv)
    if args.chunks < 1 or args.repeat < 1:
        ap.error("--chunks and --repeat must be positive")
    if args.sockets:
        return sockets_main(args.chunks, args.repeat, args.json, args.values_per_packet)
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
