"""numpy's pairwise summation as a compiled kernel, bit for bit.

``a.sum()`` of a float64 array adds in numpy's pairwise order (blocks of at most 128 entries
summed with 8 interleaved partial sums, larger ranges split in halves). Kernels whose totals
must equal numpy's bit for bit (DeadlineWelfare's served workload and utilisation, which its
golden trajectories hold) call :func:`np_sum` here; tested against numpy in
``tests/envs/deadline_welfare/test_seeding_and_obs.py``.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _sum_block(a: np.ndarray, lo: int, n: int) -> float:
    """numpy's pairwise sum of ``a[lo:lo + n]`` for ``n <= 128``: a plain loop below 8, else 8
    interleaved partial sums combined as ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))``,
    then the rest one by one. Indices are unsigned (``lo >= 0``): numba adds no negative-index
    wraparound to the loads."""
    base = np.uint64(lo)
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[base + np.uint64(i)]
        return res
    r0, r1, r2, r3 = a[base], a[base + np.uint64(1)], a[base + np.uint64(2)], a[base + np.uint64(3)]
    r4, r5, r6, r7 = a[base + np.uint64(4)], a[base + np.uint64(5)], a[base + np.uint64(6)], \
        a[base + np.uint64(7)]
    end = base + np.uint64(n - n % 8)
    j = base + np.uint64(8)
    while j < end:
        r0 += a[j]
        r1 += a[j + np.uint64(1)]
        r2 += a[j + np.uint64(2)]
        r3 += a[j + np.uint64(3)]
        r4 += a[j + np.uint64(4)]
        r5 += a[j + np.uint64(5)]
        r6 += a[j + np.uint64(6)]
        r7 += a[j + np.uint64(7)]
        j += np.uint64(8)
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while j < base + np.uint64(n):
        res += a[j]
        j += np.uint64(1)
    return res


@numba.njit(cache=True)
def np_sum(a: np.ndarray, lo: int, n: int) -> float:
    """``a[lo:lo + n].sum()`` of a 1-D float64 array, bit for bit as numpy adds (its pairwise
    summation: blocks of at most 128 by :func:`_sum_block`, above that the two halves - the
    first rounded down to a multiple of 8 - summed apart and added), so a compiled total equals
    numpy's ``a[lo:lo + n].sum()``. Ranges that split more than once go to
    :func:`np_sum_with` with stacks allocated here."""
    if n <= 128:
        return _sum_block(a, lo, n)
    n2 = n // 2
    n2 -= n2 % 8
    if n - n2 <= 128:  # one split (up to 256 entries, e.g. the default mesh's 240 units)
        return _sum_block(a, lo, n2) + _sum_block(a, lo + n2, n - n2)
    return np_sum_with(a, lo, n, np.empty((3, STACK), dtype=np.int64), np.empty(STACK))


#: Entries of :func:`np_sum_with`'s stacks (the halving's depth stays below 64 for any size).
STACK = 128


@numba.njit(cache=True)
def np_sum_with(a: np.ndarray, lo: int, n: int, index: np.ndarray, values: np.ndarray
                ) -> float:
    """:func:`np_sum` of any ``n`` with the caller's scratch stacks, ``index`` int64 ``(3,
    STACK)`` and ``values`` float64 ``(STACK,)``: a kernel summing many ranges allocates them
    once. Iterative, with an explicit stack (numba's cache cannot reload a caller of a
    recursive kernel): a range of at most 128 entries is a block, a larger one its two halves
    summed apart and added."""
    los, ns, state, vals = index[0], index[1], index[2], values
    state[0] = 0
    top, vtop = 0, 0
    los[0], ns[0] = lo, n
    while top >= 0:
        m = ns[top]
        if m <= 128:
            vals[vtop] = _sum_block(a, los[top], m)
            vtop += 1
            top -= 1
            continue
        n2 = m // 2
        n2 -= n2 % 8
        if state[top] == 0:  # first half next
            state[top] = 1
            los[top + 1], ns[top + 1], state[top + 1] = los[top], n2, 0
            top += 1
        elif state[top] == 1:  # then the second half
            state[top] = 2
            los[top + 1], ns[top + 1], state[top + 1] = los[top] + n2, m - n2, 0
            top += 1
        else:  # both done: first + second
            vals[vtop - 2] = vals[vtop - 2] + vals[vtop - 1]
            vtop -= 1
            top -= 1
    return vals[0]
