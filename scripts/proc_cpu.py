#!/usr/bin/env python3
"""Where an experiment's CPU goes: run a command and sample the CPU time of every p4kit-switch
thread and every worker process (edge.runner) from /proc every 20 ms.

Why: an allreduce's distance to its bound is set either by the CPU (switches, workers) or by the
protocol and the network. The machine's two cores are shared by everything, so the question is how
much of them the experiment used while it ran. The window is the span in which the workers ran and
the switches forwarded (from the first switch activity after the first worker started until the
last worker exited); it excludes start-up and pipeline loading. The resolution is the kernel's clock
tick (10 ms), so a figure is good to about 0.01 CPU-second per thread.

Usage: sudo .venv/bin/python scripts/proc_cpu.py [--json] -- tributary allreduce --sites ... --json
Prints per switch (by --device-id) its threads' CPU seconds in the window (the busiest is the port
loop, which runs the data plane), the workers' total, and the cores used on average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")


def _cpu(path: str) -> float:
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def sample() -> dict[str, float]:
    """CPU seconds so far of every switch thread ('swN/TID') and worker process ('wkPID')."""
    rows: dict[str, float] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            if b"p4kit-switch" in cmd or b"p4kit.switch.cli" in cmd:
                dev = (
                    cmd.split(b"--device-id\0")[1].split(b"\0")[0].decode()
                    if b"--device-id\0" in cmd
                    else pid
                )
                for tid in os.listdir(f"/proc/{pid}/task"):
                    rows[f"sw{dev}/{tid}"] = _cpu(f"/proc/{pid}/task/{tid}/stat")
            elif b"edge.runner" in cmd:
                rows[f"wk{pid}"] = _cpu(f"/proc/{pid}/stat")
        except (OSError, IndexError):
            pass  # the process ended between listing and reading
    return rows


def window(series: list[tuple[float, dict[str, float]]]) -> dict[str, object]:
    """CPU per switch thread and of the workers over the span the workers ran and the switches
    worked; a process that ended keeps its last sample."""
    wk_times = [t for t, rows in series if any(k.startswith("wk") for k in rows)]
    if not wk_times:
        return {"error": "no worker process (edge.runner) was seen"}
    first_wk, last_wk = wk_times[0], wk_times[-1]
    start = None
    prev: dict[str, float] = {}
    for t, rows in series:
        if t >= first_wk and any(k.startswith("sw") and v > prev.get(k, v) for k, v in rows.items()):
            start = t
            break
        prev = rows
    if start is None:
        return {"error": "the switches did no work while the workers ran"}
    before = prev  # the sample just before the first activity
    last: dict[str, float] = {}
    for t, rows in series:
        if t > last_wk:
            break
        last.update(rows)
    per: dict[str, float] = {}
    workers = 0.0
    for k, v in last.items():
        d = v - before.get(k, 0.0 if k.startswith("wk") else v)
        if k.startswith("wk"):
            workers += d
        elif d > 0:
            per[k] = round(d, 2)
    span = last_wk - start
    total = sum(per.values()) + workers
    switches: dict[str, dict[str, float]] = {}
    for k, v in per.items():
        dev, tid = k.split("/")
        switches.setdefault(dev, {})[tid] = v
    return {
        "window_s": round(span, 2),
        "switch_threads_cpu_s": switches,
        "switches_cpu_s": round(sum(per.values()), 2),
        "workers_cpu_s": round(workers, 2),
        "cores_used": round(total / span, 2) if span > 0 else None,
        "cores": os.cpu_count(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    args = ap.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("give the command to run after --")
    series: list[tuple[float, dict[str, float]]] = []
    done = threading.Event()

    def sampler() -> None:
        while not done.is_set():
            series.append((time.monotonic(), sample()))
            time.sleep(0.02)

    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    done.set()
    th.join()
    report = {"command_output": proc.stdout.strip().splitlines()[-1:] or [""], **window(series)}
    print(json.dumps(report) if args.json else json.dumps(report, indent=2))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
