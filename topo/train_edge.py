"""`tributary train --strategy edge-cliques`: the gradients summed by Edge-INC, cycle after cycle.

The schedule is a finite-time design (all-to-all, or a grid of cliques that rotate from round to round),
so one cycle of its rounds leaves every site with the exact sum of all sites' vectors: the training curve
is the other strategies' (bit for bit with exact gradients). Each synchronisation is one cycle:

1. every worker sends its vector to its site's edge host (TCP on the LAN, edge.training.comms.EdgeComm);
   the edge host adds its workers' vectors (one contribution of the site);
2. the edge hosts run the cycle's rounds (edge.edge_site, one long-lived process per site): per round, a
   READY agreement on the clique's start, one paced stream per member replicated by the switches, the
   stage's sum of the other members' streams;
3. the last round's result goes back to the site's workers.

The trees of one cycle's rounds are installed once (controller.edge); a packet's cycle travels in its
epoch, so the same trees serve every cycle. Stage memory holds the whole vector (2,410 parameters are
38 chunks: the memory bound of docs/edge-inc.md does not bind here), streams are paced at the WAN's rate.
The strategy's bound per synchronisation is the emulated model's prediction for the cycle
(controller.schedule.emulated: the agreement, the streams at the rate and the clique's delay, round by
round), the same model the schedule runs of docs/edge-inc.md are measured against.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from controller.edge.install import EdgeInstaller
from controller.edge.plan import data_plane_rounds, edge_host, plan_edge_job, runnable
from controller.edge.stage_specs import site_specs
from controller.p4rt import P4InfoIndex
from controller.schedule import EdgeParams, optimise
from controller.schedule.emulated import EmulatedParams, RoundPrediction, predict
from edge.edge_float import exponent_chunks
from edge.edge_wire import CHUNK_BYTES, LANES
from edge.training.comms import EDGE_FEED_PORT
from topo.edge_run import wait_reports
from topo.session import RunningWan

EDGE_TRAIN_TENANT = 1
SCHEDULES = ("best", "all-to-all", "grid")  # best: the optimiser's fastest finite-time design


@dataclass(frozen=True)
class EdgeCycle:
    """What one synchronisation runs: the schedule's rounds of cliques, as the data plane runs them."""

    strategy: str  # the optimiser's name for the schedule
    rounds: list[list[tuple[str, ...]]]  # the schedule's rounds (site names)
    data_rounds: list[list[tuple[str, ...]]]  # float32: each round's exponent (max) round before it
    kinds: list[str]
    predicted: list[RoundPrediction]  # every round started by its READY agreement
    predicted_s: float  # one cycle, from the last site's ready time to the last site's result
    params: EmulatedParams

    def to_json(self) -> dict[str, object]:
        return {
            "schedule": self.strategy,
            "rounds": [[list(c) for c in r] for r in self.rounds],
            "data_plane_rounds": len(self.data_rounds),
            "predicted_cycle_s": round(self.predicted_s, 4),
            "predicted_rounds_s": [
                round(r.time_s + max(c.agree_s for c in r.cliques), 4) for r in self.predicted
            ],
            "wire_mbit": self.params.wire_bps / 1e6,
            "chunks": self.params.chunks,
            "memory_bytes": self.params.memory_bytes,
        }


