"""One worker process of an experiment: `python -m edge.runner SPEC.json`.

The spec (JSON) says which algorithm to run (inc, ring, ps, hierarchical), on what data, with which peers or INC job
(an edge.spec.WorkerSpec under "worker"),
and when to start (a wall-clock time shared by all workers of the run, so they start together). The
runner writes its result vector (.npy) and a report (JSON: timing, transfer statistics, or the error).
Input data is generated from (seed, rank), so whoever checks the results can recompute every input.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import resource
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import numpy as np

from edge import heap, lowprec
from edge import inputs as user_inputs
from edge.hierarchical import HIER_PORT, HierarchicalComm
from edge.native import chunk_io
from edge.protocol import INC_LANES
from edge.ring import Peer, ps_allreduce, ring_allreduce
from edge.secure import HostAllreduce, PairwiseMasks, host_allreduce, publish_and_collect
from edge.spec import WorkerSpec
from edge.worker import IncJob, IncWorker

INT_RANGE = 1 << 24  # int32 inputs in [-2**24, 2**24): the sum of up to 128 workers fits in int32
DEFAULT_DENSITY = 0.01  # sparse mode: the fraction of 64-value blocks each worker holds
SPARSE_MODES = ("sparse", "sparse-float32")  # edge.sparse.MODES: block-sparse int32 and float32
# the heap faulted in before the timed call (edge/heap.py): 12 MiB for 262,144 elements. The three-site
# call then faulted in 6 pages a worker with int32 and 14 with float32 (its exponent agreement and its
# doubles need more: 783 with 24 bytes an element)
HEAP_BYTES_PER_ELEMENT = 48


def worker_data(
    seed: int,
    rank: int,
    elements: int,
    mode: str,
    density: float = DEFAULT_DENSITY,
    inputs: str | None = None,
) -> np.ndarray:
    """Worker `rank`'s input, recomputable by whoever checks the results: row `rank` of the run's staged
    copy of the user's file when `inputs` names one (edge/inputs.py), else generated. Sparse: int32 values in
    round(density x blocks) blocks of 64 (at least one) chosen at random, independently per worker (so the union of the
    supports is as large as chance makes it: the hard case for sparse aggregation), zero elsewhere.
    Sparse float32 ("sparse-float32"): the same choice of blocks, each chosen block normal values at a
    scale of its own, 2^-20 .. 2^20, so that the workers' blocks at one index differ in scale."""
    if inputs:
        return user_inputs.row(inputs, rank)
    rng = np.random.default_rng([seed, rank])
    if mode in SPARSE_MODES:
        blocks = -(-elements // 64)
        k = min(blocks, max(1, round(density * blocks))) if density > 0 else 0
        chosen = rng.choice(blocks, size=k, replace=False)
        if mode == "sparse-float32":
            rows_f = np.zeros((blocks, 64), dtype=np.float32)
            scales = np.ldexp(1.0, rng.integers(-20, 21, size=(k, 1)))
            rows_f[chosen] = rng.standard_normal((k, 64)) * scales
            return rows_f.reshape(-1)[:elements].copy()
        rows = np.zeros((blocks, 64), dtype=np.int32)
        rows[chosen] = rng.integers(-INT_RANGE, INT_RANGE, size=(k, 64), dtype=np.int32)
        return rows.reshape(-1)[:elements].copy()
    if mode == "int32":
        return rng.integers(-INT_RANGE, INT_RANGE, size=elements, dtype=np.int32)
    if mode == "float32":
        return rng.standard_normal(elements).astype(np.float32)
    if mode == "mxint8":  # every 32-element block at its own scale (2^-8 .. 2^8), different per worker
        scales = np.ldexp(1.0, rng.integers(-8, 9, size=-(-elements // 32)))
        return (rng.standard_normal(elements) * np.repeat(scales, 32)[:elements]).astype(np.float32)
    if mode in lowprec.BITS:  # the whole range: sums of a few workers overflow the narrow type
        lo, hi = lowprec.limits(lowprec.BITS[mode])
        return rng.integers(lo, hi + 1, size=elements, dtype=np.int8)
    raise ValueError(f"unknown mode {mode!r}")


def expected_sum(
    seed: int,
    ranks: list[int],
    elements: int,
    mode: str,
    density: float = DEFAULT_DENSITY,
    inputs: str | None = None,
) -> np.ndarray:
    """The exact sum (int64 for integer data, float64 for float32 data) of the given ranks' inputs."""
    acc = np.zeros(elements, dtype=np.int64 if mode in ("int32", "sparse", *lowprec.BITS) else np.float64)
    for r in ranks:
        acc += worker_data(seed, r, elements, mode, density, inputs)
    return acc


def collections() -> int:
    """Garbage collections of every generation this process has run so far (the report's
    gc_collections: what the cyclic collector did during the timed call)."""
    return sum(int(g["collections"]) for g in gc.get_stats())


def run(spec: dict, after_timed: Callable[[], None] | None = None) -> dict:
    """One runner's allreduce from its spec: set-up, the common start, the timed call, its report.
    `after_timed` runs as soon as the timed call is over (main: `step_aside`)."""
    density = float(spec.get("density", DEFAULT_DENSITY))
    data = worker_data(
        spec["seed"], spec["rank"], spec["elements"], spec["mode"], density, spec.get("inputs")
    )
    masks = None
    key_exchange_s = 0.0
    if spec.get("secure") and spec["mode"] in SPARSE_MODES:  # refused before anything starts
        raise ValueError("sparse mode cannot be --secure: the masks make every block dense")
    if spec.get("secure"):  # before the common start: the key agreement is setup, not allreduce time
        sec = spec["secure"]
        k0 = time.time()
        if "worker" in spec:
            worker_spec = WorkerSpec.model_validate(spec["worker"])
            tenant, epoch = worker_spec.tenant, worker_spec.epoch
        else:  # a host algorithm has no INC job: the orchestrator names the tenant and a fresh epoch
            tenant, epoch = int(sec["tenant"]), int(sec["epoch"])
        key, peers = publish_and_collect(Path(sec["board"]), spec["rank"], int(sec["workers"]))
        masks = PairwiseMasks(key, peers, spec["rank"], tenant, epoch)
        key_exchange_s = time.time() - k0
    algo = spec["algorithm"]
    if algo == "inc":
        # the worker's native I/O is compiled (once per machine, the first runner; the others wait for
        # its file) or loaded now, in the set-up, not inside the timed allreduce
        chunk_io()
    if algo != "inc" and data.dtype == np.int8 and masks is None:
        # a host sum of narrow integers is taken as wide as INC takes it (edge/lowprec.py), not wrapped
        data = data.astype(np.int32)
    stats: dict = {}
    comm = None
    if algo == "hierarchical":
        # connections opened and warmed by one untimed allreduce first, as a host library keeps them
        w0 = time.time()
        peers = [Peer(p["rank"], p["ip"]) for p in spec["peers"]]
        sites = [p["site"] for p in spec["peers"]]
        comm = HierarchicalComm(
            spec["rank"], peers, sites, int(spec.get("port", HIER_PORT)), float(spec.get("timeout_s", 300))
        )
        # masked, the values travel as uint32 lanes of whole rows: warm with what will travel
        warm = (
            np.zeros_like(data)
            if masks is None
            else np.zeros(-(-data.size // INC_LANES) * INC_LANES, np.uint32)
        )
        comm.allreduce(warm)
        stats["warmup_s"] = round(time.time() - w0, 4)
    # the heap the call will allocate from, kept and faulted in now, as a framework's persistent gradient
    # buffers are (edge/heap.py): every algorithm alike
    heap.warm_heap(HEAP_BYTES_PER_ELEMENT * data.size)
    # The collector stays as Python sets it: freezing the set-up's objects and collecting every 50,000
    # allocations instead of 700 (scripts/bench_worker.py --gc quiet) made the stream itself a third
    # cheaper per packet, but the workers' cpu_ms of the three-site allreduce did not measurably fall
    # (830 and 898 ms against 792 and 872 ms, interleaved runs of scripts/repair_ab.py), so it is not done
    return _timed(spec, algo, data, masks, density, key_exchange_s, stats, comm, after_timed)


def _cpu_split(before: resource.struct_rusage, after: resource.struct_rusage) -> dict[str, int]:
    """Where the timed part's CPU went: the worker's own code (user) or the kernel's (system: its sends
    and receives, and the switch's receive of what it sends, which runs in the sender's system call on
    a veth), and how often it slept (voluntary context switches: one per wait for a packet) or was
    put aside for another process (involuntary: the machine's cores were all busy). `cpu_ms` is both."""
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    return {
        "cpu_ms": round((user + system) * 1000),
        "cpu_user_ms": round(user * 1000),
        "cpu_sys_ms": round(system * 1000),
        "page_faults": after.ru_minflt - before.ru_minflt,
        "sleeps": after.ru_nvcsw - before.ru_nvcsw,
        "preempted": after.ru_nivcsw - before.ru_nivcsw,
    }


GO_POLL_S = 0.005  # how often a ready runner looks for the common start


def common_start(spec: dict) -> float:
    """When the timed part starts, as a Unix time. With "ready" and "go" paths in the spec (the
    orchestrator's barrier, topo/allreduce_run.py): say ready (the set-up is done), then wait for the
    go file, which holds the common start, a moment ahead of when the last runner said ready. Without
    them: the spec's "start_at". A start fixed in advance is a guess of how long the slowest runner's
    set-up takes, and on a loaded machine some runners then started late and apart."""
    if not spec.get("go"):
        return float(spec.get("start_at", 0))
    Path(spec["ready"]).write_text("ready\n")
    go = Path(spec["go"])
    deadline = time.monotonic() + float(spec.get("ready_timeout_s", 900))
    while True:
        try:
            return float(json.loads(go.read_text())["start_at"])
        except FileNotFoundError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"no common start in {go} after the set-up: the orchestrator is gone")
        time.sleep(GO_POLL_S)


def _timed(
    spec: dict,
    algo: str,
    data: np.ndarray,
    masks: PairwiseMasks | None,
    density: float,
    key_exchange_s: float,
    stats: dict,
    comm: HierarchicalComm | None,
    after_timed: Callable[[], None] | None = None,
) -> dict:
    """The allreduce itself, from the run's common start: its result, and the report."""
    start_at = common_start(spec)
    lag = time.time() - start_at
    if lag < 0:
        time.sleep(-lag)
    u0 = resource.getrusage(resource.RUSAGE_SELF)  # this process's CPU during the timed allreduce
    g0 = collections()
    t0 = time.time()
    if algo == "inc":
        job = IncJob.from_spec(WorkerSpec.model_validate(spec["worker"]))
        with IncWorker(job) as worker:
            result = worker.allreduce(
                data,
                spec["mode"],
                masks,
                density if spec["mode"] in SPARSE_MODES else None,
                values_per_packet=int(spec.get("values_per_packet", INC_LANES)),
            )
            stats = vars(worker.stats)
            if worker.sparse_report is not None:
                stats["sparse"] = worker.sparse_report
            if masks is not None:
                stats["key_exchange_s"] = round(key_exchange_s, 4)
    elif algo in ("ring", "ps", "hierarchical"):
        peers = [Peer(p["rank"], p["ip"]) for p in spec["peers"]]
        timeout = float(spec.get("timeout_s", 300))
        if comm is not None:
            with comm:
                result = _host_call(comm.allreduce, data, spec["mode"], len(peers), masks)
        else:
            fn = ring_allreduce if algo == "ring" else ps_allreduce
            # several host jobs on the same hosts: each its own ports
            ports = {"port": int(spec["port"])} if "port" in spec else {}

            def call(values: np.ndarray, op: str = "sum") -> np.ndarray:
                return fn(values, spec["rank"], peers, timeout_s=timeout, op=op, **ports)

            result = _host_call(call, data, spec["mode"], len(peers), masks)
        if masks is not None:
            stats["key_exchange_s"] = round(key_exchange_s, 4)
    else:
        raise ValueError(f"unknown algorithm {algo!r}")
    t1 = time.time()
    stats.update(_cpu_split(u0, resource.getrusage(resource.RUSAGE_SELF)))
    if after_timed is not None:
        after_timed()
    stats["gc_collections"] = collections() - g0
    np.save(spec["out"], result)
    return {
        "rank": spec["rank"],
        "start": t0,
        "end": t1,
        "seconds": t1 - t0,
        "late_start_s": max(lag, 0.0),
        "stats": stats,
    }


def _host_call(
    allreduce: HostAllreduce, data: np.ndarray, mode: str, workers: int, masks: PairwiseMasks | None
) -> np.ndarray:
    """A host algorithm's allreduce: plain (a sum in the data's own type), or under --secure masked in the
    INC path's number formats (edge.secure.host_allreduce), so no other host holds this worker's vector."""
    if masks is None:
        return allreduce(data, "sum")
    return host_allreduce(allreduce, data, mode, workers, masks)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m edge.runner SPEC.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(args[0]).read_text())
    report_path = Path(spec["report"])
    try:
        report = run(spec, after_timed=step_aside)
        code = 0
    except Exception as exc:  # the report carries the error to the orchestrator
        report = {
            "rank": spec.get("rank"),
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
        }
        code = 1
    report_path.write_text(json.dumps(report))
    return code


def step_aside() -> None:
    """Run what is left of this runner (saving its result, writing its report, leaving and unmapping its
    memory) behind every process that still works: the runners still in their timed part and the
    switches. Why: the first runners finish up to 0.2 s before the last on nine sites, and what they
    do then takes the two cores from those still running: writing the result took 12 ms a runner
    (cProfile of a nine-site run), and leaving, which unmaps the heap kept for the call
    (edge/heap.py), up to 23 ms (perf: `unmap_page_range`). At the lowest priority (nice 19) the
    scheduler gives them the cores only where nobody else wants them."""
    with contextlib.suppress(OSError):  # not permitted here: the work is the same, only not set aside
        os.nice(19)


def exit_now(code: int) -> NoReturn:
    """Leave without the interpreter's teardown, once the report is written and the output flushed.

    Why: tearing down a runner's modules (numpy, pydantic, the worker) costs about 35 ms of CPU, and
    the runners that finish first tear down while the last ones still run their timed part. At nine
    sites that was 18 x 35 ms, about 0.6 CPU-s of the two cores inside the INC's time, counted by no
    worker's `cpu_ms`. Nothing is left to do at exit: every file is closed, the sockets close with the
    process, and the threads (the ring's) are daemons."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
