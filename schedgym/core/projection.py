"""Euclidean projection onto capped simplices, batched.

OgaSched's feasible set is a product over (instance, resource) pairs of

    Y_g = { v in R^n : 0 <= v_i <= a_i,  sum_i v_i <= c }          (spec ogasched §3.4)

:func:`project_capped_simplex` computes the **exact** projection for a whole batch of groups at once
(spec §3.4.2). The solution is ``v(theta) = clip(z - theta, 0, a)`` with ``theta >= 0`` the smallest
value with ``g(theta) = sum_i clip(z_i - theta, 0, a_i) <= c``. ``g`` is continuous, piecewise
linear and non-increasing with breakpoints ``{z_i - a_i} U {z_i}``; we find the two consecutive
breakpoints whose ``g`` values straddle ``c`` and solve the linear equation between them. Small
groups (``n <= SMALL_GROUP``) evaluate ``g`` at every breakpoint (``O(n^2)``, no sort); larger
ones sort the slope events and integrate (``O(n log n)``). No Python loop over groups.

:func:`project_paper` is the paper's procedure (Alg. 1, steps 6-30) transcribed faithfully, with its
defects fixed only where they crash or leave garbage (members of B2 are set to 0; an empty B3 stops
the inner loop). It is **not** the Euclidean projection in general (it ignores the sign of the
multiplier and checks only the largest entry against its cap), and is kept as an ablation.

Padding convention: groups of different sizes are padded to a common ``n`` with ``a = 0`` (and any
finite ``z``); padded entries always come out as 0.
"""

from __future__ import annotations

import numpy as np

#: Groups of at most this many entries use the sort-free O(n^2) path (faster for small n).
SMALL_GROUP = 16


