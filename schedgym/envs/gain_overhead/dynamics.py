"""Pure functions of GainOverhead-v0: reward, supergradient, projection, feasibility.

Shared by the environment, the OgaSched agent, the offline solver and the tests. An allocation
``y`` is a float64 array ``(E, K)`` in resource units, rows in the instance's edge order. Arrivals
``x`` are ``(L,)`` (0/1 per slot, or arrival *counts* over a horizon: the reward is linear in x).

Reward (spec ogasched §1.6, the separable "nice setup")::

    q(x, y) = sum_l x_l [ sum_k sum_{r in R_l} f_r^k(y_(l,r)^k)  -  max_k beta_k Y_l^k ]
    Y_l^k   = sum_{r in R_l} y_(l,r)^k

The formulas live once, in numba kernels (``cache=True``; the first call in a fresh install
compiles them, about a second each, later processes load them from ``__pycache__``): the
projection of every (instance, resource) group (:func:`project_grouped`), the reward
(:func:`reward_parts`), the supergradient (:func:`supergradient`), and :func:`score_batch`, which
projects and scores a batch of pre-projection allocations in one call for the env and the vector
env (one copy = a batch of one, so both give the same bits).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from schedgym.core.pairwise import np_sum
from schedgym.core.projection import WORK_ROWS, project_block, project_paper
from schedgym.core.utilities import map_flat
from schedgym.envs.gain_overhead.types import GainOverheadInstance

#: Absolute tolerance used by :func:`is_feasible` (resource units).
FEASIBILITY_TOL = 1e-6

#: A start index that numba types as int64, not as the literal 0 (a literal argument compiles
#: a second specialisation of ``np_sum``).
_ZERO: Any = np.int64(0)
#: ``score_action``'s float32 utilization buffer when the caller wants none (never written).
_NO_UTIL32 = np.empty(0, dtype=np.float32)
#: ``reward_parts``' squared distances: none (the reward kernel then sums nothing alongside).
_NO_SQ = np.empty(0)


@dataclass(frozen=True)
class RewardParts:
    """Reward of one slot and its parts; per-type arrays have shape ``(L,)``."""

    reward: float
    gain: float
    penalty: float
    type_gain: np.ndarray  # sum_k sum_r f(y) per type, before multiplying by x
    type_penalty: np.ndarray  # max_k beta_k Y_l^k per type, before multiplying by x
    k_star: np.ndarray  # argmax of the penalty per type (lowest index on ties)


def type_totals(inst: GainOverheadInstance, y: np.ndarray) -> np.ndarray:
    """``Y_l^k = sum_{r in R_l} y_(l,r)^k``, shape ``(L, K)``."""
    return np.add.reduceat(y, inst.type_starts, axis=0)


@numba.njit(cache=True)
def _argmax_weighted(tot: np.ndarray, beta: np.ndarray) -> tuple[int, float]:
    """``(k*, max_k beta_k tot_k)`` (lowest k on ties) of one type's totals ``tot`` (K,)."""
    best_k, best = 0, -np.inf
    for k in range(tot.size):
        w = tot[k] * beta[k]
        if w > best:
            best_k, best = k, w
    return best_k, best


