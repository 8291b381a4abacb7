"""ESDP agent (spec esdp §3): scaled index, P4 + rule (21) against brute force, big-M start,
statistics on effective edges only."""

from __future__ import annotations

import itertools
import math

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedgym  # noqa: F401
from schedgym import agents
from schedgym.agents.esdp import DELTAS, ESDP, EXPLORATIONS
from schedgym.envs.fluctuating_speed import dynamics

ENV_ID = "schedgym/FluctuatingSpeed-v0"


def small_env(seed: int = 0, **kw):
    kw = {"n_types": 3, "n_instances": 4, "edge_prob": 0.5, "capacity_scale": 2,
          "horizon": 50, **kw}
    return gym.make(ENV_ID, instance_seed=seed, **kw)


def test_default_formulas_match_the_paper():
    t = 10
    assert DELTAS["loglog"](t) == pytest.approx(1 / (math.log(math.log(11) + 1) + 1))
    assert EXPLORATIONS["paper"](t, 16) == pytest.approx(
        math.log(11) + 4 * 16 * math.log(math.log(11) + 1))
    env = gym.make(ENV_ID)
    ag = ESDP(env)
    assert ag.m == math.ceil(0.5 * env.unwrapped.instance.n_edges)


def test_scaled_index_by_hand():
    env = small_env()
    ag = ESDP(env)
    E = ag.n_edges
    n = np.zeros(E)
    n[0], n[1] = 2, 5
    sums = np.zeros(E)
    sums[0], sums[1] = 0.9, 1.0
    t = 3
    theta, s2, eta = ag.scaled_index({"n": n, "sum": sums}, t)
    delta = 1 / (math.log(math.log(4) + 1) + 1)
    assert eta == math.ceil(ag.m / delta)
    g = math.log(4) + 4 * ag.m * math.log(math.log(4) + 1)
    assert theta[0] == math.ceil(eta * 0.45) and theta[1] == math.ceil(eta * 0.2)
    assert s2[0] == math.ceil(eta**2 * g / 4) and s2[1] == math.ceil(eta**2 * g / 10)
    assert np.all(theta[2:] == 0) and np.all(s2[2:] == 1e12)


def _brute_p4(A, c, theta, s2, S):
    """s* and V*(s*) of (21) by enumeration over capacity-feasible selections."""
    E = A.shape[1]
    X = np.array(list(itertools.product([0, 1], repeat=E)))
    X = X[np.all(X @ A.T <= c, axis=1)]
    best, s_best, v_best = -np.inf, None, None
    for s in range(S + 1):
        ok = X @ theta >= s
        if not ok.any():
            continue
        v = float((X[ok] @ s2).max())
        score = s + math.sqrt(v)
        if score >= best:
            best, s_best, v_best = score, s, v
    return s_best, v_best


def random_p4_case(inst_seed: int, stat_seed: int):
    """``(instance, ESDP agent, statistics, rng)`` for the P4 brute-force checks: a small
    instance of ``inst_seed`` and random statistics (plays ``n_e`` in 0-5, their sums) from
    ``rng = default_rng(stat_seed)``, which the caller may go on drawing from; ``None`` when the
    instance has more than 11 edges (too many for the brute force)."""
    env = small_env(inst_seed)
    inst = env.unwrapped.instance
    if inst.n_edges > 11:
        return None
    rng = np.random.default_rng(stat_seed)
    n = rng.integers(0, 6, size=inst.n_edges).astype(float)
    return inst, ESDP(env), {"n": n, "sum": n * rng.random(inst.n_edges)}, rng


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 500), st.integers(0, 2**31 - 1), st.integers(1, 3000))
def test_p4_selection_equals_brute_force(inst_seed, stat_seed, t):
    case = random_p4_case(inst_seed, stat_seed)
    if case is None:
        return
    inst, ag, stats, _ = case
    x = ag.solve_p4(stats, t)
    theta, s2, eta = ag.scaled_index(stats, t)
    s_star, v_star = _brute_p4(inst.requests, inst.capacities, theta, s2, eta * ag.m)
    assert ag.last["s_star"] == s_star
    assert float(s2 @ x) == v_star and theta @ x >= s_star
    assert dynamics.is_feasible(inst, x)


def test_first_slot_selects_a_maximum_cardinality_feasible_set():
    for seed in range(5):
        env = small_env(seed, arrival_prob=0.5)
        inst = env.unwrapped.instance
        ag = agents.make("esdp", env)
        obs, _ = env.reset(seed=seed)
        a, _ = ag.predict(obs)
        x_p4 = ag.last["x_p4"]
        best = max(sum(bits) for bits in itertools.product([0, 1], repeat=inst.n_edges)
                   if dynamics.is_feasible(inst, np.array(bits))) if inst.n_edges <= 14 \
            else ag.n_max
        assert x_p4.sum() == best and dynamics.is_feasible(inst, x_p4)
        present = dynamics.edge_mask(inst, obs["arrivals"])
        assert a.tolist() == (x_p4 * present).tolist()  # masking after the DP (§3.6)


def test_statistics_change_only_on_effective_edges():
    env = gym.make(ENV_ID, horizon=60, arrival_prob=0.6, invalid_action="raise")
    ag = agents.make("esdp", env)
    obs, _ = env.reset(seed=1)
    n_prev = sum_prev = None
    sel_prev = fb_prev = None
    for step in range(60):
        a, _ = ag.predict(obs, episode_start=np.array([step == 0]))
        st_ = ag._states[0]
        if n_prev is not None:
            np.testing.assert_array_equal(st_["n"] - n_prev, sel_prev)
            np.testing.assert_allclose(st_["sum"] - sum_prev, fb_prev, atol=1e-6)
        n_prev, sum_prev = st_["n"].copy(), st_["sum"].copy()
        obs, _, _, trunc, info = env.step(a)
        sel_prev, fb_prev = info["selection"], info["slot_feedback"]
        assert info["n_masked"] == 0
        if trunc:
            break


def test_arrival_aware_variant_only_plans_present_ports():
    env = gym.make(ENV_ID, horizon=30, arrival_prob=0.5, invalid_action="raise")
    inst = env.unwrapped.instance
    ag = agents.make("esdp-aa", env)
    assert ag.arrival_aware
    obs, _ = env.reset(seed=0)
    for step in range(30):
        a, _ = ag.predict(obs, episode_start=np.array([step == 0]))
        present = dynamics.edge_mask(inst, obs["arrivals"])
        assert np.all(ag.last["x_p4"] <= present)
        obs, _, _, trunc, _ = env.step(a)


@pytest.mark.parametrize("kw", [{"delta": "log"}, {"delta": "logloglog"},
                                {"exploration": "loglog"}, {"exploration": "log"},
                                {"delta": lambda t: 0.5, "exploration": lambda t, m: 1.0}])
def test_variants_run_and_stay_feasible(kw):
    env = gym.make(ENV_ID, horizon=20, invalid_action="raise")
    ag = agents.make("esdp", env, **kw)
    obs, _ = env.reset(seed=0)
    for step in range(20):
        a, _ = ag.predict(obs, episode_start=np.array([step == 0]))
        obs, *_ = env.step(a)


@pytest.mark.parametrize("kw,match", [({"alpha": 0}, "alpha=0 is invalid"),
                                      ({"delta": "fast"}, "delta='fast' is invalid"),
                                      ({"exploration": 3}, "exploration=3 is invalid"),
                                      ({"arrival_aware": 1}, "arrival_aware=1 is invalid")])
def test_bad_hyperparameters(kw, match):
    with pytest.raises(ValueError, match=match):
        agents.make("esdp", gym.make(ENV_ID), **kw)
