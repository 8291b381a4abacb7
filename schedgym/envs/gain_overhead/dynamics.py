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
(:func:`reward_parts`, one pass over the channels, :func:`_score_pair`), the supergradient
(:func:`supergradient`), and :func:`step_batch`, the step of the env and of the vector env in
one call: decode, projection, reward, utilization of every copy (one copy = a batch of one, so
both give the same bits; :func:`score_batch` and :func:`score_action` are its pre-decoded and
single-copy forms).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from schedgym.core.envbase import first_nonfinite_index
from schedgym.core.pairwise import STACK, np_sum_with
from schedgym.core.projection import WORK_ROWS, project_block, project_paper
from schedgym.core.utilities import map_flat, map_flat_into
from schedgym.core.views import borrow_block, borrow_row
from schedgym.envs.gain_overhead.lanes import decode_lanes, reward_lanes
from schedgym.envs.gain_overhead.types import GainOverheadInstance

#: Absolute tolerance used by :func:`is_feasible` (resource units).
FEASIBILITY_TOL = 1e-6

#: A start index that numba types as int64, not as the literal 0 (a literal argument compiles
#: a second specialisation of ``np_sum_with``).
_ZERO: Any = np.int64(0)


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


@numba.njit(cache=True, inline="always")
def _argmax_weighted(tot: np.ndarray, beta: np.ndarray) -> tuple[int, float]:
    """``(k*, max_k beta_k tot_k)`` (lowest k on ties) of one type's totals ``tot`` (K,)."""
    best_k, best = 0, -np.inf
    for k in range(tot.size):
        w = tot[k] * beta[k]
        if w > best:
            best_k, best = k, w
    return best_k, best


@numba.njit(cache=True)
def _column_sums(v: np.ndarray, n_cols: int, lo: int, hi: int, out: np.ndarray) -> None:
    """``out[j] = sum_{i = lo}^{hi - 1} v[i * n_cols + j]`` for each column ``j`` of the flat
    row-major ``v`` (``out``: ``(n_cols,)``), summed over the rows in order starting at 0.0:
    ``Y^k`` of one type for the supergradient, in the order the reward pass
    (:func:`_score_pair`) adds them. Four columns at a time as independent chains (then two,
    then one); unsigned indices, so numba adds no negative-index wraparound select."""
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


#: The number of resources ``K`` compiled as a constant into copies of the step's K-dependent
#: pieces (:func:`_score_pair`, :func:`_step_rows`): the default and largest generated
#: ``n_resources``, every shipped scenario's.
STATIC_K = 6


@numba.njit(cache=True, inline="always")
def _channel_lanes(lin: bool | None, v: np.ndarray, f: np.ndarray, z: np.ndarray,
                   y: np.ndarray, tot: np.ndarray, p: np.uint64, q: np.uint64, n_res: int, d: float,
                   eg: float) -> tuple[float, float]:
    """One channel's ``n_res`` entries of the reward pass (``v``, ``f``, ``z`` at the block run
    ``p``, ``y`` row-major at ``q``) in chunks of 4, 2 and 1 entries
    (:func:`.lanes.reward_lanes`); returns the running distance and the channel's gain. With
    ``n_res`` a literal the chunks are straight code."""
    k = 0
    while k + 4 <= n_res:
        d, eg = reward_lanes(4, lin, v, f, z, y, tot, p + np.uint64(k), q + np.uint64(k), k, d,
                             eg)
        k += 4
    if k + 2 <= n_res:
        d, eg = reward_lanes(2, lin, v, f, z, y, tot, p + np.uint64(k), q + np.uint64(k), k, d,
                             eg)
        k += 2
    if k < n_res:
        d, eg = reward_lanes(1, lin, v, f, z, y, tot, p + np.uint64(k), q + np.uint64(k), k, d,
                             eg)
    return d, eg


