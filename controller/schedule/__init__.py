"""Group-schedule optimiser: when do rotating cliques beat all-to-all on a WAN with Edge-INC?

The model (model.py, mixing.py) is written down in docs/schedule-model.md; the optimiser
(optimiser.py) searches the families listed there; sweep.py varies the edge memory.
"""

from controller.schedule.mixing import DEFAULT_EPS, Mixing, consensus
from controller.schedule.model import (
    CliqueTiming,
    EdgeParams,
    Inbound,
    ModelError,
    Network,
    Sync,
    TimingCache,
    clique_timing,
    run_rounds,
)
from controller.schedule.optimiser import FAMILIES, Candidate, Result, optimise

__all__ = [
    "DEFAULT_EPS",
    "FAMILIES",
    "Candidate",
    "CliqueTiming",
    "EdgeParams",
    "Inbound",
    "Mixing",
    "ModelError",
    "Network",
    "Result",
    "Sync",
    "TimingCache",
    "clique_timing",
    "consensus",
    "optimise",
    "run_rounds",
]
