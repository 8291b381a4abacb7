"""GainOverhead-v0 action modes, arrival protocols and instance features."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from schedgym.core import utilities
from schedgym.envs.gain_overhead import GainOverheadInstance, actions, dynamics
from schedgym.envs.gain_overhead.env import instance_features
from tests.envs.gain_overhead.conftest import ENV_ID, SMALL
from tests.envs.gain_overhead.test_env import _tiny_instance_kwargs

MODES = ("allocation", "fractions", "prices")
PROTOCOLS = ("revealed", "hidden")


def test_modes_are_listed_default_first():
    env = gym.make(ENV_ID, **SMALL)
    assert env.unwrapped.metadata["action_modes"] == MODES
    assert env.unwrapped.action_mode == "allocation"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("features", [False, True])
def test_both_checkers_pass_in_every_mode(mode, protocol, features):
    env = gym.make(ENV_ID, **SMALL, action_mode=mode, arrivals=protocol,
                   instance_features=features)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym_check_env(env.unwrapped, skip_render_check=True)
        sb3_check_env(env.unwrapped)
    assert ("instance" in env.observation_space.spaces) == features


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("utility", ["linear", "mixed"])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_decoded_action_is_feasible(mode, utility, data):
    env = gym.make(ENV_ID, **SMALL, action_mode=mode, utility=utility).unwrapped
    env.reset(seed=data.draw(st.integers(0, 1000)))
    n = env.action_space.shape[0]
    a = data.draw(arrays(np.float32, n, elements=st.floats(-3, 3, width=32)))
    z = env.decode_action(a)
    assert np.all(z >= 0) and np.all(z <= env.instance.edge_caps + 1e-12)
    _, r, *_, info = env.step(a)
    assert dynamics.is_feasible(env.instance, info["allocation"]) and np.isfinite(r)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_actions_raise_in_every_mode(mode, bad):
    env = gym.make(ENV_ID, **SMALL, action_mode=mode)
    env.reset(seed=0)
    a = np.zeros(env.action_space.shape, dtype=np.float32)
    a[1] = bad
    with pytest.raises(ValueError, match="non-finite"):
        env.step(a)


def test_learnable_action_sizes_do_not_depend_on_the_instance_seed():
    spaces = [gym.make(ENV_ID, instance_seed=s, action_mode="prices",
                       instance_features=True).unwrapped.observation_space for s in (0, 1, 7)]
    acts = {gym.make(ENV_ID, instance_seed=s, action_mode=m).action_space.shape
            for s in (0, 1, 7) for m in ("fractions", "prices")}
    assert spaces[0] == spaces[1] == spaces[2] and acts == {(60,)}


def _tiny_env(mode: str, protocol: str = "revealed", **kw) -> gym.Env:
    inst = GainOverheadInstance(**{**_tiny_instance_kwargs(), **kw})
    return gym.make(ENV_ID, instance=inst, horizon=4, action_mode=mode, arrivals=protocol,
                    arrival_prob=1.0).unwrapped


def test_fractions_decoder_by_hand():
    env = _tiny_env("fractions")  # requests [[2, 1], [3, 0]], edges (0,0) (0,1) (1,1)
    env.reset(seed=0)
    z = env.decode_action(np.array([1.0, 0.0, -1.0, 1.0], dtype=np.float32))
    np.testing.assert_allclose(z, [[2.0, 0.5], [2.0, 0.5], [0.0, 0.0]])


def test_prices_decoder_is_each_channels_best_response():
    util = np.array([["log", "poly"], ["reciprocal", "linear"]])
    env = _tiny_env("prices", utility=util, alpha=np.array([[1.0, 2.0], [1.5, 1.2]]))
    env.reset(seed=0)
    inst = env.instance
    a = np.array([-0.2, 0.3, 0.5, -0.9])
    z = env.decode_action(a)
    pmax = actions.price_ceiling(inst)
    grid = np.linspace(0.0, 1.0, 200001)
    for e, (l, _) in enumerate(inst.edges):
        for k in range(2):
            price = (a[l * 2 + k] + 1) / 2 * pmax[l, k]
            y = grid * inst.edge_caps[e, k]
            code = np.full(y.shape, inst.edge_codes[e, k])
            f = utilities.value(code, np.full(y.shape, inst.edge_alpha[e, k]), y, 1.0)
            best = y[np.argmax(f - price * y)]
            assert z[e, k] == pytest.approx(best, abs=1e-4 * (1 + inst.edge_caps[e, k]))


def test_prices_extremes_request_everything_or_nothing():
    env = _tiny_env("prices")
    env.reset(seed=0)
    np.testing.assert_allclose(env.decode_action(-np.ones(4)), env.instance.edge_caps)
    np.testing.assert_allclose(env.decode_action(np.ones(4)), 0.0)


@pytest.mark.parametrize("mode", ["fractions", "prices"])
def test_learnable_modes_serve_only_observed_arrivals_when_revealed(mode):
    env = gym.make(ENV_ID, **SMALL, action_mode=mode, arrival_prob=0.5).unwrapped
    obs, _ = env.reset(seed=2)
    a = -np.ones(env.action_space.shape, dtype=np.float32)
    for _ in range(10):
        idle = obs["arrivals"][env.instance.edge_type] == 0
        assert np.all(env.decode_action(a)[idle] == 0)
        obs, *_ = env.step(a)
    hidden = gym.make(ENV_ID, **SMALL, action_mode=mode, arrivals="hidden").unwrapped
    hidden.reset(seed=2)
    np.testing.assert_allclose(hidden.decode_action(a), actions.decode(
        hidden.instance, mode, a.astype(np.float64)))


def test_encode_action_only_in_the_default_mode():
    env = gym.make(ENV_ID, **SMALL, action_mode="prices").unwrapped
    with pytest.raises(ValueError, match="action_mode='allocation' only"):
        env.encode_action(np.zeros((env.instance.n_edges, env.instance.n_resources)))


def test_hidden_protocol_observes_the_previous_slot_and_scores_the_current():
    env = gym.make(ENV_ID, **SMALL, arrivals="hidden").unwrapped
    obs, info = env.reset(seed=5)
    assert not obs["arrivals"].any() and not info["slot_arrivals"].any()
    for t in range(5):
        _, _, _, _, info = env.step(env.action_space.sample())
        np.testing.assert_array_equal(info["slot_arrivals"], env.arrivals[t])
        obs = env._obs()
        np.testing.assert_array_equal(obs["arrivals"], env.arrivals[t])


def test_common_random_numbers_across_modes_and_protocols():
    scored = []
    for mode in MODES:
        for protocol in PROTOCOLS:
            env = gym.make(ENV_ID, **SMALL, action_mode=mode, arrivals=protocol).unwrapped
            env.reset(seed=11)
            xs = [env.step(env.action_space.sample())[4]["slot_arrivals"] for _ in range(8)]
            scored.append(np.array(xs))
    for xs in scored[1:]:
        np.testing.assert_array_equal(xs, scored[0])


def test_instance_features_by_hand():
    inst = GainOverheadInstance(**_tiny_instance_kwargs())
    f = instance_features(inst)
    # reach: type 0 -> instances 0, 1: (6, 6); type 1 -> instance 1: (2, 5)
    share = [2 / 8, 1 / 7, 3 / 5, 0.0]
    np.testing.assert_allclose(f[:4], share, rtol=1e-6)
    np.testing.assert_allclose(f[4:8], 0.5)  # alpha = 1 -> 1 / 2
    np.testing.assert_allclose(f[8:12], 1.0)  # every family linear
    np.testing.assert_allclose(f[12:], [0.1 / 1.1, 0.2 / 1.2], rtol=1e-6)
    env = gym.make(ENV_ID, instance=inst, instance_features=True)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs["instance"], f)


def test_best_response_broadcasts_like_numpy():
    """The compiled best response reads instance-shaped inputs periodically under a batch of
    prices: the same values as with every input broadcast in full, and the closed forms by
    hand on one entry per family."""
    rng = np.random.default_rng(7)
    code = rng.integers(0, 4, (5, 3)).astype(np.int8)
    alpha, upper = rng.uniform(0.5, 2.0, (5, 3)), rng.uniform(0.0, 4.0, (5, 3))
    price = rng.uniform(-0.2, 1.5, (4, 5, 3))
    got = actions.best_response(code, alpha, 1.0, price, upper, 2.0)
    full = [np.broadcast_to(v, price.shape) for v in (code, alpha, np.ones(1), upper)]
    ref = actions.best_response(full[0], full[1], full[2], price, full[3], 2.0)
    assert got.shape == price.shape and got.dtype == np.float64
    np.testing.assert_array_equal(got, ref)
    c = np.array([utilities.LINEAR, utilities.LOG, utilities.POLY, utilities.RECIPROCAL],
                 dtype=np.int8)
    y = actions.best_response(c, np.full(4, 2.0), 1.0, np.full(4, 0.25), np.full(4, 50.0), 2.0)
    # f'(y) = 0.25: linear 2 > 0.25 (all), log 2/(1+y), poly 2/(2 sqrt(1+y)), recip 1/(y+4)^2
    np.testing.assert_allclose(y, [50.0, 7.0, 15.0, 0.0], rtol=1e-15)
    assert actions.best_response(c, np.ones(4), 1.0, np.zeros(4), np.full(4, 3.0), 1.0).tolist() \
        == [3.0] * 4
    assert actions.best_response(c[:0], np.ones(0), 1.0, np.ones(0), np.ones(0), 1.0).shape == (0,)
