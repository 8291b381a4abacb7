"""Golden trajectories of FluctuatingSpeed-v0: the env, its native vector env and the agents
(ESDP, HAUF, LCF, LWTF, the oracle) give the observations, rewards, flags and infos recorded
before the first-use compile work (commit ``74e0b7d``), so a change of how the
kernels are compiled cannot move a published number. Recorded and compared as the
DeadlineWelfare golden test (:mod:`tests.golden`: portable within a few ulps on every CPU, exact
bits by ``pytest -m golden_exact`` on the recording machine).

Record again (only after a deliberate, documented change of the trajectories):
``python -m tests.envs.fluctuating_speed.test_fs_golden --record`` (``--record-exact`` for this
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
from schedgym.envs.fluctuating_speed import ENV_ID
from tests.golden import (
    Recording,
    as_recorded,
    assert_exact_match,
    assert_portable_match,
    record_main,
)

GOLDEN = Path(__file__).with_name("golden_trajectories.json")

#: (name, make kwargs): paper-default with and without the oracle, a raising-free repair of
#: random selections, the feedback statistics and instance features.
SETTINGS: dict[str, dict[str, Any]] = {
    "default": {"horizon": 60},
    "no-oracle-stats": {"horizon": 40, "compute_oracle": False, "feedback_stats": True,
                        "instance_features": True, "instance_seed": 2},
}
AGENTS = ("esdp", "hauf", "lcf", "lwtf", "oracle")


def _single(kwargs: dict[str, Any], policy: str | None) -> dict[str, Any]:
    env = gym.make(ENV_ID, **kwargs)
    agent = agents.make(policy, env) if policy else None
    rng = np.random.default_rng(5)
    h, returns = Recording(), []
    for seed in (0, 3, None):
        obs, info = env.reset(seed=seed)
        h.add(obs, as_recorded(info))
        ret, done = 0.0, False
        while not done:
            a = (agent.predict(obs, deterministic=True)[0] if agent
                 else rng.integers(0, 2, env.action_space.n).astype(np.int8))
            obs, r, term, trunc, info = env.step(a)
            h.add(obs, r, term, trunc, as_recorded(info, reward=r))
            ret += float(r)
            done = term or trunc
        returns.append(ret)
    return h.result(returns=returns)


def _vector(kwargs: dict[str, Any], steps: int) -> dict[str, Any]:
    env = gym.make_vec(ENV_ID, num_envs=3, vectorization_mode="vector_entry_point", **kwargs)
    rng = np.random.default_rng(11)
    h = Recording()
    obs, info = env.reset(seed=17)
    h.add(obs, as_recorded(info))
    total = np.zeros(3)
    for _ in range(steps):
        out = env.step(rng.integers(0, 2, (3, env.single_action_space.n)).astype(np.int8))
        h.add(*out[:4], as_recorded(out[4], reward=out[1]))  # as recorded
        total += out[1]
    return h.result(returns=total.tolist())


def _cases() -> dict[str, Any]:
    cases: dict[str, Any] = {}
    for name, kw in SETTINGS.items():
        cases[f"env/{name}/random"] = (lambda kw=kw: _single(kw, None))
        cases[f"vec/{name}/random"] = (lambda kw=kw: _vector(kw, 2 * kw["horizon"] + 7))
    for ag in AGENTS:
        cases[f"env/default/{ag}"] = (lambda ag=ag: _single(SETTINGS["default"], ag))
    return cases


CASES = _cases()


def _recorded() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text())


def test_the_recording_has_every_case():
    assert sorted(_recorded()) == sorted(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_trajectory_is_the_recorded_one(case):
    assert_portable_match(CASES[case](), _recorded()[case], case)


@pytest.mark.golden_exact
@pytest.mark.parametrize("case", sorted(CASES))
def test_trajectory_has_the_recorded_bits(case):
    assert_exact_match(CASES[case](), _recorded()[case], case)


if __name__ == "__main__":
    record_main(GOLDEN, CASES, sys.argv)
