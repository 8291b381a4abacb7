""":func:`schedgym.core.projection.project_block` on "tame" blocks of 2 to 4 entries per group
(every ``0 <= z <= a``, ``s0 < inf`` and ``c >= 0``: the allocation decode's points) and on
blocks one entry away from tame, bit for bit against the plain-Python transcription of the
per-group algorithm (``reference_group``): ties, signed zeros, zero caps, zero capacities,
points at the caps and groups whose rounding excess is rescaled. For blocks of 3 with
non-finite inputs next to those conditions, against a digest of an earlier kernel's outputs."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from schedgym.core import projection
from schedgym.core.projection import project_block
from tests.core.test_projection_reference import (
    _g,
    _theta_bracket,
    _theta_first_segment,
    reference_group,
)

#: SHA-256 of :func:`_near_tame_digest`'s outputs as the kernel of a912ff8 (before the tame
#: solver) computed them.
_NEAR_TAME_SHA256 = "352541be12f60fbc89dcaa9c8f48bb2e6f0b89f95ab8b68f9a076c8d2a9b31a1"


def _solve_block(z: np.ndarray, a: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``project_block`` on columns ``(n, G)``: the projection and the loads."""
    z, a, c = (np.ascontiguousarray(x, dtype=np.float64) for x in (z, a, c))
    V, load = np.empty_like(z), np.empty(z.shape[1])
    project_block(z, a, c, V, load, np.empty((projection.WORK_ROWS, z.shape[1])))
    return V, load


