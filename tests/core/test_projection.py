"""The exact projection onto capped simplices against cvxpy, its properties, and the paper's
procedure (an ablation) where it is and is not exact (spec ogasched §3.4)."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedgym.core.projection import project_capped_simplex, project_paper

CLARABEL_TIGHT = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12,
                  "tol_ktratio": 1e-10, "max_iter": 500}


def _random_groups(rng: np.random.Generator, n_groups: int, n_max: int):
    """Padded batch ``(G, n_max)`` of groups with heterogeneous sizes, caps and capacity regimes.

    Regimes cycle over: slack capacity, tight capacity, barely over capacity (first-segment fast
    path), zero capacity, all caps zero. Caps are zero with probability 0.2; z has negative
    entries and entries above the caps. Padding: a = 0, z arbitrary.
    """
    z = rng.normal(0.0, 3.0, size=(n_groups, n_max))
    a = rng.uniform(0.0, 4.0, size=(n_groups, n_max)) * (rng.random((n_groups, n_max)) > 0.2)
    sizes = rng.integers(1, n_max + 1, size=n_groups)
    c = np.empty(n_groups)
    for g in range(n_groups):
        a[g, sizes[g]:] = 0.0
        s0 = np.clip(z[g], 0.0, a[g]).sum()
        regime = g % 5
        if regime == 0:
            c[g] = s0 + rng.uniform(0.0, 3.0)  # slack
        elif regime == 1:
            c[g] = s0 * rng.uniform(0.0, 1.0)  # tight
        elif regime == 2:
            c[g] = s0 * (1.0 - 1e-3 * rng.random())  # just over capacity
        elif regime == 3:
            c[g] = 0.0  # zero capacity
        else:
            a[g] = 0.0  # all caps zero
            c[g] = rng.uniform(0.0, 2.0)
    return z, a, c


class _CvxpyProjector:
    """cvxpy reference: one parametrised QP per group size (compiled once, DPP), each group solved
    on its own by Clarabel with tight tolerances (a single stacked QP would spread the solver's
    tolerance over all groups and lose per-group accuracy)."""

    def __init__(self) -> None:
        self._probs: dict[int, tuple] = {}

    def _problem(self, n: int):
        if n not in self._probs:
            v, z, a, c = cp.Variable(n), cp.Parameter(n), cp.Parameter(n, nonneg=True), \
                cp.Parameter(nonneg=True)
            prob = cp.Problem(cp.Minimize(cp.sum_squares(v - z)), [v >= 0, v <= a, cp.sum(v) <= c])
            self._probs[n] = (prob, v, z, a, c)
        return self._probs[n]

    def __call__(self, z: np.ndarray, a: np.ndarray, c: np.ndarray) -> np.ndarray:
        out = np.zeros_like(z)
        for g in range(z.shape[0]):
            n = int(np.flatnonzero(a[g] > 0).max(initial=-1)) + 1  # drop the padding
            if n == 0:
                continue
            prob, v, zp, ap, cp_ = self._problem(n)
            zp.value, ap.value, cp_.value = z[g, :n], a[g, :n], float(c[g])
            prob.solve(solver="CLARABEL", **CLARABEL_TIGHT)
            assert prob.status == cp.OPTIMAL
            out[g, :n] = v.value
        return out


_cvxpy_project = _CvxpyProjector()


@pytest.mark.parametrize("n_max", [6, 24], ids=["small-groups", "large-groups"])
def test_exact_projection_matches_cvxpy(n_max):
    rng = np.random.default_rng(12345 + n_max)
    z, a, c = _random_groups(rng, 150, n_max)
    v = project_capped_simplex(z, a, c)
    ref = _cvxpy_project(z, a, c)
    err = np.abs(v - ref).max(axis=1)
    assert err.max() < 1e-6, f"worst group {err.argmax()}: {err.max():.3g}"
    # and never a worse objective than the solver's
    obj, obj_ref = ((v - z) ** 2 * (a > 0)).sum(axis=1), ((ref - z) ** 2 * (a > 0)).sum(axis=1)
    assert np.all(obj <= obj_ref + 1e-9 * (1 + obj_ref))
    # feasibility (box exact; capacity to a few ulps, since a float sum depends on its order)
    assert np.all(v >= 0) and np.all(v <= a)
    assert np.all(v.sum(axis=1) <= c * (1 + 1e-14))
    assert np.all(v[a == 0] == 0)


def test_exact_projection_batch_shapes_and_broadcast():
    rng = np.random.default_rng(3)
    z, a, c = _random_groups(rng, 24, 5)
    flat = project_capped_simplex(z, a, c)
    batched = project_capped_simplex(z.reshape(4, 6, 5), a.reshape(4, 6, 5), c.reshape(4, 6))
    np.testing.assert_array_equal(batched.reshape(24, 5), flat)
    # one group at a time gives the same result as the batch
    for g in range(24):
        np.testing.assert_allclose(project_capped_simplex(z[g], a[g], c[g]), flat[g],
                                   rtol=0, atol=1e-12)


def _kkt_ok(z, a, c, v, tol=1e-9):
    """Optimality certificate: some theta >= 0 has v = clip(z - theta, 0, a), and theta = 0 unless
    the capacity is tight. Each entry constrains theta: free entries fix it to z - v, entries at 0
    need theta >= z, entries at their cap need theta <= z - a (entries with a = 0 are fixed)."""
    scale = tol * (1.0 + np.abs(z).max() + a.max() + c)
    act = a > scale  # tiny caps pin the entry whatever theta is
    free = act & (v > scale) & (v < a - scale)
    at0 = act & (v <= scale) & ~free
    atcap = act & (v >= a - scale) & ~free & ~at0
    lo = max([0.0, *(z[at0] - scale)])
    hi = min([np.inf, *(z[atcap] - a[atcap] + scale)])
    if free.any():
        th = z[free] - v[free]
        if th.max() - th.min() > scale:
            return False
        lo, hi = max(lo, th.min() - scale), min(hi, th.max() + scale)
    if v.sum() < c - scale:  # capacity slack: theta must be 0
        hi = min(hi, scale)
    return lo <= hi


_floats = st.floats(-50.0, 50.0, allow_nan=False, allow_infinity=False)


@st.composite
def _group(draw):
    n = draw(st.integers(1, 20))
    z = np.array(draw(st.lists(_floats, min_size=n, max_size=n)))
    a = np.array(draw(st.lists(st.one_of(st.just(0.0), st.floats(0.0, 30.0)),
                               min_size=n, max_size=n)))
    c = draw(st.one_of(st.just(0.0), st.floats(0.0, 100.0)))
    return z, a, c


@settings(max_examples=150, deadline=None)
@given(_group())
def test_projection_in_Y_and_optimal(group):
    z, a, c = group
    v = project_capped_simplex(z[None], a[None], np.array([c]))[0]
    assert np.all(v >= 0) and np.all(v <= a) and v.sum() <= c * (1 + 1e-14)
    assert _kkt_ok(z, a, c, v)


@settings(max_examples=150, deadline=None)
@given(_group(), st.data())
def test_feasible_point_is_fixed(group, data):
    _, a, c = group
    n = a.size
    u = np.array(data.draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n)))
    y = u * a
    if y.sum() > c:  # scale into the capacity
        y *= c / y.sum()
        y = np.minimum(y, a)
    if y.sum() > c:  # rounding in the rescale
        return
    v = project_capped_simplex(y[None], a[None], np.array([c]))[0]
    np.testing.assert_allclose(v, y, rtol=0, atol=1e-12)


# ---------------------------------------------------------------- the paper's procedure (ablation)
def test_paper_projection_exact_when_caps_slack_and_capacity_tight():
    """Spec §3.4.1 item 5: with caps that cannot bind and a binding capacity, the paper's
    procedure is the classical sort-based simplex projection, hence exact."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 9))
        z = rng.normal(1.0, 2.0, size=n)
        a = z.max() + rng.uniform(0.1, 3.0, size=n)  # a_l > z_l for every l: caps never bind
        s0 = np.clip(z, 0.0, a).sum()
        if s0 <= 0:
            continue
        c = s0 * rng.uniform(0.05, 0.95)  # capacity binds
        paper, repeats = project_paper(z[None], a[None], np.array([c]))
        exact = project_capped_simplex(z[None], a[None], np.array([c]))
        np.testing.assert_allclose(paper, exact, rtol=0, atol=1e-10)
        assert repeats >= 1


