"""OnSocMax (Zhao et al., arXiv 2112.02456): online social-welfare maximisation with pricing.

On each arrival the agent solves the pseudo-social-welfare problem P3 (spec onsocmax §3.1)::

    max_x  sum_r [ f_r(x_r) + b_r x_r - (Ψ_r(ω_r + x_r) - Ψ_r(ω_r)) ]
    s.t.   sum_r x_r <= ρ,   0 <= x_r <= cap_r = max(0, min(x̄_r, C_r - ω_r))

over the job's units, with ``b_r = β_r / C_r``, the price ``φ = Ψ'`` of
:class:`schedgym.envs.deadline_welfare.pricing.Pricing` and (ι, v) from the observation.

Solvers:

- ``solver="kkt"`` (default): exact. P3 is separable concave with one coupling constraint; its
  solution is ``x_r(μ*)`` with ``x_r(μ) = sup{x in [0, cap_r]: m_r(x) >= μ}``, ``m_r(x) = f'_r(x)
  + b_r - φ_r(ω_r + x)`` and μ* the multiplier of the workload cap. ``x_r(μ)`` is closed form in
  the flat price region (and everywhere for linear utilities) and a safeguarded Newton solve in
  the exponential region; μ* comes from a safeguarded Newton iteration on ``Σ x_r(μ) = ρ`` (the
  derivative is ``Σ 1/m'_r``), falling back to bisection. Ties (flat marginals of linear
  utilities) are shared in proportion to slack (spec §3.3, A20).
- ``solver="alm"``: the paper's augmented-Lagrangian Algorithm 2 with Table II hyper-parameters
  and the guards of spec §3.4 (normalised steps, iteration caps, final repair). An ablation only.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from schedgym.agents.base import Agent
from schedgym.agents.baselines.deadline_welfare import check_flat_observation
from schedgym.core.validation import check_choice, check_float
from schedgym.core.waterfill import waterfill_kernel
from schedgym.envs.deadline_welfare.dynamics import (
    LINEAR,
    LOG,
    SQRT,
    ObservedJob,
    f_prime,
    f_prime_inverse,
    f_second,
    observed_job,
    utility,
    utility_derivative,
)
from schedgym.envs.deadline_welfare.pricing import Pricing

SOLVERS = ("kkt", "alm")

# ---------------------------------------------------------------- compiled P3 solver
# Per-unit parameters, precomputed once per job by _setup_kernel: one row each of ``P`` (9, m).
_A, _B, _LAM, _K, _E0, _M0, _MCAP, _MFLAT, _CAP = range(9)
_NROWS = 9
# numba compiles a kernel once per *literal* argument: a bare ``True`` or ``0`` in a call from
# compiled code is typed ``Literal[bool](True)``/``Literal[int](0)`` and gets a specialisation of
# its own (and so does every kernel it calls with it). These numpy scalars are typed as plain
# ``bool``, so every call site shares one compiled ``_x_all``/``_x_unit`` (first-use compile time).
_STRICT: Any = np.bool_(True)
_LAX: Any = np.bool_(False)


@numba.njit(cache=True, error_model="numpy")
def _price(P: np.ndarray, r: int, x: float, iota: float, base: float) -> float:
    """φ_r(ω_r + x) = max(ι, ι/α̂ + κ e^{α̂ (ω_r + x) / C_r})."""
    return max(iota, base + P[_K, r] * math.exp(P[_LAM, r] * x))


@numba.njit(cache=True, error_model="numpy")
def _marginal(code: int, P: np.ndarray, r: int, x: float, iota: float, base: float) -> float:
    """m_r(x) = f'_r(x) + b_r - φ_r(ω_r + x)."""
    return f_prime(code, P[_A, r], x) + P[_B, r] - _price(P, r, x, iota, base)


