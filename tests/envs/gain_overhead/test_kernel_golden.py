"""Golden outputs of GainOverhead's compiled kernels: the projection (``project``,
``project_capped_simplex``), the one-call step (``score_action``), the batched step
(``score_batch``) and OgaSched's update (``ascent_step``), recorded with the kernels as they were
before the projection rewrite (commit ``902d445``). The rewrite must give the same
bits: every published GainOverhead number (README, docs/gain-overhead.md) was made with them.

Each case is recorded by :class:`tests.golden.Recording`: dtypes and shapes exactly, floats within
a few ulps (portable across CPUs), and the exact bits (one differing ulp, or a ``-0.0`` for a
``0.0``) as a SHA-256 checked by ``pytest -m golden_exact`` on the recording machine. The rewards
of the OgaSched rollouts are kept in clear.

Record again (only after a deliberate, documented change of the numbers):
``python -m tests.envs.gain_overhead.test_kernel_golden --record`` (``--record-exact`` for this
machine's bits only).
"""

from __future__ import annotations

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
from tests.golden import Recording, assert_exact_match, assert_portable_match, record_main

GOLDEN = Path(__file__).with_name("golden_kernels.json")
#: Settings: the paper default (groups of 1-4 channels), a small instance with mixed utilities.
SETTINGS: dict[str, dict[str, Any]] = {
    "paper": {"scenario": "paper-default"},
    "small-mixed": {"n_types": 4, "n_instances": 6, "n_resources": 3, "horizon": 40,
                    "utility": "mixed"},
}


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
    inst, rng, h = env.instance, np.random.default_rng(11), Recording()
    x = env.arrivals[0].astype(np.float64)
    for i in range(40):
        lim = 1.0 if i % 2 else 1.3
        a = rng.uniform(-lim, lim, inst.edge_caps.size)
        h.add(*dynamics.score_action(inst, a, x))
    return h.result()


def _project_and_batch(name: str) -> dict[str, Any]:
    env = _env(name)
    inst, rng, h = env.instance, np.random.default_rng(12), Recording()
    zs = boundary_points(inst, rng)
    zs += [rng.uniform(0, 1, inst.edge_caps.shape) * inst.edge_caps for _ in range(10)]
    for z in zs:
        h.add(*dynamics.project_grouped(inst, z))
    x = np.stack([env.arrivals[t % len(env.arrivals)] for t in range(len(zs))])
    out = dynamics.score_batch(inst, np.stack(zs), x.astype(np.float64))
    h.add(out.y, out.utilization, out.distance, out.gain, out.penalty)
    return h.result()


def _ascent(name: str) -> dict[str, Any]:
    env = _env(name)
    inst, h = env.instance, Recording()
    y = np.zeros(inst.edge_caps.shape)
    for t in range(80):
        y = dynamics.ascent_step(inst, env.arrivals[t % len(env.arrivals)].astype(np.float64), y,
                                 25.0 * 0.9999 ** t)
        h.add(y)
    return h.result()


def _columns() -> dict[str, Any]:
    """``project_capped_simplex`` on padded batches: both size paths, boundary regimes."""
    rng, h = np.random.default_rng(13), Recording()
    for n_max in (1, 2, 4, 6, 16, 24):
        z = rng.normal(0.0, 3.0, (300, n_max))
        a = rng.uniform(0.0, 4.0, (300, n_max)) * (rng.random((300, n_max)) > 0.2)
        s0 = np.clip(z, 0.0, a).sum(axis=1)
        c = s0 * rng.uniform(0.0, 1.2, 300)
        c[::7] = 0.0
        c[1::7] = s0[1::7]  # exactly at capacity
        z[2::7] = np.round(z[2::7])  # ties
        h.add(project_capped_simplex(z, a, c))
    return h.result()


def _ogasched(name: str, timing: str) -> dict[str, Any]:
    env = gym.make(ENV_ID, **{**SETTINGS[name], "horizon": 60})
    agent = agents.make("ogasched", env, timing=timing)
    obs, _ = env.reset(seed=5)
    h, rewards, done = Recording(), [], False
    while not done:
        a, _ = agent.predict(obs, deterministic=True)
        obs, r, term, trunc, info = env.step(a)
        h.add(a, info["allocation"])
        rewards.append(float(r))
        done = term or trunc
    return h.result(rewards=rewards)


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
    assert_portable_match(CASES[case](), _recorded(case), case)


@pytest.mark.golden_exact
@pytest.mark.parametrize("case", sorted(CASES))
def test_kernels_have_the_golden_bits(case):
    assert_exact_match(CASES[case](), _recorded(case), case)


def test_exact_hash_sees_a_signed_zero():
    a, b = Recording(), Recording()
    a.add(np.array([0.0]))
    b.add(np.array([-0.0]))
    assert a.result()["sha256"] != b.result()["sha256"]


if __name__ == "__main__":
    record_main(GOLDEN, CASES, sys.argv)
