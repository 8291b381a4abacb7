"""Hindsight optimum of GainOverhead-v0: the best fixed allocation y* (spec ogasched §4.1, §4.3).

The reward is linear in the arrivals, so for a fixed allocation ``y`` the cumulative reward over a
horizon depends only on the arrival counts ``n_l = sum_t x_l(t)``::

    Q(y) = sum_l n_l [ sum_k sum_{r in R_l} f_r^k(y_(l,r)^k) - max_k beta_k Y_l^k ] = q(n, y)

and ``y* = argmax_{y in Y} Q(y)`` is one concave program with an epigraph variable ``s_l`` per
type for the max::

    maximise   sum_l n_l ( sum_{(l,r) in E, k} f_r^k(y_(l,r)^k) - s_l )
    subject to s_l >= beta_k sum_{r in R_l} y_(l,r)^k       for every type l and resource k
               0 <= y_(l,r)^k <= a_l^k                      for every edge and k
               sum_{l in L_r} y_(l,r)^k <= c_r^k            for every instance r and k

* **Linear utilities** make it an LP, solved once with HiGHS (``scipy.optimize.linprog``, sparse
  constraint matrices).
* **Log / poly / reciprocal / mixed utilities** (concave program) are solved by an adaptive
  piecewise-linear approximation with a certified gap (a column-generation scheme): every
  non-linear ``f`` is replaced by its interpolant on a set of breakpoints, which makes the
  problem an LP (one bounded column per segment; concavity orders the segments, so no integer
  variables are needed). Interpolants under-estimate a concave ``f`` and the LP's ``y`` is
  feasible, so ``Q(y)`` is a **lower bound**. The LP's duals (prices ``mu`` of the capacities,
  ``nu`` of the penalty rows) give a Lagrangian **upper bound**
  ``sum_p max_{0<=y<=u} [n f(y) - price_p y] + sum mu c``, whose inner maxima are closed-form
  (inverse derivatives). Breakpoints are then added at those best responses, at the LP's ``y``
  and close around it, and far breakpoints are pruned, until
  ``UB - Q(y) <= rtol * max(|UB|, 1e-6 * Gmax)`` (``Gmax``: the largest possible gain, a floor
  for optima near 0). Typically 5-8 LPs.

Types with ``n_l = 0`` contribute nothing and are fixed to ``y = 0``. The returned ``y*`` is moved
onto Y by the exact projection (removing the LP solver's ~1e-9 feasibility slack) and its value is
recomputed with :func:`schedgym.envs.gain_overhead.dynamics.reward`, so it is an achievable value.

scipy is imported lazily: the environment itself needs only numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedgym.core import utilities
from schedgym.core.validation import check_array
from schedgym.envs.gain_overhead import dynamics
from schedgym.envs.gain_overhead.types import GainOverheadInstance


def _scipy():
    try:
        import scipy.sparse as sp
        from scipy.optimize import linprog
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ImportError(
            "the GainOverhead-v0 hindsight optimum needs scipy (>= 1.10): "
            "pip install 'schedgym[agents]' or pip install scipy"
        ) from exc
    return sp, linprog


@dataclass(frozen=True)
class HindsightSolution:
    """Result of :func:`solve_hindsight`.

    Attributes:
        allocation: float64 ``(E, K)``, the best fixed allocation ``y*`` (feasible, resource units).
        value: ``Q(y*) = q(counts, y*)``, the cumulative reward of ``y*`` (reward units).
        upper_bound: an upper bound on ``max_{y in Y} Q(y)``: the Lagrangian dual bound at the
            LP's (non-negative, rescaled) multipliers, valid for any multipliers, so it is exact
            up to floating-point rounding.
        iterations: number of LPs solved.
        method: ``"lp"`` (all utilities linear) or ``"piecewise-linear"``.
    """

    allocation: np.ndarray
    value: float
    upper_bound: float
    iterations: int
    method: str


#: HiGHS options: tolerances tighter than the 1e-7 defaults so that the refinement can close the
#: gap; presolve off (it costs more than it saves on these LPs).
_HIGHS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10,
          "presolve": False}


#: Extra breakpoints per refinement, as fractions of the distance from the LP's point to its
#: neighbouring breakpoints: local resolution grows ~16x per LP instead of ~2x.
_ZOOM = (0.25, 0.0625)


def _initial_points(upper: np.ndarray, n_points: int) -> np.ndarray:
    """Breakpoints ``(len(upper), n_points)`` in ``[0, upper]``, dense near 0 where the families
    curve most (quadratic spacing)."""
    frac = (np.arange(n_points) / (n_points - 1)) ** 2
    return upper[:, None] * frac[None, :]


def _best_response(
    code: np.ndarray, alpha: np.ndarray, w: np.ndarray, price: np.ndarray, upper: np.ndarray,
    scale: float,
) -> np.ndarray:
    """``argmax_{0 <= y <= upper} w f(y) - price y`` per pair, in closed form (``w > 0``).

    Solves ``f'(y) = price / w`` with the inverse derivative of each family and clips to the box;
    a non-positive price gives ``upper`` (``f`` is non-decreasing).
    """
    g = np.maximum(price, 1e-300) / w  # target slope (> 0)
    y = np.empty_like(g)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        y = _inverse_slope(code, alpha, g, scale, y)
    y = np.where(price <= 0, upper, y)
    return np.clip(y, 0.0, upper)


def _inverse_slope(
    code: np.ndarray, alpha: np.ndarray, g: np.ndarray, scale: float, y: np.ndarray
) -> np.ndarray:
    """``y`` with ``f'(y) = g`` per family (``+inf``/negative outside the range; caller clips)."""
    lin = code == utilities.LINEAR
    y[lin] = np.where(alpha[lin] > g[lin], np.inf, 0.0)
    m = code == utilities.LOG  # alpha / (1 + y) = g
    y[m] = alpha[m] / g[m] - 1.0
    m = code == utilities.POLY  # alpha / (2 sqrt(1 + y)) = g
    y[m] = (alpha[m] / (2.0 * g[m])) ** 2 - 1.0
    m = code == utilities.RECIPROCAL  # 1 / (y + s alpha)^2 = g
    y[m] = 1.0 / np.sqrt(g[m]) - scale * alpha[m]
    return y


