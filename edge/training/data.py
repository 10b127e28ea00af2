"""The digits data set (scikit-learn ships it: 1,797 8x8 images, no download), one fixed train/test
split, and each worker's shard and minibatches.

Everything is a function of (seed, rank, step) only, so every strategy sees the very same batches in the
very same order: that is what makes their training curves comparable, and identical where the
aggregation is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

TEST_FRACTION = 0.2


@dataclass(frozen=True)
class Split:
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


@lru_cache(maxsize=4)
def digits_split(seed: int) -> Split:
    """Pixels scaled to [0, 1]; a seeded shuffle; the last fifth held out for testing."""
    from sklearn.datasets import load_digits  # imported here: the rest of the package does not need it

    data = load_digits()
    x = np.asarray(data.data, dtype=np.float64) / 16.0
    y = np.asarray(data.target, dtype=np.int64)
    order = np.random.default_rng([seed, 0xD161]).permutation(len(y))
    cut = len(y) - round(TEST_FRACTION * len(y))
    train, test = order[:cut], order[cut:]
    return Split(x[train], y[train], x[test], y[test])


def shard(split: Split, rank: int, workers: int) -> tuple[np.ndarray, np.ndarray]:
    """Worker `rank`'s share of the training set: every `workers`-th example, starting at `rank`."""
    if not 0 <= rank < workers:
        raise ValueError(f"rank {rank} is not in 0..{workers - 1}")
    return split.x_train[rank::workers], split.y_train[rank::workers]


def batch(
    x: np.ndarray, y: np.ndarray, size: int, seed: int, rank: int, step: int
) -> tuple[np.ndarray, np.ndarray]:
    """Minibatch `step` of this worker: drawn without replacement from its shard, from (seed, rank, step)."""
    rng = np.random.default_rng([seed, rank, step, 0xBA7C])
    pick = rng.choice(len(y), size=min(size, len(y)), replace=False)
    return x[pick], y[pick]