@numba.njit(cache=True)
def _row_sums(v: np.ndarray, n_cols: int, out: np.ndarray, w: np.ndarray) -> float:
    """``out[i] = sum_j v[i * n_cols + j]`` for each row ``i`` of the flat row-major ``v``
    ``(out.size * n_cols,)``, summed over ``j`` in order starting at 0.0; returns the sum of
    ``w`` (``v``'s size, or empty: then 0.0) over its entries in order from 0.0.

    Eight rows at a time as eight independent chains: a row of a few entries (K = 6) summed on
    its own costs a loop per row. The sum of ``w`` (the step's squared projection distances) is
    one long chain whose every addition waits for the last, too slow alone (~4 cycles an
    entry): added in the same loop, over the same entries, the out-of-order core runs the row
    sums in its shadow. Indices are cast to unsigned, so numba emits no negative-index
    wraparound (which it must for a signed index it cannot prove non-negative)."""
    n_rows, at, total, chained = out.size, 0, 0.0, w.size > 0
    while at + 8 <= n_rows:
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
        for j in range(n_cols):
            q = at * n_cols + j
            a0 += v[np.uint64(q)]
            a1 += v[np.uint64(q + n_cols)]
            a2 += v[np.uint64(q + 2 * n_cols)]
            a3 += v[np.uint64(q + 3 * n_cols)]
            a4 += v[np.uint64(q + 4 * n_cols)]
            a5 += v[np.uint64(q + 5 * n_cols)]
            a6 += v[np.uint64(q + 6 * n_cols)]
            a7 += v[np.uint64(q + 7 * n_cols)]
        if chained:
            for q in range(at * n_cols, (at + 8) * n_cols):
                total += w[np.uint64(q)]
        out[at], out[at + 1], out[at + 2], out[at + 3] = a0, a1, a2, a3
        out[at + 4], out[at + 5], out[at + 6], out[at + 7] = a4, a5, a6, a7
        at += 8
    for i in range(at, n_rows):
        a0 = 0.0
        for j in range(n_cols):
            a0 += v[np.uint64(i * n_cols + j)]
            if chained:
                total += w[np.uint64(i * n_cols + j)]
        out[i] = a0
    return total


@numba.njit(cache=True)
def _column_sums(v: np.ndarray, n_cols: int, lo: int, hi: int, out: np.ndarray) -> None:
    """``out[j] = sum_{i = lo}^{hi - 1} v[i * n_cols + j]`` for each column ``j`` of the flat
    row-major ``v`` (``out``: ``(n_cols,)``), summed over the rows in order starting at 0.0:
    ``Y^k`` of one type. Four columns at a time as independent chains (then two, then one);
    unsigned indices as in :func:`_row_sums`."""
    j = 0
    while j < n_cols:
        w = min(n_cols - j, 4)
        w = 2 if w == 3 else w
        t0 = t1 = t2 = t3 = 0.0
        q = lo * n_cols + j
        if w == 4:
            for _ in range(hi - lo):
                t0 += v[np.uint64(q)]
                t1 += v[np.uint64(q + 1)]
                t2 += v[np.uint64(q + 2)]
                t3 += v[np.uint64(q + 3)]
                q += n_cols
            out[j + 2], out[j + 3] = t2, t3
        elif w == 2:
            for _ in range(hi - lo):
                t0 += v[np.uint64(q)]
                t1 += v[np.uint64(q + 1)]
                q += n_cols
        else:
            for _ in range(hi - lo):
                t0 += v[np.uint64(q)]
                q += n_cols
        out[j] = t0
        if w > 1:
            out[j + 1] = t1
        j += w


@numba.njit(cache=True)
def _reward_kernel(x: np.ndarray, y: np.ndarray, codes: np.ndarray, alpha: np.ndarray, s: float,
                   type_starts: np.ndarray, beta: np.ndarray, type_gain: np.ndarray,
                   type_pen: np.ndarray, k_star: np.ndarray, sq: np.ndarray
                   ) -> tuple[float, float, float]:
    """Fills the per-type parts ``(L,)`` and returns ``(gain, penalty, sum of sq)``; the one
    reward formula. ``sq``: the step's squared distances ``(E * K,)`` (or empty), summed in
    order alongside (:func:`_row_sums`).

    The gain of an edge (``sum_k f(y)``, over ``k`` in order) is summed for all edges in one
    pass (:func:`_row_sums`), then over each type's edges in order; the totals ``Y^k`` are
    summed over the type's edges in order (:func:`_column_sums`). ``y`` C-contiguous."""
    n_types, (n_edges, n_res) = type_starts.size, y.shape
    yf = y.reshape(-1)
    edge_gain, tot = np.empty(n_edges), np.empty(n_res)
    total_sq = _row_sums(map_flat(False, codes.reshape(-1), alpha.reshape(-1), yf, s), n_res,
                         edge_gain, sq)
    gain, penalty = 0.0, 0.0
    for l in range(n_types):
        lo = type_starts[l]
        hi = type_starts[l + 1] if l + 1 < n_types else n_edges
        tg = 0.0
        for e in range(lo, hi):
            tg += edge_gain[np.uint64(e)]
        _column_sums(yf, n_res, lo, hi, tot)
        k_star[l], type_pen[l] = _argmax_weighted(tot, beta)
        type_gain[l] = tg
        gain += x[l] * tg
        penalty += x[l] * type_pen[l]
    return gain, penalty, total_sq