def test_paper_projection_documented_defects():
    """Documents the ablation (spec §3.4.1 defects 1 and 2); this test FAILS if someone "fixes"
    project_paper into the exact projection, which would silently remove the ablation."""
    # defect 1: slack capacity -> the procedure still spends all of c, moving entries above z
    z, a, c = np.array([[1.0, 2.0]]), np.array([[5.0, 5.0]]), np.array([10.0])
    exact = project_capped_simplex(z, a, c)
    paper, _ = project_paper(z, a, c)
    np.testing.assert_allclose(exact, z)  # z is feasible: its own projection
    assert np.abs(paper - exact).max() > 0.5
    assert paper.sum() == pytest.approx(10.0)
    np.testing.assert_allclose(paper, [[5.0, 5.0]], atol=1e-12)
    # defect 2: only the largest entry is checked against its cap -> another one exceeds its cap
    z, a, c = np.array([[3.0, 2.9]]), np.array([[10.0, 1.0]]), np.array([3.5])
    paper, _ = project_paper(z, a, c)
    exact = project_capped_simplex(z, a, c)
    np.testing.assert_allclose(exact, [[2.5, 1.0]], atol=1e-12)
    assert paper[0, 1] > a[0, 1] + 0.1  # infeasible: 1.7 above the cap of 1
    np.testing.assert_allclose(paper, [[1.8, 1.7]], atol=1e-12)


def test_paper_projection_members_of_b2_are_zero():
    """Defect 3 is fixed (entries pushed below zero are set to 0, not left negative)."""
    z, a, c = np.array([[5.0, 0.1, -1.0]]), np.array([[10.0, 10.0, 10.0]]), np.array([2.0])
    paper, _ = project_paper(z, a, c)
    assert np.all(paper >= 0)
    np.testing.assert_allclose(paper, project_capped_simplex(z, a, c), atol=1e-12)


def test_wrong_sizes_are_refused_before_the_kernel_runs():
    """Arrays of mismatched sizes are a ``ValueError``, never a read past an array's end."""
    from schedgym.core.projection import WORK_ROWS, project_block, project_columns

    z, a, c = np.ones((3, 5)), np.ones((3, 5)), np.ones(5)
    with pytest.raises(ValueError, match="at has shape"):
        project_columns(z, a[:2], c)
    with pytest.raises(ValueError, match="c has shape"):
        project_columns(z, a, c[:4])
    with pytest.raises(ValueError, match="a has shape"):
        project_capped_simplex(z.T, a[:2].T, c)
    V, load = np.empty((3, 5)), np.empty(5)
    with pytest.raises(ValueError, match="project_block"):
        project_block(z, a, c[:4], V, load, np.empty((WORK_ROWS, 5)))
    with pytest.raises(ValueError, match="project_block"):
        project_block(z, a, c, V, load, np.empty((WORK_ROWS, 4)))
    project_block(z, a, c, V, load, np.empty((WORK_ROWS, 5)))
    assert np.allclose(load, 1.0)
