"""The native DeadlineWelfare-v0 vector env equals N single envs under SyncVectorEnv, bit for bit
(observations, rewards, flags, infos with their masks, across autoresets, renders), in every
action mode, with instance features, and refuses bad input as the single env does."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.utils.env_match import check_environments_match

import schedgym  # noqa: F401
from schedgym.envs.deadline_welfare import ENV_ID
from schedgym.envs.deadline_welfare.vector import DeadlineWelfareVectorEnv


def pair(num_envs: int, **kwargs):
    native = gym.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode="vector_entry_point",
                          **kwargs)
    sync = gym.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode="sync", **kwargs)
    return native, sync


def assert_same(a, b, what: str) -> None:
    assert data_equivalence(a, b, exact=True), f"{what} differ:\n{a}\n{b}"


def run_both(native, sync, steps: int, seed: int, scale: float = 1.2) -> int:
    """Step both with the same random actions (some outside [-1, 1]); returns the number of
    episode ends seen."""
    assert native.action_space == sync.action_space
    assert native.observation_space == sync.observation_space
    o1, i1 = native.reset(seed=seed)
    o2, i2 = sync.reset(seed=seed)
    assert_same(o1, o2, "reset observations")
    assert_same(i1, i2, "reset infos")
    rng = np.random.default_rng(seed)
    ends = 0
    for t in range(steps):
        a = (scale * rng.uniform(-1, 1, native.action_space.shape)).astype(np.float32)
        r1 = native.step(a)
        r2 = sync.step(a)
        for name, x, y in zip(("obs", "reward", "terminated", "truncated", "info"), r1, r2,
                              strict=True):
            assert_same(x, y, f"step {t} {name}")
        ends += int(np.sum(r1[2]))
    return ends


@pytest.mark.parametrize("kwargs", [
    {},
    {"scenario": "congested", "utility": "log", "n_jobs": 5},
    {"utility": "sqrt", "n_jobs": 3, "instance_features": True},
    {"n_jobs": None, "arrival_rate": 0.15, "horizon": 6},  # variable (possibly zero) jobs
])
def test_vector_equals_sync_vector_env(kwargs):
    native, sync = pair(4, **kwargs)
    ends = run_both(native, sync, steps=45, seed=3)
    assert ends >= 4  # autoresets were exercised
    # a second reset with a list of seeds, then seedless autoresets drawn from each copy's rng
    o1, i1 = native.reset(seed=[5, None, 7, 8])
    o2, i2 = sync.reset(seed=[5, None, 7, 8])
    assert_same(i1["episode_seed"][[0, 2, 3]], i2["episode_seed"][[0, 2, 3]], "seeds")


def test_vector_equals_sync_in_every_action_mode():
    modes = gym.make(ENV_ID).unwrapped.metadata["action_modes"]
    assert modes[0] == "dispatch"
    for mode in modes:
        native, sync = pair(3, action_mode=mode, n_jobs=4)
        assert run_both(native, sync, steps=14, seed=11) >= 3, mode


def test_check_environments_match():
    # Gymnasium's checker compares the flags with ``==`` as booleans: one copy per side
    native, sync = pair(1, n_jobs=3)
    check_environments_match(native, sync, num_steps=12, seed=0, skip_render=True)


def test_one_copy_equals_the_single_env():
    native = gym.make_vec(ENV_ID, num_envs=1, vectorization_mode="vector_entry_point")
    single = gym.make(ENV_ID)
    obs_v, _ = native.reset(seed=9)
    obs_s, _ = single.reset(seed=9)
    rng = np.random.default_rng(0)
    total_v = total_s = 0.0
    for _ in range(20):
        a = rng.uniform(-1, 1, single.action_space.shape).astype(np.float32)
        obs_v, r_v, *_ = native.step(a[None])
        obs_s, r_s, term, _, _ = single.step(a)
        total_v += float(r_v[0])
        total_s += r_s
        for k in obs_s:
            np.testing.assert_array_equal(obs_v[k][0], obs_s[k])
    assert term and total_v == total_s


def test_step_before_reset_and_bad_actions_raise():
    vec = DeadlineWelfareVectorEnv(num_envs=2)
    a = np.zeros(vec.action_space.shape, dtype=np.float32)
    with pytest.raises(RuntimeError, match="before reset"):
        vec.step(a)
    vec.reset(seed=0)
    bad = a.copy()
    bad[1, 3] = np.nan
    with pytest.raises(ValueError, match=r"actions\[1\] contains a non-finite entry"):
        vec.step(bad)
    with pytest.raises(ValueError, match="must have shape"):
        vec.step(a[:1])


@pytest.mark.parametrize("mode", ["ansi", "rgb_array"])
def test_render_equals_sync_vector_env(mode):
    native, sync = pair(3, n_jobs=2, render_mode=mode)
    with pytest.raises(RuntimeError, match="render.. called before reset"):
        native.render()
    rng = np.random.default_rng(0)
    native.reset(seed=1)
    sync.reset(seed=1)
    for _ in range(4):  # through an episode end and an autoreset
        frames = native.render()
        expected = sync.render()
        assert len(frames) == 3
        for got, want in zip(frames, expected, strict=True):
            assert np.array_equal(got, want) if mode == "rgb_array" else got == want
        a = rng.uniform(-1, 1, native.action_space.shape).astype(np.float32)
        native.step(a)
        sync.step(a)
    if mode == "ansi":  # the checker compares renders with ``==``: tuples of arrays cannot
        check_environments_match(*pair(1, n_jobs=2, render_mode=mode), num_steps=5, seed=2)


def test_render_mode_is_validated_at_construction():
    with pytest.raises(ValueError, match="render_mode='human' is invalid"):
        gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="vector_entry_point",
                     render_mode="human")
    vec = DeadlineWelfareVectorEnv(num_envs=2)
    vec.reset(seed=0)
    assert vec.render() is None


def test_bad_kwargs_are_the_single_env_errors():
    with pytest.raises(ValueError, match="num_envs"):
        DeadlineWelfareVectorEnv(num_envs=0)
    with pytest.raises(ValueError, match="utility"):
        DeadlineWelfareVectorEnv(num_envs=2, utility="cubic")
    with pytest.raises(ValueError, match=r"num_envs=1000 copies need about .* MB: more than "
                                         r"memory_limit_mb=1"):
        DeadlineWelfareVectorEnv(num_envs=1000, memory_limit_mb=1.0)


def test_show_state_is_what_decoding_and_drawing_read_and_checks_its_usage():
    """show_state is how the native vector env lends a copy's episode to its template."""
    a = gym.make("schedgym/DeadlineWelfare-v0", action_mode="pricing").unwrapped
    b = gym.make("schedgym/DeadlineWelfare-v0", action_mode="pricing").unwrapped
    a.reset(seed=5)
    b.reset(seed=6)
    act = np.array([0.2, -0.3, 0.5])
    for _ in range(3):
        a.step(act.astype(np.float32))
    b.show_state(a.jobs, a.job_index, a.usage.copy(), a._totals, a.bounds, a._alpha)
    np.testing.assert_array_equal(b._decode(act), a._decode(act))
    sa, sb = a.render_state(), b.render_state()
    for field in ("job_index", "n_jobs", "welfare", "served_fraction"):
        assert getattr(sb, field) == getattr(sa, field)
    np.testing.assert_array_equal(sb.utilization, sa.utilization)
    np.testing.assert_array_equal(sb.current, sa.current)
    with pytest.raises(ValueError, match="usage has shape"):
        b.show_state(a.jobs, 0, np.zeros((1, 1)), a._totals, a.bounds, a._alpha)