@numba.njit(cache=True, inline="always")
def _score_pass(two: bool, lin: bool | None, v0: np.ndarray, f0: np.ndarray, z0: np.ndarray,
                y0: np.ndarray, x0: np.ndarray, p0: np.ndarray, v1: np.ndarray, f1: np.ndarray,
                z1: np.ndarray, y1: np.ndarray, x1: np.ndarray, p1: np.ndarray,
                edge_start: np.ndarray, type_starts: np.ndarray, beta: np.ndarray,
                tot: np.ndarray, n_res: int) -> tuple[float, float, float, float, float, float]:
    """:func:`_score_pair`'s pass, ``n_res = K`` (a literal or not)."""
    n_types, n_edges = type_starts.size, edge_start.size
    tot0, tot1 = tot[0], tot[1]
    g0 = pen0 = d0 = g1 = pen1 = d1 = 0.0
    for l in range(n_types):
        lo = type_starts[l]
        hi = type_starts[l + 1] if l + 1 < n_types else n_edges
        for k in range(n_res):
            tot0[k] = 0.0
            tot1[k] = 0.0
        tg0 = tg1 = 0.0
        for e in range(lo, hi):
            p, q = np.uint64(edge_start[np.uint64(e)]), np.uint64(e * n_res)
            d0, eg0 = _channel_lanes(lin, v0, f0, z0, y0, tot0, p, q, n_res, d0, 0.0)
            tg0 += eg0
            if two:  # with linear utilities f1 is f0 (alpha)
                d1, eg1 = _channel_lanes(lin, v1, f0 if lin is not None else f1, z1, y1, tot1,
                                         p, q, n_res, d1, 0.0)
                tg1 += eg1
        k0, pn0 = _argmax_weighted(tot0, beta)
        p0[0, l], p0[1, l], p0[2, l] = tg0, pn0, k0
        g0 += x0[l] * tg0
        pen0 += x0[l] * pn0
        if two:
            k1, pn1 = _argmax_weighted(tot1, beta)
            p1[0, l], p1[1, l], p1[2, l] = tg1, pn1, k1
            g1 += x1[l] * tg1
            pen1 += x1[l] * pn1
    return g0, pen0, d0, g1, pen1, d1


@numba.njit(cache=True)
def _score_pair(two: bool, lin: bool | None, v0: np.ndarray, f0: np.ndarray, z0: np.ndarray,
                y0: np.ndarray, x0: np.ndarray, p0: np.ndarray, v1: np.ndarray, f1: np.ndarray,
                z1: np.ndarray, y1: np.ndarray, x1: np.ndarray, p1: np.ndarray,
                edge_start: np.ndarray, type_starts: np.ndarray, beta: np.ndarray,
                tot: np.ndarray) -> tuple[float, float, float, float, float, float]:
    """The one reward formula, for one copy or two (``two``) in one pass: copy ``c``'s
    allocation is read from ``v_c`` (flat, channel ``e``'s ``K`` resources at ``edge_start[e] +
    k``: the projection's block buffer, or ``y`` itself with ``edge_start = e K``), with its
    utilities ``f_c = f(v_c)`` in the same layout (:func:`~schedgym.core.utilities.map_flat`;
    with ``lin`` ``True`` (not ``None``), every utility linear, ``f_c`` is ``alpha`` in that
    layout and the pass takes ``alpha * v``, the same product, reading ``f_0`` for both
    copies; numba compiles the pass for each, without the test in the loop), and copied to
    ``y_c`` ``(E K,)`` row-major; ``x_c`` ``(L,)`` are its arrivals, ``p_c`` ``(3, L)`` gets
    the per-type gain, penalty and ``k*`` (as a float); ``z_c`` ``(E K,)`` is the point before
    the projection, in ``v_c``'s layout. Returns
    ``(gain, penalty, sum of (y - z)^2)`` of copy 0, then of copy 1 (zeros without ``two``;
    the copy-1 arguments are then ignored). ``tot``: ``(2, K)`` scratch.

    Every sum runs in one fixed order from 0.0: a channel's gain ``sum_k f(y)`` over ``k``, a
    type's gain over its channels, ``Y_l^k`` over the type's channels, the squared distance
    over the entries in row-major ``(e, k)`` order, gain and penalty over the types. The
    distance's sum is one chain of dependent additions (a few cycles each); the second copy's
    chain runs beside the first's, and the other work of the pass fills the wait.

    A channel's entries are handled in vector chunks (:mod:`.lanes`: the same operations in
    the same order, so the same bits). For ``K = STATIC_K`` a copy of the pass compiled with
    ``K`` as a constant runs (the chunks of a channel then straight code, no loop or test),
    else one with ``K`` a variable."""
    if beta.size == STATIC_K:
        return _score_pass(two, lin, v0, f0, z0, y0, x0, p0, v1, f1, z1, y1, x1, p1, edge_start,
                           type_starts, beta, tot, STATIC_K)
    return _score_pass(two, lin, v0, f0, z0, y0, x0, p0, v1, f1, z1, y1, x1, p1, edge_start,
                       type_starts, beta, tot, beta.size)


