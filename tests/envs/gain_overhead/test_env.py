"""GainOverhead-v0: API contract, checkers, determinism, spaces, bad input."""

from __future__ import annotations

import dataclasses
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from schedgym.envs.gain_overhead import dynamics
from tests.envs.gain_overhead.conftest import ENV_ID, SMALL


@pytest.mark.parametrize("scenario", ["paper-default", "paper-headline"])
def test_both_checkers_pass_without_warnings(scenario):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gym.make(ENV_ID, scenario=scenario, horizon=30)
        gym_check_env(env.unwrapped, skip_render_check=False)
        sb3_check_env(env.unwrapped, warn=True)


def test_render_modes():
    env = gym.make(ENV_ID, render_mode="rgb_array", **SMALL)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    img = env.render()
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    env = gym.make(ENV_ID, render_mode="ansi", **SMALL)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    assert "slot 1/40" in env.render()


def test_public_names_and_shapes(small_env):
    inst = small_env.unwrapped.instance
    L, R, K, E = inst.n_types, inst.n_instances, inst.n_resources, inst.n_edges
    assert (L, R, K) == (4, 6, 3)
    assert inst.edges.shape == (E, 2) and inst.edges.dtype == np.int64
    keys = inst.edges[:, 0] * R + inst.edges[:, 1]
    assert np.all(np.diff(keys) > 0), "edges must be in lexicographic (l, r) order"
    assert inst.mask.shape == (L, R) and inst.mask.sum() == E
    assert inst.requests.shape == (L, K) and inst.capacities.shape == (R, K)
    assert inst.alpha.shape == (R, K) and inst.beta.shape == (K,)
    assert inst.utility.shape == (R, K)
    assert small_env.action_space.shape == (E * K,)
    obs, _ = small_env.reset(seed=3)
    assert set(obs) == {"arrivals", "utilization", "progress"}
    assert obs["arrivals"].shape == (L,) and obs["utilization"].shape == (R * K,)
    obs, r, term, trunc, info = small_env.step(small_env.action_space.sample())
    for key in ("gain", "penalty", "allocation", "slot_arrivals", "projection_distance"):
        assert key in info
    assert info["allocation"].shape == (E, K)
    assert info["slot_arrivals"].shape == (L,)
    assert r == pytest.approx(info["gain"] - info["penalty"])
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'beta'"):
        inst.beta = np.zeros(K)
    with pytest.raises(ValueError, match="read-only"):
        inst.requests[0, 0] = 1.0  # read-only arrays


def test_observation_carries_current_arrivals_and_previous_utilization(small_env):
    env = small_env.unwrapped
    obs, info = env.reset(seed=5)
    X = env.arrivals
    assert np.array_equal(obs["arrivals"], X[0]) and np.all(obs["utilization"] == 0)
    a = env.action_space.sample()
    obs, _, _, _, info = env.step(a)
    assert np.array_equal(info["slot_arrivals"], X[0])
    assert np.array_equal(obs["arrivals"], X[1])
    u = dynamics.utilization(env.instance, info["allocation"]).ravel()
    np.testing.assert_allclose(obs["utilization"], u, rtol=1e-6, atol=1e-7)
    assert obs["progress"][0] == pytest.approx(1 / env.horizon)


def test_truncated_after_exactly_horizon(small_env):
    small_env.reset(seed=0)
    for t in range(SMALL["horizon"]):
        _, _, term, trunc, _ = small_env.step(small_env.action_space.sample())
        assert not term
        assert trunc == (t == SMALL["horizon"] - 1)
    with pytest.raises(RuntimeError, match="reset"):
        small_env.unwrapped.step(small_env.action_space.sample())


def _rollout(env, actions, seed):
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        out.append((obs, r, info))
    return out


def _assert_same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _assert_same(a[k], b[k])
    elif isinstance(a, (tuple, list)):
        for x, y in zip(a, b, strict=True):
            _assert_same(x, y)
    else:
        assert np.array_equal(np.asarray(a), np.asarray(b))


def test_same_seed_same_trajectory():
    rng = np.random.default_rng(0)
    env1, env2 = gym.make(ENV_ID, **SMALL), gym.make(ENV_ID, **SMALL)
    actions = rng.uniform(-1, 1, (SMALL["horizon"], env1.action_space.shape[0])).astype(np.float32)
    _assert_same(_rollout(env1, actions, 11), _rollout(env2, actions, 11))
    other = _rollout(env1, actions, 12)
    assert not np.array_equal(other[0]["arrivals"], _rollout(env2, actions, 11)[0]["arrivals"]) \
        or not np.array_equal(env1.unwrapped.arrivals, env2.unwrapped.arrivals)


