"""Compiled helpers of the env's and the native vector env's own work around the kernels of
:mod:`.dynamics`: the vector env's action checks, clipping and ``"allocation"`` decode (with
its finite check) of all copies in one call (:mod:`.vector`), and the vector env's float32
utilization observation (:func:`to_float32`; the single env's, with the info's utilization sum,
is :func:`.dynamics.float32_and_sum`, which its step kernel calls).

Each row is treated with the single env's own formula (:func:`.dynamics.clip_decode_unit`, the
map its fused step applies), so a copy of the vector env and a single env give the same bits. The
actions may be float32 (what SB3 policies and the classical agents emit) or float64: a float32
entry widens to float64 exactly before anything else, as the single env's ``as_action`` does.
"""

from __future__ import annotations

import numba
import numpy as np

from schedgym.envs.gain_overhead.dynamics import clip_decode_unit


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
                     clip: np.ndarray) -> int:
    """``"allocation"``-mode decode of the rows ``rows`` of ``a`` ``(N, n)``: row ``j`` of
    ``z`` ``(len(rows), n)`` gets ``(clip(a[rows[j]], -1, 1) + 1) / 2 * upper`` and ``clip[j]``
    the clip amount ``max |clip(a) - a|`` (:func:`.dynamics.clip_decode_unit`, the single env's
    map, per row). Returns -1, or the position ``j`` of the first row with a NaN/inf entry
    (the finite check of the same pass; the outputs of that row are garbage)."""
    bad = -1
    for j in range(rows.size):
        clip[j] = clip_decode_unit(a[rows[j]], upper, z[j])
        if bad < 0 and np.isnan(clip[j]):
            bad = j
    return bad


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
def to_float32(src: np.ndarray, out: np.ndarray) -> None:
    """``out[:] = src`` for C-contiguous arrays of one size, ``src`` float64 and ``out``
    float32: ``src.astype(np.float32)``'s values in a loop that vectorises (numpy's cast loop
    took ~2.6 instructions per entry), the vector env's utilization observation."""
    s, o = src.reshape(src.size), out.reshape(out.size)
    for i in range(s.size):
        o[i] = s[i]
