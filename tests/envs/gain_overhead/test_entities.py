"""GainOverhead-v0 ``obs_mode="entities"``: one row per (type, resource) pair, in
its space for random instances and actions, checker-clean, equal to a loop reference, the
native vector env equal to single envs, and the flat mode unchanged."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedgym.core import utilities
from schedgym.envs.gain_overhead import actions, entities
from tests.entities_check import (
    assert_checkers_clean,
    assert_entity_obs,
    assert_flat_is_the_default,
)
from tests.envs.gain_overhead.conftest import ENV_ID, SMALL

SHORT = {**SMALL, "horizon": 5}


def _make(**kw):
    return gym.make(ENV_ID, **{"action_mode": "prices", "obs_mode": "entities", **kw})


def _reference(env, flat):
    """The entity observation of a flat one, pair by pair with plain loops (the definition in
    ``entities.FEATURES``/``CONTEXT``)."""
    inst = env.instance
    L, R, K = inst.n_types, inst.n_instances, inst.n_resources
    cap, req = inst.capacities, inst.requests
    util = flat["utilization"].astype(np.float64).reshape(R, K)
    x = flat["arrivals"].astype(np.float64)
    prog = float(flat["progress"][0])
    pmax = actions.price_ceiling(inst)
    nbrs = [[r for r in range(R) if inst.mask[l, r]] for l in range(L)]
    demand = np.zeros((R, K))
    for l in range(L):
        for r in nbrs[l]:
            demand[r] += x[l] * req[l]
    rows = []
    for l in range(L):
        for k in range(K):
            reach = sum(cap[r, k] for r in nbrs[l])
            deg = len(nbrs[l])
            a, b, p = req[l, k], inst.beta[k], pmax[l, k]
            fam = [inst.utility_codes[r, k] for r in nbrs[l]]
            alpha = [inst.alpha[r, k] / (1 + inst.alpha[r, k]) for r in nbrs[l]]
            used = sum(util[r, k] * cap[r, k] for r in nbrs[l])
            press = sum(demand[r, k] for r in nbrs[l])
            pr = press / reach if reach > 0 else (np.inf if press > 0 else 0.0)
            rows.append([
                x[l], a / (a + reach) if a + reach > 0 else 0.0,
                a / (a + reach / deg) if a + reach > 0 else 0.0,
                reach / cap[:, k].sum() if cap[:, k].sum() > 0 else 0.0, deg / R,
                b / (1 + b), p / (1 + p), b / (b + p) if b + p > 0 else 0.0,
                np.mean(alpha),
                *(np.mean([f == c for f in fam]) for c in (utilities.LINEAR, utilities.LOG,
                                                           utilities.RECIPROCAL,
                                                           utilities.POLY)),
                used / reach if reach > 0 else 0.0,
                1.0 if np.isinf(pr) else pr / (1 + pr), prog])
    gate = env.arrivals_protocol == "revealed"
    mask = [x[l] > 0 if gate else 1.0 for l in range(L) for _ in range(K)]
    pos = cap.reshape(-1) > 0
    ask = sum(x[l] * len(nbrs[l]) * req[l].sum() for l in range(L))
    d = ask / cap.sum()
    context = [prog, x.sum() / L, util.reshape(-1)[pos].sum() / max(pos.sum(), 1),
               util.max(), d / (1 + d)]
    return np.array(rows), np.array(mask, dtype=float), np.array(context)


def _check_obs(env, obs, flat):
    assert_entity_obs(env, obs, *_reference(env.unwrapped, flat))


def test_space_names_and_metadata():
    env = _make(**SHORT)
    u = env.unwrapped
    L, K = SHORT["n_types"], SHORT["n_resources"]
    F, C = len(u.entity_feature_names), len(u.context_feature_names)
    assert list(env.observation_space.spaces) == ["entities", "mask", "context"]
    assert env.observation_space["entities"].shape == (L * K * F,)
    assert env.observation_space["mask"].shape == (L * K,)
    assert env.observation_space["context"].shape == (C,)
    assert u.entity_feature_names == entities.ENTITY_FEATURE_NAMES
    assert u.context_feature_names == entities.CONTEXT_FEATURE_NAMES
    assert u.metadata["entity_action"] == "entity"
    assert u.metadata["obs_modes"] == ("flat", "entities")
    assert type(u).metadata["entity_action_mode"] == "prices"  # read without building an env
    assert type(u).metadata["obs_modes"] == ("flat", "entities")
    assert _make(**SHORT, action_mode="fractions").unwrapped.metadata["entity_action"] == "entity"
    assert _make(**SHORT, action_mode="allocation").unwrapped.metadata["entity_action"] == "none"
    # F and C do not depend on the size or the seed
    other = _make(n_types=7, n_instances=3, n_resources=1, horizon=3, instance_seed=5)
    assert other.observation_space["entities"].shape == (7 * F,)
    assert other.observation_space["context"].shape == (C,)
    for box in env.observation_space.spaces.values():
        assert np.isfinite(box.low).all() and np.isfinite(box.high).all()


def test_bad_obs_mode_names_it():
    with pytest.raises(ValueError, match="obs_mode.*'grid'.*'flat', 'entities'"):
        gym.make(ENV_ID, obs_mode="grid", **SHORT)


def test_flat_mode_is_unchanged():
    a = assert_flat_is_the_default(lambda **kw: gym.make(ENV_ID, **SHORT, **kw))
    assert sorted(a.observation_space.spaces) == ["arrivals", "progress", "utilization"]


@pytest.mark.parametrize("kw", [{}, {"arrivals": "hidden", "action_mode": "fractions"}])
def test_both_checkers_pass(kw):
    assert_checkers_clean(_make(**SHORT, utility="mixed", **kw))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(L=st.integers(1, 5), R=st.integers(1, 6), K=st.integers(1, 6),
       utility=st.sampled_from(["linear", "log", "reciprocal", "poly", "mixed"]),
       arrivals=st.sampled_from(["revealed", "hidden"]),
       mode=st.sampled_from(["prices", "fractions", "allocation"]),
       prob=st.sampled_from([0.0, 0.5, 1.0]), seed=st.integers(0, 2**31 - 1))
def test_entities_lie_in_their_space_and_match_the_reference(L, R, K, utility, arrivals, mode,
                                                              prob, seed):
    kw = dict(n_types=L, n_instances=R, n_resources=K, horizon=4, utility=utility,
              degree_choices=[1, L],
              arrivals=arrivals, arrival_prob=prob, instance_seed=seed % 1000)
    env = _make(action_mode=mode, **kw)
    flat_env = gym.make(ENV_ID, action_mode=mode, **kw)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    flat, _ = flat_env.reset(seed=seed)
    _check_obs(env, obs, flat)
    for _ in range(4):
        act = rng.uniform(-1.5, 1.5, env.action_space.shape).astype(np.float32)
        obs, r, *_ = env.step(act)
        flat, r2, *_ = flat_env.step(act)
        assert r == r2
        _check_obs(env, obs, flat)


@pytest.mark.parametrize("kw", [
    {"utility": "mixed"},
    {"action_mode": "fractions", "arrivals": "hidden", "instance_features": True},
    {"action_mode": "allocation"},
], ids=["prices-mixed", "fractions-hidden", "allocation"])
def test_native_vector_env_equals_single_envs(kw):
    kw = {"action_mode": "prices", **SHORT, **kw, "obs_mode": "entities"}
    native = gym.make_vec(ENV_ID, num_envs=3, vectorization_mode="vector_entry_point", **kw)
    sync = gym.make_vec(ENV_ID, num_envs=3, vectorization_mode="sync", **kw)
    assert native.single_observation_space == sync.single_observation_space
    assert native.metadata["entity_action"] == sync.metadata.get(
        "entity_action", native.envs[0].metadata["entity_action"])
    assert data_equivalence(native.reset(seed=7), sync.reset(seed=7), exact=True)
    rng = np.random.default_rng(0)
    for t in range(2 * SHORT["horizon"] + 2):  # crosses autoresets
        act = rng.uniform(-1.3, 1.3, native.action_space.shape).astype(np.float32)
        a, b = native.step(act), sync.step(act)
        assert data_equivalence(a, b, exact=True), f"step {t}"
        assert native.observation_space.contains(a[0])


def test_entity_order_is_the_action_order():
    """Entity ``l * K + k`` is action entry ``l * K + k``: raising one pair's price in the
    ``prices`` mode lowers only that pair's decoded allocation."""
    env = _make(**SHORT, arrival_prob=1.0)
    u = env.unwrapped
    obs, _ = env.reset(seed=0)
    K = SHORT["n_resources"]
    base = np.full(env.action_space.shape, -1.0, np.float32)
    i = 2 * K + 1  # pair (2, 1)
    hi = base.copy()
    hi[i] = 1.0
    z0, z1 = u.decode_action(base), u.decode_action(hi)
    changed = np.argwhere(~np.isclose(z0, z1))
    assert changed.size
    assert all(u.instance.edge_type[e] == 2 and k == 1 for e, k in changed)
    assert obs["mask"][i] == 1.0