def reward_parts(inst: GainOverheadInstance, x: np.ndarray, y: np.ndarray) -> RewardParts:
    """Reward, gain and penalty of allocation ``y`` (E, K) against arrivals ``x`` (L,)."""
    L, k = inst.n_types, inst.kernel_arrays
    type_gain, type_pen, k_star = np.empty(L), np.empty(L), np.empty(L, dtype=np.int64)
    gain, penalty, _ = _reward_kernel(
        np.asarray(x, dtype=np.float64), np.ascontiguousarray(y, dtype=np.float64), k.codes,
        k.alpha, k.reciprocal_scale, k.type_starts, k.beta, type_gain,
        type_pen, k_star, _NO_SQ)
    return RewardParts(gain - penalty, gain, penalty, type_gain, type_pen, k_star)


def reward(inst: GainOverheadInstance, x: np.ndarray, y: np.ndarray) -> float:
    """``q(x, y)``; with ``x`` = arrival counts over a horizon it is the cumulative reward."""
    return reward_parts(inst, x, y).reward


@numba.njit(cache=True)
def _supergradient_kernel(x: np.ndarray, y: np.ndarray, codes: np.ndarray, alpha: np.ndarray,
                          s: float, type_starts: np.ndarray, beta: np.ndarray, eta: float,
                          ascend: bool) -> np.ndarray:
    """The supergradient ``g`` (E, K) at ``y`` (C-contiguous), or with ``ascend`` the ascent
    point ``y + eta * g`` (OgaSched's step before the projection).

    Per type: ``k*`` from the totals ``Y^k`` (:func:`_column_sums`, as the reward), ``beta_k*``
    taken off the derivative of the ``k*`` entries, then one flat pass over the type's entries
    (``d * x_l``, and ``y + eta * (d * x_l)``) that vectorises."""
    n_types, (n_edges, n_res) = type_starts.size, y.shape
    yf, tot = y.reshape(-1), np.empty(n_res)
    g = map_flat(True, codes.reshape(-1), alpha.reshape(-1), yf, s)  # f'(y), then g in place
    for l in range(n_types):
        lo = type_starts[l]
        hi = type_starts[l + 1] if l + 1 < n_types else n_edges
        _column_sums(yf, n_res, lo, hi, tot)
        ks, xl = _argmax_weighted(tot, beta)[0], x[l]
        for e in range(lo, hi):
            g[np.uint64(e * n_res + ks)] -= beta[ks]
        if ascend:
            for p in range(lo * n_res, hi * n_res):
                g[np.uint64(p)] = yf[np.uint64(p)] + eta * (g[np.uint64(p)] * xl)
        else:
            for p in range(lo * n_res, hi * n_res):
                g[np.uint64(p)] *= xl
    return g.reshape((n_edges, n_res))


