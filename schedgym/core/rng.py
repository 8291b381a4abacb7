"""Named, independent random streams derived from one integer seed.

A stream is identified by ``(seed, name)``: its generator is
``np.random.Generator(PCG64(SeedSequence(seed, spawn_key=(crc32(name),))))``. Streams with different
names are statistically independent, and adding a new stream never changes an existing one, so a
sweep over one parameter (e.g. the arrival probability) keeps every other random quantity of the
instance fixed for a given seed.
"""

from __future__ import annotations

import functools
import zlib

import numpy as np


@functools.lru_cache(maxsize=256)
def _key(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


def stream(seed: int, name: str) -> np.random.Generator:
    """Return the generator of the stream ``name`` for ``seed`` (a non-negative integer)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed),
                                                                      spawn_key=(_key(name),))))


def streams(seed: int, *names: str) -> dict[str, np.random.Generator]:
    """Return ``{name: stream(seed, name)}`` for every name."""
    seed = int(seed)
    gen, pcg, seq = np.random.Generator, np.random.PCG64, np.random.SeedSequence
    return {n: gen(pcg(seq(seed, spawn_key=(_key(n),)))) for n in names}


def episode_seed(np_random: np.random.Generator) -> int:
    """Draw a fresh 63-bit episode seed from an env's ``np_random`` (used when reset(seed=None))."""
    return int(np_random.integers(0, 2**63 - 1))
