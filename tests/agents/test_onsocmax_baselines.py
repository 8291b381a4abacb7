"""MAX-FIRST, EQUAL-SHARE and JSQ on hand-computed cases; water-filling against brute force;
every DeadlineWelfare agent feasible at every step through SB3's evaluate_policy."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedgym  # noqa: F401
from schedgym import agents
from schedgym.agents.baselines.deadline_welfare import (
    JSQ,
    EqualShare,
    MaxFirst,
    simulate_slot_policy,
    waterfill,
)
from schedgym.core.waterfill import waterfill_level
from schedgym.envs.deadline_welfare import ENV_ID, dynamics
from schedgym.envs.deadline_welfare.env import DeadlineWelfareEnv
from schedgym.envs.deadline_welfare.types import DeadlineWelfareInstance, Jobs

AGENTS = ["onsocmax", "max-first", "equal-share", "jsq"]


def three_slot_env(coef, capability, workload, capacity=10.0, n_jobs=1):
    N = n_jobs
    jobs = Jobs(arrival=[0] * N, deadline=[2] * N, workload=workload,
                allowed=np.ones((N, 1), bool),
                capability=np.asarray(capability, float).reshape(N, 1, 3),
                coef=np.asarray(coef, float).reshape(N, 1, 3), weight=np.zeros(N),
                n_slots_hint=3)
    inst = DeadlineWelfareInstance(capacity=np.full((1, 3), capacity), jobs=jobs)
    return DeadlineWelfareEnv(instance=inst)


def dispatch_of(env, agent):
    obs, _ = env.reset(seed=0)
    a, _ = agent.predict(obs)
    _, _, _, _, info = env.step(a)
    return info["dispatch"][0]


def test_max_first_hand_computed():
    env = three_slot_env([1.0, 3.0, 2.0], [2.0, 2.0, 2.0], [3.0])
    np.testing.assert_allclose(dispatch_of(env, MaxFirst(env)), [0.0, 2.0, 1.0], atol=1e-5)


def test_max_first_ties_take_the_earliest_slot():
    env = three_slot_env([2.0, 2.0, 2.0], [2.0, 2.0, 2.0], [3.0])
    np.testing.assert_allclose(dispatch_of(env, MaxFirst(env)), [2.0, 1.0, 0.0], atol=1e-5)


def test_equal_share_hand_computed():
    env = three_slot_env([1.0, 1.0, 1.0], [1.0, 5.0, 5.0], [7.0])
    np.testing.assert_allclose(dispatch_of(env, EqualShare(env)), [1.0, 3.0, 3.0], atol=1e-5)
    np.testing.assert_allclose(dispatch_of(env, EqualShare(env, variant="simple")),
                               [1.0, 7 / 3, 7 / 3], atol=1e-5)


def test_jsq_fills_the_least_loaded_units_first():
    env = three_slot_env(np.ones((2, 3)), [[4.0, 0.1, 2.0], [5.0, 5.0, 5.0]], [6.1, 4.0],
                         n_jobs=2)
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(np.ones(3, np.float32))  # usage [4, 0.1, 2]
    agent = JSQ(env)
    a, _ = agent.predict(obs)
    _, _, _, _, info = env.step(a)
    # levels 0.4, 0.01, 0.2 (C = 10): unit 1 up to 0.2 (1.9), then units 1, 2 to 0.305
    np.testing.assert_allclose(info["dispatch"][0], [0.0, 2.95, 1.05], atol=1e-5)
    env2 = three_slot_env(np.ones((2, 3)), [[4.0, 0.1, 2.0], [5.0, 5.0, 5.0]], [6.1, 4.0],
                          n_jobs=2)
    obs, _ = env2.reset(seed=0)
    obs, *_ = env2.step(np.ones(3, np.float32))
    a, _ = JSQ(env2, load="absolute").predict(obs)
    np.testing.assert_allclose(env2.step(a)[4]["dispatch"][0], [0.0, 2.95, 1.05], atol=1e-5)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), m=st.integers(1, 12), total=st.floats(0.0, 30.0))
def test_waterfill_against_bisection(seed, m, total):
    rng = np.random.default_rng(seed)
    start = rng.uniform(0, 2, m)
    end = start + rng.uniform(0, 3, m) * rng.integers(0, 2, m)
    w = rng.uniform(0.5, 3, m)
    x = waterfill(start, end, w, total)
    room = w * (end - start)
    if room.sum() <= total:
        np.testing.assert_allclose(x, room)
        return
    lo, hi = float(start.min()), float(end.max())
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if (w * np.clip(mid - start, 0, end - start)).sum() > total:
            hi = mid
        else:
            lo = mid
    ref = w * np.clip(lo - start, 0, end - start)
    np.testing.assert_allclose(x, ref, atol=1e-7)
    assert x.sum() == pytest.approx(total, abs=1e-9)


def test_waterfill_level_hand_computed():
    """Intervals [0, 2] and [1, 3], unit weights, total 2: at level L in [1, 2] the amounts are
    L and L - 1, so L = 1.5 and x = (1.5, 0.5); beyond the room everything is given."""
    start, end, w = np.array([0.0, 1.0]), np.array([2.0, 3.0]), np.ones(2)
    assert waterfill_level(start, end, w, 2.0) == pytest.approx(1.5)
    np.testing.assert_allclose(waterfill(start, end, w, 2.0), [1.5, 0.5])
    np.testing.assert_allclose(waterfill(start, end, 2 * w, 10.0), [4.0, 4.0])
    assert waterfill_level(start, end, w, 10.0) is None
    np.testing.assert_array_equal(waterfill(start, end, w, 0.0), [0.0, 0.0])


@pytest.mark.parametrize("util", ["linear", "log", "sqrt"])
def test_every_agent_feasible_at_every_step_via_evaluate_policy(util):
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy

    kw = dict(utility=util, n_instances=4, horizon=8, n_jobs=10, capacity_mean=6.0,
              capacity_sd=0.6, locality_size=3)
    for name in AGENTS:
        venv = make_vec_env(ENV_ID, n_envs=2, seed=3, env_kwargs=kw)
        agent = agents.make(name, venv.envs[0])
        seen = []

        def check(loc, _glob, venv=venv, name=name, seen=seen):
            for i, info in enumerate(loc["infos"]):
                e = venv.envs[i].unwrapped
                rho = float(np.sum(info["dispatch"])) / max(info["served"], 1e-12)
                assert info["repair_l1"] <= 1e-5 * (1.0 + rho), (name, info["repair_l1"])
                if not loc["dones"][i]:
                    assert dynamics.is_feasible(e.instance, e.jobs, e.dispatch)
                seen.append(info["repair_l1"])

        rewards, _ = evaluate_policy(agent, venv, n_eval_episodes=2, callback=check,
                                     return_episode_rewards=True)
        assert len(seen) >= 20 and all(np.isfinite(rewards))


def test_agents_refuse_other_envs():
    env = gym.make("schedgym/GainOverhead-v0")
    with pytest.raises(ValueError, match="does not support"):
        agents.make("onsocmax", env)


@pytest.mark.parametrize("rule", ["max-first", "equal-share"])
def test_slot_driven_variants_are_feasible(rule):
    env = gym.make(ENV_ID, utility="log", n_instances=3, horizon=6, n_jobs=8,
                   capacity_mean=4.0, capacity_sd=0.4).unwrapped
    env.reset(seed=1)
    X = simulate_slot_policy(env.instance, env.jobs, rule)
    assert dynamics.is_feasible(env.instance, env.jobs, X)
    assert dynamics.social_welfare(env.instance, env.jobs, X)[0] > 0
    with pytest.raises(ValueError, match="rule"):
        simulate_slot_policy(env.instance, env.jobs, "greedy")


#: Every classical DeadlineWelfare agent and the action mode it plays in.
CLASSICAL = [("onsocmax", "dispatch"), ("max-first", "dispatch"), ("equal-share", "dispatch"),
             ("jsq", "dispatch"), ("myopic-welfare", "dispatch"), ("time-of-use", "dispatch"),
             ("fixed-price", "pricing")]


@pytest.mark.parametrize("name, mode", CLASSICAL)
def test_every_agent_feasible_on_a_split_of_every_node(name, mode):
    """The trace scenario with every node of the shipped sample, its test split: each step's
    dispatch satisfies (4)-(7) given the usage before it, and the whole episode's does."""
    env = gym.make(ENV_ID, scenario="alibaba-gpu-2023", n_instances="all", split="test",
                   horizon=6, n_jobs=None, utility="log", action_mode=mode).unwrapped
    agent = agents.make(name, env, **({"futures": 2} if name == "time-of-use" else {}))
    obs, _ = env.reset(seed=2)
    assert env.instance.n_instances == 1523 and env.jobs.n_jobs > 5
    done = False
    while not done:
        n, usage = env.job_index, env.usage.copy()
        obs, r, done, _, info = env.step(agent.predict(obs, deterministic=True)[0])
        # the float32 action's rounding over thousands of units: the repair trims ~1e-6
        assert np.isfinite(r) and info["repair_l1"] <= 1e-5 * (1.0 + env.jobs.workload[n])
        assert dynamics.step_violation(env.instance, env.jobs, n, info["dispatch"], usage) \
            <= 1e-7
    assert dynamics.is_feasible(env.instance, env.jobs, env.dispatch)


@pytest.mark.parametrize("name", [n for n, mode in CLASSICAL if mode == "dispatch"])
def test_flat_agents_refuse_the_entity_observation_in_one_line(name):
    env = gym.make(ENV_ID, obs_mode="entities")
    with pytest.raises(ValueError, match=r"obs_mode='entities' is invalid for .*: it reads "
                                         r"the flat observation"):
        agents.make(name, env)
