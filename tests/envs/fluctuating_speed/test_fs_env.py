"""FluctuatingSpeed-v0 environment: API, checkers, common random numbers, feedback, errors."""

from __future__ import annotations

import itertools
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import schedgym  # noqa: F401  (registers the ids)
from schedgym.envs.fluctuating_speed import ENV_ID, FluctuatingSpeedInstance, dynamics
from schedgym.envs.fluctuating_speed.offline import OracleSolver, episode_benchmarks


def make(**kw):
    return gym.make(ENV_ID, **kw)


@pytest.mark.parametrize("render_mode", [None, "rgb_array", "ansi"])
def test_checkers_pass_with_warnings_as_errors(render_mode):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(make(render_mode=render_mode).unwrapped)
        sb3_check_env(make(render_mode=render_mode), warn=True)


def test_spaces_and_paper_default_sizes():
    env = make()
    inst = env.unwrapped.instance
    assert (inst.n_types, inst.n_instances, inst.n_resources) == (8, 40, 3)
    assert env.unwrapped.horizon == 2000
    assert isinstance(env.action_space, gym.spaces.MultiBinary)
    assert env.action_space.n == inst.n_edges
    assert set(np.unique(inst.requests)) <= {1, 2}
    assert all(c in (3, 6) for c in inst.capacities)
    for key, box in env.observation_space.spaces.items():
        assert box.dtype == np.float32 and len(box.shape) == 1, key


def test_render_modes():
    env = make(render_mode="rgb_array")
    env.reset(seed=0)
    env.step(env.action_space.sample())
    img = env.render()
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    env = make(render_mode="ansi")
    env.reset(seed=0)
    env.step(np.zeros(env.action_space.n, dtype=np.int8))
    assert "slot 1/2000" in env.render()


def _rollout(env, seed, policy):
    obs, _ = env.reset(seed=seed)
    out = []
    while True:
        a = policy(obs)
        obs, r, term, trunc, info = env.step(a)
        out.append((obs, r, info))
        if term or trunc:
            return out


def test_same_seed_same_trajectory():
    env = make(horizon=60)
    rng1, rng2 = np.random.default_rng(3), np.random.default_rng(3)
    a = _rollout(env, 5, lambda o: rng1.integers(0, 2, env.action_space.n))
    b = _rollout(env, 5, lambda o: rng2.integers(0, 2, env.action_space.n))
    for (o1, r1, i1), (o2, r2, i2) in zip(a, b, strict=True):
        assert r1 == r2 and i1["selection"].tolist() == i2["selection"].tolist()
        for k in o1:
            np.testing.assert_array_equal(o1[k], o2[k])


def test_common_random_numbers_do_not_depend_on_actions():
    env = make(horizon=40)
    env.reset(seed=11)
    arr0, z0 = env.unwrapped.arrivals.copy(), env.unwrapped.utilities.copy()
    _rollout(env, 11, lambda o: np.ones(env.action_space.n, dtype=np.int8))
    np.testing.assert_array_equal(env.unwrapped.arrivals, arr0)
    np.testing.assert_array_equal(env.unwrapped.utilities, z0)
    _rollout(env, 11, lambda o: np.zeros(env.action_space.n, dtype=np.int8))
    np.testing.assert_array_equal(env.unwrapped.utilities, z0)
    env.reset(seed=12)
    assert not np.array_equal(env.unwrapped.utilities, z0)
    # a different instance_seed changes the instance, not the episode's arrival stream
    other = make(horizon=40, instance_seed=1)
    other.reset(seed=11)
    np.testing.assert_array_equal(other.unwrapped.arrivals, arr0)


def test_truncation_after_exactly_horizon_steps():
    env = make(horizon=7)
    env.reset(seed=0)
    for i in range(7):
        _, _, term, trunc, info = env.step(np.zeros(env.action_space.n, dtype=np.int8))
        assert not term and trunc == (i == 6) and info["slot"] == i
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(env.action_space.n, dtype=np.int8))


