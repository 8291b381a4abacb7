"""Fast construction of :mod:`schedgym.core.rng`'s named streams (the same generators).

``rng.stream(seed, name)`` builds ``Generator(PCG64(SeedSequence(seed, spawn_key=(crc32(name),))))``
and costs about 25 µs, most of it numpy's Python-level ``SeedSequence`` hashing; an episode of
DeadlineWelfare-v0 needs six streams. :class:`StreamSet` computes the same ``SeedSequence`` words
for all names in one compiled call (:func:`_seed_words`, numpy's algorithm: ``mix_entropy`` over a
pool of 4 words, then ``generate_state(4, uint64)``), seeds PCG64 from them as numpy does
(``pcg64_set_seed``: two LCG steps on the 128-bit state) and sets the state of a reusable
generator per name. The streams are bit-for-bit those of ``rng.stream`` (tested for many seeds and
names); only the set-up is cheaper.
"""

from __future__ import annotations

import zlib

import numba
import numpy as np

_M32 = 0xFFFFFFFF
# numpy's SeedSequence constants, as uint64 so the kernels stay in unsigned 64-bit arithmetic
# (every product of two 32-bit words fits; results are masked back to 32 bits)
_U32 = np.uint64(_M32)
_INIT_A, _MULT_A = np.uint64(0x43B0D7E5), np.uint64(0x931E8875)
_INIT_B, _MULT_B = np.uint64(0x8B51F9DD), np.uint64(0x58F38DED)
_MIX_L, _MIX_R = np.uint64(0xCA01F9DD), np.uint64(0x4973F715)
_SHIFT = np.uint64(16)
_ZERO = np.uint64(0)
_POOL = 4
#: PCG64's 128-bit LCG multiplier and state mask.
_PCG_MULT = (2549297995355413924 << 64) + 4865540595714422341
_M128 = (1 << 128) - 1


@numba.njit(cache=True)
def _hashmix(value: np.uint64, h: np.ndarray) -> np.uint64:
    value = (value ^ h[0]) & _U32
    h[0] = (h[0] * _MULT_A) & _U32
    value = (value * h[0]) & _U32
    return value ^ (value >> _SHIFT)


@numba.njit(cache=True)
def _mix(x: np.uint64, y: np.uint64) -> np.uint64:
    # MIX_MULT_L * x - MIX_MULT_R * y in uint32 arithmetic (wraps mod 2^32)
    r = ((_MIX_L * x) - ((_MIX_R * y) & _U32) + (_U32 + np.uint64(1))) & _U32
    return r ^ (r >> _SHIFT)


@numba.njit(cache=True)
def _seed_words(entropy: np.ndarray) -> np.ndarray:
    """``SeedSequence`` with assembled uint32 ``entropy`` (run entropy padded to the pool size,
    then the spawn key; held in uint64) -> ``generate_state(4, uint64)`` as 8 uint32 words
    (little-endian pairs), held in uint64 ``(8,)``."""
    h = np.empty(1, dtype=np.uint64)
    h[0] = _INIT_A
    pool = np.empty(_POOL, dtype=np.uint64)  # every entry set below (np.empty: fewer compiles)
    for i in range(_POOL):
        pool[i] = _hashmix(entropy[i] if i < entropy.size else _ZERO, h)
    for i_src in range(_POOL):
        for i_dst in range(_POOL):
            if i_src != i_dst:
                pool[i_dst] = _mix(pool[i_dst], _hashmix(pool[i_src], h))
    for i_src in range(_POOL, entropy.size):
        for i_dst in range(_POOL):
            pool[i_dst] = _mix(pool[i_dst], _hashmix(entropy[i_src], h))
    out = np.empty(8, dtype=np.uint64)
    hb = _INIT_B
    for i in range(8):
        v = (pool[i % _POOL] ^ hb) & _U32
        hb = (hb * _MULT_B) & _U32
        v = (v * hb) & _U32
        out[i] = v ^ (v >> _SHIFT)
    return out


@numba.njit(cache=True)
def _seed_words_batch(entropy: np.ndarray) -> np.ndarray:
    """:func:`_seed_words` of every row of ``entropy`` ``(k, L)`` -> ``(k, 8)``."""
    out = np.empty((entropy.shape[0], 8), dtype=np.uint64)
    for j in range(entropy.shape[0]):
        w = _seed_words(entropy[j])
        for i in range(8):  # not ``out[j] = w``: see :func:`.dynamics.obs_fill`
            out[j, i] = w[i]
    return out