@numba.njit(cache=True, error_model="numpy")
def _setup_kernel(code: int, a: np.ndarray, b: np.ndarray, omega: np.ndarray, C: np.ndarray,
                  cap: np.ndarray, iota: float, alpha: float, kappa: float) -> np.ndarray:
    """The per-unit rows of ``P``: a, b, λ = α̂/C, K = κ e^{λ min(ω, C)}, the end e0 of the
    flat price region, m(0), m(cap), m(e0) on the flat side, and cap (clipped at 0)."""
    m = a.size
    P = np.empty((_NROWS, m))
    base = iota / alpha
    for r in range(m):
        c = max(cap[r], 0.0)
        lam = alpha / C[r]
        P[_A, r] = a[r]
        P[_B, r] = b[r]
        P[_LAM, r] = lam
        P[_K, r] = kappa * math.exp(lam * min(omega[r], C[r]))
        P[_CAP, r] = c
        e0 = min(max(C[r] / (alpha - 1.0) - omega[r], 0.0), c)
        P[_E0, r] = e0
        P[_M0, r] = math.inf if code == 2 else _marginal(code, P, r, 0.0, iota, base)
        P[_MCAP, r] = _marginal(code, P, r, c, iota, base)
        if e0 > 0.0:
            P[_MFLAT, r] = f_prime(code, a[r], e0) + b[r] - iota
        else:
            P[_MFLAT, r] = P[_M0, r]
    return P


@numba.njit(cache=True, error_model="numpy")
def _exp_solve(code: int, P: np.ndarray, r: int, mu: float, base: float, guess: float) -> float:
    """x in [e0, cap] with m_r(x) = μ where the solution lies in the exponential price region
    (m(e0) >= μ >= m(cap)), log and sqrt: safeguarded Newton from ``guess`` (nan: midpoint)."""
    a, K, lam = P[_A, r], P[_K, r], P[_LAM, r]
    c = P[_B, r] - base - mu
    lo, hi = P[_E0, r], P[_CAP, r]
    x = 0.5 * (lo + hi) if math.isnan(guess) else min(max(guess, lo), hi)
    for _ in range(100):
        ex = K * math.exp(lam * x)
        fp = f_prime(code, a, x)
        h = fp + c - ex
        step = h / (f_second(code, a, x) - lam * ex)
        xn = x - step
        if abs(step) <= 1e-13 * (1.0 + x):
            return min(max(xn, P[_E0, r]), P[_CAP, r])
        if h > 0:
            lo = x
        else:
            hi = x
        if not (lo <= xn <= hi):  # also catches NaN (sqrt at 0)
            xn = 0.5 * (lo + hi)
            if hi - lo <= 1e-15 * (1.0 + hi):
                return xn
        x = xn
    return x


@numba.njit(cache=True, error_model="numpy")
def _x_unit(code: int, P: np.ndarray, r: int, mu: float, strict: bool, iota: float,
            base: float, guess: float) -> tuple[float, float]:
    """``(x_r(μ), dx_r/dμ)``: x_r(μ) = sup{x in [0, cap]: m_r(x) >= μ} (``> μ`` if strict);
    dx/dμ = 1/m'(x) for interior units, 0 elsewhere (and for linear ties)."""
    cap = P[_CAP, r]
    if cap <= 0.0:
        return 0.0, 0.0
    mcap, m0 = P[_MCAP, r], P[_M0, r]
    full = mcap > mu if strict else mcap >= mu
    zero = m0 <= mu if strict else m0 < mu
    a, lam = P[_A, r], P[_LAM, r]
    if code == 0:  # closed form: inverse of the exponential price
        if zero:
            return 0.0, 0.0
        if full:
            return cap, 0.0
        arg = (a + P[_B, r] - mu - base) / P[_K, r]
        x = min(max(math.log(max(arg, 1e-300)) / lam, P[_E0, r]), cap)
        if P[_E0, r] < x < cap:
            return x, 1.0 / (-lam * (a + P[_B, r] - mu - base))
        return x, 0.0
    if full:
        return cap, 0.0
    if zero:
        return 0.0, 0.0
    expo = P[_MFLAT, r] > mu if strict else P[_MFLAT, r] >= mu
    if expo:
        x = _exp_solve(code, P, r, mu, base, guess)
        dm = f_second(code, a, x) - lam * P[_K, r] * math.exp(lam * x)
    else:
        x = min(max(f_prime_inverse(code, a, max(mu - P[_B, r] + iota, 1e-300)), 0.0), P[_E0, r])
        dm = f_second(code, a, x)
    dx = 1.0 / dm
    return x, dx if math.isfinite(dx) else 0.0


