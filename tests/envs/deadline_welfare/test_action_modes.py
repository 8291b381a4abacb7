"""DeadlineWelfare-v0 action modes and instance features: the pricing decoder is
feasible for every action in its box and optimal for its per-job problem (cvxpy), both checkers
pass in every mode, common random numbers across modes, spaces independent of instance_seed."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedgym.envs.deadline_welfare import ENV_ID, dynamics
from schedgym.envs.deadline_welfare.actions import ACTION_MODES, best_response, pricing_params

from .conftest import SMALL, make_tiny

unit = st.floats(-1.0, 1.0, allow_nan=False, width=32)


def test_modes_are_listed_default_first():
    env = gym.make(ENV_ID)
    assert env.unwrapped.metadata["action_modes"] == ACTION_MODES == ("dispatch", "pricing",
                                                                      "unit_prices",
                                                                      "demand_price")
    assert env.unwrapped.action_mode == "dispatch"
    assert gym.make(ENV_ID, action_mode="pricing").action_space.shape == (3,)
    assert gym.make(ENV_ID, action_mode="unit_prices").action_space.shape == (240,)
    assert gym.make(ENV_ID, action_mode="demand_price").action_space.shape == (1,)
    with pytest.raises(ValueError, match="action_mode='raw' is invalid: must be one of"):
        gym.make(ENV_ID, action_mode="raw")


@pytest.mark.parametrize("mode, features", [("dispatch", True), ("pricing", False),
                                            ("pricing", True), ("unit_prices", True),
                                            ("demand_price", False)])
@pytest.mark.parametrize("utility", ["linear", "sqrt"])
def test_both_env_checkers_pass_in_every_mode(mode, features, utility):
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    kw = dict(action_mode=mode, instance_features=features, utility=utility, **SMALL)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make(ENV_ID, **kw).unwrapped)
        sb3_check_env(gym.make(ENV_ID, **kw).unwrapped)
    env = gym.make(ENV_ID, **kw)  # the checkers raise on failure; the spaces hold what they see
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs) and ("instance" in obs) == features


def test_pricing_on_the_tiny_instance_by_hand():
    # two units, a = 2, beta = 0.5, C = 10: value 2.05 each; xbar = 3, rho = 5; v = 2.05
    env = make_tiny(action_mode="pricing")
    env.reset(seed=0)
    _, r, _, _, info = env.step(np.zeros(3, np.float32))  # prices 0, q = 1: fill in flat order
    np.testing.assert_allclose(info["dispatch"], [[3.0, 2.0]])
    assert r == pytest.approx(2.0 * 5.0 + 0.5 * 5.0 / 10.0)
    assert info["repair_l1"] == 0.0
    env.reset(seed=0)
    _, r, _, _, info = env.step(np.array([0.0, 0.0, -0.5], np.float32))  # q = 0.5
    np.testing.assert_allclose(info["dispatch"], [[2.5, 0.0]])
    env.reset(seed=0)
    _, r, _, _, info = env.step(np.array([1.0, 0.0, 0.0], np.float32))  # price = v: no gain
    assert r == 0.0 and info["dispatch"].sum() == 0.0
    # second job: congestion slope 1 -> price 2.05 * 0.3 on unit 0 (usage 3/10), 0.2 on unit 1
    env.reset(seed=0)
    env.step(np.zeros(3, np.float32))
    env2 = make_tiny(action_mode="pricing")
    env2.reset(seed=0)
    env2.step(np.zeros(3, np.float32))
    x = env.decode_action(np.array([0.0, 1.0, 0.0], np.float32))
    # unit 1 is cheaper (price 0.41 vs 0.615) so it fills first; unit 0 still pays off
    np.testing.assert_allclose(x, [[2.0, 3.0]])
    np.testing.assert_allclose(env2.decode_action(np.zeros(3, np.float32)), [[3.0, 2.0]])


def test_unit_prices_on_the_tiny_instance_by_hand():
    # two units, a = 2, beta = 0.5, C = 10: value 2.05 each; xbar = 3, rho = 5; v = 2.05
    env = make_tiny(action_mode="unit_prices")
    env.reset(seed=0)
    _, r, _, _, info = env.step(np.zeros(2, np.float32))  # prices 0: fill in flat order
    np.testing.assert_allclose(info["dispatch"], [[3.0, 2.0]])
    assert r == pytest.approx(2.0 * 5.0 + 0.5 * 5.0 / 10.0) and info["repair_l1"] == 0.0
    env.reset(seed=0)  # unit 0 priced at 0.5 v: unit 1 first (3), then unit 0 still pays (2)
    x = env.decode_action(np.array([0.5, -0.4], np.float32))
    np.testing.assert_allclose(x, [[2.0, 3.0]])
    _, r, _, _, _ = env.step(np.array([1.0, 0.0], np.float32))  # price v on unit 0: only unit 1
    assert r == pytest.approx(2.05 * 3.0)


def test_unit_prices_zero_action_is_myopic_welfare_and_time_of_use_is_one_action():
    """The zero action is ``myopic-welfare``'s decision; ``time-of-use``'s prices, given as
    the action ``lam D / C`` (float64), give its decisions (the agents play in the dispatch
    mode, whose float32 action carries their dispatch to about 1e-7 relative)."""
    from schedgym import agents

    kw = dict(scenario="congested", utility="linear")
    env = gym.make(ENV_ID, action_mode="unit_prices", **kw).unwrapped
    play = gym.make(ENV_ID, **kw).unwrapped
    mw, tou = agents.make("myopic-welfare", play), agents.make("time-of-use", play, futures=3)
    later = env.expected_later_demand(3) / env.instance.capacity.reshape(-1)
    _same_decisions(env, play, ((mw, lambda s: np.zeros(240)), (tou, lambda s: tou.lam * later[s])))


def test_demand_price_zero_is_myopic_welfare_and_lam_is_time_of_use():
    """``a_0 = 0`` is ``myopic-welfare``'s decision, ``a_0 = lam`` (float64) ``time-of-use``'s
    at that ``lam`` (its default and another; its default table: 30 synthetic episodes, the
    env's ``expected_later_demand``)."""
    from schedgym import agents

    kw = dict(scenario="congested", utility="linear")
    env = gym.make(ENV_ID, action_mode="demand_price", **kw).unwrapped
    play = gym.make(ENV_ID, **kw).unwrapped
    mw, tou = agents.make("myopic-welfare", play), agents.make("time-of-use", play)
    other = agents.make("time-of-use", play, lam=0.3)
    assert tou.lam == 0.15
    _same_decisions(env, play, ((mw, lambda s: np.zeros(1)), (tou, lambda s: np.full(1, 0.15)),
                                (other, lambda s: np.full(1, 0.3))))


def _same_decisions(env, play, pairs) -> None:
    """Each ``(agent, action)``: ``env`` stepped with ``action(arrival slot)`` makes the agent's
    decisions on ``play`` (same episode)."""
    for agent, action in pairs:
        obs, _ = play.reset(seed=5)
        env.reset(seed=5)
        done = False
        while not done:
            s = int(env.jobs.arrival[env.job_index]) if env.job_index < env.jobs.n_jobs else 0
            _, r, done, _, info = env.step(action(s))
            obs, r_play, _, _, info_play = play.step(agent.predict(obs, deterministic=True)[0])
            np.testing.assert_allclose(info["dispatch"], info_play["dispatch"], rtol=1e-6,
                                       atol=1e-9)
            assert r == pytest.approx(r_play, rel=1e-6, abs=1e-9)


def test_pricing_params_map():
    assert pricing_params(np.array([-0.3, 0.5, 0.2]), 4.0) == (0.0, 2.0, 1.0)
    assert pricing_params(np.array([1.0, -1.0, -1.0]), 4.0) == (4.0, 0.0, 0.0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(unit, min_size=18, max_size=18), min_size=8, max_size=8),
       st.sampled_from(["linear", "log", "sqrt"]), st.integers(0, 2**16),
       st.sampled_from(["pricing", "unit_prices", "demand_price"]))
