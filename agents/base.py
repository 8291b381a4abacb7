"""The agent protocol shared by every classical agent.

Every agent satisfies Stable-Baselines3's ``PolicyPredictor`` protocol::

    action, state = agent.predict(observation, state=None, episode_start=None, deterministic=True)

- ``observation`` is one observation (a dict of 1-D arrays) or a batch (a dict of 2-D arrays with
  the env index first, as a ``DummyVecEnv`` gives); the returned action has the matching shape.
- Online learners keep one learning state per env index and reset it where ``episode_start`` is
  true (SB3's ``evaluate_policy`` passes ``episode_start=True`` for every env on the first call).
  A single-observation call with ``episode_start=None`` starts a fresh state on the first call;
  call :meth:`Agent.reset` (or pass ``episode_start=True``) to begin a new episode.
- Agents read the env's static ``instance`` at construction and afterwards learn only from what
  the observation carries, so a run through ``evaluate_policy`` is a faithful online run.

Subclasses implement :meth:`Agent._init_state` and :meth:`Agent._act`, working on one unbatched
observation at a time. The returned ``state`` is always ``None``: the learning state lives inside
the agent, keyed by env index, because SB3's evaluation loop expects ``state`` to be a recurrent
hidden state.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class Agent:
    """Base class of the classical agents; see the module docstring for the protocol."""

    #: Short registry name (``agents.make(name, env)``).
    name: str = "agent"

    def __init__(self, env: gym.Env | Any) -> None:
        self.env = env.unwrapped if hasattr(env, "unwrapped") else env
        self.instance = self.env.instance
        self.observation_space = self.env.observation_space
        self.action_space = self.env.action_space
        self._states: dict[int, Any] = {}

    # ----------------------------------------------------------- to override
    def _init_state(self, index: int) -> Any:
        """Fresh learning state for env ``index`` (called at every episode start)."""
        return None

    def _act(self, obs: dict[str, np.ndarray], state: Any, deterministic: bool) -> np.ndarray:
        """Action for one unbatched observation (may update ``state`` in place)."""
        raise NotImplementedError

    # --------------------------------------------------------------- public
    def reset(self) -> None:
        """Forget every env's learning state (the next call starts a new episode)."""
        self._states.clear()

    def _is_batched(self, observation: Any) -> bool:
        if isinstance(observation, dict):
            key = next(iter(self.observation_space.spaces))
            space_ndim = len(self.observation_space.spaces[key].shape)
            return np.asarray(observation[key]).ndim > space_ndim
        return np.asarray(observation).ndim > len(self.observation_space.shape)

    def predict(
        self,
        observation: dict[str, np.ndarray] | np.ndarray,
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """SB3 ``PolicyPredictor.predict``: action(s) for one observation or a batch."""
        batched = self._is_batched(observation)
        if isinstance(observation, dict):
            obs_dict = {k: np.asarray(v) for k, v in observation.items()}
            n = len(next(iter(obs_dict.values()))) if batched else 1
            items = [
                {k: (v[i] if batched else v) for k, v in obs_dict.items()} for i in range(n)
            ]
        else:
            arr = np.asarray(observation)
            items = list(arr) if batched else [arr]
            n = len(items)
        starts = (
            np.zeros(n, dtype=bool)
            if episode_start is None
            else np.broadcast_to(np.asarray(episode_start, dtype=bool).reshape(-1), (n,))
        )
        actions = []
        for i, obs in enumerate(items):
            if starts[i] or i not in self._states:
                self._states[i] = self._init_state(i)
            actions.append(np.asarray(self._act(obs, self._states[i], deterministic)))
        out = np.stack(actions) if batched else actions[0]
        return out, None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
