"""Running a schedule through the edge stages on the emulated WAN and measuring it against the model.

One run = one schedule (rounds of cliques of site names): install its distribution trees (controller.edge),
start one site process per edge host (edge.edge_site) and one receiver per worker (edge.edge_receiver),
read the switches' Edge-INC counters before and after, and check that every worker holds exactly what the
schedule's rounds give (for a finite-time design: the exact sum of all sites, i.e. the exact average).
The prediction is controller.schedule.emulated's, for the run's own rate, memory, chunks and headers.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from controller.edge.install import TX_COUNTER, EdgeInstaller, read_port_counters, read_stats
from controller.edge.plan import INT_RANGE, EdgeJobPlan, plan_edge_job
from controller.edge.stage_specs import receiver_spec, site_specs
from controller.p4rt import P4InfoIndex
from controller.schedule.emulated import EmulatedParams, RoundPrediction, predict_schedule
from controller.schedule.model import Network
from edge import edge_float
from edge.edge_wire import LANES
from topo import addressing
from topo.session import RunningWan

START_DELAY_S = 4.0  # every process must be up before the common start


@dataclass
class EdgeRunResult:
    strategy: str
    predicted_s: float
    measured_s: float | None
    exact: bool
    exact_average: bool
    rounds: list[dict]
    wan_bytes: dict[str, int]
    wan_streams_once: bool
    errors: list[str] = field(default_factory=list)
    stage: dict[str, int] = field(default_factory=dict)
    cpu: dict[str, object] = field(default_factory=dict)
    number_format: str = "int32"
    max_abs_error: float | None = None  # float32: against the float64 sums of the same rounds
    error_bound: float | None = None  # float32: the largest per-element bound (edge.edge_float.replay)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "strategy": self.strategy,
            "predicted_s": round(self.predicted_s, 4) if math.isfinite(self.predicted_s) else None,
            "measured_s": None if self.measured_s is None else round(self.measured_s, 4),
            "exact": self.exact,
            "exact_average": self.exact_average,
            "rounds": self.rounds,
            "wan_bytes": self.wan_bytes,
            "wan_streams_once": self.wan_streams_once,
            "stage": self.stage,
            "cpu": self.cpu,
            "format": self.number_format,
        }
        if self.number_format == "float32":
            out["max_abs_error"] = self.max_abs_error
            out["error_bound"] = self.error_bound
        if self.errors:
            out["errors"] = self.errors
        return out


def _num(x: float) -> float | None:
    """A time for JSON: rounded, and None for the model's 'never' (no rate)."""
    return round(x, 4) if math.isfinite(x) else None


def site_vectors(names: Sequence[str], chunks: int, seed: int) -> dict[str, np.ndarray]:
    """Each site's input (chunks x 64 uint32 lanes holding int32 values), from (seed, site index)."""
    out = {}
    for i, n in enumerate(names):
        rng = np.random.default_rng([seed, i])
        vals = rng.integers(-INT_RANGE, INT_RANGE, size=chunks * LANES, dtype=np.int32)
        out[n] = vals.view(np.uint32).reshape(chunks, LANES)
    return out


def float_vectors(names: Sequence[str], chunks: int, seed: int) -> dict[str, np.ndarray]:
    """Each site's float32 input (chunks x 64): normal values whose blocks' magnitudes differ by up to
    2**20 between blocks and sites, so the exponent agreement has mixed scales to reconcile."""
    out = {}
    for i, n in enumerate(names):
        rng = np.random.default_rng([seed, i, 32])
        scale = np.ldexp(1.0, rng.integers(-10, 10, size=(chunks, 1)))
        out[n] = (rng.standard_normal((chunks, LANES)) * scale).astype(np.float32)
    return out


def replay(vectors: dict[str, np.ndarray], rounds: Sequence[Sequence[Sequence[str]]]) -> dict[str, tuple]:
    """What every site must hold after the rounds: its clique's sum each round (mod 2**32), and how many
    initial contributions (with multiplicity) that sum counts."""
    cur = {n: (v.copy(), 1) for n, v in vectors.items()}
    for cliques in rounds:
        nxt = dict(cur)
        for c in cliques:
            if len(c) < 2:
                continue
            total = np.zeros_like(cur[c[0]][0])
            count = 0
            for m in c:
                total += cur[m][0]
                count += cur[m][1]
            for m in c:
                nxt[m] = (total, count)
        cur = nxt
    return cur


def _counters(running: RunningWan, index: P4InfoIndex) -> dict[str, dict[int, tuple[int, int]]]:
    return {name: read_port_counters(conn, index, TX_COUNTER) for name, conn in running.conns.items()}


