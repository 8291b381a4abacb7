"""Euclidean projection onto capped simplices, batched, compiled with numba.

OgaSched's feasible set is a product over (instance, resource) pairs of

    Y_g = { v in R^n : 0 <= v_i <= a_i,  sum_i v_i <= c }          (spec ogasched §3.4)

:func:`project_capped_simplex` computes the **exact** projection for a whole batch of groups at once
(spec §3.4.2). The solution is ``v(theta) = clip(z - theta, 0, a)`` with ``theta >= 0`` the smallest
value with ``g(theta) = sum_i clip(z_i - theta, 0, a_i) <= c``. ``g`` is continuous, piecewise
linear and non-increasing with breakpoints ``{z_i - a_i} U {z_i}``; we find the two consecutive
breakpoints whose ``g`` values straddle ``c`` and solve the linear equation between them. A point
that exceeds its capacity only slightly (the common case after float32 action rounding) is solved
on g's first linear piece in closed form; small groups (``n <= SMALL_GROUP``) evaluate ``g`` at
every breakpoint (``O(n^2)``, no sort); larger ones sort the slope events and integrate
(``O(n log n)``). One compiled kernel per group (:func:`project_group`; :func:`project_over`
when the caller already knows the group is over capacity) serves every caller: the batched
wrappers here, the env step and OgaSched's update (:mod:`schedgym.envs.gain_overhead.dynamics`).

:func:`project_paper` is the paper's procedure (Alg. 1, steps 6-30) transcribed faithfully, with its
defects fixed only where they crash or leave garbage (members of B2 are set to 0; an empty B3 stops
the inner loop). It is **not** the Euclidean projection in general (it ignores the sign of the
multiplier and checks only the largest entry against its cap), and is kept as an ablation (plain
Python: it is not a hot path).

Padding convention: groups of different sizes are padded to a common ``n`` with ``a = 0`` (and any
finite ``z``); padded entries always come out as 0.
"""

from __future__ import annotations

import math

import numba
import numpy as np

#: Groups of at most this many entries use the sort-free O(n^2) path (faster for small n).
SMALL_GROUP = 16
#: Relative safety margin of the final rescaling that removes the solve's rounding excess.
_SHRINK = 1.0 - 4e-16


@numba.njit(cache=True, inline="always")
def _g(z: np.ndarray, a: np.ndarray, n: int, theta: float) -> float:
    """``g(theta) = sum_i clip(z_i - theta, 0, a_i)`` over the first ``n`` entries."""
    s = 0.0
    for i in range(n):
        s += min(max(z[i] - theta, 0.0), a[i])
    return s


@numba.njit(cache=True, inline="always")
def _theta_first_segment(z: np.ndarray, a: np.ndarray, n: int, c: float, g0: float) -> float:
    """theta where it lies on g's first linear piece ``[0, first positive breakpoint]``, else -1.

    There ``g(theta) = g0 - m theta`` with ``m`` the number of entries strictly between 0 and
    their cap at ``theta = 0+``, so ``theta = (g0 - c) / m`` exactly.
    """
    m = 0
    first = math.inf
    for i in range(n):
        d = z[i] - a[i]
        if d > 0.0:
            first = min(first, d)
        if z[i] > 0.0:
            first = min(first, z[i])
            if d <= 0.0 and a[i] > 0.0:
                m += 1
    if m == 0:
        return -1.0
    theta = (g0 - c) / m
    return theta if theta <= first else -1.0


@numba.njit(cache=True)
def _theta_small(z: np.ndarray, a: np.ndarray, n: int, c: float, g0: float) -> float:
    """theta for a group with ``g(0) > c`` by evaluating g at every breakpoint (no sort).

    g is non-increasing, so the largest breakpoint ``lo`` with ``g > c`` and the smallest ``hi``
    with ``g <= c`` are consecutive and g is linear between them. A breakpoint outside the current
    ``(lo, hi)`` cannot move either, so g is evaluated only inside it.
    """
    lo, glo = 0.0, g0  # g(0) = g0 > c
    hi, ghi = math.inf, -math.inf
    for j in range(2 * n):
        bp = max(z[j] - a[j] if j < n else z[j - n], 0.0)
        if bp <= lo or bp >= hi:
            continue
        g = _g(z, a, n, bp)
        if g > c:
            lo = max(lo, bp)
            glo = min(glo, g)
        else:
            hi = min(hi, bp)
            ghi = max(ghi, g)
    if glo > ghi:
        return lo + (glo - c) * (hi - lo) / (glo - ghi)
    return hi


