"""The checkpointed budgeted DP (back-pointers rebuilt by recomputation, bounded memory) gives
the same values and the same maximisers as the one that keeps every back-pointer, and both
equal brute-force enumeration on tiny instances."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedgym.core.knapsack import best_segment, budgeted_knapsack, budgeted_memory


@st.composite
def case(draw):
    E = draw(st.integers(1, 9))
    K = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    A = rng.integers(0, 3, size=(K, E))
    c = rng.integers(0, 5, size=K)
    v = rng.integers(0, 30, size=E).astype(float)
    v[rng.random(E) < 0.2] = 1e12  # ESDP's big-M of unexplored channels
    b = rng.integers(0, 6, size=E)
    allowed = rng.random(E) < 0.8
    return A, c, v, b, allowed, draw(st.integers(1, E + 1))


@settings(max_examples=80, deadline=None)
@given(case())
def test_checkpointed_equals_full_and_brute_force(case):
    A, c, v, b, allowed, segment = case
    E = A.shape[1]
    X = np.array(list(itertools.product([0, 1], repeat=E)), dtype=np.int64)
    ok = np.all(X @ A.T <= c, axis=1) & ~np.any(X[:, ~allowed], axis=1)
    S = int(b.sum()) + 1
    n_max = int(X[ok].sum(axis=1).max())
    full = budgeted_knapsack(v, b, A, c, S, allowed, max_items=n_max)
    ck = budgeted_knapsack(v, b, A, c, S, allowed, max_items=n_max, segment=segment)
    np.testing.assert_array_equal(ck.values, full.values)
    for s in range(S + 1):
        sel = ok & (X @ b >= s)
        want = (X[sel] @ v).max() if sel.any() else -np.inf
        assert ck.values[s] == want
        if np.isfinite(want):
            x = ck.selection(s)
            np.testing.assert_array_equal(x, full.selection(s))  # the identical maximiser
            assert np.all(A @ x <= c) and b @ x >= s and v @ x == want
            assert not np.any(x[~allowed])
    with pytest.raises(ValueError, match="feasible budget"):
        ck.selection(S)


def test_segment_is_checked():
    with pytest.raises(ValueError, match=r"segment=0 is invalid: must be None or an integer"):
        budgeted_knapsack(np.ones(2), np.ones(2, int), np.ones((1, 2), int), np.array([2]), 2,
                          segment=0)


def test_memory_formula_by_hand():
    # full: a float64 table (7 states x 11 levels) + one bool per (item, state, level)
    assert budgeted_memory(5, 7, 11) == 8 * 77 + 5 * 77
    # segment 2 over 5 items: 3 segments, 2 checkpoints, 2 working tables, 2 items' pointers
    assert budgeted_memory(5, 7, 11, segment=2) == 2 * 8 * 77 + 2 * 8 * 77 + 2 * 77
    assert best_segment(2000) == round(math.sqrt(16000)) == 126
    E = 2000  # the checkpointed form needs about a sqrt(8 E) / E share of the full one's
    ratio = budgeted_memory(E, 343, 20000, best_segment(E)) / budgeted_memory(E, 343, 20000)
    assert ratio < 0.15
