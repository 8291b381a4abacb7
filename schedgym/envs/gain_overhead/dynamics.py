"""Pure functions of GainOverhead-v0: reward, supergradient, projection, feasibility, step.

Shared by the environment, the vector env, the OgaSched agent, the offline solver and the tests.
An allocation ``y`` is a float64 array ``(E, K)`` in resource units, rows in the instance's edge
order. Arrivals ``x`` are ``(L,)`` (0/1 per slot, or arrival *counts* over a horizon: the reward
is linear in x). :mod:`.reference` states the same step in plain numpy; the tests hold these
kernels to it.

Reward (spec ogasched §1.6, the separable "nice setup")::

    q(x, y) = sum_l x_l [ sum_k sum_{r in R_l} f_r^k(y_(l,r)^k)  -  max_k beta_k Y_l^k ]
    Y_l^k   = sum_{r in R_l} y_(l,r)^k

The compiled kernels (numba, ``cache=True``): the projection (:func:`_project_blocks`, the
(instance, resource) groups laid out as the blocks of the instance's projection plan, one
:func:`~schedgym.core.projection.project_block` per block), the reward (:func:`_score`), the
supergradient (:func:`_supergradient_kernel`) and :func:`_step_body`, the step of the env and of
the vector env in one call: decode, projection, reward, utilization of every copy (one copy is a
batch of one, so both give the same bits), compiled once as :func:`_step_rows`. Every sum runs
in one fixed order with plain loops (no BLAS), so a step gives the same bits in every process on
one machine.

Costs per step, linear in the channels: the target is decoded straight into the block layout
(one gather), projected there, scattered back to the row-major ``(E, K)`` allocation, and the
reward reads that allocation in its own order (one sequential pass: read through the block
layout in the channels' order, it would jump between the blocks at every channel, which gets
slower per channel as the arrays outgrow the CPU's caches). The working arrays are the
instance's (:class:`~.types.StepScratch`), not allocated per step.

Every public function checks the shapes and dtypes of its arrays (:func:`_vector`) before a
kernel runs: the kernels index without bounds checks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from schedgym.core.envbase import first_nonfinite_index
from schedgym.core.projection import WORK_ROWS, project_block, project_paper
from schedgym.core.utilities import map_flat, value_one
from schedgym.envs.gain_overhead.types import GainOverheadInstance, ProjectionPlan, StepScratch

#: Absolute tolerance used by :func:`is_feasible` (resource units).
FEASIBILITY_TOL = 1e-6

#: The columns of a step's ``stats`` (:func:`step_batch` ``(n, 5)``, :func:`step_one` ``(5,)``),
#: in this order (:data:`STATS_FIELDS`): the projection's Euclidean distance (resource units),
#: the gain and the penalty (reward units), the action's clip amount, and the sum of the
#: utilization ``(R K,)`` in numpy's pairwise order (``info["mean_utilization"]``'s numerator).
STAT_DISTANCE, STAT_GAIN, STAT_PENALTY, STAT_CLIP, STAT_USED = range(5)
STATS_FIELDS: tuple[str, ...] = ("distance", "gain", "penalty", "clip", "used")


def _vector(name: str, arr: Any, shape: tuple[int, ...], dtypes: tuple[type, ...] = (np.float64,),
            ) -> np.ndarray:
    """``arr`` as a writable C-contiguous array of ``shape`` (its dtype if one of ``dtypes``,
    else converted to the first), or a ``ValueError`` naming ``name``, the shape got and the
    shape expected (a ``TypeError`` for an array that is not numeric). A read-only array is
    copied: numba compiles a second specialisation for one."""
    a = arr if isinstance(arr, np.ndarray) else np.asarray(arr)
    if a.dtype not in dtypes:
        if not (np.issubdtype(a.dtype, np.number) or a.dtype == np.bool_):
            raise TypeError(f"{name} has dtype {a.dtype}: must be a real numeric array")
        if np.iscomplexobj(a):
            raise TypeError(f"{name} has dtype {a.dtype}: must be real")
        a = a.astype(dtypes[0])
    if a.shape != shape:
        raise ValueError(f"{name} has shape {a.shape}: must have shape {shape}")
    if not (a.flags.c_contiguous and a.flags.writeable):
        a = np.array(a, order="C")
    return a


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
    yy = _vector("y", y, (inst.n_edges, inst.n_resources))
    return np.add.reduceat(yy, inst.type_starts, axis=0)


@numba.njit(cache=True, inline="always")
def _argmax_weighted(tot: np.ndarray, beta: np.ndarray) -> tuple[int, float]:
    """``(k*, max_k beta_k tot_k)`` (lowest k on ties) of one type's totals ``tot`` (K,)."""
    best_k, best = 0, -np.inf
    for k in range(tot.size):
        w = tot[k] * beta[k]
        if w > best:
            best_k, best = k, w
    return best_k, best


