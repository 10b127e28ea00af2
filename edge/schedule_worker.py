"""Workers that follow a rotating schedule: each round, an allreduce within the worker's clique, then the
clique's average (decentralised averaging; docs/api.md, "rotating schedules").

The controller installs one tree per clique and round, keyed in the switches by the round number the
packets carry, so moving to the next round is nothing but a different number in the header: no message
to the controller, no barrier. This module reuses `edge.worker.IncWorker` unchanged: it switches the
worker's round and clique size between calls and keeps a chunk counter per round, because a round's
cells are used again in the next cycle of the schedule and a chunk number must never go back there
(the switch would take it for a stale packet).

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

from edge.worker import IncJob, IncWorker


@dataclass(frozen=True)
class Role:
    """This worker's part in one round of the schedule (None in `ScheduleJob.period`: it sits out)."""

    round: int  # the data-plane round number (from the controller's job view)
    clique_size: int  # workers summed in this worker's clique that round


@dataclass
class ScheduleJob:
    tenant: int
    switch_ip: str
    nslots: int
    period: list[Role | None]  # one entry per round of the schedule's cycle
    rto_s: float = 1.0
    stall_timeout_s: float = 30.0

    @classmethod
    def from_job_view(cls, view: dict, host: str, stall_timeout_s: float = 30.0) -> ScheduleJob:
        """From GET /jobs/{id} of the controller, for the worker `host`."""
        me = next((w for w in view["workers"] if w["host"] == host), None)
        if me is None:
            raise ValueError(f"host {host} is not a worker of job {view['id']}")
        roles = {r["round"]: Role(r["round"], r["clique_size"]) for r in me["rounds"]}
        rtos = [r["rto_s"] for r in me["rounds"] if r.get("rto_s")]
        return cls(
            tenant=view["id"],
            switch_ip=me["switch_ip"],
            nslots=view["slots"],
            period=[roles.get(t["round"]) for t in view["trees"]],
            rto_s=max(rtos, default=1.0),
            stall_timeout_s=stall_timeout_s,
        )

    def to_spec(self) -> dict:
        """The "job" part of a worker spec for `main` (JSON: a role is [round, clique_size] or null)."""
        return {
            "tenant": self.tenant,
            "switch_ip": self.switch_ip,
            "nslots": self.nslots,
            "period": [[r.round, r.clique_size] if r else None for r in self.period],
            "rto_s": self.rto_s,
            "stall_timeout_s": self.stall_timeout_s,
        }


@dataclass
class ScheduleWorker:
    job: ScheduleJob
    chunks: dict[int, int] = field(default_factory=dict)  # round -> next chunk number
    rounds_done: int = 0

    def __post_init__(self) -> None:
        first = next((r for r in self.job.period if r is not None), None)
        self.worker = IncWorker(
            IncJob(
                tenant=self.job.tenant,
                switch_ip=self.job.switch_ip,
                nslots=self.job.nslots,
                workers=first.clique_size if first else 1,
                round=first.round if first else 0,
                rto_s=self.job.rto_s,
                stall_timeout_s=self.job.stall_timeout_s,
            )
        )

    def close(self) -> None:
        self.worker.close()

    def __enter__(self) -> ScheduleWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def clique_sum(self, role: Role, values: np.ndarray, mode: str) -> np.ndarray:
        """The sum over this worker's clique in `role`'s round."""
        w = self.worker
        w.job.round, w.job.workers = role.round, role.clique_size
        w.next_chunk = self.chunks.get(role.round, 0)
        try:
            return w.allreduce(values, mode)
        finally:
            self.chunks[role.round] = w.next_chunk

    def step(self, values: np.ndarray, index: int, mode: str = "int32") -> np.ndarray:
        """Round `index` of the schedule (cyclic): the clique's average, or the values unchanged."""
        role = self.job.period[index % len(self.job.period)]
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
    """Spec: {"job": ScheduleJob fields with "period": [[round, clique_size] | null, ...],
    "input": .npy, "out": .npy, "report": .json, "rounds": N, "mode": "int32"|"float32",
    "start_at": unix time}."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m edge.schedule_worker SPEC.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(args[0]).read_text())
    report: dict = {}
    code = 0
    try:
        j = dict(spec["job"])
        j["period"] = [Role(*p) if p else None for p in j["period"]]  # the inverse of to_spec
        values = np.load(spec["input"])
        time.sleep(max(0.0, float(spec.get("start_at", 0)) - time.time()))
        t0 = time.time()
        with ScheduleWorker(ScheduleJob(**j)) as sw:
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
