#!/usr/bin/env python3
"""Decentralised averaging of nine sites with the optimiser's rotating triples, through the switches.

Each site starts with its own vector. The controller is asked (REST) for a `core-cliques` job with an
automatic schedule: for a small edge memory the optimiser picks rotating triples (a 3 x 3 grid, two
rounds). The controller installs one reduction tree per triple and round; the switches pick the tree
from the round number each packet carries. One worker per site runs `edge.schedule_worker` inside its
Mininet host: each round it averages with its triple. After the schedule's rounds every site must hold
exactly the global average (int32 values, divisible so that every average is exact).

Needs root and a running WAN with its controller:

    sudo tributary run --detach                 # nine sites (or: this script's --start)
    sudo .venv/bin/python scripts/averaging_demo.py [--memory 4MB] [--elements 4096]
    sudo tributary stop
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from edge.schedule_worker import spec_from_job_view  # noqa: E402
from topo import detach  # noqa: E402
from topo.demo import DemoSession, around_wan, demo_tenant  # noqa: E402


def say(msg: str) -> None:
    print(f"[averaging] {msg}", flush=True)


def scale_for(rounds: list[list[list[str]]]) -> int:
    """A factor that keeps every clique average of integers an integer: the product over rounds of the
    lcm of that round's clique sizes."""
    k = 1
    for rnd in rounds:
        k *= math.lcm(*[len(c) for c in rnd if len(c) > 1] or [1])
    return k


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--state", type=Path, help="state file of the running WAN (default /run/tributary/state.json)"
    )
    p.add_argument("--memory", default="4MB", help="edge memory per site for the optimiser (default 4MB)")
    p.add_argument("--size", default="64MB", help="bytes per site and round for the optimiser (default 64MB)")
    p.add_argument("--elements", type=int, default=4096, help="vector length per site (default 4096)")
    p.add_argument("--slots", type=int, default=64, help="slots per switch and round (default 64)")
    p.add_argument("--rounds", type=int, help="rounds to run (default: the schedule's rounds to consensus)")
    p.add_argument("--start", action="store_true", help="bring the nine-site WAN up first and stop it after")
    p.add_argument("--sites", help="with --start: the sites (default all nine)")
    args = p.parse_args()
    return around_wan(args.start, args.sites, say, lambda: run(args, detach.state_path(args.state)))


def run(args: argparse.Namespace, state_file: Path) -> int:
    with demo_tenant(state_file, "demo") as demo:
        return run_job(args, demo)


def run_job(args: argparse.Namespace, demo: DemoSession) -> int:
    state, me, sites = demo.state, demo.client, demo.sites
    hosts = demo.topology["hosts"]
    workers = [next(h["name"] for h in hosts if h["site"] == s and h["role"] == "worker") for s in sites]
    say(f"{len(sites)} sites; asking the optimiser for a schedule (memory {args.memory}, size {args.size})")
    body = {
        "name": "averaging-demo",
        "workers": workers,
        "strategy": "core-cliques",
        "slots": args.slots,
        "schedule": {"mode": "auto", "memory": args.memory, "size": args.size},
    }
    r = me.post("/jobs", json=body)
    if r.status_code != 201:
        say(f"job refused: {r.status_code} {r.text}")
        return 1
    job = r.json()
    sched = job["schedule"]
    say(
        f"job {job['id']}: {sched['source']}, predicted {sched['predicted_time_s']:.3f} s at full scale, "
        f"{sched['rounds_to_consensus']} round(s) to consensus, exact average: {sched['exact_average']}"
    )
    for t in job["trees"]:
        cliques = "  ".join("+".join(c["sites"]) + f" (root {c['root']})" for c in t["cliques"])
        say(f"  round {t['round']}: {cliques}")
    rounds = args.rounds or sched["rounds_to_consensus"] or len(job["trees"])
    scale = scale_for(sched["sites"])
    rng = np.random.default_rng(7)
    inputs = {h: (rng.integers(-1000, 1000, size=args.elements) * scale).astype(np.int32) for h in workers}
    target = np.sum([v.astype(np.int64) for v in inputs.values()], axis=0) / len(workers)
    out_dir = Path(state["run_dir"]) / "averaging"
    out_dir.mkdir(parents=True, exist_ok=True)
    start_at = time.time() + 3.0
    procs = {}
    for host in workers:
        spec = {
            "worker": spec_from_job_view(job, host, stall_timeout_s=60.0).model_dump(),
            "input": str(out_dir / f"{host}.in.npy"),
            "out": str(out_dir / f"{host}.out.npy"),
            "report": str(out_dir / f"{host}.report.json"),
            "rounds": rounds,
            "mode": "int32",
            "start_at": start_at,
        }
        np.save(spec["input"], inputs[host])
        Path(spec["out"]).unlink(missing_ok=True)
        spec_path = out_dir / f"{host}.spec.json"
        spec_path.write_text(json.dumps(spec))
        argv = [sys.executable, "-m", "edge.schedule_worker", str(spec_path)]
        procs[host] = subprocess.Popen(detach.host_command(state, host, argv), cwd=ROOT)
    say(f"{len(procs)} workers run {rounds} round(s) of {args.elements} int32 values each")
    ok = True
    for host, proc in procs.items():
        proc.wait(timeout=600)
        report = json.loads((out_dir / f"{host}.report.json").read_text())
        if "error" in report:
            say(f"  {host}: FAILED: {report['error']}")
            ok = False
            continue
        got = np.load(out_dir / f"{host}.out.npy")
        exact = bool(np.array_equal(got.astype(np.int64), target))
        ok = ok and exact
        spread = float(np.abs(inputs[host] - target).max())
        say(
            f"  {host}: {'reached' if exact else 'MISSED'} the global average "
            f"(started up to {spread:.0f} away) in {report['seconds']:.2f} s, "
            f"{report['stats']['packets_sent']} packets, {report['stats']['retransmissions']} retransmitted"
        )
    counters = me.get(f"/jobs/{job['id']}").json()["counters"]
    say(
        f"switches aggregated {counters['packets']} packets ({counters['bytes']} bytes); "
        f"rounds completed: {counters['rounds_completed']} of {len(job['trees'])}"
    )
    say("every site holds the global average" if ok else "some site did NOT reach the global average")
    me.delete(f"/jobs/{job['id']}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