@numba.njit(cache=True, error_model="numpy")
def _x_all(code: int, P: np.ndarray, mu: float, strict: bool, iota: float, base: float,
           guess: np.ndarray, x: np.ndarray, dx: np.ndarray) -> float:
    """x_r(μ) and dx_r/dμ of every unit into ``x``, ``dx``; returns Σ x."""
    s = 0.0
    for r in range(x.size):
        x[r], dx[r] = _x_unit(code, P, r, mu, strict, iota, base, guess[r])
        s += x[r]
    return s


@numba.njit(cache=True)
def _finish(P: np.ndarray, x: np.ndarray, rho: float) -> np.ndarray:
    """Clip to [0, cap]; scale down to Σ x = ρ if above (rounding guard)."""
    s = 0.0
    for r in range(x.size):
        x[r] = min(max(x[r], 0.0), P[_CAP, r])
        s += x[r]
    if s > rho:
        for r in range(x.size):
            x[r] *= rho / s
    return x


@numba.njit(cache=True, error_model="numpy")
def _tie_fill(code: int, P: np.ndarray, lo: float, hi: float, rho: float, iota: float,
              base: float) -> np.ndarray:
    """x(hi, strict) plus the remaining workload shared in proportion to the slack up to
    x(lo) (ties of flat marginals, spec A20)."""
    m = P.shape[1]
    nan = np.full(m, np.nan)
    xl, xh, d = np.empty(m), np.empty(m), np.empty(m)
    s = _x_all(code, P, hi, _STRICT, iota, base, nan, xl, d)
    _x_all(code, P, lo, _LAX, iota, base, nan, xh, d)
    rem = rho - s
    slack = 0.0
    for r in range(m):
        slack += max(0.0, xh[r] - xl[r])
    if rem > 0 and slack > 0:
        f = min(1.0, rem / slack)
        for r in range(m):
            xl[r] += max(0.0, xh[r] - xl[r]) * f
    return _finish(P, xl, rho)


@numba.njit(cache=True)
def _unique_sorted(a: np.ndarray) -> np.ndarray:
    """``np.unique(a)`` of a float64 ``(k,)`` array without NaN or signed zeros: its distinct
    values in ascending order ``(j,)``, from a merge sort (the one the baselines' water-filling
    compiles too; numba's ``np.unique`` adds much more to the first-use compile), in
    ``O(k log k)`` for the thousands of units of a job on a large mesh."""
    out = np.empty(a.size)
    k = 0
    for i in np.argsort(a, kind="mergesort"):
        if k == 0 or a[i] != out[k - 1]:
            out[k] = a[i]
            k += 1
    return out[:k]


@numba.njit(cache=True, error_model="numpy")
def _solve_linear(code: int, P: np.ndarray, rho: float, tol: float, iota: float,
                  base: float) -> tuple[np.ndarray, float]:
    """Linear utilities (``code`` 0, passed as a value so the kernels below are the ones the
    concave solver uses): g(μ) = Σ x(μ) jumps by e0 at μ = m0 (flat ties) and is smooth in
    between. Binary search over the jump points for the tie or gap holding ρ, then Newton."""
    m = P.shape[1]
    nan = np.full(m, np.nan)
    x, dx = np.empty(m), np.empty(m)
    if _x_all(code, P, 0.0, _LAX, iota, base, nan, x, dx) <= rho * (1 + tol):
        return _finish(P, x, rho), 0.0
    jumps = np.empty(m)
    k = 0
    for r in range(m):
        if P[_CAP, r] > 0 and P[_E0, r] > 0 and P[_M0, r] > 0:
            jumps[k] = P[_M0, r]
            k += 1
    jumps = _unique_sorted(jumps[:k])
    lo, hi = 0.0, -math.inf
    for r in range(m):
        if P[_CAP, r] > 0:
            hi = max(hi, P[_M0, r] + 1.0)
    if jumps.size:  # first k with g(J_k+) <= ρ
        ka, kb = 0, jumps.size
        while ka < kb:
            k = (ka + kb) // 2
            if _x_all(code, P, jumps[k], _STRICT, iota, base, nan, x, dx) <= rho:
                kb = k
            else:
                ka = k + 1
        if ka < jumps.size:
            mu = jumps[ka]
            if _x_all(code, P, mu, _LAX, iota, base, nan, x, dx) >= rho:
                return _tie_fill(code, P, mu, mu, rho, iota, base), mu
            hi = mu
        if ka > 0:
            lo = jumps[ka - 1]
    mu = 0.5 * (lo + hi)
    for _ in range(200):
        s = _x_all(code, P, mu, _LAX, iota, base, nan, x, dx) - rho
        if abs(s) <= tol * rho:
            return _finish(P, x, rho), mu
        if s > 0:
            lo = mu
        else:
            hi = mu
        d = 0.0
        for r in range(m):
            d += dx[r]
        mn = mu - s / d if d < 0 else math.nan
        if not (lo < mn < hi):
            mn = 0.5 * (lo + hi)
        if hi - lo <= 1e-15 * max(1.0, hi):
            break
        mu = mn
    return _tie_fill(code, P, lo, hi, rho, iota, base), hi


