"""Action modes of FluctuatingSpeed-v0: the ``"scores"`` decoder, the mode-independent
world (common random numbers), instance features and spaces that ignore the instance seed."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import schedgym  # noqa: F401  (registers the ids)
from schedgym.envs.fluctuating_speed import ENV_ID, dynamics, generate
from schedgym.envs.fluctuating_speed.actions import decode_scores, instance_features, to_grid
from schedgym.envs.fluctuating_speed.types import DEFAULTS

MODES = gym.make(ENV_ID).unwrapped.metadata["action_modes"]


def _reference_decode(inst, scores, arrivals):
    """Independent greedy: plain Python lists, sort by (-score, edge index)."""
    R = inst.n_instances
    cands = [(-float(scores[int(l) * R + int(r)]), e)
             for e, (l, r) in enumerate(inst.edges.tolist())
             if arrivals[l] > 0 and scores[l * R + r] > 0]
    left = inst.capacities.tolist()
    chosen = [0] * inst.n_edges
    for _, e in sorted(cands):
        need = inst.requests[:, e].tolist()
        if all(n <= c for n, c in zip(need, left, strict=True)):
            chosen[e] = 1
            left = [c - n for c, n in zip(left, need, strict=True)]
    return chosen


def test_modes_listed_default_first():
    assert MODES == ("selection", "scores")
    with pytest.raises(ValueError, match="action_mode='greedy' is invalid"):
        gym.make(ENV_ID, action_mode="greedy")
    with pytest.raises(ValueError, match="instance_features='yes' is invalid"):
        gym.make(ENV_ID, instance_features="yes")


def test_scores_decoder_hand_computed(tiny):
    # grid 2 x 3, edges (0,0) (0,2) (1,1) (1,2) -> cells 0, 2, 4, 5; A = [[1,2,1,1],[1,1,1,2]],
    # c = (3, 2). Scores: e3 0.9 > e1 0.8 > e0 0.5 > e2 0.1. e3 takes (1, 2): gpu full; e1
    # needs gpu 1 -> skip; e0 needs gpu 1 -> skip; e2 skip. -> {3}.
    s = np.zeros(6)
    s[[0, 2, 4, 5]] = [0.5, 0.8, 0.1, 0.9]
    assert decode_scores(tiny, s, np.array([1, 1])).tolist() == [0, 0, 0, 1]
    # port 1 absent: e1 (2, 1) then e0 (1, 1) -> load (3, 2) fits exactly
    assert decode_scores(tiny, s, np.array([1, 0])).tolist() == [1, 1, 0, 0]
    # non-positive scores are never selected
    s[[0, 2]] = [0.0, -0.3]
    assert decode_scores(tiny, s, np.array([1, 0])).tolist() == [0, 0, 0, 0]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 2**8 - 1), st.integers(0, 2**31 - 1))
def test_scores_decoder_feasible_maximal_and_equal_to_reference(seed, pattern, draw):
    inst = generate({**DEFAULTS, "n_types": 8, "n_instances": 6, "edge_prob": 0.4,
                     "capacity_scale": 1}, seed)
    rng = np.random.default_rng(draw)
    scores = rng.uniform(-1, 1, inst.n_types * inst.n_instances).astype(np.float32)
    if draw % 3 == 0:  # exact ties
        scores = np.round(scores * 2) / 2
    arrivals = np.array([(pattern >> l) & 1 for l in range(8)])
    x = decode_scores(inst, scores, arrivals)
    assert dynamics.is_feasible(inst, x)
    assert np.all(x <= dynamics.edge_mask(inst, arrivals))
    s_edge = scores[inst.cell_of_edge]
    assert np.all(s_edge[x > 0] > 0)
    left = inst.capacities - dynamics.load(inst, x)
    for e in np.flatnonzero((x == 0) & (s_edge > 0) & (arrivals[inst.port_of_edge] > 0)):
        assert np.any(inst.requests[:, e] > left)  # greedy is maximal
    assert x.tolist() == _reference_decode(inst, scores, arrivals)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("features", [False, True])
def test_both_checkers_pass_in_every_mode(mode, features):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make(ENV_ID, action_mode=mode, instance_features=features).unwrapped)
        sb3_check_env(gym.make(ENV_ID, action_mode=mode, instance_features=features), warn=True)


def test_scores_mode_rejects_nan_inf_and_shape_and_reports_clipping():
    env = gym.make(ENV_ID, action_mode="scores", horizon=5)
    env.reset(seed=0)
    n = env.action_space.shape[0]
    assert n == 8 * 40
    for bad in (np.nan, np.inf):
        a = np.zeros(n, dtype=np.float32)
        a[3] = bad
        with pytest.raises(ValueError, match="non-finite entry"):
            env.step(a)
    with pytest.raises(ValueError, match=r"must have shape \(320,\)"):
        env.step(np.zeros(5, dtype=np.float32))
    info = env.step(np.full(n, 3.0, dtype=np.float32))[4]
    assert info["action_clip"] == pytest.approx(2.0)
    assert info["n_masked"] == 0 and info["n_repaired"] == 0
    assert dynamics.is_feasible(env.unwrapped.instance, info["selection"])


def test_common_random_numbers_across_modes():
    envs = {m: gym.make(ENV_ID, action_mode=m, horizon=50) for m in MODES}
    rewards = {}
    for m, env in envs.items():
        env.reset(seed=7)
        u = env.unwrapped
        rewards[m] = (u.arrivals.copy(), u.utilities.copy())
    (a0, z0), (a1, z1) = rewards.values()
    np.testing.assert_array_equal(a0, a1)
    np.testing.assert_array_equal(z0, z1)
    # the same selection played in both modes gives the same reward
    inst = envs["selection"].unwrapped.instance
    for t in range(50):
        arr = envs["selection"].unwrapped.arrivals[t]
        scores = np.linspace(1.0, 0.1, inst.n_types * inst.n_instances)
        x = decode_scores(inst, scores, arr)
        r_sel = envs["selection"].step(x)[1]
        r_sco = envs["scores"].step(scores.astype(np.float32))[1]
        assert r_sel == r_sco


def test_scores_spaces_do_not_depend_on_the_instance_seed():
    spaces0 = gym.make(ENV_ID, action_mode="scores", instance_features=True, instance_seed=0)
    n_edges = {spaces0.unwrapped.instance.n_edges}
    for seed in (1, 2, 3):
        other = gym.make(ENV_ID, action_mode="scores", instance_features=True,
                         instance_seed=seed)
        n_edges.add(other.unwrapped.instance.n_edges)
        assert other.action_space == spaces0.action_space
        assert other.observation_space == spaces0.observation_space
    assert len(n_edges) > 1  # the instances differ in |E| ...
    sizes = {gym.make(ENV_ID, instance_seed=s).action_space.n for s in range(4)}
    assert sizes == n_edges  # ... and the default mode's space follows |E|


def test_scores_observation_is_the_grid_of_the_selection_observation():
    a = gym.make(ENV_ID, horizon=10)
    b = gym.make(ENV_ID, action_mode="scores", horizon=10)
    a.reset(seed=1)
    b.reset(seed=1)
    inst = a.unwrapped.instance
    scores = np.linspace(1.0, 0.2, 320).astype(np.float32)
    for _ in range(3):
        ob, _, _, _, info = b.step(scores)
        oa = a.step(info["selection"])[0]
    np.testing.assert_array_equal(ob["feedback"], to_grid(inst, oa["feedback"]).astype(np.float32))
    np.testing.assert_array_equal(ob["used"], to_grid(inst, oa["used"]).astype(np.float32))
    for key in ("arrivals", "utilization", "waiting", "progress"):
        np.testing.assert_array_equal(ob[key], oa[key])


def test_instance_features_hand_computed(tiny):
    f = instance_features(tiny)
    assert f.shape == (4 * 6,) and f.dtype == np.float32
    mask, cpu, gpu, cost = f.reshape(4, 6)
    assert mask.tolist() == [1, 0, 1, 0, 1, 1]
    np.testing.assert_allclose(cpu, [1 / 3, 0, 2 / 3, 0, 1 / 3, 1 / 3], rtol=1e-6)
    np.testing.assert_allclose(gpu, [0.5, 0, 0.5, 0, 0.5, 1.0], rtol=1e-6)
    np.testing.assert_allclose(cost, [0.1, 0, 0.2, 0, 0.15, 0.05], rtol=1e-6)
    env = gym.make(ENV_ID, instance=tiny, instance_features=True, horizon=3)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs["instance"], f)
