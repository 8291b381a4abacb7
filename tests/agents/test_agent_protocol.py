"""The agent protocol with every standard client: classical agents built on a
``DummyVecEnv``, a wrapped or a ``FlattenObservation`` env act exactly as on the plain env, and an
observation from another env or another instance is a clear error, never a plausible action."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import FlattenObservation, RecordEpisodeStatistics
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import DummyVecEnv

import schedgym
from schedgym import agents
from schedgym.agents import registry
from schedgym.envs.deadline_welfare import ENV_ID as DW
from schedgym.envs.fluctuating_speed import ENV_ID as FS
from schedgym.envs.gain_overhead import ENV_ID as GO

SMALL = {GO: {"n_types": 3, "n_instances": 4, "horizon": 6},
         FS: {"horizon": 6},
         DW: {"n_jobs": 5}}
#: the paper's agent of each env
PAPER = {GO: "ogasched", FS: "esdp", DW: "onsocmax"}


def _env(env_id, **kw):
    return gym.make(env_id, **{**SMALL[env_id], **kw})


def _actions(agent, env, seed=3):
    """Deterministic actions of ``agent`` over one episode of ``env`` (a plain env)."""
    obs, _ = env.reset(seed=seed)
    out, done, start = [], False, True
    while not done:
        a, _ = agent.predict(obs, episode_start=np.array([start]))
        start = False
        out.append(np.asarray(a))
        obs, _, term, trunc, _ = env.step(a)
        done = term or trunc
    return out


@pytest.mark.parametrize("env_id", schedgym.ENV_IDS)
def test_agent_built_on_a_vec_env_acts_as_on_the_plain_env(env_id):
    plain = _env(env_id)
    ref = _actions(agents.make(PAPER[env_id], plain), plain)
    venv = DummyVecEnv([lambda: _env(env_id)])
    agent = agents.make(PAPER[env_id], venv)  # used to raise AttributeError: no 'instance'
    got = _actions(agent, _env(env_id))
    for a, b in zip(ref, got, strict=True):
        np.testing.assert_array_equal(a, b)
    mean, _ = evaluate_policy(agent, venv, n_eval_episodes=1, warn=False)
    assert np.isfinite(mean)


@pytest.mark.parametrize("env_id", schedgym.ENV_IDS)
def test_agent_built_on_a_flattened_env_takes_flat_observations(env_id):
    plain = _env(env_id)
    ref = _actions(agents.make(PAPER[env_id], plain), plain)
    flat = FlattenObservation(_env(env_id))
    agent = agents.make(PAPER[env_id], flat)
    got = _actions(agent, flat)
    for a, b in zip(ref, got, strict=True):
        np.testing.assert_array_equal(a, b)
    # a batch of flat observations (SB3 VecEnv over a flattened env)
    venv = make_vec_env(lambda: FlattenObservation(_env(env_id)), n_envs=2)
    batch = venv.reset()
    acts, _ = agents.make(PAPER[env_id], venv).predict(batch)
    assert acts.shape[0] == 2 and venv.action_space.contains(acts[0].astype(
        venv.action_space.dtype))


def test_agent_built_on_a_wrapped_env():
    env = RecordEpisodeStatistics(_env(GO))
    agent = agents.make("drf", env)
    obs, _ = env.reset(seed=0)
    a, _ = agent.predict(obs)
    assert env.action_space.contains(a.astype(np.float32))


def test_another_envs_observation_is_an_error():
    agent = agents.make("ogasched", _env(GO))
    obs, _ = _env(DW).reset(seed=0)
    with pytest.raises(ValueError, match="observation keys .* are invalid"):
        agent.predict(obs)


def test_another_instances_observation_is_an_error():
    agent = agents.make("ogasched", _env(GO, instance_seed=0))
    other = _env(GO, instance_seed=0, n_instances=5)
    obs, _ = other.reset(seed=0)
    with pytest.raises(ValueError, match="another instance"):
        agent.predict(obs)


def test_out_of_bounds_or_non_finite_observation_is_an_error():
    env = _env(GO)
    agent = agents.make("ogasched", env)
    obs, _ = env.reset(seed=0)
    key = next(iter(obs))
    bad = {**obs, key: obs[key] + 5.0}
    with pytest.raises(ValueError, match=f"observation\\[{key!r}\\] is outside its space"):
        agent.predict(bad)
    nan = {**obs, key: np.full_like(obs[key], np.nan)}
    with pytest.raises(ValueError, match="not finite"):
        agent.predict(nan)


def test_flat_observation_of_the_wrong_size_is_an_error():
    agent = agents.make("ogasched", FlattenObservation(_env(GO)))
    with pytest.raises(ValueError, match="flattened observation of this env has"):
        agent.predict(np.zeros(3, dtype=np.float32))


def test_dict_agent_refuses_a_flat_observation():
    agent = agents.make("ogasched", _env(GO))
    with pytest.raises(ValueError, match="expects a dict with keys"):
        agent.predict(np.zeros(3, dtype=np.float32))


def test_not_a_schedgym_env_is_an_error():
    with pytest.raises(ValueError, match="must be a schedgym env"):
        agents.make("random", gym.make("CartPole-v1"))


def test_unknown_option_names_the_agents_options():
    with pytest.raises(ValueError, match="has no option foo: its options .*timing='oco'"):
        agents.make("ogasched", _env(GO), foo=1)
    assert "eta0" in registry.agent_options("ogasched")
    # options inherited through **kwargs are found too
    for name in registry.names():
        assert isinstance(registry.agent_options(name), dict)


@pytest.mark.parametrize("env_id", schedgym.ENV_IDS)
def test_agents_for_env_in_registration_order(env_id):
    names = registry.names_for(env_id)
    assert names[0] == PAPER[env_id] and names[-1] == "random"


@pytest.mark.parametrize("env_id", schedgym.ENV_IDS)
def test_classical_agents_refuse_a_learnable_mode(env_id):
    modes = gym.make(env_id).unwrapped.metadata.get("action_modes", ())
    if len(modes) < 2:
        pytest.skip(f"{env_id} has one action mode")
    env = _env(env_id, action_mode=modes[1])
    with pytest.raises(ValueError, match=f"act in the default mode {modes[0]!r}"):
        agents.make(PAPER[env_id], env)
    agents.make("random", env)  # samples any action space


@pytest.mark.parametrize("env_id", schedgym.ENV_IDS)
def test_agent_built_on_the_native_vector_env_acts_as_on_sync_vector_env(env_id):
    """A native vector env holds the instance itself: the agent must read its per-copy spaces."""
    kw = SMALL[env_id]
    native = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", **kw)
    sync = gym.make_vec(env_id, num_envs=2, vectorization_mode="sync", **kw)
    a_native, a_sync = agents.make(PAPER[env_id], native), agents.make(PAPER[env_id], sync)
    o1, _ = native.reset(seed=3)
    o2, _ = sync.reset(seed=3)
    start = np.ones(2, dtype=bool)
    for _ in range(12):  # past the end of the short episodes: autoresets included
        act1, _ = a_native.predict(o1, episode_start=start)
        act2, _ = a_sync.predict(o2, episode_start=start)
        np.testing.assert_array_equal(act1, act2)
        o1, r1, te1, tr1, _ = native.step(act1)
        o2, r2, te2, tr2, _ = sync.step(act2)
        np.testing.assert_array_equal(r1, r2)
        start = te1 | tr1
    native.close()
    sync.close()
