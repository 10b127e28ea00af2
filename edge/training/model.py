"""A two-layer perceptron written out in numpy: forward pass, softmax cross-entropy and its exact gradient.

Why by hand: the gradient is what crosses the WAN every step, so it must be a plain vector whose every
element the tests can check against finite differences, and the same seed must give the same bits on
every worker and every run (no threading or library nondeterminism). All parameters live in one flat
float64 vector; `unpack` gives views of the layers into it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Mlp:
    """inputs -> hidden (tanh) -> classes (softmax). tanh rather than ReLU: smooth everywhere, so a
    finite-difference check of the gradient has no kinks to trip over."""

    inputs: int = 64
    hidden: int = 32
    classes: int = 10

    @property
    def size(self) -> int:
        return self.inputs * self.hidden + self.hidden + self.hidden * self.classes + self.classes

    def init(self, seed: int) -> np.ndarray:
        """Glorot-uniform weights, zero biases, from `seed` alone (every worker starts from the same bits)."""
        rng = np.random.default_rng([seed, 0x4D4C50])
        params = np.zeros(self.size)
        w1, _, w2, _ = self.unpack(params)
        w1[...] = rng.uniform(-1, 1, w1.shape) * np.sqrt(6.0 / (self.inputs + self.hidden))
        w2[...] = rng.uniform(-1, 1, w2.shape) * np.sqrt(6.0 / (self.hidden + self.classes))
        return params

    def unpack(self, params: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Views (w1, b1, w2, b2) into the flat vector: writing them writes `params`."""
        if params.shape != (self.size,):
            raise ValueError(f"expected {self.size} parameters, got shape {params.shape}")
        i, h, c = self.inputs, self.hidden, self.classes
        a = i * h
        b = a + h
        d = b + h * c
        return params[:a].reshape(i, h), params[a:b], params[b:d].reshape(h, c), params[d:]

    def logits(self, params: np.ndarray, x: np.ndarray) -> np.ndarray:
        w1, b1, w2, b2 = self.unpack(params)
        return np.tanh(x @ w1 + b1) @ w2 + b2

    def loss(self, params: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
        """Mean cross-entropy of the softmax over the batch."""
        return float(_cross_entropy(self.logits(params, x), y))

    def accuracy(self, params: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean(np.argmax(self.logits(params, x), axis=1) == y))

    def loss_and_grad(self, params: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        """The batch's mean cross-entropy and its gradient with respect to every parameter (backprop)."""
        w1, b1, w2, b2 = self.unpack(params)
        hidden = np.tanh(x @ w1 + b1)
        z = hidden @ w2 + b2
        loss = _cross_entropy(z, y)
        n = x.shape[0]
        dz = _softmax(z)
        dz[np.arange(n), y] -= 1.0
        dz /= n
        grad = np.zeros_like(params)
        g1, gb1, g2, gb2 = self.unpack(grad)
        g2[...] = hidden.T @ dz
        gb2[...] = dz.sum(axis=0)
        dh = (dz @ w2.T) * (1.0 - hidden**2)
        g1[...] = x.T @ dh
        gb1[...] = dh.sum(axis=0)
        return float(loss), grad


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _cross_entropy(z: np.ndarray, y: np.ndarray) -> float:
    shifted = z - z.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-log_p[np.arange(z.shape[0]), y].mean())
