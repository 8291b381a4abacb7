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


def _check_rows(a: np.ndarray, rows: np.ndarray) -> None:
    """``a`` a 2-D float32/float64 array and ``rows`` integer indices of its rows, or a
    ``ValueError`` naming the argument (the kernels index without bounds checks)."""
    if not (isinstance(a, np.ndarray) and a.ndim == 2 and a.dtype in (np.float32, np.float64)):
        got = (a.shape, a.dtype) if isinstance(a, np.ndarray) else type(a).__name__
        raise ValueError(f"a is {got}: must be a 2-D float32 or float64 array")
    if not (isinstance(rows, np.ndarray) and rows.ndim == 1 and rows.dtype.kind in "iu"):
        raise ValueError("rows must be a 1-D integer array")
    if rows.size and (rows.min() < 0 or rows.max() >= a.shape[0]):
        raise ValueError(f"rows has entries in [{rows.min()}, {rows.max()}]: must lie in "
                         f"[0, {a.shape[0]}) (the rows of a)")


def first_nonfinite(a: np.ndarray, rows: np.ndarray) -> int:
    """Flat index ``i * n + k`` of the first (row-major) NaN/inf entry of ``a`` ``(N, n)`` in
    the rows ``rows`` (increasing), or -1 when there is none."""
    _check_rows(a, rows)
    return int(_first_nonfinite(a, rows.astype(np.int64, copy=False)))


def clip_rows(a: np.ndarray, rows: np.ndarray, out: np.ndarray, clip: np.ndarray) -> None:
    """Rows ``rows`` of ``a`` ``(N, n)`` (finite) clipped to ``[-1, 1]`` into ``out``
    ``(len(rows), n)`` (float64), with ``clip[j] = max |clip(a) - a|`` of each (0 inside the
    box): the values of :func:`schedgym.core.envbase.clip_unit`, for the learnable modes, which
    decode afterwards. ``out`` and ``clip`` (float64 ``(len(rows),)``) are written in place."""
    _check_rows(a, rows)
    shape = (rows.size, a.shape[1])
    for name, arr, want in (("out", out, shape), ("clip", clip, shape[:1])):
        if not (isinstance(arr, np.ndarray) and arr.dtype == np.float64 and arr.shape == want
                and arr.flags.writeable):
            got = arr.shape if isinstance(arr, np.ndarray) else type(arr).__name__
            raise ValueError(f"{name} has shape {got}: must be a writable float64 array of "
                             f"shape {want}")
    _clip_rows(a, rows.astype(np.int64, copy=False), out, clip)


@numba.njit(cache=True)
def _first_nonfinite(a: np.ndarray, rows: np.ndarray) -> int:
    """:func:`first_nonfinite` on checked arguments."""
    n = a.shape[1]
    for i in rows:
        for k in range(n):
            if not np.isfinite(a[i, k]):
                return i * n + k
    return -1


@numba.njit(cache=True)
def _clip_rows(a: np.ndarray, rows: np.ndarray, out: np.ndarray, clip: np.ndarray) -> None:
    """:func:`clip_rows` on checked arguments."""
    for j in range(rows.size):
        moved = 0.0
        for k in range(a.shape[1]):
            v = min(max(a[rows[j], k], -1.0), 1.0)
            moved = max(moved, abs(v - a[rows[j], k]))
            out[j, k] = v
        clip[j] = moved
