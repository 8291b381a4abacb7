"""Hindsight optimum of GainOverhead-v0: the best fixed allocation y* (OgaSched (10)-(11)).

The solver is ours (the paper defines y* but does not compute it); see docs/gain-overhead.md.

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

scipy is imported lazily: the environment itself does not need it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedgym.core import utilities
from schedgym.core.validation import check_array
from schedgym.envs.gain_overhead import dynamics
from schedgym.envs.gain_overhead.actions import best_response
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
#: What :func:`_solve_lp` tries, in order, until HiGHS reports an optimum: the options above, then
#: the same tolerances with presolve (the simplex without it can end in an unknown model status
#: on a badly scaled LP, e.g. GainOverhead mixed, instance seed 1002, episode seed 100, slot 266),
#: then the interior-point method.
_HIGHS_TRIES = (("highs", _HIGHS), ("highs", {**_HIGHS, "presolve": True}), ("highs-ipm", _HIGHS))


#: Extra breakpoints per refinement, as fractions of the distance from the LP's point to its
#: neighbouring breakpoints: local resolution grows ~16x per LP instead of ~2x.
_ZOOM = (0.25, 0.0625)


def _initial_points(upper: np.ndarray, n_points: int) -> np.ndarray:
    """Breakpoints ``(len(upper), n_points)`` in ``[0, upper]``, dense near 0 where the families
    curve most (quadratic spacing)."""
    frac = (np.arange(n_points) / (n_points - 1)) ** 2
    return upper[:, None] * frac[None, :]


@dataclass
class _Pairs:
    """The LP's data: pairs ``p = (edge, k)`` of an arrived type with a non-zero upper bound,
    the penalty-epigraph rows ``beta_k Y_l^k - s_l <= 0`` and the binding capacity rows."""

    p_edge: np.ndarray  # (m,) edge of each pair
    p_k: np.ndarray  # (m,) resource of each pair
    p_type: np.ndarray  # (m,) job type of each pair
    p_up: np.ndarray  # (m,) upper bound min(a_l^k, c_r^k)
    p_w: np.ndarray  # (m,) scaled weight n_l / max n of the pair's type
    p_code: np.ndarray  # (m,) utility family
    p_alpha: np.ndarray  # (m,) utility parameter
    w_type: np.ndarray  # (L,) scaled weights
    s_types: np.ndarray  # types with an epigraph variable s_l (w_l > 0)
    beta_p: np.ndarray  # (m,) beta_k of each pair
    pen: np.ndarray  # (m,) bool: the pair enters a penalty row (beta_k > 0)
    p_pen_row: np.ndarray  # (m,) penalty row of the pair (-1: none)
    p_cap_row: np.ndarray  # (m,) capacity row of the pair (-1: none, not binding)
    n_pen: int  # number of penalty rows
    cap_rhs: np.ndarray  # capacities of the binding rows
    s_cols_of_rows: np.ndarray  # (n_pen,) index into s_types of each penalty row
    scale: float  # reciprocal_scale


def _pairs(inst: GainOverheadInstance, w_type: np.ndarray) -> _Pairs:
    """Stage 1: the pairs and constraint rows of the hindsight LP for scaled weights ``w_type``."""
    K = inst.n_resources
    upper = np.minimum(inst.edge_caps, inst.capacities[inst.edge_instance])  # (E, K)
    keep = (w_type[inst.edge_type][:, None] > 0) & (upper > 0)
    p_edge, p_k = np.nonzero(keep)
    p_type = inst.edge_type[p_edge]
    p_up = upper[p_edge, p_k]
    s_types = np.flatnonzero(w_type > 0)
    s_index = -np.ones(inst.n_types, dtype=np.int64)
    s_index[s_types] = np.arange(s_types.size)
    # rows: penalty epigraph beta_k Y_l^k - s_l <= 0, binding capacities
    p_pen_row = -np.ones(p_edge.size, dtype=np.int64)
    beta_p = inst.beta[p_k]
    pen = beta_p > 0
    pen_keys, inv = np.unique((p_type * K + p_k)[pen], return_inverse=True)
    p_pen_row[pen] = inv
    n_pen = pen_keys.size
    cap_keys, inv = np.unique(inst.edge_instance[p_edge] * K + p_k, return_inverse=True)
    cap = inst.capacities[cap_keys // K, cap_keys % K]
    binding = np.bincount(inv, weights=p_up, minlength=cap_keys.size) > cap  # else redundant
    cap_row_of_key = -np.ones(cap_keys.size, dtype=np.int64)
    cap_row_of_key[binding] = n_pen + np.arange(int(binding.sum()))
    return _Pairs(
        p_edge=p_edge, p_k=p_k, p_type=p_type, p_up=p_up, p_w=w_type[p_type],
        p_code=inst.edge_codes[p_edge, p_k], p_alpha=inst.edge_alpha[p_edge, p_k],
        w_type=w_type, s_types=s_types, beta_p=beta_p, pen=pen, p_pen_row=p_pen_row,
        p_cap_row=cap_row_of_key[inv], n_pen=n_pen, cap_rhs=cap[binding],
        s_cols_of_rows=s_index[pen_keys // K], scale=inst.reciprocal_scale,
    )


def _true_value(inst: GainOverheadInstance, P: _Pairs, y: np.ndarray) -> float:
    """Scaled Q at the pairs' values ``y`` (a lower bound on the optimum when y is feasible)."""
    gain = float(P.p_w @ utilities.value(P.p_code, P.p_alpha, y, P.scale))
    Y = np.zeros((inst.n_types, inst.n_resources))
    np.add.at(Y, (P.p_type, P.p_k), y)
    return gain - float(P.w_type @ (Y * inst.beta).max(axis=1))


