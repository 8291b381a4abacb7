"""The step's vector chunks (:mod:`schedgym.envs.gain_overhead.lanes`: reward pass, decode)
give the bits of the scalar formulas, entry by entry in order; the step compiled with ``K =
STATIC_K`` as a constant gives the bits of the step with ``K`` a variable."""

from __future__ import annotations

import gymnasium as gym
import numba
import numpy as np
import pytest

from schedgym.envs.gain_overhead import ENV_ID, dynamics
from schedgym.envs.gain_overhead.lanes import WIDTHS, decode_lanes, reward_lanes


@numba.njit
def _lanes(width: int, lin: bool | None, v: np.ndarray, f: np.ndarray, z: np.ndarray,
           y: np.ndarray, tot: np.ndarray, p: int, q: int, k: int, d: float, eg: float
           ) -> tuple[float, float]:
    if width == 4:
        return reward_lanes(4, lin, v, f, z, y, tot, p, q, k, d, eg)
    if width == 2:
        return reward_lanes(2, lin, v, f, z, y, tot, p, q, k, d, eg)
    return reward_lanes(1, lin, v, f, z, y, tot, p, q, k, d, eg)


def _reference(width: int, lin: bool | None, v: np.ndarray, f: np.ndarray, z: np.ndarray,
               y: np.ndarray, tot: np.ndarray, p: int, q: int, k: int, d: float, eg: float
               ) -> tuple[float, float]:
    """The scalar pass (plain Python floats: IEEE double, one operation at a time)."""
    for j in range(width):
        val = float(v[p + j])
        y[q + j] = val
        tot[k + j] = float(tot[k + j]) + val
        diff = val - float(z[p + j])
        d = d + diff * diff
        eg = eg + (float(f[p + j]) * val if lin is not None else float(f[p + j]))
    return d, eg


def _bits(x: object) -> bytes:
    return np.asarray(x, dtype=np.float64).tobytes()


def _awkward(rng: np.random.Generator, n: int) -> np.ndarray:
    """Values whose sums depend on their order, signed zeros and subnormals among them."""
    pool = np.array([0.0, -0.0, 1.0, 1e16, -1e16, 3.0e-310, 0.1, 1.0 / 3.0, 2.0 ** 52, 7.5])
    out = pool[rng.integers(pool.size, size=n)] * rng.choice([1.0, -1.0], size=n)
    mix = rng.random(n) < 0.4
    out[mix] = rng.normal(scale=10.0, size=int(mix.sum()))
    return out


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("lin", [True, None])
def test_lanes_give_the_bits_of_the_scalar_pass(width: int, lin: bool | None) -> None:
    rng = np.random.default_rng(width * 7 + (lin is None))
    for trial in range(200):
        v, f, z = (_awkward(rng, 12) for _ in range(3))
        tot = _awkward(rng, 9)
        p, q, k = (int(i) for i in rng.integers(0, 12 - width + 1, size=3) % (9 - width + 1))
        d, eg = (float(x) for x in _awkward(rng, 2))
        y, y_ref = np.full(12, 99.0), np.full(12, 99.0)
        tot_ref = tot.copy()
        got = _lanes(width, lin, v, f, z, y, tot, p, q, k, d, eg)
        want = _reference(width, lin, v, f, z, y_ref, tot_ref, p, q, k, d, eg)
        assert _bits(got) == _bits(want), (trial, got, want)
        assert _bits(y) == _bits(y_ref) and _bits(tot) == _bits(tot_ref), trial


def test_lanes_add_in_entry_order() -> None:
    """1e16 + 1 + 1 rounds each 1 away; (1 + 1) + 1e16 would not: the running sums take the
    lanes one by one, first to last."""
    v = np.array([1.0, 1.0, 1.0, 1.0])
    ones = np.ones(4)
    got = _lanes(4, None, v, ones, np.zeros(4), np.empty(4), np.zeros(4), 0, 0, 0, 1e16, 1e16)
    assert got == (1e16, 1e16)
    got = _lanes(4, None, v, ones, np.zeros(4), np.empty(4), np.zeros(4), 0, 0, 0, 0.0, 0.0)
    assert got == (4.0, 4.0)