def _uint32_words(n: int) -> list[int]:
    """numpy's ``_int_to_uint32_array``: little-endian 32-bit words of ``n >= 0`` ([0] for 0)."""
    if n < 0:
        raise ValueError(f"seed={n!r} is invalid: must be a non-negative integer")
    words = [n & _M32] if n == 0 else []
    while n > 0:
        words.append(n & _M32)
        n >>= 32
    return words


def _pcg_state(words: list[int]) -> tuple[int, int]:
    """numpy's ``pcg64_set_seed`` on ``generate_state(4, uint64)`` (given as its 8 uint32
    words): ``(state, inc)``."""
    w = [words[2 * i] | (words[2 * i + 1] << 32) for i in range(4)]
    init_state = (w[0] << 64) | w[1]
    inc = (((w[2] << 64) | w[3]) << 1 | 1) & _M128
    state = inc  # step from state 0: 0 * mult + inc
    state = (state + init_state) & _M128
    state = (state * _PCG_MULT + inc) & _M128
    return state, inc


class StreamSet:
    """Reusable generators for a fixed tuple of stream names: ``get(seed)`` returns
    ``{name: generator}`` equal, draw for draw, to ``rng.streams(seed, *names)`` (the same
    generator objects are re-seeded on every call, so use them before the next call)."""

    def __init__(self, *names: str) -> None:
        self.names = names
        keys = [_uint32_words(zlib.crc32(n.encode("utf-8"))) for n in names]  # 1 word each
        self._keys = np.array(keys, dtype=np.uint64).reshape(len(names), -1)
        self._gens = [np.random.Generator(np.random.PCG64(0)) for _ in names]

    def words(self, seed: int) -> np.ndarray:
        """uint64 ``(len(names), 8)``: every stream's ``SeedSequence(seed, spawn_key=(crc32(name),))
        .generate_state(4, uint64)`` as 8 uint32 words (little-endian pairs), what PCG64 is
        seeded from (:func:`_pcg_state`, :func:`.pcg.seed_state`). ``seed``: a non-negative
        integer."""
        run = _uint32_words(int(seed))
        run += [0] * (_POOL - len(run))  # numpy pads the run entropy when a spawn key is set
        ent = np.empty((len(self.names), len(run) + self._keys.shape[1]), dtype=np.uint64)
        ent[:, :len(run)] = run
        ent[:, len(run):] = self._keys
        return _seed_words_batch(ent)

    def words_batch(self, seeds: list[int]) -> np.ndarray:
        """:meth:`words` of every seed, uint64 ``(len(seeds), len(names), 8)``, in one compiled
        call when every seed is below 2**64 (its run entropy is then the 4 words ``lo, hi, 0,
        0``, as :meth:`words` pads it)."""
        k, m = len(seeds), len(self.names)
        if not all(0 <= s < 2**64 for s in seeds):
            return np.stack([self.words(s) for s in seeds]) if k else np.zeros((0, m, 8),
                                                                               np.uint64)
        sd = np.array(seeds, dtype=np.uint64).reshape(k, 1)
        ent = np.zeros((k, m, _POOL + self._keys.shape[1]), dtype=np.uint64)
        ent[:, :, 0] = sd & _U32
        ent[:, :, 1] = sd >> np.uint64(32)
        ent[:, :, _POOL:] = self._keys
        return _seed_words_batch(ent.reshape(k * m, -1)).reshape(k, m, 8)

    def get(self, seed: int) -> dict[str, np.random.Generator]:
        """The streams of ``seed`` (a non-negative integer) as numpy generators."""
        out = {}
        for name, gen, words in zip(self.names, self._gens, self.words(seed).tolist(),
                                    strict=True):
            state, inc = _pcg_state(words)
            gen.bit_generator.state = {"bit_generator": "PCG64",
                                       "state": {"state": state, "inc": inc},
                                       "has_uint32": 0, "uinteger": 0}
            out[name] = gen
        return out

    def __getstate__(self) -> dict[str, object]:
        return {"names": self.names}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(*state["names"])  # type: ignore[misc]