def run_schedule(
    running: RunningWan,
    latency_net: Network,
    params: EmulatedParams,
    strategy: str,
    rounds: Sequence[Sequence[Sequence[str]]],
    progress: Callable[[str], None],
    tenant: int = 1,
    seed: int = 1,
    stall_timeout_s: float = 30.0,
    fmt: str = "int32",
) -> EdgeRunResult:
    """Run `rounds` (the schedule's rounds of cliques) through the stages; float32 runs each round as an
    exponent round and a sum round (edge.edge_float), both in the prediction."""
    fabric = running.network.fabric
    index = P4InfoIndex(running.pipeline.p4info)
    epoch = random.getrandbits(32)
    sp = predict_schedule(latency_net, params, rounds, fmt)
    kinds, predicted, predicted_total = sp.kinds, sp.predicted, sp.total_s
    plan = plan_edge_job(fabric, tenant, epoch, sp.rounds)
    installer = EdgeInstaller(running.conns, index, progress)
    installer.install(plan)
    out_dir = running.run_dir / "edge" / strategy.replace(" ", "_")
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        before = _counters(running, index)
        make = float_vectors if fmt == "float32" else site_vectors
        vectors = make(latency_net.names, params.chunks, seed)
        start_at = time.time() + START_DELAY_S
        procs = _launch(
            running, plan, predicted, params, vectors, out_dir, start_at, stall_timeout_s, fmt, kinds
        )
        # the switches' CPU while nothing is sent yet: their idle rate, subtracted from the run's
        idle0, t_idle0 = sum(_switch_cpu(running).values()), time.monotonic()
        time.sleep(max(0.0, start_at - 0.2 - time.time()))
        idle_rate = (sum(_switch_cpu(running).values()) - idle0) / max(1e-3, time.monotonic() - t_idle0)
        cpu_before, t_run0 = _switch_cpu(running), time.monotonic()
        expected = predicted_total if math.isfinite(predicted_total) else 60.0
        budget = expected * 4 + stall_timeout_s * 2 + START_DELAY_S + 30
        reports = wait_reports(procs, budget)
        after = _counters(running, index)
        cpu_switches = sum(_switch_cpu(running).values()) - sum(cpu_before.values())
        cpu_idle = idle_rate * (time.monotonic() - t_run0)
        stats = {name: read_stats(conn, index) for name, conn in running.conns.items()}
    finally:
        for err in installer.remove(plan):
            progress(f"warning: removing edge tenant {tenant}: {err}")
    result = _judge(
        running, plan, predicted, predicted_total, vectors, reports, before, after, stats, strategy, start_at,
        [list(r) for r in rounds], fmt, kinds,
    )  # fmt: skip
    result.cpu = _cpu_summary(reports, cpu_switches, cpu_idle, plan)
    return result


def _switch_cpu(running: RunningWan) -> dict[str, float]:
    """CPU seconds (user + system, all threads) each switch process has used so far."""
    import os

    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    assert running.network.net is not None
    for sw in running.network.net.switches:
        proc = getattr(sw, "proc", None)
        if proc is None:
            continue
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        out[sw.name] = (int(fields[11]) + int(fields[12])) / tick
    return out


def _cpu_summary(
    reports: dict[str, dict], switches_s: float, idle_s: float, plan: EdgeJobPlan
) -> dict[str, object]:
    """Where the run's CPU went (process CPU seconds, not wall time), and per stream packet a stage took.
    The switches' idle CPU over the same time (measured before the start) is reported and subtracted."""
    stages = sum(r.get("cpu_s", 0.0) for n, r in reports.items() if n in plan.site_ids)
    receivers = sum(r.get("cpu_s", 0.0) for n, r in reports.items() if n not in plan.site_ids)
    deliveries = sum(rr["stage"]["added"] for r in reports.values() for rr in r.get("rounds", []))
    total = stages + receivers + switches_s - idle_s
    return {
        "switches_s": round(switches_s, 3),
        "switches_idle_s": round(idle_s, 3),
        "stages_s": round(stages, 3),
        "receivers_s": round(receivers, 3),
        "stream_deliveries": deliveries,
        "us_per_delivery": round(total / deliveries * 1e6, 1) if deliveries else None,
    }