def reward_parts(inst: GainOverheadInstance, x: np.ndarray, y: np.ndarray) -> RewardParts:
    """Reward, gain and penalty of allocation ``y`` (E, K) against arrivals ``x`` (L,)."""
    k = inst.kernel_arrays
    yf = np.ascontiguousarray(y, dtype=np.float64).reshape(-1)
    f = map_flat(False, k.codes.reshape(-1), k.alpha.reshape(-1), yf, k.reciprocal_scale)
    parts = np.empty((3, inst.n_types))
    gain, penalty, *_ = _score_pair(
        False, None, yf, f, yf, np.empty(yf.size), np.ascontiguousarray(x, dtype=np.float64),
        parts, yf, f, yf, yf, parts[0], parts, np.arange(inst.n_edges) * inst.n_resources,
        k.type_starts, k.beta, np.empty((2, inst.n_resources)))
    return RewardParts(gain - penalty, gain, penalty, parts[0], parts[1],
                       parts[2].astype(np.int64))


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


@numba.njit(cache=True, inline="always")
def _move_runs(src: np.ndarray, dst: np.ndarray, starts: np.ndarray, width: int) -> None:
    """``dst[starts[e] + k] = src[e * width + k]`` for every run ``e`` and ``k < width``, a
    run of ``width = K`` contiguous entries on both sides: the move of a row-major ``(E, K)``
    allocation into the plan's block buffer (``starts`` = its ``edge_start``, a run per
    channel), and of the block columns' loads to the instances' rows of ``(R, K)`` (``starts``
    = ``plan.groups[::K]``, a run per instance; :func:`_spread_load`). Each run is moved in
    chunks of 4, 2 and 1 entries, every chunk's loads before its stores, so that LLVM packs a
    chunk into one vector load and store (loads and stores interleaved could not be reordered:
    numba's arrays may alias)."""
    fours, rest = width - width % 4, width % 4
    for e in range(starts.size):
        p, q = np.uint64(starts[e]), np.uint64(e * width)
        if fours:  # the first chunk of 4 outside the loop: no loop for K < 8
            a0, a1, a2, a3 = src[q], src[q + np.uint64(1)], src[q + np.uint64(2)], src[
                q + np.uint64(3)]
            dst[p], dst[p + np.uint64(1)], dst[p + np.uint64(2)], dst[p + np.uint64(3)] = (
                a0, a1, a2, a3)
        for k in range(4, fours, 4):
            i, j = q + np.uint64(k), p + np.uint64(k)
            a0, a1, a2, a3 = src[i], src[i + np.uint64(1)], src[i + np.uint64(2)], src[
                i + np.uint64(3)]
            dst[j], dst[j + np.uint64(1)], dst[j + np.uint64(2)], dst[j + np.uint64(3)] = (
                a0, a1, a2, a3)
        i, j = q + np.uint64(fours), p + np.uint64(fours)
        if rest >= 2:
            a0, a1 = src[i], src[i + np.uint64(1)]
            dst[j], dst[j + np.uint64(1)] = a0, a1
            i, j = i + np.uint64(2), j + np.uint64(2)
        if rest % 2:
            dst[j] = src[i]


