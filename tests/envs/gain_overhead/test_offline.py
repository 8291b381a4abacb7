"""Hindsight optimum y* of GainOverhead-v0 (OgaSched (11)) against cvxpy, and the regret
helpers built on it."""

from __future__ import annotations

import sys

import cvxpy as cp
import gymnasium as gym
import numpy as np
import pytest
import scipy.sparse as sp

import schedgym  # noqa: F401
from schedgym import offline as offline_registry
from schedgym.core.utilities import FAMILIES
from schedgym.envs.gain_overhead import ENV_ID, GainOverheadInstance, dynamics
from schedgym.envs.gain_overhead.generator import DEFAULTS, generate
from schedgym.envs.gain_overhead.offline import (
    episode_benchmarks,
    hindsight_optimum,
    regret_curve,
    solve_hindsight,
)

SMALL = {"n_types": 4, "n_instances": 6, "n_resources": 3}


def cvxpy_hindsight(inst: GainOverheadInstance, counts: np.ndarray) -> float:
    """Spec §4.3 verbatim: epigraph s_l of the max, DCP atoms per family, Clarabel."""
    E, K, L = inst.n_edges, inst.n_resources, inst.n_types
    y = cp.Variable((E, K), nonneg=True)
    s = cp.Variable(L)
    util = inst.utility[inst.edge_instance]  # (E, K) family names
    alpha = inst.edge_alpha
    sc = inst.reciprocal_scale
    w = counts[inst.edge_type]
    gain = 0
    for fam in FAMILIES:
        e, k = np.nonzero(util == fam)
        if e.size == 0:
            continue
        ye, a = y[e, k], alpha[e, k]
        if fam == "linear":
            f = cp.multiply(a, ye)
        elif fam == "log":
            f = cp.multiply(a, cp.log(1 + ye))
        elif fam == "poly":
            f = cp.multiply(a, cp.sqrt(ye + 1)) - a
        else:
            f = 1 / (sc * a) - cp.inv_pos(ye + sc * a)
        gain = gain + w[e] @ f
    by_type = sp.csr_matrix((np.ones(E), (inst.edge_type, np.arange(E))), shape=(L, E))
    by_inst = sp.csr_matrix((np.ones(E), (inst.edge_instance, np.arange(E))),
                            shape=(inst.n_instances, E))
    cons = [y <= inst.edge_caps, by_inst @ y <= inst.capacities,
            s[:, None] >= cp.multiply(by_type @ y, inst.beta[None, :])]
    prob = cp.Problem(cp.Maximize(gain - counts @ s), cons)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status == cp.OPTIMAL, prob.status
    return float(prob.value)


def _counts(inst, rng, zero_first=True):
    n = rng.integers(0, 60, inst.n_types).astype(float)
    if zero_first:
        n[0] = 0.0  # a type without arrivals
    return n


@pytest.mark.parametrize("family", [*FAMILIES, "mixed"])
@pytest.mark.parametrize("seed", [0, 1])
def test_hindsight_matches_cvxpy(family, seed):
    p = dict(DEFAULTS, **SMALL, utility=family, contention=1.0 + 4.0 * seed)
    inst = generate(p, seed)
    n = _counts(inst, np.random.default_rng(seed))
    sol = solve_hindsight(inst, n)
    ref = cvxpy_hindsight(inst, n)
    assert ref > 1.0  # non-trivial: y* is not 0
    assert sol.value == pytest.approx(ref, rel=1e-5)
    # feasible, value is the reward of y* on the counts, bounds bracket the optimum
    assert dynamics.is_feasible(inst, sol.allocation, tol=1e-9)
    assert sol.value == pytest.approx(dynamics.reward(inst, n, sol.allocation), rel=1e-12)
    assert sol.upper_bound >= sol.value
    assert sol.upper_bound >= ref * (1 - 1e-7)
    assert sol.upper_bound - sol.value <= 1e-6 * abs(sol.upper_bound)
    # the type without arrivals gets nothing
    assert np.all(sol.allocation[inst.edge_type == 0] == 0)
    assert sol.method == ("lp" if family == "linear" else "piecewise-linear")


