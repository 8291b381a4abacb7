"""FIXED-PRICE: the learnable price modes' constant action as a named
classical agent on GainOverhead-v0 (``prices``) and DeadlineWelfare-v0 (``pricing``): feasible at
every step, the zero-action rollout bit for bit, played by ``compare`` in its own mode, listed."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from schedgym import agents
from schedgym.agents import registry
from schedgym.envs.deadline_welfare import ENV_ID as DW
from schedgym.envs.deadline_welfare import dynamics as dw_dynamics
from schedgym.envs.fluctuating_speed import ENV_ID as FS
from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.envs.gain_overhead import dynamics as go_dynamics
from schedgym.train.cli import env_summary
from schedgym.train.compare import compare_spec, run_compare

GO_SMALL = {"n_types": 4, "n_instances": 6, "n_resources": 3, "horizon": 12, "utility": "mixed"}
DW_SMALL = {"n_instances": 3, "horizon": 6, "n_jobs": 8, "arrival_rate": 2.0}
MODE = {GO: "prices", DW: "pricing"}
SMALL = {GO: GO_SMALL, DW: DW_SMALL}


def _rollout(env, act, seed):
    """Rewards and infos of one episode; ``act(obs)`` gives the action."""
    obs, _ = env.reset(seed=seed)
    out, done = [], False
    while not done:
        obs, r, term, trunc, info = env.step(act(obs))
        out.append((r, info))
        done = term or trunc
    return out


def _feasible(env_id, env, info):
    if env_id == GO:
        assert go_dynamics.is_feasible(env.instance, info["allocation"])
    else:
        assert info["repair_l1"] < 1e-9  # the decoder's best response needs no repair


@pytest.mark.parametrize("env_id", [GO, DW])
@pytest.mark.parametrize("price", [0.0, 0.4, -0.3])
def test_feasible_every_step_and_equal_to_the_constant_action_rollout(env_id, price):
    env = gym.make(env_id, action_mode=MODE[env_id], **SMALL[env_id]).unwrapped
    ref = gym.make(env_id, action_mode=MODE[env_id], **SMALL[env_id]).unwrapped
    agent = agents.make("fixed-price", env, price=price)
    const = np.full(env.action_space.shape, price, dtype=np.float32)
    for seed in (0, 1):
        got = _rollout(env, lambda o: agent.predict(o, deterministic=True)[0], seed)
        want = _rollout(ref, lambda o: const, seed)
        assert len(got) == len(want) > 0
        for (r, info), (r2, info2) in zip(got, want, strict=True):
            assert r == r2
            _feasible(env_id, env, info)
            key = "allocation" if env_id == GO else "dispatch"
            np.testing.assert_array_equal(info[key], info2[key])
    if env_id == DW:
        assert dw_dynamics.is_feasible(env.instance, env.jobs, env.dispatch)


def test_default_is_the_zero_action_and_dw_equals_myopic_welfare():
    env = gym.make(DW, action_mode="pricing", **DW_SMALL).unwrapped
    agent = agents.make("fixed-price", env)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(agent.predict(obs)[0], np.zeros(3, np.float32))
    flat = gym.make(DW, **DW_SMALL).unwrapped
    mw = agents.make("myopic-welfare", flat)
    got = _rollout(env, lambda o: agent.predict(o)[0], 2)
    want = _rollout(flat, lambda o: mw.predict(o)[0], 2)
    for (_, info), (_, info2) in zip(got, want, strict=True):
        np.testing.assert_allclose(info["dispatch"], info2["dispatch"], atol=1e-6)


def test_a_tuple_gives_the_action_itself():
    env = gym.make(DW, action_mode="pricing", **DW_SMALL).unwrapped
    agent = agents.make("fixed-price", env, price=(0.2, 0.0, -0.5))
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(agent.predict(obs)[0],
                                  np.array([0.2, 0.0, -0.5], np.float32))
    with pytest.raises(ValueError, match="price=.*one value per action entry \\(3"):
        agents.make("fixed-price", env, price=(0.2, 0.1))
    with pytest.raises(ValueError, match=r"price\[1\].*\[-1.0, 1.0\]"):
        agents.make("fixed-price", env, price=(0.2, 3.0, 0.0))


@pytest.mark.parametrize("bad", [1.5, float("nan"), "high", True])
def test_bad_price_names_it(bad):
    env = gym.make(GO, action_mode="prices", **GO_SMALL)
    with pytest.raises(ValueError, match="price"):
        agents.make("fixed-price", env, price=bad)


@pytest.mark.parametrize("env_id", [GO, DW])
def test_refuses_another_mode_and_another_env(env_id):
    with pytest.raises(ValueError, match=f"plays in action_mode='{MODE[env_id]}'"):
        agents.make("fixed-price", gym.make(env_id, **SMALL[env_id]))
    with pytest.raises(ValueError, match="does not support env"):
        agents.make("fixed-price", gym.make(FS, horizon=5))


def test_listed_and_played_by_compare_in_its_own_mode():
    for env_id in (GO, DW):
        assert "fixed-price" in env_summary(env_id)["agents"]
        assert registry.play_kwargs("fixed-price[price=0.1]", env_id) == {
            "action_mode": MODE[env_id]}
        assert registry.play_kwargs("drf", env_id) == {}
    assert "fixed-price" not in env_summary(FS)["agents"]
    spec = compare_spec(GO, ["drf", "fixed-price"], [0])
    assert spec.agent_env_kwargs == {"fixed-price": {"action_mode": "prices"}}
    results, _ = run_compare(GO, ["drf", "fixed-price"], [0, 1], overrides=GO_SMALL,
                             workers=1, benchmarks=False, show_progress=False)
    ref = gym.make(GO, action_mode="prices", **GO_SMALL)
    zero = np.zeros(ref.action_space.shape, np.float32)
    mine = {r.seed: r.metrics["reward"] for r in results if r.agent == "fixed-price"}
    assert mine.keys() == {0, 1}
    for seed, total in mine.items():
        want = sum(r for r, _ in _rollout(ref, lambda o: zero, seed))
        assert total == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("env_id", [GO, DW])
def test_plays_in_the_entity_observation_mode_too(env_id):
    """The agent reads no observation entry, so it also plays an ``obs_mode="entities"`` env
    (the observations are still checked against that env's space)."""
    env = gym.make(env_id, action_mode=MODE[env_id], obs_mode="entities", **SMALL[env_id])
    agent = agents.make("fixed-price", env)
    obs, _ = env.reset(seed=0)
    a, _ = agent.predict(obs)
    np.testing.assert_array_equal(a, np.zeros(env.action_space.shape, np.float32))
    with pytest.raises(ValueError, match="outside its space"):
        agent.predict({**obs, "context": obs["context"] + 5.0})
