"""Argument validation helpers.

Every helper raises :class:`ValueError` whose message names the parameter, the value received and
what is allowed, e.g. ``rho=1.5 is invalid: must be a number in [0, 1]``. Use them at every public
boundary (env constructors, scenario overrides, agent hyperparameters) so that bad input never
reaches numpy.
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np


class UnknownParameterError(TypeError, ValueError):
    """An unknown keyword argument (a typo, or a keyword another library passes, such as
    TorchRL's ``frameskip``). A ``TypeError`` whose message says "unexpected keyword argument
    'NAME'", as Python's own for a function call, so that clients that drop a keyword on that
    error work; also a ``ValueError``, as every other invalid-parameter error here."""


def _fail(name: str, value: Any, allowed: str) -> ValueError:
    return ValueError(f"{name}={value!r} is invalid: must be {allowed}")


#: The largest integer :func:`check_int` accepts when no ``max_value`` is given: every size, count
#: and index ends up in an ``int64`` (numpy arrays, compiled kernels), and products of sizes
#: must still convert to float.
INT64_MAX = 2**63 - 1

#: Floats are taken as integers only up to this magnitude (beyond it a float is not an exact
#: integer: ``1e308`` is no count anyone meant).
EXACT_FLOAT_INT = 2**53


def _as_int(name: str, value: Any, allowed: str) -> int:
    """``value`` as a Python ``int`` (an integral float up to :data:`EXACT_FLOAT_INT` included);
    bools, fractions, NaN/inf and larger floats raise :func:`_fail`."""
    if isinstance(value, bool | np.bool_):  # True is not the integer 1 for a size or a seed
        raise _fail(name, value, allowed)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        f = float(value)
        if f.is_integer() and abs(f) <= EXACT_FLOAT_INT:
            return int(f)
    raise _fail(name, value, allowed)


def check_int(
    name: str, value: Any, *, min_value: int | None = None, max_value: int | None = None
) -> int:
    """Return ``value`` as an ``int`` if it is an integer in ``[min_value, max_value]``
    (``max_value`` defaults to :data:`INT64_MAX`; an integral float counts up to 2**53)."""
    hi_value = INT64_MAX if max_value is None else max_value
    lo = "-inf" if min_value is None else str(min_value)
    allowed = f"an integer in [{lo}, {hi_value}]"
    value = _as_int(name, value, allowed)
    if (min_value is not None and value < min_value) or value > hi_value:
        raise _fail(name, value, allowed)
    return value


def check_float(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite ``float`` inside the given (open or closed) interval."""
    lb = "(" if low_open else "["
    rb = ")" if high_open else "]"
    allowed = (
        f"a finite number in {lb}{'-inf' if low is None else low}, "
        f"{'inf' if high is None else high}{rb}"
    )
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _fail(name, value, allowed)
    v = float(value)
    if not math.isfinite(v):
        raise _fail(name, value, allowed)
    if low is not None and (v < low or (low_open and v == low)):
        raise _fail(name, value, allowed)
    if high is not None and (v > high or (high_open and v == high)):
        raise _fail(name, value, allowed)
    return v


def check_range(
    name: str, value: Any, *, low: float | None = None, high: float | None = None
) -> tuple[float, float]:
    """Return a ``(lo, hi)`` pair of finite floats with ``low <= lo <= hi <= high``."""
    allowed = (
        f"a pair (lo, hi) of finite numbers with "
        f"{'' if low is None else f'{low} <= '}lo <= hi{'' if high is None else f' <= {high}'}"
    )
    return _ordered_pair(name, value, allowed, (Sequence,),
                         lambda v: check_float(name, v, low=low, high=high))


def _ordered_pair(name: str, value: Any, allowed: str, kinds: tuple[type, ...],
                  check_one: Callable[[Any], Any]) -> tuple[Any, Any]:
    """``(lo, hi)`` from a 2-entry ``value`` of one of ``kinds`` (never a string), each entry
    passed through ``check_one``, with ``lo <= hi``; any failure names ``value`` and
    ``allowed``."""
    pair: Any = value  # isinstance against a tuple of types would narrow it to object
    if isinstance(pair, (str, bytes)) or not isinstance(value, kinds) or len(pair) != 2:
        raise _fail(name, value, allowed)
    try:
        lo, hi = check_one(pair[0]), check_one(pair[1])
    except ValueError:
        raise _fail(name, value, allowed) from None
    if lo > hi:
        raise _fail(name, value, allowed)
    return lo, hi


def check_int_range(name: str, value: Any, *, low: int | None = None,
                    high: int | None = None) -> tuple[int, int]:
    """Return a ``(lo, hi)`` pair of integers (each as :func:`check_int` takes it, so at most
    :data:`INT64_MAX` unless ``high`` says otherwise) with ``low <= lo <= hi <= high``."""
    hi_value = INT64_MAX if high is None else high
    allowed = (
        f"a pair (lo, hi) of integers with {'' if low is None else f'{low} <= '}lo <= hi <= "
        f"{hi_value}"
    )
    return _ordered_pair(name, value, allowed, (Sequence, np.ndarray),
                         lambda v: check_int(name, v, min_value=low, max_value=hi_value))


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """Return ``value`` if it is one of ``choices``."""
    choices = list(choices)
    if value not in choices:
        raise _fail(name, value, "one of " + ", ".join(repr(c) for c in choices))
    return value


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is a bool (numpy bools included)."""
    if not isinstance(value, (bool, np.bool_)):
        raise _fail(name, value, "True or False")
    return bool(value)


def check_array(
    name: str,
    value: Any,
    *,
    shape: tuple[int | None, ...] | None = None,
    dtype: type | np.dtype = np.float64,
    low: float | None = None,
    high: float | None = None,
    finite: bool = True,
) -> np.ndarray:
    """Return ``value`` as a numpy array of ``dtype`` after checking shape, finiteness and bounds.

    ``shape`` may contain ``None`` for a free dimension.
    """
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} is invalid: cannot be converted to a numeric array of dtype "
            f"{np.dtype(dtype).name} (got {type(value).__name__})"
        ) from None
    if shape is not None:
        ok = arr.ndim == len(shape) and all(
            s is None or s == d for s, d in zip(shape, arr.shape, strict=False)
        )
        if not ok:
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"{name} has shape {arr.shape}: must have shape {want}")
    if arr.size and np.issubdtype(arr.dtype, np.floating):
        if finite and not np.all(np.isfinite(arr)):
            bad = int(np.flatnonzero(~np.isfinite(arr.ravel()))[0])
            raise ValueError(
                f"{name} contains a non-finite entry (flat index {bad}: "
                f"{arr.ravel()[bad]!r}): every entry must be finite"
            )
    if arr.size and low is not None and np.min(arr) < low:
        raise ValueError(f"{name} has minimum {np.min(arr)!r}: every entry must be >= {low}")
    if arr.size and high is not None and np.max(arr) > high:
        raise ValueError(f"{name} has maximum {np.max(arr)!r}: every entry must be <= {high}")
    return arr


def check_seed(name: str, value: Any) -> int | None:
    """Return a non-negative integer seed, or ``None``."""
    if value is None:
        return None
    allowed = "None or an integer >= 0"
    seed = _as_int(name, value, allowed)  # no upper bound: numpy's SeedSequence takes any size
    if seed < 0:
        raise _fail(name, seed, allowed)
    return seed


def check_known_keys(name: str, given: Iterable[str], allowed: Iterable[str]) -> None:
    """Raise :class:`UnknownParameterError` if ``given`` holds a key outside ``allowed`` (catches
    typos in overrides; the message suggests the closest allowed key)."""
    allowed = sorted(allowed)
    for key in given:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UnknownParameterError(
                f"{name} got an unexpected keyword argument {key!r} (an unknown parameter "
                f"{key!r}){hint}: allowed parameters are " + ", ".join(allowed)
            )
