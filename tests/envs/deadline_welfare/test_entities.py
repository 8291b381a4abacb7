"""DeadlineWelfare-v0 ``obs_mode="entities"``: one row per mesh unit for the
current job, in its space for random instances and actions, equal to a loop reference built
from the env's state, checker-clean, the native vector env equal to single envs, and the flat
mode unchanged."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedgym.envs.deadline_welfare import entities
from tests.entities_check import (
    assert_checkers_clean,
    assert_entity_obs,
    assert_flat_is_the_default,
)
from tests.envs.deadline_welfare.conftest import ENV_ID, SMALL


def _make(**kw):
    return gym.make(ENV_ID, **{"action_mode": "pricing", "obs_mode": "entities", **kw})


def _reference(env, flat_space):
    """The entity observation of the env's current state, unit by unit with plain loops (the
    definitions of ``entities.FEATURES``/``CONTEXT``), scaled by the flat boxes' ends."""
    inst, jobs, n = env.instance, env.jobs, env.job_index
    R, T = inst.n_instances, inst.horizon
    span = max(T - 1, 1)
    rho_max = float(flat_space["workload"].high[0])
    cap_max = float(flat_space["capability"].high[0])
    coef_max = float(flat_space["utility_coef"].high[0])
    c_max = float(flat_space["capacity"].high[0])
    v_max = float(flat_space["bounds"].high[1])
    iota, v = env.bounds
    slope = 1 / (2 * np.sqrt(inst.sqrt_v_floor)) if inst.utility == "sqrt" else 1.0
    cur = n < jobs.n_jobs
    rho = float(jobs.workload[n]) if cur else 0.0
    s, e = (int(jobs.arrival[n]), int(jobs.deadline[n])) if cur else (0, 0)
    later = env.expected_later_demand()  # by hand in tests/agents/test_time_of_use.py
    rows, mask, rooms = [], [], 0.0
    for r in range(R):
        for t in range(T):
            ok = cur and bool(jobs.mask[n, r, t])
            a = float(jobs.coef[n, r, t]) if ok else 0.0
            xb = float(jobs.capability[n, r, t]) if ok else 0.0
            b = float(jobs.weight[n, r, t]) if ok else 0.0
            C, w = float(inst.capacity[r, t]), float(env.usage[r, t])
            room = max(0.0, min(xb, C - w)) if ok else 0.0
            rooms += room
            rows.append([float(ok), a / coef_max, min(1.0, (a * slope + b / C) / v),
                         xb / cap_max, w / C, min(1.0, room / rho) if rho > 0 else 0.0,
                         min(1.0, b / C / v), C / c_max, t / span,
                         np.clip((t - s) / span, -1, 1), np.clip((e - t) / span, -1, 1),
                         float(cur and s <= t <= e),
                         min(1.0, later[s, r * T + t] / C / 2.0) if cur else 0.0])
            mask.append(float(ok))
    fam = [float(inst.utility == f) for f in ("linear", "log", "sqrt")]
    context = [rho / rho_max, s / span, e / span, (e - s + 1) / T if cur else 0.0, iota / v,
               v / v_max, min(1.0, n / max(jobs.n_jobs, 1)), *fam,
               min(1.0, rooms / rho) if rho > 0 else 0.0,
               env.usage.sum() / inst.capacity.sum(), sum(mask) / (R * T)]
    return np.array(rows), np.array(mask), np.array(context)


def _check_obs(env, obs, flat_space):
    assert_entity_obs(env, obs, *_reference(env.unwrapped, flat_space))


def test_space_names_and_metadata():
    env = _make(**SMALL)
    u = env.unwrapped
    R, T = SMALL["n_instances"], SMALL["horizon"]
    F, C = len(u.entity_feature_names), len(u.context_feature_names)
    assert u.entity_feature_names == entities.ENTITY_FEATURE_NAMES
    assert u.context_feature_names == entities.CONTEXT_FEATURE_NAMES
    assert list(env.observation_space.spaces) == ["entities", "mask", "context"]
    assert env.observation_space["entities"].shape == (R * T * F,)
    assert env.observation_space["mask"].shape == (R * T,)
    assert env.observation_space["context"].shape == (C,)
    assert u.metadata["entity_action"] == "global"
    assert u.metadata["obs_modes"] == ("flat", "entities")
    assert type(u).metadata["entity_action_mode"] == "pricing"  # read without building an env
    assert type(u).metadata["obs_modes"] == ("flat", "entities")
    assert _make(**SMALL, action_mode="dispatch").unwrapped.metadata["entity_action"] == "entity"
    other = _make(n_instances=5, horizon=2, n_jobs=2, instance_seed=4, utility="sqrt")
    assert other.observation_space["entities"].shape == (10 * F,)
    # the signed features' lower end -1 sits in every unit's row of the flat vector
    low = other.observation_space["entities"].low.reshape(10, F)
    for j, name in enumerate(u.entity_feature_names):
        assert (low[:, j] == (-1.0 if name in entities.SIGNED else 0.0)).all(), name
    assert other.observation_space["context"].shape == (C,)
    for box in env.observation_space.spaces.values():
        assert np.isfinite(box.low).all() and np.isfinite(box.high).all()


