"""MYOPIC-WELFARE (DeadlineWelfare-v0): feasible, equal to the pricing mode's zero action, and
per job at least as good as MAX-FIRST from the same state."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from schedgym import agents
from schedgym.envs.deadline_welfare import ENV_ID, dynamics

SMALL = {"n_instances": 3, "horizon": 6, "n_jobs": 8, "arrival_rate": 2.0}


@pytest.mark.parametrize("utility", ["linear", "log", "sqrt"])
def test_equals_the_pricing_zero_action_and_is_feasible(utility):
    kw = dict(utility=utility, capacity_mean=6.0, capacity_sd=1.0, **SMALL)
    env = gym.make(ENV_ID, **kw).unwrapped
    priced = gym.make(ENV_ID, action_mode="pricing", **kw).unwrapped
    agent = agents.make("myopic-welfare", env)
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        priced.reset(seed=seed)
        done = False
        while not done:
            obs, r, done, _, info = env.step(agent.predict(obs, deterministic=True)[0])
            _, r2, _, _, info2 = priced.step(np.zeros(3, np.float32))
            np.testing.assert_allclose(info["dispatch"], info2["dispatch"], atol=1e-6)
        assert dynamics.is_feasible(env.instance, env.jobs, env.dispatch)


def test_each_job_gets_at_least_max_first_welfare_from_the_same_state():
    env = gym.make(ENV_ID, scenario="congested", utility="linear").unwrapped
    mine, mf = agents.make("myopic-welfare", env), agents.make("max-first", env)
    obs, _ = env.reset(seed=1)
    done = False
    while not done:
        n = env.job_index
        welfare = [dynamics.job_welfare(env.instance, env.jobs, n, env.decode_action(
            a.predict(obs, deterministic=True)[0]).clip(0)) for a in (mine, mf)]
        assert sum(welfare[0]) >= sum(welfare[1]) - 1e-6
        obs, _, done, _, _ = env.step(mine.predict(obs, deterministic=True)[0])
