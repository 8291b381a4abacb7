"""Chunks of GainOverhead's step as explicit SIMD code (numba intrinsics): the reward pass's
(:func:`reward_lanes`) and the allocation decode's (:func:`decode_lanes`).

The reward pass (:func:`.dynamics._score_pair`) reads each channel's ``K`` resources as one
contiguous run of the projected allocation and does five things per entry: copy it to the
row-major allocation, add it to the type's per-resource total, square its distance to the point
before the projection, take its gain (``alpha * y`` for a linear utility, or the mapped utility
value), and add the last two to running sums in entry order. numba leaves LLVM's SLP vectorizer
off (``NUMBA_SLP_VECTORIZE=0``), so those per-entry operations compile to one scalar instruction
each. :func:`reward_lanes` does them for ``width`` consecutive entries at once as LLVM vector
instructions (one load, store, add, subtract and multiply per chunk instead of per entry) and
then adds the lanes to the two running sums one by one, in entry order: the same IEEE operations
on the same operands in the same order as the scalar pass, so the same bits. On the
paper-default instance, with ``K = 6`` compiled into the pass (a chunk of 4 and one of 2 per
channel), the vector env's step takes about 12 % fewer instructions.

:func:`decode_lanes` decodes a chunk of an ``"allocation"``-mode action, ``z = 0.5 * (clip(a,
-1, 1) + 1) * upper``, in the same way: numba's ``min``/``max`` (``max(x, y)`` is ``y if y > x
else x``) as vector compares and selects, then the same additions and multiplications. With it
the step decodes each channel's run straight into the projection's block layout (one pass
instead of a decode and a move).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from llvmlite import ir
from numba import types
from numba.extending import intrinsic
from numba.np.arrayobj import make_array

#: The chunk widths :func:`reward_lanes` and :func:`decode_lanes` compile (one LLVM vector of
#: float64 each).
WIDTHS = (1, 2, 4)


def _f64_c_vector(ty: Any) -> bool:
    return (isinstance(ty, types.Array) and ty.ndim == 1 and ty.layout == "C"
            and ty.dtype == types.float64)


def _reward_lanes(typingctx: Any, width: Any, lin: Any, v: Any, f: Any, z: Any, y: Any,
                  tot: Any, p: Any, q: Any, k: Any, d: Any, eg: Any) -> Any:
    """:func:`reward_lanes`' typing and code generation."""
    if not (isinstance(width, types.IntegerLiteral) and width.literal_value in WIDTHS):
        return None
    if not all(_f64_c_vector(a) for a in (v, f, z, y, tot)):
        return None
    if not all(isinstance(i, types.Integer) for i in (p, q, k)):
        return None
    n, product = width.literal_value, not isinstance(lin, types.NoneType)
    sig = types.UniTuple(types.float64, 2)(width, lin, v, f, z, y, tot, p, q, k, types.float64,
                                           types.float64)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        vector = ir.VectorType(ir.DoubleType(), n)

        def run(i: int, start: Any) -> Any:  # pointer to the chunk of argument i at start
            data = make_array(sig.args[i])(context, builder, args[i]).data
            return builder.bitcast(builder.gep(data, [start]), vector.as_pointer())

        p, q, k, d, eg = args[7:]
        val = builder.load(run(2, p), align=8)
        builder.store(val, run(5, q), align=8)  # y = v
        at = run(6, k)
        builder.store(builder.fadd(builder.load(at, align=8), val), at, align=8)  # tot += v
        diff = builder.fsub(val, builder.load(run(4, p), align=8))
        square = builder.fmul(diff, diff)  # (v - z) ** 2
        gain = builder.load(run(3, p), align=8)
        if product:
            gain = builder.fmul(gain, val)  # alpha * v
        for j in range(n):  # the running sums, entry by entry
            lane = ir.Constant(ir.IntType(32), j)
            d = builder.fadd(d, builder.extract_element(square, lane))
            eg = builder.fadd(eg, builder.extract_element(gain, lane))
        return context.make_tuple(builder, sig.return_type, [d, eg])

    return sig, codegen


