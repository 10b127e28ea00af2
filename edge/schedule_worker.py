"""Workers that follow a rotating schedule: each round, an allreduce within the worker's clique, then the
clique's average (decentralised averaging; docs/api.md, "rotating schedules").

The controller installs one tree per clique and round, keyed in the switches by the round number the
packets carry, so moving to the next round is nothing but a different number in the header: no message
to the controller, no barrier. This module reuses `edge.worker.IncWorker`: between calls it moves the
worker to the next round (tree, clique size, that round's timing parameters and its own RTT estimate and
window: rounds of one schedule have trees of very different RTTs) and keeps a chunk counter per round,
because a round's cells are used again in the next cycle of the schedule and a chunk number must never
go back there (the switch would take it for a stale packet).

What a worker is told is one `edge.spec.WorkerSpec` (the job view carries it per worker, under "spec").
`python -m edge.schedule_worker SPEC.json` runs one worker from a JSON spec (see `main`).
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from edge.spec import RoundSpec, WorkerSpec
from edge.worker import IncJob, IncWorker


def spec_from_job_view(view: dict, host: str, stall_timeout_s: float | None = None) -> WorkerSpec:
    """Worker `host`'s spec from GET /jobs/{id} of the controller (its "workers" entry's "spec")."""
    me = next((w for w in view["workers"] if w["host"] == host), None)
    if me is None:
        raise ValueError(f"host {host} is not a worker of job {view['id']}")
    spec = WorkerSpec.model_validate(me["spec"])
    if stall_timeout_s is not None:
        spec = spec.model_copy(update={"stall_timeout_s": stall_timeout_s})
    return spec


@dataclass
class ScheduleWorker:
    spec: WorkerSpec
    chunks: dict[int, int] = field(default_factory=dict)  # round -> next chunk number
    rounds_done: int = 0

    def __post_init__(self) -> None:
        self.worker = IncWorker(IncJob.from_spec(self.spec) if self.spec.rounds else self._idle_job())

    def _idle_job(self) -> IncJob:
        """A worker that sits out every round still holds its port (it is the job's)."""
        return IncJob(self.spec.tenant, self.spec.switch_ip, self.spec.nslots, 1, self.spec.epoch)

    def close(self) -> None:
        self.worker.close()

    def __enter__(self) -> ScheduleWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def clique_sum(self, role: RoundSpec, values: np.ndarray, mode: str) -> np.ndarray:
        """The sum over this worker's clique in `role`'s round."""
        w = self.worker
        w.job.enter(role)
        w.next_chunk = self.chunks.get(role.round, 0)
        try:
            return w.allreduce(values, mode)
        finally:
            self.chunks[role.round] = w.next_chunk

    def step(self, values: np.ndarray, index: int, mode: str = "int32") -> np.ndarray:
        """Round `index` of the schedule (cyclic): the clique's average, or the values unchanged."""
        role = self.spec.period[index % len(self.spec.period)]
        self.rounds_done += 1
        if role is None or role.clique_size < 2:
            return values
        total = self.clique_sum(role, values, mode)
        if mode == "int32":
            quotient, remainder = np.divmod(total.astype(np.int64), role.clique_size)
            if np.any(remainder):
                raise ValueError(
                    f"round {role.round}: a sum is not divisible by the clique size {role.clique_size}; "
                    "exact int32 averaging needs divisible values (use float32 otherwise)"
                )
            return quotient.astype(np.int32)
        return (total / role.clique_size).astype(np.float32)

    def average(self, values: np.ndarray, rounds: int, mode: str = "int32") -> np.ndarray:
        """Run `rounds` rounds of the schedule from its first round; returns this worker's final values."""
        for i in range(rounds):
            values = self.step(values, i, mode)
        return values


def main(argv: list[str] | None = None) -> int:
    """Spec: {"worker": WorkerSpec (JSON), "input": .npy, "out": .npy, "report": .json, "rounds": N,
    "mode": "int32"|"float32", "start_at": unix time}."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m edge.schedule_worker SPEC.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(args[0]).read_text())
    report: dict = {}
    code = 0
    try:
        worker = WorkerSpec.model_validate(spec["worker"])
        values = np.load(spec["input"])
        time.sleep(max(0.0, float(spec.get("start_at", 0)) - time.time()))
        t0 = time.time()
        with ScheduleWorker(worker) as sw:
            out = sw.average(values, int(spec["rounds"]), spec.get("mode", "int32"))
            report = {"seconds": time.time() - t0, "rounds": sw.rounds_done, "stats": vars(sw.worker.stats)}
        np.save(spec["out"], out)
    except Exception as exc:  # the report carries the error to whoever launched us
        report = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        code = 1
    Path(spec["report"]).write_text(json.dumps(report))
    return code


if __name__ == "__main__":
    sys.exit(main())
