"""GainOverhead-v0 hardening: pickling, step before reset, bounded parameters with
finite rewards, bools refused, explicit instance conflicts, memory estimate, episode length."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

from schedgym.envs.gain_overhead import SCENARIOS, GainOverheadEnv, GainOverheadInstance
from schedgym.envs.gain_overhead.env import memory_estimate
from tests.envs.gain_overhead.conftest import ENV_ID, SMALL
from tests.envs.gain_overhead.test_env import _tiny_instance_kwargs


def _play(env: gym.Env, seed: int, steps: int) -> list[float]:
    env.reset(seed=seed)
    rng = np.random.default_rng(0)
    out = []
    for _ in range(steps):
        a = rng.uniform(-1, 1, env.action_space.shape).astype(np.float32)
        out.append(env.step(a)[1])
    return out


@pytest.mark.parametrize("scenario", ["paper-default", "paper-headline", "alibaba-gpu-2023"])
def test_env_pickles_and_the_copy_plays_the_same_episode(scenario):
    env = gym.make(ENV_ID, scenario=scenario, horizon=6)
    copy = pickle.loads(pickle.dumps(env))
    assert _play(copy, 3, 6) == _play(env, 3, 6)


def test_every_registered_scenario_pickles():
    for name in SCENARIOS.names():
        kw = {"n_types": 4, "n_instances": 8, "horizon": 3} if name == "large-scale" else {}
        env = gym.make(ENV_ID, scenario=name, **kw)
        assert isinstance(pickle.loads(pickle.dumps(env)).unwrapped, GainOverheadEnv)


def test_step_before_reset_raises_on_the_unwrapped_env():
    env = gym.make(ENV_ID, **SMALL).unwrapped
    with pytest.raises(gym.error.ResetNeeded, match="before reset"):
        env.step(env.action_space.sample())


def test_max_episode_steps_is_the_horizon():
    env = gym.make(ENV_ID, **SMALL)
    assert env.spec is not None and env.spec.max_episode_steps == SMALL["horizon"]


@pytest.mark.parametrize("kwargs, param", [
    ({"reciprocal_scale": 1e-310}, "reciprocal_scale"),
    ({"alpha_range": (1e305, 1e305)}, "alpha_range"),
    ({"beta_range": (1e307, 1e307)}, "beta_range"),
    ({"contention": 1e308}, "contention"),
    ({"alpha_range": (1e-9, 1.0)}, "alpha_range"),
])
def test_extreme_scales_are_refused(kwargs, param):
    with pytest.raises(ValueError, match=f"{param}=.* is invalid"):
        gym.make(ENV_ID, **SMALL, **kwargs)


@pytest.mark.parametrize("utility", ["linear", "log", "reciprocal", "poly", "mixed"])
@pytest.mark.parametrize("lo_hi", ["lo", "hi"])
def test_every_accepted_extreme_gives_finite_rewards(utility, lo_hi):
    ext = 1e-6 if lo_hi == "lo" else 1e6
    env = gym.make(ENV_ID, **SMALL, utility=utility, reciprocal_scale=ext,
                   alpha_range=(ext, ext), beta_range=(ext, ext), contention=ext)
    rewards = _play(env, 0, 10)
    env.reset(seed=0)
    env.step(np.ones(env.action_space.shape, dtype=np.float32))
    assert np.all(np.isfinite(rewards))


def test_instance_whose_scale_overflows_is_refused():
    kw = _tiny_instance_kwargs()
    kw["alpha"] = np.full((2, 2), 1e305)
    kw["requests"] = np.array([[1e300, 1.0], [3.0, 0.0]])
    kw["capacities"] = np.array([[1e300, 1.0], [2.0, 5.0]])
    with pytest.raises(ValueError, match="overflows"):
        GainOverheadInstance(**kw)


@pytest.mark.parametrize("param", ["horizon", "n_types", "n_instances", "n_resources"])
def test_bools_are_not_integers(param):
    with pytest.raises(ValueError, match=f"{param}=True is invalid"):
        gym.make(ENV_ID, **{**SMALL, param: True})


@pytest.mark.parametrize("override", [{"n_instances": 7}, {"utility": "log"},
                                      {"contention": 2.0}, {"n_types": 2}])
def test_explicit_instance_refuses_instance_shaping_overrides(override):
    inst = GainOverheadInstance(**_tiny_instance_kwargs())
    with pytest.raises(ValueError, match="conflicts with instance="):
        gym.make(ENV_ID, instance=inst, **override)


def test_explicit_instance_keeps_episode_overrides():
    inst = GainOverheadInstance(**_tiny_instance_kwargs())
    env = gym.make(ENV_ID, instance=inst, horizon=7, arrival_prob=0.0).unwrapped
    env.reset(seed=0)
    assert env.horizon == 7 and not env.arrivals.any()


def test_huge_sizes_are_refused_with_the_figure_before_allocating():
    with pytest.raises(ValueError, match=r"needs about [0-9]+ MB, above memory_limit_mb=4096"):
        gym.make(ENV_ID, n_types=10**6, n_instances=10**6, horizon=10**6)


def test_memory_limit_is_overridable():
    need = memory_estimate(4, 6, 3, 40, 24) / 2**20
    with pytest.raises(ValueError, match="memory_limit_mb"):
        gym.make(ENV_ID, **SMALL, memory_limit_mb=need / 100)
    assert gym.make(ENV_ID, **SMALL, memory_limit_mb=need * 100).unwrapped.horizon == 40


def test_old_memory_name_is_no_longer_accepted():
    with pytest.raises(ValueError, match="max_memory_gb"):
        gym.make(ENV_ID, **SMALL, max_memory_gb=4.0)


def test_explicit_instance_with_a_huge_horizon_is_refused():
    inst = GainOverheadInstance(**_tiny_instance_kwargs())
    with pytest.raises(ValueError, match=r"needs about [0-9]+ MB, above memory_limit_mb"):
        gym.make(ENV_ID, instance=inst, horizon=10**12)