def test_instance_seed_and_episode_seed_are_independent():
    a = gym.make(ENV_ID, instance_seed=1, **SMALL).unwrapped
    b = gym.make(ENV_ID, instance_seed=1, **SMALL).unwrapped
    c = gym.make(ENV_ID, instance_seed=2, **SMALL).unwrapped
    assert np.array_equal(a.instance.edges, b.instance.edges)
    assert np.array_equal(a.instance.capacities, b.instance.capacities)
    assert not np.array_equal(a.instance.capacities, c.instance.capacities)
    a.reset(seed=4)
    c.reset(seed=4)
    assert np.array_equal(a.arrivals, c.arrivals), "arrivals depend only on the episode seed"


def test_sweeping_one_parameter_keeps_the_rest_of_the_instance():
    base = gym.make(ENV_ID, **SMALL).unwrapped.instance
    more = gym.make(ENV_ID, **{**SMALL, "contention": 5.0}).unwrapped.instance
    assert np.array_equal(base.edges, more.edges)
    assert np.array_equal(base.capacities, more.capacities)
    np.testing.assert_allclose(more.requests, base.requests * 0.5)
    assert np.array_equal(base.alpha, more.alpha) and np.array_equal(base.beta, more.beta)


def test_arrival_probability_bounds_and_frequency():
    env = gym.make(ENV_ID, **{**SMALL, "horizon": 4000, "arrival_prob": 0.3}).unwrapped
    env.reset(seed=0)
    assert set(np.unique(env.arrivals)) <= {0.0, 1.0}
    assert abs(env.arrivals.mean() - 0.3) < 0.02
    env0 = gym.make(ENV_ID, **{**SMALL, "arrival_prob": 0.0}).unwrapped
    env0.reset(seed=0)
    assert env0.arrivals.sum() == 0
    _, r, *_ = env0.step(env0.action_space.sample())
    assert r == 0.0


def test_reset_without_seed_is_reproducible_from_first_seed():
    env = gym.make(ENV_ID, **SMALL).unwrapped
    env.reset(seed=9)
    env.reset()
    x1 = env.arrivals.copy()
    env.reset(seed=9)
    env.reset()
    assert np.array_equal(x1, env.arrivals)


def test_encode_decode_round_trip(small_env):
    env = small_env.unwrapped
    rng = np.random.default_rng(1)
    alloc = rng.uniform(0, 1, env.instance.edge_caps.shape) * env.instance.edge_caps
    back = env.decode_action(env.encode_action(alloc))
    np.testing.assert_allclose(back, alloc, rtol=1e-6, atol=1e-6 * env.instance.edge_caps.max())
    a = env.encode_action(alloc)
    assert a.dtype == np.float32 and env.action_space.contains(a)


def test_action_order_is_edges_then_resources(small_env):
    env = small_env.unwrapped
    inst = env.instance
    a = -np.ones(env.action_space.shape, dtype=np.float32)
    e, k = 1, 2
    a[e * inst.n_resources + k] = 1.0  # ask for the whole cap on one (edge, resource)
    env.reset(seed=0)
    _, _, _, _, info = env.step(a)
    y = info["allocation"]
    want = min(inst.edge_caps[e, k], inst.capacities[inst.edges[e, 1], k])
    assert y[e, k] == pytest.approx(want)
    assert np.count_nonzero(y) == (1 if want > 0 else 0)


def test_out_of_box_actions_are_clipped_and_reported(small_env):
    small_env.reset(seed=0)
    a = np.full(small_env.action_space.shape, 3.0, dtype=np.float32)
    _, r, _, _, info = small_env.step(a)
    assert info["action_clip"] == pytest.approx(2.0)
    assert np.isfinite(r)
    small_env.reset(seed=0)
    _, r2, _, _, info2 = small_env.step(np.ones_like(a))
    assert r == r2 and info2["action_clip"] == 0.0


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_actions_raise(small_env, bad):
    small_env.reset(seed=0)
    a = np.zeros(small_env.action_space.shape, dtype=np.float32)
    a[3] = bad
    with pytest.raises(ValueError, match="action contains a non-finite entry"):
        small_env.unwrapped.step(a)


def test_wrong_shape_action_raises(small_env):
    small_env.reset(seed=0)
    n = small_env.action_space.shape[0]
    for a in (np.zeros(n + 1), np.zeros((2, n)), np.zeros(0), "abc"):
        with pytest.raises(ValueError, match="action"):
            small_env.unwrapped.step(a)