def test_hindsight_reciprocal_scale_and_tight_tolerance():
    # f'(0) = 1/(3 alpha)^2 ~ 0.05-0.1: a small beta keeps the optimum away from y = 0
    p = dict(DEFAULTS, **SMALL, utility="reciprocal", reciprocal_scale=3.0,
             beta_range=(0.01, 0.02))
    inst = generate(p, 4)
    n = _counts(inst, np.random.default_rng(4), zero_first=False)
    sol = solve_hindsight(inst, n, rtol=1e-9)
    assert sol.value > 0.1
    assert sol.value == pytest.approx(cvxpy_hindsight(inst, n), rel=1e-6)


@pytest.mark.parametrize("family", ["linear", "log", "mixed"])
def test_hindsight_beats_every_feasible_point(family):
    p = dict(DEFAULTS, **SMALL, utility=family)
    inst = generate(p, 7)
    rng = np.random.default_rng(7)
    n = _counts(inst, rng, zero_first=False)
    y_star, v_star = hindsight_optimum(inst, n)
    for _ in range(200):
        z = rng.uniform(-0.5, 1.5, inst.edge_caps.shape) * inst.edge_caps
        y = dynamics.project(inst, z)
        assert dynamics.reward(inst, n, y) <= v_star + 1e-7 * abs(v_star)
    # local perturbations of y* inside Y do not improve it either
    for _ in range(100):
        y = dynamics.project(inst, y_star + rng.normal(0, 0.5, y_star.shape))
        assert dynamics.reward(inst, n, y) <= v_star + 1e-7 * abs(v_star)


def test_hindsight_edge_cases():
    inst = generate(dict(DEFAULTS, **SMALL), 0)
    y, v = hindsight_optimum(inst, np.zeros(inst.n_types))
    assert v == 0.0 and np.all(y == 0) and y.shape == (inst.n_edges, inst.n_resources)
    with pytest.raises(ValueError, match="counts"):
        hindsight_optimum(inst, np.ones(inst.n_types + 1))
    with pytest.raises(ValueError, match="counts"):
        hindsight_optimum(inst, -np.ones(inst.n_types))
    # zero beta: no penalty, linear utilities -> every capacity is spent on arrived types
    inst0 = GainOverheadInstance(
        edges=inst.edges, requests=inst.requests, capacities=inst.capacities, alpha=inst.alpha,
        beta=np.zeros(inst.n_resources), utility=inst.utility,
        resource_names=inst.resource_names)
    y0, v0 = hindsight_optimum(inst0, np.ones(inst.n_types))
    assert v0 == pytest.approx(cvxpy_hindsight(inst0, np.ones(inst.n_types)), rel=1e-6)
    assert dynamics.is_feasible(inst0, y0)


def test_scipy_is_imported_lazily_with_a_clear_error(monkeypatch):
    inst = generate(dict(DEFAULTS, **SMALL), 0)
    monkeypatch.setitem(sys.modules, "scipy.optimize", None)
    with pytest.raises(ImportError, match="needs scipy"):
        hindsight_optimum(inst, np.ones(inst.n_types))


def _play_fixed(env, y):
    """One episode with the same allocation every slot; returns (return, rewards)."""
    env.reset(seed=11)
    action = env.unwrapped.encode_action(y)
    rewards = []
    done = False
    while not done:
        _, r, term, trunc, info = env.step(action)
        rewards.append(r)
        done = term or trunc
    return float(np.sum(rewards)), np.array(rewards)


@pytest.mark.parametrize("family", ["linear", "poly"])
def test_episode_benchmarks_bound_any_fixed_allocation(family):
    env = gym.make(ENV_ID, **SMALL, horizon=30, utility=family)
    inst = env.unwrapped.instance
    rng = np.random.default_rng(0)
    y = dynamics.project(inst, rng.uniform(0, 1, inst.edge_caps.shape) * inst.edge_caps)
    ret, _ = _play_fixed(env, y)
    bench = offline_registry.episode_benchmarks(env)  # through the registry, as compare does
    direct = hindsight_optimum(inst, env.unwrapped.arrivals.sum(axis=0))[1]
    assert bench == {"hindsight_optimum": pytest.approx(direct, rel=1e-12)}
    assert ret <= bench["hindsight_optimum"] + 1e-6 * abs(ret)  # regret of a fixed y is >= 0
    # playing y* itself (within float32 action rounding) achieves the optimum
    y_star, _ = hindsight_optimum(inst, env.unwrapped.arrivals.sum(axis=0))
    ret_star, _ = _play_fixed(env, y_star)
    assert ret_star == pytest.approx(direct, rel=1e-5)
    env.close()


