"""Golden outputs of the GainOverhead step pieces around the projection, recorded (commit
``d458fee``) before a later speed pass restructured them for speed: the reward's parts
(``reward_parts``: gain, penalty, per-type gains and penalties, ``k*``), the supergradient and
OgaSched's ascent point, and a paper-default batch of 64 copies of the native vector env (every
observation, reward and info). The restructured kernels must give the same bits: every
published GainOverhead number was made with them.

Inputs cover the paper default (all utilities linear) and mixed utilities (every family), with
projected allocations, raw ones (negative entries, entries above their caps) and signed zeros
(``-0.0``), so that a changed summation order or a lost ``0.0 +`` start shows.

Each case is recorded by :class:`tests.golden.Recording`, as in :mod:`.test_kernel_golden`
(portable within a few ulps; exact bits by ``pytest -m golden_exact``). Record again (only after
a deliberate, documented change of the numbers):
``python -m tests.envs.gain_overhead.test_step_golden --record`` (``--record-exact`` for this
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
from schedgym.envs.gain_overhead import ENV_ID, dynamics
from tests.golden import (
    Recording,
    as_recorded,
    assert_exact_match,
    assert_portable_match,
    record_main,
)

GOLDEN = Path(__file__).with_name("golden_step.json")
#: Settings: the paper default (all linear), it with mixed utilities, a small mixed instance.
SETTINGS: dict[str, dict[str, Any]] = {
    "paper": {"scenario": "paper-default"},
    "paper-mixed": {"scenario": "paper-default", "utility": "mixed"},
    "small-mixed": {"n_types": 4, "n_instances": 6, "n_resources": 3, "horizon": 40,
                    "utility": "mixed"},
}


def _inputs(inst: Any, seed: int) -> list[np.ndarray]:
    """Allocations ``(E, K)``: projected random points, raw points (negative, above the caps),
    zeros of both signs and a mixture with ``-0.0`` entries."""
    rng, caps = np.random.default_rng(seed), inst.edge_caps
    out = [dynamics.project(inst, rng.uniform(0.0, 1.0, caps.shape) * caps) for _ in range(4)]
    out += [rng.normal(0.2, 1.0, caps.shape) * caps for _ in range(2)]
    out += [np.zeros(caps.shape), -np.zeros(caps.shape)]
    mixed = rng.uniform(0.0, 1.0, caps.shape) * caps
    mixed[rng.random(caps.shape) < 0.4] = -0.0
    out.append(mixed)
    return out


def _arrivals(inst: Any, rng: np.random.Generator) -> np.ndarray:
    x = (rng.random(inst.n_types) < 0.7).astype(np.float64)
    x[0] = 2.0  # arrival counts too (the reward is linear in x)
    return x


def _reward_and_gradient(name: str) -> dict[str, Any]:
    env = gym.make(ENV_ID, **SETTINGS[name]).unwrapped
    inst, rng, h = env.instance, np.random.default_rng(21), Recording()
    for y in _inputs(inst, 22):
        x = _arrivals(inst, rng)
        p = dynamics.reward_parts(inst, x, y)
        h.add(np.array([p.reward, p.gain, p.penalty]), p.type_gain, p.type_penalty, p.k_star)
        h.add(dynamics.supergradient(inst, x, y), dynamics.ascent_step(inst, x, y, 0.7))
    return h.result()


def _vector(name: str) -> dict[str, Any]:
    venv = gym.make_vec(ENV_ID, num_envs=64, vectorization_mode="vector_entry_point",
                        **SETTINGS[name])
    rng, h = np.random.default_rng(23), Recording()
    obs, _ = venv.reset(seed=4)
    h.add(*obs.values())
    for _ in range(4):
        a = rng.uniform(-1.2, 1.2, venv.action_space.shape).astype(np.float32)
        obs, rew, term, trunc, info = venv.step(a)
        rec = as_recorded(info)  # the names the recording was made with
        h.add(*obs.values(), rew, term, trunc, *(rec[k] for k in sorted(rec)))
    return h.result()


def _cases() -> dict[str, Any]:
    cases: dict[str, Any] = {}
    for name in SETTINGS:
        cases[f"reward+gradient/{name}"] = lambda name=name: _reward_and_gradient(name)
    for name in ("paper", "paper-mixed"):
        cases[f"vector64/{name}"] = lambda name=name: _vector(name)
    return cases


CASES = _cases()


def test_the_recording_holds_exactly_these_cases():
    assert set(json.loads(GOLDEN.read_text())) == set(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_step_pieces_equal_golden(case):
    assert_portable_match(CASES[case](), json.loads(GOLDEN.read_text())[case], case)


@pytest.mark.golden_exact
@pytest.mark.parametrize("case", sorted(CASES))
def test_step_pieces_have_the_golden_bits(case):
    assert_exact_match(CASES[case](), json.loads(GOLDEN.read_text())[case], case)


if __name__ == "__main__":
    record_main(GOLDEN, CASES, sys.argv)