def test_masked_edges_never_get_feedback_and_reward_is_sum_of_feedback():
    env = make(horizon=200, arrival_prob=0.5, capacity_scale=4)
    u = env.unwrapped
    inst = u.instance
    obs, _ = env.reset(seed=2)
    rng = np.random.default_rng(0)
    n_masked = 0
    for t in range(200):
        a = rng.integers(0, 2, inst.n_edges).astype(np.int8)
        present = dynamics.edge_mask(inst, obs["arrivals"])
        obs, r, _, _, info = env.step(a)
        x = info["selection"]
        assert np.all(x <= a) and np.all(x[present == 0] == 0)
        assert dynamics.is_feasible(inst, x)
        n_masked += info["n_masked"]
        assert info["n_masked"] == int((a * (1 - present)).sum())
        assert np.all(obs["used"][present == 0] == 0)
        assert np.all(obs["feedback"][x == 0] == 0) and np.all(info["slot_feedback"][x == 0] == 0)
        np.testing.assert_array_equal(obs["used"], x.astype(np.float32))
        z = dynamics.net_utility(u.utilities[t], inst.cost)
        assert r == pytest.approx(info["slot_feedback"].sum()) and r == pytest.approx(x @ z)
        assert "reward" not in info
        np.testing.assert_allclose(obs["feedback"], np.where(x > 0, z, 0), rtol=1e-6)
        assert info["raw_utility"] == pytest.approx(x @ (u.utilities[t] - inst.cost))
        assert info["expected_reward"] == pytest.approx(inst.theta @ x)
        assert info["oracle_value"] >= info["expected_reward"] - 1e-12
        assert info["pseudo_regret"] == pytest.approx(info["oracle_value"]
                                                      - info["expected_reward"])
        np.testing.assert_allclose(obs["utilization"], dynamics.utilization(inst, x), rtol=1e-6)
    assert n_masked > 0  # the test exercised masking


def test_capacity_violation_raises_or_is_repaired(tiny):
    full = np.ones(4, dtype=np.int8)
    env = make(instance=tiny, arrival_prob=1.0, invalid_action="raise", horizon=3)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"breaks capacity.*\[5, 5\] > c = \[3, 2\]"):
        env.step(full)
    env = make(instance=tiny, arrival_prob=1.0, horizon=3)
    env.reset(seed=0)
    _, _, _, _, info = env.step(full)
    assert info["selection"].tolist() == [1, 1, 0, 0]
    assert info["repaired"] and info["n_repaired"] == 2 and info["n_selected"] == 4


def test_hand_computed_tiny_slot(tiny):
    env = make(instance=tiny, arrival_prob=[1.0, 0.0], horizon=2, invalid_action="raise")
    obs, _ = env.reset(seed=4)
    assert obs["arrivals"].tolist() == [1, 0]
    z = env.unwrapped.utilities[0]
    _, r, _, _, info = env.step(np.array([1, 1, 1, 0]))  # edge 2 masked (port 1 absent)
    assert info["selection"].tolist() == [1, 1, 0, 0] and info["n_masked"] == 1
    want = sum(min(max(z[e] - tiny.cost[e], 0.0), 1.0) for e in (0, 1))
    assert r == pytest.approx(want)
    # oracle by hand: port 0 only; {0,1} fits (cpu 3, gpu 2) and theta > 0 -> both
    assert info["oracle_value"] == pytest.approx(tiny.theta[0] + tiny.theta[1])


def _brute_oracle(inst, arrivals):
    best = 0.0
    mask = dynamics.edge_mask(inst, arrivals)
    for bits in itertools.product([0, 1], repeat=inst.n_edges):
        x = np.array(bits)
        if dynamics.is_feasible(inst, x) and np.all(x <= mask):
            best = max(best, float(inst.theta @ x))
    return best


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 7))
def test_oracle_equals_brute_force(seed, pattern):
    env = make(n_types=3, n_instances=4, edge_prob=0.6, capacity_scale=2, horizon=2,
               instance_seed=seed)
    inst = env.unwrapped.instance
    if inst.n_edges > 12:
        return
    arrivals = np.array([(pattern >> l) & 1 for l in range(3)])
    x, v = OracleSolver(inst).solve(arrivals)
    assert v == pytest.approx(_brute_oracle(inst, arrivals))
    assert dynamics.is_feasible(inst, x) and np.all(x <= dynamics.edge_mask(inst, arrivals))


def test_episode_benchmark_is_oracle_realised_aou():
    env = make(horizon=30)
    env.reset(seed=3)
    total = 0.0
    for _ in range(30):
        _, r, _, _, info = env.step(np.zeros(env.action_space.n, dtype=np.int8))
        total += info["realised_regret"] + r
    assert episode_benchmarks(env.unwrapped)["oracle"] == pytest.approx(total)


def test_compute_oracle_switch():
    env = make(horizon=2, compute_oracle=False)
    env.reset(seed=0)
    info = env.step(np.zeros(env.action_space.n, dtype=np.int8))[4]
    assert "oracle_value" not in info and "pseudo_regret" not in info
    assert "pseudo_regret" not in env.unwrapped.episode_metrics
    assert "pseudo_regret" in make(horizon=2).unwrapped.episode_metrics


def test_waiting_observation_is_normalised_head_of_line_age(tiny):
    env = make(instance=tiny, arrival_prob=1.0, horizon=4)
    obs, _ = env.reset(seed=0)
    assert obs["waiting"].tolist() == [0, 0]
    obs = env.step(np.array([1, 0, 0, 0]))[0]  # serve port 0 only
    assert obs["waiting"].tolist() == [0, 0.25]
    obs = env.step(np.array([1, 0, 0, 0]))[0]
    assert obs["waiting"].tolist() == [0, 0.5]
    assert obs["progress"].tolist() == [0.5]


