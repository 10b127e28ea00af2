"""Request bodies of the REST API (pydantic v2): validated before the core sees them, with messages
that say what to change. Unknown fields are refused, so a typo never silently means a default."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from controller.service.plans import JobSpec, ScheduleSpec

Sites = list[Annotated[str, Field(min_length=1, max_length=64)]]


class TenantCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(
        pattern=r"^[a-z][a-z0-9-]{0,31}$",
        description="1-32 lower-case letters, digits and '-', starting with a letter; also the tenant's id",
        examples=["acme"],
    )


class AutoSchedule(BaseModel):
    """Ask the schedule optimiser (issue 6) for the fastest rounds for this WAN and edge memory."""

    model_config = ConfigDict(extra="forbid")
    mode: Literal["auto"]
    memory: str = Field("4MB", description="edge memory per site, e.g. 4MB, 256MB, 1GiB", examples=["4MB"])
    size: str = Field("64MB", description="bytes each site contributes per round", examples=["64MB"])
    bandwidth: str | None = Field(
        None, description="WAN rate, e.g. 10Gbit (default: the topology's real rate)"
    )
    families: list[str] | None = Field(None, description="restrict the search to these schedule families")


class ExplicitSchedule(BaseModel):
    """Rounds of cliques of sites, e.g. [[["TYO","NYC"]], [["NYC","LON"]]]; a site in no clique idles."""

    model_config = ConfigDict(extra="forbid")
    mode: Literal["explicit"]
    rounds: list[list[Sites]] = Field(min_length=1, max_length=4096)


Schedule = Annotated[AutoSchedule | ExplicitSchedule, Field(discriminator="mode")]


# The rule _schedule_fits_strategy checks, in the schema too (OpenAPI 3.1 is JSON Schema 2020-12), so
# that clients and generated requests know it: core-cliques needs a schedule, the others take none.
_SCHEDULE_RULE = {
    "if": {"properties": {"strategy": {"const": "core-cliques"}}, "required": ["strategy"]},
    "then": {"required": ["schedule"], "properties": {"schedule": {"not": {"type": "null"}}}},
    "else": {"properties": {"schedule": {"type": "null"}}},
}


class JobCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"allOf": [_SCHEDULE_RULE]})
    name: str = Field("", max_length=64, description="a label of your choice")
    workers: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        min_length=1,
        max_length=1024,
        description="worker host names, e.g. TYOw1",
        examples=[["TYOw1", "NYCw1"]],
    )
    strategy: Literal["core-tree", "core-cliques", "ring-baseline"] = Field(
        "core-tree",
        description="core-tree: one reduction tree over all workers; core-cliques: a rotating schedule of "
        "cliques, each with its own tree per round; ring-baseline: host ring allreduce, no switch state",
    )
    format: Literal["int32", "float32"] = Field("int32", description="number format of the workers' values")
    slots: int = Field(256, ge=1, le=4096, description="aggregation slots per switch and round: the window")
    schedule: Schedule | None = Field(None, description="for core-cliques: auto or explicit rounds")

    @field_validator("workers")
    @classmethod
    def _no_duplicates(cls, workers: list[str]) -> list[str]:
        dups = sorted({w for w in workers if workers.count(w) > 1})
        if dups:
            raise ValueError(f"worker(s) listed twice: {', '.join(dups)}")
        return workers

    @model_validator(mode="after")
    def _schedule_fits_strategy(self) -> JobCreate:
        if self.strategy == "core-cliques" and self.schedule is None:
            raise ValueError('strategy core-cliques needs a schedule: {"mode": "auto"} or explicit rounds')
        if self.strategy != "core-cliques" and self.schedule is not None:
            raise ValueError(f"strategy {self.strategy} takes no schedule (only core-cliques rotates)")
        return self

    def to_spec(self) -> JobSpec:
        return JobSpec(
            workers=list(self.workers),
            strategy=self.strategy,
            format=self.format,
            slots=self.slots,
            name=self.name,
            schedule=schedule_spec(self.schedule) if self.schedule else None,
        )


class ScheduleReplace(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schedule: Schedule
    drain_s: float = Field(
        0.0, ge=0, le=3600, description="keep the old rounds this many seconds after the new ones are in"
    )


def schedule_spec(s: AutoSchedule | ExplicitSchedule) -> ScheduleSpec:
    if isinstance(s, ExplicitSchedule):
        return ScheduleSpec("explicit", rounds=[[list(c) for c in rnd] for rnd in s.rounds])
    return ScheduleSpec("auto", memory=s.memory, size=s.size, bandwidth=s.bandwidth, families=s.families)


class ErrorBody(BaseModel):
    """Every error answer: a sentence, and for a malformed request pydantic's list of what is wrong."""

    error: str = Field(description="what went wrong and, where it helps, what to change")
    detail: list[dict] | None = Field(None, description="for 422 on a malformed body: each problem found")


def job_example(first_workers: list[str]) -> dict:
    """A POST /jobs body this network accepts, from the first worker host of each site."""
    return {"name": "resnet", "workers": first_workers[:3], "strategy": "core-tree", "slots": 64}
