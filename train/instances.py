"""Training and evaluating on many instances (``schedgym train --instance-seeds 0-99``).

An env's instance (graph, capacities, utilities) is fixed at construction (DESIGN §2), so a
learner that should generalise across instances needs envs that change instance between
episodes. :class:`InstanceCycler` does that: it holds a list of instance seeds and, at every
``reset``, plays the next one (one ``gym.make(env_id, instance_seed=i, **kwargs)`` per switch,
cycling through the list). Its spaces are those of the first instance; an instance whose
observation or action space differs is refused with the advice to use a learnable action mode and
``instance_features=True`` (DESIGN §8: those spaces depend only on the scenario's sizes).

Episode seeds stay reproducible: ``reset(seed=s)`` seeds the cycler's own generator, and every
later ``reset()`` passes the next 63-bit episode seed drawn from it to the underlying env.

:func:`split_instance_seeds` deals the training seeds over the ``n_envs`` sub-envs of the vec
env (sub-env ``r`` gets ``seeds[r::n_envs]``, so all of them are used and no two sub-envs play the
same instance at the same time when there are enough seeds).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from schedgym.core import rng as rngs


def split_instance_seeds(seeds: Sequence[int], n_envs: int) -> list[tuple[int, ...]]:
    """Instance seeds of each of ``n_envs`` sub-envs: ``seeds[r::n_envs]``, or
    ``(seeds[r % len(seeds)],)`` when there are fewer seeds than sub-envs."""
    if not seeds:
        raise ValueError("instance_seeds=() is invalid: give at least one instance seed")
    if len(seeds) < n_envs:
        return [(int(seeds[r % len(seeds)]),) for r in range(n_envs)]
    return [tuple(int(s) for s in seeds[r::n_envs]) for r in range(n_envs)]


def check_same_spaces(env_id: str, env_kwargs: dict[str, Any], first: tuple[int, Any],
                      other: tuple[int, Any]) -> None:
    """Raise ``ValueError`` unless the envs of two instance seeds ``(seed, env)`` have the same
    observation and action spaces (one policy can only play instances of one shape)."""
    for what in ("observation_space", "action_space"):
        if getattr(first[1], what) != getattr(other[1], what):
            raise ValueError(
                f"instance_seeds is invalid for {env_id} with {env_kwargs}: the {what} of "
                f"instance_seed={other[0]} differs from that of instance_seed={first[0]}; train "
                "on many instances in a mode whose spaces depend only on the scenario's sizes "
                "(--set action_mode=<learnable mode> --set instance_features=true; "
                "'schedgym list' shows the modes)")


class InstanceCycler(gym.Wrapper):
    """An env that plays instance ``seeds[k % len(seeds)]`` in its ``k``-th episode.

    ``env_id``: registered id; ``env_kwargs``: ``gym.make`` keyword arguments except
    ``instance_seed``; ``seeds``: instance seeds (at least one). ``env.unwrapped`` is the current
    instance's env (so classical agents and metric callbacks see the instance being played);
    :attr:`instance_seed` says which one.
    """

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], seeds: Sequence[int]) -> None:
        if not seeds:
            raise ValueError("instance_seeds=() is invalid: give at least one instance seed")
        if "instance_seed" in env_kwargs:
            raise ValueError("env_kwargs must not hold instance_seed: InstanceCycler sets it")
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs)
        self.seeds = tuple(int(s) for s in seeds)
        self._next = 0
        self.instance_seed = self.seeds[0]
        super().__init__(gym.make(env_id, instance_seed=self.seeds[0], **self.env_kwargs))
        self._rng: np.random.Generator | None = None
        self._started = False

    def _switch(self, seed: int) -> None:
        new = gym.make(self.env_id, instance_seed=seed, **self.env_kwargs)
        try:
            check_same_spaces(self.env_id, self.env_kwargs, (self.seeds[0], self.env),
                              (seed, new))
        except ValueError:
            new.close()
            raise
        self.env.close()
        self.env = new
        self.instance_seed = seed

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Any, dict[str, Any]]:
        """Switch to the next instance (from the second episode on), then reset it with the
        next episode seed (``seed`` itself when given)."""
        if seed is not None or self._rng is None:
            self._rng = np.random.default_rng(seed)
        episode_seed = int(seed) if seed is not None else rngs.episode_seed(self._rng)
        if self._started and len(self.seeds) > 1:
            self._switch(self.seeds[self._next % len(self.seeds)])
        elif not self._started:
            self._started = True
        self._next += 1
        obs, info = self.env.reset(seed=episode_seed, options=options)
        return obs, {**info, "instance_seed": self.instance_seed}

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """The current instance's ``step``."""
        return self.env.step(action)