def _launch(
    running: RunningWan,
    plan: EdgeJobPlan,
    predicted: list[RoundPrediction],
    params: EmulatedParams,
    vectors: dict[str, np.ndarray],
    out_dir: Path,
    start_at: float,
    stall_timeout_s: float,
    fmt: str = "int32",
    kinds: Sequence[str] | None = None,
) -> list[tuple[str, Path, object]]:
    fabric = running.network.fabric
    workers = {sw.name: [h for h in sw.hosts if h.role == "worker"] for sw in fabric.switches}
    specs = site_specs(
        plan,
        predicted,
        params,
        fabric,
        running.network.wan.rtt_ms,
        {site: [h.ip for h in hosts] for site, hosts in workers.items()},
        stall_timeout_s,
        fmt,
        kinds,
    )
    procs: list[tuple[str, Path, object]] = []
    for site, spec in specs.items():
        lanes_path = out_dir / f"{site}.in.npy"
        np.save(lanes_path, vectors[site])
        site_spec = {
            **spec,
            "lanes_path": str(lanes_path),
            "start_at": start_at,
            "report": str(out_dir / f"{site}.site.json"),
        }
        spec_path = out_dir / f"{site}.site.spec.json"
        spec_path.write_text(json.dumps(site_spec))
        Path(site_spec["report"]).unlink(missing_ok=True)
        for h in workers[site]:
            recv = {
                **receiver_spec(plan, spec, h.ip, params.chunks),
                "out": str(out_dir / f"{h.name}.out.npy"),
                "report": str(out_dir / f"{h.name}.recv.json"),
                "timeout_s": START_DELAY_S + 600,
            }
            Path(recv["report"]).unlink(missing_ok=True)
            Path(recv["out"]).unlink(missing_ok=True)
            rpath = out_dir / f"{h.name}.recv.spec.json"
            rpath.write_text(json.dumps(recv))
            node = running.network.host(h.name)
            procs.append(
                (
                    h.name,
                    Path(recv["report"]),
                    node.popen([sys.executable, "-m", "edge.edge_receiver", str(rpath)]),
                )
            )
        node = running.network.host(next(h.name for h in fabric.switch(site).hosts if h.role == "edge"))
        procs.append(
            (
                site,
                Path(site_spec["report"]),
                node.popen([sys.executable, "-m", "edge.edge_site", str(spec_path)]),
            )
        )
    return procs


def wait_reports(procs: list[tuple[str, Path, object]], budget_s: float) -> dict[str, dict]:
    """Each process's JSON report once it ends, within `budget_s` for all (a late one is killed); a
    process that left no report gets {"error": ...} with its exit status."""
    deadline = time.monotonic() + budget_s
    reports: dict[str, dict] = {}
    for name, path, proc in procs:
        try:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))  # type: ignore[attr-defined]
        except Exception:
            proc.kill()  # type: ignore[attr-defined]
            proc.wait()  # type: ignore[attr-defined]
        if path.exists():
            reports[name] = json.loads(path.read_text())
        else:
            reports[name] = {"error": f"no report (exit status {proc.returncode})"}  # type: ignore[attr-defined]
    return reports


