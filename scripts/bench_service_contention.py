"""How long one tenant's small job takes while another tenant's large job is being installed, beside the
small job's own time on an idle service (its bound: it cannot be faster than alone).

Real p4kit-switch processes (three sites, no Mininet) and a real controller service process, driven
over HTTP. Wall-clock times (the question is how long a caller waits), so they move with the machine's
load; the service's CPU time for the whole run is printed too (/proc/PID/stat).

    .venv/bin/python scripts/bench_service_contention.py [--big-slots 2048] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.controller.service_fixtures import running_switches, start_service, stop  # noqa: E402
from topo.pipeline import build_pipeline  # noqa: E402

SMALL = {"workers": ["TYOw2", "NYCw2"], "slots": 2}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_post(client, body: dict) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    t0 = time.monotonic()
    r = client.post("/jobs", json=body)
    assert r.status_code == 201, r.text
    return time.monotonic() - t0, r.json()["id"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--big-slots", type=int, default=2048, help="slots per switch of the large job")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-contention-"))
    big_body = {"workers": ["TYOw1", "NYCw1", "LONw1"], "slots": args.big_slots}
    with running_switches(tmp, build_pipeline(tmp / "build")) as sw:
        svc = start_service(sw, tmp / "controller.db")
        try:
            with svc.client() as admin:
                tokens = [admin.post("/tenants", json={"name": n}).json()["token"] for n in ("big", "small")]
            big, small = svc.client(tokens[0]), svc.client(tokens[1])
            alone, big_alone, during = [], [], []
            for _ in range(args.repeat):
                t, job = timed_post(small, SMALL)
                alone.append(t)
                small.delete(f"/jobs/{job}")
                t, job = timed_post(big, big_body)
                big_alone.append(t)
                big.delete(f"/jobs/{job}")
                result: dict = {}
                thread = threading.Thread(target=lambda r=result: r.update(big=timed_post(big, big_body)))
                thread.start()
                time.sleep(min(big_alone) / 4)  # well inside the large job's installation
                t, job = timed_post(small, SMALL)
                still = thread.is_alive()
                thread.join()
                during.append(t)
                small.delete(f"/jobs/{job}")
                big.delete(f"/jobs/{result['big'][1]}")
                if not still:
                    print("note: the large job finished before the small one was answered", file=sys.stderr)
            cpu = cpu_seconds(svc.proc.pid)
        finally:
            stop(svc.proc)
    print(
        f"large job ({args.big_slots} slots x 3 switches) alone: median {statistics.median(big_alone):.3f} s"
    )
    print(f"small job alone (its bound):            median {statistics.median(alone):.3f} s")
    print(f"small job during the large one:         median {statistics.median(during):.3f} s")
    print(f"service CPU for the whole run: {cpu:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