def test_scenarios_and_overrides():
    assert make(scenario="paper-headline").unwrapped.horizon == 8000
    lit = make(scenario="literal-capacity").unwrapped.instance
    assert all(c in (1, 2) for c in lit.capacities)
    a = make(edge_prob=0.1).unwrapped.instance
    b = make(edge_prob=0.2).unwrapped.instance
    assert a.n_edges < b.n_edges and a.mask[b.mask].sum() == a.n_edges  # nested graphs
    assert make(n_types=4, n_instances=10).unwrapped.instance.mask.shape == (4, 10)


@pytest.mark.parametrize("kw,match", [
    ({"scenario": "nope"}, "scenario='nope' is invalid"),
    ({"n_ports": 3}, "unknown parameter 'n_ports'"),
    ({"arrival_prob": 1.5}, r"arrival_prob=1.5 is invalid: must be a finite number in \[0"),
    ({"arrival_prob": [0.5, 0.5]}, r"arrival_prob has shape \(2,\)"),
    ({"n_types": 0}, "n_types=0 is invalid"),
    ({"request_range": (1.5, 2)}, "request_range"),
    ({"capacity_scale": 0}, "capacity_scale=0 is invalid"),
    ({"invalid_action": "project"}, "invalid_action='project' is invalid"),
    ({"compute_oracle": "yes"}, "compute_oracle='yes' is invalid"),
    ({"instance": "x"}, "instance is invalid"),
])
def test_bad_config_gives_clear_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        make(**kw)


def test_impossible_instance_is_rejected(tiny):
    with pytest.raises(ValueError, match=r"port\(s\) \[1\] with no server"):
        FluctuatingSpeedInstance(
            edges=np.array([[0, 0]]), requests=np.ones((1, 1)), capacities=np.ones(1),
            cost=np.zeros(1), mean=np.ones(1), std=np.zeros(1), n_types=2, n_instances=1,
            resource_names=("cpu",))
    with pytest.raises(ValueError, match="sorted lexicographically"):
        FluctuatingSpeedInstance(
            edges=np.array([[0, 1], [0, 0]]), requests=np.ones((1, 2)), capacities=np.ones(1),
            cost=np.zeros(2), mean=np.ones(2), std=np.zeros(2), n_types=1, n_instances=2,
            resource_names=("cpu",))
    with pytest.raises(ValueError, match="integer device counts"):
        FluctuatingSpeedInstance(
            edges=np.array([[0, 0]]), requests=np.full((1, 1), 1.5), capacities=np.ones(1),
            cost=np.zeros(1), mean=np.ones(1), std=np.zeros(1), n_types=1, n_instances=1,
            resource_names=("cpu",))


@pytest.mark.parametrize("action,match", [
    (np.ones(3), r"must have shape \(4,\)"),
    (np.array([1, 0, 2, 0]), "non-binary"),
    (np.array([1, 0, 0.5, 0]), "non-binary"),
])
def test_bad_actions_raise(tiny, action, match):
    env = make(instance=tiny, horizon=2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=match):
        env.step(action)


def test_instance_is_read_only_and_reproducible(tiny):
    a = make(instance_seed=3).unwrapped.instance
    b = make(instance_seed=3).unwrapped.instance
    np.testing.assert_array_equal(a.edges, b.edges)
    np.testing.assert_array_equal(a.mean, b.mean)
    with pytest.raises(ValueError, match="read-only"):
        a.mean[0] = 1.0
    assert tiny.n_edges == 4


def test_alibaba_trace_scenario():
    from schedgym.data.trace_mapping import build_trace_problem

    env = make(scenario="alibaba-gpu-2023", horizon=300, degree_cap=3)
    inst = env.unwrapped.instance
    tp = build_trace_problem(n_instances=40, n_types=8, slot_seconds=600.0, seed=0,
                             degree_cap=3)
    np.testing.assert_array_equal(inst.edges, tp.edges)
    assert inst.mask.sum(axis=1).max() <= 3
    assert set(np.unique(inst.requests)) <= {0, 1, 2}
    # a zero trace request stays zero; positive ones are scaled into [1, 2]
    np.testing.assert_array_equal(inst.requests == 0, (tp.requests[inst.port_of_edge] == 0).T)
    assert all(c in (3, 6) for c in inst.capacities)
    env.reset(seed=1)
    arr = env.unwrapped.arrivals
    ind = tp.arrival_indicators
    # arrivals are a thinned window of the trace's indicators (some start offset, wrapping)
    starts = [s for s in range(tp.n_slots)
              if np.all(arr <= ind[(s + np.arange(300)) % tp.n_slots])]
    assert starts and arr.sum() > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)
    with pytest.raises(ValueError, match="unknown parameter 'slot_seconds'"):
        make(slot_seconds=60.0)
