"""Water-filling: the one implementation shared by the environments and the agents.

Given per-entry intervals ``[start_r, end_r]`` of a common *level* ``L`` and weights ``w_r >= 0``,
the amount of entry ``r`` at level ``L`` is ``w_r * clip(L - start_r, 0, end_r - start_r)``; their
sum is a non-decreasing piecewise-linear function of ``L`` whose breakpoints are the starts and
ends. :func:`waterfill_level` finds the level at which the amounts sum to ``total`` exactly (a
sweep over the sorted breakpoints, then linear interpolation inside the piece holding
``total``). Used by EQUAL-SHARE and JSQ (DeadlineWelfare baselines: units raised to a common
share or load) and by OnSocMax's multiplier model (a piecewise-linear model of every unit's
``x_r(μ)`` solved in ``-μ``).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def waterfill_kernel(start: np.ndarray, end: np.ndarray, weight: np.ndarray,
                     total: float) -> tuple[np.ndarray, float]:
    """``(x, L)``: amounts ``x_r = weight_r * clip(L - start_r, 0, end_r - start_r)`` summing to
    ``total`` and their level ``L``; ``(room, nan)`` when the full room ``weight * (end -
    start)`` sums to at most ``total`` and ``(zeros, nan)`` when ``total <= 0``. Arrays float64
    ``(m,)``, ``end >= start``, ``weight >= 0``. A final rescale guards ``sum(x) <= total``
    against rounding."""
    m = start.size
    room = np.empty(m)
    rsum = 0.0
    for r in range(m):
        room[r] = weight[r] * (end[r] - start[r])
        rsum += room[r]
    if rsum <= total:
        return room, np.nan
    if total <= 0.0:
        return np.zeros(m), np.nan
    # events: breakpoints sorted; the slope of the sum rises by w at a start, falls at an end
    pts = np.empty(2 * m)
    dslope = np.empty(2 * m)
    for r in range(m):
        pts[r] = start[r]
        dslope[r] = weight[r]
        pts[m + r] = end[r]
        dslope[m + r] = -weight[r]
    order = np.argsort(pts, kind="mergesort")
    g = 0.0  # sum at the current breakpoint
    slope = 0.0  # slope just right of the current breakpoint
    prev = pts[order[0]]
    level = pts[order[-1]]
    for i in range(2 * m):
        k = order[i]
        p = pts[k]
        g_next = g + slope * (p - prev)
        if g_next >= total and p > prev:
            level = prev + (total - g) / slope if slope > 0.0 else p
            break
        g = g_next
        prev = p
        slope += dslope[k]
    x = np.empty(m)
    s = 0.0
    for r in range(m):
        x[r] = weight[r] * min(max(level - start[r], 0.0), end[r] - start[r])
        s += x[r]
    if s > total:
        for r in range(m):
            x[r] *= total / s
    return x, level


def waterfill(start: np.ndarray, end: np.ndarray, weight: np.ndarray, total: float) -> np.ndarray:
    """Amounts ``weight_r * clip(L - start_r, 0, end_r - start_r)`` with the level ``L`` chosen
    so they sum to ``total`` (all of ``weight * (end - start)`` if that is smaller; zeros if
    ``total <= 0``). Arrays ``(m,)``; ``end`` below ``start`` is lifted to ``start``."""
    s = np.ascontiguousarray(start, dtype=np.float64)
    e = np.maximum(np.asarray(end, dtype=np.float64), s)
    w = np.ascontiguousarray(weight, dtype=np.float64)
    return waterfill_kernel(s, e, w, float(total))[0]


def waterfill_level(start: np.ndarray, end: np.ndarray, weight: np.ndarray,
                    total: float) -> float | None:
    """The level ``L`` of :func:`waterfill` (``None`` when the room cannot hold ``total`` or
    ``total <= 0``)."""
    s = np.ascontiguousarray(start, dtype=np.float64)
    e = np.maximum(np.asarray(end, dtype=np.float64), s)
    level = waterfill_kernel(s, e, np.ascontiguousarray(weight, dtype=np.float64),
                             float(total))[1]
    return None if np.isnan(level) else float(level)


__all__ = ["waterfill", "waterfill_kernel", "waterfill_level"]