@numba.njit(cache=True, inline="always")
def _unit_to_box(v: float, upper: float) -> float:
    """The ``"allocation"`` mode's decode of one entry: ``(clip(v, -1, 1) + 1) / 2 * upper``
    (``v`` float32 or float64; a float32 widens exactly)."""
    return 0.5 * (min(max(v, -1.0), 1.0) + 1.0) * upper


@numba.njit(cache=True)
def _score(lin: bool, y: np.ndarray, z: np.ndarray, decode: bool, caps: np.ndarray,
           codes: np.ndarray, alpha: np.ndarray, s: float, x: np.ndarray, parts: np.ndarray,
           type_starts: np.ndarray, beta: np.ndarray, tot: np.ndarray
           ) -> tuple[float, float, float]:
    """The one reward formula, over the allocation ``y`` ``(E K,)`` row-major (channel ``e``'s
    ``K`` resources at ``e K + k``), every array read in that order (one sequential pass).
    ``z`` ``(E K,)``: the point before the projection, or with ``decode`` the
    ``"allocation"``-mode action it decodes from (:func:`_unit_to_box` with the caps ``caps``
    ``(E K,)``); ``codes``, ``alpha`` ``(E K,)``: the utilities (with ``lin``, every utility
    linear, the gain of an entry is ``alpha * y`` without the per-entry family dispatch, the
    same value); ``s``: the reciprocal scale; ``x`` ``(L,)`` the arrivals; ``parts`` ``(3,
    L)`` gets the per-type gain, penalty and ``k*`` (as a float); ``tot`` ``(K,)``: scratch.
    Returns ``(gain, penalty, sum of (y - z)^2)``.

    Every sum runs in one fixed order from 0.0: a channel's gain over ``k``, a type's gain
    over its channels, ``Y_l^k`` over the type's channels, the squared distance over the
    entries in row-major ``(e, k)`` order, gain and penalty over the types."""
    n_types, n_res = type_starts.size, beta.size
    n_edges = y.size // n_res
    gain = penalty = dist = 0.0
    for l in range(n_types):
        lo = type_starts[l]
        hi = type_starts[l + 1] if l + 1 < n_types else n_edges
        for k in range(n_res):
            tot[k] = 0.0
        type_gain = 0.0
        for e in range(lo, hi):
            channel_gain = 0.0
            for q in range(e * n_res, (e + 1) * n_res):
                val = y[q]
                tot[q - e * n_res] += val
                diff = val - (_unit_to_box(z[q], caps[q]) if decode else z[q])
                dist += diff * diff
                channel_gain += (alpha[q] * val if lin
                                 else value_one(codes[q], alpha[q], val, s))
            type_gain += channel_gain
        k_star, type_penalty = _argmax_weighted(tot, beta)
        parts[0, l], parts[1, l], parts[2, l] = type_gain, type_penalty, k_star
        gain += x[l] * type_gain
        penalty += x[l] * type_penalty
    return gain, penalty, dist


