"""Run the allreduce many times and catch its rare long runs (a worker that waits seconds for its last
results while the others are done).

    sudo .venv/bin/python scripts/repro_stall.py --runs 30                      # three sites
    sudo .venv/bin/python scripts/repro_stall.py --runs 5 --sites all           # nine sites
    .venv/bin/python scripts/repro_stall.py --read /tmp/repro_stall/20261202-0300  # table of kept runs

Each run is `tributary allreduce ... --json` with its own run directory, under
`flock /tmp/tributary-heavy.lock`, taken and released per run so that others can measure in between.
Kept per run: the JSON line (`result.json`) and every worker's report (`allreduce/inc/t*-rank*.report.json`,
which carries the worker's `stats.tail`: its last retransmissions and results and the longest wait a
repair was given); the result vectors are deleted once the run has checked them. The table flags a run
that took more than `--factor` times the median, and for it names the worker that finished last, its
last result, the longest repair wait, and the slowest worker's tail probes. Wall times: they are what a
stall costs, and they are noisy while others use the machine (the JSON's CPU figures are beside them).
Columns: retransmissions, the lost repairs among them (rep), tail probes (prb), repair copies (copy,
docs/protocol.md), when the slowest worker's last new chunk left (sent, s; the link's rate alone takes
the bound's busiest-link term), and the machine's busy cores.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ALL_SITES = "TYO,HKG,SIN,NYC,CHI,LAX,LON,FRA,AMS"
LOCK = "/tmp/tributary-heavy.lock"
ROOT = Path("/tmp/repro_stall")


def tributary(args: argparse.Namespace) -> list[str]:
    """The command line of tributary: with --tree, `python -m topo.cli` in that copy (its modules come
    first on the path, and the workers' too: they start as `python -m edge.runner` in the same working
    directory)."""
    return (
        [sys.executable, "-m", "topo.cli"]
        if args.tree
        else [str(Path(sys.executable).with_name("tributary"))]
    )


def command(args: argparse.Namespace, run_dir: Path) -> list[str]:
    """The goal's command (docs/switch.md, "The allreduce against its bound"), with this run's directory."""
    sites = ALL_SITES if args.sites == "all" else args.sites
    return [
        *tributary(args), "allreduce", "--sites", sites, "--workers-per-site", "2",
        "--elements", str(args.elements), "--loss", str(args.loss), "--mode", args.mode,
        "--compare", args.compare, "--json", "--run-dir", str(run_dir),
        *(["--switch", str(args.switch)] if args.switch else []), *args.extra,
    ]  # fmt: skip


def tree_switch(tree: Path, out: Path) -> Path:
    """A p4kit-switch that runs `tree`'s data plane. The installed `p4kit-switch` imports the working
    tree's p4kit, which others change while the runs go on: a before/after would then compare two
    switches, not two transports. (topo.switch_node recognises p4kit by the name.)"""
    path = out / "p4kit-switch"
    path.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(tree.resolve())!r})\n"
        "from p4kit.switch.cli import main\nsys.exit(main())\n"
    )
    path.chmod(0o755)
    return path


def worker_reports(run_dir: Path) -> list[dict]:
    """Every INC worker's report of the run, each with its file name."""
    out = []
    for path in sorted((run_dir / "allreduce" / "inc").glob("t*-rank*.report.json")):
        report = json.loads(path.read_text())
        report["file"] = path.name
        out.append(report)
    return out


def summarise(run_dir: Path) -> dict:
    """One run's row: its seconds and bound, and what its last worker waited for."""
    row: dict = {"run": run_dir.name, "seconds": None}
    result_path = run_dir / "result.json"
    if not result_path.exists():
        row["error"] = "no result"
        return row
    try:
        result = json.loads(result_path.read_text().strip().splitlines()[-1])
    except (ValueError, IndexError):
        row["error"] = "unreadable result"
        return row
    inc = result.get("inc", {})
    row.update(seconds=inc.get("seconds"), bound_s=inc.get("bound_s"), exact=result.get("exact"))
    stats = inc.get("stats", {})
    row.update(
        retrans=stats.get("retransmissions"),
        repeats=stats.get("repeat_retransmissions"),
        probes=stats.get("tail_probes"),
        copies=stats.get("repair_copies"),
        all_sent_s=stats.get("max_all_sent_s"),
        cores=inc.get("machine_cores_busy"),
    )
    reports = [r for r in worker_reports(run_dir) if "error" not in r]
    if reports:
        start = min(r["start"] for r in reports)
        ends = sorted((r["end"] - start, n) for n, r in enumerate(reports))
        last_s, last = ends[-1][0], reports[ends[-1][1]]
        tail = last.get("stats", {}).get("tail", {})
        row.update(
            first_end_s=round(ends[0][0], 3),
            last_worker=last["file"].split(".")[0],
            last_end_s=round(last_s, 3),
            last_srtt_ms=last["stats"].get("srtt_ms"),
            last_pace=last["stats"].get("min_pace_mbit"),
            last_result=(tail.get("results") or [None])[-1],
            longest_wait=tail.get("longest_wait"),
        )
    return row


