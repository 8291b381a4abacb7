"""Uniformly random actions (a sanity floor for every env)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from gymnasium import spaces

from schedgym.agents.base import Agent
from schedgym.core import rng as rngs
from schedgym.core.validation import check_seed


class RandomAgent(Agent):
    """Samples the action space uniformly; reproducible from ``seed``.

    Each env index and each episode get their own stream ``(seed, "random-agent/{index}/{n}")``,
    so a re-run with the same seed repeats every action. The env turns the sample into a feasible
    allocation by its documented projection or repair.
    """

    name = "random"
    any_action_mode = True

    def __init__(self, env: Any, seed: int = 0) -> None:
        super().__init__(env)
        self.seed = check_seed("seed", seed) or 0
        self._episodes: dict[int, int] = {}

    def _init_state(self, index: int) -> dict[str, Any]:
        n = self._episodes.get(index, 0)
        self._episodes[index] = n + 1
        gen = rngs.stream(self.seed, f"random-agent/{index}/{n}")
        space = copy.deepcopy(self.action_space)
        space.seed(int(gen.integers(0, 2**31 - 1)))
        return {"rng": gen, "space": space}

    def _act(self, obs: dict[str, np.ndarray], state: dict[str, Any],
             deterministic: bool) -> np.ndarray:
        space = state["space"]
        if isinstance(space, spaces.Box):
            return state["rng"].uniform(space.low, space.high).astype(space.dtype)
        return np.asarray(space.sample())
