"""The data-parallel training loop one worker runs: compute the gradient of its own minibatch, allreduce
it, take the average step. Optionally DiLoCo-style: K local steps, then average the parameter change.

Timing per step is split into compute (the gradient passes) and communication (the allreduce and its
encoding); evaluation after each step (loss on the whole training set, accuracy on the test set) is not
counted in either, and every worker does the same evaluation so none waits for another's.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from edge.training import wire
from edge.training.data import batch, digits_split, shard
from edge.training.model import Mlp


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 30
    batch: int = 16  # per worker and step
    lr: float = 0.5
    hidden: int = 32
    seed: int = 1
    fmt: str = "float32"  # wire.FORMATS
    local_steps: int = 1  # 1: average gradients every step; K > 1: average parameter changes every K steps
    compute_scale: int = 1  # gradient passes per step (the extra passes stand for a larger model's compute)
    # accelerator time per step: compute lasts at least this long, the worker waiting out the rest after its
    # passes as a host waits for its GPU's forward and backward pass; unlike extra passes it takes no CPU
    # from the emulated network or the other workers, so every worker's compute takes the same time
    compute_ms: float = 0.0
    target_accuracy: float = 0.9

    def check(self) -> None:
        if self.steps < 1 or self.batch < 1 or self.local_steps < 1 or self.compute_scale < 1:
            raise ValueError("steps, batch, local steps and compute scale must be at least 1")
        if not 0 <= self.compute_ms <= 600_000:
            raise ValueError(f"compute time per step must be in 0..600000 ms, got {self.compute_ms}")
        if not 0 < self.lr <= 10:
            raise ValueError(f"learning rate must be in (0, 10], got {self.lr}")
        if self.fmt not in wire.FORMATS:
            raise ValueError(f"gradient format must be one of {', '.join(wire.FORMATS)}, got {self.fmt!r}")
        if not 0 < self.target_accuracy <= 1:
            raise ValueError(f"target accuracy is a fraction in (0, 1], got {self.target_accuracy}")


@dataclass
class StepRecord:
    step: int
    loss: float  # mean cross-entropy over the whole training set, after the step
    accuracy: float  # on the held-out test set, after the step
    compute_s: float
    comm_s: float
    synced: bool  # whether this step ended with an allreduce
    clipped: int = 0


@dataclass
class TrainResult:
    steps: list[StepRecord] = field(default_factory=list)
    params_sha256: str = ""

    @property
    def compute_s(self) -> float:
        return sum(s.compute_s for s in self.steps)

    @property
    def comm_s(self) -> float:
        return sum(s.comm_s for s in self.steps)

    def time_to(self, target: float) -> float | None:
        """Compute plus communication time until the first step that reached `target` test accuracy."""
        spent = 0.0
        for s in self.steps:
            spent += s.compute_s + s.comm_s
            if s.accuracy >= target:
                return spent
        return None

    def to_json(self) -> dict:
        return {"steps": [asdict(s) for s in self.steps], "params_sha256": self.params_sha256}


def train(
    cfg: TrainConfig,
    rank: int,
    workers: int,
    allreduce_sum: Callable[[np.ndarray], np.ndarray],
    on_step: Callable[[StepRecord], None] | None = None,
) -> TrainResult:
    """Train the model on this worker's shard; `allreduce_sum` sums a vector over all workers."""
    cfg.check()
    model = Mlp(hidden=cfg.hidden)
    split = digits_split(cfg.seed)
    x, y = shard(split, rank, workers)
    params = model.init(cfg.seed)
    anchor = params.copy()
    result = TrainResult()
    for step in range(cfg.steps):
        t0 = time.perf_counter()
        xb, yb = batch(x, y, cfg.batch, cfg.seed, rank, step)
        for _ in range(cfg.compute_scale):  # the same pass repeated: same gradient, more compute
            _, grad = model.loss_and_grad(params, xb, yb)
        if cfg.compute_ms:
            time.sleep(max(0.0, cfg.compute_ms / 1000 - (time.perf_counter() - t0)))
        t1 = time.perf_counter()
        synced = cfg.local_steps == 1 or (step + 1) % cfg.local_steps == 0 or step == cfg.steps - 1
        clipped = 0
        if cfg.local_steps == 1:
            enc = wire.encode(grad, cfg.fmt)
            params -= cfg.lr * wire.decode_mean(allreduce_sum(enc.payload), cfg.fmt, workers)
            clipped = enc.clipped
        else:
            params -= cfg.lr * grad
            if synced:  # average the change since the last synchronisation (outer step of size 1)
                enc = wire.encode(params - anchor, cfg.fmt)
                params = anchor + wire.decode_mean(allreduce_sum(enc.payload), cfg.fmt, workers)
                anchor = params.copy()
                clipped = enc.clipped
        t2 = time.perf_counter()
        rec = StepRecord(
            step=step,
            loss=model.loss(params, split.x_train, split.y_train),
            accuracy=model.accuracy(params, split.x_test, split.y_test),
            compute_s=t1 - t0,
            comm_s=t2 - t1,
            synced=synced,
            clipped=clipped,
        )
        result.steps.append(rec)
        if on_step is not None:
            on_step(rec)
    result.params_sha256 = hashlib.sha256(params.tobytes()).hexdigest()
    return result