@numba.njit
def _lanes_width(width: int, v: np.ndarray) -> tuple[float, float]:
    return reward_lanes(width, None, v, v, v, v, v, 0, 0, 0, 0.0, 0.0)


@numba.njit
def _lanes_three(v: np.ndarray) -> tuple[float, float]:
    return reward_lanes(3, None, v, v, v, v, v, 0, 0, 0, 0.0, 0.0)


@pytest.mark.parametrize(("call", "arg"), [
    (_lanes_width, np.zeros(4)),  # a width that is not a literal
    (_lanes_three, np.zeros(4)),  # a width it does not compile
    (_lanes_three, np.zeros(4, dtype=np.float32)),
    (_lanes_three, np.zeros(8)[::2]),
])
def test_lanes_refuse_what_they_do_not_compile(call, arg) -> None:
    with pytest.raises(numba.core.errors.TypingError, match="reward_lanes"):
        if call is _lanes_width:
            call(4, arg)
        else:
            call(arg)


@pytest.mark.parametrize("two", [True, False])
@pytest.mark.parametrize("lin", [True, None])
def test_static_k_pass_gives_the_bits_of_the_variable_k_pass(two: bool, lin: bool | None
                                                             ) -> None:
    """``_score_pair`` on a ``K = STATIC_K`` instance runs the pass compiled for that ``K``;
    ``_score_pass`` called from Python is compiled with ``K`` a variable (the path of every
    other ``K``): same outputs, bit for bit."""
    env = gym.make(ENV_ID, n_types=4, n_instances=6, n_resources=dynamics.STATIC_K)
    inst = env.unwrapped.instance
    env.close()
    k = inst.kernel_arrays
    n_types, size = inst.n_types, inst.n_edges * inst.n_resources
    rng = np.random.default_rng(3)
    start = k.plan[5]
    for _ in range(5):
        v = [np.abs(_awkward(rng, size)) for _ in range(2)]
        f = [k.block_alpha if lin is not None else _awkward(rng, size) for _ in range(2)]
        z = [_awkward(rng, size) for _ in range(2)]
        x = [rng.integers(0, 3, size=n_types).astype(np.float64) for _ in range(2)]
        outs = []
        for static in (True, False):
            y = [np.empty(size) for _ in range(2)]
            parts = [np.empty((3, n_types)) for _ in range(2)]
            args = (two, lin, v[0], f[0], z[0], y[0], x[0], parts[0], v[1], f[1], z[1], y[1],
                    x[1], parts[1], start, k.type_starts, k.beta, np.empty((2, inst.n_resources)))
            r = (dynamics._score_pair(*args) if static
                 else dynamics._score_pass(*args, int(inst.n_resources)))
            used = 2 if two else 1
            outs.append((_bits(r[:3 * used]), [_bits(a) for a in y[:used]],
                         [_bits(a) for a in parts[:used]]))
        assert outs[0] == outs[1]
    assert all(sig[-1] == numba.int64 for sig in dynamics._score_pass.signatures)


