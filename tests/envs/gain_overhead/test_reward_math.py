"""Reward, gain, penalty and supergradient of GainOverhead-v0 on a hand-computed tiny instance
(L=2 types, R=2 instances, K=2 resources, 3 edges) for each utility family (OgaSched (3)-(4),
nice setup; supergradient (30)), plus dynamics.project against cvxpy on whole instances."""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedgym.core.utilities import FAMILIES
from schedgym.envs.gain_overhead import GainOverheadInstance, dynamics
from schedgym.envs.gain_overhead.generator import DEFAULTS, generate

EDGES = [(0, 0), (0, 1), (1, 1)]  # type 0 on instances 0 and 1; type 1 on instance 1
ALPHA = [[1.2, 1.1], [1.4, 1.3]]  # (R, K)
BETA = [0.3, 0.5]
#: a feasible allocation (E, K): caps a = [[2, 3], [4, 1]], capacities c = [[3, 2], [5, 4]]
Y = np.array([[1.0, 2.0], [0.5, 1.0], [3.0, 0.5]])


def tiny(utility, beta=BETA, scale=1.0) -> GainOverheadInstance:
    util = np.full((2, 2), utility) if isinstance(utility, str) else np.asarray(utility)
    return GainOverheadInstance(
        edges=np.array(EDGES), requests=np.array([[2.0, 3.0], [4.0, 1.0]]),
        capacities=np.array([[3.0, 2.0], [5.0, 4.0]]), alpha=np.array(ALPHA),
        beta=np.array(beta), utility=util, reciprocal_scale=scale,
        resource_names=("cpu", "mem"),
    )


def f_hand(family: str, a: float, y: float, s: float = 1.0) -> float:
    if family == "linear":
        return a * y
    if family == "log":
        return a * math.log(1.0 + y)
    if family == "reciprocal":
        return 1.0 / (s * a) - 1.0 / (y + s * a)
    return a * math.sqrt(y + 1.0) - a  # poly


def df_hand(family: str, a: float, y: float, s: float = 1.0) -> float:
    if family == "linear":
        return a
    if family == "log":
        return a / (1.0 + y)
    if family == "reciprocal":
        return 1.0 / (y + s * a) ** 2
    return a / (2.0 * math.sqrt(y + 1.0))


def hand_reward(util, x, y, beta=BETA, s=1.0):
    """Element by element, straight from OgaSched (3)-(4) (separable nice setup)."""
    gain = penalty = 0.0
    for lt in range(2):
        g_l = 0.0
        tot = [0.0, 0.0]
        for e, (le, r) in enumerate(EDGES):
            if le != lt:
                continue
            for k in range(2):
                g_l += f_hand(util[r][k], ALPHA[r][k], y[e][k], s)
                tot[k] += y[e][k]
        gain += x[lt] * g_l
        penalty += x[lt] * max(beta[0] * tot[0], beta[1] * tot[1])
    return gain - penalty, gain, penalty


MIXED = [["log", "reciprocal"], ["poly", "linear"]]


def test_linear_literal_numbers():
    """The linear case written out as plain numbers.

    Type totals: Y_0 = [1.5, 3.0], Y_1 = [3.0, 0.5]; beta*Y: type 0 [0.45, 1.5] (k* = 1),
    type 1 [0.9, 0.25] (k* = 0). Gain: type 0 1.2*1 + 1.1*2 + 1.4*0.5 + 1.3*1 = 5.4, type 1
    1.4*3 + 1.3*0.5 = 4.85.
    """
    inst = tiny("linear")
    p = dynamics.reward_parts(inst, np.array([1.0, 1.0]), Y)
    assert p.gain == pytest.approx(10.25)
    assert p.penalty == pytest.approx(2.4)
    assert p.reward == pytest.approx(7.85)
    np.testing.assert_array_equal(p.k_star, [1, 0])
    np.testing.assert_allclose(p.type_gain, [5.4, 4.85])
    np.testing.assert_allclose(p.type_penalty, [1.5, 0.9])
    assert dynamics.reward(inst, np.array([1.0, 0.0]), Y) == pytest.approx(5.4 - 1.5)
    assert dynamics.reward(inst, np.array([0.0, 1.0]), Y) == pytest.approx(4.85 - 0.9)
    # arrival counts: the reward is linear in x
    assert dynamics.reward(inst, np.array([3.0, 2.0]), Y) == pytest.approx(3 * 3.9 + 2 * 3.95)