@numba.njit(cache=True, error_model="numpy")
def _flat_multiplier(code: int, P: np.ndarray, rho: float, iota: float) -> float:
    """μ >= 0 with Σ clip(xf(μ), 0, cap) = ρ (0 if even μ = 0 gives <= ρ), where xf solves
    f'(x) + b - ι = μ (every price at ι): an upper bound of μ* (log, sqrt). Starts from the
    closed form that ignores the clipping and the spread of b, then Newton with a bisection
    safeguard."""
    m = P.shape[1]
    n, asum, a2, csum = 0, 0.0, 0.0, 0.0
    for r in range(m):
        if P[_CAP, r] > 0:
            n += 1
            asum += P[_A, r]
            a2 += P[_A, r] * P[_A, r]
            csum += iota - P[_B, r]
    if code == 1:
        mu = asum / (rho + n) - csum / n
    else:
        mu = math.sqrt(a2 / (4.0 * rho)) - csum / n
    mu = max(mu, 0.0)
    lo, hi = 0.0, math.inf
    for _ in range(100):
        s, deriv = -rho, 0.0
        for r in range(m):
            cap = P[_CAP, r]
            if cap > 0:
                xf = f_prime_inverse(code, P[_A, r], max(mu + iota - P[_B, r], 1e-300))
                s += min(max(xf, 0.0), cap)
                if 0.0 < xf < cap:
                    deriv += 1.0 / f_second(code, P[_A, r], xf)
        if abs(s) <= 1e-13 * rho:
            return mu
        if s > 0:
            lo = mu
        else:
            if mu <= 0.0:
                return 0.0
            hi = mu
        mn = mu - s / deriv if deriv < 0 else math.nan
        if not (lo < mn < hi):
            mn = 0.5 * (lo + hi) if math.isfinite(hi) else 2.0 * mu + 1.0
        if math.isfinite(hi) and hi - lo <= 1e-15 * max(1.0, hi):
            return hi
        mu = mn
    return hi if math.isfinite(hi) else mu


@numba.njit(cache=True, error_model="numpy")
def _inv_slope(code: int, P: np.ndarray, r: int, x: float, iota: float, base: float) -> float:
    """dx/dμ = 1 / m'_r(x) (<= 0), 0 where undefined."""
    if P[_CAP, r] <= 0:
        return 0.0
    ex = P[_K, r] * math.exp(P[_LAM, r] * x)
    dm = f_second(code, P[_A, r], x) - (P[_LAM, r] * ex if base + ex > iota else 0.0)
    out = 1.0 / dm
    return out if math.isfinite(out) else 0.0


