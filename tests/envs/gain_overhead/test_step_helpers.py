"""The compiled helpers around GainOverhead's step kernels (:mod:`.dynamics`) and the single
env's shortcuts, each against the numpy expression it replaces, bit for bit: the float32
utilization observation and numpy's pairwise sum of it (``np.add.reduce``, the info's
``utilization``) from ``step_batch``, the vector env's finite check, the observed-arrivals table and
``encode_action``'s fast path."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from numba import njit

from schedgym.core.envbase import encode_unit
from schedgym.core.pairwise import STACK, np_sum, np_sum_with
from schedgym.envs.gain_overhead import dynamics
from tests.envs.gain_overhead.conftest import ENV_ID, SMALL

#: Lengths around numpy's pairwise-summation boundaries (8-way unrolling, blocks of 128, the
#: halving above) and the utilization sizes R * K of the scenarios (768, 6144).
SIZES = [0, 1, 2, 7, 8, 9, 15, 16, 17, 127, 128, 129, 135, 136, 255, 256, 257, 263, 511, 513,
         767, 768, 769, 1000, 1025, 1890, 6144, 10007]


def _arrays(n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Values whose sum depends on the order of the additions: uniform, magnitudes over 16
    decades, signed, and utilization-like values clipped at 1."""
    return [rng.random(n), rng.random(n) * 10.0 ** rng.integers(-8, 8, n),
            rng.standard_normal(n) * 1e3, np.minimum(rng.random(n) * 1.3, 1.0)]


@njit
def _sums(a: np.ndarray) -> tuple[float, float]:
    """numpy's reduction as the step kernel computes it, its start value 0.0 plus
    :func:`~schedgym.core.pairwise.np_sum_with` (numpy's pairwise order, with the caller's
    stacks), and the same by :func:`~schedgym.core.pairwise.np_sum`."""
    index, values = np.empty((3, STACK), dtype=np.int64), np.empty(STACK)
    return (0.0 + np_sum_with(a, np.int64(0), a.size, index, values),
            0.0 + np_sum(a, np.int64(0), a.size))


def _start_and_sum(a: np.ndarray) -> float:
    with_stacks, alone = _sums(a)
    assert np.float64(with_stacks).tobytes() == np.float64(alone).tobytes()
    return with_stacks


@pytest.mark.parametrize("n", SIZES)
def test_the_sum_has_the_bits_of_numpy(n):
    rng = np.random.default_rng(n)
    for a in _arrays(n, rng):
        assert _start_and_sum(a) == float(np.add.reduce(a))
    # numpy's reduction starts from 0.0: a total of -0.0 entries is +0.0
    total = _start_and_sum(np.full(n, -0.0))
    assert np.float64(total).tobytes() == np.add.reduce(np.full(n, -0.0)).tobytes()
    # a sequential sum differs on these values, so the test can tell the orders apart
    if n >= 1000:
        a = rng.random(n) * 10.0 ** rng.integers(-8, 8, n)
        seq = 0.0
        for v in a.tolist():
            seq += v
        assert seq != float(np.add.reduce(a))


@pytest.mark.parametrize("kwargs", [{"scenario": "paper-default"}, {**SMALL, "utility": "mixed"}])
def test_step_batch_utilization_cast_and_sum(kwargs):
    """``step_batch``'s utilization outputs: its float32 copy is numpy's cast and its sum
    (``stats[:, 4]``) ``np.add.reduce`` of each copy's row, bit for bit; the copies act with the
    listed rows of the actions."""
    env = gym.make(ENV_ID, **kwargs).unwrapped
    env.reset(seed=5)
    inst = env.instance
    rng = np.random.default_rng(5)
    a = rng.uniform(-1.3, 1.3, (7, inst.edge_caps.size))
    rows = np.array([6, 0, 3, 3, 1])
    x = (rng.random((rows.size, inst.n_types)) < 0.6).astype(np.float64)
    bad, y, util, util32, stats = dynamics.step_batch(inst, a, rows, x, True)
    assert bad == -1 and stats.shape == (rows.size, 5)
    np.testing.assert_array_equal(util32, util.astype(np.float32), strict=True)
    for c, r in enumerate(rows):
        assert stats[c, 4] == float(np.add.reduce(util[c]))
        one = dynamics.score_action(inst, a[r], x[c])
        assert one[1].tobytes() == y[c].tobytes() and one[3].tobytes() == stats[c, :4].tobytes()
    assert y[2].tobytes() == y[3].tobytes()  # the same row twice: the same bits
    b = a.copy()
    b[3, 17] = np.nan
    assert dynamics.step_batch(inst, b, rows, x, True)[0] == 2  # the first copy acting with it
    assert dynamics.step_batch(inst, b, rows[:2], x[:2], True)[0] == -1  # row 3 unused


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_all_finite_equals_numpy(dtype):
    rng = np.random.default_rng(2)
    big = np.finfo(dtype).max
    a = rng.uniform(-1.5, 1.5, (5, 37)).astype(dtype)
    a[2, 3] = big  # finite extremes: v - v is 0
    a[4, 0] = -big
    assert dynamics.all_finite(a) and np.isfinite(a).all()
    for bad in (np.nan, np.inf, -np.inf):
        for where in ((0, 0), (3, 17), (4, 36)):
            b = a.copy()
            b[where] = bad
            assert not dynamics.all_finite(b)
    assert dynamics.all_finite(np.empty((0, 4), dtype=dtype))


