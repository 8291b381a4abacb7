"""``obs_mode="entities"``: one row per (port, server) cell (the entity contract of
:mod:`schedgym.core.entities`), every value inside its space, hand-checked features, checkers
clean, native batch == single envs."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedgym.envs.fluctuating_speed import ENV_ID
from tests.entities_check import assert_checkers_clean, assert_flat_is_the_default

KW = {"obs_mode": "entities", "action_mode": "scores"}


def test_spaces_and_metadata(tiny):
    env = gym.make(ENV_ID, instance=tiny, horizon=4, **KW)
    space = env.observation_space
    assert list(space.spaces) == ["entities", "mask", "context"]
    u = env.unwrapped
    F, C = len(u.entity_feature_names), len(u.context_feature_names)
    assert space["entities"].shape == (6 * F,) and space["mask"].shape == (6,)
    assert space["context"].shape == (C,)
    assert u.metadata["entity_action"] == "entity"
    assert u.metadata["obs_modes"] == ("flat", "entities")
    # the mode an entity policy trains in, read without building an env (as the two others)
    assert type(u).metadata["entity_action_mode"] == "scores"
    assert "scores" in type(u).metadata["action_modes"]
    assert env.action_space.shape == (6,)  # entity i <-> action entry i


def test_bad_obs_mode_and_combinations_raise():
    with pytest.raises(ValueError, match="obs_mode.*'grid'.*flat.*entities"):
        gym.make(ENV_ID, obs_mode="grid")
    with pytest.raises(ValueError, match="action_mode='scores'"):
        gym.make(ENV_ID, obs_mode="entities")
    with pytest.raises(ValueError, match="instance_features"):
        gym.make(ENV_ID, obs_mode="entities", action_mode="scores", feedback_stats=True)


def test_flat_mode_is_unchanged(tiny):
    a = assert_flat_is_the_default(
        lambda **kw: gym.make(ENV_ID, instance=tiny, horizon=3, action_mode="scores", **kw))
    assert "entities" not in a.observation_space.spaces


def test_features_hand_computed(tiny):
    """Every feature of every cell against the flat observation and plain Python bookkeeping."""
    T = 6
    env = gym.make(ENV_ID, instance=tiny, horizon=T, arrival_prob=0.7, **KW)
    flat = gym.make(ENV_ID, instance=tiny, horizon=T, arrival_prob=0.7, action_mode="scores")
    obs, _ = env.reset(seed=4)
    fo, _ = flat.reset(seed=4)
    names = env.unwrapped.entity_feature_names
    col = {n: i for i, n in enumerate(names)}
    cap = tiny.capacities
    sums, counts = [0.0] * 4, [0] * 4
    rng = np.random.default_rng(1)
    for t in range(T + 1):
        mask, ctx = obs["mask"], obs["context"]
        ent = obs["entities"].reshape(6, len(names))  # row-major: cell i at [i F:(i + 1) F]
        for e, (l, r) in enumerate(tiny.edges.tolist()):
            i = l * 3 + r
            row = ent[i]
            shares = [min(tiny.requests[k, e] / cap[k], 1.0) for k in range(2)]
            assert row[col["edge"]] == 1.0
            assert row[col["job"]] == fo["arrivals"][l]
            assert mask[i] == (fo["arrivals"][l] > 0)
            assert row[col["request_mean"]] == pytest.approx(sum(shares) / 2, rel=1e-6)
            assert row[col["request_max"]] == pytest.approx(max(shares), rel=1e-6)
            assert row[col["cost"]] == pytest.approx(tiny.cost[e], rel=1e-6)
            assert row[col["waiting"]] == fo["waiting"][l]
            assert row[col["last_used"]] == fo["used"][i]
            assert row[col["last_feedback"]] == fo["feedback"][i]
            assert row[col["seen"]] == (counts[e] > 0)
            mean = sums[e] / counts[e] if counts[e] else 0.0
            assert row[col["mean"]] == pytest.approx(mean, rel=1e-6, abs=1e-7)
            assert row[col["count"]] == pytest.approx(counts[e] / T, rel=1e-6)
            bonus = math.sqrt(math.log(t + 2) / math.log(T + 2) / max(counts[e], 1))
            assert row[col["bonus"]] == pytest.approx(bonus, rel=1e-6)
        off = [i for i in range(6) if not tiny.mask.reshape(-1)[i]]
        assert not mask[off].any() and not ent[off][:, col["edge"]].any()
        assert not ent[off][:, col["mean"]].any()
        np.testing.assert_allclose(ctx, [t / T, fo["utilization"].mean(), fo["utilization"].max(),
                                         (fo["arrivals"] > 0).mean(), 4 / 6, fo["waiting"].mean()],
                                   rtol=1e-6)
        if t == T:
            break
        a = rng.uniform(-1, 1, 6).astype(np.float32)
        obs, r1, _, _, info = env.step(a)
        fo, r2, _, _, info2 = flat.step(a)
        assert r1 == r2
        for e in np.flatnonzero(info["selection"]):
            sums[e] += info["slot_feedback"][e]
            counts[e] += 1


@settings(max_examples=15, deadline=None)
@given(instance_seed=st.integers(0, 10_000), seed=st.integers(0, 2**31 - 1),
       n_types=st.integers(1, 5), n_instances=st.integers(1, 7), n_resources=st.integers(1, 4),
       scale=st.floats(0.5, 5.0))
def test_every_value_inside_its_space(instance_seed, seed, n_types, n_instances, n_resources,
                                      scale):
    env = gym.make(ENV_ID, instance_seed=instance_seed, n_types=n_types,
                   n_instances=n_instances, n_resources=n_resources, edge_prob=0.5,
                   horizon=12, compute_oracle=False, **KW)
    space = env.observation_space
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    done = False
    while True:
        assert space.contains(obs), {k: (v.min(), v.max()) for k, v in obs.items()}
        if done:
            break
        a = scale * rng.standard_normal(space["mask"].shape[0])  # clipped by the env
        obs, _, _, done, _ = env.step(a.astype(np.float32))


def test_spaces_do_not_depend_on_the_instance_seed():
    assert len({str(gym.make(ENV_ID, instance_seed=s, **KW).observation_space)
                for s in range(3)}) == 1


def test_checkers_pass():
    """Both checkers clean, every warning an error (the 1-D ``entities`` vector draws no SB3
    shape advice)."""
    assert_checkers_clean(gym.make(ENV_ID, horizon=20, **KW))


def test_vector_equals_single_envs():
    """The native batch (with autoreset and a partial reset) == N single envs, bit for bit."""
    N, T = 3, 5
    kw = {"horizon": T, "n_types": 3, "n_instances": 6, "edge_prob": 0.4, **KW}
    vec = gym.make_vec(ENV_ID, N, vectorization_mode="vector_entry_point", **kw)
    ref = gym.make_vec(ENV_ID, N, vectorization_mode="sync", **kw)
    assert vec.single_observation_space == ref.single_observation_space
    ov, _ = vec.reset(seed=9)
    orf, _ = ref.reset(seed=9)
    rng = np.random.default_rng(3)
    for step in range(2 * T + 3):
        for k in ov:
            np.testing.assert_array_equal(ov[k], orf[k], err_msg=f"{k} at step {step}")
        a = rng.uniform(-1, 1, (N, 18)).astype(np.float32)
        ov, rv, _, tv, _ = vec.step(a)
        orf, rr, _, tr, _ = ref.step(a)
        np.testing.assert_array_equal(rv, rr)
        np.testing.assert_array_equal(tv, tr)
        if step == 3:  # a partial reset keeps the other copies' observations
            mask = np.array([True, False, True])
            ov, _ = vec.reset(seed=[20, None, 22], options={"reset_mask": mask})
            orf, _ = ref.reset(seed=[20, None, 22], options={"reset_mask": mask})


def test_features_are_named_pairs_with_columns():
    from schedgym.envs.fluctuating_speed import entities

    names = tuple(name for name, _ in entities.FEATURES)
    assert names == entities.ENTITY_FEATURES and len(set(names)) == len(names)
    assert all(isinstance(m, str) and m for _, m in entities.FEATURES + entities.CONTEXT)
    assert [entities.COL[n] for n in names] == list(range(len(names)))
    assert set(entities.STATIC) <= set(names)
    env = gym.make(ENV_ID, n_types=2, n_instances=3, horizon=3, **KW).unwrapped
    assert env.entity_feature_names == names
    assert env.observation_space["entities"].shape == (6 * len(entities.FEATURES),)
    assert env.observation_space["context"].shape == (len(entities.CONTEXT),)


def test_the_interface_the_vector_env_reads(tiny):
    import ast
    import inspect

    from schedgym.envs.fluctuating_speed import entities, vector

    ent = gym.make(ENV_ID, instance=tiny, horizon=3, **KW).unwrapped
    assert isinstance(ent.entity_tables, entities.EntityTables) and ent.n_cells == 6
    flat = gym.make(ENV_ID, instance=tiny, horizon=3).unwrapped
    assert flat.entity_tables is None and flat.n_cells == tiny.n_edges
    # the native vector env reads no private attribute of the env it copies
    tree = ast.parse(inspect.getsource(vector))
    private = [node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
               and node.attr.startswith("_") and not node.attr.startswith("__")
               and isinstance(node.value, ast.Name) and node.value.id in ("t", "template")]
    assert private == []