def test_bad_obs_mode_names_it():
    with pytest.raises(ValueError, match="obs_mode.*'grid'.*'flat', 'entities'"):
        gym.make(ENV_ID, obs_mode="grid", **SMALL)


def test_flat_mode_is_unchanged():
    a = assert_flat_is_the_default(lambda **kw: gym.make(ENV_ID, **SMALL, **kw))
    assert "allowed" in a.observation_space.spaces


@pytest.mark.parametrize("kw", [{}, {"action_mode": "dispatch", "utility": "sqrt"}])
def test_both_checkers_pass(kw):
    assert_checkers_clean(_make(**SMALL, **kw))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(R=st.integers(1, 4), T=st.integers(1, 6), jobs=st.integers(1, 5),
       utility=st.sampled_from(["linear", "log", "sqrt"]),
       scenario=st.sampled_from(["paper-default", "congested"]),
       mode=st.sampled_from(["pricing", "dispatch", "unit_prices", "demand_price"]),
       locality=st.sampled_from([None, 1]), scope=st.sampled_from(["unit", "job"]),
       bound_mode=st.sampled_from(["oracle", "prior"]), seed=st.integers(0, 2**31 - 1))
def test_entities_lie_in_their_space_and_match_the_reference(R, T, jobs, utility, scenario, mode,
                                                              locality, scope, bound_mode, seed):
    kw = dict(scenario=scenario, n_instances=R, horizon=T, n_jobs=jobs, utility=utility,
              locality_size=locality, coef_scope=scope, bound_mode=bound_mode,
              instance_seed=seed % 1000)
    env = _make(action_mode=mode, **kw)
    flat_space = gym.make(ENV_ID, action_mode=mode, **kw).observation_space
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    _check_obs(env, obs, flat_space)
    done = False
    while not done:
        act = rng.uniform(-1.5, 1.5, env.action_space.shape).astype(np.float32)
        obs, _, done, _, _ = env.step(act)
        _check_obs(env, obs, flat_space)
    assert obs["mask"].sum() == 0  # after the last job: a zero job


@pytest.mark.parametrize("kw", [
    {},
    {"action_mode": "dispatch", "utility": "log", "instance_features": True},
    {"scenario": "paper-poisson", "n_jobs": None, "locality_size": 2},
    {"action_mode": "unit_prices", "scenario": "congested"},
], ids=["pricing", "dispatch-log", "poisson-locality", "unit-prices"])
def test_native_vector_env_equals_single_envs(kw):
    kw = {"action_mode": "pricing", **SMALL, "n_jobs": 4, **kw, "obs_mode": "entities"}
    native = gym.make_vec(ENV_ID, num_envs=3, vectorization_mode="vector_entry_point", **kw)
    sync = gym.make_vec(ENV_ID, num_envs=3, vectorization_mode="sync", **kw)
    assert native.single_observation_space == sync.single_observation_space
    assert native.metadata["entity_action"] == native.template.metadata["entity_action"]
    assert data_equivalence(native.reset(seed=7), sync.reset(seed=7), exact=True)
    rng = np.random.default_rng(0)
    for t in range(12):  # crosses autoresets
        act = rng.uniform(-1.3, 1.3, native.action_space.shape).astype(np.float32)
        a, b = native.step(act), sync.step(act)
        assert data_equivalence(a, b, exact=True), f"step {t}"
        assert native.observation_space.contains(a[0])


def test_entity_order_is_the_dispatch_action_order():
    """Entity ``r * T + t`` is dispatch entry ``r * T + t``: the mask is the units where a full
    action can place workload."""
    env = _make(**SMALL, action_mode="dispatch", locality_size=1)
    u = env.unwrapped
    obs, _ = env.reset(seed=2)
    upper = u.decode_action(np.ones(env.action_space.shape, np.float32)).reshape(-1)
    np.testing.assert_array_equal(obs["mask"], (upper > 0).astype(np.float32))
    assert 0 < obs["mask"].sum() < obs["mask"].size


def test_docs_list_every_feature():
    from pathlib import Path

    text = (Path(__file__).parents[3] / "docs" / "envs" / "deadline-welfare.md").read_text()
    for name in entities.ENTITY_FEATURE_NAMES + entities.CONTEXT_FEATURE_NAMES:
        assert f"`{name}`" in text, name
