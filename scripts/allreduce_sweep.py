#!/usr/bin/env python3
"""Allreduce through the switches (INC) vs the ring baseline over a sweep of sizes, losses and tenants,
on the emulated WAN. Writes a CSV of every run and a PNG plot of goodput. Needs root.

    sudo .venv/bin/python scripts/allreduce_sweep.py --sites TYO,NYC,LON --sizes 16384,65536,262144 \\
        --losses 0,0.01,0.02 --tenants 1,2 --out runs/sweep

The WAN is brought up once per loss rate (loss is a property of the links); each point runs INC with
the given number of tenants at once and, for one tenant, the ring baseline.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from topo.allreduce_run import AllreduceSpec, run_baseline, run_inc
from topo.options import require_root
from topo.session import running_wan


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sites", default="TYO,NYC,LON")
    ap.add_argument("--workers-per-site", type=int, default=2)
    ap.add_argument("--sizes", type=ints, default=ints("16384,65536,262144"), help="elements per worker")
    ap.add_argument("--losses", type=floats, default=floats("0,0.02"), help="loss fractions per WAN link")
    ap.add_argument("--tenants", type=ints, default=ints("1,2"), help="concurrent INC tenants")
    ap.add_argument("--mode", choices=("int32", "float32"), default="int32")
    ap.add_argument("--slots", type=int, default=0, help="slots per tenant (default: as many as needed)")
    ap.add_argument("--out", type=Path, default=Path("runs/sweep"))
    args = ap.parse_args()
    if not require_root("sweep"):
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, object]] = []
    for loss in args.losses:
        wan_args = argparse.Namespace(
            topology=None,
            sites=args.sites,
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
            for size in args.sizes:
                for tenants in args.tenants:
                    spec = AllreduceSpec(size, args.mode, tenants, args.slots)
                    inc = run_inc(running, spec, print)
                    rows.append(
                        {
                            "loss": loss,
                            "elements": size,
                            "tenants": tenants,
                            "algorithm": "inc",
                            "seconds": max(r.seconds for r in inc),
                            "goodput_elems_per_s": sum(r.goodput for r in inc),
                            "exact": all(r.exact for r in inc),
                        }
                    )
                    print(rows[-1], flush=True)
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
