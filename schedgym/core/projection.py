"""Euclidean projection onto capped simplices, batched, compiled with numba.

OgaSched's feasible set is a product over (instance, resource) pairs of

    Y_g = { v in R^n : 0 <= v_i <= a_i,  sum_i v_i <= c }          (spec ogasched §3.4)

:func:`project_capped_simplex` computes the **exact** projection for a whole batch of groups at once
(spec §3.4.2). The solution is ``v(theta) = clip(z - theta, 0, a)`` with ``theta >= 0`` the smallest
value with ``g(theta) = sum_i clip(z_i - theta, 0, a_i) <= c``. ``g`` is continuous, piecewise
linear and non-increasing with breakpoints ``{z_i - a_i} U {z_i}``; we find the two consecutive
breakpoints whose ``g`` values straddle ``c`` and solve the linear equation between them. A group
whose solution lies on g's first linear piece (the common case after a small excess) is solved
there in closed form; otherwise ``g`` is evaluated at every breakpoint (``O(n^2)`` per group, no
sort: groups have a few entries, one per channel of an instance).

One compiled kernel, :func:`project_block`, serves every caller (the batched wrappers here, the
env step and OgaSched's update, :mod:`schedgym.envs.gain_overhead.dynamics`): the groups of one
size are the columns of a block ``(n, G)``, and the loops over the contiguous group axis do the
same branch-free operations for every group, so that the compiler can vectorise them, with one
compiled theta search for every block size (:func:`_theta`). Every sum runs in a fixed order
(entries in row order, from 0.0), so the result does not depend on the CPU.

:func:`project_paper` is the paper's procedure (Alg. 1, steps 6-30) transcribed faithfully, with its
defects fixed only where they crash or leave garbage (members of B2 are set to 0; an empty B3 stops
the inner loop). It is **not** the Euclidean projection in general (it ignores the sign of the
multiplier and checks only the largest entry against its cap), and is kept as an ablation (plain
Python: it is not a hot path).

Padding convention: groups of different sizes are padded to a common ``n`` with ``a = 0`` (and any
finite ``z``); padded entries always come out as 0.
"""

from __future__ import annotations

import math

import numba
import numpy as np

#: Relative safety margin of the final rescaling that removes the solve's rounding excess.
_SHRINK = 1.0 - 4e-16
#: Rows of the scratch array ``work`` of :func:`project_block` (one per-group quantity each).
WORK_ROWS = 1


@numba.njit(cache=True, error_model="numpy")
def _theta(Z: np.ndarray, A: np.ndarray, c: np.ndarray, s0: np.ndarray) -> np.ndarray:
    """Every group's theta ``(G,)`` (a new array), for a block ``Z`` ``(n, G)`` with a group over
    its capacity; ``s0`` ``(G,)`` are the groups' ``g(0)``. Every loop over the groups is
    innermost, contiguous and branch-free, and the per-group state lives in arrays of their own
    (not rows of one array: the compiler then proves they do not overlap), so that one compiled
    version serves every block size and the compiler can still vectorise it.

    Theta on g's first linear piece ``g(theta) = s0 - m theta`` where it lies there, else by
    the bracket search (:func:`_bracket`, run only when some group needs it); 0 for a group
    within its capacity.

    The bracket search: g is non-increasing (also as computed: clips and rounded additions
    are monotone), so the largest breakpoint ``lo`` with ``g > c`` (or 0: ``g(0) = s0 > c``)
    and the smallest ``hi`` with ``g <= c`` (``inf`` if none) are consecutive and g is linear
    between them; g at each breakpoint is a full sum over the entries in row order. When no
    entry of the block exceeds its cap, the cap-leaving breakpoints ``max(z_k - a_k, 0)`` are
    all 0 (or NaN): never above ``lo >= 0`` and, for a group over its capacity, never one with
    ``g <= c``, so they are skipped."""
    n, G = Z.shape
    th, m, first = np.empty(G), np.empty(G), np.empty(G)
    for g in range(G):
        m[g], first[g] = 0.0, math.inf
    for i in range(n):
        for g in range(G):
            zi, ai = Z[i, g], A[i, g]
            d = zi - ai
            first[g] = min(first[g], min(d if d > 0.0 else math.inf, zi if zi > 0.0 else math.inf))
            m[g] += 1.0 if (zi > 0.0) & (d <= 0.0) & (ai > 0.0) else 0.0
    search = False
    for g in range(G):
        sg, cg = s0[g], c[g]
        t1 = (sg - cg) / m[g]  # m = 1 where n = 1 and the piece holds: x / 1.0 = x
        ok = (m[g] > 0.0) & (t1 <= first[g])
        over = sg > cg
        th[g] = (t1 if ok else -1.0) if over else 0.0  # -1: left to the bracket search
        search |= (not ok) & over
    if search:
        _bracket(Z, A, c, s0, th, m, first)
    return th