@numba.njit(cache=True)
def _project_blocks(zb: np.ndarray, plan: tuple, n_res: int, vb: np.ndarray, lb: np.ndarray,
                    work: np.ndarray) -> None:
    """Exact projection of the block buffer ``zb`` ``(E K,)`` into ``vb``, block by block
    (:func:`~schedgym.core.projection.project_block`: the groups of the instances with ``n``
    channels are the columns of one ``(n, G_n)`` block, ``G_n`` = their number times ``K =
    n_res``); ``lb`` ``(sum_n G_n,)`` gets the loads of the block columns; ``work``: scratch of
    ``WORK_ROWS`` times the largest block's columns. The blocks are borrowed views
    (:mod:`schedgym.core.views`: no atomic reference counts)."""
    per_size, caps, capacity = plan[2], plan[3], plan[4]
    at, at_g = 0, 0
    for n in range(1, per_size.size):
        n_groups = per_size[n] * n_res
        if n_groups == 0:
            continue
        project_block(borrow_block(zb, at, n, n_groups), borrow_block(caps, at, n, n_groups),
                      borrow_block(capacity, at_g, 1, n_groups)[0],
                      borrow_block(vb, at, n, n_groups), borrow_block(lb, at_g, 1, n_groups)[0],
                      borrow_block(work, 0, WORK_ROWS, n_groups))
        at, at_g = at + n * n_groups, at_g + n_groups


@numba.njit(cache=True, inline="always")
def _spread_load(lb: np.ndarray, starts: np.ndarray, lf: np.ndarray, width: int) -> None:
    """``lf`` ``(R K,)`` = the load of every (instance, resource): the block columns' loads
    ``lb``, ``K = width`` per instance, moved to each instance's ``starts`` (``plan.groups[::K]``,
    :func:`_move_runs`), 0 for instances without channels."""
    if starts.size * width < lf.size:
        for q in range(lf.size):
            lf[q] = 0.0
    _move_runs(lb, lf, starts, width)


@numba.njit(cache=True)
def _project_slots(z: np.ndarray, plan: tuple, y: np.ndarray, load: np.ndarray) -> None:
    """Exact projection of ``z`` (E, K) onto Y into ``y`` (E, K); ``load`` (R, K) gets the usage.

    ``plan``: the instance's :class:`~.types.ProjectionPlan` as a tuple of its writable copies
    (``kernel_arrays.plan``: with the read-only originals numba would compile the whole solver a
    second time). ``z`` is moved into the plan's block buffer (the groups of the instances with
    ``n`` channels are the columns of one ``(n, G_n)`` block), projected block by block, and
    moved back."""
    n_res, size, n_cols = z.shape[1], plan[0].size, plan[4].size
    buf = np.empty(2 * size + (1 + WORK_ROWS) * n_cols)
    zb, vb = buf[:size], buf[size:2 * size]
    lb, work = buf[2 * size:2 * size + n_cols], buf[2 * size + n_cols:]
    _move_runs(z.reshape(-1), zb, plan[5], n_res)
    _project_blocks(zb, plan, n_res, vb, lb, work)
    yf, entries = y.reshape(-1), plan[0]
    for p in range(size):  # the move back
        yf[np.uint64(entries[p])] = vb[p]
    _spread_load(lb, plan[1][::n_res].copy(), load.reshape(-1), n_res)


