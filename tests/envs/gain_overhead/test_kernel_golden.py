"""Golden outputs of GainOverhead's compiled kernels: the projection (``project``,
``project_capped_simplex``), the one-call step (``score_action``), the batched step
(``score_batch``) and OgaSched's update (``ascent_step``), recorded with the kernels as they were
before the projection rewrite of issue 11 (commit ``902d445``). The rewrite must give the same
bits: every published GainOverhead number (README, docs/gain-overhead.md) was made with them.

Each case is a SHA-256 over the raw bytes of every output array (dtype and shape included), so
one differing ulp, or a ``-0.0`` for a ``0.0``, fails. The returns of two OgaSched rollouts are
kept in clear beside the hashes.

Record again (only after a deliberate, documented change of the numbers):
``python tests/envs/gain_overhead/test_kernel_golden.py --record``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import schedgym  # noqa: F401  (registers the env ids)
from schedgym import agents
from schedgym.core.projection import project_capped_simplex
from schedgym.envs.gain_overhead import ENV_ID, dynamics

GOLDEN = Path(__file__).with_name("golden_kernels.json")
#: Settings: the paper default (groups of 1-4 channels), a small instance with mixed utilities.
SETTINGS: dict[str, dict[str, Any]] = {
    "paper": {"scenario": "paper-default"},
    "small-mixed": {"n_types": 4, "n_instances": 6, "n_resources": 3, "horizon": 40,
                    "utility": "mixed"},
}


class _Hasher:
    def __init__(self) -> None:
        self.h = hashlib.sha256()

    def add(self, *arrays: Any) -> None:
        for a in arrays:
            arr = np.ascontiguousarray(a)
            self.h.update(f"{arr.dtype.str}{arr.shape}".encode() + arr.tobytes())


def _env(name: str) -> Any:
    env = gym.make(ENV_ID, **SETTINGS[name]).unwrapped
    env.reset(seed=3)
    return env


def boundary_points(inst: Any, rng: np.random.Generator) -> list[np.ndarray]:
    """Pre-projection allocations ``(E, K)`` at the projection's edge cases: exactly at every
    capacity, zero entries, negative entries, entries above their caps, ties inside a group."""
    caps, slots, K = inst.edge_caps, inst.instance_slots, inst.n_resources
    out = []
    at_cap = np.zeros_like(caps)  # each group sums exactly to its capacity where possible
    for r, row in enumerate(slots):
        edges = row[row >= 0]
        for k in range(K):
            at_cap[edges, k] = np.minimum(caps[edges, k], inst.capacities[r, k] / len(edges))
    out.append(at_cap)
    out.append(np.zeros_like(caps))
    out.append(-rng.uniform(0, 5, caps.shape))
    out.append(caps * rng.uniform(1.0, 3.0, caps.shape))
    ties = np.repeat(rng.uniform(0, 1, (1, K)), caps.shape[0], axis=0) * caps.max()
    out.append(ties)
    mixed = rng.normal(0.3, 1.0, caps.shape) * caps
    mixed[rng.random(caps.shape) < 0.2] = 0.0
    out.append(mixed)
    return out


def _score_action(name: str) -> dict[str, Any]:
    env = _env(name)
    inst, rng, h = env.instance, np.random.default_rng(11), _Hasher()
    x = env.arrivals[0].astype(np.float64)
    for i in range(40):
        lim = 1.0 if i % 2 else 1.3
        a = rng.uniform(-lim, lim, inst.edge_caps.size)
        h.add(*dynamics.score_action(inst, a, x))
    return {"sha256": h.h.hexdigest()}


def _project_and_batch(name: str) -> dict[str, Any]:
    env = _env(name)
    inst, rng, h = env.instance, np.random.default_rng(12), _Hasher()
    zs = boundary_points(inst, rng)
    zs += [rng.uniform(0, 1, inst.edge_caps.shape) * inst.edge_caps for _ in range(10)]
    for z in zs:
        h.add(*dynamics.project_grouped(inst, z))
    x = np.stack([env.arrivals[t % len(env.arrivals)] for t in range(len(zs))])
    out = dynamics.score_batch(inst, np.stack(zs), x.astype(np.float64))
    h.add(out.y, out.utilization, out.distance, out.gain, out.penalty)
    return {"sha256": h.h.hexdigest()}


def _ascent(name: str) -> dict[str, Any]:
    env = _env(name)
    inst, h = env.instance, _Hasher()
    y = np.zeros(inst.edge_caps.shape)
    for t in range(80):
        y = dynamics.ascent_step(inst, env.arrivals[t % len(env.arrivals)].astype(np.float64), y,
                                 25.0 * 0.9999 ** t)
        h.add(y)
    return {"sha256": h.h.hexdigest()}


def _columns() -> dict[str, Any]:
    """``project_capped_simplex`` on padded batches: both size paths, boundary regimes."""
    rng, h = np.random.default_rng(13), _Hasher()
    for n_max in (1, 2, 4, 6, 16, 24):
        z = rng.normal(0.0, 3.0, (300, n_max))
        a = rng.uniform(0.0, 4.0, (300, n_max)) * (rng.random((300, n_max)) > 0.2)
        s0 = np.clip(z, 0.0, a).sum(axis=1)
        c = s0 * rng.uniform(0.0, 1.2, 300)
        c[::7] = 0.0
        c[1::7] = s0[1::7]  # exactly at capacity
        z[2::7] = np.round(z[2::7])  # ties
        h.add(project_capped_simplex(z, a, c))
    return {"sha256": h.h.hexdigest()}


def _ogasched(name: str, timing: str) -> dict[str, Any]:
    env = gym.make(ENV_ID, **{**SETTINGS[name], "horizon": 60})
    agent = agents.make("ogasched", env, timing=timing)
    obs, _ = env.reset(seed=5)
    h, rewards, done = _Hasher(), [], False
    while not done:
        a, _ = agent.predict(obs, deterministic=True)
        obs, r, term, trunc, info = env.step(a)
        h.add(a, info["allocation"])
        rewards.append(float(r))
        done = term or trunc
    return {"sha256": h.h.hexdigest(), "rewards": rewards}


def _cases() -> dict[str, Any]:
    cases: dict[str, Any] = {"columns": _columns}
    for name in SETTINGS:
        cases[f"score_action/{name}"] = lambda name=name: _score_action(name)
        cases[f"project+batch/{name}"] = lambda name=name: _project_and_batch(name)
        cases[f"ascent/{name}"] = lambda name=name: _ascent(name)
        for timing in ("oco", "lookahead"):
            cases[f"ogasched-{timing}/{name}"] = (
                lambda name=name, timing=timing: _ogasched(name, timing))
    return cases


CASES = _cases()


def _recorded(case: str | None = None) -> Any:
    data = json.loads(GOLDEN.read_text())
    return data if case is None else data[case]


def test_the_recording_holds_exactly_these_cases():
    assert set(_recorded()) == set(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_kernels_equal_golden(case):
    want, got = _recorded(case), CASES[case]()
    assert got.get("rewards") == want.get("rewards"), f"{case}: rewards differ"
    assert got["sha256"] == want["sha256"], f"{case}: output bits differ"


def test_hash_sees_a_signed_zero():
    a, b = _Hasher(), _Hasher()
    a.add(np.array([0.0]))
    b.add(np.array([-0.0]))
    assert a.h.digest() != b.h.digest()


if __name__ == "__main__" and "--record" in sys.argv:
    GOLDEN.write_text(json.dumps({k: f() for k, f in sorted(CASES.items())}, indent=1) + "\n")
    print(f"recorded {len(CASES)} cases in {GOLDEN}")