@pytest.mark.parametrize(
    "kwargs, param",
    [
        ({"scenario": "nope"}, "scenario"),
        ({"n_types": 0}, "n_types"),
        ({"n_instances": -3}, "n_instances"),
        ({"n_resources": 7}, "n_resources"),
        ({"horizon": 0}, "horizon"),
        ({"horizon": 2.5}, "horizon"),
        ({"arrival_prob": 1.5}, "arrival_prob"),
        ({"arrival_prob": -0.1}, "arrival_prob"),
        ({"arrival_prob": float("nan")}, "arrival_prob"),
        ({"contention": 0}, "contention"),
        ({"alpha_range": (1.5, 1.0)}, "alpha_range"),
        ({"alpha_range": (0.0, 1.0)}, "alpha_range"),
        ({"beta_range": (-1, 0.5)}, "beta_range"),
        ({"utility": "cubic"}, "utility"),
        ({"density": 7}, "density"),
        ({"degree_choices": []}, "degree_choices"),
        ({"instance_seed": -1}, "instance_seed"),
        ({"render_mode": "video"}, "render_mode"),
        ({"typo_param": 1}, "typo_param"),
    ],
)
def test_bad_configuration_names_the_parameter(kwargs, param):
    with warnings.catch_warnings():
        # gym.make itself warns about an unknown render mode before the env raises
        warnings.filterwarnings("ignore", message=".*render_mode", category=UserWarning)
        with pytest.raises(ValueError, match=param):
            gym.make(ENV_ID, **{**SMALL, **kwargs})


def test_error_message_names_value_and_allowed():
    with pytest.raises(ValueError, match=r"arrival_prob=1\.5 is invalid: .*\[0\.0, 1\.0\]"):
        gym.make(ENV_ID, arrival_prob=1.5)


@pytest.mark.parametrize("scenario, size", [("paper-default", (10, 128, 6)),
                                            ("paper-headline", (10, 128, 6)),
                                            ("large-scale", (100, 1024, 6))])
def test_named_scenarios(scenario, size):
    env = gym.make(ENV_ID, scenario=scenario).unwrapped
    inst = env.instance
    assert (inst.n_types, inst.n_instances, inst.n_resources) == size
    assert inst.mask.any(axis=1).all(), "every job type has an instance"
    density = inst.n_edges / inst.n_instances
    assert 2.2 < density < 2.8  # degrees U{1..4}
    want = {"paper-default": (2000, 0.3, 0.5, 10.0), "paper-headline": (8000, 0.4, 0.6, 11.0),
            "large-scale": (10000, 0.01, 0.015, 5.0)}[scenario]
    assert env.horizon == want[0]
    assert want[1] <= inst.beta.min() and inst.beta.max() <= want[2]
    lo = np.array([1, 2, 0, 0, 0, 0])
    assert np.all(inst.requests >= want[3] * lo - 1e-9)


@pytest.mark.parametrize("density, lo, hi", [(2, 1.7, 2.3), (3, 2.7, 3.3)])
def test_density_settings(density, lo, hi):
    inst = gym.make(ENV_ID, n_instances=400, density=density).unwrapped.instance
    assert lo < inst.n_edges / inst.n_instances < hi


@pytest.mark.parametrize("utility", ["linear", "log", "reciprocal", "poly", "mixed"])
def test_utility_families_give_finite_rewards(utility):
    env = gym.make(ENV_ID, utility=utility, **SMALL).unwrapped
    env.reset(seed=0)
    total = 0.0
    for _ in range(10):
        _, r, *_ = env.step(env.action_space.sample())
        assert np.isfinite(r)
        total += r
    fams = set(np.unique(env.instance.utility))
    assert fams == ({utility} if utility != "mixed" else fams) and fams
    if utility == "mixed":
        assert len(fams) > 1


def _tiny_instance_kwargs() -> dict:
    """Two types, two instances, two resources, three edges."""
    return dict(
        edges=np.array([[0, 0], [0, 1], [1, 1]]),
        requests=np.array([[2.0, 1.0], [3.0, 0.0]]),
        capacities=np.array([[4.0, 1.0], [2.0, 5.0]]),
        alpha=np.ones((2, 2)),
        beta=np.array([0.1, 0.2]),
        utility=np.full((2, 2), "linear"),
        resource_names=("cpu", "mem"),
    )


def test_explicit_instance_is_used():
    from schedgym.envs.gain_overhead import GainOverheadInstance

    inst = GainOverheadInstance(**_tiny_instance_kwargs())
    env = gym.make(ENV_ID, instance=inst, horizon=5)
    assert env.unwrapped.instance is inst
    assert env.action_space.shape == (6,)
    env.reset(seed=0)
    _, r, *_ = env.step(np.ones(6, dtype=np.float32))
    assert np.isfinite(r)


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("edges", np.array([[0, 1], [0, 0], [1, 1]]), "lexicographic"),
        ("edges", np.array([[0, 0], [0, 1]]), "no instance"),
        ("capacities", np.array([[4.0, -1.0], [2.0, 5.0]]), "capacities"),
        ("alpha", np.zeros((2, 2)), "alpha"),
        ("utility", np.full((2, 2), "cubic"), "utility"),
        ("requests", np.array([[2.0, np.nan], [3.0, 0.0]]), "requests"),
    ],
)
def test_bad_instance_fields_raise(field, value, match):
    from schedgym.envs.gain_overhead import GainOverheadInstance

    kw = _tiny_instance_kwargs()
    kw[field] = value
    with pytest.raises(ValueError, match=match):
        GainOverheadInstance(**kw)