def project_grouped(
    inst: GainOverheadInstance, z: np.ndarray, method: str = "exact"
) -> tuple[np.ndarray, np.ndarray]:
    """Projection of ``z`` (E, K) onto Y; returns ``(y (E, K), load (R, K))`` where ``load`` is
    the per-instance usage ``sum_{l in L_r} y``. See :func:`project`."""
    shape = (inst.n_edges, inst.n_resources)
    if method == "exact":
        y, load = np.empty(shape), np.empty((inst.n_instances, inst.n_resources))
        zz = np.ascontiguousarray(z, dtype=np.float64).reshape(shape)
        _project_slots(zz, inst.kernel_arrays.plan, y, load)
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
    _project_slots(z, plan, out, load)
    return out


def ascent_step(inst: GainOverheadInstance, x: np.ndarray, y: np.ndarray, eta: float
                ) -> np.ndarray:
    """OgaSched's update ``Pi_Y(y + eta * grad_q(x, y))`` (spec ogasched (31)-(32)) with the
    exact projection, in one compiled call; ``y`` ``(E, K)``, ``eta`` > 0."""
    k = inst.kernel_arrays
    return _ascent_kernel(
        np.asarray(x, dtype=np.float64), np.ascontiguousarray(y, dtype=np.float64), float(eta),
        k.codes, k.alpha, k.reciprocal_scale, k.type_starts, k.beta, k.plan, inst.n_instances)


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


@numba.njit(cache=True, inline="always")
def _clip_amount(a: np.ndarray) -> float:
    """``max |clip(a, -1, 1) - a|`` over the flat array ``a``, or NaN when an entry is NaN or
    infinite."""
    moved = 0.0
    for i in range(a.size):
        if not np.isfinite(a[i]):
            return math.nan
        moved = max(moved, abs(min(max(a[i], -1.0), 1.0) - a[i]))
    return moved


@numba.njit(cache=True, inline="always")
def clip_decode_unit(a: np.ndarray, upper: np.ndarray, z: np.ndarray) -> float:
    """``z = (clip(a, -1, 1) + 1) / 2 * upper`` entrywise (flat arrays of one length: the
    ``"allocation"`` mode's map from the action box to ``[0, a_l^k]``, by
    :func:`.lanes.decode_lanes`); returns the clip amount ``max |clip(a) - a|`` (0 for an action
    inside the box), or NaN when an entry of ``a`` is NaN or infinite (then ``z`` is garbage).
    A NaN/inf entry never equals its clipped value, so the finite check costs nothing for an
    action inside the box: it runs in the clip amount's pass, which only an action with a
    clipped entry needs."""
    outside, i = 0, 0
    while i + 4 <= a.size:
        outside += decode_lanes(4, a, i, upper, i, z)
        i += 4
    for j in range(i, a.size):
        outside += decode_lanes(1, a, j, upper, j, z)
    return _clip_amount(a) if outside else 0.0


@numba.njit(cache=True, inline="always")
def _decode_runs(a: np.ndarray, upper: np.ndarray, z: np.ndarray, starts: np.ndarray,
                 width: int) -> float:
    """:func:`clip_decode_unit` of the row-major action ``a`` ``(E K,)`` straight into the plan's
    block layout: ``z[starts[e] + k]`` gets entry ``e K + k``, ``upper`` is in the block layout
    too (``plan.caps``), a run of ``width = K`` entries per channel in chunks of 4, 2 and 1
    (straight code for a literal ``width``)."""
    outside = 0
    for e in range(starts.size):
        p, q = np.uint64(starts[e]), np.uint64(e * width)
        k = 0
        while k + 4 <= width:
            outside += decode_lanes(4, a, q + np.uint64(k), upper, p + np.uint64(k), z)
            k += 4
        if k + 2 <= width:
            outside += decode_lanes(2, a, q + np.uint64(k), upper, p + np.uint64(k), z)
            k += 2
        if k < width:
            outside += decode_lanes(1, a, q + np.uint64(k), upper, p + np.uint64(k), z)
    return _clip_amount(a) if outside else 0.0


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


