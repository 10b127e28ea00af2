#!/usr/bin/env python3
"""Allreduce through the switches (INC) vs the ring baseline over a sweep of sizes, losses and tenants,
on the emulated WAN. Writes a CSV of every run and a PNG plot of goodput. Needs root.

    sudo .venv/bin/python scripts/allreduce_sweep.py --sites TYO,NYC,LON --sizes 16384,65536,262144 \\
        --losses 0,0.01,0.02 --tenants 1,2 --out runs/sweep

The WAN is brought up once per loss rate (loss is a property of the links); each point runs INC with
the given number of tenants at once (`--runs` times) and, for one tenant, the ring baseline (`--ring`).
Every INC run is printed beside its bound with where its time went (topo.shortfall.against_bound: the
link time and RTT of the bound, the CPU the switches and workers used and the least time the cores
needed for it, the retransmissions by cause), one JSON line each; `--sites all` runs the nine sites.

    sudo .venv/bin/python scripts/allreduce_sweep.py --sites TYO,NYC,LON --sizes 262144 --losses 0.02 \\
        --tenants 1 --runs 3 --no-ring
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from controller.inc.trees import plan_tree
from topo import shortfall
from topo.allreduce_run import AllreduceSpec, auto_values_per_packet, run_baseline, run_inc, worker_hosts
from topo.options import require_root
from topo.session import running_wan


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sites", default="TYO,NYC,LON", help="comma-separated cities, or all (the nine)")
    ap.add_argument("--workers-per-site", type=int, default=2)
    ap.add_argument("--sizes", type=ints, default=ints("16384,65536,262144"), help="elements per worker")
    ap.add_argument("--losses", type=floats, default=floats("0,0.02"), help="loss fractions per WAN link")
    ap.add_argument("--tenants", type=ints, default=ints("1,2"), help="concurrent INC tenants")
    ap.add_argument("--mode", choices=("int32", "float32"), default="int32")
    ap.add_argument("--slots", type=int, default=0, help="slots per tenant (default: as many as needed)")
    ap.add_argument("--runs", type=int, default=1, help="INC runs per point (default 1)")
    ap.add_argument(
        "--values-per-packet",
        choices=("auto", "64", "256"),
        default="auto",
        help="INC sums 64 or 256 to a packet; auto as tributary allreduce decides (docs/protocol.md)",
    )
    ap.add_argument("--no-ring", dest="ring", action="store_false", help="skip the ring baseline")
    ap.add_argument("--out", type=Path, default=Path("runs/sweep"))
    args = ap.parse_args()
    if not require_root("sweep"):
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, object]] = []
    for loss in args.losses:
        wan_args = argparse.Namespace(
            topology=None,
            sites=None if args.sites == "all" else args.sites,
            rate=None,
            loss=loss,
            workers_per_site=args.workers_per_site,
            link_mode="auto",
            switch_binary=None,
            pcap=False,
            run_dir=None,
            trace=False,
        )
        with running_wan(wan_args, label=f"sweep-loss{loss:g}") as running:
            tree_rtt_s = plan_tree(running.network.fabric, worker_hosts(running)).max_rtt_ms / 1000.0
            wan, workers = running.network.wan, len(worker_hosts(running))
            for size in args.sizes:
                for tenants in args.tenants:
                    for _ in range(args.runs):
                        spec = AllreduceSpec(size, args.mode, tenants, args.slots)
                        spec.values_per_packet = (
                            auto_values_per_packet(args.mode, False, workers, wan, size)
                            if args.values_per_packet == "auto"
                            else int(args.values_per_packet)
                        )
                        inc = run_inc(running, spec, print)
                        first = inc[0]
                        rows.append(
                            {
                                "loss": loss,
                                "elements": size,
                                "tenants": tenants,
                                "algorithm": "inc",
                                "values_per_packet": spec.values_per_packet,
                                "seconds": max(r.seconds for r in inc),
                                "goodput_elems_per_s": sum(r.goodput for r in inc),
                                "exact": all(r.exact for r in inc),
                                "bound_s": round(first.bound_s, 4),
                                "times_bound": round(max(r.seconds for r in inc) / first.bound_s, 2)
                                if first.bound_s
                                else "",
                            }
                        )
                        print(rows[-1], flush=True)
                        where = shortfall.against_bound(first, tree_rtt_s, os.cpu_count())
                        print(
                            json.dumps({"loss": loss, "elements": size, "tenants": tenants, **where}),
                            flush=True,
                        )
                if not args.ring:
                    continue
                ring = run_baseline(running, AllreduceSpec(size, args.mode), "ring", print)
                rows.append(
                    {
                        "loss": loss,
                        "elements": size,
                        "tenants": 1,
                        "algorithm": "ring",
                        "seconds": ring.seconds,
                        "goodput_elems_per_s": ring.goodput,
                        "exact": ring.exact,
                        "bound_s": round(ring.bound_s, 4),
                        "times_bound": round(ring.seconds / ring.bound_s, 2) if ring.bound_s else "",
                    }
                )
                print(rows[-1], flush=True)
    csv_path = args.out / "allreduce_sweep.csv"
    with csv_path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    fig, axes = plt.subplots(1, len(args.losses), figsize=(5 * len(args.losses), 4), squeeze=False)
    for ax, loss in zip(axes[0], args.losses, strict=True):
        for algo, tenants in [("ring", 1)] + [("inc", t) for t in args.tenants]:
            pts = [
                r for r in rows if r["loss"] == loss and r["algorithm"] == algo and r["tenants"] == tenants
            ]
            if pts:
                label = "ring (hosts)" if algo == "ring" else f"INC, {tenants} tenant(s) (sum)"
                ax.plot(
                    [r["elements"] for r in pts],
                    [r["goodput_elems_per_s"] for r in pts],
                    marker="o",
                    label=label,
                )
        ax.set_xscale("log")
        ax.set_title(f"{args.sites}, loss {loss * 100:g} % per link")
        ax.set_xlabel("elements per worker")
        ax.set_ylabel("goodput (elements/s)")
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    png = args.out / "allreduce_sweep.png"
    fig.savefig(png, dpi=120)
    print(f"wrote {csv_path} and {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