def _theta_small(zt: np.ndarray, at: np.ndarray, cc: np.ndarray, g0: np.ndarray) -> np.ndarray:
    """theta for groups with ``g(0) > c``: evaluate g at every breakpoint (no sort).

    Inputs in the (entries, groups) layout ``(n, G)``, C-contiguous. g is non-increasing, so the
    largest breakpoint ``lo`` with ``g > c`` and the smallest ``hi`` with ``g <= c`` are
    consecutive, g is linear between them, ``g(lo)`` is the smallest value above c and ``g(hi)``
    the largest value at most c.
    """
    bp = np.maximum(np.concatenate([zt - at, zt], axis=0), 0.0)  # (2n, G)
    g = np.zeros_like(bp)
    for i in range(zt.shape[0]):  # n <= SMALL_GROUP: a short loop over long vectors
        g += np.minimum(np.maximum(zt[i] - bp, 0.0), at[i])
    above = g > cc
    lo = np.where(above, bp, 0.0).max(axis=0)  # 0 when no breakpoint is above (g(0) = g0 > c)
    glo = np.minimum(np.where(above, g, np.inf).min(axis=0), g0)
    hi = np.where(above, np.inf, bp).min(axis=0)
    ghi = np.where(above, -np.inf, g).max(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = lo + (glo - cc) * (hi - lo) / (glo - ghi)
    return np.where(glo > ghi, theta, hi)


def _theta_sorted(zt: np.ndarray, at: np.ndarray, cc: np.ndarray, g0: np.ndarray) -> np.ndarray:
    """theta for groups with ``g(0) > c`` by sorting the slope events (O(n log n)); (n, G)."""
    # Slope events: -1 at max(z - a, 0) (entry leaves its cap), +1 at max(z, 0) (hits zero).
    act = (at > 0).astype(np.float64)
    pos = np.maximum(np.concatenate([zt - at, zt], axis=0), 0.0)  # (2n, G)
    w = np.concatenate([-act, act], axis=0)
    order = np.argsort(pos, axis=0, kind="stable")
    pos = np.take_along_axis(pos, order, axis=0)
    w = np.take_along_axis(w, order, axis=0)
    slope = np.cumsum(w, axis=0)  # slope of g just after each event
    # g at each event position; g is constant (= g0) on [0, pos[0]].
    seg = slope[:-1] * np.diff(pos, axis=0)
    g = np.concatenate([g0[None], g0[None] + np.cumsum(seg, axis=0)], axis=0)
    # first event j with g_j <= c; j >= 1 because g_0 = g0 > c.
    below = g <= cc + 1e-12 * np.maximum(1.0, cc)
    below[-1] = True  # g(max z) = 0 <= c; guards against rounding
    j = np.maximum(np.argmax(below, axis=0), 1)
    cols = np.arange(len(j))
    lo, glo = pos[j - 1, cols], g[j - 1, cols]
    sl = slope[j - 1, cols]  # slope on [pos[j-1], pos[j]] (< 0 there)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sl < 0, lo + (glo - cc) / -sl, pos[j, cols])


def _theta_first_segment(zt: np.ndarray, at: np.ndarray, cc: np.ndarray, g0: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
    """theta where it lies on g's first linear piece ``[0, first positive breakpoint]``.

    There ``g(theta) = g0 - m theta`` with ``m`` the number of entries strictly between 0 and
    their cap at ``theta = 0+``, so ``theta = (g0 - c) / m`` exactly. This is the common case of a
    point that exceeds the capacity by little (e.g. a feasible allocation after float32 rounding).
    Returns ``(theta, ok)``; ``ok`` is False where theta lies further right.
    """
    d = zt - at
    above_cap = d > 0
    positive = zt > 0
    m = (positive & ~above_cap & (at > 0)).sum(axis=0)
    first = np.minimum(np.where(above_cap, d, np.inf), np.where(positive, zt, np.inf)).min(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = (g0 - cc) / m
    return theta, (m > 0) & (theta <= first)


def project_columns(zt: np.ndarray, at: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Exact projection in the (entries, groups) layout: column ``g`` of ``zt`` ``(n, G)`` onto
    ``{0 <= v <= at[:, g], sum v <= c[g]}``. The fast path for callers that keep this layout."""
    v = np.minimum(np.maximum(zt, 0.0), at)
    s0 = v.sum(axis=0)
    need = np.flatnonzero(s0 > c)
    if need.size:
        zz = np.take(zt, need, axis=1)  # C-contiguous, unlike zt[:, need]
        aa = np.take(at, need, axis=1)
        cc = c[need]
        g0 = s0[need]
        theta, ok = _theta_first_segment(zz, aa, cc, g0)
        hard = np.flatnonzero(~ok)
        if hard.size:
            solver = _theta_small if zt.shape[0] <= SMALL_GROUP else _theta_sorted
            theta[hard] = solver(np.take(zz, hard, axis=1), np.take(aa, hard, axis=1), cc[hard],
                                 g0[hard])
        vv = np.minimum(np.maximum(zz - theta, 0.0), aa)
        tot = vv.sum(axis=0)
        over = tot > cc
        if over.any():  # remove rounding excess so that sum <= c holds exactly
            vv *= np.where(over, cc / np.where(tot > 0, tot, 1.0) * (1.0 - 4e-16), 1.0)
        v[:, need] = vv
    return v


def project_capped_simplex(z: np.ndarray, a: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Exact Euclidean projection of each row of ``z`` onto ``{0 <= v <= a, sum v <= c}``.

    Args:
        z: points, shape ``(G, n)`` (any leading batch shape ``(..., n)`` works).
        a: per-entry caps ``>= 0``, same shape as ``z``.
        c: per-group capacities ``>= 0``, shape ``(G,)`` (``z.shape[:-1]``).

    Returns:
        ``v`` of the same shape as ``z``, with ``0 <= v <= a`` exactly and ``v.sum(-1) <= c`` up
        to the rounding of the sum itself (a final rescaling removes the solve's rounding
        excess; summing the entries in another order can still differ from ``c`` by an ulp).
    """
    z = np.asarray(z, dtype=np.float64)
    n = z.shape[-1]
    zt = np.ascontiguousarray(z.reshape(-1, n).T)
    at = np.ascontiguousarray(np.asarray(a, dtype=np.float64).reshape(-1, n).T)
    c = np.asarray(c, dtype=np.float64)
    c2 = (c if c.shape == z.shape[:-1] else np.broadcast_to(c, z.shape[:-1])).reshape(-1)
    return project_columns(zt, at, c2).T.reshape(z.shape)


def project_paper(z: np.ndarray, a: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, int]:
    """The paper's projection procedure (Alg. 1 steps 6-30), for the ablation
    ``projection="paper"``.

    Same arguments as :func:`project_capped_simplex`; entries with ``a == 0`` in a row are treated
    as padding (not members of ``L_r``). Returns ``(v, inner_loop_repeats)``, the total number of
    inner-loop executions (the paper reports this count is much smaller than ``|L|``).

    The output may violate the caps or move mass upward when capacity is slack (paper defects 1 and
    2 of spec §3.4.1); callers that need feasibility must check it.
    """
    z = np.asarray(z, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    batch_shape = z.shape[:-1]
    n = z.shape[-1]
    z2 = z.reshape(-1, n)
    a2 = a.reshape(-1, n)
    c2 = np.broadcast_to(np.asarray(c, dtype=np.float64), batch_shape).reshape(-1)
    out = np.zeros_like(z2)
    repeats = 0
    for gi in range(z2.shape[0]):
        members = np.flatnonzero(a2[gi] > 0)
        if members.size == 0:
            continue
        zg, ag, cg = z2[gi, members], a2[gi, members], c2[gi]
        order = np.argsort(-zg, kind="stable")
        first = order[0]
        yhat = np.zeros_like(zg)
        initialized = False
        while True:
            if not initialized:
                b1: set[int] = set()
                b3 = set(range(len(zg)))
                yhat[:] = 0.0
                initialized = True
            elif yhat[first] > ag[first] and first not in b1:
                b1 = {first}
                b3 = set(range(len(zg))) - b1
            else:
                break
            b2: set[int] = set()
            while True:  # inner "repeat" loop
                repeats += 1
                if not b3:  # empty-B3 guard (defect 4): nothing free, write the caps
                    for li in b1:
                        yhat[li] = ag[li]
                    break
                half_rho = (zg[list(b3)].sum() - cg + ag[list(b1)].sum()) / len(b3)
                s: list[int] = []
                for pos, li in enumerate(order):
                    if li in b1:
                        yhat[li] = ag[li]
                    elif li in b3:
                        yhat[li] = zg[li] - half_rho
                        if yhat[li] < 0:
                            s = [int(x) for x in order[pos:] if x in b3]
                            break
                b2 |= set(s)
                b3 -= set(s)
                for li in b2:  # defect 3: members of B2 are set to 0
                    yhat[li] = 0.0
                if not s:
                    break
        out[gi, members] = yhat
    return out.reshape(z.shape), repeats
