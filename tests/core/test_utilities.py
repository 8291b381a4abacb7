"""The four utility families of spec ogasched §2.2: values, derivatives, concavity, mixed codes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from schedgym.core import utilities as U

# (family, alpha, y, reciprocal_scale, f(y), f'(y)) computed by hand
HAND = [
    ("linear", 1.2, 2.0, 1.0, 2.4, 1.2),
    ("log", 1.5, math.e - 1.0, 1.0, 1.5, 1.5 / math.e),
    ("log", 2.0, 3.0, 1.0, 2.0 * math.log(4.0), 0.5),
    ("reciprocal", 2.0, 2.0, 1.0, 0.25, 1.0 / 16.0),  # 1/2 - 1/4; 1/(2+2)^2
    ("reciprocal", 1.0, 1.0, 3.0, 1.0 / 12.0, 1.0 / 16.0),  # scale 3: 1/3 - 1/4; 1/(1+3)^2
    ("poly", 2.0, 3.0, 1.0, 2.0, 0.5),  # 2*sqrt(4) - 2; 2/(2*2)
    ("poly", 1.0, 8.0, 1.0, 2.0, 1.0 / 6.0),  # sqrt(9) - 1; 1/(2*3)
]


@pytest.mark.parametrize("family,alpha,y,s,fv,dv", HAND)
def test_hand_values(family, alpha, y, s, fv, dv):
    code = U.FAMILY_CODES[family]
    assert U.value(np.array([code]), np.array([alpha]), np.array([y]), s)[0] == pytest.approx(fv)
    assert U.derivative(np.array([code]), np.array([alpha]), np.array([y]), s)[0] == \
        pytest.approx(dv)
    assert U.value(code, alpha, y, s) == pytest.approx(fv)  # scalar code


@pytest.mark.parametrize("family", U.FAMILIES)
@pytest.mark.parametrize("s", [1.0, 3.0])
def test_zero_start_slope_at_zero_and_finite_differences(family, s):
    rng = np.random.default_rng(0)
    code = np.full(200, U.FAMILY_CODES[family], dtype=np.int8)
    alpha = rng.uniform(0.5, 2.0, 200)
    assert np.all(U.value(code, alpha, np.zeros(200), s) == 0.0)
    varpi = {"linear": alpha, "log": alpha, "reciprocal": 1.0 / (s * alpha) ** 2,
             "poly": alpha / 2.0}[family]
    np.testing.assert_allclose(U.slope_at_zero(code, alpha, s), varpi, rtol=1e-14)
    y = rng.uniform(0.0, 100.0, 200)
    h = 1e-5 * (1.0 + y)
    central = (U.value(code, alpha, y + h, s) - U.value(code, alpha, y - h, s)) / (2 * h)
    np.testing.assert_allclose(U.derivative(code, alpha, y, s), central, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("family", U.FAMILIES)
def test_concave_non_decreasing(family):
    rng = np.random.default_rng(1)
    code = np.full(500, U.FAMILY_CODES[family], dtype=np.int8)
    alpha = rng.uniform(0.5, 2.0, 500)
    a, b = rng.uniform(0, 50, 500), rng.uniform(0, 50, 500)
    lam = rng.random(500)
    f = lambda v: U.value(code, alpha, v)  # noqa: E731
    assert np.all(f(lam * a + (1 - lam) * b) >= lam * f(a) + (1 - lam) * f(b) - 1e-12)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    d_lo, d_hi = U.derivative(code, alpha, lo), U.derivative(code, alpha, hi)
    assert np.all(d_hi >= 0) and np.all(d_lo >= d_hi - 1e-15)  # f' >= 0, non-increasing
    assert np.all(f(hi) >= f(lo))
    # derivative bounded by varpi = f'(0) (nice setup, condition (iii))
    assert np.all(U.derivative(code, alpha, hi) <= U.slope_at_zero(code, alpha) + 1e-15)


def test_mixed_codes_match_single_family_calls():
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 4, size=(7, 6)).astype(np.int8)
    alpha = rng.uniform(1.0, 1.5, size=(7, 6))
    y = rng.uniform(0.0, 20.0, size=(7, 6))
    val = U.value(codes, alpha, y, 2.0)
    der = U.derivative(codes, alpha, y, 2.0)
    for idx in np.ndindex(codes.shape):
        c = int(codes[idx])
        assert val[idx] == pytest.approx(float(U.value(c, alpha[idx], y[idx], 2.0)), rel=1e-14)
        assert der[idx] == pytest.approx(float(U.derivative(c, alpha[idx], y[idx], 2.0)),
                                         rel=1e-14)
    # broadcasting: codes (R, K) against y (E, R, K)
    yb = rng.uniform(0.0, 5.0, size=(3, 7, 6))
    np.testing.assert_allclose(U.value(codes, alpha, yb)[1], U.value(codes, alpha, yb[1]))


def test_family_codes_roundtrip_and_unknown_name():
    names = np.array([["linear", "log"], ["reciprocal", "poly"]])
    np.testing.assert_array_equal(U.family_codes(names), [[0, 1], [2, 3]])
    assert [U.FAMILIES[c] for c in U.family_codes(names).ravel()] == list(names.ravel())
    with pytest.raises(ValueError, match="utility='cubic'.*linear"):
        U.family_codes(np.array(["linear", "cubic"]))


@pytest.mark.parametrize("s", [1.0, 3.0, 0.37])
def test_slope_at_zero_has_the_bits_of_the_compiled_derivative_at_zero(s):
    """``slope_at_zero`` (numpy) and ``derivative(., 0)`` (the compiled kernel) agree bit for
    bit on every family, so an instance's ``varpi`` is the kernels' ``f'(0)``."""
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 4, (40, 6)).astype(np.int8)
    alpha = rng.uniform(1e-3, 5.0, (40, 6))
    want = U.derivative(codes, alpha, np.zeros_like(alpha), s)
    assert U.slope_at_zero(codes, alpha, s).tobytes() == want.tobytes()
