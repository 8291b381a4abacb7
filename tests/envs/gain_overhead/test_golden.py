"""Golden trajectories of GainOverhead-v0, recorded before the Python-overhead work
(single env and native vector env), that the current code must reproduce.

``data/golden_trajectories.npz`` holds every observation, reward, flag and info (values and
Python/numpy types) of short rollouts: the single env in every action mode and arrival protocol
(random actions, some outside the box, across episode ends), paper-default with random actions,
two classical agents, and the native vector env across autoresets and a masked reset. Values are
compared bit for bit except floats, which may differ by 1e-12 relative (float64) or one ulp
(float32 observations) so that a reformulated kernel elsewhere (an equal-to-1e-12 change, which
the project's rules allow) does not fail this file; ``SCHEDGYM_GOLDEN_EXACT=1`` demands the same
bits everywhere. Re-record (only when a change of values is intended and documented) with
``python -m tests.envs.gain_overhead.test_golden --record``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from schedgym import agents
from tests.envs.gain_overhead.conftest import ENV_ID, SMALL
from tests.golden import as_recorded

GOLDEN = Path(__file__).parent / "data" / "golden_trajectories.npz"
SHORT = {**SMALL, "horizon": 5, "utility": "mixed"}
#: Single-env settings: every action mode and protocol (and the instance features).
SINGLE: dict[str, dict[str, Any]] = {
    "allocation-revealed": {},
    "allocation-hidden": {"arrivals": "hidden"},
    "fractions-revealed": {"action_mode": "fractions"},
    "fractions-hidden": {"action_mode": "fractions", "arrivals": "hidden"},
    "prices-revealed": {"action_mode": "prices", "instance_features": True},
    "prices-hidden": {"action_mode": "prices", "arrivals": "hidden"},
}


def _leaves(prefix: str, value: Any) -> Iterator[tuple[str, Any]]:
    """``(key, leaf)`` pairs of a nested dict/tuple of arrays and scalars."""
    if isinstance(value, dict):
        for k in sorted(value):
            yield from _leaves(f"{prefix}/{k}", value[k])
    elif isinstance(value, tuple):
        for i, v in enumerate(value):
            yield from _leaves(f"{prefix}/{i}", v)
    else:
        yield prefix, value


def _kind(v: Any) -> str:
    """The leaf's type as a string (``ndarray:float32``, ``float``, ``float64``, ...)."""
    if isinstance(v, np.ndarray):
        return f"ndarray:{v.dtype}"
    return type(v).__name__


def _random_actions(space: gym.spaces.Box, n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.3, 1.3, space.shape).astype(np.float32) for _ in range(n)]


def _single(kw: dict[str, Any], seed: int, n: int, agent: str | None = None) -> Iterator[tuple]:
    """Reset + ``n`` steps of the single env (reset again after an episode end)."""
    env = gym.make(ENV_ID, **kw)
    policy = agents.make(agent, env) if agent else None
    acts = _random_actions(env.action_space, n, seed)  # type: ignore[arg-type]
    obs, info = env.reset(seed=seed)
    yield obs, info
    start = True
    for i in range(n):
        a = policy.predict(obs, episode_start=np.array([start]))[0] if policy else acts[i]
        out = env.step(a)
        yield out
        obs, start = out[0], bool(out[2] or out[3])
        if start:
            obs, info = env.reset()
            yield obs, info


def _vector(kw: dict[str, Any], n: int) -> Iterator[tuple]:
    """Native vector env of 3 copies: reset, ``n`` steps across autoresets, a masked reset."""
    venv = gym.make_vec(ENV_ID, num_envs=3, vectorization_mode="vector_entry_point", **kw)
    acts = _random_actions(venv.action_space, n, 5)  # type: ignore[arg-type]
    yield venv.reset(seed=9)
    for i in range(n):
        yield venv.step(acts[i])
        if i == 6:
            yield venv.reset(seed=2, options={"reset_mask": np.array([False, True, False])})


def rollouts() -> Iterator[tuple[str, Iterator[tuple]]]:
    """Every recorded rollout, by name."""
    for name, kw in SINGLE.items():
        for seed in (0, 3):
            yield f"single/{name}/{seed}", _single({**SHORT, **kw}, seed, 12)
    yield "paper-default/random", _single({}, 1, 3)
    yield "agent/ogasched", _single({**SHORT, "horizon": 7}, 4, 9, agent="ogasched")
    yield "agent/drf", _single({**SHORT, "horizon": 7}, 4, 9, agent="drf")
    for name, kw in SINGLE.items():
        yield f"vector/{name}", _vector({**SHORT, **kw}, 16)


def record() -> dict[str, tuple[str, np.ndarray]]:
    """``{key: (type, value)}`` of every leaf of every rollout."""
    return {key: (_kind(leaf), np.asarray(leaf))
            for name, steps in rollouts()
            for t, step in enumerate(steps)
            for key, leaf in _leaves(f"{name}/{t}", (*step[:-1], as_recorded(step[-1])))}


def pack(leaves: dict[str, tuple[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """One flat array per dtype plus a JSON index (key, type, dtype, shape, offset): a few
    arrays in the ``.npz`` instead of thousands of tiny ones."""
    index, parts = [], {}  # type: ignore[var-annotated]
    for key, (kind, v) in leaves.items():
        buf = parts.setdefault(v.dtype.str, [])
        index.append([key, kind, v.dtype.str, list(v.shape), sum(p.size for p in buf)])
        buf.append(v.ravel())
    out = {dt: np.concatenate(buf) for dt, buf in parts.items()}
    out["index"] = np.asarray(json.dumps(index))
    return out


def unpack(data: Any) -> dict[str, tuple[str, np.ndarray]]:
    """Inverse of :func:`pack`."""
    out = {}
    for key, kind, dt, shape, off in json.loads(str(data["index"])):
        size = int(np.prod(shape, dtype=np.int64))
        out[key] = (kind, data[dt][off:off + size].reshape(shape))
    return out


def _compare(key: str, got: np.ndarray, want: np.ndarray, exact: bool) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, key
    if exact or got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=key, strict=True)
    elif got.dtype == np.float32:
        np.testing.assert_allclose(got, want, rtol=2.0**-23, atol=1e-7, err_msg=key)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9, err_msg=key)


@pytest.mark.skipif(not GOLDEN.exists(), reason="golden file not recorded")
def test_trajectories_equal_the_golden_recording():
    exact = os.environ.get("SCHEDGYM_GOLDEN_EXACT") == "1"
    want = unpack(np.load(GOLDEN))
    got = record()
    assert sorted(got) == sorted(want)
    for key, (kind, value) in want.items():
        assert got[key][0] == kind, f"{key}: type {got[key][0]}, recorded {kind}"
        _compare(key, got[key][1], value, exact)


if __name__ == "__main__" and "--record" in sys.argv:
    GOLDEN.parent.mkdir(exist_ok=True)
    data = record()
    np.savez_compressed(GOLDEN, **pack(data))  # type: ignore[arg-type]
    print(f"{GOLDEN}: {len(data)} leaves")
