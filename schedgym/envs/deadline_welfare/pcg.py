"""numpy's ``Generator(PCG64)`` draws, compiled: the same numbers, bit for bit, without a Python
``Generator`` object.

The job sampler draws an episode from six named streams (:mod:`.streams`); with numpy that is
six generator objects re-seeded through Python dicts and a dozen Python-level draw calls per
episode, more than the draws themselves cost. Here a stream is a uint64 array ``(4,)`` holding
PCG64's 128-bit state and increment as ``(state_hi, state_lo, inc_hi, inc_lo)``, seeded from
numpy's ``SeedSequence`` words (:func:`.streams._seed_words`) as ``pcg64_set_seed`` does, and
every distribution the sampler uses is numpy's own algorithm (``numpy/random/src/distributions``,
through numba's translation of it, whose ziggurat tables are numpy's):

* ``next_uint64``: PCG64 (XSL-RR): one 128-bit LCG step, then ``rotr(hi ^ lo, hi >> 58)``;
* ``next_double``: ``(next_uint64 >> 11) * 2**-53``;
* ``uniform(low, high)``: ``low + (high - low) * next_double``;
* ``normal(loc, scale)``: ``loc + scale * standard_normal`` (ziggurat, 256 layers);
* ``exponential(scale)``: ``scale * standard_exponential`` (ziggurat);
* ``poisson(lam)``: multiplication method below 10, PTRS at 10 and above.

``tests/envs/deadline_welfare/test_fast_paths.py`` checks every one of them against numpy's
``Generator`` draw for draw (many seeds and parameters, including the rare ziggurat tails).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic
from numba.np.random._constants import (
    fe_double,
    fi_double,
    ke_double,
    ki_double,
    we_double,
    wi_double,
    ziggurat_exp_r,
    ziggurat_nor_inv_r,
    ziggurat_nor_r,
)

_S32 = np.uint64(32)
_ONE = np.uint64(1)
#: PCG64's 128-bit LCG multiplier.
_PCG_MULT = (2549297995355413924 << 64) + 4865540595714422341
_TWO_M53 = 1.0 / 9007199254740992.0


@intrinsic
def _lcg128(typingctx: Any, s_hi: Any, s_lo: Any, i_hi: Any, i_lo: Any) -> Any:
    """``(s_hi:s_lo) * MULT + (i_hi:i_lo)`` mod 2**128 as ``(hi, lo)``, in LLVM's native
    128-bit integers (what numpy's C code does with ``__uint128_t``)."""
    u64 = types.uint64
    sig = types.UniTuple(u64, 2)(u64, u64, u64, u64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        i128, i64 = ir.IntType(128), ir.IntType(64)
        w64 = ir.Constant(i128, 64)

        def join(hi: Any, lo: Any) -> Any:
            return builder.or_(builder.shl(builder.zext(hi, i128), w64), builder.zext(lo, i128))

        state = builder.add(builder.mul(join(args[0], args[1]), ir.Constant(i128, _PCG_MULT)),
                            join(args[2], args[3]))
        hi = builder.trunc(builder.lshr(state, w64), i64)
        return context.make_tuple(builder, signature.return_type, [hi, builder.trunc(state, i64)])

    return sig, codegen


@numba.njit(cache=True)
def _step(st: np.ndarray) -> None:
    """``state = state * MULT + inc`` (mod 2**128) on ``st = (s_hi, s_lo, i_hi, i_lo)``."""
    st[0], st[1] = _lcg128(st[0], st[1], st[2], st[3])  # type: ignore[call-arg]


@numba.njit(cache=True)
def seed_state(words: np.ndarray, st: np.ndarray) -> None:
    """numpy's ``pcg64_set_seed`` from ``SeedSequence.generate_state(4, uint64)``, given as its
    8 uint32 words ``words`` (uint64 ``(8,)``, little-endian pairs): fills ``st`` ``(4,)``."""
    w0 = words[0] | (words[1] << _S32)
    w1 = words[2] | (words[3] << _S32)
    w2 = words[4] | (words[5] << _S32)
    w3 = words[6] | (words[7] << _S32)
    # inc = (w2:w3 << 1) | 1; state = step(0) = inc, then + initstate (w0:w1), then step
    i_hi = (w2 << _ONE) | (w3 >> np.uint64(63))
    i_lo = (w3 << _ONE) | _ONE
    lo = i_lo + w1
    carry = _ONE if lo < i_lo else np.uint64(0)
    st[0] = i_hi + w0 + carry
    st[1] = lo
    st[2] = i_hi
    st[3] = i_lo
    _step(st)


@numba.njit(cache=True)
def next_uint64(st: np.ndarray) -> np.uint64:
    """PCG64's next 64-bit output (XSL-RR of the stepped state)."""
    _step(st)
    hi = st[0]
    x = hi ^ st[1]
    rot = hi >> np.uint64(58)
    return (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))


@numba.njit(cache=True)
def next_double(st: np.ndarray) -> float:
    """Uniform on [0, 1) with 53 random bits (numpy's ``next_double``)."""
    return float(next_uint64(st) >> np.uint64(11)) * _TWO_M53


@numba.njit(cache=True)
def standard_normal(st: np.ndarray) -> float:
    """numpy's ``random_standard_normal`` (ziggurat)."""
    while True:
        r = next_uint64(st)
        idx = r & np.uint64(0xFF)
        r >>= np.uint64(8)
        sign = r & _ONE
        rabs = (r >> _ONE) & np.uint64(0x000FFFFFFFFFFFFF)
        x = float(rabs) * wi_double[idx]
        if sign:
            x = -x
        if rabs < ki_double[idx]:
            return x
        if idx == 0:
            while True:
                xx = -ziggurat_nor_inv_r * np.log1p(-next_double(st))
                yy = -np.log1p(-next_double(st))
                if yy + yy > xx * xx:
                    if (rabs >> np.uint64(8)) & _ONE:
                        return -(ziggurat_nor_r + xx)
                    return ziggurat_nor_r + xx
        elif ((fi_double[idx - 1] - fi_double[idx]) * next_double(st) + fi_double[idx]
              < np.exp(-0.5 * x * x)):
            return x


@numba.njit(cache=True)
def standard_exponential(st: np.ndarray) -> float:
    """numpy's ``random_standard_exponential`` (ziggurat)."""
    while True:
        ri = next_uint64(st) >> np.uint64(3)
        idx = ri & np.uint64(0xFF)
        ri >>= np.uint64(8)
        x = float(ri) * we_double[idx]
        if ri < ke_double[idx]:
            return x
        if idx == 0:
            return ziggurat_exp_r - np.log1p(-next_double(st))
        if (fe_double[idx - 1] - fe_double[idx]) * next_double(st) + fe_double[idx] < np.exp(-x):
            return x


@numba.njit(cache=True)
def _loggam(x: float) -> float:
    """numpy's ``random_loggam``: log Γ(x) for the PTRS acceptance test."""
    a = (8.333333333333333e-02, -2.777777777777778e-03, 7.936507936507937e-04,
         -5.952380952380952e-04, 8.417508417508418e-04, -1.917526917526918e-03,
         6.410256410256410e-03, -2.955065359477124e-02, 1.796443723688307e-01,
         -1.39243221690590e+00)
    if x == 1.0 or x == 2.0:
        return 0.0
    n = int(7 - x) if x < 7.0 else 0
    x0 = x + n
    x2 = (1.0 / x0) * (1.0 / x0)
    gl0 = a[9]
    for k in range(9):
        gl0 *= x2
        gl0 += a[8 - k]
    gl = gl0 / x0 + 0.5 * 1.8378770664093453e+00 + (x0 - 0.5) * np.log(x0) - x0
    if x < 7.0:
        for _ in range(n):
            gl = gl - np.log(x0 - 1.0)
            x0 = x0 - 1.0
    return gl


@numba.njit(cache=True)
def _poisson_ptrs(st: np.ndarray, lam: float) -> int:
    """numpy's ``random_poisson_ptrs`` (transformed rejection, ``lam >= 10``)."""
    slam = np.sqrt(lam)
    loglam = np.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    while True:
        U = next_double(st) - 0.5
        V = next_double(st)
        us = 0.5 - np.fabs(U)
        k = int((2 * a / us + b) * U + lam + 0.43)
        if us >= 0.07 and V <= vr:
            return k
        if k < 0 or (us < 0.013 and V > us):
            continue
        if (np.log(V) + np.log(invalpha) - np.log(a / (us * us) + b)
                <= -lam + k * loglam - _loggam(k + 1)):
            return k


@numba.njit(cache=True)
def poisson(st: np.ndarray, lam: float) -> int:
    """numpy's ``random_poisson``: multiplication method below 10, PTRS from 10."""
    if lam >= 10:
        return _poisson_ptrs(st, lam)
    if lam == 0:
        return 0
    enlam = np.exp(-lam)
    k = 0
    prod = 1.0
    while True:
        prod *= next_double(st)
        if prod > enlam:
            k += 1
        else:
            return k
