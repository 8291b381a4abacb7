"""Read-only numpy arrays for frozen instance dataclasses and exposed episode data."""

from __future__ import annotations

import numpy as np


def readonly(a: np.ndarray) -> np.ndarray:
    """A read-only **copy** of ``a`` (so later writes to ``a`` cannot change it)."""
    out = np.array(a, copy=True)
    out.setflags(write=False)
    return out


def readonly_view(a: np.ndarray) -> np.ndarray:
    """A read-only **view** of ``a`` (no copy; the owner may still change the data)."""
    v = a.view()
    v.setflags(write=False)
    return v


def f32(a: np.ndarray | float) -> np.ndarray:
    """Round to float32-representable float64 values, so float32 observations show them exactly."""
    return np.asarray(a, dtype=np.float32).astype(np.float64)
