"""Euclidean projection onto capped simplices, batched, compiled with numba.

OgaSched's feasible set is a product over (instance, resource) pairs of

    Y_g = { v in R^n : 0 <= v_i <= a_i,  sum_i v_i <= c }          (spec ogasched §3.4)

:func:`project_capped_simplex` computes the **exact** projection for a whole batch of groups at once
(spec §3.4.2). The solution is ``v(theta) = clip(z - theta, 0, a)`` with ``theta >= 0`` the smallest
value with ``g(theta) = sum_i clip(z_i - theta, 0, a_i) <= c``. ``g`` is continuous, piecewise
linear and non-increasing with breakpoints ``{z_i - a_i} U {z_i}``; we find the two consecutive
breakpoints whose ``g`` values straddle ``c`` and solve the linear equation between them. A point
that exceeds its capacity only slightly (the common case after float32 action rounding) is solved
on g's first linear piece in closed form; small groups (``n <= SMALL_GROUP``) evaluate ``g`` at
breakpoints (``O(n^2)``, no sort); larger ones sort the slope events and integrate
(``O(n log n)``). One compiled kernel, :func:`project_block`, serves every caller (the batched
wrappers here, the env step and OgaSched's update, :mod:`schedgym.envs.gain_overhead.dynamics`):
the groups of one size are the columns of a block, solved by one branch-free loop over the
contiguous group axis that LLVM vectorises (four groups per AVX2 instruction; groups of a few
entries solved one at a time would cost a branch misprediction per breakpoint). For blocks of 1
to 4 entries per group (every GainOverhead scenario's) that loop is compiled for the size, its
loops over a group's entries unrolled, so that a group's whole solve stays in registers.

:func:`project_paper` is the paper's procedure (Alg. 1, steps 6-30) transcribed faithfully, with its
defects fixed only where they crash or leave garbage (members of B2 are set to 0; an empty B3 stops
the inner loop). It is **not** the Euclidean projection in general (it ignores the sign of the
multiplier and checks only the largest entry against its cap), and is kept as an ablation (plain
Python: it is not a hot path).

Padding convention: groups of different sizes are padded to a common ``n`` with ``a = 0`` (and any
finite ``z``); padded entries always come out as 0.

Skipping the cap-leaving breakpoints when no entry exceeds its cap changes no bit either way:
each is then ``max(z_k - a_k, 0.0)``, ``+-0.0`` or NaN, never above ``lo >= 0`` nor, for a
group over its capacity (``g(+-0.0) = s0 > c``, the terms equal up to zeros' signs), one with
``g <= c``; a group within its capacity is clipped whatever its bracket. The solvers of 1, 2
and 4 entries skip them (one loop each way: LLVM duplicates the loop on the flag); the general
solver of 3 entries (for blocks that are not tame) and that of any ``n`` evaluate them always,
which compiles one loop.

Tame blocks. A block of 2 to 4 entries per group whose every ``z_i`` satisfies ``0 <= z_i <=
a_i``, every ``g(0) = s0 < inf`` (so no ``z_i = inf``) and every ``c >= 0`` (the allocation
decode's points ``z = (clip(a, -1, 1) + 1) / 2 * cap`` are) is solved by a compiled version of
the same solve that leaves out what cannot change a bit there (numba's ``min(x, y)`` is ``y if
y < x else x``, ``max(x, y)`` is ``y if y > x else x``):

* no entry exceeds its cap, so the cap-leaving breakpoints are skipped as in any such block;
* ``g(inf)``'s terms are ``min(max(-inf, 0.0), a_i) = min(0.0, a_i) = +0.0``: ``g(inf) = +0.0``;
* at a breakpoint ``b = max(z_k, 0.0)`` a term ``max(z_i - b, 0.0)`` is at most ``max(z_i, 0.0)
  <= a_i``, so ``min(., a_i)`` returns it unchanged; entry ``k``'s own term is ``+0.0`` (``z_k -
  b`` is ``+0.0`` for ``z_k >= 0``, also ``-0.0 - -0.0``). Every term is ``+0.0``, ``-0.0`` or
  positive, and ``x + +0.0`` is ``x`` unless ``x = -0.0``, so g there is the in-order sum of the
  other entries' terms (started from ``-0.0``, which LLVM folds: ``-0.0 + x = x``), except that
  a zero sum may differ in its sign. A zero g never reaches the result by its sign: with ``c >=
  0``, ``g > c`` is false and ``g <= c`` true for both signs, and it enters ``t2`` only as
  ``ghi`` in ``glo - ghi`` under ``glo > ghi`` (``glo`` positive: ``glo - (+-0.0) = glo``);
* the first piece has no cap-leaving candidate (``z_i - a_i > 0``), ``min(first, inf)`` being
  ``first``;
* theta is ``+0.0`` (within capacity), positive or ``+inf``, never NaN (``t1 = (s0 - c) / m >
  0``; ``t2 >= lo >= 0`` as ``glo > c``, ``hi > lo``, ``glo > ghi``), so ``max(z_i - theta,
  0.0) <= max(z_i, 0.0) <= a_i`` and the clip's ``min(., a_i)`` is left out likewise.

None of this depends on the number of entries ``n``: the blocks of 2, 3 and 4 entries have a
tame solver (on the paper-default instance's random actions the 3-entry one takes about 30 %
fewer instructions than the general one, the 4-entry one about a third of the cycles: 9.5-12
against 12-16 ns per group, cached code); each costs about 1 s of first-use compile. The
1-entry block has no cap-leaving breakpoint to skip and keeps the general solver.

Compilation. :func:`_solve` is inlined into :func:`project_block` (``inline="always"``): numba
otherwise links a separately compiled callee into the process that compiles it, whose loop LLVM
left scalar for 4 entries (it vectorises the copy inside the caller, which a later process loads
from the cache): about 45 against 15 ns per group, in the first process after an install only.
Each group's solve runs in two passes over the block (theta of every group, then the clips and
loads), which keeps each pass's dependent chain short enough for the next groups' work to
overlap it (about 8 % fewer cycles on the paper-default instance).
"""

