"""Arrival samplers: how an env pre-draws the episode's job arrivals ``(T, L)`` in {0, 1}.

A sampler is any picklable callable ``sampler(rng, horizon) -> float64 (T, L)``; envs call it
once per ``reset`` with the episode's ``"arrivals"`` stream. Classes, not closures, so that an env
(and a ``SubprocVecEnv`` / ``AsyncVectorEnv`` holding one) can be pickled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from schedgym.core.arrays import readonly


class ArrivalSampler(Protocol):
    """Draws the arrival matrix ``(horizon, L)`` in {0, 1} (float64) from ``rng``."""

    def __call__(self, rng: np.random.Generator, horizon: int) -> np.ndarray: ...


@dataclass(frozen=True, eq=False)
class BernoulliArrivals:
    """i.i.d. Bernoulli(``prob[l]``) arrivals per (slot, type): the papers' synthetic arrivals.

    Attributes:
        prob: float64 ``(L,)`` in [0, 1], the arrival probability of each type.
    """

    prob: np.ndarray

    def __call__(self, rng: np.random.Generator, horizon: int) -> np.ndarray:
        return (rng.random((horizon, self.prob.shape[0])) < self.prob).astype(np.float64)


def bernoulli_arrivals(n_types: int, prob: float | np.ndarray) -> BernoulliArrivals:
    """:class:`BernoulliArrivals` with one probability for every type (scalar ``prob``) or one per
    type (``prob`` of shape ``(n_types,)``)."""
    p = np.broadcast_to(np.asarray(prob, dtype=np.float64), (n_types,))
    return BernoulliArrivals(readonly(p))