@numba.njit(cache=True, error_model="numpy")
def _model_step(code: int, P: np.ndarray, mu: float, x: np.ndarray, dx: np.ndarray,
                ends: np.ndarray, rho: float) -> float:
    """Next μ from a piecewise-linear model of every x_r(μ), exact at known points: interior
    units through ``(μ, x_r)`` with slope ``dx_r``; capped units through ``(m_r(cap), cap)`` and
    zero units through ``(m_r(0), 0)`` with the slope there (``ends``: 1/m' at 0 and cap), so
    the model sees units about to enter or leave. Solved exactly by water-filling in ``-μ``."""
    m = x.size
    start, end, w = np.empty(m), np.empty(m), np.empty(m)
    k = 0
    fixed = 0.0
    for r in range(m):
        cap = P[_CAP, r]
        live = cap > 0
        interior = dx[r] < 0
        atcap = not interior and x[r] >= cap and live
        atzero = not interior and not atcap and live and math.isfinite(P[_M0, r])
        if interior:
            amu, ax, slope = mu, x[r], dx[r]
        elif atcap:
            amu, ax, slope = P[_MCAP, r], cap, ends[1, r]
        elif atzero:
            amu, ax, slope = P[_M0, r], 0.0, ends[0, r]
        else:
            amu, ax, slope = P[_M0, r], 0.0, 0.0
        if slope < 0:  # x = w (c - μ) clipped to [0, cap], c = amu + ax / w
            w[k] = -slope
            c = amu + ax / w[k]
            start[k] = -c
            end[k] = -c + cap / w[k]
            k += 1
        elif live:
            fixed += x[r]
    if k == 0:
        return math.nan
    level = waterfill_kernel(start[:k], end[:k], w[:k], rho - fixed)[1]
    return -level


@numba.njit(cache=True, error_model="numpy")
def _solve_concave(code: int, P: np.ndarray, rho: float, tol: float, iota: float,
                   base: float) -> tuple[np.ndarray, float]:
    """log / sqrt: the flat-price multiplier is an upper bracket of μ* (prices are >= ι) and
    the answer when no unit leaves the flat region; otherwise a safeguarded iteration on μ
    whose steps solve :func:`_model_step`, warm-starting every unit's Newton solve."""
    m = P.shape[1]
    nan = np.full(m, np.nan)
    x, dx = np.empty(m), np.empty(m)
    hi = _flat_multiplier(code, P, rho, iota)
    if hi <= 0.0:  # Σ x(0) <= Σ xf(0) <= ρ
        _x_all(code, P, 0.0, _LAX, iota, base, nan, x, dx)
        return _finish(P, x, rho), 0.0
    s = _x_all(code, P, hi, _LAX, iota, base, nan, x, dx)
    if abs(s - rho) <= tol * rho:
        return _finish(P, x, rho), hi
    lo = 0.0  # bracket: g(lo) > ρ >= g(hi); g(0) is evaluated only if the model asks
    zero_checked = False
    while s > rho * (1 + tol):  # numerical safety only
        lo, hi = hi, 2.0 * hi + 1e-12
        s = _x_all(code, P, hi, _LAX, iota, base, nan, x, dx)
        zero_checked = True
    ends = np.empty((2, m))
    for r in range(m):
        ends[0, r] = _inv_slope(code, P, r, 0.0, iota, base)
        ends[1, r] = _inv_slope(code, P, r, P[_CAP, r], iota, base)
    mu = hi
    guess = np.empty(m)
    x0, d0 = np.empty(m), np.empty(m)
    for it in range(200):
        if it:
            s = _x_all(code, P, mu, _LAX, iota, base, guess, x, dx)
            if not math.isfinite(s):  # never expected; retry cold
                s = _x_all(code, P, mu, _LAX, iota, base, nan, x, dx)
        if abs(s - rho) <= tol * rho:
            return _finish(P, x, rho), mu
        if s > rho:
            lo = mu
        else:
            hi = mu
        mn = _model_step(code, P, mu, x, dx, ends, rho)
        if not zero_checked and not mn > 0.0:  # the model puts μ* at 0: is it?
            zero_checked = True
            if _x_all(code, P, 0.0, _LAX, iota, base, nan, x0, d0) <= rho * (1 + tol):
                return _finish(P, x0, rho), 0.0
        if not (lo < mn < hi):
            mn = 0.5 * (lo + hi)
        if hi - lo <= 1e-15 * max(1.0, hi):
            break
        for r in range(m):
            guess[r] = x[r] + (mn - mu) * dx[r]
        mu = mn
    return _tie_fill(code, P, lo, hi, rho, iota, base), hi