@pytest.mark.parametrize("utility", ["linear", "mixed"])
@pytest.mark.parametrize(("n", "decode"), [(1, True), (2, True), (5, True), (3, False)])
def test_static_k_step_gives_the_bits_of_the_variable_k_step(utility: str, n: int,
                                                             decode: bool) -> None:
    """``step_batch`` on a ``K = STATIC_K`` instance runs the step's copies compiled for that
    ``K``; ``_step_rows`` with ``constant_k=False`` those with ``K`` a variable (the path of
    every other ``K``): same outputs, bit for bit, one copy, pairs and an odd copy out,
    actions and targets, linear and mixed utilities."""
    env = gym.make(ENV_ID, n_types=4, n_instances=9, n_resources=dynamics.STATIC_K,
                   utility=utility, density=3)
    inst = env.unwrapped.instance
    env.close()
    k = inst.kernel_arrays
    size, n_types = inst.n_edges * inst.n_resources, inst.n_types
    rng = np.random.default_rng(n)
    for _ in range(3):
        if decode:
            a = rng.uniform(-1.3, 1.3, (n, size)).astype(np.float32)
        else:
            a = rng.uniform(-0.2, 1.2, (n, size)) * inst.edge_caps.reshape(-1)
        x = rng.integers(0, 3, size=(n, n_types)).astype(np.float64)
        rows = rng.permutation(n)
        bad, y, util, util32, stats = dynamics.step_batch(inst, a, rows, x, decode)
        y2, util2 = np.empty((n, size)), np.empty_like(util)
        util32_2, stats2 = np.empty_like(util32), np.empty_like(stats)
        bad2 = dynamics._step_rows(a, rows, decode, x, k.plan, k.inverse_capacities,
                                   k.block_codes, k.block_alpha, k.all_linear,
                                   k.reciprocal_scale, k.type_starts, k.beta, y2, util2,
                                   util32_2, stats2, False)
        assert bad == bad2 == -1
        assert _bits(y.reshape(n, size)) == _bits(y2) and _bits(util) == _bits(util2)
        assert util32.tobytes() == util32_2.tobytes() and _bits(stats) == _bits(stats2)


@numba.njit
def _decode(width: int, a: np.ndarray, q: int, upper: np.ndarray, p: int, z: np.ndarray) -> int:
    if width == 4:
        return decode_lanes(4, a, q, upper, p, z)
    if width == 2:
        return decode_lanes(2, a, q, upper, p, z)
    return decode_lanes(1, a, q, upper, p, z)


def _decode_reference(width: int, a: np.ndarray, q: int, upper: np.ndarray, p: int,
                      z: np.ndarray) -> int:
    """numba's ``min(max(a, -1.0), 1.0)`` (``max(x, y)``: ``y if y > x else x``) and the decode,
    one IEEE double operation at a time."""
    moved = 0
    for j in range(width):
        x = float(a[q + j])
        low = -1.0 if -1.0 > x else x
        v = 1.0 if 1.0 < low else low
        moved |= v != x
        z[p + j] = 0.5 * (v + 1.0) * float(upper[p + j])
    return moved


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_decode_lanes_give_the_bits_of_the_scalar_decode(width: int, dtype: type) -> None:
    rng = np.random.default_rng(width)
    special = np.array([-1.0, 1.0, -0.0, 0.0, 1.5, -7.0, np.nan, np.inf, -np.inf, 1e-40,
                        np.nextafter(1.0, 2.0), np.nextafter(-1.0, -2.0)])
    flags = set()
    for trial in range(300):
        a = rng.uniform(-1.0, 1.0, 10)
        pick = rng.random(10) < 0.25
        a[pick] = special[rng.integers(special.size, size=int(pick.sum()))]
        a = a.astype(dtype)
        upper = np.abs(_awkward(rng, 10))
        q, p = (int(i) for i in rng.integers(0, 10 - width + 1, size=2))
        z, z_ref = np.full(10, 5.0), np.full(10, 5.0)
        got = _decode(width, a, q, upper, p, z)
        want = _decode_reference(width, a, q, upper, p, z_ref)
        assert got == want and _bits(z) == _bits(z_ref), (trial, a[q:q + width])
        flags.add(got)
    assert flags == {0, 1}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_clip_decode_unit_flags_and_clip_amount(dtype: type) -> None:
    """The flat decode (chunks of 4, then 1): the clip amount of an action outside the box,
    0 inside, NaN with a NaN/inf entry anywhere (also in the tail after the chunks of 4)."""
    upper = np.linspace(0.5, 3.0, 11)
    a = np.linspace(-1.0, 1.0, 11).astype(dtype)
    z = np.empty(11)
    assert dynamics.clip_decode_unit(a, upper, z) == 0.0
    assert _bits(z) == _bits(0.5 * (a.astype(np.float64) + 1.0) * upper)
    for where in (0, 5, 10):
        b = a.copy()
        b[where] = 1.25
        assert dynamics.clip_decode_unit(b, upper, z) == 0.25
        for bad in (np.nan, np.inf):
            b[where] = bad
            assert np.isnan(dynamics.clip_decode_unit(b, upper, z))