@pytest.mark.parametrize("family", [*FAMILIES, "mixed"])
@pytest.mark.parametrize("x", [[1.0, 1.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [4.0, 7.0]])
@pytest.mark.parametrize("scale", [1.0, 3.0])
def test_reward_gain_penalty_by_hand(family, x, scale):
    util = MIXED if family == "mixed" else [[family] * 2] * 2
    inst = tiny(util, scale=scale)
    p = dynamics.reward_parts(inst, np.array(x), Y)
    r, g, pen = hand_reward(util, x, Y.tolist(), s=scale)
    assert p.gain == pytest.approx(g, rel=1e-12, abs=1e-12)
    assert p.penalty == pytest.approx(pen, rel=1e-12, abs=1e-12)
    assert p.reward == pytest.approx(r, rel=1e-12, abs=1e-12)
    assert dynamics.reward(inst, np.array(x), Y) == pytest.approx(r, rel=1e-12, abs=1e-12)


def hand_supergradient(util, x, y, beta=BETA):
    g = np.zeros((3, 2))
    for lt in range(2):
        tot = [sum(y[e][k] for e, (le, _) in enumerate(EDGES) if le == lt) for k in range(2)]
        w = [beta[k] * tot[k] for k in range(2)]
        kstar = 0 if w[0] >= w[1] else 1  # lowest index on ties
        for e, (le, r) in enumerate(EDGES):
            if le == lt:
                for k in range(2):
                    g[e, k] = x[lt] * (df_hand(util[r][k], ALPHA[r][k], y[e][k])
                                       - (beta[k] if k == kstar else 0.0))
    return g


@pytest.mark.parametrize("family", [*FAMILIES, "mixed"])
@pytest.mark.parametrize("x", [[1.0, 1.0], [1.0, 0.0], [0.0, 1.0], [2.0, 5.0]])
def test_supergradient_by_hand(family, x):
    util = MIXED if family == "mixed" else [[family] * 2] * 2
    inst = tiny(util)
    g = dynamics.supergradient(inst, np.array(x), Y)
    np.testing.assert_allclose(g, hand_supergradient(util, x, Y.tolist()), rtol=1e-12, atol=1e-14)


def test_supergradient_linear_literal_and_penalty_on_every_channel():
    inst = tiny("linear")
    g = dynamics.supergradient(inst, np.array([1.0, 1.0]), Y)
    # type 0: k* = 1 on both of its channels (edges 0 and 1); type 1: k* = 0 on edge 2
    np.testing.assert_allclose(g, [[1.2, 1.1 - 0.5], [1.4, 1.3 - 0.5], [1.4 - 0.3, 1.3]])
    g0 = dynamics.supergradient(inst, np.array([1.0, 0.0]), Y)
    np.testing.assert_allclose(g0[2], [0.0, 0.0])  # no arrival: no gradient
    np.testing.assert_allclose(g0[:2], g[:2])


def test_supergradient_ties_break_at_lowest_k():
    inst = tiny("linear", beta=[0.5, 0.5])
    # type 0 totals [2, 2] -> beta*Y = [1, 1] (tie) -> k* = 0 on both channels
    y = np.array([[1.0, 1.5], [1.0, 0.5], [1.0, 0.0]])
    g = dynamics.supergradient(inst, np.array([1.0, 1.0]), y)
    np.testing.assert_allclose(g[:2, 0], [1.2 - 0.5, 1.4 - 0.5])
    np.testing.assert_allclose(g[:2, 1], [1.1, 1.3])
    assert dynamics.reward_parts(inst, np.array([1.0, 1.0]), y).k_star[0] == 0
    # all-zero allocation: every product ties at 0 -> k* = 0 (OgaSched (27): lowest index on ties)
    g = dynamics.supergradient(inst, np.array([1.0, 1.0]), np.zeros((3, 2)))
    np.testing.assert_allclose(g, [[1.2 - 0.5, 1.1], [1.4 - 0.5, 1.3], [1.4 - 0.5, 1.3]])


@pytest.mark.parametrize("family", [*FAMILIES, "mixed"])
def test_supergradient_inequality(family):
    """q concave: q(y') <= q(y) + <g(y), y' - y> for feasible y, y' (any supergradient)."""
    p = dict(DEFAULTS, n_types=4, n_instances=6, n_resources=3, utility=family)
    inst = generate(p, 3)
    rng = np.random.default_rng(5)
    for _ in range(30):
        x = rng.integers(0, 3, inst.n_types).astype(float)
        y, y2 = (dynamics.project(inst, rng.uniform(-0.5, 1.0, inst.edge_caps.shape)
                                  * inst.edge_caps) for _ in range(2))
        g = dynamics.supergradient(inst, x, y)
        lhs = dynamics.reward(inst, x, y2)
        rhs = dynamics.reward(inst, x, y) + float(np.sum(g * (y2 - y)))
        assert lhs <= rhs + 1e-9 * (1 + abs(rhs))


# --------------------------------------------------------- projection onto Y of a whole instance
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dynamics_project_matches_cvxpy(seed):
    p = dict(DEFAULTS, n_types=5, n_instances=8, n_resources=4, contention=0.3)
    inst = generate(p, seed)
    rng = np.random.default_rng(seed)
    E, K = inst.n_edges, inst.n_resources
    load = np.zeros((inst.n_instances, E))
    load[inst.edge_instance, np.arange(E)] = 1.0
    for scale in (0.2, 1.0, 3.0):  # mostly slack ... mostly tight
        z = rng.normal(0.3, 1.0, (E, K)) * inst.edge_caps * scale
        y = dynamics.project(inst, z)
        v = cp.Variable((E, K))
        prob = cp.Problem(cp.Minimize(cp.sum_squares(v - z)),
                          [v >= 0, v <= inst.edge_caps, load @ v <= inst.capacities])
        prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
        assert np.abs(y - v.value).max() < 1e-6 * max(1.0, float(np.abs(z).max()))
        assert dynamics.is_feasible(inst, y, tol=1e-9)
        # a feasible point is its own projection
        np.testing.assert_allclose(dynamics.project(inst, y), y, rtol=0, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.01, 5.0), st.floats(0.05, 20.0))
def test_dynamics_project_in_Y_and_fixes_feasible_points(seed, spread, contention):
    inst = generate(dict(DEFAULTS, n_types=4, n_instances=5, n_resources=3,
                         contention=contention), seed % 50)
    rng = np.random.default_rng(seed)
    z = rng.normal(0.5, spread, inst.edge_caps.shape) * inst.edge_caps
    y = dynamics.project(inst, z)
    assert dynamics.feasibility_violation(inst, y) <= 1e-12 * (1 + inst.capacities.max())
    np.testing.assert_allclose(dynamics.project(inst, y), y, rtol=0, atol=1e-9)