def solve_hindsight(
    instance: GainOverheadInstance,
    counts: np.ndarray,
    *,
    rtol: float = 1e-7,
    max_iter: int = 60,
    initial_points: int = 6,
    window: int = 2,
) -> HindsightSolution:
    """Best fixed allocation for arrival counts ``counts`` (L,) (spec ogasched §4.3).

    Args:
        instance: the problem instance.
        counts: ``n_l >= 0``, arrivals of each type over the horizon (any non-negative weights).
        rtol: relative optimality gap at which the refinement stops (``UB - Q(y) <=
            rtol * max(|UB|, 1e-6 * largest possible gain)``); unused when all utilities are
            linear.
        max_iter: most LPs to solve; at the limit the best point is returned with its bound, or
            ``RuntimeError`` if the relative gap is still above 1e-4.
        initial_points: breakpoints per non-linear pair in the first LP (>= 2).

    Returns:
        a :class:`HindsightSolution`.
    """
    sp, linprog = _scipy()
    inst = instance
    L, K, E = inst.n_types, inst.n_resources, inst.n_edges
    n = check_array("counts", counts, shape=(L,), low=0.0)
    y_full = np.zeros((E, K))
    if not np.any(n > 0):
        return HindsightSolution(y_full, 0.0, 0.0, 0, "lp")

    # ---- pairs p = (edge, k) of an arrived type with a non-zero upper bound
    w_type = n / n.max()  # scaled weights keep the LP's coefficients O(1)
    upper = np.minimum(inst.edge_caps, inst.capacities[inst.edge_instance])  # (E, K)
    keep = (w_type[inst.edge_type][:, None] > 0) & (upper > 0)
    p_edge, p_k = np.nonzero(keep)
    m = p_edge.size
    p_type = inst.edge_type[p_edge]
    p_up = upper[p_edge, p_k]
    p_w = w_type[p_type]
    p_code = inst.edge_codes[p_edge, p_k]
    p_alpha = inst.edge_alpha[p_edge, p_k]
    scale = inst.reciprocal_scale
    s_types = np.flatnonzero(w_type > 0)
    n_s = s_types.size
    s_index = -np.ones(L, dtype=np.int64)
    s_index[s_types] = np.arange(n_s)
    lin = p_code == utilities.LINEAR
    nonlin = np.flatnonzero(~lin)

    # ---- rows: penalty epigraph beta_k Y_l^k - s_l <= 0, binding capacities
    p_pen_row = -np.ones(m, dtype=np.int64)
    beta_p = inst.beta[p_k]
    pen = beta_p > 0
    key = p_type * K + p_k
    pen_keys, inv = np.unique(key[pen], return_inverse=True)
    p_pen_row[pen] = inv
    n_pen = pen_keys.size
    cap_keys, inv = np.unique(inst.edge_instance[p_edge] * K + p_k, return_inverse=True)
    cap = inst.capacities[cap_keys // K, cap_keys % K]
    binding = np.bincount(inv, weights=p_up, minlength=cap_keys.size) > cap  # else redundant
    cap_row_of_key = -np.ones(cap_keys.size, dtype=np.int64)
    cap_row_of_key[binding] = n_pen + np.arange(int(binding.sum()))
    p_cap_row = cap_row_of_key[inv]
    cap_rhs = cap[binding]
    n_rows = n_pen + cap_rhs.size
    b_ub = np.concatenate([np.zeros(n_pen), cap_rhs])
    s_rows = np.arange(n_pen)  # the -s_l entries of the penalty rows
    s_cols_of_rows = s_index[pen_keys // K]

    def true_value(y: np.ndarray) -> float:
        """Scaled Q at y (a lower bound on the optimum when y is feasible)."""
        gain = float(p_w @ utilities.value(p_code, p_alpha, y, scale))
        Y = np.zeros((L, K))
        np.add.at(Y, (p_type, p_k), y)
        return gain - float(w_type @ (Y * inst.beta).max(axis=1))

    gain_max = float(p_w @ utilities.value(p_code, p_alpha, p_up, scale))  # > 0
    # ---- breakpoints of the piecewise-linear inner approximation of each non-linear f
    bp_pair = np.repeat(nonlin, max(2, int(initial_points)))
    bp_val = _initial_points(p_up[nonlin], max(2, int(initial_points))).reshape(-1)
    method = "lp" if nonlin.size == 0 else "piecewise-linear"
    best = (-np.inf, np.zeros(m), np.inf)  # (lower bound, y, upper bound)
    it = 0
    while True:
        it += 1
        # columns: one per linear pair (exact), one per segment of a non-linear pair, one per s_l
        if nonlin.size:
            order = np.lexsort((bp_val, bp_pair))
            bp_pair, bp_val = bp_pair[order], bp_val[order]
            tol = 1e-12 * (1.0 + p_up[bp_pair])
            dup = np.r_[False, (bp_pair[1:] == bp_pair[:-1]) & (np.diff(bp_val) <= tol[1:])]
            bp_pair, bp_val = bp_pair[~dup], bp_val[~dup]
            seg = np.flatnonzero(bp_pair[1:] == bp_pair[:-1])
            seg_pair = bp_pair[seg]
            width = bp_val[seg + 1] - bp_val[seg]
            fv = utilities.value(p_code[bp_pair], p_alpha[bp_pair], bp_val, scale)
            seg_slope = (fv[seg + 1] - fv[seg]) / width
        else:
            seg_pair = np.zeros(0, dtype=np.int64)
            width = seg_slope = np.zeros(0)
        lin_idx = np.flatnonzero(lin)
        col_pair = np.concatenate([lin_idx, seg_pair])
        col_up = np.concatenate([p_up[lin_idx], width])
        col_cost = -p_w[col_pair] * np.concatenate([p_alpha[lin_idx], seg_slope])
        n_cols = col_pair.size
        cost = np.concatenate([col_cost, w_type[s_types]])
        bounds = np.zeros((n_cols + n_s, 2))
        bounds[:n_cols, 1] = col_up
        bounds[n_cols:, 1] = np.inf
        pr, cr = p_pen_row[col_pair], p_cap_row[col_pair]
        cols = np.arange(n_cols)
        rows = np.concatenate([pr[pr >= 0], cr[cr >= 0], s_rows])
        cidx = np.concatenate([cols[pr >= 0], cols[cr >= 0], n_cols + s_cols_of_rows])
        vals = np.concatenate([beta_p[col_pair[pr >= 0]], np.ones(int((cr >= 0).sum())),
                               -np.ones(n_pen)])
        A = sp.csr_matrix((vals, (rows, cidx)), shape=(n_rows, n_cols + n_s))
        res = linprog(cost, A_ub=A, b_ub=b_ub, bounds=bounds, method="highs", options=_HIGHS)
        if res.status != 0:
            raise RuntimeError(f"hindsight LP failed (HiGHS status {res.status}): {res.message}")
        y = np.minimum(np.bincount(col_pair, weights=res.x[:n_cols], minlength=m), p_up)
        y = np.maximum(y, 0.0)
        lb = true_value(y)
        # Lagrangian upper bound from the LP's duals (prices >= 0; nu rescaled so that the s_l
        # terms stay bounded): UB = sum_p max_y [w f(y) - price y] + sum mu c.
        dual = np.maximum(-res.ineqlin.marginals, 0.0)
        nu = dual[:n_pen]
        tot = np.bincount(s_cols_of_rows, weights=nu, minlength=n_s)
        shrink = np.where(tot > w_type[s_types], w_type[s_types] / np.maximum(tot, 1e-300), 1.0)
        nu = nu * shrink[s_cols_of_rows]
        price = np.zeros(m)
        price[pen] += beta_p[pen] * nu[p_pen_row[pen]]
        has_cap = p_cap_row >= 0
        price[has_cap] += dual[p_cap_row[has_cap]]
        yb = _best_response(p_code, p_alpha, p_w, price, p_up, scale)
        h_best = p_w * utilities.value(p_code, p_alpha, yb, scale) - price * yb
        ub = float(h_best.sum() + dual[n_pen:] @ cap_rhs)
        if lb > best[0] or ub < best[2]:
            best = (max(lb, best[0]), y if lb > best[0] else best[1], min(ub, best[2]))
        gap = best[2] - best[0]
        scale_ref = max(abs(best[2]), 1e-6 * gain_max)
        if nonlin.size == 0 or gap <= rtol * scale_ref:
            break  # all linear: the LP is the exact problem
        if it >= max_iter:
            if gap > 1e-4 * scale_ref:
                raise RuntimeError(
                    f"hindsight optimum did not converge in max_iter={max_iter} LPs: relative "
                    f"gap {gap / scale_ref:.3g}; raise max_iter"
                )
            break
        # prune: keep each pair's end points and the `window` breakpoints on either side of y
        if window:
            start = np.r_[0, np.flatnonzero(bp_pair[1:] != bp_pair[:-1]) + 1]
            size = np.diff(np.r_[start, bp_pair.size])
            rank = np.arange(bp_pair.size) - np.repeat(start, size)
            below = np.bincount(bp_pair, weights=bp_val <= y[bp_pair], minlength=m)[bp_pair]
            last = np.repeat(size - 1, size)
            keep_bp = (rank == 0) | (rank == last) | (np.abs(rank - below) <= window)
            bp_pair, bp_val = bp_pair[keep_bp], bp_val[keep_bp]
        # refine: breakpoints at the priced best responses, at the LP's point and closer around
        # it (a fraction of the distance to its neighbouring breakpoints)
        eps = 1e-12 * (1.0 + p_up)
        left = np.zeros(m)
        right = p_up.copy()
        lm = bp_val < y[bp_pair] - eps[bp_pair]
        np.maximum.at(left, bp_pair[lm], bp_val[lm])
        rm = bp_val > y[bp_pair] + eps[bp_pair]
        np.minimum.at(right, bp_pair[rm], bp_val[rm])
        # only pairs whose priced best response improves on y by a noticeable amount (the
        # others are already optimal for the current prices: new columns would not change much)
        h_y = p_w * utilities.value(p_code, p_alpha, y, scale) - price * y
        delta = (h_best - h_y)[nonlin]
        ref = nonlin[delta > 1e-3 * rtol * scale_ref / nonlin.size]
        yn = y[ref]
        extra = [yn + f * (right[ref] - yn) for f in _ZOOM] + [
            yn - f * (yn - left[ref]) for f in _ZOOM]
        bp_pair = np.concatenate([bp_pair, ref, ref] + [ref] * len(extra))
        bp_val = np.concatenate([bp_val, yb[ref], yn] + extra)

    lb, y, ub = best
    y_full[p_edge, p_k] = y
    y_full = dynamics.project(inst, y_full)  # remove the LP's feasibility slack
    value = dynamics.reward(inst, n, y_full)
    bound = ub * float(n.max())
    return HindsightSolution(y_full, float(value), max(bound, float(value)), it, method)


def hindsight_optimum(
    instance: GainOverheadInstance, counts: np.ndarray, **kwargs: Any
) -> tuple[np.ndarray, float]:
    """``(y*, Q(y*))``: the best fixed allocation ``(E, K)`` for arrival counts ``(L,)`` and its
    cumulative reward. Keyword arguments go to :func:`solve_hindsight`."""
    sol = solve_hindsight(instance, counts, **kwargs)
    return sol.allocation, sol.value


def episode_benchmarks(env: Any) -> dict[str, float]:
    """Offline benchmark of the episode drawn by the last ``reset`` (the unwrapped or wrapped
    GainOverheadEnv): ``{"hindsight_optimum": Q(y*)}`` over the whole horizon's pre-drawn
    arrivals ``env.arrivals`` (T, L), so ``hindsight_optimum - return`` of a full episode is the
    regret of spec (11). ``schedgym compare`` calls it right after ``reset(seed)``.
    """
    env = getattr(env, "unwrapped", env)
    counts = np.asarray(env.arrivals).sum(axis=0)
    _, value = hindsight_optimum(env.instance, counts)
    return {"hindsight_optimum": value}


def regret_curve(
    instance: GainOverheadInstance,
    arrivals: np.ndarray,
    rewards: np.ndarray,
    checkpoints: Sequence[int] | np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Prefix regret ``R(t) = Q*(x(1..t)) - sum_{tau <= t} q(x(tau), y(tau))`` (spec §4.3).

    ``y*`` is recomputed for every prefix (its counts up to t). Args: ``arrivals`` ``(T, L)``,
    ``rewards`` ``(T,)`` the per-slot rewards collected, ``checkpoints`` prefix lengths in
    ``1..T`` (default: 20 evenly spaced, ending at T). Returns ``(checkpoints, regret)``.
    """
    x = check_array("arrivals", arrivals, shape=(None, instance.n_types), low=0.0)
    T = x.shape[0]
    r = check_array("rewards", rewards, shape=(T,))
    if checkpoints is None:
        checkpoints = np.unique(np.linspace(1, T, num=min(20, T)).round().astype(np.int64))
    cps = np.asarray(checkpoints, dtype=np.int64)
    if cps.ndim != 1 or cps.size == 0 or cps.min() < 1 or cps.max() > T:
        raise ValueError(
            f"checkpoints={checkpoints!r} is invalid: must be prefix lengths in 1..{T}"
        )
    cum_x = np.cumsum(x, axis=0)
    cum_r = np.cumsum(r)
    regret = np.array(
        [hindsight_optimum(instance, cum_x[t - 1])[1] - cum_r[t - 1] for t in cps]
    )
    return cps, regret