@pytest.mark.parametrize("arrivals", ["revealed", "hidden"])
def test_observed_arrivals_table_is_the_cast_of_observed_arrivals(arrivals):
    env = gym.make(ENV_ID, **{**SMALL, "horizon": 6}, arrivals=arrivals).unwrapped
    obs, _ = env.reset(seed=3)
    seen = [obs["arrivals"]]
    for _ in range(env.horizon):
        want = env.observed_arrivals().astype(np.float32)
        np.testing.assert_array_equal(env._obs()["arrivals"], want, strict=True)
        obs, *_ = env.step(env.action_space.sample())
        seen.append(obs["arrivals"])
    for t, got in enumerate(seen):
        s = t - (arrivals == "hidden")
        want = env.arrivals[s] if 0 <= s < env.horizon else np.zeros(env.instance.n_types)
        np.testing.assert_array_equal(got, want.astype(np.float32), strict=True)
    assert not np.shares_memory(seen[1], env._observed)  # fresh arrays, not views


def test_encode_action_fast_path_equals_encode_unit():
    env = gym.make(ENV_ID, **SMALL).unwrapped
    inst = env.instance
    rng = np.random.default_rng(7)
    y = rng.uniform(-0.5, 1.5, inst.edge_caps.shape) * inst.edge_caps
    y[0, 0] = np.nan  # NaN stays NaN, as np.clip
    want = encode_unit(y.reshape(-1), inst.edge_caps.reshape(-1))
    for alloc in (y, y.reshape(-1), np.asfortranarray(y), y.astype(np.float32).astype(
            np.float64), y.tolist()):
        got = env.encode_action(alloc)
        ref = encode_unit(np.asarray(alloc, dtype=np.float64).reshape(-1),
                          inst.edge_caps.reshape(-1))
        np.testing.assert_array_equal(got, ref, strict=True)
    np.testing.assert_array_equal(env.encode_action(y), want, strict=True)
    with pytest.raises(ValueError, match="allocation has shape"):
        env.encode_action(np.zeros(3))


def test_step_info_utilization_is_the_numpy_mean():
    """``info["mean_utilization"]`` is ``np.add.reduce`` of the flat utilization over the count of
    positive capacities, bit for bit, and the observation its float32 cast."""
    env = gym.make(ENV_ID, scenario="paper-default", horizon=4).unwrapped
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    n_pos = int((env.instance.capacities > 0).sum())
    for _ in range(4):
        obs, _, _, _, info = env.step(rng.uniform(-1, 1, env.action_space.shape))
        util = env._util.reshape(-1)
        assert info["mean_utilization"] == float(np.add.reduce(util)) / n_pos
        np.testing.assert_array_equal(obs["utilization"], util.astype(np.float32), strict=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_score_action_with_util32_adds_the_cast_and_the_sum(dtype):
    """``score_action(..., util32)``: the same four outputs as without, plus the float32
    utilization and ``np.add.reduce`` of it as a fifth stat (the env's observation and info
    from the step kernel); a non-finite entry is found by the decode's own check."""
    env = gym.make(ENV_ID, scenario="paper-default").unwrapped
    env.reset(seed=2)
    inst, x = env.instance, env.arrivals[0]
    rng = np.random.default_rng(3)
    for lim in (0.9, 1.4):
        a = rng.uniform(-lim, lim, inst.edge_caps.size).astype(dtype)
        bad, y, util, stats = dynamics.score_action(inst, a, x)
        util32 = np.full(util.size, np.nan, dtype=np.float32)
        bad2, y2, util2, stats2 = dynamics.score_action(inst, a, x, util32)
        assert bad == bad2 == -1 and stats.shape == (4,) and stats2.shape == (5,)
        assert y.tobytes() == y2.tobytes() and util.tobytes() == util2.tobytes()
        assert stats.tobytes() == stats2[:4].tobytes()
        np.testing.assert_array_equal(util32, util.reshape(-1).astype(np.float32), strict=True)
        assert stats2[4] == float(np.add.reduce(util.reshape(-1)))
        assert (stats[3] > 0.0) == (lim > 1.0)  # the clip amount
    for value in (np.nan, np.inf, -np.inf):
        for where in ([0], [777], [a.size - 1], [900, 5]):  # the first bad index is reported
            b = a.copy()
            b[where] = value
            assert dynamics.score_action(inst, b, x)[0] == min(where)


def test_clip_decode_unit_returns_nan_only_for_a_non_finite_entry():
    rng = np.random.default_rng(4)
    upper = rng.uniform(0.0, 2.0, 50)
    z = np.empty(50)
    a = rng.uniform(-1.2, 1.2, 50)
    a[3] = np.finfo(np.float64).max  # finite extreme: clipped, not rejected
    moved = dynamics.clip_decode_unit(a, upper, z)
    assert moved == np.abs(np.clip(a, -1.0, 1.0) - a).max()
    np.testing.assert_array_equal(z, (np.clip(a, -1.0, 1.0) + 1.0) * 0.5 * upper, strict=True)
    for value in (np.nan, np.inf, -np.inf):
        b = a.copy()
        b[17] = value
        assert np.isnan(dynamics.clip_decode_unit(b, upper, z))


def test_step_batch_reads_a_non_contiguous_action_array_as_its_copy() -> None:
    """``step_batch`` on a strided action array gives the bits of its C-contiguous copy."""
    inst = gym.make(ENV_ID, **SMALL).unwrapped.instance
    d = inst.n_edges * inst.n_resources
    wide = np.random.default_rng(3).uniform(-1.0, 1.0, (3, 2 * d))
    strided = wide[:, ::2]
    assert not strided.flags.c_contiguous
    x = np.ones((3, inst.n_types))
    rows = np.arange(3)
    got = dynamics.step_batch(inst, strided, rows, x, True)
    want = dynamics.step_batch(inst, np.ascontiguousarray(strided), rows, x, True)
    assert got[0] == want[0] == -1
    for g, w in zip(got[1:], want[1:], strict=True):
        assert np.array_equal(g, w)
