"""DeadlineWelfare-v0: checkers, hand-computed rewards and repair, CRN/determinism, bad input."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedgym.envs.deadline_welfare import ENV_ID, dynamics
from schedgym.envs.deadline_welfare.types import DeadlineWelfareInstance, Jobs

from .conftest import SMALL, make_tiny

tiny_env = make_tiny


@pytest.mark.parametrize("utility", ["linear", "log", "sqrt"])
def test_both_env_checkers_pass_without_warnings(utility):
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gym.make(ENV_ID, utility=utility, **SMALL)
        check_env(env.unwrapped)
        sb3_check_env(gym.make(ENV_ID, utility=utility, **SMALL).unwrapped)
    obs, _ = env.reset(seed=0)  # the checkers raise on failure; the spaces hold what they see
    assert env.observation_space.contains(obs)


def test_hand_computed_reward_and_workload_repair():
    env = tiny_env()
    env.reset(seed=0)
    _, r, term, trunc, info = env.step(np.ones(2, dtype=np.float32))
    # proposal x̄ = 3 on both units = 6 > rho = 5 -> scaled by 5/6 -> 2.5 each
    np.testing.assert_allclose(info["dispatch"], [[2.5, 2.5]])
    assert r == pytest.approx(2 * 2.0 * 2.5 + 2 * 0.5 * 2.5 / 10.0)  # 10.25
    assert info["repair_workload"] == pytest.approx(1.0)
    assert info["repair_capacity"] == 0.0
    assert info["served"] == pytest.approx(1.0)
    assert info["units_used"] == 2
    assert not term and not trunc


def test_hand_computed_capacity_repair_and_episode_end():
    env = tiny_env(capacity=4.0)
    env.reset(seed=0)
    env.step(np.ones(2, dtype=np.float32))  # 2.5 + 2.5
    _, r, term, _, info = env.step(np.ones(2, dtype=np.float32))
    # remaining capacity 1.5 per unit: 3 -> 1.5 on each, total 3 <= rho
    np.testing.assert_allclose(info["dispatch"], [[1.5, 1.5]])
    assert info["repair_capacity"] == pytest.approx(3.0)
    assert r == pytest.approx(2 * 2.0 * 1.5 + 2 * 0.5 * 1.5 / 4.0)
    assert term
    assert info["served_fraction"] == pytest.approx(8.0 / 10.0)
    assert info["welfare"] == pytest.approx(info["welfare_jobs"] + info["welfare_cluster"])
    np.testing.assert_allclose(info["final_usage"], [[4.0, 4.0]])
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(np.ones(2, dtype=np.float32))


def test_log_and_sqrt_rewards_hand_computed():
    for util, f in (("log", np.log1p), ("sqrt", np.sqrt)):
        env = tiny_env(utility=util)
        env.reset(seed=0)
        a = env.encode_action(np.array([[1.0, 2.0]]))
        _, r, *_ = env.step(a)
        assert r == pytest.approx(2.0 * (f(1.0) + f(2.0)) + 0.5 * 3.0 / 10.0, rel=1e-6)


def test_negative_and_out_of_box_actions_are_repaired_or_clipped():
    env = tiny_env()
    env.reset(seed=0)
    _, r, _, _, info = env.step(np.array([-1.0, -5.0], dtype=np.float32))
    assert r == 0.0 and info["action_clip"] == pytest.approx(4.0)
    np.testing.assert_array_equal(info["dispatch"], 0.0)


@pytest.mark.parametrize("bad, msg", [
    (np.array([np.nan, 0.0]), "non-finite"), (np.array([0.0, np.inf]), "non-finite"),
    (np.zeros(3), r"shape \(3,\)"), (np.zeros((2, 2)), r"shape \(2, 2\)")])
def test_bad_actions_raise(bad, msg):
    env = tiny_env()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=msg):
        env.step(bad)


@pytest.mark.parametrize("kw, word", [
    ({"utility": "poly"}, "utility"), ({"utility": "cubic"}, "utility"),
    ({"workload_mean": 0.0}, "workload_mean"), ({"workload_mean": -3.0}, "workload_mean"),
    ({"capacity_mean": 0.0}, "capacity_mean"), ({"capability_mean": -1.0}, "capability_mean"),
    ({"n_instances": 0}, "n_instances"), ({"horizon": 0}, "horizon"),
    ({"arrival_rate": 0.0}, "arrival_rate"), ({"coef_range": (0.0, 1.0)}, "coef_range"),
    ({"bogus": 1}, "bogus"), ({"bound_mode": "magic"}, "bound_mode"),
    ({"locality_size": 99}, "locality_size"), ({"workload_sd": float("nan")}, "workload_sd"),
])
def test_bad_config_raises_clear_error(kw, word):
    with pytest.raises(ValueError, match=word):
        gym.make(ENV_ID, **kw)


def test_bad_instance_data_raises():
    with pytest.raises(ValueError, match="capacity"):
        DeadlineWelfareInstance(capacity=np.array([[1.0, 0.0]]))
    with pytest.raises(ValueError, match="utility"):
        DeadlineWelfareInstance(capacity=np.ones((1, 2)), utility="exp")
    with pytest.raises(ValueError, match="workload"):
        Jobs(arrival=[0], deadline=[1], workload=[0.0], allowed=np.ones((1, 1), bool),
             capability=[1.0], coef=[1.0], weight=[0.1])
    with pytest.raises(ValueError, match="deadline"):
        Jobs(arrival=[2], deadline=[1], workload=[1.0], allowed=np.ones((1, 1), bool),
             capability=[1.0], coef=[1.0], weight=[0.1])
    with pytest.raises(ValueError, match="capability"):
        Jobs(arrival=[0], deadline=[1], workload=[1.0], allowed=np.ones((1, 1), bool),
             capability=[np.nan], coef=[1.0], weight=[0.1])
    with pytest.raises(ValueError, match="scenario"):
        gym.make(ENV_ID, scenario="nope")


def test_same_seed_same_trajectory_and_crn():
    def run(seed):
        env = gym.make(ENV_ID, utility="log", **SMALL)
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(123)
        traj = [obs]
        rewards = []
        done = False
        while not done:
            obs, r, done, _, _ = env.step(rng.uniform(-1, 1, env.action_space.shape)
                                          .astype(np.float32))
            traj.append(obs)
            rewards.append(r)
        return traj, rewards, env.unwrapped.jobs

    t1, r1, j1 = run(5)
    t2, r2, j2 = run(5)
    assert r1 == r2
    for o1, o2 in zip(t1, t2, strict=True):
        for k in o1:
            np.testing.assert_array_equal(o1[k], o2[k])
    np.testing.assert_array_equal(j1.workload, j2.workload)
    _, r3, j3 = run(6)
    assert not np.array_equal(j1.workload, j3.workload)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), util=st.sampled_from(["linear", "log", "sqrt"]),
       cap=st.sampled_from([2.0, 20.0]))
def test_return_equals_social_welfare_and_is_feasible(seed, util, cap):
    env = gym.make(ENV_ID, utility=util, capacity_mean=cap, capacity_sd=0.1 * cap,
                   locality_size=2, **SMALL)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    total, done = 0.0, False
    while not done:
        _, r, done, _, info = env.step(rng.uniform(-1.5, 1.5, env.action_space.shape)
                                       .astype(np.float32))
        assert np.isfinite(r) and r >= 0
        total += r
    e = env.unwrapped
    sw, uj, uc = dynamics.social_welfare(e.instance, e.jobs, e.dispatch)
    assert total == pytest.approx(sw, rel=1e-12, abs=1e-12)
    assert info["welfare"] == pytest.approx(sw) and info["welfare_jobs"] == pytest.approx(uj)
    assert dynamics.is_feasible(e.instance, e.jobs, e.dispatch)


def test_observation_shows_job_exactly_and_usage():
    env = gym.make(ENV_ID, **SMALL)
    obs, _ = env.reset(seed=3)
    e = env.unwrapped
    jobs = e.jobs
    m = jobs.mask[0].reshape(-1)
    np.testing.assert_array_equal(obs["allowed"], m.astype(np.float32))
    assert obs["workload"][0] == jobs.workload[0]  # float32-exact data
    np.testing.assert_array_equal(obs["capability"][m], jobs.capability[0].reshape(-1)[m])
    np.testing.assert_array_equal(obs["utility_coef"][~m], 0.0)
    assert tuple(obs["window"]) == (jobs.arrival[0], jobs.deadline[0])
    obs, *_ = env.step(np.ones(env.action_space.shape, np.float32))
    np.testing.assert_allclose(obs["usage"], e.usage.reshape(-1), rtol=1e-6)
    assert obs["progress"][0] == pytest.approx(1 / jobs.n_jobs)


def test_encode_decode_roundtrip():
    env = gym.make(ENV_ID, **SMALL).unwrapped
    env.reset(seed=0)
    upper = dynamics.unit_upper(env.jobs, 0)
    x = upper * np.random.default_rng(0).uniform(0, 1, upper.shape)
    np.testing.assert_allclose(env.decode_action(env.encode_action(x)), x, atol=1e-5)


def test_generator_shapes_windows_and_locality():
    env = gym.make(ENV_ID, locality_size=4).unwrapped
    env.reset(seed=1)
    jobs = env.jobs
    assert jobs.n_jobs == 20 and jobs.mask.shape == (20, 10, 24)
    assert np.all(np.diff(jobs.arrival) >= 0) and np.all(jobs.deadline >= jobs.arrival)
    assert np.all(jobs.allowed.sum(axis=1) == 4)
    assert np.all(jobs.mask.any(axis=(1, 2)))
    c = env.instance.capacity
    assert np.all(c == c[:, :1])  # constant over slots


def test_marginal_bounds_brute_force():
    env = gym.make(ENV_ID, utility="sqrt", **SMALL).unwrapped
    env.reset(seed=2)
    inst, jobs = env.instance, env.jobs
    lo, hi = [], []
    for n, r, t in np.argwhere(jobs.mask):
        a, b = jobs.coef[n, r, t], jobs.weight[n, r, t] / inst.capacity[r, t]
        lo.append(a / (2 * np.sqrt(jobs.capability[n, r, t])) + b)
        hi.append(a / (2 * np.sqrt(inst.sqrt_v_floor)) + b)
    assert env.bounds == pytest.approx((min(lo), max(hi)))


def test_prior_bounds_cover_the_realised_bounds():
    for util in ("linear", "log", "sqrt"):
        env = gym.make(ENV_ID, utility=util, bound_mode="prior", **SMALL).unwrapped
        env.reset(seed=4)
        io, v = env.bounds
        env2 = gym.make(ENV_ID, utility=util, **SMALL).unwrapped
        env2.reset(seed=4)
        io2, v2 = env2.bounds
        assert io <= io2 + 1e-12 and v >= v2 - 1e-12


def test_empty_episode_has_one_null_step():
    env = gym.make(ENV_ID, n_jobs=None, horizon=1, arrival_rate=1e-9)
    obs, info = env.reset(seed=0)
    assert info["n_jobs"] == 0
    _, r, term, _, _ = env.step(env.action_space.sample())
    assert r == 0.0 and term


def test_render_modes():
    env = gym.make(ENV_ID, render_mode="rgb_array", **SMALL)
    env.reset(seed=0)
    img = env.render()
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    env = gym.make(ENV_ID, render_mode="ansi", **SMALL)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    assert "welfare" in env.render()


def test_trace_scenario_runs_and_passes_checkers():
    from gymnasium.utils.env_checker import check_env

    env = gym.make(ENV_ID, scenario="alibaba-gpu-2023")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", ResourceWarning)
        check_env(env.unwrapped)
    env.reset(seed=2)
    e = env.unwrapped
    assert e.instance.n_instances == 10 and e.jobs.n_jobs <= 20
    done = False
    while not done:
        _, r, done, _, _ = env.step(np.ones(env.action_space.shape, np.float32))
        assert np.isfinite(r)
    assert dynamics.is_feasible(e.instance, e.jobs, e.dispatch)