def reward_parts(inst: GainOverheadInstance, x: np.ndarray, y: np.ndarray) -> RewardParts:
    """Reward, gain and penalty of allocation ``y`` (E, K) against arrivals ``x`` (L,)."""
    arrays = inst.kernel_arrays
    xx = _vector("x", x, (inst.n_types,))
    yf = _vector("y", y, (inst.n_edges, inst.n_resources)).reshape(-1)
    parts = np.empty((3, inst.n_types))
    gain, penalty, _ = _score(arrays.all_linear, yf, yf, False, arrays.caps,
                              arrays.codes.reshape(-1), arrays.alpha.reshape(-1),
                              arrays.reciprocal_scale, xx, parts, arrays.type_starts,
                              arrays.beta, np.empty(inst.n_resources))
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

    Per type: ``k*`` from the totals ``Y^k`` (summed over the type's channels in order from
    0.0, as the reward does), ``beta_k*`` taken off the derivative of the ``k*`` entries, then
    ``d * x_l`` (and ``y + eta * (d * x_l)``) over the type's entries."""
    n_types, (n_edges, n_res) = type_starts.size, y.shape
    yf, tot = y.reshape(-1), np.empty(n_res)
    g = map_flat(True, codes.reshape(-1), alpha.reshape(-1), yf, s)  # f'(y), then g in place
    for l in range(n_types):
        lo = type_starts[l]
        hi = type_starts[l + 1] if l + 1 < n_types else n_edges
        for k in range(n_res):
            tot[k] = 0.0
        for e in range(lo, hi):
            for k in range(n_res):
                tot[k] += yf[e * n_res + k]
        ks, xl = _argmax_weighted(tot, beta)[0], x[l]
        for e in range(lo, hi):
            g[e * n_res + ks] -= beta[ks]
        for p in range(lo * n_res, hi * n_res):
            g[p] = yf[p] + eta * (g[p] * xl) if ascend else g[p] * xl
    return g.reshape((n_edges, n_res))


