"""Compiled helpers of the native vector env's own work around the step kernel of
:mod:`.dynamics` (:mod:`.vector`): the first non-finite entry of the acting copies' actions
(for the error message), and the clipping of all copies' actions in the learnable action modes,
which decode afterwards (the ``"allocation"`` mode's clip and decode run inside
:func:`.dynamics.step_batch`).

The actions may be float32 (what SB3 policies and the classical agents emit) or float64: a
float32 entry widens to float64 exactly before anything else, as the single env's ``as_action``
does.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def first_nonfinite(a: np.ndarray, rows: np.ndarray) -> int:
    """Flat index ``i * n + k`` of the first (row-major) NaN/inf entry of ``a`` ``(N, n)`` in
    the rows ``rows`` (increasing), or -1 when there is none."""
    n = a.shape[1]
    for i in rows:
        for k in range(n):
            if not np.isfinite(a[i, k]):
                return i * n + k
    return -1


@numba.njit(cache=True)
def clip_rows(a: np.ndarray, rows: np.ndarray, out: np.ndarray, clip: np.ndarray) -> None:
    """Rows ``rows`` of ``a`` ``(N, n)`` (finite) clipped to ``[-1, 1]`` into ``out``
    ``(len(rows), n)`` (float64), with ``clip[j] = max |clip(a) - a|`` of each (0 inside the
    box): the values of :func:`schedgym.core.envbase.clip_unit`, for the learnable modes, which
    decode afterwards."""
    for j in range(rows.size):
        moved = 0.0
        for k in range(a.shape[1]):
            v = min(max(a[rows[j], k], -1.0), 1.0)
            moved = max(moved, abs(v - a[rows[j], k]))
            out[j, k] = v
        clip[j] = moved