def test_price_decisions_are_always_feasible(actions, utility, seed, mode):
    """Every decoded price decision is within the job's room and workload, and the repair
    moves nothing (the modes decode into a best response; SMALL's mesh has 18 units)."""
    env = gym.make(ENV_ID, action_mode=mode, utility=utility, capacity_mean=6.0,
                   capacity_sd=1.0, workload_mean=30.0, **SMALL).unwrapped
    env.reset(seed=seed)
    for a in actions:
        act = np.array(a[:env.action_space.shape[0]], np.float32)
        jobs, n, usage = env.jobs, env.job_index, env.usage.copy()
        x = env.decode_action(act)
        room = np.where(jobs.mask[n], np.minimum(jobs.capability[n],
                                                 env.instance.capacity - usage), 0.0)
        assert np.all(x >= 0) and np.all(x <= room + 1e-12)
        assert x.sum() <= jobs.workload[n] * (1 + 1e-12)
        _, _, done, _, info = env.step(act)
        assert info["repair_l1"] <= 1e-9
        np.testing.assert_allclose(info["dispatch"], x, atol=1e-9)
        if done:
            break
    assert dynamics.is_feasible(env.instance, env.jobs, env.dispatch)


@pytest.mark.parametrize("bad, msg", [(np.array([np.nan, 0, 0]), "non-finite"),
                                      (np.array([0, np.inf, 0]), "non-finite"),
                                      (np.zeros(4), r"shape \(4,\)")])
