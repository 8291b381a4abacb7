"""Regression tests for FluctuatingSpeed-v0: pickling, step before reset, bools for
integers, explicit instance with conflicting overrides, the memory limit, the episode length in
``env.spec`` and the consistency of the oracle metrics."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

import schedgym  # noqa: F401  (registers the ids)
from schedgym.envs.fluctuating_speed import ENV_ID, SCENARIOS, FluctuatingSpeedParams
from schedgym.envs.fluctuating_speed.offline import episode_benchmarks

from .conftest import tiny_instance


@pytest.mark.parametrize("scenario", SCENARIOS.names())
def test_env_pickles_and_the_copy_plays_the_same_episode(scenario):
    env = gym.make(ENV_ID, scenario=scenario, horizon=20)
    copy = pickle.loads(pickle.dumps(env))
    o1, _ = env.reset(seed=3)
    o2, _ = copy.reset(seed=3)
    a = np.ones(env.action_space.n, dtype=np.int8)
    for key in o1:
        np.testing.assert_array_equal(o1[key], o2[key])
    r1, r2 = env.step(a)[1], copy.step(a)[1]
    assert r1 == r2


def test_step_before_reset_raises_on_the_unwrapped_env():
    env = gym.make(ENV_ID, horizon=5).unwrapped
    with pytest.raises(gym.error.ResetNeeded, match="before reset"):
        env.step(np.zeros(env.action_space.n, dtype=np.int8))
    env.reset(seed=0)
    env.step(np.zeros(env.action_space.n, dtype=np.int8))  # fine after reset


@pytest.mark.parametrize("name", ["horizon", "n_types", "n_instances", "n_resources",
                                  "capacity_scale"])
def test_bools_are_not_integers(name):
    with pytest.raises(ValueError, match=f"{name}=True is invalid: must be an integer"):
        gym.make(ENV_ID, **{name: True})


@pytest.mark.parametrize("override", [{"n_types": 2}, {"edge_prob": 0.5},
                                      {"capacity_scale": 2}, {"degree_cap": 2}])
def test_explicit_instance_refuses_conflicting_overrides(tiny, override):
    name = next(iter(override))
    if name == "degree_cap":  # only the trace scenario knows it: unknown elsewhere
        with pytest.raises(ValueError, match="unknown parameter 'degree_cap'"):
            gym.make(ENV_ID, instance=tiny, **override)
        return
    with pytest.raises(ValueError, match=f"instance= was given together with {name}"):
        gym.make(ENV_ID, instance=tiny, **override)


def test_explicit_instance_refuses_a_builder_scenario(tiny):
    with pytest.raises(ValueError, match="scenario='alibaba-gpu-2023', which builds its own"):
        gym.make(ENV_ID, instance=tiny, scenario="alibaba-gpu-2023")


def test_explicit_instance_keeps_episode_overrides(tiny):
    env = gym.make(ENV_ID, instance=tiny, horizon=7, arrival_prob=[1.0, 0.0])
    assert env.unwrapped.horizon == 7 and env.unwrapped.params.n_types == 2
    obs, _ = env.reset(seed=0)
    assert obs["arrivals"].tolist() == [1.0, 0.0]


@pytest.mark.parametrize("kw", [{"horizon": 10**8}, {"n_types": 10**4, "n_instances": 10**5},
                                {"capacity_range": (1000, 1000)}])
def test_sizes_above_the_memory_limit_are_refused_with_the_figure(kw):
    with pytest.raises(ValueError, match=r"need an estimated [\d,]+ MiB .* above "
                                         r"memory_limit_mb=4096"):
        gym.make(ENV_ID, **kw)


def test_memory_limit_is_overridable_and_estimate_is_independent():
    p = FluctuatingSpeedParams(horizon=10**6)
    # by hand: 8 (K+3) L R + 8 T (L + 2 E) + prod(c+1) (E + 8), E = L R p + L = 40
    want = 8 * 6 * 320 + 8 * 10**6 * (8 + 80) + 7**3 * 48
    assert p.memory_estimate() == pytest.approx(want / 2**20)
    with pytest.raises(ValueError, match="above memory_limit_mb=100"):
        gym.make(ENV_ID, horizon=10**6, memory_limit_mb=100)
    with pytest.raises(ValueError, match="memory_limit_mb=0 is invalid"):
        gym.make(ENV_ID, memory_limit_mb=0)
    assert gym.make(ENV_ID, horizon=10**5, memory_limit_mb=100).unwrapped.horizon == 10**5


def test_spec_max_episode_steps_is_the_horizon():
    assert gym.make(ENV_ID).spec.max_episode_steps == 2000
    assert gym.make(ENV_ID, scenario="paper-headline").spec.max_episode_steps == 8000
    assert gym.make(ENV_ID, horizon=33).spec.max_episode_steps == 33


def test_oracle_gap_equals_realised_regret_and_pseudo_regret_is_expected():
    """The two oracle figures: the episode benchmark (realised oracle AOU on the same draws)
    minus the return is the summed ``realised_regret``; the summed ``oracle_value`` (expected,
    ``theta^T x*``) minus the summed ``expected_reward`` is the summed ``pseudo_regret``.
    ``oracle_value - return`` mixes the two and is neither."""
    env = gym.make(ENV_ID, horizon=300)
    env.reset(seed=1)
    rng = np.random.default_rng(0)
    ret = realised = pseudo = value = expected = 0.0
    for _ in range(300):
        a = rng.integers(0, 2, env.action_space.n).astype(np.int8)
        _, r, _, _, info = env.step(a)
        ret += r
        realised += info["realised_regret"]
        pseudo += info["pseudo_regret"]
        value += info["oracle_value"]
        expected += info["expected_reward"]
    gap = episode_benchmarks(env.unwrapped)["oracle"] - ret
    assert gap == pytest.approx(realised, rel=1e-12)
    assert value - expected == pytest.approx(pseudo, rel=1e-12)
    assert abs((value - ret) - gap) > 1e-6  # the mixed figure differs: not a gap to report


NUMERIC_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                  np.uint32, np.uint64, np.float16, np.float32, np.float64, np.longdouble,
                  np.dtype(">f8"), np.dtype(">i4")]


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=str)
def test_a_selection_of_every_numeric_dtype_is_accepted(dtype):
    """A float16 action ended in numba's NotImplementedError. Every real dtype gives
    the step of the same int8 selection, in the single and the native vector env."""
    env = gym.make(ENV_ID, horizon=3)
    vec = gym.make_vec(ENV_ID, num_envs=2, horizon=3, vectorization_mode="vector_entry_point")
    ref = gym.make(ENV_ID, horizon=3)
    a = np.random.default_rng(1).integers(0, 2, env.action_space.n).astype(np.int8)
    env.reset(seed=2)
    ref.reset(seed=2)
    vec.reset(seed=2)
    _, r, *_, info = env.step(a.astype(dtype))
    _, r_ref, *_, info_ref = ref.step(a)
    _, r_vec, *_ = vec.step(np.stack([a, a]).astype(dtype))
    assert r == r_ref == r_vec[0]
    np.testing.assert_array_equal(info["selection"], info_ref["selection"])


@pytest.mark.parametrize("action", [np.ones(3, np.complex128), [1 + 1j, 0, 1]])
def test_a_complex_selection_is_refused(action):
    env = gym.make(ENV_ID, instance=tiny_instance(), horizon=2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="expected a real 0/1 array"):
        env.step(np.resize(np.asarray(action), 4))