def plan_cycle(running: RunningWan, elements: int, fmt: str, choice: str = "best") -> EdgeCycle:
    """The schedule one synchronisation runs for a vector of `elements` values, and its prediction."""
    from topo.commands.schedule import executed_rounds, network_from_wan

    wan = running.network.wan
    if len(wan.names) < 2:
        raise ValueError("edge-cliques needs at least two sites")
    idle = [
        sw.name for sw in running.network.fabric.switches if not any(h.role == "worker" for h in sw.hosts)
    ]
    if idle:
        raise ValueError(f"every site needs a worker host to feed its edge stage; none at {', '.join(idle)}")
    if choice not in SCHEDULES:
        raise ValueError(f"edge schedule must be one of {', '.join(SCHEDULES)}, got {choice!r}")
    rate_bps = min(link.rate_mbit for link in wan.links) * 1e6
    chunks = -(-elements // LANES)
    params = EmulatedParams(1.0, rate_bps, chunks * CHUNK_BYTES, chunks)
    net = network_from_wan(wan, params.payload_bps)
    families = ("all-to-all", "grid") if choice == "best" else (choice,)
    result = optimise(net, EdgeParams(params.memory_bytes, params.size_bytes), families=families)
    exact = [c for c in result.candidates if c.mixing.exact and c.mixing.reaches]
    if not exact:
        raise ValueError(
            f"no {' or '.join(families)} schedule reaches the exact average of {len(wan.names)} sites "
            "(a grid needs a product number of sites, e.g. 4 or 9)"
        )
    best = min(exact, key=lambda c: c.time_s)
    rounds = executed_rounds(net, best)
    why = runnable(rounds)
    if why is not None:
        raise ValueError(f"schedule {best.strategy}: {why}")
    edge_fmt = "int32" if fmt == "exact" else "float32"
    data_rounds, kinds = data_plane_rounds(rounds, edge_fmt)
    sizes = [exponent_chunks(chunks) if k == "max" else chunks for k in kinds]
    # an empty round first, so that every real round starts by the READY agreement, as in training
    preds, total = predict(net, params, [[], *data_rounds], [1, *sizes])
    predicted = [RoundPrediction(p.round - 1, p.cliques) for p in preds[1:]]
    return EdgeCycle(best.strategy, rounds, data_rounds, kinds, predicted, total, params)


def run_edge_training(
    running: RunningWan,
    cycle: EdgeCycle,
    specs: dict[str, dict],
    cycles: int,
    fmt: str,
    out_dir: Path,
    launch_workers: Callable[[], None],
    progress: Callable[[str], None],
    stall_timeout_s: float,
    feed_timeout_s: float,
) -> tuple[list[dict], list[str]]:
    """Install the cycle's trees, start one site process per edge host, point every worker (`specs`,
    by host) at its site's edge host, run the workers (`launch_workers` blocks until they end), collect
    the sites' reports; returns (per site: rounds and cycles, errors)."""
    fabric = running.network.fabric
    edge_fmt = "int32" if fmt == "exact" else "float32"
    index = P4InfoIndex(running.pipeline.p4info)
    plan = plan_edge_job(fabric, EDGE_TRAIN_TENANT, random.getrandbits(32), cycle.data_rounds)
    installer = EdgeInstaller(running.conns, index, progress)
    installer.install(plan)
    procs: list[tuple[str, Path, object]] = []
    try:
        workers: dict[str, list[str]] = {sw.name: [] for sw in fabric.switches}
        for host, spec in specs.items():
            sw, att = fabric.host(host)
            workers[sw.name].append(att.ip)
            spec["edge_ip"] = edge_host(sw).ip
            spec["edge_port"] = EDGE_FEED_PORT
        site = site_specs(
            plan,
            cycle.predicted,
            cycle.params,
            fabric,
            running.network.wan.rtt_ms,
            workers,
            stall_timeout_s,
            edge_fmt,
            cycle.kinds,
        )
        for name, spec in site.items():
            full = {
                **spec,
                "lanes_path": "",
                "start_at": time.time(),
                "report": str(out_dir / f"{name}.site.json"),
                "cycles": cycles,
                "period": len(cycle.data_rounds),
                "feed_port": EDGE_FEED_PORT,
                "feed_timeout_s": feed_timeout_s,
                "sites": len(site),
                "linger_s": 1.0,
            }
            Path(full["report"]).unlink(missing_ok=True)
            path = out_dir / f"{name}.site.spec.json"
            path.write_text(json.dumps(full))
            node = running.network.host(edge_host(fabric.switch(name)).name)
            procs.append(
                (name, Path(full["report"]), node.popen([sys.executable, "-m", "edge.edge_site", str(path)]))
            )
        launch_workers()
        reports, errors = _collect(procs, 30.0)
    finally:
        for _, _, p in procs:
            if p.poll() is None:  # type: ignore[attr-defined]
                p.kill()  # type: ignore[attr-defined]
                p.wait()  # type: ignore[attr-defined]
        for err in installer.remove(plan):
            progress(f"warning: removing the edge training job: {err}")
    return reports, errors


def _collect(procs: list[tuple[str, Path, object]], wait_s: float) -> tuple[list[dict], list[str]]:
    """The sites' reports once they end (they linger briefly to serve late repairs), named."""
    reports = [{**rep, "name": name} for name, rep in wait_reports(procs, wait_s).items()]
    return reports, [f"edge site {r['name']}: {r['error']}" for r in reports if "error" in r]


def summarise(cycle: EdgeCycle, reports: list[dict]) -> dict[str, object]:
    """What the edge hosts measured: per cycle, from the last site's ready time to the last site's
    result (the median over the timed cycles, the warm-up cycle 0 left out), beside the model's
    prediction; the stages' repair counters summed over every round."""
    per_cycle: dict[int, list[dict]] = {}
    totals = dict.fromkeys(("gaps", "nack_chunks", "drops_full", "fetches", "duplicates", "foreign"), 0)
    for rep in reports:
        for c in rep.get("cycles", []):
            per_cycle.setdefault(c["cycle"], []).append(c)
        for r in rep.get("rounds", []):
            for k in totals:
                totals[k] += r["stage"].get(k, 0)
    times = []
    for c, rows in sorted(per_cycle.items()):
        if c == 0 or len(rows) < len(reports) or any("done" not in x for x in rows):
            continue
        times.append(max(x["done"] for x in rows) - max(x["ready"] for x in rows))
    times.sort()
    median = times[len(times) // 2] if times else math.nan
    out = cycle.to_json()
    out.update(
        {
            "cycles_measured": len(times),
            "measured_cycle_median_s": round(median, 4) if times else None,
            "measured_cycle_max_s": round(times[-1], 4) if times else None,
            "stage": totals,
        }
    )
    return out
