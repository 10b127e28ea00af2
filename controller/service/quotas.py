"""Per-tenant limits: jobs held, slots held over all switches and rounds, rounds per job.

Why: the switches' cells, multicast groups and table entries are shared by every tenant; without a limit
one tenant can take them all, and one huge schedule (thousands of rounds) keeps the switches busy for
a minute before failing on a table's size. A request over a limit is refused before anything is planned
or written, with a 403 that names the limit, the tenant's use and what the request asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.service.errors import QuotaExceeded
from controller.service.plans import Plan
from controller.service.store import JobRow

DEFAULT_JOBS = 32
DEFAULT_SLOTS = 16384  # a switch holds 4096 slots (8192 cells): a tenant may use four switches' worth
DEFAULT_ROUNDS = 64  # inc_tenants holds 1024 (tenant, round) entries per switch, shared by all jobs


@dataclass(frozen=True)
class Quotas:
    jobs: int = DEFAULT_JOBS  # jobs a tenant holds at once
    slots: int = DEFAULT_SLOTS  # slots a tenant holds, summed over every switch and round of its jobs
    rounds: int = DEFAULT_ROUNDS  # rounds in one job's schedule

    def as_dict(self) -> dict[str, int]:
        return {"jobs": self.jobs, "slots": self.slots, "rounds": self.rounds}


def plan_slots(plan: Plan) -> int:
    return sum(sr.cells.cells // 2 for sr in plan.switch_rounds)


def check_job_count(quotas: Quotas, tenant: str, jobs: list[JobRow]) -> None:
    if len(jobs) >= quotas.jobs:
        raise QuotaExceeded(
            f"tenant {tenant} holds {len(jobs)} job(s), its quota is {quotas.jobs}: delete one first"
        )


def check_rounds(quotas: Quotas, rounds: int) -> None:
    if rounds > quotas.rounds:
        raise QuotaExceeded(f"the schedule has {rounds} rounds, the quota is {quotas.rounds} rounds per job")


def check_slots(quotas: Quotas, tenant: str, held: int, plan: Plan, replacing: Plan | None = None) -> None:
    """`held`: slots of the tenant's jobs now; `replacing`: the plan the new one takes over from."""
    want = plan_slots(plan)
    after = held + want - (plan_slots(replacing) if replacing is not None else 0)
    if after > quotas.slots:
        raise QuotaExceeded(
            f"the job needs {want} slots over its switches and rounds; tenant {tenant} holds {held} and "
            f"its quota is {quotas.slots}: ask for fewer slots or rounds, or delete a job"
        )


def tenant_slots(jobs: list[JobRow]) -> int:
    return sum(plan_slots(Plan.from_json(j.plan)) for j in jobs)