def solve_kernel(code: int, P: np.ndarray, rho: float, tol: float, iota: float,
                 alpha: float) -> tuple[np.ndarray, float]:
    """Exact solution ``(x*, μ*)`` of P3 from the per-unit rows ``P`` (spec §3.3): zeros
    without a live unit or workload, else the compiled solver of the family (linear or
    log/sqrt). The choice is made here, not in a compiled kernel, so a process that meets one
    family compiles that family's solver only."""
    m = P.shape[1]
    if rho <= 0 or not np.any(P[_CAP] > 0):
        return np.zeros(m), 0.0
    base = iota / alpha
    if code == LINEAR:
        return _solve_linear(code, P, rho, tol, iota, base)
    return _solve_concave(code, P, rho, tol, iota, base)


@numba.njit(cache=True, error_model="numpy")
def _marginals(code: int, P: np.ndarray, x: np.ndarray, iota: float,
               base: float) -> np.ndarray:
    out = np.empty(x.size)
    for r in range(x.size):
        out[r] = _marginal(code, P, r, x[r], iota, base)
    return out


@numba.njit(cache=True, error_model="numpy")
def _prices(P: np.ndarray, x: np.ndarray, iota: float, base: float) -> np.ndarray:
    out = np.empty(x.size)
    for r in range(x.size):
        out[r] = _price(P, r, x[r], iota, base)
    return out


class P3:
    """One P3 instance (one job, its ``m`` units) with everything that does not depend on μ
    precomputed by a compiled kernel. Arrays are float64 ``(m,)``, workload units; ``b = β / C``.
    :meth:`solve` runs the compiled exact solver; :meth:`objective` and :meth:`kkt_residual`
    are the independent checks used by the tests and the benchmark."""

    def __init__(self, code: int, coef: np.ndarray, b: np.ndarray, usage: np.ndarray,
                 capacity: np.ndarray, cap: np.ndarray, workload: float,
                 pricing: Pricing) -> None:
        self.code = int(code)
        arrays = [np.asarray(v, dtype=np.float64) for v in (coef, b, usage, capacity, cap)]
        if any(v.shape != arrays[0].shape or v.ndim != 1 for v in arrays):
            arrays = list(np.broadcast_arrays(*arrays))
        self.a, self.b, self.omega, self.C, cap_in = (np.ascontiguousarray(v).reshape(-1)
                                                      for v in arrays)
        self.rho = float(workload)
        self.pr = pricing
        self._base = pricing.iota / pricing.alpha
        self.P = _setup_kernel(self.code, self.a, self.b, self.omega, self.C, cap_in,
                               pricing.iota, pricing.alpha, pricing.kappa)
        self.cap = self.P[_CAP]
        self.m0 = self.P[_M0]
        self.mcap = self.P[_MCAP]
        self.live = self.cap > 0

    def price(self, x: np.ndarray) -> np.ndarray:
        """φ(ω + x) per unit, ``(m,)``."""
        return _prices(self.P, _vec(x, self.cap.size), self.pr.iota, self._base)

    def marginal(self, x: np.ndarray) -> np.ndarray:
        """m(x) = f'(x) + b - φ(ω + x) per unit, ``(m,)``."""
        return _marginals(self.code, self.P, _vec(x, self.cap.size), self.pr.iota, self._base)

    def objective(self, x: np.ndarray) -> float:
        """W̃(x) = Σ f(x) + b x - (Ψ(ω + x) - Ψ(ω)) (pseudo-cost from the closed-form Ψ of
        :class:`Pricing`, independent of the solver's marginals)."""
        x = np.asarray(x, dtype=np.float64)
        return float(np.sum(utility(self.code, self.a, x) + self.b * x
                            - self.pr.pseudo_cost(self.omega, x, self.C)))

    def solve(self, tol: float = 1e-12) -> tuple[np.ndarray, float]:
        """Exact solution ``(x*, μ*)`` of P3 (spec §3.3): ``x*`` ``(m,)`` workload units, μ*
        the multiplier of the workload cap."""
        return solve_kernel(self.code, self.P, self.rho, float(tol), self.pr.iota,
                            self.pr.alpha)

    def _finish(self, x: np.ndarray) -> np.ndarray:
        """Clip to [0, cap] and scale down to Σ x <= ρ."""
        return _finish(self.P, np.array(x, dtype=np.float64).reshape(-1), self.rho)

    def kkt_residual(self, x: np.ndarray, mu: float) -> float:
        """Largest violation of P3's KKT conditions (spec §3.3 check): interior units have
        m = μ, zero units m(0) <= μ, capped units m(cap) >= μ, and μ (Σx - ρ) = 0."""
        x = np.asarray(x, dtype=np.float64)
        rel = 1e-9 * np.maximum(1.0, self.cap)
        at0 = x <= rel
        atc = x >= self.cap - rel
        inner = ~at0 & ~atc
        m = self.marginal(np.maximum(x, 1e-300))
        r = [0.0]
        if inner.any():
            r.append(float(np.max(np.abs(m[inner] - mu))))
        z = at0 & ~atc
        if z.any() and self.code != SQRT:
            r.append(float(np.max(np.maximum(self.m0[z] - mu, 0.0))))
        c = atc & self.live & ~at0
        if c.any():
            r.append(float(np.max(np.maximum(mu - self.mcap[c], 0.0))))
        r.append(abs(mu * (x.sum() - self.rho)) / max(1.0, self.rho))
        r.append(max(0.0, x.sum() - self.rho))
        return max(r)


