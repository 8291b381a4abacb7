"""DeadlineWelfare-v0 against numpy and Gymnasium themselves: the compiled sum equals numpy's
pairwise sum bit for bit; ``np_random`` is Gymnasium's seeding; the observation keeps its key
order and owns fresh memory; the native vector env's episodes are the single env sampler's."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils import seeding

from schedgym.core import rng as rngs
from schedgym.envs.deadline_welfare import ENV_ID, dynamics
from schedgym.envs.deadline_welfare.types import DeadlineWelfareInstance, Jobs


def test_np_sum_equals_numpy_sum_bit_for_bit():
    rng = np.random.default_rng(0)
    for n in [*range(0, 300), 383, 1000, 2400, 8191, 8192, 8193, 20_000, 100_003]:
        a = rng.uniform(0, 1, n) * rng.uniform(0, 1e3, n)
        assert dynamics.np_sum(a, 0, n) == a.sum(), n
        if n > 9:
            assert dynamics.np_sum(a, 9, n - 9) == a[9:].sum(), n
    # a plain left-to-right sum differs, so the test can fail
    a = rng.uniform(0, 1, 240) * 1e3
    assert any(float(np.cumsum(b)[-1]) != b.sum() for b in (a, a[::-1], a * 1.1))


def test_np_random_is_gymnasium_seeding():
    env = gym.make(ENV_ID, n_jobs=3)
    env.reset(seed=11)
    ref, seed = seeding.np_random(11)
    assert env.unwrapped.np_random_seed == seed
    assert env.unwrapped.np_random.bit_generator.state == ref.bit_generator.state
    # a seedless reset draws the next episode seed from that generator
    env.reset(seed=11)
    _, info = env.reset()
    assert info["episode_seed"] == rngs.episode_seed(seeding.np_random(11)[0])
    env.unwrapped.np_random = np.random.default_rng(5)
    assert env.unwrapped.np_random_seed == -1
    with pytest.raises(gym.error.Error, match="Seed must be"):
        env.reset(seed=-3)


def test_observation_key_order_and_fresh_memory():
    env = gym.make(ENV_ID, n_jobs=3, instance_features=True)
    obs, _ = env.reset(seed=0)
    assert list(obs) == ["workload", "window", "allowed", "capability", "utility_coef",
                         "cluster_weight", "utility_family", "usage", "capacity", "bounds",
                         "progress", "instance"]
    before = {k: v.copy() for k, v in obs.items()}
    obs2, *_ = env.step(env.action_space.sample())
    for k, v in obs.items():  # a later step does not touch an earlier observation
        np.testing.assert_array_equal(v, before[k])
        assert v.dtype == np.float32 and not np.shares_memory(v, obs2[k])
    obs["usage"][:] = 99.0  # nor does a user's write reach the env or the next observation
    np.testing.assert_array_equal(env.step(env.action_space.sample())[0]["capacity"],
                                  before["capacity"])


def test_vector_episodes_equal_the_sampler_jobs():
    vec = gym.make_vec(ENV_ID, num_envs=3, vectorization_mode="vector_entry_point", n_jobs=4,
                       coef_scope="job")
    native = vec.unwrapped
    _, info = vec.reset(seed=[4, 2**40 + 1, 9])
    sampler = native.template._sample_jobs
    for b, seed in enumerate([4, 2**40 + 1, 9]):
        got, want = native._episode_jobs(b), sampler(seed)
        for name in ("arrival", "deadline", "workload", "allowed", "capability", "coef",
                     "weight", "mask"):
            a, w = getattr(got, name), getattr(want, name)
            assert a.dtype == w.dtype and a.shape == w.shape, name
            np.testing.assert_array_equal(a, w, err_msg=name)
        assert info["episode_seed"][b] == seed and info["n_jobs"][b] == 4


def test_vector_reset_refuses_jobs_beyond_the_box_as_the_single_env():
    from schedgym.envs.deadline_welfare.generator import DEFAULTS, generate

    inst = generate({**DEFAULTS, "n_instances": 2, "horizon": 3}, 0)
    tight = DeadlineWelfareInstance(capacity=inst.capacity, job_limits=(40.0, 20.0, 1.5, 1.0))
    with pytest.raises(ValueError, match=r"coef up to .*instance\.job_limits\[2\]"):
        gym.make(ENV_ID, instance=tight).reset(seed=0)
    vec = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="vector_entry_point",
                       instance=tight)
    with pytest.raises(ValueError, match=r"coef up to .*instance\.job_limits\[2\]"):
        vec.reset(seed=0)


@pytest.mark.parametrize("n_bad", [3, 40])  # within the copy's buffers, and beyond them
def test_vector_copy_keeps_its_episode_when_a_reset_is_refused(n_bad):
    vec = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="vector_entry_point", n_jobs=5)
    native = vec.unwrapped
    vec.reset(seed=3)
    good = native._episode_jobs(0)
    names = ("_c_ptr", "_c_units", "_c_cap", "_c_coef", "_c_weight", "_job_scalars")
    buffers = [getattr(native, k)[0].copy() for k in names]
    sampler = native.template._sample_jobs
    bad = sampler(11)
    big = Jobs.trusted(np.zeros(n_bad, np.int64), np.full(n_bad, 5, np.int64),
                       np.full(n_bad, 1e6), np.ones((n_bad, 10), bool),
                       np.ones((n_bad, 10)), np.ones((n_bad, 10, 24)),
                       np.full((n_bad, 10, 24), bad.weight.max()))
    native.template._sample_jobs = lambda seed: big
    with pytest.raises(ValueError, match=r"workload up to .*workload_mean/workload_sd"):
        native._reset_one(0, 7)
    native.template._sample_jobs = sampler
    assert native._episode_jobs(0) is good
    for name, want in zip(names, buffers, strict=True):
        got = getattr(native, name)[0]
        np.testing.assert_array_equal(got[:want.size], want, err_msg=name)
    # the copy still steps its own episode, as a fresh vector env seeded alike does
    fresh = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="vector_entry_point", n_jobs=5)
    fresh.reset(seed=3)
    a = vec.action_space.sample()
    got, want = vec.step(a), fresh.step(a)
    for k in got[0]:
        np.testing.assert_array_equal(got[0][k], want[0][k])
    np.testing.assert_array_equal(got[1], want[1])
