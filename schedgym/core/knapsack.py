"""Exact dynamic programs for 0/1 selection under integer multi-dimensional capacities.

Problem shape shared by every user: items ``e = 0..E-1`` (e.g. channels), integer requests
``A`` of shape ``(K, E)`` (``A[k, e] >= 0`` units of resource type ``k``) and integer capacities
``c`` of shape ``(K,)``; a selection ``x in {0,1}^E`` is feasible iff ``A x <= c``. Both DPs run
backwards over the items on a dense tensor of remaining capacities ``c' in [0, c]``
(``prod_k (c_k + 1)`` states) and break exact ties towards *not* taking an item, then
reconstruct the selection forwards from the full capacity.

- :func:`knapsack_01`: ``max v^T x`` s.t. ``A x <= c`` (the ESDP oracle, spec esdp §4.3).
- :func:`budgeted_knapsack`: for every budget level ``s = 0..S``, ``V*(s) = max w^T x`` s.t.
  ``A x <= c`` and ``b^T x >= s`` (ESDP's Algorithm 2, spec esdp §3.5), with
  :meth:`BudgetedSolution.selection` to reconstruct a maximiser for any ``s``.

Complexity ``O(E * (S + 1) * prod_k (c_k + 1))`` time; the budgeted DP keeps one boolean
back-pointer tensor per item. ``allowed`` (bool ``(E,)``) excludes items from the DP (they are
never selected).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def _check(
    weights: np.ndarray, capacity: np.ndarray, n_items: int, allowed: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    A = np.asarray(weights)
    c = np.asarray(capacity)
    if A.ndim != 2 or A.shape[1] != n_items:
        raise ValueError(f"weights has shape {A.shape}: must have shape (K, {n_items})")
    if c.shape != (A.shape[0],):
        raise ValueError(f"capacity has shape {c.shape}: must have shape ({A.shape[0]},)")
    if not (np.issubdtype(A.dtype, np.integer) and np.issubdtype(c.dtype, np.integer)):
        if not (np.all(A == np.round(A)) and np.all(c == np.round(c))):
            raise ValueError("weights and capacity must be integers (the DP is over unit counts)")
    A = A.astype(np.int64)
    c = c.astype(np.int64)
    if A.size and A.min() < 0:
        raise ValueError(f"weights has minimum {A.min()}: every entry must be >= 0")
    if c.size and c.min() < 0:
        raise ValueError(f"capacity has minimum {c.min()}: every entry must be >= 0")
    ok = np.ones(n_items, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    if ok.shape != (n_items,):
        raise ValueError(f"allowed has shape {ok.shape}: must have shape ({n_items},)")
    # an item that can never fit is the same as a forbidden one
    ok = ok & np.all(A <= c[:, None], axis=0)
    return A, c, ok


def _slices(a: np.ndarray, c: np.ndarray) -> tuple[tuple[slice, ...], tuple[slice, ...]]:
    """Destination ``c' >= a`` and source ``c' - a`` slices of the capacity tensor."""
    dst = tuple(slice(int(ak), None) for ak in a)
    src = tuple(slice(0, int(ck) + 1 - int(ak)) for ak, ck in zip(a, c, strict=True))
    return dst, src


def knapsack_01(
    values: np.ndarray,
    weights: np.ndarray,
    capacity: np.ndarray,
    allowed: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """Exact ``max values^T x`` s.t. ``weights @ x <= capacity``, ``x in {0,1}^E``.

    Args:
        values: float ``(E,)`` item values (any sign; negative items are never taken).
        weights: int ``(K, E)`` requests. capacity: int ``(K,)``.
        allowed: optional bool ``(E,)``; items with ``False`` are forced to 0.
    Returns:
        ``(optimum, x)`` with ``x`` int8 ``(E,)`` a maximiser (ties: the item is not taken).
    """
    v = np.asarray(values, dtype=np.float64)
    E = v.shape[0]
    A, c, ok = _check(weights, capacity, E, allowed)
    shape = tuple(int(ck) + 1 for ck in c)
    W = np.zeros(shape)
    takes: list[tuple[np.ndarray, tuple[slice, ...]] | None] = [None] * E
    for i in range(E - 1, -1, -1):
        if not ok[i] or v[i] <= 0.0:
            continue  # taking a non-positive item never strictly improves
        dst, src = _slices(A[:, i], c)
        cand = W[src] + v[i]
        region = W[dst]
        take = cand > region
        np.maximum(region, cand, out=region)
        takes[i] = (take, dst)
    x = np.zeros(E, dtype=np.int8)
    cur = c.copy()
    for i in range(E):
        t = takes[i]
        if t is None or np.any(cur < A[:, i]):
            continue
        if t[0][tuple(cur - A[:, i])]:
            x[i] = 1
            cur -= A[:, i]
    return float(W[tuple(c)]), x


@dataclass(frozen=True)
class BudgetedSolution:
    """Result of :func:`budgeted_knapsack`.

    Attributes:
        values: float ``(S + 1,)``: ``V*(s)`` for ``s = 0..S`` (``-inf`` if infeasible).
        max_budget: ``S``, the largest budget level solved.
    """

    values: np.ndarray
    max_budget: int
    _takes: tuple
    _weights: np.ndarray
    _capacity: np.ndarray
    _budgets: np.ndarray

    def selection(self, s: int) -> np.ndarray:
        """A maximiser ``x`` (int8 ``(E,)``) of budget level ``s`` (must be feasible)."""
        if not 0 <= s <= self.max_budget or not np.isfinite(self.values[s]):
            raise ValueError(f"s={s!r} is invalid: must be a feasible budget level in "
                             f"[0, {self.max_budget}]")
        A, b = self._weights, self._budgets
        E = A.shape[1]
        x = np.zeros(E, dtype=np.int8)
        cur = self._capacity.copy()
        s_cur = int(s)
        for i in range(E):
            t = self._takes[i]
            if t is None or np.any(cur < A[:, i]):
                continue
            if s_cur < t.shape[-1] and t[(*(cur - A[:, i]), s_cur)]:
                x[i] = 1
                s_cur = max(s_cur - int(b[i]), 0)
                cur -= A[:, i]
        return x


def budgeted_knapsack(
    values: np.ndarray,
    budgets: np.ndarray,
    weights: np.ndarray,
    capacity: np.ndarray,
    max_budget: int,
    allowed: np.ndarray | None = None,
    max_items: int | None = None,
) -> BudgetedSolution:
    """All budget levels at once: ``V*(s) = max values^T x`` s.t. ``weights @ x <= capacity``,
    ``budgets^T x >= s``, for ``s = 0..max_budget`` (spec esdp §3.5, Algorithm 2).

    Recursion over items ``i = E-1..0`` on ``W[c', s]`` (``W_E = 0`` at ``s = 0``, ``-inf``
    elsewhere): ``take = values_i + W[max(s - budgets_i, 0), c' - A_i]`` when ``A_i <= c'``;
    ``W = max(skip, take)`` with ties kept as *skip*. ``V*(s) = W[s, c]``.

    Args:
        values: float ``(E,)`` (ESDP: the integer scaled variance proxies ``S^2_e``; exact as
            long as sums stay below ``2**53``).
        budgets: int ``(E,)`` >= 0 (ESDP: the integer scaled means ``theta_hat_e``).
        weights: int ``(K, E)``; capacity: int ``(K,)``; max_budget: ``S >= 0``.
        allowed: optional bool ``(E,)``; items with ``False`` are forced to 0.
        max_items: optional upper bound on how many items fit together. Only speeds the DP up:
            when items ``i..E-1`` are processed, budget levels above the largest reachable one
            (the sum of the ``max_items`` largest budgets among them) are ``-inf`` and skipped.
    """
    v = np.asarray(values, dtype=np.float64)
    E = v.shape[0]
    b = np.asarray(budgets)
    if b.shape != (E,) or (b.size and (b.min() < 0 or np.any(b != np.round(b)))):
        raise ValueError(f"budgets must be non-negative integers of shape ({E},)")
    b = b.astype(np.int64)
    A, c, ok = _check(weights, capacity, E, allowed)
    S = int(max_budget)
    if S < 0:
        raise ValueError(f"max_budget={max_budget!r} is invalid: must be an integer >= 0")
    nS = S + 1
    # reach[i]: largest budget level reachable with items i..E-1 (rows above it stay -inf)
    reach = np.zeros(E + 1, dtype=np.int64)
    kmax = E if max_items is None else max(int(max_items), 0)
    suffix: list[int] = []
    for i in range(E - 1, -1, -1):
        if ok[i]:
            suffix.append(int(b[i]))
            suffix.sort(reverse=True)
            del suffix[kmax:]
        reach[i] = min(sum(suffix), S)
    # Layout W[c'_1, ..., c'_K, s]: the budget axis is last and contiguous, so every capacity
    # slice below moves runs of budget levels at once.
    W = np.full((*(int(ck) + 1 for ck in c), nS), -np.inf)
    W[..., 0] = 0.0
    takes: list[np.ndarray | None] = [None] * E
    for i in range(E - 1, -1, -1):
        if not ok[i]:
            continue
        dst, src = _slices(A[:, i], c)
        n_rows = int(reach[i]) + 1  # levels 0..reach[i] may become finite
        th = min(int(b[i]), n_rows)
        if th == 0:
            cand = W[(*src, slice(0, n_rows))] + v[i]
        else:
            cand = np.empty((*(sl.stop - sl.start for sl in src), n_rows))
            np.add(W[(*src, slice(0, n_rows - th))], v[i], out=cand[..., th:])
            cand[..., :th] = W[(*src, slice(0, 1))] + v[i]  # s <= th: budget met by this item
        region = W[(*dst, slice(0, n_rows))]
        take = cand > region
        np.maximum(region, cand, out=region)
        takes[i] = take
    top = W[tuple(int(ck) for ck in c)].copy()
    return BudgetedSolution(top, S, tuple(takes), A, c, b)
