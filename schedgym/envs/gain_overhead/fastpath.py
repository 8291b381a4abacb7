"""Compiled helpers of the env's and the native vector env's own work around the kernels of
:mod:`.dynamics`: the vector env's action checks, clipping and ``"allocation"`` decode of all
copies in one call (:mod:`.vector`), and the single env's float32 utilization observation with
the info's utilization sum in one call (:func:`float32_and_sum`).

Each row is treated with the single env's own formula (:func:`.dynamics.clip_decode_unit`, the
map its fused step applies), so a copy of the vector env and a single env give the same bits. The
actions may be float32 (what SB3 policies and the classical agents emit) or float64: a float32
entry widens to float64 exactly before anything else, as the single env's ``as_action`` does.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from schedgym.core.pairwise import np_sum
from schedgym.envs.gain_overhead.dynamics import clip_decode_unit

#: A start index that numba types as int64, not as the literal 0 (a literal argument compiles
#: a second specialisation of ``np_sum``).
_ZERO: Any = np.int64(0)


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
def clip_decode_rows(a: np.ndarray, rows: np.ndarray, upper: np.ndarray, z: np.ndarray,
                     clip: np.ndarray) -> None:
    """``"allocation"``-mode decode of the rows ``rows`` of ``a`` ``(N, n)`` (finite): row ``j``
    of ``z`` ``(len(rows), n)`` gets ``(clip(a[rows[j]], -1, 1) + 1) / 2 * upper`` and
    ``clip[j]`` the clip amount ``max |clip(a) - a|`` (:func:`.dynamics.clip_decode_unit`, the
    single env's map, per row)."""
    for j in range(rows.size):
        clip[j] = clip_decode_unit(a[rows[j]], upper, z[j])


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


@numba.njit(cache=True)
def float32_and_sum(src: np.ndarray, out: np.ndarray) -> float:
    """``out[:] = src.ravel().astype(np.float32)`` (``src`` C-contiguous float64, ``out`` flat
    float32 of ``src.size``) and return ``float(np.add.reduce(src.ravel()))`` with numpy's bits:
    the step's utilization observation and the numerator of ``info["utilization"]`` in one call.

    The sum is :func:`~schedgym.core.pairwise.np_sum` (numpy's pairwise order)
    added to 0.0, numpy's starting value of the reduction (which turns a ``-0.0`` total into
    ``0.0``, as ``np.add.reduce`` gives)."""
    flat = src.reshape(src.size)
    for i in range(flat.size):
        out[i] = flat[i]
    return 0.0 + np_sum(flat, _ZERO, flat.size)
