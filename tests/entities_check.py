"""Checks shared by the envs' entity tests: an entity observation against an independent
reference (inside the space, the (N, F) rows flattened row-major, the mask exact, the float32
features and context within float32 rounding of the reference); ``obs_mode="flat"`` is the
default mode, unchanged; both env checkers pass with every warning an error."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env as gym_check_env
from gymnasium.utils.env_checker import data_equivalence
from stable_baselines3.common.env_checker import check_env as sb3_check_env


def assert_entity_obs(env: Any, obs: dict[str, np.ndarray], rows: np.ndarray, mask: np.ndarray,
                      context: np.ndarray) -> None:
    assert env.observation_space.contains(obs), {k: (v.min(), v.max()) for k, v in obs.items()}
    assert obs["entities"].shape == (rows.size,)  # the (N, F) rows flattened row-major
    np.testing.assert_allclose(obs["entities"], rows.reshape(-1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(obs["mask"], mask)
    np.testing.assert_allclose(obs["context"], context, rtol=1e-5, atol=1e-6)


def assert_flat_is_the_default(make: Callable[..., gym.Env], steps: int = 3) -> gym.Env:
    """``make()`` and ``make(obs_mode="flat")`` have the same observation space and give the
    same reset and ``steps`` steps bit for bit; returns the first env (reset and stepped)."""
    a, b = make(), make(obs_mode="flat")
    assert a.observation_space == b.observation_space
    assert data_equivalence(a.reset(seed=3), b.reset(seed=3), exact=True)
    for _ in range(steps):
        act = a.action_space.sample()
        assert data_equivalence(a.step(act), b.step(act), exact=True)
    return a


def assert_checkers_clean(env: gym.Env) -> None:
    """Gymnasium's and SB3's env checkers pass on ``env``, every warning of either an error
    (the 1-D ``entities`` vector draws no SB3 shape advice)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym_check_env(env.unwrapped, skip_render_check=False)
        sb3_check_env(env.unwrapped, warn=True)
