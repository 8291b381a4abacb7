"""The four concave utility families of OgaSched (spec ogasched §2.2), vectorised.

All families are zero at ``y = 0``, non-decreasing and concave on ``y >= 0``; ``alpha > 0``.

=========== ================================ ============================ =================
family      f(y)                             f'(y)                        varpi = f'(0)
=========== ================================ ============================ =================
linear      alpha * y                        alpha                        alpha
log         alpha * ln(1 + y)                alpha / (1 + y)              alpha
reciprocal  1/(s alpha) - 1/(y + s alpha)    1 / (y + s alpha)^2          1 / (s alpha)^2
poly        alpha * sqrt(y + 1) - alpha      alpha / (2 sqrt(y + 1))      alpha / 2
=========== ================================ ============================ =================

``s`` is the reciprocal scale (paper: 1; the authors' code: 3). Families are stored as small
integer codes (:data:`FAMILY_CODES`); :func:`value_one` and :func:`derivative_one` are the compiled
scalar kernels that the env's, the agents' and the solvers' compiled loops call.
"""

from __future__ import annotations

import math

import numba
import numpy as np

FAMILIES: tuple[str, ...] = ("linear", "log", "reciprocal", "poly")
FAMILY_CODES: dict[str, int] = {name: i for i, name in enumerate(FAMILIES)}
LINEAR, LOG, RECIPROCAL, POLY = range(4)


def family_codes(names: np.ndarray) -> np.ndarray:
    """Map an array of family names to integer codes; raises on an unknown name."""
    names = np.asarray(names)
    out = np.empty(names.shape, dtype=np.int8)
    for idx, name in np.ndenumerate(names):
        if name not in FAMILY_CODES:
            raise ValueError(
                f"utility={str(name)!r} is invalid: must be one of "
                + ", ".join(map(repr, FAMILIES))
            )
        out[idx] = FAMILY_CODES[name]
    return out


@numba.njit(cache=True)
def value_one(code: int, alpha: float, y: float, s: float) -> float:
    """``f(y)`` of family ``code`` with parameter ``alpha`` and reciprocal scale ``s`` (table
    above); 0 for an unknown code. The one implementation of the four utilities."""
    if code == LINEAR:
        return alpha * y
    if code == LOG:
        return alpha * math.log1p(y)
    if code == RECIPROCAL:
        return 1.0 / (s * alpha) - 1.0 / (y + s * alpha)
    if code == POLY:
        return alpha * (math.sqrt(y + 1.0) - 1.0)
    return 0.0


@numba.njit(cache=True)
def derivative_one(code: int, alpha: float, y: float, s: float) -> float:
    """``f'(y)`` of family ``code`` (table above); 0 for an unknown code."""
    if code == LINEAR:
        return alpha
    if code == LOG:
        return alpha / (1.0 + y)
    if code == RECIPROCAL:
        return 1.0 / (y + s * alpha) ** 2
    if code == POLY:
        return alpha / (2.0 * math.sqrt(y + 1.0))
    return 0.0


@numba.njit(cache=True)
def map_flat(derivative: bool, codes: np.ndarray, alpha: np.ndarray, y: np.ndarray, s: float
             ) -> np.ndarray:
    """``f'(y)`` (``derivative``) or ``f(y)`` of every entry of the flat arrays ``codes``,
    ``alpha``, ``y`` (one length): :func:`map_flat_into` into a new float64 array ``(n,)``."""
    out = np.empty(y.size)
    map_flat_into(derivative, codes, alpha, y, s, out)
    return out


@numba.njit(cache=True, inline="always")
def map_flat_into(derivative: bool, codes: np.ndarray, alpha: np.ndarray, y: np.ndarray,
                  s: float, out: np.ndarray) -> None:
    """``out[i] = f'(y[i])`` (``derivative``) or ``f(y[i])`` of every entry of the flat arrays
    ``codes``, ``alpha``, ``y``, ``out`` (one length) by :func:`derivative_one` /
    :func:`value_one`. When every entry is linear the loop is ``alpha`` / ``alpha * y`` without
    the per-entry family dispatch, so that it vectorises (the same values)."""
    linear = True
    for i in range(codes.size):
        linear &= codes[i] == LINEAR
    if linear:
        for i in range(y.size):
            out[i] = alpha[i] if derivative else alpha[i] * y[i]
        return
    for i in range(y.size):
        if derivative:
            out[i] = derivative_one(codes[i], alpha[i], y[i], s)
        else:
            out[i] = value_one(codes[i], alpha[i], y[i], s)


def _apply(derivative: bool, codes: np.ndarray | int, alpha: np.ndarray, y: np.ndarray,
           s: float) -> np.ndarray:
    c, a, v = np.broadcast_arrays(np.asarray(codes, dtype=np.int8),
                                  np.asarray(alpha, dtype=np.float64),
                                  np.asarray(y, dtype=np.float64))
    # copies: broadcast views are read-only, and numba compiles a second kernel for those
    out = map_flat(derivative, c.ravel().copy(), a.ravel().copy(), v.ravel().copy(), float(s))
    return out.reshape(v.shape)


def value(codes: np.ndarray | int, alpha: np.ndarray, y: np.ndarray,
          reciprocal_scale: float = 1.0) -> np.ndarray:
    """Utility ``f(y)`` elementwise (broadcasting ``codes``, ``alpha`` and ``y``; ``codes`` may be
    a single int for one family everywhere); float64 of the broadcast shape."""
    return _apply(False, codes, alpha, y, reciprocal_scale)


def derivative(codes: np.ndarray | int, alpha: np.ndarray, y: np.ndarray,
               reciprocal_scale: float = 1.0) -> np.ndarray:
    """Derivative ``f'(y)`` elementwise (same broadcasting as :func:`value`)."""
    return _apply(True, codes, alpha, y, reciprocal_scale)


def slope_at_zero(
    codes: np.ndarray, alpha: np.ndarray, reciprocal_scale: float = 1.0
) -> np.ndarray:
    """``varpi = f'(0)``, the bound on the derivative used by the regret theorem (the table
    above at ``y = 0``; in numpy: an instance's setup needs no compiled kernel)."""
    c = np.asarray(codes)
    a = np.asarray(alpha, dtype=np.float64)
    s = float(reciprocal_scale)
    with np.errstate(divide="ignore", over="ignore"):
        recip = 1.0 / (s * a) ** 2
    out = np.select([c == LINEAR, c == LOG, c == RECIPROCAL, c == POLY],
                    [a, a, recip, a / 2.0], 0.0)
    return np.asarray(out, dtype=np.float64)