def test_zero_capacity_and_zero_request_pairs_stay_in_the_space():
    """A resource no instance of a type has (c_lk = 0) and a type that requests nothing of a
    resource (a_l^k = 0): ratios with a zero denominator give the documented ends, not NaN."""
    from schedgym.envs.gain_overhead.types import GainOverheadInstance

    inst = GainOverheadInstance(
        edges=np.array([[0, 0], [1, 1]]), requests=np.array([[1.0, 2.0], [0.0, 1.0]]),
        capacities=np.array([[4.0, 0.0], [3.0, 2.0]]), alpha=np.ones((2, 2)),
        beta=np.array([0.0, 0.4]), utility=np.array([["linear", "log"], ["poly", "linear"]]))
    env = gym.make(ENV_ID, instance=inst, horizon=3, arrival_prob=1.0, action_mode="prices",
                   obs_mode="entities")
    flat_env = gym.make(ENV_ID, instance=inst, horizon=3, arrival_prob=1.0,
                        action_mode="prices")
    obs, _ = env.reset(seed=0)
    flat, _ = flat_env.reset(seed=0)
    _check_obs(env, obs, flat)
    names = env.unwrapped.entity_feature_names
    rows = obs["entities"].reshape(4, len(names))
    row = rows[1]  # pair (0, 1): type 0 reaches no capacity of resource 1
    assert row[names.index("pressure")] == 1.0 and row[names.index("utilization")] == 0.0
    assert rows[2][names.index("request_share")] == 0.0  # a_1^0 = 0
    act = np.zeros(4, np.float32)
    obs, *_ = env.step(act)
    flat, *_ = flat_env.step(act)
    _check_obs(env, obs, flat)


def test_docs_list_every_feature():
    from pathlib import Path

    text = (Path(__file__).parents[3] / "docs" / "gain-overhead.md").read_text()
    for name in entities.ENTITY_FEATURE_NAMES + entities.CONTEXT_FEATURE_NAMES:
        assert f"`{name}`" in text, name