def _vec(x: np.ndarray, m: int) -> np.ndarray:
    """``x`` as a contiguous float64 ``(m,)`` array (scalars broadcast)."""
    return np.ascontiguousarray(np.broadcast_to(np.asarray(x, dtype=np.float64), (m,)))


def solve_alm(p: P3, sigma0: float = 0.97, growth: float = 1.002, theta1: float = 0.99,
              theta2: float = 0.999, eta: float = 0.1, eps: float = 10.0, lr: float = 2.0,
              decay: float = 0.95, max_outer: int = 200, max_inner: int = 500) -> np.ndarray:
    """The paper's Algorithm 2 (spec §3.4) with Table II defaults and the spec's guards
    (normalised gradient steps, iteration caps, Euclidean violation, final repair)."""
    m = p.cap.size
    x = np.zeros(m)
    mu, y, z = 0.0, np.zeros(m), np.zeros(m)
    sig = sigma0
    eta_k, eps_k = 1.0 / sig, 1.0 / sig**theta1

    def grad(x: np.ndarray, sig: float) -> np.ndarray:
        xc = np.clip(x, 0.0, p.cap)
        g = p.price(xc) - utility_derivative(p.code, p.a, np.maximum(x, 1e-8)) - p.b
        g = g + max(mu + sig * (x.sum() - p.rho), 0.0)
        g = g + np.maximum(y + sig * (x - p.cap), 0.0) - np.maximum(z - sig * x, 0.0)
        return g

    for _ in range(max_outer):
        step = lr
        for _ in range(max_inner):
            g = grad(x, sig)
            gn = float(np.linalg.norm(g))
            if gn <= eta_k:
                break
            x = x - step * g / max(1.0, gn)
            step *= decay
        g = grad(x, sig)
        viol = float(np.linalg.norm(np.concatenate([
            [max(x.sum() - p.rho, -mu / sig)], np.maximum(x - p.cap, -y / sig),
            np.maximum(-x, -z / sig)])))
        if viol <= eps_k:
            if float(np.linalg.norm(g)) <= eta and viol <= eps:
                break
            mu = max(mu + sig * (x.sum() - p.rho), 0.0)
            y = np.maximum(y + sig * (x - p.cap), 0.0)
            z = np.maximum(z - sig * x, 0.0)
            eta_k, eps_k = eta_k / sig, eps_k / sig**theta2
        else:
            sig *= growth
            eta_k, eps_k = 1.0 / sig, 1.0 / sig**theta1
    return p._finish(np.clip(x, 0.0, p.cap))