def test_episode_benchmarks_right_after_reset_cover_the_whole_episode():
    """compare calls the solver right after reset(seed): it must use every pre-drawn slot."""
    env = gym.make(ENV_ID, **SMALL, horizon=5)
    env.reset(seed=0)
    counts = env.unwrapped.arrivals.sum(axis=0)
    assert counts.sum() > 0
    want = hindsight_optimum(env.unwrapped.instance, counts)[1]
    assert episode_benchmarks(env.unwrapped) == {"hindsight_optimum": pytest.approx(want)}
    assert want > 0


def test_regret_curve():
    env = gym.make(ENV_ID, **SMALL, horizon=40)
    inst = env.unwrapped.instance
    y = dynamics.project(inst, 0.3 * inst.edge_caps)
    _, rewards = _play_fixed(env, y)
    X = np.array(env.unwrapped.arrivals)
    cps, reg = regret_curve(inst, X, rewards, [1, 10, 40])
    np.testing.assert_array_equal(cps, [1, 10, 40])
    for t, rt in zip(cps, reg, strict=True):
        direct = hindsight_optimum(inst, X[:t].sum(axis=0))[1] - rewards[:t].sum()
        assert rt == pytest.approx(direct, rel=1e-9, abs=1e-6)
        assert rt >= -1e-6 * abs(direct) - 1e-6  # a fixed allocation never beats y*
    cps, reg = regret_curve(inst, X, rewards)  # default checkpoints end at T
    assert cps[-1] == 40 and cps[0] == 1 and reg.shape == cps.shape
    with pytest.raises(ValueError, match="checkpoints"):
        regret_curve(inst, X, rewards, [0, 5])
    with pytest.raises(ValueError, match="rewards"):
        regret_curve(inst, X, rewards[:-1])
    env.close()


@pytest.mark.parametrize("family", ["linear", "mixed"])
def test_paper_default_size_matches_cvxpy(family):
    """The paper-default instance (|E| = 315, K = 6), one full-horizon count vector."""
    env = gym.make(ENV_ID, utility=family)
    env.reset(seed=0)
    inst = env.unwrapped.instance
    n = np.array(env.unwrapped.arrivals).sum(axis=0)
    sol = solve_hindsight(inst, n)
    assert sol.value == pytest.approx(cvxpy_hindsight(inst, n), rel=1e-6)
    assert dynamics.is_feasible(inst, sol.allocation, tol=1e-9)
    env.close()


@pytest.mark.parametrize("family", FAMILIES)
def test_best_response_is_the_box_maximiser(family):
    """The closed-form argmax of w f(y) - price y on [0, u] behind the Lagrangian bound."""
    from schedgym.core.utilities import FAMILY_CODES, value
    from schedgym.envs.gain_overhead.actions import best_response

    rng = np.random.default_rng(0)
    n = 300
    code = np.full(n, FAMILY_CODES[family], dtype=np.int8)
    alpha, w = rng.uniform(0.5, 2.0, n), rng.uniform(0.1, 1.0, n)
    price = rng.uniform(-0.1, 1.5, n) * w * np.where(family == "reciprocal", 0.3, 1.0)
    upper = rng.uniform(0.0, 30.0, n)
    yb = best_response(code, alpha, w, price, upper, 2.0)
    assert np.all((yb >= 0) & (yb <= upper))
    grid = upper[:, None] * np.linspace(0.0, 1.0, 3001)[None, :]
    obj = lambda v: w[:, None] * value(code[:, None], alpha[:, None], v, 2.0) \
        - price[:, None] * v  # noqa: E731
    best_grid = obj(grid).max(axis=1)
    got = obj(yb[:, None])[:, 0]
    assert np.all(got >= best_grid - 1e-12)
    assert np.all(got <= best_grid + 1e-4 * (1 + np.abs(best_grid)))