@numba.njit(cache=True, inline="always")
def _utilization(lb: np.ndarray, starts: np.ndarray, width: int, inv_cap: np.ndarray,
                 util: np.ndarray, util32: np.ndarray, index: np.ndarray, values: np.ndarray
                 ) -> float:
    """``util`` ``(R K,)`` = ``min(load / capacity, 1)`` from the block columns' loads ``lb``
    (:func:`_spread_load`: ``starts``, ``width = K``; 0 where the capacity is 0), ``util32``
    the same as float32 (the observation's); returns ``np.add.reduce(util)`` with numpy's bits
    (its pairwise order, from numpy's start value 0.0, which turns a ``-0.0`` total into
    ``0.0``): the numerator of ``info["utilization"]``. ``index``, ``values``: the sum's
    scratch stacks (:func:`~schedgym.core.pairwise.np_sum_with`)."""
    _spread_load(lb, starts, util, width)
    for i in range(util.size):  # flat loops that vectorise
        util[i] = min(util[i] * inv_cap[i], 1.0)
    for i in range(util.size):
        util32[i] = util[i]
    return 0.0 + np_sum_with(util, _ZERO, util.size, index, values)


@numba.njit(cache=True, inline="always")
def _into_blocks(decode: bool, row: np.ndarray, plan: tuple, z: np.ndarray, width: int
                 ) -> float:
    """A copy's row of ``a`` into the plan's block layout ``z``: decoded
    (:func:`_decode_runs`; returns its clip amount, NaN for a NaN/inf entry) or, a target,
    moved as it is (:func:`_move_runs`; returns 0.0). ``width = K``, a literal or not."""
    if decode:
        return _decode_runs(row, plan[3], z, plan[5], width)
    _move_runs(row, z, plan[5], width)
    return 0.0