def supergradient(inst: GainOverheadInstance, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Supergradient of ``q(x, .)`` at ``y``, spec ogasched (30), shape ``(E, K)``.

    ``dq/dy_(l,r)^k = x_l (f_r^k'(y) - beta_k 1{k == k*_l})`` with ``k*_l`` the lowest-index
    maximiser of ``beta_k Y_l^k`` (applied to every channel of type ``l``).
    """
    arrays = inst.kernel_arrays
    return _supergradient_kernel(
        _vector("x", x, (inst.n_types,)), _vector("y", y, (inst.n_edges, inst.n_resources)),
        arrays.codes, arrays.alpha, arrays.reciprocal_scale, arrays.type_starts, arrays.beta,
        0.0, False)


@numba.njit(cache=True, inline="always")
def _project_blocks(zb: np.ndarray, plan: ProjectionPlan, n_res: int, vb: np.ndarray,
                    lb: np.ndarray, work: np.ndarray) -> None:
    """Exact projection of the block buffer ``zb`` ``(E K,)`` into ``vb``, block by block
    (:func:`~schedgym.core.projection.project_block`: the groups of the instances with ``n``
    channels are the columns of one ``(n, G_n)`` block, ``G_n`` = their number times ``K =
    n_res``); ``lb`` ``(sum_n G_n,)`` gets the loads of the block columns; ``work``: scratch of
    ``WORK_ROWS`` times the largest block's columns."""
    per_size, caps, capacity = plan.per_size, plan.caps, plan.capacity
    at, at_g = 0, 0
    for n in range(1, per_size.size):
        n_groups = per_size[n] * n_res
        if n_groups == 0:
            continue
        end, end_g = at + n * n_groups, at_g + n_groups
        project_block(zb[at:end].reshape((n, n_groups)), caps[at:end].reshape((n, n_groups)),
                      capacity[at_g:end_g], vb[at:end].reshape((n, n_groups)), lb[at_g:end_g],
                      work[:WORK_ROWS * n_groups].reshape((WORK_ROWS, n_groups)))
        at, at_g = end, end_g


@numba.njit(cache=True, inline="always")
def _spread_load(lb: np.ndarray, groups: np.ndarray, load: np.ndarray) -> None:
    """``load`` ``(R K,)`` = the load of every (instance, resource): the block columns' loads
    ``lb`` moved to their groups' flat indices ``groups`` (``plan.groups``), 0 for instances
    without channels."""
    for q in range(load.size):
        load[q] = 0.0
    for j in range(groups.size):
        load[groups[j]] = lb[j]


@numba.njit(cache=True, inline="always")
def _project_slots(z: np.ndarray, plan: ProjectionPlan, scratch: StepScratch, y: np.ndarray,
                   load: np.ndarray) -> None:
    """Exact projection of ``z`` (E, K) onto Y into ``y`` (E, K); ``load`` (R, K) gets the usage.

    ``plan``: the instance's :class:`~.types.ProjectionPlan` with writable copies of its arrays
    (``kernel_arrays.plan``); ``scratch``: its working arrays (``step_scratch``). ``z`` is
    gathered into the plan's block buffer, projected block by block, and scattered back."""
    entries = plan.entries
    zf, yf = z.reshape(-1), y.reshape(-1)
    zb, vb, lb, work = scratch
    for p in range(entries.size):
        zb[p] = zf[entries[p]]
    _project_blocks(zb, plan, z.shape[1], vb, lb, work)
    for p in range(entries.size):
        yf[entries[p]] = vb[p]
    _spread_load(lb, plan.groups, load.reshape(-1))


def project_grouped(
    inst: GainOverheadInstance, z: np.ndarray, method: str = "exact"
) -> tuple[np.ndarray, np.ndarray]:
    """Projection of ``z`` (E, K) onto Y; returns ``(y (E, K), load (R, K))`` where ``load`` is
    the per-instance usage ``sum_{l in L_r} y``. See :func:`project`."""
    shape = (inst.n_edges, inst.n_resources)
    if method == "exact":
        zz = _vector("z", z, shape)
        y, load = np.empty(shape), np.empty((inst.n_instances, inst.n_resources))
        _project_slots(zz, inst.kernel_arrays.plan, inst.step_scratch, y, load)
        return y, load
    if method == "paper":
        zt = _vector("z", z, shape).ravel()[inst.group_gather]
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
                   plan: ProjectionPlan, scratch: StepScratch, n_inst: int) -> np.ndarray:
    z = _supergradient_kernel(x, y, codes, alpha, s, type_starts, beta, eta, True)
    out, load = np.empty(y.shape), np.empty((n_inst, y.shape[1]))
    _project_slots(z, plan, scratch, out, load)
    return out


def ascent_step(inst: GainOverheadInstance, x: np.ndarray, y: np.ndarray, eta: float
                ) -> np.ndarray:
    """OgaSched's update ``Pi_Y(y + eta * grad_q(x, y))`` (spec ogasched (31)-(32)) with the
    exact projection, in one compiled call; ``y`` ``(E, K)``, ``eta`` > 0."""
    arrays = inst.kernel_arrays
    return _ascent_kernel(
        _vector("x", x, (inst.n_types,)), _vector("y", y, (inst.n_edges, inst.n_resources)),
        float(eta), arrays.codes, arrays.alpha, arrays.reciprocal_scale, arrays.type_starts,
        arrays.beta, arrays.plan, inst.step_scratch, inst.n_instances)


def all_finite(a: np.ndarray) -> bool:
    """``np.isfinite(a).all()`` of a float array without numpy's boolean temporary."""
    arr = np.asarray(a)
    if arr.dtype.kind != "f":
        raise TypeError(f"a has dtype {arr.dtype}: must be a float array")
    return bool(_all_finite(np.ascontiguousarray(arr)))


@numba.njit(cache=True)
def _all_finite(a: np.ndarray) -> bool:
    """:func:`all_finite` of a C-contiguous array (``v - v`` is 0 for a finite ``v``, NaN for
    NaN/inf)."""
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
def _decode(a: np.ndarray, upper: np.ndarray, z: np.ndarray) -> float:
    """The ``"allocation"`` mode's decode ``z = (clip(a, -1, 1) + 1) / 2 * upper`` entrywise
    (flat arrays of one length). Returns the clip amount ``max |clip(a) - a|`` (0 for an action
    inside the box), or NaN when an entry of ``a`` is NaN or infinite (then ``z`` is garbage).
    A NaN/inf entry never equals its clipped value, so only an action with a clipped entry
    needs the clip amount's pass, which also finds NaN/inf."""
    outside = False
    for i in range(a.size):
        v = a[i]
        outside |= min(max(v, -1.0), 1.0) != v
        z[i] = _unit_to_box(v, upper[i])
    return _clip_amount(a) if outside else 0.0


def clip_decode_unit(a: np.ndarray, upper: np.ndarray, z: np.ndarray) -> float:
    """``z = (clip(a, -1, 1) + 1) / 2 * upper`` entrywise (float64 arrays of one length
    ``n``: the ``"allocation"`` mode's map from the action box to ``[0, a_l^k]``); returns the
    clip amount ``max |clip(a) - a|`` (0 for an action inside the box), or NaN when an entry of
    ``a`` is NaN or infinite (then ``z`` is garbage). ``z`` must be a writable C-contiguous
    float64 array (it is written in place)."""
    n = np.size(upper)
    aa = _vector("a", a, (n,), (np.float64,))
    uu = _vector("upper", upper, (n,))
    if not (isinstance(z, np.ndarray) and z.dtype == np.float64 and z.shape == (n,)
            and z.flags.c_contiguous and z.flags.writeable):
        got = z.shape if isinstance(z, np.ndarray) else type(z).__name__
        raise ValueError(f"z has shape {got}: must be a writable C-contiguous float64 array "
                         f"of shape ({n},)")
    return float(_decode(aa, uu, z))


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
def _utilization(lb: np.ndarray, groups: np.ndarray, inv_cap: np.ndarray, util: np.ndarray,
                 util32: np.ndarray) -> None:
    """``util`` ``(R K,)`` = ``min(load / capacity, 1)`` from the block columns' loads ``lb``
    (0 where the capacity is 0), ``util32`` the same as float32 (the observation's)."""
    _spread_load(lb, groups, util)
    for i in range(util.size):
        util[i] = min(util[i] * inv_cap[i], 1.0)
        util32[i] = util[i]


@numba.njit(cache=True, inline="always")
def _gather_target(target: np.ndarray, decode: bool, entries: np.ndarray, caps: np.ndarray,
                   zb: np.ndarray) -> float:
    """The target ``target`` ``(E K,)`` into the plan's block layout ``zb`` (``zb[p] =
    target[entries[p]]``); with ``decode`` it is an ``"allocation"``-mode action, decoded on
    the way (:func:`_unit_to_box` with ``caps``, the caps in the block layout, ``plan.caps``).
    Returns the action's clip amount ``max |clip(a) - a|`` (0 without ``decode``), NaN when
    an entry is NaN or infinite (then ``zb`` is garbage): a NaN/inf entry never equals its
    clipped value, so only an action with a clipped entry needs :func:`_clip_amount`'s pass."""
    if not decode:
        for p in range(entries.size):
            zb[p] = target[entries[p]]
        return 0.0
    outside = False
    for p in range(entries.size):
        v = target[entries[p]]
        outside |= min(max(v, -1.0), 1.0) != v
        zb[p] = _unit_to_box(v, caps[p])
    return _clip_amount(target) if outside else 0.0


@numba.njit(cache=True, inline="always")
def _step_body(a: np.ndarray, rows: np.ndarray, decode: bool, x: np.ndarray,
               plan: ProjectionPlan, caps: np.ndarray, inv_cap: np.ndarray, codes: np.ndarray,
               alpha: np.ndarray, lin: bool, s: float, type_starts: np.ndarray,
               beta: np.ndarray, scratch: StepScratch, y: np.ndarray, util: np.ndarray,
               util32: np.ndarray, stats: np.ndarray) -> int:
    """The step of ``n = rows.size`` copies; copy ``c`` plays ``a[rows[c]]`` ``(E K,)``: with
    ``decode`` an ``"allocation"``-mode action (float32 or float64, any values), else a
    float64 target in resource units (a learnable mode's). Each copy's target is gathered
    (and decoded) into the plan's block layout (:func:`_gather_target`), projected onto Y
    (:func:`_project_blocks`), scattered back into its row of ``y`` and scored against
    ``x[c]`` in row-major order (:func:`_score`, which decodes the action again entry by
    entry for the projection distance rather than keeping a third ``(E K,)`` array).
    ``caps``, ``codes``, ``alpha`` ``(E K,)``: the caps and utilities row-major
    (``kernel_arrays``); ``lin``: every utility is linear; ``scratch``: the instance's
    working arrays (``step_scratch``).

    Outputs, row ``c`` per copy: ``y`` ``(n, E K)``, ``util`` and ``util32`` ``(n, R K)``, and
    ``stats[c, :4]`` = (projection distance, gain, penalty, clip amount). Returns -1, or the
    first copy whose action has a NaN/inf entry (then the outputs from that copy on are
    garbage). One copy gives the same bits alone as in a batch."""
    n, n_res = rows.size, beta.size
    entries = plan.entries
    zb, vb, lb, work = scratch
    parts, tot = np.empty((3, type_starts.size)), np.empty(n_res)
    for c in range(n):
        target, yc = a[rows[c]], y[c]
        clip = _gather_target(target, decode, entries, plan.caps, zb)
        if np.isnan(clip):
            return c
        _project_blocks(zb, plan, n_res, vb, lb, work)
        for p in range(entries.size):  # back to the row-major (e, k) order
            yc[entries[p]] = vb[p]
        gain, penalty, dist = _score(lin, yc, target, decode, caps, codes, alpha, s, x[c],
                                     parts, type_starts, beta, tot)
        stats[c, STAT_DISTANCE], stats[c, STAT_GAIN] = np.sqrt(dist), gain
        stats[c, STAT_PENALTY], stats[c, STAT_CLIP] = penalty, clip
        _utilization(lb, plan.groups, inv_cap, util[c], util32[c])
    return -1


@numba.njit(cache=True)
def _step_rows(a: np.ndarray, rows: np.ndarray, decode: bool, x: np.ndarray,
               plan: ProjectionPlan, caps: np.ndarray, inv_cap: np.ndarray, codes: np.ndarray,
               alpha: np.ndarray, lin: bool, s: float, type_starts: np.ndarray,
               beta: np.ndarray, scratch: StepScratch, y: np.ndarray, util: np.ndarray,
               util32: np.ndarray, stats: np.ndarray) -> int:
    """:func:`_step_body`, compiled: the step of the single env and of the native vector env."""
    return _step_body(a, rows, decode, x, plan, caps, inv_cap, codes, alpha, lin, s,
                      type_starts, beta, scratch, y, util, util32, stats)


def step_batch(inst: GainOverheadInstance, a: np.ndarray, rows: np.ndarray, x: np.ndarray,
               decode: bool) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One step of ``len(rows)`` copies in one compiled call (:func:`_step_rows`): copy ``c``
    acts with ``a[rows[c]]`` (``a``: ``(M, E K)``; with ``decode`` ``"allocation"``-mode
    actions, float32 or float64, else float64 targets in resource units) against arrivals
    ``x[c]`` (``x``: ``(len(rows), L)``). ``rows``: integer indices in ``[0, M)``.

    Returns ``(bad, y (n, E, K), utilization (n, R K), its float32 copy, stats (n, 5))`` with
    ``stats`` = (projection distance, gain, penalty, clip amount, utilization sum in numpy's
    order); ``bad`` is -1 or the first copy with a NaN/inf action entry (outputs then
    incomplete). Raises ``ValueError`` for arrays of the wrong shape or rows out of range."""
    E, K = inst.n_edges, inst.n_resources
    rr = np.asarray(rows)
    if rr.ndim != 1 or not (rr.dtype.kind in "iu" or rr.size == 0):
        raise ValueError(f"rows has shape {rr.shape} and dtype {rr.dtype}: must be a 1-D "
                         "integer array")
    n = rr.size
    aa = np.asarray(a)
    if aa.ndim != 2:
        raise ValueError(f"a has shape {aa.shape}: must have shape (M, {E * K})")
    kinds = (np.float64, np.float32) if decode else (np.float64,)
    aa = _vector("a", aa, (aa.shape[0], E * K), kinds)
    if n and (rr.min() < 0 or rr.max() >= aa.shape[0]):
        raise ValueError(f"rows has entries in [{rr.min()}, {rr.max()}]: must lie in "
                         f"[0, {aa.shape[0]}) (the rows of a)")
    return _run(inst, aa, _vector("rows", rr, (n,), (np.int64,)),
                _vector("x", x, (n, inst.n_types)), bool(decode))


def _run(inst: GainOverheadInstance, a: np.ndarray, rows: np.ndarray, x: np.ndarray,
         decode: bool) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The step on arguments already checked (:func:`step_batch`, :func:`step_one`): ``a``
    ``(M, E K)`` (float64, or float32 actions with ``decode``), ``rows`` int64 in ``[0, M)``,
    ``x`` float64 ``(n, L)``, all C-contiguous: one compiled call (:func:`_step_rows`), then
    the utilization sums."""
    arrays, n = inst.kernel_arrays, rows.size
    E, K, RK = inst.n_edges, inst.n_resources, inst.n_instances * inst.n_resources
    y, util = np.empty((n, E, K)), np.empty((n, RK))
    util32, stats = np.empty((n, RK), dtype=np.float32), np.empty((n, len(STATS_FIELDS)))
    bad = _step_rows(a, rows, decode, x, arrays.plan, arrays.caps,
                     arrays.inverse_capacities.reshape(-1), arrays.codes.reshape(-1),
                     arrays.alpha.reshape(-1), arrays.all_linear, arrays.reciprocal_scale,
                     arrays.type_starts, arrays.beta, inst.step_scratch, y.reshape(n, E * K),
                     util, util32, stats)
    if bad >= 0:
        return bad, y, util, util32, stats
    # numpy's own sum of each row (its pairwise order): info["mean_utilization"]'s numerator
    np.add.reduce(util, axis=1, out=stats[:, STAT_USED])
    return -1, y, util, util32, stats


def score_batch(inst: GainOverheadInstance, z: np.ndarray, x: np.ndarray) -> BatchOutcome:
    """Project ``z`` ``(N, E, K)`` (pre-projection allocations in resource units, e.g. decoded
    actions) onto Y and score each copy against its arrivals ``x`` ``(N, L)``
    (:func:`step_batch` without the decode)."""
    E, K = inst.n_edges, inst.n_resources
    zz = np.asarray(z)
    if zz.ndim != 3 or zz.shape[1:] != (E, K):
        raise ValueError(f"z has shape {zz.shape}: must have shape (N, {E}, {K})")
    n = zz.shape[0]
    xx = _vector("x", x, (n, inst.n_types))
    _, y, util, _, stats = step_batch(inst, zz.reshape(n, E * K), np.arange(n), xx, False)
    return BatchOutcome(y, util.reshape(n, inst.n_instances, K), stats[:, STAT_DISTANCE],
                        stats[:, STAT_GAIN], stats[:, STAT_PENALTY])


#: :func:`step_one`'s row of the action: a batch of one.
_ROW0 = np.zeros(1, dtype=np.int64)


def step_one(inst: GainOverheadInstance, a: np.ndarray, x: np.ndarray, decode: bool
             ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The single env's step: :func:`step_batch` for a batch of one, ``a`` ``(E K,)`` (as
    there: an action with ``decode``, float32 or float64, else float64 targets), ``x``
    ``(L,)``. Returns ``(bad, y (E, K), utilization (R K,), its float32 copy, stats (5,))``;
    ``bad`` is the index of the first non-finite entry of ``a`` (then the other outputs are
    garbage) or -1."""
    kinds = (np.float64, np.float32) if decode else (np.float64,)
    aa = _vector("a", a, (inst.n_edges * inst.n_resources,), kinds)
    xx = _vector("x", x, (inst.n_types,))
    bad, y, util, util32, stats = _run(inst, aa.reshape(1, -1), _ROW0, xx.reshape(1, -1),
                                       bool(decode))
    if bad >= 0:
        bad = first_nonfinite_index(aa)
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
    order."""
    RK = inst.n_instances * inst.n_resources
    if util32 is not None and not (isinstance(util32, np.ndarray) and util32.shape == (RK,)
                                   and util32.dtype == np.float32):
        got = util32.shape if isinstance(util32, np.ndarray) else type(util32).__name__
        raise ValueError(f"util32 has shape {got}: must be a float32 array of shape ({RK},)")
    bad, y, util, u32, stats = step_one(inst, a, x, True)
    util = util.reshape(inst.capacities.shape)
    if bad >= 0 or util32 is None:
        return bad, y, util, stats[:4]
    util32[:] = u32
    return bad, y, util, stats


def instance_load(inst: GainOverheadInstance, y: np.ndarray) -> np.ndarray:
    """``sum_{l in L_r} y_(l,r)^k``, shape ``(R, K)``, resource units."""
    yy = _vector("y", y, (inst.n_edges, inst.n_resources))
    g = np.where(inst.group_valid, yy.ravel()[inst.group_gather], 0.0)
    return g.sum(axis=0).reshape(inst.n_instances, inst.n_resources)


def utilization_from_load(inst: GainOverheadInstance, load: np.ndarray) -> np.ndarray:
    """Fraction of each capacity in use, ``(R, K)`` in [0, 1] (0 where the capacity is 0)."""
    ld = _vector("load", load, (inst.n_instances, inst.n_resources))
    return np.minimum(ld * inst.inverse_capacities, 1.0)


def utilization(inst: GainOverheadInstance, y: np.ndarray) -> np.ndarray:
    """Fraction of each capacity in use, ``(R, K)`` in [0, 1] (0 where the capacity is 0)."""
    return utilization_from_load(inst, instance_load(inst, y))


def feasibility_violation(inst: GainOverheadInstance, y: np.ndarray) -> float:
    """Largest violation of Y's constraints (0 when feasible), resource units."""
    y = _vector("y", y, (inst.n_edges, inst.n_resources))
    box = max(float(np.max(-y, initial=0.0)), float(np.max(y - inst.edge_caps, initial=0.0)))
    cap = float(np.max(instance_load(inst, y) - inst.capacities, initial=0.0))
    return max(box, cap, 0.0)


def is_feasible(inst: GainOverheadInstance, y: np.ndarray, tol: float = FEASIBILITY_TOL) -> bool:
    """``y`` in Y up to ``tol`` (box constraints (5) and capacities (6))."""
    y = np.asarray(y)
    return y.shape == (inst.n_edges, inst.n_resources) and feasibility_violation(inst, y) <= tol
