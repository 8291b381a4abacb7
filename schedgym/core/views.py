"""Borrowed array views for numba kernels: views that hold no reference to their owner.

A numba array view (``a[i]``, ``a[lo:hi].reshape(...)``) shares its owner's memory and holds a
reference to it: making one and dropping it are two *atomic* reference-count operations, about
10-20 cycles each on x86. A kernel that makes a few views per block and per copy pays thousands
of cycles per step for them (on GainOverhead's paper-default instance, the views of its
projection blocks made per copy cost about 3 % of a vector env step).

The views made here have no owner (a null ``meminfo``: numba's reference counting skips them).
They are valid only while the owner is alive, so they are for use inside one kernel call on
arrays that the call's caller holds: never return one, store it in a container that outlives the
call, or take one of an array the kernel itself allocated and may drop first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
from numba import types
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array


def _c_array(ty: Any) -> bool:
    return isinstance(ty, types.Array) and ty.layout == "C"


def _codegen(layout: Callable[[Any, Any, Any], tuple[Any, list[Any]]]) -> Callable[..., Any]:
    """Code generation of a borrowed C-contiguous view of the intrinsic's first argument:
    ``layout(builder, src, args)`` gives its offset (items) into the source's data and its shape
    (LLVM integers); the strides follow from them, the ``meminfo`` is null."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        src = make_array(sig.args[0])(context, builder, args[0])
        offset, shape = layout(builder, src, args)
        strides = [src.itemsize]
        for extent in reversed(shape[1:]):
            strides.insert(0, builder.mul(extent, strides[0]))
        out = make_array(sig.return_type)(context, builder)
        populate_array(out, data=builder.gep(src.data, [offset]), shape=shape, strides=strides,
                       itemsize=src.itemsize, meminfo=None)
        return out._getvalue()

    return codegen


def _borrow_block(typingctx: Any, flat: Any, start: Any, n_rows: Any, n_cols: Any) -> Any:
    """:func:`borrow_block`'s typing and code generation (a numba intrinsic)."""
    if not (_c_array(flat) and flat.ndim == 1):
        return None
    codegen = _codegen(lambda builder, src, args: (args[1], [args[2], args[3]]))
    return flat.copy(ndim=2, layout="C")(flat, types.intp, types.intp, types.intp), codegen


#: ``borrow_block(flat, start, n_rows, n_cols)`` (in numba kernels only):
#: ``flat[start:start + n_rows * n_cols].reshape((n_rows, n_cols))`` of a C-contiguous 1-D
#: array, borrowed (module docstring), of the same dtype and writability. No bounds check: the
#: caller keeps the block inside ``flat``. Other arrays are a typing error.
borrow_block = cast(Callable[[np.ndarray, int, int, int], np.ndarray], intrinsic(_borrow_block))


def _row_layout(builder: Any, src: Any, args: Any) -> tuple[Any, list[Any]]:
    n_cols = builder.extract_value(src.shape, 1)
    return builder.mul(args[1], n_cols), [n_cols]


def _borrow_row(typingctx: Any, a: Any, i: Any) -> Any:
    """:func:`borrow_row`'s typing and code generation (a numba intrinsic)."""
    if not (_c_array(a) and a.ndim == 2):
        return None
    return a.copy(ndim=1, layout="C")(a, types.intp), _codegen(_row_layout)


#: ``borrow_row(a, i)`` (in numba kernels only): row ``a[i]`` of a C-contiguous 2-D array,
#: borrowed (module docstring), of the same dtype and writability. No bounds check and no
#: negative index: ``0 <= i < a.shape[0]`` is the caller's to keep. Other arrays are a typing
#: error.
borrow_row = cast(Callable[[np.ndarray, int], np.ndarray], intrinsic(_borrow_row))

__all__ = ["borrow_block", "borrow_row"]
