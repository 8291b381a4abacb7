"""DeadlineWelfare-v0's memory: the estimate counts every table the env builds (the entity
observation's and the expected-later-demand table included), bounds what an episode really
allocates within a stated factor, refuses what does not fit in one line before anything is
allocated, and a week of the whole Alibaba cluster fits the default limit."""

from __future__ import annotations

import gc
import subprocess
import sys
import time
import tracemalloc

import gymnasium as gym
import numpy as np
import pytest

from schedgym import agents
from schedgym.envs.deadline_welfare import ENV_ID, dynamics
from schedgym.envs.deadline_welfare.memory import (
    ENTITY_BYTES,
    breakdown,
    estimate_mb,
)

#: The estimate lies between the measured peak and this many times it (tracemalloc: every
#: numpy buffer and Python object the episode allocates, after a warm-up that compiles).
FACTOR = 3.0

CASES = [
    ({}, "max-first"),
    ({"n_instances": 200, "horizon": 60, "n_jobs": 150}, "equal-share"),
    ({"n_instances": 150, "horizon": 60, "n_jobs": 100, "obs_mode": "entities",
      "action_mode": "pricing"}, "fixed-price"),
    ({"n_instances": 30, "horizon": 300, "n_jobs": 80, "obs_mode": "entities",
      "action_mode": "demand_price"}, None),
    ({"scenario": "alibaba-gpu-2023", "n_instances": 200, "n_jobs": None, "horizon": 36},
     "jsq"),
    ({"n_instances": 1500, "horizon": 30, "n_jobs": 40, "duration_mean": 12.0}, "onsocmax"),
]


def _play(kw: dict, name: str | None) -> object:
    env = gym.make(ENV_ID, **kw).unwrapped
    obs, _ = env.reset(seed=0)
    agent = agents.make(name, env) if name else None
    env.action_space.seed(0)
    done = False
    while not done:
        a = agent.predict(obs, deterministic=True)[0] if agent else env.action_space.sample()
        obs, _, done, _, _ = env.step(a)
    return env


@pytest.fixture(scope="module")
def warm() -> None:
    for kw, name in CASES:  # compile every kernel first: compiling allocates too
        _play({k: v for k, v in kw.items() if k not in ("n_instances", "horizon", "n_jobs")},
              name)


@pytest.mark.parametrize("kw, name", CASES)
def test_estimate_bounds_the_measured_peak(warm, kw, name):
    gc.collect()
    tracemalloc.start()
    try:
        env = _play(kw, name)
        peak = tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
    est = estimate_mb(env.memory_parts())
    assert peak <= est <= FACTOR * peak, (kw, est, peak)


def test_entity_tables_are_counted():
    flat = gym.make(ENV_ID, n_instances=40, horizon=50).unwrapped.memory_parts()
    ent = gym.make(ENV_ID, n_instances=40, horizon=50, obs_mode="entities").unwrapped
    parts = ent.memory_parts()
    U = 40 * 50
    assert parts["the entity observation"] == ENTITY_BYTES * U
    assert parts["the expected-later-demand table (T + 1) x R T"] == 8.0 * 51 * U
    assert flat["the entity observation"] == 0.0
    assert estimate_mb(parts) > estimate_mb(flat)
    # the table the env built is the one counted
    assert ent.expected_later_demand().nbytes == 8 * 51 * U


@pytest.mark.parametrize("kw, table", [
    ({"n_instances": 21, "horizon": 5000, "n_jobs": 9, "action_mode": "demand_price",
      "instance_features": True, "obs_mode": "entities"}, "the expected-later-demand table"),
    ({"n_instances": 21, "horizon": 5000, "n_jobs": 9, "action_mode": "demand_price",
      "instance_features": True}, "the expected-later-demand table"),
    ({"n_instances": 100_000, "obs_mode": "entities"}, "the entity observation"),
])
def test_what_does_not_fit_is_refused_up_front_in_one_line(kw, table):
    t0 = time.process_time()
    with pytest.raises(ValueError) as err:
        gym.make(ENV_ID, **kw)
    assert time.process_time() - t0 < 2.0  # before anything is allocated
    msg = str(err.value)
    assert "\n" not in msg and f"({table}" in msg and "more than memory_limit_mb=2,048" in msg
    assert "pass a larger memory_limit_mb=" in msg