from __future__ import annotations

import math

import numba
import numpy as np

#: Groups of at most this many entries use the sort-free bracket search (faster for small n).
SMALL_GROUP = 16
#: Relative safety margin of the final rescaling that removes the solve's rounding excess.
_SHRINK = 1.0 - 4e-16
#: Rows of the scratch array ``work`` of :func:`project_block` (one per-group quantity each).
WORK_ROWS = 2


@numba.njit(cache=True)
def _stable_order(key: np.ndarray) -> np.ndarray:
    """Indices that sort ``key`` ascending, ties in index order: ``np.argsort(key,
    kind="stable")`` as a bottom-up merge sort (iterative; numba's generic argsort costs seconds
    of compilation)."""
    n = key.size
    order, other = np.arange(n), np.empty(n, dtype=np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):
                if i < mid and (j >= hi or key[order[j]] >= key[order[i]]):
                    other[k] = order[i]
                    i += 1
                else:
                    other[k] = order[j]
                    j += 1
        order, other = other, order
        width *= 2
    return order


@numba.njit(cache=True)
def _theta_sorted(z: np.ndarray, a: np.ndarray, n: int, c: float, g0: float) -> float:
    """theta for a group with ``g(0) > c`` by sorting the slope events (O(n log n)).

    Slope events: -1 at ``max(z - a, 0)`` (entry leaves its cap), +1 at ``max(z, 0)`` (hits 0).
    """
    pos = np.empty(2 * n)
    w = np.empty(2 * n)
    for i in range(n):
        act = 1.0 if a[i] > 0.0 else 0.0
        pos[i], w[i] = max(z[i] - a[i], 0.0), -act
        pos[n + i], w[n + i] = max(z[i], 0.0), act
    order = _stable_order(pos)
    g, slope, prev = g0, 0.0, pos[order[0]]
    tol = c + 1e-12 * max(1.0, c)
    for j in range(2 * n):
        p = pos[order[j]]
        g_here = g + slope * (p - prev)
        if j > 0 and (g_here <= tol or j == 2 * n - 1):  # g crosses c on [prev, p]
            return prev + (g - c) / -slope if slope < 0.0 else p
        g, prev = g_here, p
        slope += w[order[j]]
    return prev  # not reached: the last event always stops the walk (g(max z) = 0 <= c)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _solve(Z: np.ndarray, A: np.ndarray, c: np.ndarray, V: np.ndarray, load: np.ndarray,
           s0: np.ndarray, th: np.ndarray, rows: tuple[int, ...] | range, tame: bool | None,
           big: bool | None) -> None:
    """:func:`project_block`'s solve for a block with a group over its capacity; ``s0`` are
    the groups' ``g(0)``, ``n = len(rows)`` their entries; ``tame``: ``None``, or ``True`` for
    a tame block (module docstring); ``big``: ``None`` for ``n <= 4`` (numba prunes the ``is
    None`` branches before typing: no sort compiled into the small solvers).

    Per group (first theta of every group into ``th`` ``(G,)``, then the clips): theta on g's
    first linear piece in closed form where it lies there, else by the bracket search (``n <=
    SMALL_GROUP``; first, so that fewer values stay live across the first piece) or
    :func:`_theta_sorted`; the clip at theta, the rounding excess rescaled.
    Branch-free for small groups: with ``rows`` a tuple the loops over the entries unroll and
    LLVM vectorises the loop over the groups. The bracket search: g is non-increasing (also
    as computed: clips and rounded additions are monotone), so the largest breakpoint ``lo``
    with ``g > c`` (or 0: ``g(0) = s0 > c``) and the smallest ``hi`` with ``g <= c`` (``inf``
    if none) are consecutive, g linear between them; g at each breakpoint (``max(z_i, 0)``,
    ``max(z_i - a_i, 0)``: 0 if no entry exceeds its cap) is a full in-order sum, bit for bit.
    """
    n = len(rows)
    above = False  # max(z_i - a_i, 0) = 0 for all unless an entry exceeds its cap
    if tame is None:
        for i in range(n):
            for g in range(Z.shape[1]):
                above |= Z[i, g] > A[i, g]
    for g in range(Z.shape[1]):
        cg, sg = c[g], s0[g]
        t2 = 0.0  # theta by the bracket search (first: fewer values live across it)
        if n <= SMALL_GROUP:
            ghi = 0.0  # g(inf), where no hi is met (+0.0 in a tame block)
            if tame is None:
                ghi = min(max(Z[0, g] - math.inf, 0.0), A[0, g])
                for i in range(1, n):
                    ghi += min(max(Z[i, g] - math.inf, 0.0), A[i, g])
            lo, glo, hi = 0.0, sg, math.inf  # g(0) is s0, bit for bit
            for j in range(2 * n):
                k = j - n if j >= n else j
                if (j < n) | ((tame is None) & ((big is not None) | (n == 3) | above)):
                    b = max(Z[k, g] - A[k, g], 0.0) if j >= n else max(Z[k, g], 0.0)
                    if tame is None:
                        gv = min(max(Z[0, g] - b, 0.0), A[0, g])  # 0.0 + gv: gv but -0.0
                        for i in range(1, n):
                            gv += min(max(Z[i, g] - b, 0.0), A[i, g])
                    else:  # the other entries' terms
                        gv = 0.0 if n == 1 else -0.0
                        for i in range(n):
                            gv += max(Z[i, g] - b, 0.0) if i != k else -0.0
                    up, down = (gv > cg) & (b > lo), (gv <= cg) & (b < hi)
                    lo, glo = (b, gv) if up else (lo, glo)
                    hi, ghi = (b, gv) if down else (hi, ghi)
            t2 = lo + (glo - cg) * (hi - lo) / (glo - ghi) if glo > ghi else hi
        m, first = 0.0, math.inf  # first piece: g(theta) = s0 - m theta
        for i in range(n):
            zi, ai = Z[i, g], A[i, g]
            if tame is None:
                d = zi - ai
                first = min(first, min(d if d > 0.0 else math.inf, zi if zi > 0.0 else math.inf))
                m += 1.0 if (zi > 0.0) & (d <= 0.0) & (ai > 0.0) else 0.0
            else:  # z_i - a_i <= 0, and a_i > 0 where z_i > 0
                first = min(first, zi if zi > 0.0 else math.inf)
                m += 1.0 if zi > 0.0 else 0.0
        t1 = (sg - cg) if n == 1 else (sg - cg) / m  # n = 1: m = 1 where ok, x / 1.0 = x
        ok = (m > 0.0) & (t1 <= first)
        if big is not None:  # numba prunes this for n <= 4: no sort compiled in
            if (n > SMALL_GROUP) & (sg > cg) & (not ok):
                t2 = _theta_sorted(Z[:, g], A[:, g], Z.shape[0], cg, sg)  # n not a literal
        t1 = t1 if ok else t2
        th[g] = t1 if sg > cg else 0.0  # within capacity: the clip
    for g in range(Z.shape[1]):
        cg, theta = c[g], th[g]
        tot = 0.0
        for i in range(n):
            v = max(Z[i, g] - theta, 0.0)
            v = min(v, A[i, g]) if tame is None else v
            V[i, g] = v
            tot += v
        f = (cg / tot * _SHRINK if tot > 0.0 else 1.0) if tot > cg else 1.0  # rounding excess
        ld = 0.0
        for i in range(n):
            v = V[i, g] * f
            V[i, g] = v
            ld += v
        load[g] = ld