@numba.njit(cache=True, error_model="numpy", inline="always")
def _bracket(Z: np.ndarray, A: np.ndarray, c: np.ndarray, s0: np.ndarray, th: np.ndarray,
             lo: np.ndarray, hi: np.ndarray) -> None:
    """:func:`_theta`'s bracket search, into ``th`` ``(G,)`` for every group over its capacity
    whose theta is not on g's first linear piece (marked ``th[g] = -1``); see :func:`_theta`.
    ``lo``, ``hi`` ``(G,)``: scratch (separate arrays, as the others here, so that the compiler
    can vectorise the loops)."""
    n, G = Z.shape
    glo, ghi, b, gv = np.empty(G), np.empty(G), np.empty(G), np.empty(G)
    above = False
    for i in range(n):
        for g in range(G):
            above |= Z[i, g] > A[i, g]
    for g in range(G):
        ghi[g] = min(max(Z[0, g] - math.inf, 0.0), A[0, g])  # g(inf), where no hi is met
        lo[g], glo[g], hi[g] = 0.0, s0[g], math.inf
    for i in range(1, n):
        for g in range(G):
            ghi[g] += min(max(Z[i, g] - math.inf, 0.0), A[i, g])
    for j in range(2 * n if above else n):
        k = j - n if j >= n else j
        for g in range(G):
            b[g] = max(Z[k, g] - A[k, g], 0.0) if j >= n else max(Z[k, g], 0.0)
            gv[g] = min(max(Z[0, g] - b[g], 0.0), A[0, g])
        for i in range(1, n):
            for g in range(G):
                gv[g] += min(max(Z[i, g] - b[g], 0.0), A[i, g])
        for g in range(G):
            bg, vg, cg = b[g], gv[g], c[g]
            up, down = (vg > cg) & (bg > lo[g]), (vg <= cg) & (bg < hi[g])
            lo[g], glo[g] = (bg, vg) if up else (lo[g], glo[g])
            hi[g], ghi[g] = (bg, vg) if down else (hi[g], ghi[g])
    for g in range(G):
        lg, gl, hg, gh = lo[g], glo[g], hi[g], ghi[g]
        t2 = lg + (gl - c[g]) * (hg - lg) / (gl - gh) if gl > gh else hg
        th[g] = t2 if th[g] == -1.0 else th[g]


@numba.njit(cache=True, error_model="numpy", inline="always")
def _clip(Z: np.ndarray, A: np.ndarray, c: np.ndarray, V: np.ndarray, load: np.ndarray,
          th: np.ndarray, tot: np.ndarray) -> None:
    """The projection from the groups' thetas ``th`` ``(G,)``: the clip of every group at its
    theta into ``V``, its rounding excess over ``c`` removed by a rescaling, and the groups'
    loads; ``tot`` ``(G,)`` scratch. Loops over the entries outside, over the groups inside
    (contiguous, branch-free): one compiled version serves every block size."""
    n, G = Z.shape
    for g in range(G):
        tot[g] = 0.0
    for i in range(n):
        for g in range(G):
            v = min(max(Z[i, g] - th[g], 0.0), A[i, g])
            V[i, g] = v
            tot[g] += v
    for g in range(G):
        t, cg = tot[g], c[g]
        tot[g] = (cg / t * _SHRINK if t > 0.0 else 1.0) if t > cg else 1.0  # rounding excess
        load[g] = 0.0
    for i in range(n):
        for g in range(G):
            v = V[i, g] * tot[g]
            V[i, g] = v
            load[g] += v


