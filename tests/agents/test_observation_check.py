"""The compiled per-key bounds check of ``Agent.check_observation`` (``agents.base._outside``)
against the numpy formula it replaces: ``min >= low and max <= high`` in float64 (NaN fails),
plus ``isfinite`` where the space's bounds are infinite."""

from __future__ import annotations

import numpy as np
import pytest

from schedgym.agents.base import _outside


def _numpy_outside(val: np.ndarray, low: float, high: float, need_finite: bool) -> bool:
    ok = float(val.min()) >= low and float(val.max()) <= high
    return not ok or (need_finite and not bool(np.isfinite(val).all()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_outside_equals_the_numpy_check(dtype):
    rng = np.random.default_rng(0)
    low, high = -1e-5, 1.0 + 1e-5
    cases = [rng.uniform(0, 1, 50), np.array([0.0, 1.0]), np.array([1.0 + 1e-5]),
             np.array([-2e-5, 0.5]), np.array([0.5, 1.00002]), np.zeros(1)]
    if dtype is not np.int64:
        cases += [np.array([0.5, np.nan]), np.array([np.inf]), np.array([-np.inf, 0.0])]
    for vals in cases:
        val = vals.astype(dtype)
        for need_finite in (False, True):
            assert _outside(val, low, high, need_finite) == _numpy_outside(
                val, low, high, need_finite), (val, need_finite)


def test_outside_with_infinite_bounds_rejects_only_non_finite():
    lo, hi = -np.inf, np.inf
    assert not _outside(np.array([1e300, -1e300]), lo, hi, True)
    assert _outside(np.array([1.0, np.inf]), lo, hi, True)
    assert _outside(np.array([np.nan]), lo, hi, False)  # NaN fails the comparisons
    assert not _outside(np.array([np.inf]), lo, hi, False)
