"""A saved SB3 model played as an agent, deterministic (the default) or drawing its actions.

``compare`` and the sweeps play every agent through ``predict(..., deterministic=True)``. For a
learned policy that is its distribution's mode. Where a policy learned to rely on its own
action noise (a bandit, where the noise is how it explores), the mode can play much worse than
the policy that was trained; ``ppo:model.zip[deterministic=false]`` plays the drawn actions
instead. The draws come from torch's generator, seeded with the episode seed at every episode
start (:meth:`StochasticModel.seed_episode`, called by the episode runner), so an episode is
reproducible like every other agent's.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class StochasticModel:
    """``model`` (a loaded SB3 model) playing sampled actions; otherwise its ``predict``."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def seed_episode(self, seed: int) -> None:
        """Seed the generator the action draws come from (torch's global one) with ``seed``."""
        import torch

        torch.manual_seed(int(seed))

    def predict(self, observation: Any, state: Any = None, episode_start: np.ndarray | None = None,
                deterministic: bool = False) -> tuple[np.ndarray, Any]:
        """The model's ``predict`` with ``deterministic=False`` whatever the caller asks: the
        spec chose sampled actions."""
        return self.model.predict(observation, state=state, episode_start=episode_start,
                                  deterministic=False)