#: ``reward_lanes(width, lin, v, f, z, y, tot, p, q, k, d, eg)`` (in numba kernels only): for the
#: ``width`` (a literal 1, 2 or 4) entries ``j`` of a chunk, in order: ``y[q + j] = v[p + j]``,
#: ``tot[k + j] += v[p + j]``, ``d += (v[p + j] - z[p + j]) ** 2`` and ``eg += f[p + j] *
#: v[p + j]`` (``lin`` not ``None``: linear utilities, ``f`` is ``alpha``) or ``eg += f[p + j]``
#: (``lin`` ``None``: ``f`` holds the utilities' values); returns ``(d, eg)``. ``v``, ``f``, ``z``,
#: ``y``, ``tot``: C-contiguous float64 1-D arrays; no bounds check (the caller keeps every chunk
#: inside its array). Other arguments are a typing error.
reward_lanes = cast(Callable[..., tuple[float, float]], intrinsic(_reward_lanes))


def _decode_lanes(typingctx: Any, width: Any, a: Any, q: Any, upper: Any, p: Any, z: Any
                  ) -> Any:
    """:func:`decode_lanes`' typing and code generation."""
    if not (isinstance(width, types.IntegerLiteral) and width.literal_value in WIDTHS):
        return None
    if not (isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C"
            and a.dtype in (types.float32, types.float64)):
        return None
    if not (_f64_c_vector(upper) and _f64_c_vector(z)):
        return None
    if not all(isinstance(i, types.Integer) for i in (q, p)):
        return None
    n = width.literal_value
    sig = types.int64(width, a, q, upper, p, z)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        double = ir.DoubleType()
        vector = ir.VectorType(double, n)

        def run(i: int, start: Any, item: Any) -> Any:
            data = make_array(sig.args[i])(context, builder, args[i]).data
            return builder.bitcast(builder.gep(data, [start]), ir.VectorType(item, n).as_pointer())

        def splat(x: float) -> Any:
            return ir.Constant(vector, [x] * n)

        narrow = sig.args[1].dtype == types.float32  # a float32 action: widened first
        raw = builder.load(run(1, args[2], ir.FloatType() if narrow else double),
                           align=4 if narrow else 8)
        val = builder.fpext(raw, vector) if narrow else raw
        low = builder.select(builder.fcmp_ordered(">", splat(-1.0), val), splat(-1.0), val)
        clip = builder.select(builder.fcmp_ordered("<", splat(1.0), low), splat(1.0), low)
        moved = builder.fcmp_unordered("!=", clip, val)  # clipped, or NaN
        out = builder.fmul(builder.fmul(splat(0.5), builder.fadd(clip, splat(1.0))),
                           builder.load(run(3, args[4], double), align=8))
        builder.store(out, run(5, args[4], double), align=8)
        bits = builder.bitcast(moved, ir.IntType(n))  # one bit per lane (a mask move)
        anyone = builder.icmp_unsigned("!=", bits, ir.Constant(ir.IntType(n), 0))
        return builder.zext(anyone, ir.IntType(64))

    return sig, codegen


#: ``decode_lanes(width, a, q, upper, p, z)`` (in numba kernels only): for the ``width`` (a
#: literal 1, 2 or 4) entries ``j`` of a chunk, ``v = min(max(a[q + j], -1.0), 1.0)`` and
#: ``z[p + j] = 0.5 * (v + 1.0) * upper[p + j]`` (numba's ``min``/``max``; a float32 ``a``
#: widened to float64 first); returns 1 if an entry had ``v != a[q + j]`` (clipped, or NaN),
#: else 0. ``a``: C-contiguous float32 or float64 1-D; ``upper``, ``z``: C-contiguous float64
#: 1-D; no bounds check. Other arguments are a typing error.
decode_lanes = cast(Callable[..., int], intrinsic(_decode_lanes))

__all__ = ["WIDTHS", "decode_lanes", "reward_lanes"]