def test_pricing_rejects_nan_inf_and_wrong_shapes(bad, msg):
    env = gym.make(ENV_ID, action_mode="pricing", **SMALL)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=msg):
        env.step(bad)
    with pytest.raises(ValueError, match="no encode_action"):
        env.unwrapped.encode_action(np.zeros((3, 6)))


def _cvxpy_best_response(code, a, w, c, room, price, budget):
    cp = pytest.importorskip("cvxpy")
    x = cp.Variable(a.size)
    f = {0: a @ x, 1: a @ cp.log1p(x), 2: a @ cp.sqrt(x)}[code]
    prob = cp.Problem(cp.Maximize(f + (w / c - price) @ x),
                      [x >= 0, x <= room, cp.sum(x) <= budget])
    prob.solve(solver="CLARABEL")
    xs = np.clip(x.value, 0.0, room)
    return _objective(code, a, w, c, price, xs * min(1.0, budget / max(xs.sum(), 1e-300)))


def _objective(code, a, w, c, price, x):
    f = {0: a * x, 1: a * np.log1p(x), 2: a * np.sqrt(x)}[code]
    return float(np.sum(f + (w / c - price) * x))


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("code", [0, 1, 2])
@pytest.mark.parametrize("seed", range(6))
def test_best_response_is_the_exact_per_job_optimum(code, seed):
    g = np.random.default_rng(seed)
    m = 8
    a, w = g.uniform(1, 3, m), g.uniform(0.1, 0.5, m)
    c, room = g.uniform(2, 20, m), g.uniform(0, 7, m) * (g.random(m) > 0.2)
    price = g.uniform(0, 2.5, m) * (seed % 2)
    budget = g.uniform(0.5, 1.2) * room.sum()
    x = best_response(code, a, w, c, room, price, budget)
    assert np.all(x >= 0) and np.all(x <= room + 1e-12) and x.sum() <= budget * (1 + 1e-12)
    ref = _cvxpy_best_response(code, a, w, c, room, price, budget)
    mine = _objective(code, a, w, c, price, x)
    assert mine >= ref - 1e-6 * max(1.0, abs(ref))  # at least cvxpy's (clipped) solution
    assert mine == pytest.approx(ref, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("scenario", ["paper-default", "congested", "alibaba-gpu-2023"])
def test_common_random_numbers_across_modes(scenario):
    envs = [gym.make(ENV_ID, scenario=scenario, action_mode=m, instance_features=f).unwrapped
            for m in ACTION_MODES for f in (False, True)]
    for seed in (0, 7):
        for e in envs:
            e.reset(seed=seed)
        ref = envs[0].jobs
        for e in envs[1:]:
            for name in ("arrival", "deadline", "workload", "allowed", "capability", "coef",
                         "weight"):
                np.testing.assert_array_equal(getattr(e.jobs, name), getattr(ref, name))


@pytest.mark.parametrize("scenario", ["paper-default", "congested", "alibaba-gpu-2023"])
@pytest.mark.parametrize("mode", ACTION_MODES)
def test_spaces_do_not_depend_on_the_instance_seed(scenario, mode):
    envs = [gym.make(ENV_ID, scenario=scenario, action_mode=mode, instance_features=True,
                     instance_seed=i) for i in (0, 1, 17)]
    assert not np.array_equal(envs[0].unwrapped.instance.capacity,
                              envs[1].unwrapped.instance.capacity)
    for e in envs[1:]:
        assert e.observation_space == envs[0].observation_space
        assert e.action_space == envs[0].action_space
    for e in envs:
        obs, _ = e.reset(seed=3)
        assert e.observation_space.contains(obs)


def test_instance_features_are_the_capacities():
    env = gym.make(ENV_ID, instance_features=True, **SMALL)
    obs, _ = env.reset(seed=0)
    c = env.unwrapped.instance.capacity[:, 0]
    np.testing.assert_allclose(obs["instance"], np.r_[c, c.mean(), c.min()], rtol=1e-6)
    assert "instance" not in gym.make(ENV_ID, **SMALL).reset(seed=0)[0]
