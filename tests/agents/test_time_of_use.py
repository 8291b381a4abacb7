"""TIME-OF-USE (DeadlineWelfare-v0): feasible at every step, ``lam=0`` is MYOPIC-WELFARE, its
prices are the expected later demand computed by hand, it never looks at the episode played,
and bad options are one clear error."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from schedgym import agents
from schedgym.envs.deadline_welfare import ENV_ID, dynamics
from schedgym.envs.deadline_welfare.demand import future_seeds, job_shares, later_demand

SMALL = {"n_instances": 3, "horizon": 6, "n_jobs": 8, "arrival_rate": 2.0,
         "capacity_mean": 6.0, "capacity_sd": 1.0}


@pytest.mark.parametrize("utility", ["linear", "log", "sqrt"])
@pytest.mark.parametrize("lam", [0.3, 3.0])
def test_every_action_is_feasible(utility, lam):
    env = gym.make(ENV_ID, utility=utility, **SMALL).unwrapped
    agent = agents.make("time-of-use", env, lam=lam, futures=5)
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            obs, r, done, _, info = env.step(agent.predict(obs, deterministic=True)[0])
            assert np.isfinite(r)
            assert info["repair_l1"] <= 1e-6  # the best response is feasible as it stands
            assert dynamics.is_feasible(env.instance, env.jobs, env.dispatch)


def test_zero_lam_is_myopic_welfare():
    env = gym.make(ENV_ID, scenario="congested", utility="linear").unwrapped
    tou = agents.make("time-of-use", env, lam=0.0, futures=2)
    mw = agents.make("myopic-welfare", env)
    obs, _ = env.reset(seed=4)
    done = False
    while not done:
        a = tou.predict(obs, deterministic=True)[0]
        np.testing.assert_array_equal(a, mw.predict(obs, deterministic=True)[0])
        obs, _, done, _, _ = env.step(a)


def test_expected_later_demand_by_hand():
    """Row s: the mean over the sampled episodes of the shares of the jobs arriving after s."""
    env = gym.make(ENV_ID, **SMALL).unwrapped
    seeds = [11, 12]
    R, T = env.instance.n_instances, env.instance.horizon
    got = later_demand(env.sample_jobs, R * T, T, seeds)
    want = np.zeros((T + 1, R * T))
    for seed in seeds:
        jobs = env.sample_jobs(seed)
        for n in range(jobs.n_jobs):
            allowed = jobs.mask[n].reshape(-1)
            for s in range(T + 1):
                if jobs.arrival[n] > s:
                    want[s, allowed] += jobs.workload[n] / allowed.sum() / len(seeds)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    shares = job_shares(env.sample_jobs(11))
    np.testing.assert_allclose(shares.sum(axis=(1, 2)), env.sample_jobs(11).workload)


def test_it_plans_with_the_distribution_not_the_episode():
    """Its price table is fixed at construction (from seeds of its own stream): playing
    another episode never changes it, and the env's episode is untouched by sampling."""
    env = gym.make(ENV_ID, **SMALL).unwrapped
    env.reset(seed=7)
    before = env.jobs.workload.copy()
    agent = agents.make("time-of-use", env, futures=4)
    table = agent.later.copy()
    np.testing.assert_array_equal(env.jobs.workload, before)
    obs, _ = env.reset(seed=8)
    agent.predict(obs, deterministic=True)
    np.testing.assert_array_equal(agent.later, table)
    again = agents.make("time-of-use", env, futures=4)
    np.testing.assert_array_equal(again.later, table)  # deterministic


def test_its_table_is_the_envs_expected_later_demand():
    """One source: the agent's prices read the env's table, which is ``later_demand`` over the
    seeds of the instance's ``time_of_use`` stream (and the ``later_demand`` entity feature
    reads the same table)."""
    env = gym.make(ENV_ID, instance_seed=5, **SMALL).unwrapped
    agent = agents.make("time-of-use", env, futures=3)
    R, T = env.instance.n_instances, env.instance.horizon
    want = later_demand(env.sample_jobs, R * T, T, future_seeds(5, 3))
    np.testing.assert_array_equal(agent.later, want)
    np.testing.assert_array_equal(env.expected_later_demand(3), want)
    assert not env.expected_later_demand(3).flags.writeable
    with pytest.raises(ValueError, match="futures"):
        env.expected_later_demand(0)


@pytest.mark.parametrize("kw, says", [({"lam": -0.1}, "lam"), ({"lam": float("nan")}, "lam"),
                                      ({"futures": 0}, "futures"), ({"futures": 2.5}, "futures")])
def test_bad_options_are_one_clear_error(kw, says):
    env = gym.make(ENV_ID, **SMALL)
    with pytest.raises(ValueError, match=says):
        agents.make("time-of-use", env, **kw)


def test_sample_jobs_checks_its_seed():
    env = gym.make(ENV_ID, **SMALL).unwrapped
    with pytest.raises(ValueError, match="episode_seed"):
        env.sample_jobs(-1)
    with pytest.raises(ValueError, match="episode_seed"):
        env.sample_jobs(None)