@numba.njit(cache=True)
def _step_rows(a: np.ndarray, rows: np.ndarray, decode: bool, x: np.ndarray, plan: tuple,
               inv_cap: np.ndarray, codes: np.ndarray, alpha: np.ndarray,
               lin: bool, s: float, type_starts: np.ndarray, beta: np.ndarray, y: np.ndarray,
               util: np.ndarray, util32: np.ndarray, stats: np.ndarray, constant_k: bool = True
               ) -> int:
    """The step of ``n = rows.size`` copies; copy ``c`` acts with row ``rows[c]`` of ``a``. With
    ``decode`` the rows are ``"allocation"``-mode actions (any values; float32 or float64),
    clipped and decoded straight into the plan's block layout (:func:`_decode_runs`); without,
    they are the targets ``(E K,)`` (float64, resource units), moved there (:func:`_move_runs`).
    Each copy's target is projected onto Y (:func:`_project_blocks`)
    and scored against ``x[c]`` (:func:`_score_pair`, two copies per pass); ``codes``, ``alpha``
    ``(E K,)``: the utilities in the plan's block layout (``kernel_arrays.block_codes``,
    ``block_alpha``); ``lin``: every utility is linear (the reward pass then multiplies by
    ``alpha`` itself).

    Outputs, row ``c`` per copy: ``y`` ``(n, E K)``, ``util`` and ``util32`` ``(n, R K)``,
    ``stats`` ``(n, 5)`` = (projection distance, gain, penalty, clip amount (0 without
    ``decode``), utilization sum). Returns -1, or the first copy whose action has a NaN/inf
    entry (then the outputs are incomplete). The one step formula of the env and the vector env:
    one copy gives the same bits alone as in a batch.

    With ``K = STATIC_K`` (and ``constant_k``; the tests turn it off to compare) the decode and
    moves of a channel's or an instance's ``K`` entries and the reward pass run copies compiled
    with ``K`` as a constant (then straight code), else copies with ``K`` a variable; with
    utilities that are not all linear the pass is :func:`_score_pair` (compiled apart: two
    inlined copies of each pass are enough for the compile time)."""
    n, size, n_cols, n_res = rows.size, plan[0].size, plan[4].size, beta.size
    static = constant_k & (n_res == STATIC_K)
    # two of each per-copy buffer (the pair of copies scored together; one copy alone uses
    # only the first), as separate arrays (fresh allocations, which LLVM knows alias nothing)
    zs0, vb0, fb0, lb0 = np.empty(size), np.empty(size), np.empty(size), np.empty(n_cols)
    parts0 = np.empty((3, type_starts.size))
    work = np.empty(WORK_ROWS * n_cols)
    if n > 1:
        zs1, vb1, fb1, lb1 = np.empty(size), np.empty(size), np.empty(size), np.empty(n_cols)
        parts1 = np.empty((3, type_starts.size))
    else:
        zs1, vb1, fb1, lb1, parts1 = zs0, vb0, fb0, lb0, parts0
    zs, vb, fb, lb, parts = (zs0, zs1), (vb0, vb1), (fb0, fb1), (lb0, lb1), (parts0, parts1)
    tot = np.empty((2, n_res))
    index, values = np.empty((3, STACK), dtype=np.int64), np.empty(STACK)
    inv_f, starts = inv_cap.reshape(-1), plan[1][::n_res].copy()
    for c0 in range(0, n, 2):
        m = min(n - c0, 2)
        for j in range(m):
            c = c0 + j
            row = borrow_row(a, rows[c])
            if static:
                stats[c, 3] = _into_blocks(decode, row, plan, zs[j], STATIC_K)
            else:
                stats[c, 3] = _into_blocks(decode, row, plan, zs[j], n_res)
            if np.isnan(stats[c, 3]):
                return c
            _project_blocks(zs[j], plan, beta.size, vb[j], lb[j], work)
            if not lin:
                map_flat_into(False, codes, alpha, vb[j], s, fb[j])
        c1 = c0 + m - 1
        # rows of the caller's arrays as borrowed views (schedgym.core.views: no atomic
        # reference counts; the caller holds the arrays)
        y0, y1, x0, x1 = borrow_row(y, c0), borrow_row(y, c1), borrow_row(x, c0), borrow_row(x, c1)
        if lin and static:
            r = _score_pass(m == 2, True, vb[0], alpha, zs[0], y0, x0, parts[0], vb[1], alpha,
                            zs[1], y1, x1, parts[1], plan[5], type_starts, beta, tot, STATIC_K)
        elif lin:
            r = _score_pass(m == 2, True, vb[0], alpha, zs[0], y0, x0, parts[0], vb[1], alpha,
                            zs[1], y1, x1, parts[1], plan[5], type_starts, beta, tot, n_res)
        else:
            r = _score_pair(m == 2, None, vb[0], fb[0], zs[0], y0, x0, parts[0], vb[1], fb[1],
                            zs[1], y1, x1, parts[1], plan[5], type_starts, beta, tot)
        for j in range(m):
            c = c0 + j
            stats[c, 0], stats[c, 1], stats[c, 2] = np.sqrt(r[3 * j + 2]), r[3 * j], r[3 * j + 1]
            if static:
                stats[c, 4] = _utilization(lb[j], starts, STATIC_K, inv_f, borrow_row(util, c),
                                           borrow_row(util32, c), index, values)
            else:
                stats[c, 4] = _utilization(lb[j], starts, n_res, inv_f, borrow_row(util, c),
                                           borrow_row(util32, c), index, values)
    return -1