@numba.njit(cache=True)
def _theta_sorted(z: np.ndarray, a: np.ndarray, n: int, c: float, g0: float) -> float:
    """theta for a group with ``g(0) > c`` by sorting the slope events (O(n log n)).

    Slope events: -1 at ``max(z - a, 0)`` (entry leaves its cap), +1 at ``max(z, 0)`` (hits 0).
    """
    pos = np.empty(2 * n)
    w = np.empty(2 * n)
    for i in range(n):
        act = 1.0 if a[i] > 0.0 else 0.0
        pos[i], w[i] = max(z[i] - a[i], 0.0), -act
        pos[n + i], w[n + i] = max(z[i], 0.0), act
    order = np.argsort(pos, kind="mergesort")
    g, slope, prev = g0, 0.0, pos[order[0]]
    tol = c + 1e-12 * max(1.0, c)
    for j in range(2 * n):
        p = pos[order[j]]
        g_here = g + slope * (p - prev)
        if j > 0 and (g_here <= tol or j == 2 * n - 1):  # g crosses c on [prev, p]
            return prev + (g - c) / -slope if slope < 0.0 else p
        g, prev = g_here, p
        slope += w[order[j]]
    return prev  # not reached: the last event always stops the walk (g(max z) = 0 <= c)


@numba.njit(cache=True, inline="always")
def project_over(z: np.ndarray, a: np.ndarray, n: int, c: float, s0: float, v: np.ndarray
                 ) -> None:
    """:func:`project_group` for a group known to exceed its capacity: ``s0 = sum_i clip(z_i, 0,
    a_i) > c``, summed in entry order (callers that already have it skip that pass)."""
    theta = _theta_first_segment(z, a, n, c, s0)
    if theta < 0.0:
        theta = (_theta_small(z, a, n, c, s0) if n <= SMALL_GROUP
                 else _theta_sorted(z, a, n, c, s0))
    tot = 0.0
    for i in range(n):
        v[i] = min(max(z[i] - theta, 0.0), a[i])
        tot += v[i]
    if tot > c:  # remove rounding excess so that sum <= c holds exactly
        f = c / tot * _SHRINK if tot > 0.0 else 1.0
        for i in range(n):
            v[i] *= f


@numba.njit(cache=True, inline="always")
def project_group(z: np.ndarray, a: np.ndarray, n: int, c: float, v: np.ndarray) -> None:
    """Exact projection of ``z[:n]`` onto ``{0 <= v <= a[:n], sum v <= c}``, written to ``v[:n]``.

    The one implementation of the exact projection; every wrapper calls it per group. Units are
    the caller's (resource units in GainOverhead). ``v`` may alias neither ``z`` nor ``a``.
    """
    s0 = 0.0
    for i in range(n):
        v[i] = min(max(z[i], 0.0), a[i])
        s0 += v[i]
    if s0 > c:
        project_over(z, a, n, c, s0, v)


@numba.njit(cache=True)
def _project_columns(zt: np.ndarray, at: np.ndarray, c: np.ndarray) -> np.ndarray:
    n, n_groups = zt.shape
    out = np.empty((n, n_groups))
    z, a, v = np.empty(n), np.empty(n), np.empty(n)
    for g in range(n_groups):
        for i in range(n):
            z[i], a[i] = zt[i, g], at[i, g]
        project_group(z, a, n, c[g], v)
        for i in range(n):
            out[i, g] = v[i]
    return out


def project_columns(zt: np.ndarray, at: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Exact projection in the (entries, groups) layout: column ``g`` of ``zt`` ``(n, G)`` onto
    ``{0 <= v <= at[:, g], sum v <= c[g]}``; returns ``v`` ``(n, G)`` float64."""
    return _project_columns(np.asarray(zt, dtype=np.float64), np.asarray(at, dtype=np.float64),
                            np.asarray(c, dtype=np.float64).reshape(-1))


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
