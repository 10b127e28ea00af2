"""What one worker is told about its job: the single schema that crosses from the controller (job views,
the specs the tools write) to the worker library, validated with pydantic and versioned.

A worker needs its tenant id and the job's epoch (the generation the switches accept), the INC address of
its site's switch, the slots it owns there (its sending window), and, per round of the job's cycle, the
size of its clique and the timing the planner derived from the round's tree (first retransmission
timeout, slowest path RTT, and where the network's rates are known its slowest link's rate). A plain
allreduce is a cycle of one round.
"""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from edge.protocol import MAX_TENANT

SPEC_VERSION = 1
MAX_EPOCH = (1 << 32) - 1
MAX_ROUND = (1 << 16) - 1
MAX_SLOTS = 4096


class RoundSpec(BaseModel):
    """This worker's part in one round: the data-plane round number and what the planner computed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    round: int = Field(ge=0, le=MAX_ROUND)
    clique_size: int = Field(ge=1, le=65535, description="workers summed in this worker's clique")
    rto_s: float = Field(default=1.0, gt=0, le=600, description="first retransmission timeout")
    path_rtt_s: float = Field(
        default=0.0, ge=0, le=600, description="RTT of the round tree's slowest path: the timeout's floor"
    )
    rate_bps: float = Field(
        default=0.0,
        ge=0,
        le=1e12,
        description="bits/s of the round tree's slowest link for this job (0: unknown): the worker's pace, "
        "and with path_rtt_s the window it starts with",
    )
    share_bps: float = Field(
        default=0.0,
        ge=0,
        le=1e12,
        description="bits/s this job's fair share of its tree's links gives it, with the jobs admitted beside "
        "it (0: unknown, start at rate_bps): the pace the worker starts at; it grows up to rate_bps while "
        "the path shows no queue",
    )


class WorkerSpec(BaseModel):
    """Everything a worker of a job needs (version 1)."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = SPEC_VERSION
    tenant: int = Field(ge=1, le=MAX_TENANT)
    epoch: int = Field(ge=1, le=MAX_EPOCH, description="the job's generation; packets of others are dropped")
    host: str = ""
    switch_ip: str = Field(description="INC address of the worker's site switch")
    nslots: int = Field(ge=1, le=MAX_SLOTS)
    period: list[RoundSpec | None] = Field(
        min_length=1, description="one entry per round of the cycle; null where this worker sits out"
    )
    stall_timeout_s: float = Field(default=30.0, gt=0, le=3600)

    @field_validator("switch_ip")
    @classmethod
    def _ipv4(cls, value: str) -> str:
        return str(ipaddress.IPv4Address(value))

    @property
    def rounds(self) -> list[RoundSpec]:
        return [r for r in self.period if r is not None]
