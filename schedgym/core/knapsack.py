"""Exact dynamic programs for 0/1 selection under integer multi-dimensional capacities.

Problem shape shared by every user: items ``e = 0..E-1`` (e.g. channels), integer requests
``A`` of shape ``(K, E)`` (``A[k, e] >= 0`` units of resource type ``k``) and integer capacities
``c`` of shape ``(K,)``; a selection ``x in {0,1}^E`` is feasible iff ``A x <= c``. Both DPs run
backwards over the items on a dense table of remaining capacities ``c' in [0, c]``
(``prod_k (c_k + 1)`` states, flattened in C order: ``c'_K`` varies fastest) and break exact ties
towards *not* taking an item, then reconstruct the selection forwards from the full capacity.

- :func:`knapsack_01`: ``max v^T x`` s.t. ``A x <= c`` (the ESDP oracle, spec esdp §4.3).
- :func:`budgeted_knapsack`: for every budget level ``s = 0..S``, ``V*(s) = max w^T x`` s.t.
  ``A x <= c`` and ``b^T x >= s`` (ESDP's Algorithm 2, spec esdp §3.5), with
  :meth:`BudgetedSolution.selection` to reconstruct a maximiser for any ``s``; with
  ``segment=`` it keeps checkpoints instead of every back-pointer and rebuilds the maximiser
  by recomputation (:func:`checkpointed_tables`, :func:`budgeted_memory`).

Complexity ``O(E * (S + 1) * prod_k (c_k + 1))`` time; the budgeted DP keeps one boolean
back-pointer per (item, capacity state, budget level it touches), or, checkpointed, about
``sqrt(8 E)`` tables and one segment's back-pointers (:func:`budgeted_memory`, an upper bound;
:class:`DPTooLargeError` is how a caller refuses a size that does not fit). Both forms skip,
exactly, what cannot change a value or a back-pointer that is read (:func:`_budget_items`):
the levels above a state's last finite one (the few items that fit in a small capacity reach
only low levels) and, in the checkpointed reconstruction, every state and level the forward
walk cannot reach; only the levels computed are written (back-pointers, checkpoints), so the
work and the memory touched are a fraction of the bound. ``allowed`` (bool ``(E,)``) excludes
items from the DP (they are never selected). The recursions are compiled with numba
(``cache=True``); the Python functions validate the input and call them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from schedgym.core.limits import NotComputed

#: ``0`` for calls between kernels: a bare ``0`` is typed ``Literal[int](0)`` and numba compiles
#: the callee once more for it; a numpy integer is a plain ``int64``.
_ZERO: Any = np.int64(0)


class DPTooLargeError(NotComputed):
    """A dynamic program refused before it starts because it would need more memory than it is
    allowed (the message names the sizes, the memory needed, the limit and the largest size
    that fits). A ``ValueError`` (through :class:`~schedgym.core.limits.NotComputed`): the sizes
    are the caller's input; ``schedgym compare`` reports an agent refused so as "not played"."""


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
    A = np.ascontiguousarray(A, dtype=np.int64)
    c = np.ascontiguousarray(c, dtype=np.int64)
    if A.size and A.min() < 0:
        raise ValueError(f"weights has minimum {A.min()}: every entry must be >= 0")
    if c.size and c.min() < 0:
        raise ValueError(f"capacity has minimum {c.min()}: every entry must be >= 0")
    ok = np.ones(n_items, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    if ok.shape != (n_items,):
        raise ValueError(f"allowed has shape {ok.shape}: must have shape ({n_items},)")
    # an item that can never fit is the same as a forbidden one
    ok = ok & np.all(A <= c[:, None], axis=0)
    if A.shape[0] == 0:  # no resource type: one that nothing requests is the same problem
        A, c = np.zeros((1, n_items), dtype=np.int64), np.zeros(1, dtype=np.int64)
    return A, c, ok


# ------------------------------------------------------------------ compiled kernels
@numba.njit(cache=True)
def _strides(c: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """C-order strides of the capacity table ``prod_k (c_k + 1)``, int64 ``(K,)``."""
    K = c.shape[0]
    st = np.ones(K, dtype=np.int64)
    for k in range(K - 2, -1, -1):
        st[k] = st[k + 1] * (c[k + 1] + 1)
    return st


@numba.njit(cache=True)
def _digits(c: np.ndarray, st: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """Capacity state of every flat index, int64 ``(prod_k (c_k + 1), K)``."""
    n_c = st[0] * (c[0] + 1)
    d = np.empty((n_c, c.shape[0]), dtype=np.int64)
    for f in range(n_c):
        for k in range(c.shape[0]):
            d[f, k] = (f // st[k]) % (c[k] + 1)
    return d


@numba.njit(cache=True)
def _fits(d: np.ndarray, f: int, A: np.ndarray, i: int) -> bool:  # pragma: no cover - compiled
    """Whether capacity state ``f`` (digits ``d``) holds item ``i``'s request (``c' >= A_i``)."""
    for k in range(A.shape[0]):
        if d[f, k] < A[k, i]:
            return False
    return True


@numba.njit(cache=True)
def _offset(A: np.ndarray, i: int, st: np.ndarray) -> int:  # pragma: no cover - compiled
    """Flat offset of item ``i``'s request ``A[:, i]`` in the capacity table."""
    off = 0
    for k in range(A.shape[0]):
        off += A[k, i] * st[k]
    return off


@numba.njit(cache=True)
def _knapsack_kernel(v: np.ndarray, A: np.ndarray, c: np.ndarray,
                     ok: np.ndarray) -> tuple[float, np.ndarray]:  # pragma: no cover - compiled
    """The 0/1 DP: ``W_i(c') = max(W_{i+1}(c'), v_i + W_{i+1}(c' - A_i))`` (ties: skip);
    returns ``(W_0(c), x)``. Descending flat index reads only not-yet-updated states."""
    E = v.shape[0]
    st = _strides(c)
    n_c = st[0] * (c[0] + 1)
    d = _digits(c, st)
    W = np.zeros(n_c)
    take = np.zeros((E, n_c), dtype=np.bool_)
    for i in range(E - 1, -1, -1):
        if not ok[i] or v[i] <= 0.0:
            continue  # taking a non-positive item never strictly improves
        off = _offset(A, i, st)
        for f in range(n_c - 1, off - 1, -1):
            if _fits(d, f, A, i):
                cand = W[f - off] + v[i]
                if cand > W[f]:
                    W[f] = cand
                    take[i, f] = True
    x = np.zeros(E, dtype=np.int8)
    cur = n_c - 1
    for i in range(E):
        if take[i, cur]:
            x[i] = 1
            cur -= _offset(A, i, st)
    return W[n_c - 1], x


@numba.njit(cache=True)
def _budget_row(src: np.ndarray, dst: np.ndarray, take: np.ndarray, rows: int, bi: int,
                vi: float) -> None:  # pragma: no cover - compiled
    """One capacity state of Algorithm 2: ``dst[s] = max(dst[s], vi + src[max(s - bi, 0)])``
    for ``s < rows``, and ``take[s]`` (for every ``s < rows``) = whether the item strictly
    improves. The caller passes ``rows`` no higher than one above the last finite level of
    ``src`` plus ``bi``: above it the candidate is ``-inf``, which never improves. Descending
    ``s`` reads only old values when ``src`` is ``dst`` (an item requesting nothing)."""
    for s in range(rows - 1, bi - 1, -1):
        cand = src[s - bi] + vi
        d = dst[s]
        take[s] = cand > d
        dst[s] = cand if cand > d else d
    cand = src[0] + vi
    for s in range(min(bi, rows) - 1, -1, -1):
        d = dst[s]
        take[s] = cand > d
        dst[s] = cand if cand > d else d


@numba.njit(cache=True)
def _in_box(d: np.ndarray, f: int, box: np.ndarray) -> bool:  # pragma: no cover - compiled
    """Whether capacity state ``f`` (digits ``d``) is componentwise ``<= box``."""
    for k in range(box.shape[0]):
        if d[f, k] > box[k]:
            return False
    return True


@numba.njit(cache=True)
def _save_checkpoint(W: np.ndarray, top: np.ndarray,
                     ck: np.ndarray) -> None:  # pragma: no cover - compiled
    """Copy the finite part of every state of ``W`` into the checkpoint ``ck`` (uninitialised,
    same shape): levels ``0..top[f]``, then one ``-inf`` that ends it (unless the row is full).
    The levels above are left unwritten (their memory pages untouched where whole)."""
    n_s = W.shape[1]
    for f in range(W.shape[0]):
        n = top[f] + 1
        ck[f, :n] = W[f, :n]
        if n < n_s:
            ck[f, n] = -np.inf


@numba.njit(cache=True)
def _load_checkpoint(ck: np.ndarray,
                     levels: int) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
    """Compiled: the table saved by :func:`_save_checkpoint`, levels ``< levels`` (float64 ``(n_c,
    levels)``), and the last finite level of each state (``top``). A state's row is
    non-increasing in the level (a higher budget only removes selections), so its finite
    levels are a prefix that the first ``-inf`` ends."""
    n_c = ck.shape[0]
    W = np.full((n_c, levels), -np.inf)
    top = np.zeros(n_c, dtype=np.int64)
    for f in range(n_c):
        s = 0
        while s < levels and ck[f, s] > -np.inf:
            W[f, s] = ck[f, s]
            s += 1
        top[f] = max(s - 1, 0)
    return W, top


@numba.njit(cache=True)
def _budget_items(W: np.ndarray, top: np.ndarray, v: np.ndarray, b: np.ndarray, A: np.ndarray,
                  c: np.ndarray, ok: np.ndarray, reach: np.ndarray, lo: int, hi: int,
                  take: np.ndarray, rows: np.ndarray, box: np.ndarray,
                  levels: int) -> None:  # pragma: no cover - compiled
    """Algorithm 2 over items ``hi-1 .. lo`` on the table ``W`` (``(n_c, n_s)``, updated in
    place from ``W_hi`` to ``W_lo``). The back-pointers of item ``i`` at capacity state ``f``
    (one per level computed there, from level 0) are appended to ``take`` (bool, at least
    :func:`_pointer_bound` long); ``rows[(i - lo) n_c + f]`` = ``(start in take, levels
    computed)`` (int64 ``((hi - lo) n_c, 2)``, zeros on entry: a row not computed has length
    0, i.e. the item is not taken there). An empty ``take`` keeps no back-pointer (values only).

    Exact shortcuts, none of which changes a value or a back-pointer that is read:

    - ``top[f]`` (int64 ``(n_c,)``, updated in place) bounds the last finite level of
      ``W[f]``; item ``i``'s candidate ``v_i + W[f - A_i, s - b_i]`` is ``-inf`` above
      ``top[f - A_i] + b_i``, never an improvement, so those levels are skipped (the table
      stays as it is; their back-pointer is "not taken"). With the few channels that fit in a
      small capacity, most states have far fewer finite levels than ``S + 1``.
    - only the states componentwise ``<= box`` and the levels ``< levels`` are computed: a
      state reads only states below it, a level only levels below it, so these are exact
      (the rest of ``W`` is left stale); the reconstruction, which starts at ``box`` and
      level ``levels - 1`` and only goes down, reads nothing else.
    """
    st = _strides(c)
    n_c = st[0] * (c[0] + 1)
    d = _digits(c, st)
    scratch = np.zeros(W.shape[1], dtype=np.bool_)
    keep = take.shape[0] > 0
    pos = 0
    for i in range(hi - 1, lo - 1, -1):
        if not ok[i]:
            continue
        off = _offset(A, i, st)
        cap = min(reach[i] + 1, levels)  # levels above reach[i] are -inf for W_i
        for f in range(n_c - 1, off - 1, -1):
            if _fits(d, f, A, i) and _in_box(d, f, box):
                # levels above top[f - off] + b_i: candidate -inf, nothing to do
                n = min(cap, top[f - off] + b[i] + 1)
                row = scratch
                if keep:
                    row = take[pos:pos + n]
                    rows[(i - lo) * n_c + f, 0] = pos
                    rows[(i - lo) * n_c + f, 1] = n
                    pos += n
                _budget_row(W[f - off], W[f], row, n, b[i], v[i])
                top[f] = max(top[f], n - 1)


@numba.njit(cache=True)
def _base_table(n_c: int, n_s: int) -> np.ndarray:  # pragma: no cover - compiled
    """``W_E``: 0 at budget level 0, ``-inf`` above, for every capacity state."""
    W = np.full((n_c, n_s), -np.inf)
    W[:, 0] = 0.0
    return W


@numba.njit(cache=True)
def _base_tops(n_c: int) -> np.ndarray:  # pragma: no cover - compiled
    """The last finite level of every state of ``W_E``: 0."""
    return np.zeros(n_c, dtype=np.int64)


@numba.njit(cache=True)
def _pointer_bound(n_c: int, ok: np.ndarray, reach: np.ndarray, lo: int, hi: int,
                   levels: int) -> int:  # pragma: no cover - compiled
    """At most how many back-pointers items ``lo..hi-1`` keep: ``sum n_c min(reach[i] + 1,
    levels)`` over the allowed ones (one per capacity state and level each can touch). Their
    array is allocated this long but uninitialised: the memory pages it does not write (the
    levels :func:`_budget_items` skips) are never touched."""
    total = 0
    for i in range(lo, hi):
        if ok[i]:
            total += n_c * min(reach[i] + 1, levels)
    return total


@numba.njit(cache=True)
def _pointers(n_c: int, ok: np.ndarray, reach: np.ndarray, lo: int, hi: int,
              levels: int) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """Empty back-pointers of items ``lo..hi-1`` for :func:`_budget_items`: ``(take, rows)``."""
    take = np.empty(_pointer_bound(n_c, ok, reach, lo, hi, levels), dtype=np.bool_)
    return take, np.zeros(((hi - lo) * n_c, 2), dtype=np.int64)


@numba.njit(cache=True)
def budgeted_tables(v: np.ndarray, b: np.ndarray, A: np.ndarray, c: np.ndarray, ok: np.ndarray,
                    reach: np.ndarray,
                    n_s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """Compiled core of :func:`budgeted_knapsack` (inputs already checked: int64 ``A``, ``c``,
    ``b``; ``ok`` excludes items that do not fit alone). Algorithm 2 on ``W[c', s]``
    (``W_E = 0`` at ``s = 0``, ``-inf`` elsewhere):
    ``take = v_i + W[c' - A_i, max(s - b_i, 0)]``; ``W = max(skip, take)``, ties kept as skip.
    Item ``i`` touches only levels ``0..reach[i]``. Returns ``(V*(s) (n_s,), back-pointers (flat
    bool), rows)``: item ``i``'s back-pointers at state ``f`` are ``take[r0:r0 + n]`` with
    ``(r0, n) = rows[i n_c + f]`` (levels ``>= n``: not taken). Memory: at most
    :func:`budgeted_memory` ``"full"`` (the levels skipped are never written), plus 16 bytes
    of ``rows`` per item and capacity state."""
    E = v.shape[0]
    n_c = _strides(c)[0] * (c[0] + 1)
    W = _base_table(n_c, n_s)
    take, rows = _pointers(n_c, ok, reach, _ZERO, E, n_s)
    _budget_items(W, _base_tops(n_c), v, b, A, c, ok, reach, _ZERO, E, take, rows, c, n_s)
    return W[n_c - 1].copy(), take, rows


@numba.njit(cache=True)
def checkpointed_tables(v: np.ndarray, b: np.ndarray, A: np.ndarray, c: np.ndarray,
                        ok: np.ndarray, reach: np.ndarray, n_s: int,
                        segment: int) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
    """The values of :func:`budgeted_tables` without its back-pointers: ``(V*(s) (n_s,),
    checkpoints)``, ``checkpoints[j]`` = the table ``W_i`` at ``i = (j + 1) segment`` (float64
    ``(ceil(E / segment) - 1, n_c, n_s)``), from which :func:`checkpointed_selection` recomputes
    one segment's back-pointers at a time. Same arithmetic in the same order, so the same
    values. Each checkpoint holds a state's finite levels and the ``-inf`` that ends them; the
    levels above are not written (:func:`_save_checkpoint`)."""
    E = v.shape[0]
    n_c = _strides(c)[0] * (c[0] + 1)
    n_seg = max(1, (E + segment - 1) // segment)
    W = _base_table(n_c, n_s)
    top = _base_tops(n_c)
    ck = np.empty((n_seg - 1, n_c, n_s))
    none = np.zeros(0, dtype=np.bool_)
    no_rows = np.zeros((0, 2), dtype=np.int64)
    for j in range(n_seg - 1, -1, -1):
        lo, hi = j * segment, min(E, (j + 1) * segment)
        _budget_items(W, top, v, b, A, c, ok, reach, lo, hi, none, no_rows, c, n_s)
        if j > 0:
            _save_checkpoint(W, top, ck[j - 1])
    return W[n_c - 1].copy(), ck


@numba.njit(cache=True)
def checkpointed_selection(s: int, v: np.ndarray, b: np.ndarray, A: np.ndarray, c: np.ndarray,
                           ok: np.ndarray, reach: np.ndarray, n_s: int, segment: int,
                           ck: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """A maximiser of budget level ``s`` (int8 ``(E,)``) from :func:`checkpointed_tables`'
    checkpoints: segment by segment from the first item, rebuild the segment's back-pointers
    from the table after it (``W_E`` or a checkpoint) and walk them forwards, as
    :func:`budgeted_selection` walks the full ones (the same maximiser). The walk from state
    ``cur`` and level ``s`` only goes down, so each segment is rebuilt on the states
    ``<= cur`` and the levels ``<= s`` only."""
    E = v.shape[0]
    st = _strides(c)
    n_c = st[0] * (c[0] + 1)
    n_seg = max(1, (E + segment - 1) // segment)
    d = _digits(c, st)
    cur = n_c - 1
    x = np.zeros(E, dtype=np.int8)
    for j in range(n_seg):
        lo, hi = j * segment, min(E, (j + 1) * segment)
        levels = s + 1
        if j == n_seg - 1:
            W, top = _base_table(n_c, levels), _base_tops(n_c)
        else:
            W, top = _load_checkpoint(ck[j], levels)
        take, rows = _pointers(n_c, ok, reach, lo, hi, levels)
        _budget_items(W, top, v, b, A, c, ok, reach, lo, hi, take, rows, d[cur].copy(),
                      levels)
        s, cur = _walk(A, b, st, take, rows, lo, hi, s, cur, x)
    return x


def budgeted_memory(n_items: int, n_states: int, n_levels: int,
                    segment: int | None = None) -> int:
    """Bytes the budgeted DP holds at its peak, for ``n_items`` allowed items, ``n_states =
    prod_k (c_k + 1)`` capacity states and ``n_levels = S + 1`` budget levels (every item
    touching every level: an upper bound).

    ``segment=None``: :func:`budgeted_tables` (one table of float64 ``(n_states, n_levels)``
    and one bool back-pointer per item, state and level). An integer: the checkpointed pair
    :func:`checkpointed_tables` / :func:`checkpointed_selection`, two tables, ``ceil(n_items /
    segment) - 1`` checkpoints and one segment's back-pointers; :func:`best_segment` minimises
    it at about ``n_states n_levels (16 + 2 sqrt(8 n_items))`` bytes. The DP writes (and so
    touches) only the levels it computes, a fraction of this; beside it, it holds 16 bytes of
    back-pointer index (:func:`_budget_items`' ``rows``) per capacity state and item (of one
    segment when checkpointed)."""
    table = 8 * n_states * n_levels
    if segment is None:
        return table + n_items * n_states * n_levels
    n_ck = max(0, -(-n_items // segment) - 1)
    return 2 * table + n_ck * table + min(segment, n_items) * n_states * n_levels


def best_segment(n_items: int) -> int:
    """The segment length that minimises :func:`budgeted_memory`: ``sqrt(8 n_items)`` (eight
    bytes per checkpointed table entry against one per back-pointer)."""
    return max(1, int(round(math.sqrt(8 * max(n_items, 1)))))


@numba.njit(cache=True)
def reachable_levels(b: np.ndarray, ok: np.ndarray, kmax: int,
                     cap: int) -> np.ndarray:  # pragma: no cover - compiled
    """``reach[i]``: the largest budget level reachable with the allowed items ``i..E-1`` when at
    most ``kmax`` of them fit together (the sum of their ``kmax`` largest budgets), capped at
    ``cap``; int64 ``(E + 1,)`` with ``reach[E] = 0``. Compiled (callable from other kernels)."""
    E = b.shape[0]
    reach = np.zeros(E + 1, dtype=np.int64)
    top = np.zeros(max(kmax, 1), dtype=np.int64)  # the kmax largest budgets, descending
    n = 0
    for i in range(E - 1, -1, -1):
        if ok[i] and kmax > 0:
            j = min(n, kmax - 1)
            if n < kmax:
                n += 1
            elif b[i] <= top[j]:
                j = -1  # not among the kmax largest
            if j >= 0:
                top[j] = b[i]
                while j > 0 and top[j - 1] < top[j]:
                    top[j - 1], top[j] = top[j], top[j - 1]
                    j -= 1
        total = 0
        for j in range(n):
            total += top[j]
        reach[i] = min(total, cap)
    return reach


@numba.njit(cache=True)
def budgeted_selection(s: int, A: np.ndarray, b: np.ndarray, c: np.ndarray, take: np.ndarray,
                       rows: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """Compiled: a maximiser of budget level ``s`` (int8 ``(E,)``), reconstructed forwards from
    the back-pointers ``(take, rows)`` of :func:`budgeted_tables`."""
    E = A.shape[1]
    st = _strides(c)
    x = np.zeros(E, dtype=np.int8)
    _walk(A, b, st, take, rows, _ZERO, E, s, st[0] * (c[0] + 1) - 1, x)
    return x


@numba.njit(cache=True)
def _walk(A: np.ndarray, b: np.ndarray, st: np.ndarray, take: np.ndarray, rows: np.ndarray,
          lo: int, hi: int, s: int, cur: int,
          x: np.ndarray) -> tuple[int, int]:  # pragma: no cover - compiled
    """Walk items ``lo..hi-1`` forwards through their back-pointers (``take``, ``rows`` of
    :func:`_budget_items`) from budget level ``s`` and capacity state ``cur``, setting ``x[i] =
    1`` for every item taken; returns the ``(s, cur)`` after them (the full DP walks every item
    at once, the checkpointed one a segment at a time)."""
    n_c = rows.shape[0] // max(hi - lo, 1)
    for i in range(lo, hi):
        r0, n = rows[(i - lo) * n_c + cur, 0], rows[(i - lo) * n_c + cur, 1]
        if s < n and take[r0 + s]:
            x[i] = 1
            s = max(s - b[i], 0)
            cur -= _offset(A, i, st)
    return s, cur


# ------------------------------------------------------------------------ public API
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
    v = np.ascontiguousarray(values, dtype=np.float64)
    A, c, ok = _check(weights, capacity, v.shape[0], allowed)
    val, x = _knapsack_kernel(v, A, c, ok)
    return float(val), x


@dataclass(frozen=True)
class BudgetedSolution:
    """Result of :func:`budgeted_knapsack`.

    Attributes:
        values: float ``(S + 1,)``: ``V*(s)`` for ``s = 0..S`` (``-inf`` if infeasible).
        max_budget: ``S``, the largest budget level solved.
    """

    values: np.ndarray
    max_budget: int
    _take: np.ndarray
    _rows: np.ndarray
    _reach: np.ndarray
    _weights: np.ndarray
    _capacity: np.ndarray
    _budgets: np.ndarray
    #: checkpointed form: segment length, item values, allowed items (else ``None``)
    _segment: int | None = None
    _values_in: np.ndarray | None = None
    _ok: np.ndarray | None = None

    def selection(self, s: int) -> np.ndarray:
        """A maximiser ``x`` (int8 ``(E,)``) of budget level ``s`` (must be feasible)."""
        if not 0 <= s <= self.max_budget or not np.isfinite(self.values[s]):
            raise ValueError(f"s={s!r} is invalid: must be a feasible budget level in "
                             f"[0, {self.max_budget}]")
        if self._segment is not None:
            assert self._values_in is not None and self._ok is not None
            return checkpointed_selection(int(s), self._values_in, self._budgets,
                                          self._weights, self._capacity, self._ok, self._reach,
                                          self.max_budget + 1, self._segment, self._take)
        return budgeted_selection(int(s), self._weights, self._budgets, self._capacity,
                                  self._take, self._rows)


def budgeted_knapsack(
    values: np.ndarray,
    budgets: np.ndarray,
    weights: np.ndarray,
    capacity: np.ndarray,
    max_budget: int,
    allowed: np.ndarray | None = None,
    max_items: int | None = None,
    segment: int | None = None,
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
        segment: ``None`` keeps every back-pointer (:func:`budgeted_memory` ``"full"``); an
            integer >= 1 keeps a checkpoint table every ``segment`` items instead and rebuilds
            a selection by recomputing one segment at a time (:func:`checkpointed_tables`):
            the same values and the same maximisers, in about a ``sqrt(8 E) / E`` share of the
            memory (:func:`best_segment`) for twice the time.
    """
    v = np.ascontiguousarray(values, dtype=np.float64)
    E = v.shape[0]
    b = np.asarray(budgets)
    if b.shape != (E,) or (b.size and (b.min() < 0 or np.any(b != np.round(b)))):
        raise ValueError(f"budgets must be non-negative integers of shape ({E},)")
    b = np.ascontiguousarray(b, dtype=np.int64)
    A, c, ok = _check(weights, capacity, E, allowed)
    S = int(max_budget)
    if S < 0:
        raise ValueError(f"max_budget={max_budget!r} is invalid: must be an integer >= 0")
    kmax = E if max_items is None else max(int(max_items), 0)
    reach = reachable_levels(b, ok, kmax, S)
    if segment is not None:
        seg = int(segment)
        if seg < 1:
            raise ValueError(f"segment={segment!r} is invalid: must be None or an integer >= 1")
        top, ck = checkpointed_tables(v, b, A, c, ok, reach, S + 1, seg)
        return BudgetedSolution(top, S, ck, np.zeros((0, 2), np.int64), reach, A, c, b, seg, v,
                                ok)
    top, take, rows = budgeted_tables(v, b, A, c, ok, reach, S + 1)
    return BudgetedSolution(top, S, take, rows, reach, A, c, b)