def _reference_block(z: np.ndarray, a: np.ndarray, c: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``reference_group`` per column, and each column's in-order sum from ``0.0``."""
    V = np.array([reference_group(z[:, g], a[:, g], c[g]) for g in range(z.shape[1])]).T
    load = np.empty(z.shape[1])
    for g in range(z.shape[1]):
        s = 0.0
        for v in V[:, g]:
            s += float(v)
        load[g] = s
    return V.reshape(z.shape), load


def _tame_block(rng: np.random.Generator, G: int = 240, n: int = 3) -> tuple[np.ndarray, ...]:
    """A tame ``(n, G)`` block: decoded float32 actions, ties, points at and near the caps,
    ``+-0.0`` entries, zero caps, and capacities from 0 (``+-0.0``) to above ``s0``."""
    a = rng.uniform(0.0, 4.0, (n, G)) * (rng.random((n, G)) > 0.15)
    u = rng.uniform(-1.0, 1.0, (n, G)).astype(np.float32).astype(np.float64)
    z = 0.5 * (np.clip(u, -1.0, 1.0) + 1.0) * a
    z[:, 0::6] = a[:, 0::6]  # at the caps
    z[:, 1::6] = z[0, 1::6]  # ties (where the caps allow)
    z[:, 1::6] = np.minimum(z[:, 1::6], a[:, 1::6])
    z[0, 2::6] = -0.0
    z[n - 2, 3::6] = 0.0
    a[n - 1, 4::6], z[n - 1, 4::6] = 0.0, 0.0
    s0 = np.clip(z, 0.0, a).sum(axis=0)
    c = s0 * rng.choice([0.0, 0.3, 0.9, 1.0 - 1e-12, 1.0, 1.2], G)
    c[5::12] = -0.0
    return z, a, c


def _is_tame(z: np.ndarray, a: np.ndarray, c: np.ndarray) -> bool:
    s0 = np.clip(z, 0.0, a).sum(axis=0)
    return bool(((z >= 0) & (z <= a)).all() and (s0 < np.inf).all() and (c >= 0).all())


@pytest.mark.parametrize("n", [2, 3, 4])
def test_tame_blocks_equal_the_reference(n):
    rng = np.random.default_rng(11 + n)
    rescaled = 0
    for _ in range(6):
        z, a, c = _tame_block(rng, n=n)
        assert _is_tame(z, a, c)
        V, load = _solve_block(z, a, c)
        V_ref, load_ref = _reference_block(z, a, c)
        np.testing.assert_array_equal(V.view(np.uint64), V_ref.view(np.uint64))  # zero signs
        np.testing.assert_array_equal(load.view(np.uint64), load_ref.view(np.uint64))
        assert (V <= a).all() and (V >= 0).all()
        rescaled += sum(_rescaled(z[:, g], a[:, g], c[g]) for g in range(z.shape[1]))
    assert rescaled > 0  # the rounding-excess rescaling ran on some tame groups


def _rescaled(z: np.ndarray, a: np.ndarray, c: float) -> bool:
    """Whether ``reference_group`` rescales this group's rounding excess."""
    z_, a_ = [float(v) for v in z], [float(v) for v in a]
    s0 = _g(z_, a_, 0.0)
    if s0 <= c:
        return False
    theta = _theta_first_segment(z_, a_, float(c), s0)
    theta = theta if theta >= 0.0 else _theta_bracket(z_, a_, float(c), s0)
    return _g(z_, a_, theta) > c


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("break_it", ["above_cap", "negative", "cap_below_z"])
def test_blocks_one_entry_from_tame_equal_the_reference(break_it, n):
    """One entry or capacity breaks the tame conditions: the general solver's answer, which
    the reference gives too."""
    rng = np.random.default_rng(13)
    for _ in range(4):
        z, a, c = _tame_block(rng, G=60, n=n)
        g = int(rng.integers(60))
        if break_it == "above_cap":
            z[1, g] = a[1, g] + 0.5
        elif break_it == "negative":
            z[n - 1, g] = -0.25
        else:
            a[0, g] = z[0, g] * 0.5 if z[0, g] > 0 else -1.0
        assert not _is_tame(z, a, c)
        V, load = _solve_block(z, a, c)
        V_ref, load_ref = _reference_block(z, a, c)
        np.testing.assert_array_equal(V.view(np.uint64), V_ref.view(np.uint64))
        np.testing.assert_array_equal(load.view(np.uint64), load_ref.view(np.uint64))


def _put_special(rng: np.random.Generator, specials: list[tuple[int, float]], z: np.ndarray,
                 a: np.ndarray, c: np.ndarray) -> None:
    """One drawn special value into a random entry: ``z`` (where 0), ``a`` (1), ``c`` (2) or
    both ``z`` and ``a`` (3)."""
    where, value = specials[int(rng.integers(len(specials)))]
    i, g = int(rng.integers(z.shape[0])), int(rng.integers(z.shape[1]))
    if where == 0:
        z[i, g] = value
    elif where == 1:
        a[i, g] = value
    elif where == 2:
        c[g] = value
    else:
        z[i, g] = a[i, g] = value


def _near_tame_digest(solve=_solve_block) -> str:
    """SHA-256 of the projection and loads of 120 blocks of 3 that are tame but for one or two
    non-finite or negative values (NaN in ``z``, ``a`` or ``c``, ``z = a = inf``, ``c = -inf``
    or -1, ``z = -0.0``, which keeps the block tame), NaNs made canonical. (The plain-Python
    reference departs from the kernel for a negative capacity: a digest of the old kernel.)"""
    rng = np.random.default_rng(2027)
    h = hashlib.sha256()
    specials = [(0, np.nan), (1, np.nan), (2, np.nan), (3, np.inf), (2, -np.inf), (0, -0.0),
                (2, -1.0)]
    for t in range(120):
        z, a, c = _tame_block(rng, G=24)
        for _ in range(1 + t % 2):
            _put_special(rng, specials, z, a, c)
        V, load = solve(z, a, c)
        for out in (V, load):
            h.update(np.where(np.isnan(out), np.nan, out).tobytes())
    return h.hexdigest()


def test_near_tame_non_finite_blocks_keep_the_previous_kernels_bits():
    assert _near_tame_digest() == _NEAR_TAME_SHA256