@numba.njit(cache=True, error_model="numpy")
def _clip_block(Z: np.ndarray, A: np.ndarray, V: np.ndarray, load: np.ndarray, s0: np.ndarray
                ) -> None:
    """``V = clip(Z, 0, A)`` and ``load = s0``: :func:`project_block`'s result when no group is
    over its capacity, bit for bit (``z - 0.0 == z``; the rescaling factor is 1 and ``s0`` is the
    same sum in the same order)."""
    n, n_groups = Z.shape
    for i in range(n):
        zr, ar, vr = Z[i], A[i], V[i]
        for g in range(n_groups):
            vr[g] = min(max(zr[g], 0.0), ar[g])
    for g in range(n_groups):
        load[g] = s0[g]


@numba.njit(cache=True, inline="always")
def _is_tame(Z: np.ndarray, A: np.ndarray, c: np.ndarray, s0: np.ndarray) -> bool:
    """Whether the block ``Z`` ``(n, G)`` is tame (module docstring): every ``0 <= z <= a``,
    every ``g(0) = s0 < inf`` and every ``c >= 0``."""
    tame = True
    for i in range(Z.shape[0]):
        for g in range(Z.shape[1]):
            tame &= (Z[i, g] >= 0.0) & (Z[i, g] <= A[i, g])
        if not tame:  # OgaSched's ascent points: known after a row
            return False
    for g in range(Z.shape[1]):
        tame &= (s0[g] < math.inf) & (c[g] >= 0.0)
    return tame


