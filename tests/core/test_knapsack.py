"""The exact knapsack DPs of schedgym.core.knapsack against brute-force enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedgym.core.knapsack import budgeted_knapsack, knapsack_01


def _all_selections(E: int) -> np.ndarray:
    return np.array(list(itertools.product([0, 1], repeat=E)), dtype=np.int64)


@st.composite
def tiny(draw):
    E = draw(st.integers(1, 8))
    K = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    A = rng.integers(0, 3, size=(K, E))
    c = rng.integers(0, 5, size=K)
    v = rng.integers(0, 30, size=E).astype(float)
    b = rng.integers(0, 6, size=E)
    allowed = rng.random(E) < 0.8
    return A, c, v, b, allowed


@settings(max_examples=60, deadline=None)
@given(tiny())
def test_budgeted_dp_equals_brute_force_for_every_budget(case):
    A, c, v, b, allowed = case
    X = _all_selections(A.shape[1])
    ok = np.all(X @ A.T <= c, axis=1) & ~np.any(X[:, ~allowed], axis=1)
    S = int(b.sum()) + 1  # one level beyond anything reachable
    sol = budgeted_knapsack(v, b, A, c, S, allowed)
    for s in range(S + 1):
        sel = ok & (X @ b >= s)
        want = (X[sel] @ v).max() if sel.any() else -np.inf
        assert sol.values[s] == want
        if np.isfinite(want):
            x = sol.selection(s)
            assert np.all(A @ x <= c) and b @ x >= s and v @ x == want
            assert not np.any(x[~allowed])
    with pytest.raises(ValueError, match="feasible budget"):
        sol.selection(S)
    # the max_items speed-up (rows above the reachable budget skipped) changes nothing
    n_max = int(X[ok].sum(axis=1).max())
    fast = budgeted_knapsack(v, b, A, c, S, allowed, max_items=n_max)
    np.testing.assert_array_equal(fast.values, sol.values)
    for s in np.flatnonzero(np.isfinite(sol.values)):
        x = fast.selection(int(s))
        assert np.all(A @ x <= c) and b @ x >= s and v @ x == sol.values[s]


@settings(max_examples=60, deadline=None)
@given(tiny())
def test_knapsack_equals_brute_force(case):
    A, c, v, _, allowed = case
    v = v - 5.0  # some negative values too
    X = _all_selections(A.shape[1])
    ok = np.all(X @ A.T <= c, axis=1) & ~np.any(X[:, ~allowed], axis=1)
    want = (X[ok] @ v).max()
    val, x = knapsack_01(v, A, c, allowed)
    assert val == pytest.approx(want)
    assert v @ x == pytest.approx(want)
    assert np.all(A @ x <= c) and not np.any(x[~allowed])


def test_ties_prefer_not_taking_earlier_items():
    # two identical items, room for one: the DP skips item 0 on the tie and takes item 1
    val, x = knapsack_01(np.array([1.0, 1.0]), np.array([[1, 1]]), np.array([1]))
    assert val == 1.0 and x.tolist() == [0, 1]


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="weights has shape"):
        knapsack_01(np.ones(3), np.ones((2, 2), dtype=int), np.ones(2, dtype=int))
    with pytest.raises(ValueError, match="capacity has shape"):
        knapsack_01(np.ones(2), np.ones((2, 2), dtype=int), np.ones(3, dtype=int))
    with pytest.raises(ValueError, match="integers"):
        knapsack_01(np.ones(2), np.full((1, 2), 0.5), np.ones(1))
    with pytest.raises(ValueError, match="budgets"):
        budgeted_knapsack(np.ones(2), np.array([-1, 0]), np.ones((1, 2), dtype=int),
                          np.ones(1, dtype=int), 3)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_reachable_levels_is_the_sum_of_the_largest_allowed_budgets(seed):
    from schedgym.core.knapsack import reachable_levels

    rng = np.random.default_rng(seed)
    E = int(rng.integers(0, 12))
    b = rng.integers(0, 20, size=E).astype(np.int64)
    ok = rng.random(E) < 0.7
    kmax, cap = int(rng.integers(0, 5)), int(rng.integers(0, 60))
    want = [min(int(np.sort(b[i:][ok[i:]])[::-1][:kmax].sum()), cap) for i in range(E)] + [0]
    assert reachable_levels(b, ok, kmax, cap).tolist() == want


def test_no_resource_type_means_only_the_values_count():
    val, x = knapsack_01(np.array([1.0, -2.0, 3.0]), np.zeros((0, 3), dtype=int),
                         np.zeros(0, dtype=int))
    assert val == 4.0 and x.tolist() == [1, 0, 1]
    sol = budgeted_knapsack(np.array([1.0, 2.0]), np.array([1, 1]), np.zeros((0, 2), dtype=int),
                            np.zeros(0, dtype=int), 2)
    assert sol.values.tolist() == [3.0, 3.0, 3.0] and sol.selection(2).tolist() == [1, 1]
