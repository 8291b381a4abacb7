"""The budgeted DP's compiled kernels (with their exact shortcuts: levels above a state's last
finite one skipped, the reconstruction recomputing only the states and levels its walk can
reach) pick bit for bit the maximiser of the readable tensor form of Algorithm 2 (spec esdp
§3.8: one boolean ``choose`` tensor per item, ties kept as *skip*, reconstructed forwards), for
every budget level, in both forms; and ESDP's decision (rule (21) on top) is that maximiser."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedgym.agents.esdp import p4_decision, rule_21
from schedgym.core.knapsack import budgeted_knapsack


def reference(v: np.ndarray, b: np.ndarray, A: np.ndarray, c: np.ndarray, S: int,
              allowed: np.ndarray) -> tuple[np.ndarray, list[np.ndarray | None]]:
    """Spec esdp §3.8 in numpy: ``W[s, c'_1..c'_K]`` for ``s = 0..S``, ``W_E = 0`` at
    ``s = 0`` and ``-inf`` above; item ``i`` (from the last) may be taken where ``A_i <= c'``,
    from ``W[max(s - b_i, 0), c' - A_i]``; ``choose_i = take > skip``. Returns ``(V*(s) (S+1,),
    choose tensors)`` (``None`` for a forbidden item)."""
    K, E = A.shape
    shape = (S + 1, *(int(ck) + 1 for ck in c))
    W = np.full(shape, -np.inf)
    W[0] = 0.0
    choose: list[np.ndarray | None] = [None] * E
    for i in reversed(range(E)):
        if not allowed[i]:
            continue
        a = A[:, i]
        shifted = W[np.maximum(np.arange(S + 1) - b[i], 0)]
        cand = np.full(shape, -np.inf)
        if np.all(a <= c):
            dst = (slice(None), *(slice(int(a[k]), None) for k in range(K)))
            src = (slice(None), *(slice(0, int(c[k] + 1 - a[k])) for k in range(K)))
            cand[dst] = shifted[src] + v[i]
        choose[i] = cand > W
        W = np.where(choose[i], cand, W)
    return W[(slice(None), *(int(ck) for ck in c))], choose


def reference_selection(s: int, b: np.ndarray, A: np.ndarray, c: np.ndarray,
                        choose: list[np.ndarray | None]) -> np.ndarray:
    """The forward reconstruction of spec esdp §3.5 from budget level ``s``."""
    x = np.zeros(A.shape[1], dtype=np.int8)
    cc = np.array(c, dtype=np.int64)
    for i, ch in enumerate(choose):
        if ch is not None and ch[(s, *cc)]:
            x[i] = 1
            s = max(s - int(b[i]), 0)
            cc -= A[:, i]
    return x


@st.composite
def case(draw):
    E = draw(st.integers(1, 10))
    K = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    A = rng.integers(0, 3, size=(K, E))
    c = rng.integers(0, 6, size=K)
    # few distinct values: many exact ties, where the tie rule decides the maximiser
    v = rng.choice([0.0, 1.0, 2.0, 3.0, 1e12], size=E)
    b = rng.integers(0, 7, size=E)
    allowed = rng.random(E) < 0.85
    return A, c, v, b, allowed, draw(st.integers(1, E + 1)), draw(st.booleans())


@settings(max_examples=120, deadline=None)
@given(case())
def test_both_forms_pick_the_reference_maximiser_at_every_level(case):
    A, c, v, b, allowed, segment, cut = case
    S = int(b.sum()) + 1
    ref_values, choose = reference(v, b, A, c, S, allowed)
    n_max = A.shape[1]
    if cut:  # the reachable-level cut with a true bound on how many items fit together
        n_max = max(int(reference(np.ones_like(v), np.zeros_like(b), A, c, 0, allowed)[0][0]), 0)
    full = budgeted_knapsack(v, b, A, c, S, allowed, max_items=n_max)
    ck = budgeted_knapsack(v, b, A, c, S, allowed, max_items=n_max, segment=segment)
    np.testing.assert_array_equal(full.values, ref_values)
    np.testing.assert_array_equal(ck.values, ref_values)
    for s in np.flatnonzero(np.isfinite(ref_values)):
        want = reference_selection(int(s), b, A, c, choose)
        np.testing.assert_array_equal(full.selection(int(s)), want)
        np.testing.assert_array_equal(ck.selection(int(s)), want)


@settings(max_examples=60, deadline=None)
@given(case())
def test_esdp_decision_is_the_reference_maximiser_at_rule_21(case):
    A, c, v, b, allowed, _, _ = case
    n_max = max(int(reference(np.ones_like(v), np.zeros_like(b), A, c, 0, allowed)[0][0]), 0)
    cap = int(b.sum()) + 3
    for form in ("full", "checkpointed"):
        x, s_star, S, used = p4_decision(v, b.astype(np.int64), allowed, A.astype(np.int64),
                                         c.astype(np.int64), n_max, cap, 2.0**40, form)
        assert used == form
        ref_values, choose = reference(v, b, A, c, S, allowed)
        assert s_star == rule_21(ref_values)
        np.testing.assert_array_equal(x, reference_selection(s_star, b, A, c, choose))