def _segments(P: _Pairs, bp_pair: np.ndarray, bp_val: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stage 2a: sort and de-duplicate the breakpoints; returns ``(bp_pair, bp_val, seg_pair,
    width, seg_slope)``, one segment per pair of consecutive breakpoints of a pair."""
    order = np.lexsort((bp_val, bp_pair))
    bp_pair, bp_val = bp_pair[order], bp_val[order]
    tol = 1e-12 * (1.0 + P.p_up[bp_pair])
    dup = np.r_[False, (bp_pair[1:] == bp_pair[:-1]) & (np.diff(bp_val) <= tol[1:])]
    bp_pair, bp_val = bp_pair[~dup], bp_val[~dup]
    seg = np.flatnonzero(bp_pair[1:] == bp_pair[:-1])
    width = bp_val[seg + 1] - bp_val[seg]
    fv = utilities.value(P.p_code[bp_pair], P.p_alpha[bp_pair], bp_val, P.scale)
    return bp_pair, bp_val, bp_pair[seg], width, (fv[seg + 1] - fv[seg]) / width


def _solve_lp(P: _Pairs, lin: np.ndarray, seg_pair: np.ndarray, width: np.ndarray,
              seg_slope: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stage 2b: the LP with one column per linear pair (exact), one per segment of a
    non-linear pair and one per ``s_l``; returns the pairs' values ``y`` and the row duals
    (prices ``>= 0``)."""
    sp, linprog = _scipy()
    m, n_s, n_pen = P.p_edge.size, P.s_types.size, P.n_pen
    lin_idx = np.flatnonzero(lin)
    col_pair = np.concatenate([lin_idx, seg_pair])
    col_up = np.concatenate([P.p_up[lin_idx], width])
    col_cost = -P.p_w[col_pair] * np.concatenate([P.p_alpha[lin_idx], seg_slope])
    n_cols = col_pair.size
    cost = np.concatenate([col_cost, P.w_type[P.s_types]])
    bounds = np.zeros((n_cols + n_s, 2))
    bounds[:n_cols, 1] = col_up
    bounds[n_cols:, 1] = np.inf
    pr, cr = P.p_pen_row[col_pair], P.p_cap_row[col_pair]
    cols = np.arange(n_cols)
    rows = np.concatenate([pr[pr >= 0], cr[cr >= 0], np.arange(n_pen)])
    cidx = np.concatenate([cols[pr >= 0], cols[cr >= 0], n_cols + P.s_cols_of_rows])
    vals = np.concatenate([P.beta_p[col_pair[pr >= 0]], np.ones(int((cr >= 0).sum())),
                           -np.ones(n_pen)])
    A = sp.csr_matrix((vals, (rows, cidx)), shape=(n_pen + P.cap_rhs.size, n_cols + n_s))
    b_ub = np.concatenate([np.zeros(n_pen), P.cap_rhs])
    for method, options in _HIGHS_TRIES:
        res = linprog(cost, A_ub=A, b_ub=b_ub, bounds=bounds, method=method, options=options)
        if res.status == 0:
            break
    else:
        raise RuntimeError(f"hindsight LP failed (HiGHS status {res.status}): {res.message}")
    y = np.minimum(np.bincount(col_pair, weights=res.x[:n_cols], minlength=m), P.p_up)
    return np.maximum(y, 0.0), np.maximum(-res.ineqlin.marginals, 0.0)


def _dual_bound(P: _Pairs, dual: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """Stage 3: the Lagrangian upper bound from the LP's duals (prices >= 0; ``nu`` rescaled so
    that the ``s_l`` terms stay bounded): ``UB = sum_p max_y [w f(y) - price y] + sum mu c``.
    Returns ``(UB, price, best responses yb, h_best)``."""
    nu = dual[:P.n_pen]
    ws = P.w_type[P.s_types]
    tot = np.bincount(P.s_cols_of_rows, weights=nu, minlength=P.s_types.size)
    shrink = np.where(tot > ws, ws / np.maximum(tot, 1e-300), 1.0)
    nu = nu * shrink[P.s_cols_of_rows]
    price = np.zeros(P.p_edge.size)
    price[P.pen] += P.beta_p[P.pen] * nu[P.p_pen_row[P.pen]]
    has_cap = P.p_cap_row >= 0
    price[has_cap] += dual[P.p_cap_row[has_cap]]
    yb = best_response(P.p_code, P.p_alpha, P.p_w, price, P.p_up, P.scale)
    h_best = P.p_w * utilities.value(P.p_code, P.p_alpha, yb, P.scale) - price * yb
    return float(h_best.sum() + dual[P.n_pen:] @ P.cap_rhs), price, yb, h_best


def _prune(bp_pair: np.ndarray, bp_val: np.ndarray, y: np.ndarray, m: int, window: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """Stage 4a: keep each pair's end points and the ``window`` breakpoints on either side of
    the LP's point ``y``."""
    start = np.r_[0, np.flatnonzero(bp_pair[1:] != bp_pair[:-1]) + 1]
    size = np.diff(np.r_[start, bp_pair.size])
    rank = np.arange(bp_pair.size) - np.repeat(start, size)
    below = np.bincount(bp_pair, weights=bp_val <= y[bp_pair], minlength=m)[bp_pair]
    last = np.repeat(size - 1, size)
    keep_bp = (rank == 0) | (rank == last) | (np.abs(rank - below) <= window)
    return bp_pair[keep_bp], bp_val[keep_bp]


def _refine(P: _Pairs, bp_pair: np.ndarray, bp_val: np.ndarray, y: np.ndarray,
            nonlin: np.ndarray, dual: tuple[np.ndarray, np.ndarray, np.ndarray], cutoff: float,
            ) -> tuple[np.ndarray, np.ndarray]:
    """Stage 4b: breakpoints at the priced best responses, at the LP's point and closer around
    it (a fraction of the distance to its neighbouring breakpoints), for the pairs whose priced
    best response improves on ``y`` by more than ``cutoff`` (the others are already optimal for
    the current prices: new columns would not change much). ``dual`` = ``(price, yb,
    h_best)`` of :func:`_dual_bound`."""
    price, yb, h_best = dual
    m = P.p_edge.size
    eps = 1e-12 * (1.0 + P.p_up)
    left = np.zeros(m)
    right = P.p_up.copy()
    lm = bp_val < y[bp_pair] - eps[bp_pair]
    np.maximum.at(left, bp_pair[lm], bp_val[lm])
    rm = bp_val > y[bp_pair] + eps[bp_pair]
    np.minimum.at(right, bp_pair[rm], bp_val[rm])
    h_y = P.p_w * utilities.value(P.p_code, P.p_alpha, y, P.scale) - price * y
    delta = (h_best - h_y)[nonlin]
    ref = nonlin[delta > cutoff]
    yn = y[ref]
    extra = [yn + f * (right[ref] - yn) for f in _ZOOM] + [
        yn - f * (yn - left[ref]) for f in _ZOOM]
    bp_pair = np.concatenate([bp_pair, ref, ref] + [ref] * len(extra))
    bp_val = np.concatenate([bp_val, yb[ref], yn] + extra)
    return bp_pair, bp_val


def solve_hindsight(
    instance: GainOverheadInstance,
    counts: np.ndarray,
    *,
    rtol: float = 1e-7,
    max_iter: int = 60,
    initial_points: int = 6,
    window: int = 2,
) -> HindsightSolution:
    """Best fixed allocation for arrival counts ``counts`` (L,) (OgaSched (11), Definition 1).

    Args:
        instance: the problem instance.
        counts: ``n_l >= 0``, arrivals of each type over the horizon (any non-negative weights;
            one slot's ``x(t)`` gives that slot's exact optimum, see ``myopic-opt``).
        rtol: relative optimality gap at which the refinement stops (``UB - Q(y) <=
            rtol * max(|UB|, 1e-6 * largest possible gain)``); unused when all utilities are
            linear.
        max_iter: most LPs to solve; at the limit the best point is returned with its bound, or
            ``RuntimeError`` if the relative gap is still above 1e-4.
        initial_points: breakpoints per non-linear pair in the first LP (>= 2).
        window: breakpoints kept on either side of the LP's point when pruning (0: no pruning).

    Returns:
        a :class:`HindsightSolution`.
    """
    _scipy()
    inst = instance
    n = check_array("counts", counts, shape=(inst.n_types,), low=0.0)
    y_full = np.zeros((inst.n_edges, inst.n_resources))
    if not np.any(n > 0):
        return HindsightSolution(y_full, 0.0, 0.0, 0, "lp")
    P = _pairs(inst, n / n.max())  # scaled weights keep the LP's coefficients O(1)
    m = P.p_edge.size
    lin = P.p_code == utilities.LINEAR
    nonlin = np.flatnonzero(~lin)
    gain_max = float(P.p_w @ utilities.value(P.p_code, P.p_alpha, P.p_up, P.scale))  # > 0
    # breakpoints of the piecewise-linear inner approximation of each non-linear f
    bp_pair = np.repeat(nonlin, max(2, int(initial_points)))
    bp_val = _initial_points(P.p_up[nonlin], max(2, int(initial_points))).reshape(-1)
    best = (-np.inf, np.zeros(m), np.inf)  # (lower bound, y, upper bound)
    it = 0
    while True:
        it += 1
        seg_pair, width, seg_slope = np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
        if nonlin.size:
            bp_pair, bp_val, seg_pair, width, seg_slope = _segments(P, bp_pair, bp_val)
        y, duals = _solve_lp(P, lin, seg_pair, width, seg_slope)
        lb = _true_value(inst, P, y)
        ub, price, yb, h_best = _dual_bound(P, duals)
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
        if window:
            bp_pair, bp_val = _prune(bp_pair, bp_val, y, m, window)
        bp_pair, bp_val = _refine(P, bp_pair, bp_val, y, nonlin, (price, yb, h_best),
                                  1e-3 * rtol * scale_ref / nonlin.size)
    y_full[P.p_edge, P.p_k] = best[1]
    y_full = dynamics.project(inst, y_full)  # remove the LP's feasibility slack
    value = dynamics.reward(inst, n, y_full)
    bound = best[2] * float(n.max())
    return HindsightSolution(y_full, float(value), max(bound, float(value)), it,
                             "lp" if nonlin.size == 0 else "piecewise-linear")


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
    regret of OgaSched (11). ``schedgym compare`` calls it right after ``reset(seed)``.
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
    """Prefix regret ``R(t) = Q*(x(1..t)) - sum_{tau <= t} q(x(tau), y(tau))`` (OgaSched (11)).

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
