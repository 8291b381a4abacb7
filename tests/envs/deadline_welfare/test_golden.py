"""Golden trajectories of DeadlineWelfare-v0: the env and its native vector env give the
observations, rewards, flags and infos recorded before the speed work on the kernels (commit
``902d445``), for several seeds, settings and action modes, with random actions and with an
OnSocMax rollout. Every published number (README, docs/reproduction-onsocmax.md, docs/learned/*)
was made with those draws, so a faster path must not move them.

Each trajectory is recorded by :class:`tests.golden.Recording`: types, shapes and integers
exactly, floats within a few ulps (portable across CPUs), and the exact bits as a SHA-256 checked
only by ``pytest -m golden_exact`` on the recording machine. The recorded per-episode returns are
kept in clear to point at the first diverging episode.

Record again (only after a deliberate, documented change of the trajectories):
``python -m tests.envs.deadline_welfare.test_golden --record`` (``--record-exact`` for this
machine's bits only)."""

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
from schedgym.envs.deadline_welfare import ENV_ID
from tests.golden import (
    Recording,
    as_recorded,
    assert_exact_match,
    assert_portable_match,
    record_main,
)

#: Step-info keys added since the recordings (the reset info's, so that a step's info has
#: every key of a reset's).
ADDED = ("n_jobs", "episode_seed")

GOLDEN = Path(__file__).with_name("golden_trajectories.json")

#: Settings: (name, make kwargs). paper-default in every family, the congested cell, Poisson
#: episodes of variable length, locality, the pricing mode, instance features.
SETTINGS: dict[str, dict[str, Any]] = {
    "default-linear": {},
    "default-log": {"utility": "log"},
    "default-sqrt": {"utility": "sqrt"},
    "congested-log": {"scenario": "congested", "utility": "log"},
    "poisson-short": {"scenario": "paper-poisson", "horizon": 6, "arrival_rate": 0.4},
    "locality-prior": {"locality_size": 3, "bound_mode": "prior", "coef_scope": "job",
                       "n_jobs": 7},
    "pricing-sqrt": {"action_mode": "pricing", "utility": "sqrt", "n_jobs": 9},
    "features": {"instance_features": True, "n_jobs": 6, "instance_seed": 3},
}


def _act(agent: Any, obs: Any, rng: np.random.Generator, space: Any) -> np.ndarray:
    """OnSocMax's action, or random float32 actions (some outside [-1, 1]) without an agent."""
    if agent is None:
        return (1.2 * rng.uniform(-1, 1, space.shape)).astype(np.float32)
    return agent.predict(obs, deterministic=True)[0]


def _single(kwargs: dict[str, Any], policy: str, seeds: list[int]) -> dict[str, Any]:
    """Episodes of the single env: seeded resets, then one seedless reset (drawn from the env's
    own generator); random actions (some outside [-1, 1]) or OnSocMax."""
    env = gym.make(ENV_ID, **kwargs)
    agent = agents.make("onsocmax", env) if policy == "onsocmax" else None
    rng = np.random.default_rng(1234)
    h, returns = Recording(), []
    for seed in [*seeds, None]:
        obs, info = env.reset(seed=seed)
        h.add(obs, info)
        ret, done = 0.0, False
        while not done:
            obs, r, term, trunc, info = env.step(_act(agent, obs, rng, env.action_space))
            h.add(obs, r, term, trunc, as_recorded(info, added=ADDED))
            ret += float(r)
            done = term or trunc
        returns.append(ret)
    return h.result(returns=returns)


def _vector(kwargs: dict[str, Any], policy: str, num_envs: int, steps: int) -> dict[str, Any]:
    """The native vector env over ``steps`` batched steps (autoresets included)."""
    env = gym.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode="vector_entry_point",
                       **kwargs)
    agent = agents.make("onsocmax", env.unwrapped.template) if policy == "onsocmax" else None
    rng = np.random.default_rng(99)
    h = Recording()
    obs, info = env.reset(seed=17)
    h.add(obs, info)
    total = np.zeros(num_envs)
    for _ in range(steps):
        obs, r, term, trunc, info = env.step(_act(agent, obs, rng, env.action_space))
        h.add(obs, r, term, trunc, as_recorded(info, added=ADDED))
        total += r
    return h.result(returns=total.tolist())


def _cases() -> dict[str, Any]:
    """Every golden case: name -> thunk."""
    cases: dict[str, Any] = {}
    for name, kw in SETTINGS.items():
        cases[f"env/{name}/random"] = (lambda kw=kw: _single(kw, "random", [0, 1, 7, 2**40]))
        cases[f"vec/{name}/random"] = (lambda kw=kw: _vector(kw, "random", 5, 31))
    for name in ("default-linear", "default-log", "congested-log", "locality-prior"):
        kw = SETTINGS[name]
        cases[f"env/{name}/onsocmax"] = (lambda kw=kw: _single(kw, "onsocmax", [0, 3]))
        cases[f"vec/{name}/onsocmax"] = (lambda kw=kw: _vector(kw, "onsocmax", 3, 25))
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text())


def test_every_case_is_recorded(golden):
    assert sorted(golden) == sorted(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_trajectory_equals_golden(case, golden):
    assert_portable_match(CASES[case](), golden[case], case)


@pytest.mark.golden_exact
@pytest.mark.parametrize("case", sorted(CASES))
def test_trajectory_has_the_golden_bits(case, golden):
    assert_exact_match(CASES[case](), golden[case], case)


def test_recording_sees_a_scalar_type_change():
    a, b = Recording(), Recording()
    a.add({"x": 1.0})
    b.add({"x": np.float64(1.0)})
    assert a.result()["structure"] != b.result()["structure"]
    assert a.result()["sha256"] != b.result()["sha256"]


if __name__ == "__main__":
    record_main(GOLDEN, CASES, sys.argv)
