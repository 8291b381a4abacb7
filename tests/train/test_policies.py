"""BoundsScaledExtractor: every bounded Box entry of a Dict observation lands in [0, 1]."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th
from gymnasium import spaces

from schedgym.train.policies import BoundsScaledExtractor


def test_scaling_by_hand():
    space = spaces.Dict({
        "a": spaces.Box(0.0, 4.0, (2,), np.float32),
        "b": spaces.Box(np.array([-1.0, 10.0], np.float32), np.array([1.0, 20.0], np.float32)),
        "c": spaces.Box(-np.inf, np.inf, (1,), np.float32),   # unbounded: left as is
    })
    ext = BoundsScaledExtractor(space)
    assert ext.features_dim == 5
    obs = {"a": th.tensor([[0.0, 2.0]]), "b": th.tensor([[1.0, 15.0]]), "c": th.tensor([[7.0]])}
    out = ext(obs).numpy()
    # SB3 orders Dict keys alphabetically, as does gymnasium's Dict
    np.testing.assert_allclose(out, [[0.0, 0.5, 1.0, 0.5, 7.0]])


def test_every_env_observation_is_scaled_into_unit_range(env_id):
    import gymnasium as gym

    env = gym.make(env_id)
    ext = BoundsScaledExtractor(env.observation_space)
    obs, _ = env.reset(seed=0)
    for _ in range(5):
        x = ext({k: th.as_tensor(v)[None] for k, v in obs.items()}).numpy()
        assert np.all(x >= -1e-6) and np.all(x <= 1 + 1e-6)
        obs, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            break
    env.close()


def test_dict_required():
    with pytest.raises(ValueError, match="Dict"):
        BoundsScaledExtractor(spaces.Box(0, 1, (3,)))