def _judge(
    running: RunningWan,
    plan: EdgeJobPlan,
    predicted: list[RoundPrediction],
    predicted_total: float,
    vectors: dict[str, np.ndarray],
    reports: dict[str, dict],
    before: dict[str, dict[int, tuple[int, int]]],
    after: dict[str, dict[int, tuple[int, int]]],
    stats: dict[str, dict[str, int]],
    strategy: str,
    start_at: float,
    rounds: list[list[Sequence[str]]],
    fmt: str,
    kinds: Sequence[str],
) -> EdgeRunResult:
    fabric = running.network.fabric
    errors = [f"{n}: {r['error']}" for n, r in reports.items() if "error" in r]
    want = replay(vectors, rounds)  # the counts; for int32 also the exact sums
    if fmt == "float32":
        fixed, exact64, bounds = edge_float.replay(vectors, rounds)
        want = {n: (fixed[n].view(np.uint32), c) for n, (_, c) in want.items()}
    n_sites = len(vectors)
    exact = not errors
    exact_average = True
    max_err = bound = 0.0
    for sw in fabric.switches:
        expect, count = want[sw.name]
        exact_average = exact_average and count == n_sites
        if fmt == "float32" and count > 1:
            e = np.abs(expect.view(np.float32).astype(np.float64) - exact64[sw.name])
            max_err = max(max_err, float(e.max()))
            ok_bound = bool((e <= bounds[sw.name]).all())
            bound = max(bound, float(bounds[sw.name].max()))
            if not ok_bound:
                errors.append(f"site {sw.name}: block fixed point error beyond its bound")
        for h in sw.hosts:
            if h.role != "worker" or h.name not in reports:
                continue
            r = reports[h.name]
            out = Path(running.run_dir / "edge" / strategy.replace(" ", "_") / f"{h.name}.out.npy")
            if "error" in r or not out.exists():
                exact = False
                continue
            got = np.load(out)
            ok = np.array_equal(got, expect) and r.get("count") == [count]
            if not ok:
                what = (
                    "the stages' block fixed point sums" if fmt == "float32" else "the schedule's exact sums"
                )
                errors.append(f"{h.name}: result differs from {what}")
            exact = exact and ok
    # per round: the cliques' measured times from the sites' reports
    site_rounds: dict[tuple[str, int], dict] = {}
    for sw in fabric.switches:
        r = reports.get(sw.name, {})
        for rr in r.get("rounds", []):
            site_rounds[(sw.name, rr["round"])] = rr
    rounds_out = []
    peak = 0
    totals = {"drops_full": 0, "nack_chunks": 0, "fetches": 0, "gaps": 0, "duplicates": 0, "spilled": 0}
    peak_spill = 0  # the most chunks one stage's repairs held in site memory at once
    for rp in predicted:
        measured = []
        cliques = []
        rpeak = 0
        for c in rp.cliques:
            rows = [site_rounds.get((m, rp.round)) for m in c.members]
            if any(x is None for x in rows):
                cliques.append(
                    {"members": list(c.members), "predicted_s": _num(c.time_s), "measured_s": None}
                )
                continue
            start = rows[0]["start"]  # type: ignore[index]
            t = max(x["done"] for x in rows) - start  # type: ignore[index]
            measured.append(t)
            cpeak = max(x["stage"]["peak_bytes"] for x in rows)  # type: ignore[index]
            rpeak = max(rpeak, cpeak)
            for x in rows:
                for k in totals:
                    totals[k] += x["stage"].get(k, 0)  # type: ignore[index]
                peak_spill = max(peak_spill, x["stage"].get("peak_spill_chunks", 0))  # type: ignore[index]
            cliques.append(
                {
                    "members": list(c.members),
                    "rate_mbit": round(c.rate_Bps * 8 / 1e6, 4),
                    "limit": c.limit,
                    "predicted_s": _num(c.time_s),
                    "measured_s": round(t, 4),
                    "peak_memory_bytes": cpeak,
                }
            )
        peak = max(peak, rpeak)
        rounds_out.append(
            {
                "round": rp.round,
                "kind": kinds[rp.round - 1],
                "predicted_s": _num(rp.time_s),
                "measured_s": round(max(measured), 4) if len(measured) == len(rp.cliques) else None,
                "peak_memory_bytes": rpeak,
                "cliques": cliques,
            }
        )
    dones = [rr["done"] for rr in site_rounds.values() if rr.get("done")]
    measured_total = (max(dones) - start_at) if dones and not errors else None
    wan_bytes, once = _wan_bytes(running, plan, before, after, reports)
    totals["peak_memory_bytes"] = peak
    totals["peak_spill_bytes"] = peak_spill * LANES * 4
    totals["memory_bytes"] = next((x["stage"]["memory_bytes"] for x in site_rounds.values()), 0)
    for name, s in stats.items():
        if s["no_tree"] or s["malformed"]:
            errors.append(
                f"switch {name}: {s['no_tree']} edge packets without a tree, {s['malformed']} malformed"
            )
    return EdgeRunResult(
        strategy,
        predicted_total,
        measured_total,
        exact,
        exact and exact_average,
        rounds_out,
        wan_bytes,
        once,
        errors,
        totals,
        number_format=fmt,
        max_abs_error=max_err if fmt == "float32" else None,
        error_bound=bound if fmt == "float32" else None,
    )


def _wan_bytes(
    running: RunningWan,
    plan: EdgeJobPlan,
    before: dict[str, dict[int, tuple[int, int]]],
    after: dict[str, dict[int, tuple[int, int]]],
    reports: dict[str, dict],
) -> tuple[dict[str, int], bool]:
    """Edge-INC bytes each directed WAN link carried (the switches' edge_tx counters), and whether each
    link carried exactly one copy of every stream its trees route over it (packets = the sources' live
    packets, repairs excluded: those are routed unicast and never counted here)."""
    ports = {(p.site, p.port): p.peer for p in addressing.wan_port_plan(running.network.wan)}
    out: dict[str, int] = {}
    packets: dict[tuple[str, str], int] = {}
    for (site, port), peer in ports.items():
        b0 = before.get(site, {}).get(port, (0, 0))
        b1 = after.get(site, {}).get(port, (0, 0))
        pk, by = b1[0] - b0[0], b1[1] - b0[1]
        if pk:
            out[f"{site}->{peer}"] = by
            packets[(site, peer)] = pk
    sent: dict[tuple[int, str], int] = {}
    for sw in running.network.fabric.switches:
        for rnd, n in reports.get(sw.name, {}).get("sent", {}).items():
            repaired = reports[sw.name].get("repaired", {}).get(rnd, 0)
            sent[(int(rnd), sw.name)] = n - repaired
    once = True
    streams = plan.link_streams()
    for link, rs in streams.items():
        want = sum(sent.get(r, -1) for r in rs)
        if packets.get(link, 0) != want:
            once = False
    if set(packets) - set(streams):
        once = False
    return out, once
