"""The training model: backprop's gradient against finite differences, determinism, the data split and
the gradient formats."""

from __future__ import annotations

import numpy as np
import pytest

from edge.training import wire
from edge.training.data import batch, digits_split, shard
from edge.training.model import Mlp


def test_gradient_matches_central_finite_differences() -> None:
    model = Mlp(inputs=64, hidden=8, classes=10)
    split = digits_split(3)
    x, y = split.x_train[:20], split.y_train[:20]
    params = model.init(3) + np.random.default_rng(0).normal(0, 0.1, model.size)  # nonzero biases too
    _, grad = model.loss_and_grad(params, x, y)
    eps = 1e-6
    numeric = np.empty_like(params)
    for i in range(model.size):
        up, down = params.copy(), params.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (model.loss(up, x, y) - model.loss(down, x, y)) / (2 * eps)
    assert np.max(np.abs(grad - numeric)) < 1e-7
    assert np.linalg.norm(grad - numeric) / np.linalg.norm(numeric) < 1e-6
    assert np.count_nonzero(grad) > 0.5 * model.size  # every layer takes part


def test_loss_of_a_batch_matches_loss_and_grad() -> None:
    model = Mlp()
    split = digits_split(1)
    params = model.init(1)
    loss, _ = model.loss_and_grad(params, split.x_test, split.y_test)
    assert loss == pytest.approx(model.loss(params, split.x_test, split.y_test))
    assert loss == pytest.approx(np.log(10), rel=0.3)  # an untrained 10-class softmax


def test_same_seed_same_bits_and_another_seed_differs() -> None:
    model = Mlp()
    assert np.array_equal(model.init(7), model.init(7))
    assert not np.array_equal(model.init(7), model.init(8))
    split = digits_split(7)
    x, y = shard(split, 1, 3)
    a = batch(x, y, 16, 7, 1, 5)
    b = batch(x, y, 16, 7, 1, 5)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(batch(x, y, 16, 7, 1, 6)[0], a[0])  # the next step draws another batch


def test_shards_partition_the_training_set_and_test_set_is_held_out() -> None:
    split = digits_split(1)
    assert len(split.y_train) + len(split.y_test) == 1797
    parts = [shard(split, r, 3)[0] for r in range(3)]
    assert sum(len(p) for p in parts) == len(split.y_train)
    with pytest.raises(ValueError, match="rank 3"):
        shard(split, 3, 3)


def test_exact_format_round_trip_and_clipping() -> None:
    g = np.array([0.5, -1e-3, 3.0, 100.0, -100.0])
    enc = wire.encode(g, "exact")
    assert enc.payload.dtype == np.int32 and enc.clipped == 2
    back = wire.decode_mean(enc.payload.astype(np.int64), "exact", 1)
    np.testing.assert_allclose(back[:3], g[:3], atol=2.0**-21)
    assert back[3] == 16.0 and back[4] == -16.0
    with pytest.raises(FloatingPointError, match="diverged"):
        wire.encode(np.array([np.nan]), "exact")
    with pytest.raises(ValueError, match="unknown gradient format"):
        wire.encode(g, "int8")
