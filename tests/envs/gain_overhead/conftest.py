"""Small GainOverhead instances shared by the env and agent tests."""

from __future__ import annotations

import gymnasium as gym
import pytest

import schedgym  # noqa: F401
from schedgym.envs.gain_overhead import ENV_ID

__all__ = ["ENV_ID", "SMALL"]
#: A small but non-trivial configuration: fast enough for every-step checks.
SMALL = {"n_types": 4, "n_instances": 6, "n_resources": 3, "horizon": 40}


@pytest.fixture
def small_env():
    env = gym.make(ENV_ID, **SMALL)
    yield env
    env.close()
