"""Request bodies of the REST API (pydantic v2): validated before the core sees them, with messages
that say what to change. Unknown fields are refused, so a typo never silently means a default."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from controller.service.plans import EdgeStageSpec, JobSpec, ScheduleSpec

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


class EdgeStage(BaseModel):
    """The edge stages of an Edge-INC job, at real scale: the service scales memory and vector by the
    emulated link rate over the real one (DESIGN.md section 6), as `tributary schedule --run` does."""

    model_config = ConfigDict(extra="forbid")
    memory: str = Field("4MB", description="each site's stage memory, e.g. 4MB, 256MB", examples=["4MB"])
    size: str = Field("64MB", description="bytes each site contributes per round", examples=["64MB"])
    max_rate_mbit: float | None = Field(
        None,
        gt=0,
        le=100_000,
        description="pace the streams as if the links ran at most this fast (Mbit/s of frames), e.g. to "
        "keep a software data plane within its CPU budget; default: the emulated links' rate",
    )


# The rules _schedule_fits_strategy checks, in the schema too (OpenAPI 3.1 is JSON Schema 2020-12), so
# that clients and generated requests know them: core-cliques and edge-cliques need a schedule, the
# others take none; only the edge strategies take `edge`, and an automatic schedule of edge-cliques
# names the memory and size itself.
ROTATING = ("core-cliques", "edge-cliques")  # the strategies that run a schedule
EDGE_STRATEGIES = ("edge-cliques", "edge-all-to-all")

_SCHEDULE_RULE = {
    "if": {"properties": {"strategy": {"enum": list(ROTATING)}}, "required": ["strategy"]},
    "then": {"required": ["schedule"], "properties": {"schedule": {"not": {"type": "null"}}}},
    "else": {"properties": {"schedule": {"type": "null"}}},
}
_EDGE_RULE = {
    "if": {"properties": {"strategy": {"enum": list(EDGE_STRATEGIES)}}, "required": ["strategy"]},
    "then": {
        "if": {
            "properties": {"schedule": {"properties": {"mode": {"const": "auto"}}, "required": ["mode"]}},
            "required": ["schedule"],
        },
        "then": {
            "properties": {"edge": {"not": {"anyOf": [{"required": ["memory"]}, {"required": ["size"]}]}}}
        },
    },
    "else": {"properties": {"edge": {"type": "null"}}},
}


class JobCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"allOf": [_SCHEDULE_RULE, _EDGE_RULE]})
    name: str = Field("", max_length=64, description="a label of your choice")
    workers: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        min_length=1,
        max_length=1024,
        description="worker host names, e.g. TYOw1",
        examples=[["TYOw1", "NYCw1"]],
    )
    strategy: Literal["core-tree", "core-cliques", "ring-baseline", "edge-cliques", "edge-all-to-all"] = (
        Field(
            "core-tree",
            description="core-tree: one reduction tree over all workers; core-cliques: a rotating schedule of "
            "cliques, each with its own tree per round; ring-baseline: host ring allreduce, no switch state; "
            "edge-cliques: Edge-INC (each site multicasts its vector once, the edge stages sum) on a rotating "
            "schedule of cliques of sites; edge-all-to-all: Edge-INC, every site with every other in one round",
        )
    )
    format: Literal["int32", "float32"] = Field("int32", description="number format of the workers' values")
    slots: int = Field(256, ge=1, le=4096, description="aggregation slots per switch and round: the window")
    min_slots: int | None = Field(
        None,
        ge=1,
        le=4096,
        description="core-tree and core-cliques: the least window the job accepts where other jobs hold the "
        "switches' cells (the slots are halved down to it); at most `slots`; default a quarter of `slots`",
    )
    fallback: Literal["host", "none"] = Field(
        "host",
        description="core-tree: what the job runs on when not even `min_slots` fit: host (the workers run the "
        "hierarchical host allreduce, nothing is held on the switches; the view gives them its peers) or "
        "none (refused, 409). A core-cliques job is refused there (a rotating schedule has no host path)",
    )
    schedule: Schedule | None = Field(
        None, description="for core-cliques and edge-cliques: auto (the optimiser's) or explicit rounds"
    )
    edge: EdgeStage | None = Field(
        None,
        description="for edge-cliques and edge-all-to-all: the stages' memory, the vector size and the "
        "pacing cap (default 4MB, 64MB, the links' rate); with an automatic schedule only the cap (the "
        "memory and size are the schedule's)",
    )

    @field_validator("workers")
    @classmethod
    def _no_duplicates(cls, workers: list[str]) -> list[str]:
        dups = sorted({w for w in workers if workers.count(w) > 1})
        if dups:
            raise ValueError(f"worker(s) listed twice: {', '.join(dups)}")
        return workers

    @model_validator(mode="after")
    def _schedule_fits_strategy(self) -> JobCreate:
        if self.min_slots is not None and self.min_slots > self.slots:
            raise ValueError(f"min_slots ({self.min_slots}) must not exceed slots ({self.slots})")
        if self.strategy in ROTATING and self.schedule is None:
            raise ValueError(
                f'strategy {self.strategy} needs a schedule: {{"mode": "auto"}} or explicit rounds'
            )
        if self.strategy not in ROTATING and self.schedule is not None:
            raise ValueError(
                f"strategy {self.strategy} takes no schedule (only core-cliques and edge-cliques rotate)"
            )
        if self.edge is not None and self.strategy not in EDGE_STRATEGIES:
            raise ValueError(f"strategy {self.strategy} has no edge stages: `edge` is for edge-* strategies")
        if self.edge is not None and isinstance(self.schedule, AutoSchedule):
            if self.edge.model_fields_set & {"memory", "size"}:
                raise ValueError(
                    "an automatic schedule's memory and size are the stages': give them in `schedule`, "
                    "not `edge` (which then takes only max_rate_mbit)"
                )
        return self

    def to_spec(self) -> JobSpec:
        return JobSpec(
            workers=list(self.workers),
            strategy=self.strategy,
            format=self.format,
            slots=self.slots,
            name=self.name,
            min_slots=self.min_slots,
            fallback=self.fallback,
            schedule=schedule_spec(self.schedule) if self.schedule else None,
            edge=edge_spec(self.edge, self.schedule) if self.strategy in EDGE_STRATEGIES else None,
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


def edge_spec(edge: EdgeStage | None, schedule: AutoSchedule | ExplicitSchedule | None) -> EdgeStageSpec:
    """The stages' parameters: an automatic schedule's memory and size, else `edge`'s (or defaults)."""
    e = edge or EdgeStage()
    if isinstance(schedule, AutoSchedule):
        return EdgeStageSpec(memory=schedule.memory, size=schedule.size, max_rate_mbit=e.max_rate_mbit)
    return EdgeStageSpec(memory=e.memory, size=e.size, max_rate_mbit=e.max_rate_mbit)


class ErrorBody(BaseModel):
    """Every error answer: a sentence, and for a malformed request pydantic's list of what is wrong."""

    error: str = Field(description="what went wrong and, where it helps, what to change")
    detail: list[dict] | None = Field(None, description="for 422 on a malformed body: each problem found")


def job_example(first_workers: list[str]) -> dict:
    """A POST /jobs body this network accepts, from the first worker host of each site."""
    return {"name": "resnet", "workers": first_workers[:3], "strategy": "core-tree", "slots": 64}