def solve_p3_cvxpy(p: P3, solver: str = "CLARABEL") -> np.ndarray:
    """Reference solution of P3 with cvxpy (a test/benchmark dependency, imported lazily).

    The pseudo-cost uses the split ``ω + x = s + e`` with ``0 <= s <= w`` priced at ι and the
    excess ``e >= 0`` priced by the exponential segment, which is exact because φ >= ι::

        Ψ(u) = min_{s + e = u, 0 <= s <= w, e >= 0}  ι s + (ι/α̂) e
                                                     + (κ C/α̂) e^{α̂/(α̂-1)} (exp(α̂ e / C) - 1)
    """
    import cvxpy as cp

    m = p.cap.size
    live = np.flatnonzero(p.live)
    out = np.zeros(m)
    if live.size == 0 or p.rho <= 0:
        return out
    a, b, om, C, cap = (v[live] for v in (p.a, p.b, p.omega, p.C, p.cap))
    io, al, ka = p.pr.iota, p.pr.alpha, p.pr.kappa
    w = C / (al - 1.0)
    x = cp.Variable(live.size, nonneg=True)
    s = cp.Variable(live.size, nonneg=True)
    e = cp.Variable(live.size, nonneg=True)
    if p.code == LINEAR:
        f = a @ x
    elif p.code == LOG:
        f = a @ cp.log(1 + x)
    else:
        f = a @ cp.sqrt(x)
    coef = ka * C / al * math.exp(al / (al - 1.0))
    cost = io * cp.sum(s) + (io / al) * cp.sum(e) + coef @ (cp.exp(cp.multiply(al / C, e)) - 1)
    prob = cp.Problem(cp.Maximize(f + b @ x - cost),
                      [s + e == om + x, s <= w, x <= cap, cp.sum(x) <= p.rho])
    prob.solve(solver=solver)
    out[live] = np.asarray(x.value, dtype=np.float64)
    return p._finish(out)


def p3_from_job(job: ObservedJob, pricing: Pricing) -> P3:
    """The P3 instance of an observed job."""
    return P3(job.family, job.coef, job.weight / job.capacity, job.usage, job.capacity,
              job.remaining, job.workload, pricing)


class OnSocMax(Agent):
    """OnSocMax (paper Algorithm 1): dispatch each job by the exact (or ALM) solution of P3.

    Args:
        env: a DeadlineWelfare-v0 env (wrapped or not).
        solver: ``"kkt"`` (default, exact) or ``"alm"`` (the paper's Algorithm 2, an ablation).
        tol: relative tolerance of the workload-cap equation in the exact solver.

    The bounds (ι, v) come from the observation's ``bounds`` (spec §1.8: known to the online
    algorithm); α̂ and the prices follow from them. Usage ω is read from the observation.
    ``last_mu`` holds μ* of the last decision (the job's dual price, for the dual certificate).
    """

    name = "onsocmax"

    def __init__(self, env: Any, solver: str = "kkt", tol: float = 1e-12) -> None:
        super().__init__(env)
        check_flat_observation(self)
        self.solver = check_choice("solver", solver, SOLVERS)
        self.tol = check_float("tol", tol, low=0.0, low_open=True, high=1e-3)
        self._pricing: dict[tuple[float, float], Pricing] = {}
        self.last_mu = 0.0

    def pricing(self, bounds: tuple[float, float]) -> Pricing:
        """The (cached) pricing functions for bounds ``(ι, v)``."""
        key = (float(bounds[0]), float(bounds[1]))
        if key not in self._pricing:
            self._pricing[key] = Pricing.from_bounds(*key)
        return self._pricing[key]

    def decide(self, job: ObservedJob) -> np.ndarray:
        """Dispatch on the job's units ``(m,)`` in workload units."""
        if job.units.size == 0:
            return np.zeros(0)
        p = p3_from_job(job, self.pricing(job.bounds))
        if self.solver == "kkt":
            x, self.last_mu = p.solve(self.tol)
        else:
            x = solve_alm(p)
        return x

    def _act(self, obs: dict[str, np.ndarray], state: Any, deterministic: bool) -> np.ndarray:
        job = observed_job(obs)
        return job.encode(self.decide(job))


__all__ = ["OnSocMax", "P3", "SOLVERS", "p3_from_job", "solve_alm", "solve_kernel",
           "solve_p3_cvxpy"]
