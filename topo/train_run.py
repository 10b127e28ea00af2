"""Running `tributary train` on the emulated WAN: one training worker process per worker host, one run per
strategy on the same model, data split and seeds, and the runs compared step by step.

For core-tree an INC job over all workers is installed in the switches for the run and removed after it;
for edge-cliques the schedule's trees, and one Edge-INC site process per edge host (topo/train_edge.py).
While a run goes, rank 0's per-step lines are relayed as progress. A run's times are rank 0's: compute is
its gradient passes, communication its allreduce calls (which include waiting for slower workers). Each
run carries its strategy's lower bound for one step's allreduce (topo/bounds.py: bytes over the busiest
link plus the latency the algorithm cannot avoid), averaged over steps when only every K-th synchronises.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from controller.inc.allocation import INC_CELLS, Allocator
from controller.inc.install import JobInstaller
from controller.inc.jobs import plan_job
from controller.p4rt import P4InfoIndex
from edge.protocol import INC_LANES
from edge.training.loop import TrainConfig
from edge.training.model import Mlp
from topo import bounds
from topo.allreduce_run import worker_hosts
from topo.session import RunningWan

TRAIN_TENANT = 1


@dataclass
class StrategyRun:
    strategy: str
    cfg: TrainConfig
    steps: list[dict] = field(default_factory=list)  # rank 0's StepRecords
    errors: list[str] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)  # each worker's final parameters (sha256), rank order
    stats: dict[str, float] = field(default_factory=dict)
    wall_s: float = 0.0
    setup_s: float = 0.0
    bound_step_s: float = 0.0  # the strategy's lower bound for one allreduce of the payload (topo/bounds.py)
    edge: dict[str, object] = field(default_factory=dict)  # edge-cliques: schedule, predicted and measured

    @property
    def compute_s(self) -> float:
        return sum(s["compute_s"] for s in self.steps)

    @property
    def comm_s(self) -> float:
        return sum(s["comm_s"] for s in self.steps)

    def time_to_target(self) -> float | None:
        spent = 0.0
        for s in self.steps:
            spent += s["compute_s"] + s["comm_s"]
            if s["accuracy"] >= self.cfg.target_accuracy:
                return spent
        return None

    def summary(self) -> dict[str, object]:
        ok = bool(self.steps) and not self.errors
        last = self.steps[-1] if self.steps else {}
        ttt = self.time_to_target()
        out: dict[str, object] = {
            "strategy": self.strategy,
            "ok": ok,
            "final_accuracy": last.get("accuracy"),
            "final_loss": last.get("loss"),
            "seconds": round(self.compute_s + self.comm_s, 4),
            "comm_seconds": round(self.comm_s, 4),
            "compute_seconds": round(self.compute_s, 4),
            "comm_share": round(self.comm_s / (self.compute_s + self.comm_s), 4) if self.steps else None,
            "time_to_target_s": round(ttt, 4) if ttt is not None else None,
            "steps": len(self.steps),
            "wall_s": round(self.wall_s, 3),
            "setup_s": round(self.setup_s, 3),
            "workers_agree": len(set(self.digests)) == 1 and len(self.digests) > 0,
            "bound_step_s": round(self.bound_step_s, 4),
            "comm_step_times_bound": round(self.comm_s / len(self.steps) / self.bound_step_s, 2)
            if self.steps and self.bound_step_s
            else None,
            "curve": [
                [s["loss"], s["accuracy"], round(s["compute_s"], 6), round(s["comm_s"], 6)]
                for s in self.steps
            ],
        }
        if self.stats:
            out["stats"] = self.stats
        if self.edge:
            out["edge"] = self.edge
        if self.errors:
            out["errors"] = self.errors
        return out


def _peers(running: RunningWan, hosts: list[str]) -> list[dict]:
    fabric = running.network.fabric
    return [
        {"rank": r, "ip": fabric.host(h)[1].ip, "site": fabric.host(h)[0].name} for r, h in enumerate(hosts)
    ]


def inc_slots(cfg: TrainConfig) -> int:
    """One slot per chunk of the gradient (no chunk waits for a slot), within half the switches' cells."""
    return max(1, min(-(-Mlp(hidden=cfg.hidden).size // INC_LANES), INC_CELLS // 2))


def run_strategy(
    running: RunningWan,
    cfg: TrainConfig,
    strategy: str,
    progress: Callable[[str], None],
    stall_timeout_s: float = 30.0,
    every: int = 10,
    edge_schedule: str = "best",
) -> StrategyRun:
    """Train once with `strategy` on every worker host of the running WAN."""
    hosts = worker_hosts(running)
    peers = _peers(running, hosts)
    out_dir = running.run_dir / "train" / f"{strategy}-x{cfg.compute_scale}-{cfg.compute_ms:g}ms"
    out_dir.mkdir(parents=True, exist_ok=True)
    specs: dict[str, dict] = {}
    for rank, host in enumerate(hosts):
        specs[host] = {
            "strategy": strategy,
            "rank": rank,
            "peers": peers,
            "train": asdict(cfg),
            "timeout_s": 120,
            "report": str(out_dir / f"rank{rank}.report.json"),
            "progress": str(out_dir / "progress.jsonl") if rank == 0 else "",
        }
    run = StrategyRun(strategy, cfg)
    size = Mlp(hidden=cfg.hidden).size
    syncs = cfg.steps if cfg.local_steps == 1 else -(-cfg.steps // cfg.local_steps)
    wan, fabric = running.network.wan, running.network.fabric
    if strategy in ("ring", "hierarchical"):
        host_bound = bounds.ring_bound_s if strategy == "ring" else bounds.hierarchical_bound_s
        run.bound_step_s = host_bound(wan, fabric, hosts, 4 * size) * syncs / cfg.steps
    elif strategy == "mpi":
        run.bound_step_s = bounds.best_host_bound_s(wan, fabric, hosts, 4 * size)[1] * syncs / cfg.steps
    if strategy == "mpi":
        _launch_mpi(running, hosts, specs, run, progress, every, out_dir)
        return run
    if strategy == "edge-cliques":
        _run_edge(running, cfg, specs, run, progress, every, out_dir, stall_timeout_s, edge_schedule, syncs)
        return run
    if strategy != "core-tree":
        _launch(running, specs, run, progress, every)
        return run
    fabric = running.network.fabric
    allocator = Allocator([s.name for s in fabric.switches])
    installer = JobInstaller(running.conns, P4InfoIndex(running.pipeline.p4info), progress, running.zeroed)
    plan = plan_job(fabric, allocator, TRAIN_TENANT, [[hosts]], inc_slots(cfg))
    installer.install(plan)
    try:
        tree = plan.trees[0][0]
        mode = "int32" if cfg.fmt == "exact" else "float32"
        run.bound_step_s = bounds.inc_bound_s(wan, [tree], size, mode) * syncs / cfg.steps
        progress(f"core-tree: INC tree rooted at {tree.root} (slowest path {tree.max_rtt_ms:g} ms)")
        for host, spec in specs.items():
            spec["worker"] = plan.worker_spec(host, stall_timeout_s).model_dump()
        _launch(running, specs, run, progress, every)
    finally:
        for err in installer.remove(plan):
            progress(f"warning: removing the training job: {err}")
        for owner in plan.owner_keys:
            allocator.release(owner)
    return run


def _run_edge(
    running: RunningWan,
    cfg: TrainConfig,
    specs: dict[str, dict],
    run: StrategyRun,
    progress: Callable[[str], None],
    every: int,
    out_dir: Path,
    stall_timeout_s: float,
    schedule: str,
    syncs: int,
) -> None:
    """Edge-INC: one cycle of the schedule per synchronisation (and one for the untimed warm-up)."""
    from topo.train_edge import plan_cycle, run_edge_training, summarise

    try:
        cycle = plan_cycle(running, Mlp(hidden=cfg.hidden).size, cfg.fmt, schedule)
    except ValueError as exc:
        run.errors = [f"edge-cliques: {exc}"]
        return
    run.bound_step_s = cycle.predicted_s * syncs / cfg.steps
    rounds = " then ".join(" ".join("{" + " ".join(c) + "}" for c in r) for r in cycle.rounds)
    progress(
        f"edge-cliques: {cycle.strategy}, {rounds}; {len(cycle.data_rounds)} data-plane round(s) per "
        f"synchronisation, predicted {cycle.predicted_s * 1000:.0f} ms each"
    )
    # the longest a site may wait for its workers between two synchronisations (compute, evaluation)
    feed_timeout = 120 + cfg.local_steps * (cfg.compute_ms / 1000 + cfg.compute_scale * 0.01 + 5)
    reports, errors = run_edge_training(
        running,
        cycle,
        specs,
        syncs + 1,
        cfg.fmt,
        out_dir,
        lambda: _launch(running, specs, run, progress, every),
        progress,
        stall_timeout_s,
        feed_timeout,
    )
    run.errors += errors
    run.edge = summarise(cycle, reports)


def _launch(
    running: RunningWan, specs: dict[str, dict], run: StrategyRun, progress: Callable[[str], None], every: int
) -> None:
    """Start one worker per host, relay rank 0's progress, collect the reports."""
    procs = []
    t0 = time.time()
    for host, spec in specs.items():
        Path(spec["report"]).unlink(missing_ok=True)
        spec_path = Path(spec["report"]).with_suffix(".spec.json")
        spec_path.write_text(json.dumps(spec))
        cmd = [sys.executable, "-m", "edge.training.worker", str(spec_path)]
        procs.append(running.network.host(host).popen(cmd))
    _wait(procs, list(specs.values()), run, progress, every, t0)


def _launch_mpi(
    running: RunningWan,
    hosts: list[str],
    specs: dict[str, dict],
    run: StrategyRun,
    progress: Callable[[str], None],
    every: int,
    out_dir: Path,
) -> None:
    """mpirun in rank 0's host starts every rank (edge/mpi_launch.py); one spec lists each rank's part."""
    from edge.mpi_launch import mpirun_command, mpirun_path, write_agent

    mpirun = mpirun_path()
    if mpirun is None:
        run.errors = [
            "mpirun not found: install OpenMPI (Debian: openmpi-bin libopenmpi-dev; sudo make install)"
        ]
        return
    fabric = running.network.fabric
    ips = [fabric.host(h)[1].ip for h in hosts]
    agent = write_agent(
        out_dir / "agent.sh", {ip: running.network.host(h).pid for ip, h in zip(ips, hosts, strict=True)}
    )
    ordered = [specs[h] for h in hosts]
    for spec in ordered:
        Path(spec["report"]).unlink(missing_ok=True)
    common = {k: v for k, v in ordered[0].items() if k not in ("rank", "report", "progress")}
    common["ranks"] = [{"rank": s["rank"], "report": s["report"], "progress": s["progress"]} for s in ordered]
    spec_path = out_dir / "mpi.spec.json"
    spec_path.write_text(json.dumps(common))
    cmd = mpirun_command(mpirun, agent, ips, [sys.executable, "-m", "edge.training.worker", str(spec_path)])
    progress(f"mpi: mpirun in {hosts[0]} starts {len(hosts)} ranks (OpenMPI's own algorithm choice)")
    t0 = time.time()
    with (out_dir / "mpirun.log").open("wb") as log:
        proc = running.network.host(hosts[0]).popen(cmd, stdout=log, stderr=log)
        _wait([proc], ordered, run, progress, every, t0)


def _wait(
    procs: list, specs: list[dict], run: StrategyRun, progress: Callable[[str], None], every: int, t0: float
) -> None:
    """Relay rank 0's progress until the processes end, collect every rank's report; a process still
    going at the deadline is killed, and a rank without a report is reported as such."""
    cfg = run.cfg
    progress_path = Path(next(s["progress"] for s in specs if s["progress"]))
    progress_path.unlink(missing_ok=True)
    per_step = 20 + cfg.compute_ms / 1000 + cfg.compute_scale * 1e-3
    deadline = time.monotonic() + 120 + cfg.steps * per_step
    seen = 0
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        time.sleep(0.5)
        seen = _relay(progress_path, seen, run.strategy, cfg, progress, every)
    _relay(progress_path, seen, run.strategy, cfg, progress, every)
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
    run.wall_s = time.time() - t0
    status = ", ".join(str(p.returncode) for p in procs)
    reports = []
    for spec in specs:
        path = Path(spec["report"])
        if path.exists():
            reports.append(json.loads(path.read_text()))
        else:
            reports.append({"rank": spec["rank"], "error": f"no report (exit status {status})"})
    reports.sort(key=lambda r: r.get("rank") or 0)
    run.errors = [f"rank {r['rank']}: {r['error']}" for r in reports if "error" in r]
    run.digests = [r.get("params_sha256", "") for r in reports if "error" not in r]
    if reports and "error" not in reports[0]:
        run.steps = reports[0]["steps"]
        run.setup_s = max(r.get("setup_s", 0.0) for r in reports if "error" not in r)
    for r in reports:
        for k, v in r.get("stats", {}).items():
            if k in ("packets_sent", "retransmissions", "results", "duplicates", "rejected"):
                run.stats[k] = run.stats.get(k, 0) + v


def _relay(
    path: Path, seen: int, strategy: str, cfg: TrainConfig, progress: Callable[[str], None], every: int
) -> int:
    if not path.exists():
        return seen
    lines = path.read_text().splitlines()
    for line in lines[seen:]:
        try:
            s = json.loads(line)
        except json.JSONDecodeError:  # a line being written: read it next time
            return seen
        seen += 1
        if (s["step"] + 1) % every == 0 or s["step"] == 0 or s["step"] + 1 == cfg.steps:
            progress(
                f"{strategy}: step {s['step'] + 1}/{cfg.steps} loss {s['loss']:.3f} accuracy {s['accuracy']:.3f} "
                f"compute {s['compute_s'] * 1000:.1f} ms comm {s['comm_s'] * 1000:.1f} ms"
            )
    return seen


def compare_curves(runs: list[StrategyRun]) -> dict[str, object]:
    """Whether the runs' curves are identical (step by step, loss and accuracy) and by how much they differ
    from the first run's where they are not, with the reason."""
    done = [r for r in runs if r.steps and not r.errors]
    if len(done) < 2:
        return {}
    ref = done[0]
    out: dict[str, object] = {"reference": ref.strategy}
    per: dict[str, dict] = {}
    for r in done[1:]:
        n = min(len(r.steps), len(ref.steps))
        dl = max(abs(a["loss"] - b["loss"]) for a, b in zip(r.steps[:n], ref.steps[:n], strict=True))
        da = max(abs(a["accuracy"] - b["accuracy"]) for a, b in zip(r.steps[:n], ref.steps[:n], strict=True))
        identical = dl == 0 and da == 0 and r.digests[:1] == ref.digests[:1]
        entry: dict[str, object] = {"identical": identical, "max_loss_diff": dl, "max_accuracy_diff": da}
        if not identical:
            entry["why"] = _why(ref, r)
        per[r.strategy] = entry
    out["against_reference"] = per
    out["identical"] = all(bool(e["identical"]) for e in per.values())
    return out


def _why(a: StrategyRun, b: StrategyRun) -> str:
    if a.cfg.fmt == "exact":
        return "both summed exact integers: a difference here is a fault (a lost or doubled contribution)"
    names = {a.strategy, b.strategy}
    if "core-tree" in names or "edge-cliques" in names:
        where = "the switches" if "core-tree" in names else "the edge stages"
        if names == {"core-tree", "edge-cliques"}:
            where = "the switches and the edge stages (each on its own block grid)"
        return (
            f"float32 gradients: {where} sum block fixed point (every value rounded to its block's grid, "
            "edge/formats.py, edge/edge_float.py) while hosts add float32 in their algorithm's order; the "
            "rounding differs in the last bits and training amplifies it a little (--format exact: identical)"
        )
    return (
        f"float32 gradients added in another order ({a.strategy} and {b.strategy} sum the workers' vectors in "
        "different orders): the sums differ in the last bits (--format exact: identical)"
    )