def supergradient(inst: GainOverheadInstance, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Supergradient of ``q(x, .)`` at ``y``, spec ogasched (30), shape ``(E, K)``.

    ``dq/dy_(l,r)^k = x_l (f_r^k'(y) - beta_k 1{k == k*_l})`` with ``k*_l`` the lowest-index
    maximiser of ``beta_k Y_l^k`` (applied to every channel of type ``l``).
    """
    k = inst.kernel_arrays
    return _supergradient_kernel(
        np.asarray(x, dtype=np.float64), np.ascontiguousarray(y, dtype=np.float64), k.codes,
        k.alpha, k.reciprocal_scale, k.type_starts, k.beta, 0.0, False)


@numba.njit(cache=True)
def _project_slots(z: np.ndarray, entries: np.ndarray, groups: np.ndarray, per_size: np.ndarray,
                   caps: np.ndarray, capacity: np.ndarray, y: np.ndarray, load: np.ndarray
                   ) -> None:
    """Exact projection of ``z`` (E, K) onto Y into ``y`` (E, K); ``load`` (R, K) gets the usage.

    ``entries, groups, per_size, caps, capacity``: the fields of the instance's
    :class:`~.types.ProjectionPlan`, from its writable copies (``kernel_arrays.plan``: with the
    read-only originals numba would compile the whole solver a second time). ``z`` is permuted
    into the plan's block buffer (the groups of the instances with ``n`` channels are the
    columns of one ``(n, G_n)`` block), which :func:`~schedgym.core.projection.project_block`
    projects block by block, and the result is permuted back.
    """
    zf, yf, lf = z.reshape(-1), y.reshape(-1), load.reshape(-1)
    n_res, size, n_cols = z.shape[1], entries.size, capacity.size
    buf = np.empty(2 * size + (1 + WORK_ROWS) * n_cols)
    zb, vb = buf[:size], buf[size:2 * size]
    lb, work = buf[2 * size:2 * size + n_cols], buf[2 * size + n_cols:]
    for p in range(size):  # unsigned indices (the plan's are >= 0): no wraparound select
        zb[p] = zf[np.uint64(entries[p])]
    at, at_g = 0, 0
    for n in range(1, per_size.size):
        n_groups = per_size[n] * n_res
        if n_groups == 0:
            continue
        block, cols = slice(at, at + n * n_groups), slice(at_g, at_g + n_groups)
        project_block(zb[block].reshape((n, n_groups)), caps[block].reshape((n, n_groups)),
                      capacity[cols], vb[block].reshape((n, n_groups)), lb[cols],
                      work[:WORK_ROWS * n_groups].reshape((WORK_ROWS, n_groups)))
        at, at_g = at + n * n_groups, at_g + n_groups
    for p in range(size):
        yf[np.uint64(entries[p])] = vb[p]
    for q in range(lf.size):  # instances without channels use nothing
        lf[q] = 0.0
    for q in range(groups.size):
        lf[np.uint64(groups[q])] = lb[q]


def project_grouped(
    inst: GainOverheadInstance, z: np.ndarray, method: str = "exact"
) -> tuple[np.ndarray, np.ndarray]:
    """Projection of ``z`` (E, K) onto Y; returns ``(y (E, K), load (R, K))`` where ``load`` is
    the per-instance usage ``sum_{l in L_r} y``. See :func:`project`."""
    shape = (inst.n_edges, inst.n_resources)
    if method == "exact":
        y, load = np.empty(shape), np.empty((inst.n_instances, inst.n_resources))
        zz = np.ascontiguousarray(z, dtype=np.float64).reshape(shape)
        _project_slots(zz, *inst.kernel_arrays.plan, y, load)
        return y, load
    if method == "paper":
        zt = np.asarray(z, dtype=np.float64).ravel()[inst.group_gather]
        v, _ = project_paper(zt.T, inst.group_caps.T, inst.capacities.ravel())
        y = v.T.ravel()[inst.group_scatter].reshape(shape)
        return y, instance_load(inst, y)
    raise ValueError(f"method={method!r} is invalid: must be one of 'exact', 'paper'")


def project(inst: GainOverheadInstance, z: np.ndarray, method: str = "exact") -> np.ndarray:
    """Projection of ``z`` (E, K) onto Y, over all (instance, resource) pairs at once.

    ``method="exact"``: the Euclidean projection (spec §3.4.2). ``method="paper"``: the paper's
    procedure (spec §3.4.1, an ablation; may be infeasible, see
    :func:`schedgym.core.projection.project_paper`).
    """
    return project_grouped(inst, z, method)[0]


@numba.njit(cache=True)
def _ascent_kernel(x: np.ndarray, y: np.ndarray, eta: float, codes: np.ndarray,
                   alpha: np.ndarray, s: float, type_starts: np.ndarray, beta: np.ndarray,
                   plan: tuple, n_inst: int) -> np.ndarray:
    z = _supergradient_kernel(x, y, codes, alpha, s, type_starts, beta, eta, True)
    out, load = np.empty(y.shape), np.empty((n_inst, y.shape[1]))
    _project_slots(z, plan[0], plan[1], plan[2], plan[3], plan[4], out, load)
    return out


def ascent_step(inst: GainOverheadInstance, x: np.ndarray, y: np.ndarray, eta: float
                ) -> np.ndarray:
    """OgaSched's update ``Pi_Y(y + eta * grad_q(x, y))`` (spec ogasched (31)-(32)) with the
    exact projection, in one compiled call; ``y`` ``(E, K)``, ``eta`` > 0."""
    k = inst.kernel_arrays
    return _ascent_kernel(
        np.asarray(x, dtype=np.float64), np.ascontiguousarray(y, dtype=np.float64), float(eta),
        k.codes, k.alpha, k.reciprocal_scale, k.type_starts, k.beta, k.plan, inst.n_instances)


@dataclass(frozen=True)
class BatchOutcome:
    """One slot of ``N`` copies: applied allocations ``y`` ``(N, E, K)`` (resource units),
    ``utilization`` ``(N, R, K)`` in [0, 1], and ``(N,)`` arrays ``distance`` (Euclidean distance
    the projection moved the allocation, resource units), ``gain``, ``penalty``, ``reward``."""

    y: np.ndarray
    utilization: np.ndarray
    distance: np.ndarray
    gain: np.ndarray
    penalty: np.ndarray

    @property
    def reward(self) -> np.ndarray:
        """``gain - penalty`` per copy, ``(N,)``."""
        return self.gain - self.penalty


@numba.njit(cache=True)
def _score_one(z: np.ndarray, x: np.ndarray, plan: tuple, inv_cap: np.ndarray,
               codes: np.ndarray, alpha: np.ndarray,
               s: float, type_starts: np.ndarray, beta: np.ndarray, y: np.ndarray,
               util: np.ndarray, stats: np.ndarray, work: np.ndarray, k_star: np.ndarray,
               sq: np.ndarray) -> None:
    """Projects ``z`` (E, K) onto Y into ``y`` and scores it against ``x`` (L,): ``util`` (R, K)
    gets the utilization, ``stats[:3] = (distance, gain, penalty)``; ``work`` (2, L), ``k_star``
    (L,) and ``sq`` (E * K,) are scratch; ``plan``: the instance's ``ProjectionPlan`` as a
    tuple. The one step formula of the env and the vector env (all arrays C-contiguous)."""
    _project_slots(z, plan[0], plan[1], plan[2], plan[3], plan[4], y, util)
    uf, cf, yf, zf = util.reshape(-1), inv_cap.reshape(-1), y.reshape(-1), z.reshape(-1)
    for i in range(uf.size):  # flat loops: a 2-D one with K = 6 inner steps does not vectorise
        uf[i] = min(uf[i] * cf[i], 1.0)
    for i in range(yf.size):  # the squares in a pass that vectorises, summed in row-major
        sq[i] = (yf[i] - zf[i]) ** 2  # (e, k) order inside the reward's edge-gain pass
    stats[1], stats[2], total = _reward_kernel(x, y, codes, alpha, s, type_starts, beta,
                                               work[0], work[1], k_star, sq)
    stats[0] = np.sqrt(total)


@numba.njit(cache=True)
def _score_batch(z: np.ndarray, x: np.ndarray, plan: tuple, inv_cap: np.ndarray,
                 codes: np.ndarray, alpha: np.ndarray,
                 s: float, type_starts: np.ndarray, beta: np.ndarray, y: np.ndarray,
                 util: np.ndarray, stats: np.ndarray) -> None:
    """:func:`_score_one` for each copy ``i`` of ``z`` (N, E, K) against ``x[i]``."""
    work, ks = np.empty((2, type_starts.size)), np.empty(type_starts.size, dtype=np.int64)
    sq = np.empty(z[0].size)
    for i in range(z.shape[0]):
        _score_one(z[i], x[i], plan, inv_cap, codes, alpha, s, type_starts, beta, y[i],
                   util[i], stats[i], work, ks, sq)


def score_batch(inst: GainOverheadInstance, z: np.ndarray, x: np.ndarray) -> BatchOutcome:
    """Project ``z`` ``(N, E, K)`` (pre-projection allocations in resource units, e.g. decoded
    actions) onto Y and score each copy against its arrivals ``x`` ``(N, L)``.

    The vector env's step; the single env's (:func:`score_action`) runs the same compiled
    formula, so one copy gives the same bits as N.
    """
    E, K, R = inst.n_edges, inst.n_resources, inst.n_instances
    zz = np.ascontiguousarray(z, dtype=np.float64).reshape(-1, E, K)
    n = zz.shape[0]
    y, util, stats = np.empty((n, E, K)), np.empty((n, R, K)), np.empty((n, 3))
    k = inst.kernel_arrays
    _score_batch(zz, np.ascontiguousarray(x, dtype=np.float64).reshape(n, -1), k.plan,
                 k.inverse_capacities, k.codes, k.alpha, k.reciprocal_scale, k.type_starts,
                 k.beta, y, util, stats)
    return BatchOutcome(y, util, stats[:, 0], stats[:, 1], stats[:, 2])


@numba.njit(cache=True)
def all_finite(a: np.ndarray) -> bool:
    """``np.isfinite(a).all()`` of a C-contiguous array without numpy's boolean temporary, in
    a branch-free pass that vectorises (``v - v`` is 0 for a finite ``v``, NaN for NaN/inf)."""
    flat = a.reshape(a.size)
    ok = True
    for i in range(flat.size):
        v = flat[i]
        ok &= (v - v) == 0.0
    return ok


@numba.njit(cache=True)
def clip_decode_unit(a: np.ndarray, upper: np.ndarray, z: np.ndarray) -> float:
    """``z = (clip(a, -1, 1) + 1) / 2 * upper`` entrywise (flat arrays of one length: the
    ``"allocation"`` mode's map from the action box to ``[0, a_l^k]``); returns the clip amount
    ``max |clip(a) - a|`` (0 for an action inside the box), or NaN when an entry of ``a`` is
    NaN or infinite (then ``z`` is garbage). A NaN/inf entry never equals its clipped value, so
    the finite check costs nothing for an action inside the box: it runs in the clip amount's
    pass, which only an action with a clipped entry needs."""
    outside = 0
    for i in range(a.size):
        v = min(max(a[i], -1.0), 1.0)
        outside += 1 if v != a[i] else 0
        z[i] = 0.5 * (v + 1.0) * upper[i]
    moved = 0.0
    if outside:  # a max over the entries does not vectorise: only when something was clipped
        for i in range(a.size):
            if not np.isfinite(a[i]):
                return math.nan
            moved = max(moved, abs(min(max(a[i], -1.0), 1.0) - a[i]))
    return moved


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


@numba.njit(cache=True)
def _step_allocation(a: np.ndarray, x: np.ndarray, upper: np.ndarray, plan: tuple,
                     inv_cap: np.ndarray, codes: np.ndarray,
                     alpha: np.ndarray, s: float, type_starts: np.ndarray, beta: np.ndarray,
                     y: np.ndarray, util: np.ndarray, stats: np.ndarray,
                     util32: np.ndarray) -> int:
    """Finite check, clip, decode, projection and score of one ``"allocation"``-mode action in
    one call; returns the index of the first non-finite entry (nothing else done) or -1. With
    ``stats`` of 5 entries, ``util32`` gets the float32 utilization and ``stats[4]`` its sum
    (:func:`float32_and_sum`)."""
    z = np.empty(y.shape)
    stats[3] = clip_decode_unit(a, upper, z.reshape(-1))
    if np.isnan(stats[3]):  # the search only when there is a bad entry
        for i in range(a.size):
            if not np.isfinite(a[i]):
                return i
    work, ks = np.empty((2, type_starts.size)), np.empty(type_starts.size, dtype=np.int64)
    _score_one(z, x, plan, inv_cap, codes, alpha, s, type_starts, beta, y, util, stats, work,
               ks, np.empty(z.size))
    if stats.size > 4:
        stats[4] = float32_and_sum(util, util32)
    return -1


def score_action(inst: GainOverheadInstance, a: np.ndarray, x: np.ndarray,
                 util32: np.ndarray | None = None
                 ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The single env's step in the ``"allocation"`` mode: ``a`` float64 ``(E*K,)`` (any
    values), ``x`` ``(L,)``. Returns ``(bad, y (E, K), utilization (R, K), stats (4,))`` with
    ``stats = (projection distance, gain, penalty, clip amount)``; ``bad`` is the index of the
    first non-finite entry of ``a`` (then the other outputs are garbage) or -1. With ``util32``
    (float32 ``(R * K,)``) given, it receives the utilization as float32 and ``stats`` has a
    fifth entry, the utilization's sum in numpy's order (:func:`float32_and_sum`): the env's
    observation and info in the same compiled call."""
    k = inst.kernel_arrays
    y = np.empty(inst.edge_caps.shape)
    util = np.empty(inst.capacities.shape)
    if util32 is None:
        stats, util32 = np.empty(4), _NO_UTIL32
    else:
        stats = np.empty(5)
    bad = _step_allocation(a, x, k.upper, k.plan, k.inverse_capacities, k.codes, k.alpha,
                           k.reciprocal_scale, k.type_starts, k.beta, y, util, stats, util32)
    return bad, y, util, stats


def instance_load(inst: GainOverheadInstance, y: np.ndarray) -> np.ndarray:
    """``sum_{l in L_r} y_(l,r)^k``, shape ``(R, K)``, resource units."""
    g = np.where(inst.group_valid, np.asarray(y, dtype=np.float64).ravel()[inst.group_gather], 0.0)
    return g.sum(axis=0).reshape(inst.n_instances, inst.n_resources)


def utilization_from_load(inst: GainOverheadInstance, load: np.ndarray) -> np.ndarray:
    """Fraction of each capacity in use, ``(R, K)`` in [0, 1] (0 where the capacity is 0)."""
    return np.minimum(load * inst.inverse_capacities, 1.0)


def utilization(inst: GainOverheadInstance, y: np.ndarray) -> np.ndarray:
    """Fraction of each capacity in use, ``(R, K)`` in [0, 1] (0 where the capacity is 0)."""
    return utilization_from_load(inst, instance_load(inst, y))


def feasibility_violation(inst: GainOverheadInstance, y: np.ndarray) -> float:
    """Largest violation of Y's constraints (0 when feasible), resource units."""
    y = np.asarray(y, dtype=np.float64)
    box = max(float(np.max(-y, initial=0.0)), float(np.max(y - inst.edge_caps, initial=0.0)))
    cap = float(np.max(instance_load(inst, y) - inst.capacities, initial=0.0))
    return max(box, cap, 0.0)


def is_feasible(inst: GainOverheadInstance, y: np.ndarray, tol: float = FEASIBILITY_TOL) -> bool:
    """``y`` in Y up to ``tol`` (box constraints (5) and capacities (6))."""
    y = np.asarray(y)
    return y.shape == (inst.n_edges, inst.n_resources) and feasibility_violation(inst, y) <= tol