def step_batch(inst: GainOverheadInstance, a: np.ndarray, rows: np.ndarray, x: np.ndarray,
               decode: bool) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One step of ``len(rows)`` copies in one compiled call (:func:`_step_rows`): copy ``c``
    acts with ``a[rows[c]]`` (``a`` C-contiguous ``(M, E K)``; with ``decode``
    ``"allocation"``-mode actions, float32 or float64, else float64 targets in resource units)
    against arrivals ``x[c]`` (``x``: ``(len(rows), L)``). ``rows``: int64 indices in ``[0,
    M)``, the caller's to keep (the kernel reads the rows as borrowed views, unchecked).

    Returns ``(bad, y (n, E, K), utilization (n, R K), its float32 copy, stats (n, 5))`` with
    ``stats`` = (projection distance, gain, penalty, clip amount, utilization sum in numpy's
    order); ``bad`` is -1 or the first copy with a NaN/inf action entry (outputs then
    incomplete)."""
    n, k = rows.size, inst.kernel_arrays
    if not a.flags.c_contiguous:  # the kernel reads its rows as C-contiguous views
        a = np.ascontiguousarray(a)
    E, K, RK = inst.n_edges, inst.n_resources, inst.n_instances * inst.n_resources
    y, util = np.empty((n, E, K)), np.empty((n, RK))
    util32, stats = np.empty((n, RK), dtype=np.float32), np.empty((n, 5))
    bad = _step_rows(a, rows, decode, np.ascontiguousarray(x, dtype=np.float64), k.plan,
                     k.inverse_capacities, k.block_codes, k.block_alpha, k.all_linear,
                     k.reciprocal_scale, k.type_starts, k.beta, y.reshape(n, E * K), util, util32,
                     stats)
    return bad, y, util, util32, stats


def score_batch(inst: GainOverheadInstance, z: np.ndarray, x: np.ndarray) -> BatchOutcome:
    """Project ``z`` ``(N, E, K)`` (pre-projection allocations in resource units, e.g. decoded
    actions) onto Y and score each copy against its arrivals ``x`` ``(N, L)``
    (:func:`step_batch` without the decode)."""
    zz = np.ascontiguousarray(z, dtype=np.float64).reshape(-1, inst.n_edges * inst.n_resources)
    n = zz.shape[0]
    _, y, util, _, stats = step_batch(inst, zz, np.arange(n), np.reshape(x, (n, -1)), False)
    return BatchOutcome(y, util.reshape(n, inst.n_instances, inst.n_resources), stats[:, 0],
                        stats[:, 1], stats[:, 2])


#: :func:`step_one`'s row of the action: a batch of one.
_ROW0 = np.zeros(1, dtype=np.int64)


def step_one(inst: GainOverheadInstance, a: np.ndarray, x: np.ndarray, decode: bool
             ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The single env's step: :func:`step_batch` for a batch of one, ``a`` C-contiguous ``(E
    K,)`` (as there: an action with ``decode``, else float64 targets), ``x`` ``(L,)``. Returns
    ``(bad, y (E, K), utilization (R K,), its float32 copy, stats (5,))``; ``bad`` is the index
    of the first non-finite entry of ``a`` (then the other outputs are garbage) or -1."""
    bad, y, util, util32, stats = step_batch(inst, a.reshape(1, -1), _ROW0,
                                             np.reshape(x, (1, -1)), decode)
    if bad >= 0:
        bad = first_nonfinite_index(a)
    return bad, y[0], util[0], util32[0], stats[0]


def score_action(inst: GainOverheadInstance, a: np.ndarray, x: np.ndarray,
                 util32: np.ndarray | None = None
                 ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The single env's step in the ``"allocation"`` mode (:func:`step_one`): ``a``
    float32/float64 ``(E*K,)`` (any values), ``x`` ``(L,)``. Returns ``(bad, y (E, K),
    utilization (R, K), stats (4,))`` with ``stats = (projection distance, gain, penalty, clip
    amount)``; ``bad`` is the index of the first non-finite entry of ``a`` (then the other
    outputs are garbage) or -1. With ``util32`` (float32 ``(R * K,)``) given, it receives the
    utilization as float32 and ``stats`` has a fifth entry, the utilization's sum in numpy's
    order: the env's observation and info in the same compiled call."""
    bad, y, util, u32, stats = step_one(inst, a, x, True)
    util = util.reshape(inst.capacities.shape)
    if bad >= 0 or util32 is None:
        return bad, y, util, stats[:4]
    util32[:] = u32
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
