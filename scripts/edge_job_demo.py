#!/usr/bin/env python3
"""An Edge-INC job through the REST API, run on the sites' edge stages of a running WAN.

The controller is asked (POST /jobs) for an `edge-cliques` job with the optimiser's schedule (or, with
--all-to-all, an `edge-all-to-all` job). Its answer holds everything the processes need: the multicast
trees per round and source (installed in the switches), the stages' memory scaled to the emulated
links, the model's pacing per clique, and the spec of every site's stage and every worker's receiver.
This script starts them in the Mininet hosts from that answer alone (topo/edge_job.py), checks that
every worker holds exactly what the schedule gives (for a finite-time design: the sum of all sites),
prints the measured time beside the model's prediction and the switches' per-round counters, and
deletes the job.

Needs root and a running WAN with its controller:

    sudo tributary run --detach                 # nine sites (or: this script's --start)
    sudo .venv/bin/python scripts/edge_job_demo.py [--memory 4MB] [--all-to-all] [--format float32]
    sudo tributary stop
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from edge import edge_float  # noqa: E402
from topo import detach  # noqa: E402
from topo.demo import DemoSession, around_wan, demo_tenant  # noqa: E402
from topo.edge_job import run_edge_job  # noqa: E402
from topo.edge_run import float_vectors, replay, site_vectors  # noqa: E402


def say(msg: str) -> None:
    print(f"[edge-demo] {msg}", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--state", type=Path, help="state file of the running WAN (default /run/tributary/state.json)"
    )
    p.add_argument("--memory", default="4MB", help="edge memory per site, real scale (default 4MB)")
    p.add_argument("--size", default="64MB", help="bytes per site and round, real scale (default 64MB)")
    p.add_argument(
        "--max-rate", type=float, default=1.3, metavar="MBIT",
        help="pace the streams for links of at most this rate (default 1.3: the CPU budget of docs/edge-inc.md)",
    )  # fmt: skip
    p.add_argument(
        "--all-to-all", action="store_true", help="edge-all-to-all instead of the optimiser's cliques"
    )
    p.add_argument("--format", choices=("int32", "float32"), default="int32")
    p.add_argument("--start", action="store_true", help="bring the nine-site WAN up first and stop it after")
    p.add_argument("--sites", help="with --start: the sites (default all nine)")
    args = p.parse_args()
    return around_wan(args.start, args.sites, say, lambda: run(args, detach.state_path(args.state)))


def run(args: argparse.Namespace, state_file: Path) -> int:
    with demo_tenant(state_file, "edge-demo") as demo:
        return run_job(args, demo)


def run_job(args: argparse.Namespace, demo: DemoSession) -> int:
    state, me, sites = demo.state, demo.client, demo.sites
    workers = [h["name"] for h in demo.topology["hosts"] if h["role"] == "worker"]
    body: dict = {"name": "edge-demo", "workers": workers, "format": args.format}
    if args.all_to_all:
        body.update(strategy="edge-all-to-all")
        body["edge"] = {"memory": args.memory, "size": args.size, "max_rate_mbit": args.max_rate}
    else:
        body.update(strategy="edge-cliques")
        body["schedule"] = {"mode": "auto", "memory": args.memory, "size": args.size}
        body["edge"] = {"max_rate_mbit": args.max_rate}
    say(f"{len(sites)} sites; POST /jobs {body['strategy']} (memory {args.memory}, size {args.size})")
    r = me.post("/jobs", json=body)
    if r.status_code != 201:
        say(f"job refused: {r.status_code} {r.json().get('error', r.text)}")
        return 1
    job = r.json()
    edge = job["edge"]
    st = edge["stage"]
    say(
        f"job {job['id']}: {job['schedule']['source']}, {len(edge['rounds'])} data-plane round(s); links "
        f"paced for {st['wire_mbit']:g} Mbit/s (x{st['scale']:.3g}): stage memory {st['memory_bytes']} B "
        f"({st['accumulators']} accumulators), vector {st['chunks']} chunks; predicted {edge['predicted_s']:.3f} s"
    )
    for rnd in edge["rounds"]:
        cl = "  ".join(
            "+".join(c["members"]) + f" ({c['limit']}, {c['rate_mbit']:.3g} Mbit/s)" for c in rnd["cliques"]
        )
        say(f"  round {rnd['round']} [{rnd['kind']}]: {cl}; {len(rnd['groups'])} multicast groups")
    make = float_vectors if args.format == "float32" else site_vectors
    vectors = make(list(edge["sites"]), st["chunks"], 7)
    schedule = job["schedule"]["sites"]
    out = Path(state["run_dir"]) / "edge-demo" / str(job["id"])
    run_ = run_edge_job(state, job, vectors, out)
    if run_.errors:
        for e in run_.errors:
            say(f"FAILED: {e}")
        return 1
    want = {s: v for s, (v, _) in replay(vectors, schedule).items()}
    if args.format == "float32":
        fixed, _exact, _bound = edge_float.replay(vectors, schedule)
        want = {s: v.view(np.uint32) for s, v in fixed.items()}
    site_of = {w["host"]: w["site"] for w in job["workers"]}
    ok = all(np.array_equal(run_.results[h], want[site_of[h]]) for h in run_.results)
    ok = ok and len(run_.results) == len(job["workers"])
    say(f"measured {run_.measured_s():.3f} s against {edge['predicted_s']:.3f} s predicted")
    counters = me.get(f"/jobs/{job['id']}").json()["counters"]
    for rnd in counters["per_round"]:
        say(
            f"  round {rnd['round']}: {sum(s['packets'] for s in rnd['streams'].values())} stream packets "
            f"from {len(rnd['streams'])} sites, {rnd['tree_packets']} handed on by the trees' switches"
        )
    say("every worker holds what the schedule gives" if ok else "some worker does NOT hold its result")
    me.delete(f"/jobs/{job['id']}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