def run_once(args: argparse.Namespace, run_dir: Path) -> dict:
    """One run under the heavy lock (taken here, so that --timeout counts the run, not the wait for
    the lock). A run over its time is interrupted, as Ctrl-C would (tributary then stops its WAN), and
    what it may have left is cleaned before the lock goes: the next run, anybody's, needs the names."""
    run_dir.mkdir(parents=True)
    with open(LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.Popen(
            command(args, run_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=args.tree
        )
        try:
            out, err = proc.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            try:
                out, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            err += f"\nrepro_stall: interrupted after {args.timeout} s\n"
            subprocess.run([*tributary(args), "clean"], cwd=args.tree, capture_output=True, timeout=120)
    (run_dir / "result.json").write_text(out)
    (run_dir / "stderr.txt").write_text(err)
    for vec in (run_dir / "allreduce").rglob("*.npy"):  # checked by the run; 1 MiB each
        vec.unlink()
    row = summarise(run_dir)
    if proc.returncode:
        row["error"] = f"exit {proc.returncode}"
    return row


def table(rows: list[dict], factor: float) -> str:
    times = [r["seconds"] for r in rows if r.get("seconds")]
    median = statistics.median(times) if times else 0.0
    lines = [
        f"{'run':<24} {'s':>6} {'xbound':>6} {'exact':>5} {'retr':>5} {'rep':>4} {'prb':>3} {'copy':>5} "
        f"{'sent':>6} {'cores':>5} "
        f"{'first':>6} {'last':>6}  last worker, its last result [t, chunk, retries], longest repair wait "
        "[sent, chunk, retries, wait, backlog, queue]"
    ]
    for r in rows:
        s = r.get("seconds")
        flag = "  STALL" if s and median and s > factor * median else ""
        if s is None:
            lines.append(f"{r['run']:<24} {r.get('error', '?')}")
            continue
        bound = r.get("bound_s") or 0.0
        lines.append(
            f"{r['run']:<24} {s:6.3f} {s / bound if bound else 0:6.2f} {r.get('exact')!s:>5} "
            f"{r.get('retrans') or 0:5d} {r.get('repeats') or 0:4d} {r.get('probes') or 0:3d} "
            f"{r.get('copies') or 0:5d} {r.get('all_sent_s') or 0:6.3f} {r.get('cores') or 0:5.2f} "
            f"{r.get('first_end_s') or 0:6.3f} {r.get('last_end_s') or 0:6.3f}  "
            f"{r.get('last_worker')} {r.get('last_result')} {r.get('longest_wait')}{flag}"
        )
    if times:
        bound = next((r["bound_s"] for r in rows if r.get("bound_s")), 0.0)
        stalls = sum(1 for t in times if t > factor * median)
        lines.append(
            f"{len(times)} runs: median {median:.3f} s, min {min(times):.3f}, max {max(times):.3f} "
            f"(bound {bound} s: median {median / bound if bound else 0:.2f}x, max "
            f"{max(times) / bound if bound else 0:.2f}x); above {factor}x the median: {stalls}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--sites", default="TYO,NYC,LON", help="comma-separated, or 'all' (the nine)")
    ap.add_argument("--elements", type=int, default=262144)
    ap.add_argument("--loss", type=float, default=0.02)
    ap.add_argument("--mode", default="int32")
    ap.add_argument(
        "--compare", default="none",
        help="host baselines after INC (default none: they run after the INC call and do not change it)",
    )  # fmt: skip
    ap.add_argument("--factor", type=float, default=3.0, help="flag runs above this times the median")
    ap.add_argument("--out", type=Path, default=None, help=f"where the runs are kept (default {ROOT}/<time>)")
    ap.add_argument("--read", type=Path, default=None, help="only print the table of the runs kept there")
    ap.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds one run may take (not counting the wait for the lock)",
    )
    ap.add_argument(
        "--tree", type=Path, default=None,
        help="run the code of this copy of the tree, its switch included (e.g. `git archive REV | tar -x -C DIR`), "
        "for a before/after",
    )  # fmt: skip
    ap.add_argument("--json", action="store_true", help="the rows as one JSON line after the table")
    ap.add_argument("extra", nargs="*", help="more `tributary allreduce` options, after --")
    args = ap.parse_args(argv)
    if args.read is not None:
        rows = [summarise(d) for d in sorted(args.read.iterdir()) if d.is_dir()]
    else:
        out = args.out or ROOT / time.strftime("%Y%m%d-%H%M%S")
        out.mkdir(parents=True, exist_ok=True)
        args.switch = tree_switch(args.tree, out) if args.tree else None
        rows = []
        for n in range(args.runs):
            row = run_once(args, (out / f"run{n:03d}").resolve())
            rows.append(row)
            print(
                f"run {n}: {row.get('seconds')} s, last worker {row.get('last_end_s')} s "
                f"{row.get('error', '')}",
                file=sys.stderr,
                flush=True,
            )
        print(f"runs kept in {out}", file=sys.stderr)
    print(table(rows, args.factor))
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
