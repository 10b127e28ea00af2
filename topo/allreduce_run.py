"""Running an allreduce on the emulated WAN, through the switches (INC) and with host baselines, and
checking every worker's result against the exact sum of all inputs."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from controller.inc.allocation import INC_CELLS, AllocationError, Allocator
from controller.inc.install import JobInstaller
from controller.inc.jobs import (
    HOST_ALGORITHM,
    HOST_PATH,
    SWITCH_PATH,
    Admission,
    JobPlan,
    admit,
    host_peers,
    host_port_base,
    plan_job,
    share_links,
)
from controller.p4rt import P4InfoIndex
from edge import formats
from edge.protocol import FMT_WIDE32, FRAME_LEN, GROUPS, INC_LANES, WIDE_FRAME_LEN, WIDE_WORDS
from edge.runner import SPARSE_MODES, expected_sum, worker_data
from edge.sparse import float_error_bound
from topo import bounds, linkbytes, sparse_report, switch_counters
from topo.session import RunningWan
from topo.shortfall import against_bound
from topo.wan import Wan

PACKED_MODES = ("int8", "int4")  # integer modes packed on the host link (edge/lowprec.py)
NEEDS_SLOTS_OF_8 = (*PACKED_MODES, "mxint8")  # modes whose packets carry 4 or 8 chunks
INTEGER_MODES = ("int32", "sparse", *PACKED_MODES)  # exact integer sums
DENSE_OF = {"sparse": "int32", "sparse-float32": "float32"}  # what a sparse mode's dense fallback runs
START_DELAY_S = 3.0  # time for every worker process to start before the common start time
READY_TIMEOUT_S = 600.0  # the most the runners' set-up may take before the start is given anyway
GO_MARGIN_S = 0.25  # the common start, after the last runner said it was ready (they look every 5 ms)


# The workers' packets a second (sent and received, all of them together) above which `auto` sends int32 and
# float32 sums in wide packets. Every Python process of a run shares the machine's two cores (DESIGN §6),
# and the switches handle each worker packet again. Measured on this project's machines (docs/switch.md,
# "Wide packets"): three sites' six workers at 50 Mbit/s move 233,000 packets a second at 64 values,
# and the run's CPU floor was 0.9-1.3x its bound, so the CPU set the pace; at 256 values (58,000) it was
# 0.85-0.95x.
PACKET_BUDGET_PPS = 100_000


def auto_values_per_packet(mode: str, secure: bool, workers: int, wan: Wan, elements: int) -> int:
    """64 or 256 values to a packet for a run of `workers` workers on `wan`: 256 (a quarter of the packets)
    where 64-value packets at the pace the links allow would exceed PACKET_BUDGET_PPS, so that the
    machine's CPU, not the network, would set the run's time, and where the wide frames carry the vector
    in no more bytes (a short vector's last wide frame is mostly padding); 64 elsewhere. Only int32 and
    float32 sums travel wide, and never masked ones (the masks cancel in 64-lane rows)."""
    chunks = -(-elements // INC_LANES)
    wide_bytes = -(-chunks // GROUPS[FMT_WIDE32]) * WIDE_FRAME_LEN
    if mode not in formats.WIDE_MODES or secure or wide_bytes > chunks * FRAME_LEN:
        return INC_LANES
    rate_mbit = max(link.rate_mbit for link in wan.links) if wan.links else 0.0
    if wan.access_rate_mbit:
        rate_mbit = min(rate_mbit, wan.access_rate_mbit) if rate_mbit else wan.access_rate_mbit
    per_worker = rate_mbit * 1e6 / (8.0 * FRAME_LEN)  # one worker's packets a second each way at that pace
    return WIDE_WORDS if 2 * workers * per_worker > PACKET_BUDGET_PPS else INC_LANES


@dataclass
class AllreduceSpec:
    elements: int
    mode: str = "int32"
    tenants: int = 1
    nslots: int = 0  # slots per tenant and switch; 0: as many as the vector needs, sharing the pool

    def slots(self) -> int:
        """The window a tenant asks for: with 0, one slot per chunk, so no chunk waits for a slot (a lost
        chunk holding its slot would stall the one after it), up to a switch's whole pool. Tenants are
        admitted one after another (controller.inc.jobs.admit): the later ones get fewer slots, or the
        host path, when the earlier ones hold the cells."""
        if self.nslots:
            return self.nslots
        chunks = -(-self.elements // INC_LANES)
        pool = INC_CELLS // 2
        if self.mode in NEEDS_SLOTS_OF_8:  # packed packets need slots in multiples of 8 (int4)
            return min(-(-chunks // 8) * 8, pool)
        if self.values_per_packet != INC_LANES:  # wide packets: slots in multiples of 4
            return min(-(-chunks // 4) * 4, pool)
        return max(1, min(chunks, pool))

    seed: int = 1
    stall_timeout_s: float = 30.0
    secure: bool = False  # pairwise additive masks (edge/secure.py): the switches see only masked sums
    mpi_mca: dict[str, str] = field(default_factory=dict)  # extra OpenMPI MCA parameters for the mpi baseline
    # admission of each tenant (controller.inc.jobs.admit): the least window it accepts (0: a quarter of
    # what it asks for) and, below that, "host" (the hierarchical host allreduce) or "none" (refused)
    min_slots: int = 0
    fallback: str = "host"
    density: float = 0.01  # sparse mode: the fraction of blocks each worker holds (edge/sparse.py)
    inputs: str = ""  # the run's staged copy of the user's vectors (edge/inputs.py); "": generated ones
    # int32 and float32 sums: 64 values to a packet, or 256 (wide32 frames, a quarter of the packets)
    values_per_packet: int = INC_LANES


@dataclass
class AlgoResult:
    name: str
    seconds: float
    elements: int
    exact: bool
    max_abs_error: float
    bound: float = 0.0
    errors: list[str] = field(default_factory=list)
    stats: dict[str, float] = field(default_factory=dict)
    bound_s: float = 0.0  # the algorithm's lower bound on this WAN (topo.bounds)
    digests: list[str] = field(default_factory=list)  # sha256 of each worker's result, in rank order
    # what else a baseline reports (mpi: the algorithm the library ran)
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def goodput(self) -> float:
        return self.elements / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> dict[str, object]:
        out: dict[str, object] = {
            "seconds": round(self.seconds, 4),
            "goodput_elems_per_s": round(self.goodput, 1),
            "exact": self.exact,
            "max_abs_error": self.max_abs_error,
        }
        if self.bound_s:
            out["bound_s"] = round(self.bound_s, 4)
            out["times_bound"] = round(self.seconds / self.bound_s, 2)
        if self.bound:
            out["error_bound"] = self.bound
        if self.stats:
            out["stats"] = self.stats
        if self.errors:
            out["errors"] = self.errors
        out.update(self.extra)
        return out


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds a process has used so far (all its threads), from /proc/PID/stat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def machine_busy_s() -> float:
    """CPU seconds this machine's cores have been busy so far, all processes (anyone's), from /proc/stat."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    ticks = [int(f) for f in fields[:8]]  # user nice system idle iowait irq softirq steal
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def switch_cpu_s(running: RunningWan) -> dict[str, float]:
    """CPU seconds used so far by each site's switch process."""
    net = running.network.net
    out: dict[str, float] = {}
    for sw in net.switches if net is not None else []:
        proc = getattr(sw, "proc", None)
        if proc is not None:
            out[sw.name] = process_cpu_s(proc.pid)
    return out


