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

import numpy as np

from schedgym.agents.base import Agent
from schedgym.core.validation import check_choice, check_float
from schedgym.envs.deadline_welfare.dynamics import (
    LINEAR,
    LOG,
    SQRT,
    ObservedJob,
    observed_job,
    utility,
)
from schedgym.envs.deadline_welfare.pricing import Pricing

SOLVERS = ("kkt", "alm")


def _clip(x, lo, hi):
    """``np.clip`` without its Python-level overhead (a hot path on small arrays)."""
    return np.minimum(np.maximum(x, lo), hi)


def _fp(code: int, a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """f'(x) (x > 0 for sqrt)."""
    if code == LINEAR:
        return a
    if code == LOG:
        return a / (1.0 + x)
    return a / (2.0 * np.sqrt(x))


def _fpp(code: int, a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """f''(x)."""
    if code == LINEAR:
        return np.zeros_like(x)
    if code == LOG:
        return -a / (1.0 + x) ** 2
    return -a / (4.0 * x * np.sqrt(x))


def _flat_x(code: int, a: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Solution of f'(x) = d (d > 0) for log and sqrt: the interior x in the flat price region."""
    if code == LOG:
        return a / d - 1.0
    return (a / (2.0 * d)) ** 2


class P3:
    """One P3 instance (one job, its ``m`` units) with everything that does not depend on μ
    precomputed. Arrays are float64 ``(m,)``, workload units; ``b = β / C``."""

    def __init__(self, code: int, coef: np.ndarray, b: np.ndarray, usage: np.ndarray,
                 capacity: np.ndarray, cap: np.ndarray, workload: float,
                 pricing: Pricing) -> None:
        self.code = code
        self.a = np.asarray(coef, dtype=np.float64)
        self.b = np.asarray(b, dtype=np.float64)
        self.omega = np.asarray(usage, dtype=np.float64)
        self.C = np.asarray(capacity, dtype=np.float64)
        self.cap = np.maximum(np.asarray(cap, dtype=np.float64), 0.0)
        self.rho = float(workload)
        self.pr = pricing
        io, al, ka = pricing.iota, pricing.alpha, pricing.kappa
        self.lam = al / self.C
        self.K = ka * np.exp(self.lam * np.minimum(self.omega, self.C))
        self.base = io / al  # φ = max(ι, base + K e^{λ x}) above the threshold
        self.e0 = _clip(self.C / (al - 1.0) - self.omega, 0.0, self.cap)  # end of flat part
        with np.errstate(divide="ignore", invalid="ignore"):
            self.m0 = self.marginal(np.zeros_like(self.cap))
            self.mcap = self.marginal(self.cap)
            self.mflat = _fp(code, self.a, self.e0) + self.b - io  # marginal at e0 (flat side)
        if code == SQRT:
            self.m0 = np.full_like(self.cap, np.inf)
            self.mflat = np.where(self.e0 > 0, self.mflat, np.inf)
        self.mflat = np.where(self.e0 > 0, self.mflat, self.m0)
        self.live = self.cap > 0
        self._ends: tuple[np.ndarray, np.ndarray] | None = None  # 1/m' at 0 and cap, lazily

    def _inv_slope(self, x: np.ndarray) -> np.ndarray:
        """dx/dμ = 1 / m'(x) (<= 0), 0 where undefined."""
        ex = self.K * np.exp(self.lam * x)
        expo = self.base + ex > self.pr.iota
        dm = _fpp(self.code, self.a, x) - np.where(expo, self.lam * ex, 0.0)
        out = 1.0 / dm
        return np.where(np.isfinite(out) & self.live, out, 0.0)

    # ------------------------------------------------------------------ pieces
    def price(self, x: np.ndarray) -> np.ndarray:
        """φ(ω + x)."""
        return np.maximum(self.pr.iota, self.base + self.K * np.exp(self.lam * x))

    def marginal(self, x: np.ndarray) -> np.ndarray:
        """m(x) = f'(x) + b - φ(ω + x)."""
        return _fp(self.code, self.a, x) + self.b - self.price(x)

    def objective(self, x: np.ndarray) -> float:
        """W̃(x) = Σ f(x) + b x - (Ψ(ω + x) - Ψ(ω))."""
        x = np.asarray(x, dtype=np.float64)
        return float(np.sum(utility(self.code, self.a, x) + self.b * x
                            - self.pr.pseudo_cost(self.omega, x, self.C)))

    def _exp_solve(self, sel: np.ndarray, mu: float, guess: np.ndarray | None) -> np.ndarray:
        """x in [e0, cap] with m(x) = μ for the units ``sel`` (bool, their solution lies in the
        exponential price region, m(e0) >= μ >= m(cap)); log and sqrt. Safeguarded Newton on
        the compacted units; returns the values of those units only."""
        idx = np.flatnonzero(sel)
        a, K, lam = self.a[idx], self.K[idx], self.lam[idx]
        c = self.b[idx] - self.base - mu
        lo = self.e0[idx]
        hi = self.cap[idx]
        mid = 0.5 * (lo + hi)
        x = mid if guess is None else np.where(np.isfinite(guess[idx]),
                                               _clip(guess[idx], lo, hi), mid)
        log = self.code == LOG
        for _ in range(100):
            ex = K * np.exp(lam * x)
            if log:
                q = 1.0 / (1.0 + x)
                fp = a * q
                fpp = -fp * q
            else:
                fp = 0.5 * a / np.sqrt(x)
                fpp = -0.5 * fp / x
            h = fp + c - ex
            step = h / (fpp - lam * ex)
            xn = x - step
            if np.max(np.abs(step) - 1e-13 * (1.0 + x)) <= 0.0:
                return _clip(xn, self.e0[idx], self.cap[idx])
            pos = h > 0
            lo = np.where(pos, x, lo)
            hi = np.where(pos, hi, x)
            bad = (xn < lo) | (xn > hi)
            if bad.any():
                xn = np.where(bad, 0.5 * (lo + hi), xn)
                if np.max(hi - lo - 1e-15 * (1.0 + hi)) <= 0.0:
                    return xn
            x = xn
        return x

    def _x_linear(self, mu: np.ndarray, strict: bool) -> np.ndarray:
        """Closed-form x(μ) of linear utilities for an array of μ (broadcast against units)."""
        mu = np.asarray(mu, dtype=np.float64)
        if mu.ndim:
            mu = mu[:, None]
        full = (self.mcap > mu) if strict else (self.mcap >= mu)
        zero = (self.m0 <= mu) if strict else (self.m0 < mu)
        arg = (self.a + self.b - mu - self.base) / self.K
        x = np.log(np.maximum(arg, 1e-300)) / self.lam
        x = _clip(x, self.e0, self.cap)
        x = np.where(zero, 0.0, np.where(full, self.cap, x))
        return np.where(self.live, x, 0.0)

    def _solve_linear(self, tol: float) -> tuple[np.ndarray, float]:
        """Linear utilities: g(μ) = Σ x(μ) jumps by e0 at μ = m0 (flat ties) and is smooth in
        between. Locate the jump or gap holding ρ on all jump points at once, then Newton."""
        rho = self.rho
        jumps = np.unique(self.m0[self.live & (self.e0 > 0) & (self.m0 > 0)])
        lo, hi = 0.0, float(np.max(self.m0[self.live])) + 1.0
        if jumps.size and jumps.size * self.cap.size <= 4096:  # all jumps at once
            g_minus = self._x_linear(jumps, strict=False).sum(axis=1)  # g just below the jump
            g_plus = self._x_linear(jumps, strict=True).sum(axis=1)  # g just above
            hit = np.flatnonzero((g_plus <= rho) & (g_minus >= rho))
            if hit.size:
                mu = float(jumps[hit[0]])
                return self._tie_fill(mu, mu), mu
            above = jumps[g_plus > rho]
            below = jumps[g_minus < rho]
            if above.size:
                lo = float(above.max())
            if below.size:
                hi = float(below.min())
        elif jumps.size:  # many jumps: binary search for the first k with g(J_k+) <= ρ
            a, b = 0, jumps.size
            while a < b:
                k = (a + b) // 2
                if self._x_linear(jumps[k], strict=True).sum() <= rho:
                    b = k
                else:
                    a = k + 1
            if a < jumps.size:
                mu = float(jumps[a])
                if self._x_linear(mu, strict=False).sum() >= rho:
                    return self._tie_fill(mu, mu), mu
                hi = mu
            if a > 0:
                lo = float(jumps[a - 1])
        mu = 0.5 * (lo + hi)
        for _ in range(200):
            x = self._x_linear(mu, strict=False)
            s = x.sum() - rho
            if abs(s) <= tol * rho:
                return self._finish(x), mu
            if s > 0:
                lo = mu
            else:
                hi = mu
            inner = (x > self.e0) & (x < self.cap)
            d = float(np.sum(1.0 / (-self.lam[inner] * (self.a + self.b - mu - self.base)[inner])))
            mn = mu - s / d if d < 0 else math.nan  # dx/dμ = -1/(λ (a + b - μ - ι/α̂))
            if not (lo < mn < hi):
                mn = 0.5 * (lo + hi)
            if hi - lo <= 1e-15 * max(1.0, hi):
                break
            mu = mn
        return self._tie_fill(lo, hi), hi

    def _tie_fill(self, lo: float, hi: float) -> np.ndarray:
        """x(hi, strict) plus the remaining workload shared in proportion to the slack up to
        x(lo) (ties of flat marginals, spec A20)."""
        if self.code == LINEAR:
            x_lo = self._x_linear(hi, strict=True)
            x_hi = self._x_linear(lo, strict=False)
        else:
            x_lo, _ = self.x_of(hi, strict=True)
            x_hi, _ = self.x_of(lo)
        rem = self.rho - x_lo.sum()
        slack = np.maximum(0.0, x_hi - x_lo)
        if rem > 0 and slack.sum() > 0:
            x_lo = x_lo + slack * min(1.0, rem / slack.sum())
        return self._finish(x_lo)

    def x_of(self, mu: float, strict: bool = False,
             guess: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(x(μ), dx/dμ)`` per unit: x_r(μ) = sup{x in [0, cap]: m_r(x) >= μ} (``> μ`` if
        strict); dx/dμ = 1/m'(x) for interior units, 0 elsewhere (and for linear ties).
        Call under ``np.errstate(all="ignore")``."""
        if self.code == LINEAR:
            x = self._x_linear(mu, strict)
            inner = (x > self.e0) & (x < self.cap)
            d = np.where(inner, 1.0 / (-self.lam * (self.a + self.b - mu - self.base)), 0.0)
            return x, d
        if strict:
            full, zero, expo = self.mcap > mu, self.m0 <= mu, self.mflat > mu
        else:
            full, zero, expo = self.mcap >= mu, self.m0 < mu, self.mflat >= mu
        inner = ~full & ~zero & self.live
        code, a = self.code, self.a
        ie = inner & expo
        iflat = inner & ~expo
        # flat price region: closed form
        xf = _clip(_flat_x(code, a, np.maximum(mu - self.b + self.pr.iota, 1e-300)), 0.0,
                     self.e0)
        x = np.where(full, self.cap, np.where(iflat, xf, 0.0))
        dm = _fpp(code, a, x)
        if ie.any():
            x[ie] = self._exp_solve(ie, mu, guess)
            xe = x[ie]
            dm[ie] = _fpp(code, a[ie], xe) - self.lam[ie] * self.K[ie] * np.exp(self.lam[ie] * xe)
        dx = np.where(inner, 1.0 / dm, 0.0)
        return x, np.where(np.isfinite(dx), dx, 0.0)

    def solve(self, tol: float = 1e-12) -> tuple[np.ndarray, float]:
        """Exact solution ``(x*, μ*)`` of P3 (spec §3.3)."""
        with np.errstate(all="ignore"):
            return self._solve(tol)

    def _solve(self, tol: float) -> tuple[np.ndarray, float]:
        if not self.live.any() or self.rho <= 0:
            return np.zeros_like(self.cap), 0.0
        if self.code == LINEAR:
            x0, _ = self.x_of(0.0)
            if x0.sum() <= self.rho * (1 + tol):
                return self._finish(x0), 0.0
            return self._solve_linear(tol)
        # Prices are >= ι, so x(μ) <= the flat-price solution xf(μ) and the flat problem's
        # multiplier (closed form inside, cheap) is an upper bracket hi; when no unit of the
        # answer leaves the flat price region (the common case) it is the answer.
        hi = self._flat_multiplier()
        if hi <= 0.0:  # Σ x(0) <= Σ xf(0) <= ρ
            x0, _ = self.x_of(0.0)
            return self._finish(x0), 0.0
        x, dx = self.x_of(hi)
        if abs(x.sum() - self.rho) <= tol * self.rho:
            return self._finish(x), hi
        lo = 0.0  # bracket: g(lo) > ρ >= g(hi); g(0) is evaluated only if the model asks
        zero_checked = False
        while x.sum() > self.rho * (1 + tol):  # numerical safety only
            lo, hi = hi, 2.0 * hi + 1e-12
            x, dx = self.x_of(hi)
            zero_checked = True
        mu = hi
        guess = None
        for it in range(200):
            if it:
                x, dx = self.x_of(mu, guess=guess)
                if not np.isfinite(x.sum()):  # never expected; retry cold
                    x, dx = self.x_of(mu)
            s = x.sum() - self.rho
            if abs(s) <= tol * self.rho:
                return self._finish(x), mu
            if s > 0:
                lo = mu
            else:
                hi = mu
            mn = self._model_step(mu, x, dx)
            if not zero_checked and not mn > 0.0:  # the model puts μ* at 0: is it?
                zero_checked = True
                x0, _ = self.x_of(0.0)
                if x0.sum() <= self.rho * (1 + tol):
                    return self._finish(x0), 0.0
            if not (lo < mn < hi):
                mn = 0.5 * (lo + hi)
            if hi - lo <= 1e-15 * max(1.0, hi):
                break
            guess = x + (mn - mu) * dx
            mu = mn
        return self._tie_fill(lo, hi), hi

    def _model_step(self, mu: float, x: np.ndarray, dx: np.ndarray) -> float:
        """Next μ from a piecewise-linear model of every x_r(μ), exact at known points:
        interior units through ``(μ, x_r)`` with slope ``dx_r``; capped units through
        ``(m_r(cap), cap)`` and zero units through ``(m_r(0), 0)`` with the slope there (so the
        model sees units about to enter or leave). Solved exactly by water-filling in ``-μ``."""
        if self._ends is None:
            self._ends = (self._inv_slope(np.zeros_like(self.cap)), self._inv_slope(self.cap))
        s0, scap = self._ends
        interior = dx < 0
        atcap = ~interior & (x >= self.cap) & self.live
        atzero = ~interior & ~atcap & self.live & np.isfinite(self.m0)
        anchor_mu = np.where(interior, mu, np.where(atcap, self.mcap, self.m0))
        anchor_x = np.where(atcap, self.cap, np.where(interior, x, 0.0))
        slope = np.where(interior, dx, np.where(atcap, scap, np.where(atzero, s0, 0.0)))
        use = slope < 0
        if not use.any():
            return math.nan
        w = -slope[use]  # x = w * (c - μ) clipped to [0, cap] with c = anchor_mu + anchor_x / w
        c = anchor_mu[use] + anchor_x[use] / w
        cap = self.cap[use]
        fixed = float(np.sum(np.where(~use & self.live, x, 0.0)))
        _, level = _waterfill_level(-c, -c + cap / w, w, self.rho - fixed)
        return math.nan if level is None else -level

    def _flat_multiplier(self) -> float:
        """μ >= 0 with Σ clip(xf(μ), 0, cap) = ρ (0 if even μ = 0 gives <= ρ), where xf solves
        f'(x) + b - ι = μ (every price at ι): an upper bound of μ* (log, sqrt). Starts from
        the closed form that ignores the clipping and the spread of b, then Newton with a
        bisection safeguard."""
        code, a, cap, rho, live = self.code, self.a, self.cap, self.rho, self.live
        c = self.pr.iota - self.b  # xf(μ) solves f'(x) = μ + c
        al = a[live]
        if code == LOG:
            mu = float(al.sum() / (rho + al.size) - c[live].mean())
        else:
            mu = float(math.sqrt(float(al @ al) / (4.0 * rho)) - c[live].mean())
        mu = max(mu, 0.0)
        lo, hi = 0.0, math.inf
        for _ in range(100):
            xf = _flat_x(code, a, np.maximum(mu + c, 1e-300))
            xc = _clip(xf, 0.0, cap)
            s = float(xc[live].sum()) - rho
            if abs(s) <= 1e-13 * rho:
                return mu
            if s > 0:
                lo = mu
            else:
                if mu <= 0.0:
                    return 0.0
                hi = mu
            inner = live & (xf > 0.0) & (xf < cap)
            deriv = float(np.sum(1.0 / _fpp(code, a[inner], xf[inner])))
            mn = mu - s / deriv if deriv < 0 else math.nan
            if not (lo < mn < hi):
                mn = 0.5 * (lo + hi) if math.isfinite(hi) else 2.0 * mu + 1.0
            if math.isfinite(hi) and hi - lo <= 1e-15 * max(1.0, hi):
                return hi
            mu = mn
        return hi if math.isfinite(hi) else mu

    def _finish(self, x: np.ndarray) -> np.ndarray:
        x = _clip(x, 0.0, self.cap)
        s = x.sum()
        if s > self.rho:
            x = x * (self.rho / s)
        return x

    def kkt_residual(self, x: np.ndarray, mu: float) -> float:
        """Largest violation of P3's KKT conditions (spec §3.3 check): interior units have
        m = μ, zero units m(0) <= μ, capped units m(cap) >= μ, and μ (Σx - ρ) = 0."""
        x = np.asarray(x, dtype=np.float64)
        rel = 1e-9 * np.maximum(1.0, self.cap)
        at0 = x <= rel
        atc = x >= self.cap - rel
        inner = ~at0 & ~atc
        with np.errstate(invalid="ignore"):
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


def _waterfill_level(start: np.ndarray, end: np.ndarray, weight: np.ndarray,
                     total: float) -> tuple[np.ndarray, float | None]:
    """``(x, L)`` with ``x = weight * clip(L - start, 0, end - start)`` summing to ``total``;
    ``L = None`` when even the full ``weight * (end - start)`` sums to at most ``total``."""
    room = weight * (end - start)
    if total <= 0 or room.sum() <= total:
        return room, None
    bps = np.sort(np.concatenate([start, end]))
    g = (weight * _clip(bps[:, None] - start, 0.0, end - start)).sum(axis=1)
    j = min(max(int(np.searchsorted(g, total)), 1), bps.size - 1)
    l0, l1, g0, g1 = bps[j - 1], bps[j], g[j - 1], g[j]
    level = float(l0 + (total - g0) / (g1 - g0) * (l1 - l0)) if g1 > g0 else float(l1)
    return weight * _clip(level - start, 0.0, end - start), level


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
        xc = _clip(x, 0.0, p.cap)
        g = p.price(xc) - _fp(p.code, p.a, np.maximum(x, 1e-8)) - p.b
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
    return p._finish(_clip(x, 0.0, p.cap))


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


__all__ = ["OnSocMax", "P3", "SOLVERS", "p3_from_job", "solve_alm", "solve_p3_cvxpy"]
