"""DeadlineWelfare-v0 hardening: pickling, step before reset, every accepted setting
runs, errors name the user's parameter, bools refused, explicit-instance conflicts refused, the
memory estimate, max_episode_steps."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

from schedgym.envs.deadline_welfare import ENV_ID, SCENARIOS
from schedgym.envs.deadline_welfare.env import DeadlineWelfareEnv
from schedgym.envs.deadline_welfare.generator import upper_f32
from schedgym.envs.deadline_welfare.memory import estimate_mb
from schedgym.envs.deadline_welfare.types import ARRIVAL_RATE_MAX, DeadlineWelfareInstance, Jobs

from .conftest import SMALL, make_tiny


def _rollout(env: gym.Env, seed: int) -> list[float]:
    env.reset(seed=seed)
    rewards, done = [], False
    while not done:
        _, r, done, _, _ = env.step(np.zeros(env.action_space.shape, np.float32))
        rewards.append(r)
    return rewards


@pytest.mark.parametrize("scenario", SCENARIOS.names())
def test_every_scenario_pickles_and_replays(scenario):
    env = gym.make(ENV_ID, scenario=scenario)
    clone = pickle.loads(pickle.dumps(env))
    assert _rollout(clone, 5) == _rollout(env, 5)


@pytest.mark.parametrize("mode", ["dispatch", "pricing"])
def test_step_before_reset_raises_on_the_unwrapped_env(mode):
    env = gym.make(ENV_ID, action_mode=mode, **SMALL).unwrapped
    with pytest.raises(gym.error.ResetNeeded, match="before reset"):
        env.step(np.zeros(env.action_space.shape, np.float32))


@pytest.mark.parametrize("kw, seeds", [
    ({"workload_mean": 18.2, "workload_sd": 0.0}, range(5)),
    ({"coef_range": (1.09, 1.1)}, [145]),
    ({"capability_mean": 7.3, "capability_sd": 0.0, "weight_range": (0.3, 0.3)}, range(3)),
    ({"capacity_mean": 20.1, "capacity_sd": 0.0}, range(3)),
])
def test_float32_rounding_never_breaks_an_accepted_setting(kw, seeds):
    env = gym.make(ENV_ID, **kw)
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        assert env.observation_space.contains(obs)


def test_upper_f32_is_a_float32_upper_bound():
    for x in (18.2, 1.1, 0.1, 7.0, 1e-3, 3.0e5):
        y = upper_f32(x)
        assert y >= x and float(np.float32(y)) == y and float(np.float32(x)) <= y


def test_jobs_beyond_the_box_name_the_parameter_that_sets_it():
    jobs = Jobs(arrival=[0], deadline=[0], workload=[1.0], allowed=np.ones((1, 1), bool),
                capability=[1.0], coef=[2.0], weight=[0.1], n_slots_hint=1)
    inst = DeadlineWelfareInstance(capacity=np.ones((1, 1)), jobs=jobs,
                                   job_limits=(1.0, 1.0, 1.5, 0.1))
    env = DeadlineWelfareEnv(instance=inst)
    with pytest.raises(ValueError, match=r"coef up to 2\.0.*instance\.job_limits\[2\]"):
        env.reset(seed=0)


@pytest.mark.parametrize("name", ["n_instances", "horizon", "n_jobs", "locality_size"])
def test_bools_are_refused_for_integer_parameters(name):
    with pytest.raises(ValueError, match=rf"{name}=True is invalid: must be an integer"):
        gym.make(ENV_ID, **{name: True})


@pytest.mark.parametrize("kw, msg", [
    ({"n_instances": 5}, r"n_instances=5 conflicts with the explicit instance \(n_instances=1\)"),
    ({"horizon": 3}, "horizon=3 conflicts"),
    ({"utility": "log"}, "utility='log' conflicts"),
    ({"capacity_mean": 5.0}, "capacity_mean=5.0 has no effect"),
    ({"workload_mean": 9.0}, "workload_mean=9.0 has no effect: the explicit instance replays"),
])
def test_explicit_instance_refuses_conflicting_overrides(kw, msg):
    inst = make_tiny().instance
    with pytest.raises(ValueError, match=msg):
        DeadlineWelfareEnv(instance=inst, **kw)


def test_explicit_instance_accepts_agreeing_overrides_and_job_params_without_fixed_jobs():
    env = DeadlineWelfareEnv(instance=make_tiny().instance, utility="linear", n_instances=1)
    assert env.instance.n_instances == 1
    inst = DeadlineWelfareInstance(capacity=np.full((2, 4), 5.0))
    env = DeadlineWelfareEnv(instance=inst, n_jobs=3, workload_mean=4.0)
    assert env.reset(seed=0)[1]["n_jobs"] == 3


@pytest.mark.parametrize("kw, table", [
    ({"n_instances": 100_000, "horizon": 1000, "n_jobs": 100}, "the mesh"),
    ({"n_jobs": None, "arrival_rate": 1e9}, "the dispatch history"),
])
def test_memory_estimate_refuses_huge_settings_at_construction(kw, table):
    with pytest.raises(ValueError, match=r"MB per episode \(" + table + r": [\d,]+ MB\): more "
                                         r"than memory_limit_mb=2,048"):
        gym.make(ENV_ID, **kw)


def test_memory_limit_is_overridable_and_validated():
    kw = {"n_instances": 300, "horizon": 100, "n_jobs": 50}
    need = estimate_mb(gym.make(ENV_ID, memory_limit_mb=1e6, **kw).unwrapped.memory_parts())
    assert gym.make(ENV_ID, memory_limit_mb=1.01 * need, **kw).unwrapped.instance.n_instances \
        == 300
    with pytest.raises(ValueError, match=f"memory_limit_mb={0.99 * need:,.0f} "):
        gym.make(ENV_ID, memory_limit_mb=0.99 * need, **kw)
    with pytest.raises(ValueError, match="memory_limit_mb=-1 is invalid"):
        gym.make(ENV_ID, memory_limit_mb=-1)


@pytest.mark.parametrize("kw, steps", [({}, 20), ({"n_jobs": 7}, 7), ({"n_jobs": None}, None)])
def test_max_episode_steps_is_the_episode_length(kw, steps):
    env = gym.make(ENV_ID, **kw)
    assert env.spec.max_episode_steps == steps
    if steps is not None:
        assert len(_rollout(env, 0)) == steps
    assert make_tiny().max_episode_steps == 2


@pytest.mark.parametrize("kw", [{}, {"n_jobs": None}])
@pytest.mark.parametrize("rate", [1e10, 2.0**63, 1e300])
def test_arrival_rate_above_its_maximum_is_refused_by_name(rate, kw):
    """A huge ``arrival_rate`` used to run ``reset`` for minutes (2**63: for ever)."""
    with pytest.raises(ValueError, match=r"arrival_rate=.* is invalid: must be a finite number"
                                         r" in \(0\.0, 1000000000\.0\]"):
        gym.make(ENV_ID, arrival_rate=rate, **kw)


def test_reset_work_does_not_grow_with_the_arrival_rate():
    """At the largest rate every job arrives in slot 0 and ``reset`` only keeps ``n_jobs`` of
    the ~1e9 arrivals per slot, never expanding all of them."""
    env = gym.make(ENV_ID, arrival_rate=ARRIVAL_RATE_MAX)
    _, info = env.reset(seed=0)
    assert info["n_jobs"] == 20 and not env.unwrapped.jobs.arrival.any()