class CpuSampler:
    """Samples the switches' and the machine's CPU seconds every `period_s` in a thread, so that the CPU
    of a timed span (known only once the workers report) can be read afterwards."""

    def __init__(self, running: RunningWan, period_s: float = 0.1) -> None:
        self.running, self.period_s = running, period_s
        self.samples: list[tuple[float, float, dict[str, float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        self.samples.append((time.time(), machine_busy_s(), switch_cpu_s(self.running)))

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            self._sample()

    def __enter__(self) -> CpuSampler:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def over(self, start: float, end: float) -> tuple[dict[str, float], float]:
        """Each switch's CPU seconds and the machine's busy cores from the last sample before `start`
        to the first after `end` (the whole sampling when the span is empty)."""
        before = [x for x in self.samples if x[0] <= start] or self.samples[:1]
        after = [x for x in self.samples if x[0] >= end] or self.samples[-1:]
        (t0, b0, s0), (t1, b1, s1) = before[-1], after[0]
        if end <= start:
            (t0, b0, s0), (t1, b1, s1) = self.samples[0], self.samples[-1]
        switches = {k: round(v - s0.get(k, 0.0), 3) for k, v in s1.items()}
        return switches, round((b1 - b0) / max(1e-9, t1 - t0), 2)


def worker_hosts(running: RunningWan) -> list[str]:
    return [h.name for sw in running.network.fabric.switches for h in sw.hosts if h.role == "worker"]


def _finite(x: np.ndarray) -> np.ndarray:
    """Specials out, as the float32 mode takes them out before its exponent agreement (edge/formats.py)."""
    return np.where(np.isfinite(x), x, np.float32(0))


def _worst(bound_vec: np.ndarray, special: np.ndarray) -> float:
    """The largest error bound over the elements whose sum is a finite float32."""
    return float(bound_vec[~special].max(initial=0.0))


def _check(
    name: str,
    spec: AllreduceSpec,
    seed: int,
    ranks: list[int],
    reports: list[dict],
    outs: list[Path],
    workers: int,
    quantised: bool,
) -> AlgoResult:
    """Check every output against the exact sum. int32 must match bit for bit; float32 through the
    switches (`quantised`) must stay within the fixed-point bound, float32 summed by hosts within
    float32 rounding."""
    errors = [f"rank {r['rank']}: {r['error']}" for r in reports if "error" in r]
    ok_reports = [r for r in reports if "error" not in r]
    seconds = (max(r["end"] for r in ok_reports) - min(r["start"] for r in ok_reports)) if ok_reports else 0.0
    given = spec.inputs or None
    with np.errstate(invalid="ignore", over="ignore"):  # inf + -inf is NaN, as in float32 addition
        exact_sum = expected_sum(seed, ranks, spec.elements, spec.mode, spec.density, given)
    # where IEEE float32 addition gives NaN or an infinity (a NaN or inf among the inputs, or a finite sum
    # beyond float32's range) the result must be that very value; the error bound covers the rest
    special = ~np.isfinite(exact_sum) | (np.abs(exact_sum) > formats.FLOAT32_MAX)
    bound = 0.0
    if spec.mode == "float32" and quantised:
        blocks = [
            formats.pad_to_lanes(_finite(worker_data(seed, r, spec.elements, spec.mode, inputs=given)))
            for r in ranks
        ]
        agreed = np.max([formats.block_exponents(b) for b in blocks], axis=0)
        per_block = formats.quantisation_bound(formats.scale_exponents(agreed, workers), workers)
        quantisation = np.repeat(per_block, INC_LANES)[: spec.elements]
        # the fixed-point sum is within `quantisation` of the exact sum; handing it back as float32
        # rounds once more, by at most half a unit in the last place (2**-24 relative)
        bound_vec = quantisation + (np.abs(exact_sum) + quantisation) * 2.0**-24
        bound = _worst(bound_vec, special)
    if spec.mode == "sparse-float32" and quantised:  # the union's blocks, each its holders' headroom
        inputs = [worker_data(seed, r, spec.elements, spec.mode, spec.density, given) for r in ranks]
        bound_vec = float_error_bound(inputs, spec.density)
        bound = _worst(bound_vec, special)
    if spec.mode == "mxint8" and quantised:  # n units of each block's agreed scale (edge/mx.py)
        from edge import mx

        agreed_e = mx.agreed_scales(
            [worker_data(seed, r, spec.elements, spec.mode, inputs=given) for r in ranks]
        )
        quantisation = np.repeat(mx.error_bound(agreed_e, workers), mx.BLOCK)[: spec.elements]
        bound_vec = quantisation + np.abs(exact_sum) * 2.0**-24 + 2.0**-150  # and float32's own rounding
        bound = _worst(bound_vec, special)
    max_err = 0.0
    exact = not errors
    digests = []
    for path in outs:
        if not path.exists():
            exact = False
            continue
        got = np.load(path)
        digests.append(hashlib.sha256(got.tobytes()).hexdigest())
        if spec.mode in INTEGER_MODES:
            want = exact_sum.astype(np.int64).astype(np.int32)
            diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
            max_err = max(max_err, float(diff.max()))
            exact = exact and bool(np.array_equal(got, want))
        elif quantised:
            # fixed point or MX: NaN and infinities as IEEE addition makes them, every other element
            # within its bound, and at float32's overflow threshold either side of it
            # (edge.formats.quantised_float_ok)
            exact = exact and bool(np.all(formats.quantised_float_ok(got, exact_sum, bound_vec)))
            both = ~special & np.isfinite(got)  # the elements `bound` covers (_worst)
            diff = np.abs(got[both].astype(np.float64) - exact_sum[both])
            max_err = max(max_err, float(diff.max()) if diff.size else 0.0)
        else:  # a host float32 sum is not exact: judged by float32 rounding, its specials as IEEE's
            if special.any():
                with np.errstate(over="ignore"):
                    want_f = exact_sum[special].astype(np.float32)
                exact = exact and bool(np.array_equal(got[special], want_f, equal_nan=True))
            fin = ~special
            diff = np.abs(got[fin].astype(np.float64) - exact_sum[fin])
            max_err = max(max_err, float(diff.max()) if diff.size else 0.0)
            finite = bool(np.all(np.isfinite(got[fin])))
            exact = exact and finite and bool(np.allclose(got[fin], exact_sum[fin], rtol=1e-4, atol=1e-4))
    stats: dict[str, float] = {}
    for r in ok_reports:
        for k, v in r.get("stats", {}).items():
            if k == "sparse":  # reported apart, below
                continue
            if k in (
                "srtt_ms",
                "base_rtt_ms",
                "window",
                "all_sent_s",
                "key_exchange_s",
                "warmup_s",
            ):  # per worker: the worst
                stats[f"max_{k}"] = max(stats.get(f"max_{k}", 0), v)
            elif k == "min_pace_mbit":  # per worker: the lowest pace any worker fell to
                stats[k] = min(stats.get(k, v), v)
            elif isinstance(v, int):
                stats[k] = stats.get(k, 0) + v
    if ok_reports:  # whether the runners began together (edge.runner.common_start)
        starts = [r["start"] for r in ok_reports]
        stats["start_spread_ms"] = round(1000 * (max(starts) - min(starts)), 1)
        stats["max_late_start_ms"] = round(
            1000 * max(float(r.get("late_start_s", 0.0)) for r in ok_reports), 1
        )
    result = AlgoResult(name, seconds, spec.elements, exact, max_err, bound, errors, stats, digests=digests)
    sparse = [r["stats"]["sparse"] for r in ok_reports if "sparse" in r.get("stats", {})]
    if sparse:  # what the sparse calls did (the same union and path at every worker)
        result.extra["sparse"] = {
            "path": sparse[0]["path"],
            "reason": sparse[0]["reason"],
            "density": spec.density,
            "blocks": sparse[0]["blocks"],
            "union_density": sparse[0]["union_density"],
            "own_density": [x["own_density"] for x in sparse],
        }
    return result


@dataclass
class TenantRun:
    """One tenant of a run as admission placed it: on the switches (`plan`) or the host path (`port`:
    its hierarchical allreduce's TCP ports, base + rank), or refused."""

    tenant: int
    admission: Admission[JobPlan]
    port: int = 0

    @property
    def path(self) -> str:
        return self.admission.path


def admit_tenants(
    running: RunningWan, allocator: Allocator, installer: JobInstaller, spec: AllreduceSpec, hosts: list[str],
    progress: Callable[[str], None],
) -> list[TenantRun]:  # fmt: skip
    """Admit the tenants one after another through the service's admission rule (controller.inc.jobs.admit):
    each asks for `spec.slots()`, gets fewer where the earlier tenants hold the cells, and below its
    minimum the host path (or is refused, fallback "none"); a switch-path tenant is installed at once."""
    fabric = running.network.fabric
    runs: list[TenantRun] = []
    ports: list[tuple[int, int]] = []
    for t in range(1, spec.tenants + 1):
        try:
            adm = admit(
                lambda slots, t=t: plan_job(fabric, allocator, t, [[hosts]], slots),
                spec.slots(),
                spec.min_slots or None,
                spec.fallback,
            )
        except AllocationError as exc:
            adm = Admission("refused", spec.slots(), 0, spec.min_slots, f"refused: {exc}")
        run = TenantRun(t, adm)
        runs.append(run)
        if adm.plan is not None:
            try:
                installer.install(adm.plan)
            except BaseException:
                for owner in adm.plan.owner_keys:
                    allocator.release(owner)
                raise
            tree = adm.plan.trees[0][0]
            progress(
                f"tenant {t}: tree rooted at {tree.root} (slowest path {tree.max_rtt_ms:g} ms), "
                f"{adm.granted_slots} of {adm.requested_slots} slots"
            )
        elif adm.path == HOST_PATH:
            run.port = host_port_base(ports, len(hosts))
            ports.append((run.port, len(hosts)))
            progress(f"tenant {t}: host path ({HOST_ALGORITHM}): {adm.reason}")
        else:
            progress(f"tenant {t}: {adm.reason}")
    return runs


def run_inc(
    running: RunningWan,
    spec: AllreduceSpec,
    progress: Callable[[str], None],
    dead_workers: tuple[str, ...] = (),
    on_installed: Callable[[list[JobPlan]], object] | None = None,
) -> list[AlgoResult]:
    """Admit one job per tenant over all workers (admit_tenants), run them all at once, each on its path
    (the switches, or the hierarchical host allreduce on the same workers), check, and remove the jobs.

    Workers named in `dead_workers` are killed just before the run starts (a crashed peer): the others
    must then fail with a clear timeout rather than hang. `on_installed(plans)` runs once the jobs are
    installed and before the workers start (an experiment's hook: start a traffic source, an attacker)."""
    fabric = running.network.fabric
    index = P4InfoIndex(running.pipeline.p4info)
    allocator = Allocator([s.name for s in fabric.switches])
    installer = JobInstaller(running.conns, index, progress, running.zeroed)
    hosts = worker_hosts(running)
    runs: list[TenantRun] = []
    try:
        runs = admit_tenants(running, allocator, installer, spec, hosts, progress)
        plans = [r.admission.plan for r in runs if r.admission.plan is not None]
        # the tenants start together: each paces from its fair share of the links it shares with the
        # others (controller.inc.jobs.fair_shares), not from the whole link each
        share_links(fabric, plans)
        if on_installed is not None:
            on_installed(plans)
        out_dir = running.run_dir / "allreduce" / "inc"
        out_dir.mkdir(parents=True, exist_ok=True)
        for board in out_dir.glob("keys-t*"):  # public keys of an earlier run in this folder
            shutil.rmtree(board)
        peers = [{k: v for k, v in p.items() if k != "host"} for p in host_peers(fabric, hosts)]
        running_tenants = [r for r in runs if r.path in (SWITCH_PATH, HOST_PATH)]
        # more processes take longer to start (and a host-path tenant's warm-up allreduce runs first)
        start_at = time.time() + START_DELAY_S + 0.1 * len(hosts) * max(0, len(running_tenants) - 1)
        all_specs: dict[str, dict] = {}
        per_tenant: dict[int, tuple[list[int], list[Path]]] = {}
        for run in running_tenants:
            t = run.tenant
            outs = []
            # one board and epoch for all of a host-path tenant's workers
            on_host_path = spec.secure and run.admission.plan is None
            host_secure = secure_host_spec(out_dir / f"keys-t{t}", len(hosts), t) if on_host_path else None
            for rank, host in enumerate(hosts):
                out = out_dir / f"t{t}-rank{rank}.npy"
                outs.append(out)
                one = {
                    "mode": spec.mode,
                    "density": spec.density,
                    "values_per_packet": spec.values_per_packet,
                    "elements": spec.elements,
                    "seed": spec.seed + t,
                    "inputs": spec.inputs or None,
                    "rank": rank,
                    "start_at": start_at,
                    "out": str(out),
                    "report": str(out_dir / f"t{t}-rank{rank}.report.json"),
                }
                if run.admission.plan is not None:
                    one["algorithm"] = "inc"
                    one["worker"] = run.admission.plan.worker_spec(host, spec.stall_timeout_s).model_dump()
                    if spec.secure:
                        one["secure"] = {"board": str(out_dir / f"keys-t{t}"), "workers": len(hosts)}
                else:  # the host path: masked the same way under --secure (edge.secure.host_allreduce)
                    one.update(algorithm=HOST_ALGORITHM, peers=peers, port=run.port, timeout_s=600)
                    if host_secure is not None:
                        one["secure"] = host_secure
                all_specs[f"{host}#{t}"] = one
            per_tenant[t] = (list(range(len(hosts))), outs)
        on_host = sum(r.path == HOST_PATH for r in runs)
        progress(
            f"INC allreduce: {len(hosts)} workers x {spec.tenants} tenant(s) ({len(plans)} on the switches, "
            f"{on_host} on the host path), {spec.elements} {spec.mode} each"
            + (", 256 values to a packet (wide frames)" if spec.values_per_packet == WIDE_WORDS else "")
        )
        counted = sparse_report.snapshot(running) if spec.mode in SPARSE_MODES else None
        verdicts = switch_counters.snapshot(running)
        with CpuSampler(running) as sampler:
            before = linkbytes.snapshot(fabric)
            timeout = spec.stall_timeout_s * 4 + START_DELAY_S + 60 + (600 if on_host else 0)
            reports = _launch_multi(running, all_specs, timeout, kill_at_start=dead_workers)
            moved = linkbytes.since(fabric, before)  # every tenant's, from the switches' interfaces
        levels = sparse_report.snapshot(running) if counted is not None else None
        verdicts = switch_counters.since(verdicts, switch_counters.snapshot(running))
        ok = [r for r in reports.values() if "error" not in r]
        union = _union_blocks(reports) if spec.mode in SPARSE_MODES else None
        # a sparse run that went dense ran its dense mode, and is bounded as that
        bound_mode = spec.mode if union is not None or spec.mode not in SPARSE_MODES else DENSE_OF[spec.mode]
        span = (min(r["start"] for r in ok), max(r["end"] for r in ok)) if ok else (0.0, 0.0)
        # the switches' and the whole machine's CPU over the timed span (sampled every 0.1 s), beside the
        # workers' own (stats.cpu_ms)
        switch_cpu, busy_cores = sampler.over(*span)
        # the sums went wide only where a tenant's slots allowed four chunks to a packet (IncWorker.allreduce)
        wide_ok = all(p.nslots % GROUPS[FMT_WIDE32] == 0 for p in plans)
        values_per_packet = spec.values_per_packet if wide_ok else INC_LANES
        bound = (
            bounds.inc_bound_s(
                running.network.wan,
                [p.trees[0][0] for p in plans],
                spec.elements,
                bound_mode,
                len(plans),
                union,
                values_per_packet,
            )
            if plans
            else 0.0
        )
        results = []
        for run in runs:
            t, adm = run.tenant, run.admission
            if run.path not in (SWITCH_PATH, HOST_PATH):
                res = AlgoResult(f"inc-t{t}", 0.0, spec.elements, False, 0.0, errors=[adm.reason])
            else:
                ranks, outs = per_tenant[t]
                mine = [r for key, r in reports.items() if key.endswith(f"#{t}")]
                on_switch = run.path == SWITCH_PATH
                name = f"inc-t{t}" if on_switch else f"host-t{t}"
                # masked on the host path, float32 and mxint8 take the INC formats' fixed point (and bound)
                quantised = on_switch or spec.secure
                res = _check(name, spec, spec.seed + t, ranks, mine, outs, len(hosts), quantised=quantised)
                res.bound_s = (
                    bound
                    if on_switch
                    else masked_host_bound_s(bounds.hierarchical_bound_s, running, hosts, spec)
                )
            if adm.plan is not None and spec.mode in formats.WIDE_MODES and not spec.secure:
                # what this tenant's sums travelled in: wide only where its slots allowed four chunks a packet
                wide = spec.values_per_packet == WIDE_WORDS and adm.plan.nslots % GROUPS[FMT_WIDE32] == 0
                res.extra["values_per_packet"] = WIDE_WORDS if wide else INC_LANES
            res.extra.update(
                path=adm.path,
                requested_slots=adm.requested_slots,
                granted_slots=adm.granted_slots,
                admission=adm.reason,
            )
            res.extra["masked"] = spec.secure and run.path in (SWITCH_PATH, HOST_PATH)
            res.extra["switch_cpu_s"] = switch_cpu
            res.extra["machine_cores_busy"] = busy_cores  # everyone's work, not only this run's
            res.extra["bytes"] = moved
            res.extra["switch_verdicts"] = verdicts  # every tenant's, by switch (topo/switch_counters.py)
            if counted is not None and levels is not None and adm.plan is not None:
                blocks = -(-spec.elements // INC_LANES)
                path = str(res.extra.get("sparse", {}).get("path", "sparse"))  # type: ignore[union-attr]
                other = sparse_report.exponent_chunks(spec.mode, path, blocks, union)
                res.extra["fill_in"] = sparse_report.fill_in(
                    adm.plan.trees[0][0], counted, levels, blocks, path, other
                )
                floor = sparse_report.dense_wan_floor(adm.plan.trees[0][0], blocks, spec.mode)
                res.extra["dense_wan_floor_bytes"] = floor
                res.extra["wan_fraction_of_dense_floor"] = round(moved["wan"] / floor, 4) if floor else None
            if run.path == SWITCH_PATH and adm.plan is not None and res.bound_s and res.seconds:
                res.extra["against_bound"] = where = against_bound(
                    res, adm.plan.trees[0][0].max_rtt_ms / 1000
                )
                progress(f"tenant {t}: {_bound_line(where)}")
            results.append(res)
        return results
    finally:
        for run in runs:
            plan = run.admission.plan
            if plan is None:
                continue
            for err in installer.remove(plan):
                progress(f"warning: removing tenant {plan.tenant}: {err}")
            for owner in plan.owner_keys:
                allocator.release(owner)


def _bound_line(where: dict) -> str:
    """One line of the run against its bound, and whether the machine's CPU could have set its pace:
    the switches' and workers' CPU over the cores is the least time the machine needed for the work."""
    b, cpu = where["bound"], where["cpu"]
    return (
        f"{where['seconds']:.3f} s, {where['times_bound']}x the bound of {where['bound_s']:.3f} s "
        f"(busiest link {b['link_s']:.3f} s + slowest tree RTT {b['rtt_s']:.3f} s); "
        f"CPU floor {cpu['floor_s']:.3f} s (switches {cpu['switches_s']:.2f} + workers {cpu['workers_s']:.2f} "
        f"CPU-s over {cpu['cores']} cores: {cpu['floor_times_bound']}x the bound, "
        f"{round(100 * cpu['share_of_run'])} % of the run)"
    )


def _union_blocks(reports: dict[str, dict]) -> int | None:
    """The union's size as the sparse workers agreed it (all agree; None when none reported it)."""
    for r in reports.values():
        sparse = r.get("stats", {}).get("sparse")
        if sparse and sparse.get("path") == "sparse":
            return round(float(sparse["union_density"]) * int(sparse["blocks"]))
    return None


def _launch_multi(
    running: RunningWan,
    specs: dict[str, dict],
    timeout_s: float,
    kill_at_start: tuple[str, ...] = (),
    at_start: Callable[[], None] | None = None,
) -> dict[str, dict]:
    """Start one runner per spec (keyed "host#tag": several may share a host), wait for all of them,
    and return their reports; a runner still going at `timeout_s` is killed and reported as such.
    `at_start` is called at the common start time (after whatever the runners do untimed before it)."""
    keyed = list(specs.items())
    # the common start (edge.runner): each runner says it is ready once its set-up is done, and the start
    # is given once all are, a moment ahead. A start fixed in advance let nine sites' 18 runners (0.36
    # CPU-s of imports and inputs each, 3.3 s of the two cores) start their timed part 0.7-1.3 s late,
    # half a second apart, and the spread counted in the INC's time
    go = Path(keyed[0][1]["report"]).with_name("start.go") if keyed else None
    if go is not None:
        go.unlink(missing_ok=True)
    procs = []
    for key, spec in keyed:
        host = key.split("#", 1)[0]
        Path(spec["report"]).unlink(missing_ok=True)
        Path(spec["out"]).unlink(missing_ok=True)  # never judge a result left by an earlier run
        spec_path = Path(spec["report"]).with_suffix(".spec.json")
        spec["ready"], spec["go"] = str(Path(spec["report"]).with_suffix(".ready")), str(go)
        Path(spec["ready"]).unlink(missing_ok=True)
        spec_path.write_text(json.dumps(spec))
        procs.append(
            (
                key,
                spec,
                running.network.host(host).popen([sys.executable, "-m", "edge.runner", str(spec_path)]),
            )
        )
    ready_by = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < ready_by and not all(
        Path(spec["ready"]).exists() or proc.poll() is not None for _, spec, proc in procs
    ):
        time.sleep(0.02)
    # the victims are up but have sent nothing (a worker that had already sent its whole vector would
    # not be missed)
    for key, _spec, proc in procs:
        if key.split("#", 1)[0] in kill_at_start:
            proc.kill()
    start_at = time.time() + GO_MARGIN_S
    if go is not None:
        tmp = go.with_suffix(".tmp")
        tmp.write_text(json.dumps({"start_at": start_at}))
        os.replace(tmp, go)  # whole or absent: a runner never reads half of it
    if at_start is not None:
        time.sleep(max(0.0, start_at - time.time()))
        at_start()
    deadline = time.monotonic() + timeout_s
    reports: dict[str, dict] = {}
    for key, spec, proc in procs:
        try:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except Exception:
            proc.kill()
            proc.wait()
        path = Path(spec["report"])
        if path.exists():
            reports[key] = json.loads(path.read_text())
        else:
            reports[key] = {
                "rank": spec["rank"],
                "error": f"no report (worker exit status {proc.returncode})",
            }
    return reports


def secure_host_spec(board: Path, workers: int, tenant: int) -> dict[str, object]:
    """The "secure" part of a host algorithm's worker specs (edge.runner), the same for all its workers:
    where they publish their public keys, how many there are, and the tenant and a fresh random epoch the
    pairwise seeds are bound to (a host job has no INC epoch of its own)."""
    return {
        "board": str(board),
        "workers": workers,
        "tenant": tenant,
        "epoch": int.from_bytes(os.urandom(4), "big"),
    }


def masked_agreement_bytes(spec: AllreduceSpec) -> int:
    """Bytes per worker of the agreement a masked host sum of float32 or mxint8 makes before its values
    (edge.formats, edge.mx: a float sum cannot cancel masks, so it is fixed point under agreed exponents):
    float32 an exponent and a special flag per 64-value block, mxint8 a scale per 32 and a flag per 64,
    in rows of 64 lanes. 0 for the other modes, and without --secure (the hosts then add floats)."""
    rows = -(-spec.elements // INC_LANES)
    entries = {"float32": 2 * rows, "mxint8": 3 * rows}.get(spec.mode, 0) if spec.secure else 0
    return 4 * INC_LANES * -(-entries // INC_LANES)


def masked_host_bound_s(
    bound_of: Callable[..., float], running: RunningWan, hosts: list[str], spec: AllreduceSpec
) -> float:
    """A host algorithm's lower bound for this run: its bound for the vector, plus, when masked float32 or
    mxint8 first agree on exponents, its bound for that agreement (one more whole allreduce, latency too)."""
    wan, fabric = running.network.wan, running.network.fabric
    total = bound_of(wan, fabric, hosts, 4 * spec.elements)
    agreement = masked_agreement_bytes(spec)
    return total + (bound_of(wan, fabric, hosts, agreement) if agreement else 0.0)


def run_baseline(
    running: RunningWan, spec: AllreduceSpec, algo: str, progress: Callable[[str], None]
) -> AlgoResult:
    if algo == "mpi":
        from topo.mpi_run import run_mpi

        return run_mpi(running, spec, progress)
    hosts = worker_hosts(running)
    fabric = running.network.fabric
    peers = [
        {"rank": r, "ip": fabric.host(h)[1].ip, "site": fabric.host(h)[0].name} for r, h in enumerate(hosts)
    ]
    out_dir = running.run_dir / "allreduce" / algo
    out_dir.mkdir(parents=True, exist_ok=True)
    # a baseline of a secure run masks as the INC tenants do (one board and epoch for all its workers)
    masking = secure_host_spec(out_dir / "keys", len(hosts), 0) if spec.secure else None
    shutil.rmtree(out_dir / "keys", ignore_errors=True)  # an earlier run's public keys
    start_at = time.time() + START_DELAY_S
    specs: dict[str, dict] = {}
    outs = []
    for rank, host in enumerate(hosts):
        out = out_dir / f"rank{rank}.npy"
        outs.append(out)
        specs[f"{host}#{algo}"] = {
            "algorithm": algo,
            "mode": spec.mode,
            "density": spec.density,
            "elements": spec.elements,
            "seed": spec.seed + 1,
            "inputs": spec.inputs or None,
            "rank": rank,
            "start_at": start_at,
            "out": str(out),
            "report": str(out_dir / f"rank{rank}.report.json"),
            "peers": peers,
            "timeout_s": 600,
        }
        if masking is not None:
            specs[f"{host}#{algo}"]["secure"] = masking
    progress(
        f"{algo} allreduce: {len(hosts)} workers, {spec.elements} {spec.mode} each"
        + (", masked" if spec.secure else "")
    )
    # the bytes of the timed allreduce only: the hierarchical runners first warm their connections with
    # one untimed allreduce of the same size, which counted in its bytes too (about twice the INC's)
    marks = {"launch": linkbytes.snapshot(fabric)}
    reports = _launch_multi(
        running, specs, 900, at_start=lambda: marks.__setitem__("start", linkbytes.snapshot(fabric))
    )
    # a warm-up that ran past the common start leaves some of its bytes after the mark: then count
    # from the launch, and say so
    overran = any(float(r.get("late_start_s", 0.0)) > 0.0 for r in reports.values())
    counted_from = "launch" if overran or "start" not in marks else "start"
    moved = linkbytes.since(fabric, marks[counted_from])
    res = _check(
        algo,
        spec,
        spec.seed + 1,
        list(range(len(hosts))),
        list(reports.values()),
        outs,
        len(hosts),
        quantised=spec.secure,  # masked: float32 and mxint8 in the INC formats' fixed point (and bound)
    )
    res.extra["masked"] = spec.secure
    bound_of = {
        "ring": bounds.ring_bound_s,
        "ps": bounds.ps_bound_s,
        "hierarchical": bounds.hierarchical_bound_s,
    }
    res.bound_s = masked_host_bound_s(bound_of[algo], running, hosts, spec)
    res.extra["bytes"] = moved
    res.extra["bytes_counted_from"] = counted_from
    return res
