"""OnSocMax's pricing function (paper Theorem 2 with its typos fixed;
docs/spec/onsocmax.md §3.2).

Notation: ``iota`` (ι) and ``v`` are the lower and upper bounds of the marginal social welfare
(paper Theorem 2, docs/spec/onsocmax.md §1.8); ``alpha`` (α̂ >= 2) is the competitive ratio,
the root of

    (α̂ - 1) = 1/(α̂ - 1) + ln((α̂ v/ι - 1) / (α̂ - 1))                      (40, corrected)

For a unit of capacity ``C`` the marginal price at usage ``u`` (workload units) is

    φ(u) = max(ι, ι/α̂ + κ exp(α̂ u / C))        0 <= u <= C          (+inf above C)
    κ    = ι (1 - 1/α̂) exp(-α̂/(α̂ - 1)),   threshold w = C/(α̂ - 1),   φ(w) = ι,  φ(C) = v

and ``Ψ(u) = ∫_0^u φ`` has the closed form of docs/spec/onsocmax.md §3.2. Everything is
vectorised over units.
The environment uses :func:`alpha_hat` to report the ratio; the OnSocMax agent uses all of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np


@numba.njit(cache=True)
def _h(alpha: float, ratio: float) -> float:
    return (alpha - 1.0) - 1.0 / (alpha - 1.0) - math.log((alpha * ratio - 1.0) / (alpha - 1.0))


@numba.njit(cache=True)
def _alpha_kernel(ratio: float) -> float:
    """The bisection of :func:`alpha_hat` for ``ratio > 1`` (compiled; the steps of the plain
    bisection, so the same value)."""
    lo, hi = 2.0, 3.0
    while _h(hi, ratio) <= 0.0:
        lo, hi = hi, hi * 2.0
    while hi - lo > 1e-13 * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if _h(mid, ratio) > 0.0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def alpha_hat(ratio: float) -> float:
    """α̂ for ``ratio = v/ι >= 1``: the unique root in [2, inf) of the corrected Eq. (40).

    ``h(2) = -ln(2 ratio - 1) <= 0`` and ``h -> inf``; the upper bracket doubles from 3 until
    ``h > 0``, then bisection runs to 1e-13 (no scipy needed; compiled, :func:`_alpha_kernel`).
    Returns 2 when ``ratio <= 1 + 1e-12``.
    """
    ratio = float(ratio)
    if not math.isfinite(ratio) or ratio < 1.0 - 1e-9:
        raise ValueError(f"ratio={ratio!r} is invalid: must be a finite number v/iota >= 1")
    if ratio <= 1.0 + 1e-12:
        return 2.0
    return float(_alpha_kernel(ratio))


@dataclass(frozen=True)
class Pricing:
    """The price functions of every unit for one pair of bounds ``(iota, v)``.

    Attributes:
        iota: ι > 0, lower bound of the marginal social welfare.
        v: upper bound, ``v >= iota``.
        alpha: α̂, the competitive ratio.
        kappa: κ of the exponential segment.
    """

    iota: float
    v: float
    alpha: float
    kappa: float

    @classmethod
    def from_bounds(cls, iota: float, v: float) -> Pricing:
        """Build from ι and v (``0 < iota <= v``; ``v < iota`` by rounding is lifted to ι)."""
        iota = float(iota)
        v = float(v)
        if not (math.isfinite(iota) and iota > 0):
            raise ValueError(f"iota={iota!r} is invalid: must be a finite number > 0")
        if not math.isfinite(v) or v < iota * (1 - 1e-9):
            raise ValueError(f"v={v!r} is invalid: must be a finite number >= iota={iota!r}")
        v = max(v, iota)
        a = alpha_hat(v / iota)
        kappa = iota * (1.0 - 1.0 / a) * math.exp(-a / (a - 1.0))
        return cls(iota, v, a, kappa)

    def threshold(self, capacity: np.ndarray) -> np.ndarray:
        """``w = C / (α̂ - 1)``: usage below which the price is flat at ι."""
        return np.asarray(capacity, dtype=np.float64) / (self.alpha - 1.0)

    def price(self, usage: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        """φ(u) on [0, C] (``+inf`` above C, up to a 1e-12 relative tolerance)."""
        u = np.asarray(usage, dtype=np.float64)
        c = np.asarray(capacity, dtype=np.float64)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            p = np.maximum(self.iota, self.iota / self.alpha
                           + self.kappa * np.exp(self.alpha * np.minimum(u, c) / c))
        return np.where(u > c * (1 + 1e-12), np.inf, p)

    def cumulative(self, usage: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        """Ψ(u) = ∫_0^u φ, closed form (u clipped to [0, C])."""
        c = np.asarray(capacity, dtype=np.float64)
        u = np.clip(np.asarray(usage, dtype=np.float64), 0.0, c)
        a, io, ka = self.alpha, self.iota, self.kappa
        w = c / (a - 1.0)
        high = (io * w + (io / a) * (u - w)
                + (ka * c / a) * (np.exp(a * u / c) - math.exp(a / (a - 1.0))))
        return np.where(u <= w, io * u, high)

    def pseudo_cost(self, usage: np.ndarray, x: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        """Φ(x) = Ψ(ω + x) - Ψ(ω), the pseudo-cost of adding ``x`` at usage ``ω``."""
        u = np.asarray(usage, dtype=np.float64)
        return self.cumulative(u + np.asarray(x, dtype=np.float64), capacity) - self.cumulative(
            u, capacity)

    def inverse(self, price: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        """Largest usage ``u`` in [0, C] with φ(u) <= p (``-inf`` where p < ι, C where p >= v)."""
        p = np.asarray(price, dtype=np.float64)
        c = np.asarray(capacity, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            arg = (p - self.iota / self.alpha) / self.kappa
            u = c / self.alpha * np.log(np.where(arg > 0, arg, 1.0))
        u = np.where(p >= self.iota, np.maximum(u, c / (self.alpha - 1.0)), -np.inf)
        return np.minimum(u, c)
