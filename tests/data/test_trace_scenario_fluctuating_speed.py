"""FluctuatingSpeed-v0 scenario 'alibaba-gpu-2023' (ESDP trace mode, spec esdp §6.2)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import schedgym  # noqa: F401  (registers the env ids)
import schedgym.envs.fluctuating_speed.trace as fs_trace  # registers the scenario
from schedgym.data import load_sample

ID = "schedgym/FluctuatingSpeed-v0"
SC = "alibaba-gpu-2023"


def _make(**kw):
    return gym.make(ID, scenario=SC, **kw).unwrapped


def _tp(env, seed):
    return fs_trace.trace_problem({**env.params, **fs_trace.EXTRA}, seed)


def test_minmax_round_by_hand():
    np.testing.assert_array_equal(fs_trace._minmax_round(np.array([3.0, 11.3, 64.2]), 1, 2),
                                  [1, 1, 2])  # (11.3-3)/(61.2) = 0.14 -> 1
    np.testing.assert_array_equal(fs_trace._minmax_round(np.array([5.0, 5.0]), 1, 2), [1, 1])


def test_instance_follows_the_trace():
    env = _make(instance_seed=3)
    inst, tp = env.instance, _tp(env, 3)
    assert (inst.n_types, inst.n_instances, inst.n_resources) == (8, 40, 3)
    np.testing.assert_array_equal(inst.edges, tp.edges)
    assert inst.mask.any(axis=1).all() and inst.mask.sum(axis=1).max() <= 4
    tr = load_sample()
    for l, r in inst.edges:  # locality: GPU types on GPU nodes of their models
        cls = tp.type_class[l]
        if cls != "any":
            assert tr.node_gpu[tp.node_index[r]] > 0
        if cls.startswith("gpu:"):
            assert tr.node_model[tp.node_index[r]] in cls[4:].split("|")
    assert set(np.unique(inst.requests)) <= {1, 2}
    # requests are per port: equal on every edge of a port; the largest real request -> 2
    for l in range(inst.n_types):
        cols = inst.requests[:, inst.edges[:, 0] == l]
        assert (cols == cols[:, :1]).all()
    big = int(np.argmax(tp.requests[:, 0]))
    assert (inst.requests[0, inst.edges[:, 0] == big] == 2).all()
    assert set(inst.capacities.tolist()) <= {3, 6}  # kappa 3 x {1, 2}
    again = _make(instance_seed=3).instance
    for name in ("edges", "requests", "capacities", "mean", "cost"):
        np.testing.assert_array_equal(getattr(inst, name), getattr(again, name))


def test_arrivals_are_the_whole_trace_in_order():
    env = _make(arrival_prob=1.0, horizon=500)
    tp = _tp(env, 0)
    assert tp.n_slots == 500  # span split into T equal slots
    env.reset(seed=11)
    np.testing.assert_array_equal(env.arrivals, tp.arrival_indicators)
    thinned = _make(arrival_prob=0.5, horizon=500)
    thinned.reset(seed=11)
    assert np.all(thinned.arrivals <= env.arrivals) and thinned.arrivals.sum() < env.arrivals.sum()
    fixed = _make(slot_seconds=3600.0, horizon=100)
    fixed.reset(seed=1)
    assert fixed.arrivals.shape == (100, 8)


def test_bad_values():
    with pytest.raises(ValueError, match="degree_cap"):
        _make(degree_cap=0)
    with pytest.raises(ValueError, match="slot_seconds"):
        _make(slot_seconds=-5.0)


def test_env_checkers_pass():
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make(ID, scenario=SC, horizon=20).unwrapped, skip_render_check=True)
        sb3_check(gym.make(ID, scenario=SC, horizon=20), warn=True)