@numba.njit(cache=True, error_model="numpy")
def project_block(Z: np.ndarray, A: np.ndarray, c: np.ndarray, V: np.ndarray, load: np.ndarray,
                  work: np.ndarray) -> None:
    """Exact projection of every column ``Z[:, g]`` of ``Z`` ``(n, G)`` (a group of ``n``
    entries) onto ``{0 <= v <= A[:, g], sum v <= c[g]}`` into ``V[:, g]``; ``load[g]`` gets the
    group's sum. ``A``, ``V``: ``(n, G)``; ``c``, ``load``: ``(G,)``; ``work``: ``(WORK_ROWS,
    G)`` scratch (all C-contiguous). Units are the caller's (resource units in GainOverhead).

    The one implementation of the exact projection; every caller (the batched wrappers here, the
    env step and OgaSched's update) lays its groups out as columns, one block per group size. A
    block with no group over its capacity is the clip of every group to its box; otherwise each
    group within its capacity is clipped, one over it is solved on g's first linear piece in
    closed form or else by the bracket search (:func:`_solve`, or :func:`_theta_sorted`
    above ``SMALL_GROUP`` entries), and clipped at its theta. Blocks of 1 to 4 entries per group
    (every GainOverhead scenario's) run a solver compiled for their size, which LLVM vectorises
    across the groups (branch-free, everything of a group in registers); a tame block of 2 to
    4 (module docstring) runs one with fewer operations, bit for bit the same.
    """
    n, n_groups = Z.shape
    s0 = work[0]
    for g in range(n_groups):
        s0[g] = 0.0
    for i in range(n):
        zr, ar = Z[i], A[i]
        for g in range(n_groups):
            s0[g] += min(max(zr[g], 0.0), ar[g])
    over = False
    for g in range(n_groups):
        over |= s0[g] > c[g]
    if not over or n == 0:  # every group within its capacity: the clip (theta = 0), sums s0
        _clip_block(Z, A, V, load, s0)
    elif n == 1:
        _solve(Z, A, c, V, load, s0, work[1], (0,), None, None)
    elif n == 2:
        if _is_tame(Z, A, c, s0):
            _solve(Z, A, c, V, load, s0, work[1], (0, 0), True, None)
        else:
            _solve(Z, A, c, V, load, s0, work[1], (0, 0), None, None)
    elif n == 3:
        if _is_tame(Z, A, c, s0):
            _solve(Z, A, c, V, load, s0, work[1], (0, 0, 0), True, None)
        else:
            _solve(Z, A, c, V, load, s0, work[1], (0, 0, 0), None, None)
    elif n == 4:
        if _is_tame(Z, A, c, s0):
            _solve(Z, A, c, V, load, s0, work[1], (0, 0, 0, 0), True, None)
        else:
            _solve(Z, A, c, V, load, s0, work[1], (0, 0, 0, 0), None, None)
    else:
        _solve(Z, A, c, V, load, s0, work[1], range(n), None, True)


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

    return _project_columns(arg(zt), arg(at), arg(np.asarray(c).reshape(-1)))


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
    n = z.shape[-1]
    zt = np.ascontiguousarray(z.reshape(-1, n).T)
    at = np.ascontiguousarray(np.asarray(a, dtype=np.float64).reshape(-1, n).T)
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