@numba.njit(cache=True, error_model="numpy", inline="always")
def project_block(Z: np.ndarray, A: np.ndarray, c: np.ndarray, V: np.ndarray, load: np.ndarray,
                  work: np.ndarray) -> None:
    """Exact projection of every column ``Z[:, g]`` of ``Z`` ``(n, G)`` (a group of ``n``
    entries) onto ``{0 <= v <= A[:, g], sum v <= c[g]}`` into ``V[:, g]``; ``load[g]`` gets the
    group's sum. ``A``, ``V``: ``(n, G)``; ``c``, ``load``: ``(G,)``; ``work``: ``(WORK_ROWS,
    G)`` scratch (all C-contiguous float64). Units are the caller's (resource units in
    GainOverhead).

    A block with no group over its capacity is the clip of every group to its box, its loads
    the clipped sums (theta = 0 for all: the same values the general case would give);
    otherwise the thetas by :func:`_theta`, then :func:`_clip`."""
    n, G = Z.shape
    if (A.shape != Z.shape or V.shape != Z.shape or c.size != G or load.size != G
            or work.shape[0] < WORK_ROWS or work.shape[1] != G):
        raise ValueError("project_block: A and V must have Z's shape (n, G), c and load G "
                         "entries, work (WORK_ROWS, G)")
    s0 = work[0]
    for g in range(G):
        s0[g] = 0.0
    for i in range(n):
        for g in range(G):
            s0[g] += min(max(Z[i, g], 0.0), A[i, g])
    over = False
    for g in range(G):
        over |= s0[g] > c[g]
    if over:
        th = _theta(Z, A, c, s0)
        _clip(Z, A, c, V, load, th, s0)  # s0 is spent: it holds the clips' totals
        return
    for i in range(n):
        for g in range(G):
            V[i, g] = min(max(Z[i, g], 0.0), A[i, g])
    for g in range(G):
        load[g] = s0[g]


@numba.njit(cache=True)
def _project_columns(zt: np.ndarray, at: np.ndarray, c: np.ndarray) -> np.ndarray:
    n, n_groups = zt.shape
    out, load = np.empty((n, n_groups)), np.empty(n_groups)
    project_block(zt, at, c, out, load, np.empty((WORK_ROWS, n_groups)))
    return out


