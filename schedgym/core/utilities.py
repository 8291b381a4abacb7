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
integer codes (:data:`FAMILY_CODES`) so that mixed assignments evaluate without Python loops.
"""

from __future__ import annotations

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


def _apply(codes: np.ndarray | int, alpha: np.ndarray, y: np.ndarray, fns) -> np.ndarray:
    if np.ndim(codes) == 0:  # one family everywhere (the common case): no masking
        return fns[int(codes)](*np.broadcast_arrays(np.asarray(alpha, dtype=np.float64), y))
    codes, alpha, y = np.broadcast_arrays(codes, alpha, y)
    first = codes.flat[0] if codes.size else LINEAR
    if codes.size and np.all(codes == first):  # fast path: one family everywhere
        return fns[first](alpha, y)
    out = np.zeros(y.shape, dtype=np.float64)
    for code, fn in enumerate(fns):
        m = codes == code
        if m.any():
            out[m] = fn(alpha[m], y[m])
    return out


def value(
    codes: np.ndarray, alpha: np.ndarray, y: np.ndarray, reciprocal_scale: float = 1.0
) -> np.ndarray:
    """Utility ``f(y)`` elementwise (broadcasting ``codes``, ``alpha`` and ``y``; ``codes`` may be
    a single int for one family everywhere)."""
    s = reciprocal_scale
    fns = (
        lambda a, v: a * v,
        lambda a, v: a * np.log1p(v),
        lambda a, v: 1.0 / (s * a) - 1.0 / (v + s * a),
        lambda a, v: a * (np.sqrt(v + 1.0) - 1.0),
    )
    return _apply(codes, alpha, np.asarray(y, dtype=np.float64), fns)


def derivative(
    codes: np.ndarray, alpha: np.ndarray, y: np.ndarray, reciprocal_scale: float = 1.0
) -> np.ndarray:
    """Derivative ``f'(y)`` elementwise."""
    s = reciprocal_scale
    fns = (
        lambda a, v: a + 0.0 * v,
        lambda a, v: a / (1.0 + v),
        lambda a, v: 1.0 / (v + s * a) ** 2,
        lambda a, v: a / (2.0 * np.sqrt(v + 1.0)),
    )
    return _apply(codes, alpha, np.asarray(y, dtype=np.float64), fns)


def slope_at_zero(
    codes: np.ndarray, alpha: np.ndarray, reciprocal_scale: float = 1.0
) -> np.ndarray:
    """``varpi = f'(0)``, the bound on the derivative used by the regret theorem."""
    return derivative(codes, alpha, np.zeros(np.shape(alpha)), reciprocal_scale)