def test_an_episode_beyond_the_limit_is_refused_at_reset():
    """The construction estimate takes the expected units; an episode that needs more is
    refused at its reset, the env unchanged."""
    env = gym.make(ENV_ID, n_instances=50, horizon=40, n_jobs=30).unwrapped
    env.reset(seed=1)
    jobs = env.jobs
    need = estimate_mb(breakdown(50, 40, jobs.n_jobs, float(jobs.sizes.sum())))
    env.memory_limit_mb = 0.99 * need
    with pytest.raises(ValueError, match=r"the episode's 30 jobs on 50 x 40 units need about"):
        env.reset(seed=1)
    assert env.jobs is jobs


def test_expected_later_demand_alone_is_refused_in_one_line():
    env = gym.make(ENV_ID, n_instances=50, horizon=200, memory_limit_mb=50).unwrapped
    with pytest.raises(ValueError, match=r"the expected-later-demand table \(201 x 10000\) "
                                         r"needs 15 MB: more than memory_limit_mb=10"):
        env.memory_limit_mb = 10.0
        env.expected_later_demand()


def test_dense_dispatch_is_refused_above_the_limit_and_per_job_always_works():
    env = gym.make(ENV_ID, n_instances=30, horizon=20, n_jobs=12).unwrapped
    env.reset(seed=0)
    for _ in range(5):
        env.step(env.action_space.sample())
    X = env.dispatch
    for n in range(12):
        np.testing.assert_array_equal(env.job_dispatch(n), X[n])
    env.memory_limit_mb = 0.01
    with pytest.raises(ValueError, match=r"dispatch needs an \(12, 30, 20\) array"):
        env.dispatch  # noqa: B018
    np.testing.assert_array_equal(env.job_dispatch(3), X[3])


WHOLE = {"scenario": "alibaba-gpu-2023", "n_instances": "all", "split": "test",
         "horizon": 168, "n_jobs": None}


def test_a_week_of_the_whole_cluster_builds_and_steps_within_the_default_limit():
    env = gym.make(ENV_ID, **WHOLE).unwrapped
    assert env.instance.n_instances == 1523 and env.instance.horizon == 168
    assert estimate_mb(env.memory_parts()) < env.memory_limit_mb == 2048
    ent = gym.make(ENV_ID, obs_mode="entities", action_mode="pricing", **WHOLE).unwrapped
    assert estimate_mb(ent.memory_parts()) < 2048
    del ent
    obs, info = env.reset(seed=0)
    assert info["n_jobs"] > 1000
    agent = agents.make("max-first", env)
    for _ in range(4):
        n, usage = env.job_index, env.usage.copy()
        obs, r, _, _, step = env.step(agent.predict(obs, deterministic=True)[0])
        assert np.isfinite(r) and r > 0
        assert dynamics.step_violation(env.instance, env.jobs, n, step["dispatch"], usage) \
            <= 1e-7


_EPISODE = r"""
import json, resource, sys, time
import gymnasium as gym, numpy as np, schedgym
from schedgym import agents
kw, name = json.loads(sys.argv[1]), sys.argv[2]
env = gym.make("schedgym/DeadlineWelfare-v0", **kw)
t0 = time.process_time()
obs, _ = env.reset(seed=0)
agent = agents.make(name, env)
done, n = False, 0
while not done:
    obs, r, done, _, _ = env.step(agent.predict(obs, deterministic=True)[0])
    n += 1
print(json.dumps({"jobs": n, "cpu_s": time.process_time() - t0,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("name, obs_mode, mode", [
    ("max-first", "flat", "dispatch"), ("onsocmax", "flat", "dispatch"),
    ("fixed-price", "entities", "pricing")])
def test_a_whole_cluster_episode_fits_3_gb_and_10_minutes(name, obs_mode, mode):
    import json

    kw = {**WHOLE, "obs_mode": obs_mode, "action_mode": mode}
    out = subprocess.run([sys.executable, "-c", _EPISODE, json.dumps(kw), name],
                         capture_output=True, text=True, check=True, timeout=900)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["jobs"] > 1000 and got["rss_mb"] <= 3072 and got["cpu_s"] <= 600, got