def project_columns(zt: np.ndarray, at: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Exact projection in the (entries, groups) layout: column ``g`` of ``zt`` ``(n, G)`` onto
    ``{0 <= v <= at[:, g], sum v <= c[g]}``; returns ``v`` ``(n, G)`` float64."""

    def arg(a: np.ndarray) -> np.ndarray:  # C-contiguous writable float64: one compiled kernel
        return np.require(a, dtype=np.float64, requirements=["C", "W"])

    z2, a2, c1 = arg(zt), arg(at), arg(np.asarray(c).reshape(-1))
    if z2.ndim != 2:
        raise ValueError(f"zt has shape {z2.shape}: must be 2-D (entries, groups)")
    if a2.shape != z2.shape:
        raise ValueError(f"at has shape {a2.shape}: must have zt's shape {z2.shape}")
    if c1.shape != z2.shape[1:]:
        raise ValueError(f"c has shape {np.shape(c)}: must have {z2.shape[1]} entries (one per "
                         "group)")
    return _project_columns(z2, a2, c1)


def project_capped_simplex(z: np.ndarray, a: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Exact Euclidean projection of each row of ``z`` onto ``{0 <= v <= a, sum v <= c}``.

    Args:
        z: points, shape ``(G, n)`` (any leading batch shape ``(..., n)`` works).
        a: per-entry caps ``>= 0``, same shape as ``z``.
        c: per-group capacities ``>= 0``, shape ``(G,)`` (``z.shape[:-1]``).

    Returns:
        ``v`` of the same shape as ``z``, with ``0 <= v <= a`` exactly and ``v.sum(-1) <= c`` up
        to the rounding of the sum itself (a final rescaling removes the solve's rounding
        excess; summing the entries in another order can still differ from ``c`` by an ulp).
    """
    z = np.asarray(z, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    if z.ndim < 1:
        raise ValueError(f"z has shape {z.shape}: must have at least 1 dimension")
    if a.shape != z.shape:
        raise ValueError(f"a has shape {a.shape}: must have z's shape {z.shape}")
    n = z.shape[-1]
    zt = np.ascontiguousarray(z.reshape(-1, n).T)
    at = np.ascontiguousarray(a.reshape(-1, n).T)
    c = np.asarray(c, dtype=np.float64)
    c2 = (c if c.shape == z.shape[:-1] else np.broadcast_to(c, z.shape[:-1])).reshape(-1)
    return project_columns(zt, at, c2).T.reshape(z.shape)


def project_paper(z: np.ndarray, a: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, int]:
    """The paper's projection procedure (Alg. 1 steps 6-30), for the ablation
    ``projection="paper"``.

    Same arguments as :func:`project_capped_simplex`; entries with ``a == 0`` in a row are treated
    as padding (not members of ``L_r``). Returns ``(v, inner_loop_repeats)``, the total number of
    inner-loop executions (the paper reports this count is much smaller than ``|L|``).

    The output may violate the caps or move mass upward when capacity is slack (paper defects 1 and
    2 of spec §3.4.1); callers that need feasibility must check it.
    """
    z = np.asarray(z, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    batch_shape = z.shape[:-1]
    n = z.shape[-1]
    z2 = z.reshape(-1, n)
    a2 = a.reshape(-1, n)
    c2 = np.broadcast_to(np.asarray(c, dtype=np.float64), batch_shape).reshape(-1)
    out = np.zeros_like(z2)
    repeats = 0
    for gi in range(z2.shape[0]):
        members = np.flatnonzero(a2[gi] > 0)
        if members.size == 0:
            continue
        zg, ag, cg = z2[gi, members], a2[gi, members], c2[gi]
        order = np.argsort(-zg, kind="stable")
        first = order[0]
        yhat = np.zeros_like(zg)
        initialized = False
        while True:
            if not initialized:
                b1: set[int] = set()
                b3 = set(range(len(zg)))
                yhat[:] = 0.0
                initialized = True
            elif yhat[first] > ag[first] and first not in b1:
                b1 = {first}
                b3 = set(range(len(zg))) - b1
            else:
                break
            b2: set[int] = set()
            while True:  # inner "repeat" loop
                repeats += 1
                if not b3:  # empty-B3 guard (defect 4): nothing free, write the caps
                    for li in b1:
                        yhat[li] = ag[li]
                    break
                half_rho = (zg[list(b3)].sum() - cg + ag[list(b1)].sum()) / len(b3)
                s: list[int] = []
                for pos, li in enumerate(order):
                    if li in b1:
                        yhat[li] = ag[li]
                    elif li in b3:
                        yhat[li] = zg[li] - half_rho
                        if yhat[li] < 0:
                            s = [int(x) for x in order[pos:] if x in b3]
                            break
                b2 |= set(s)
                b3 -= set(s)
                for li in b2:  # defect 3: members of B2 are set to 0
                    yhat[li] = 0.0
                if not s:
                    break
        out[gi, members] = yhat
    return out.reshape(z.shape), repeats
