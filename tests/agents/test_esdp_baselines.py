"""HAUF, LCF, LWTF and the Oracle (spec esdp §5, §4.3); every FluctuatingSpeed agent feasible at
every step under invalid_action="raise" (no repair, no masking needed)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

import schedgym  # noqa: F401
from schedgym import agents
from schedgym.agents.baselines.fluctuating_speed import greedy_fill
from schedgym.envs.fluctuating_speed import FluctuatingSpeedInstance, dynamics

ENV_ID = "schedgym/FluctuatingSpeed-v0"
NAMES = ("esdp", "esdp-aa", "hauf", "lcf", "lwtf", "oracle")


@pytest.mark.parametrize("scenario", ["paper-default", "literal-capacity"])
@pytest.mark.parametrize("name", NAMES)
def test_agent_feasible_every_step_without_repair(name, scenario):
    env = gym.make(ENV_ID, scenario=scenario, horizon=120, arrival_prob=0.7,
                   invalid_action="raise")
    inst = env.unwrapped.instance
    ag = agents.make(name, env)
    obs, _ = env.reset(seed=3)
    total_exp = total_orc = 0.0
    for step in range(120):
        a, _ = ag.predict(obs, episode_start=np.array([step == 0]))
        assert a.shape == (inst.n_edges,)
        present = dynamics.edge_mask(inst, obs["arrivals"])
        assert dynamics.is_feasible(inst, a) and np.all(a <= present)
        obs, _, _, trunc, info = env.step(a)
        assert info["n_masked"] == 0 and info["n_repaired"] == 0
        total_exp += info["expected_reward"]
        total_orc += info["oracle_value"]
        if trunc:
            break
    assert total_exp <= total_orc + 1e-9
    if name == "oracle":
        assert total_exp == pytest.approx(total_orc)


@pytest.mark.parametrize("name", ["esdp", "hauf", "lwtf"])
def test_batched_predict_through_sb3_evaluate_policy(name):
    venv = make_vec_env(ENV_ID, n_envs=2, seed=0, env_kwargs={"horizon": 25})
    ag = agents.make(name, venv.envs[0])

    def check(locals_, globals_):
        info = locals_["info"]
        assert info["n_repaired"] == 0 and info["n_masked"] == 0

    rewards, lengths = evaluate_policy(ag, venv, n_eval_episodes=2, callback=check,
                                       return_episode_rewards=True)
    assert lengths == [25, 25] and all(r > 0 for r in rewards)


def tiny_instance() -> FluctuatingSpeedInstance:
    # 3 ports with one or two edges each; every edge uses 1 cpu; 2 cpus in the cluster
    return FluctuatingSpeedInstance(
        edges=np.array([[0, 0], [0, 1], [1, 1], [2, 0]]),
        requests=np.array([[1, 1, 1, 1]]),
        capacities=np.array([2]),
        cost=np.array([0.3, 0.05, 0.2, 0.1]),
        mean=np.array([0.9, 0.8, 0.7, 0.6]),
        std=np.zeros(4),
        n_types=3, n_instances=2, resource_names=("cpu",))


def _obs(arrivals, used=(0, 0, 0, 0), feedback=(0, 0, 0, 0), waiting=(0, 0, 0), progress=0.0):
    return {"arrivals": np.array(arrivals, dtype=np.float32),
            "utilization": np.zeros(1, dtype=np.float32),
            "feedback": np.array(feedback, dtype=np.float32),
            "used": np.array(used, dtype=np.float32),
            "waiting": np.array(waiting, dtype=np.float32),
            "progress": np.array([progress], dtype=np.float32)}


def test_lcf_orders_ports_by_total_cost_then_edges_by_cost():
    env = gym.make(ENV_ID, instance=tiny_instance(), horizon=5)
    ag = agents.make("lcf", env)
    # port totals: 0.35, 0.2, 0.1 -> port 2 (edge 3), port 1 (edge 2), then no room
    a, _ = ag.predict(_obs([1, 1, 1]))
    assert a.tolist() == [0, 0, 1, 1]
    # port 0 alone: edges by cost ascending: edge 1 then edge 0; both fit
    assert ag.order(_obs([1, 0, 0]), np.zeros(4)).tolist() == [1, 0]


def test_hauf_and_lwtf_use_running_means_of_feedback():
    env = gym.make(ENV_ID, instance=tiny_instance(), horizon=5)
    hauf = agents.make("hauf", env)
    hauf.predict(_obs([1, 1, 1]), episode_start=np.array([True]))
    # feedback: edge 2 = 0.5, edge 3 = 0.6 -> port sums: p0 = 0, p1 = 0.5, p2 = 0.6
    a, _ = hauf.predict(_obs([1, 1, 1], used=(0, 0, 1, 1), feedback=(0, 0, 0.5, 0.6)))
    assert a.tolist() == [0, 0, 1, 1]
    assert hauf._states[0]["n"].tolist() == [0, 0, 1, 1]
    lwtf = agents.make("lwtf", env)
    # longest waiting port 0 first; within port 0, both edges unobserved -> lower server first
    a, _ = lwtf.predict(_obs([1, 1, 1], waiting=(0.4, 0.2, 0.0)))
    assert a.tolist() == [1, 1, 0, 0]
    a, _ = lwtf.predict(_obs([1, 1, 1], used=(0, 1, 0, 0), feedback=(0, 0.3, 0, 0),
                             waiting=(0.0, 0.2, 0.4)))
    assert a.tolist() == [0, 0, 1, 1]


def test_greedy_fill_first_fit_and_stop():
    A = np.array([[2, 1, 1]])
    c = np.array([2])
    assert greedy_fill(np.array([1, 0, 2]), A, c).tolist() == [0, 1, 1]
    assert greedy_fill(np.array([1, 0, 2]), A, c, mode="stop").tolist() == [0, 1, 0]


def test_oracle_is_marked_and_knows_theta():
    env = gym.make(ENV_ID, instance=tiny_instance(), horizon=5)
    ag = agents.make("oracle", env)
    a, _ = ag.predict(_obs([1, 1, 1]))
    theta = env.unwrapped.instance.theta
    assert a.tolist() == (theta >= np.sort(theta)[-2]).astype(int).tolist()
    assert "hidden" in type(ag).__doc__ or "reads the hidden" in type(ag).__doc__


def test_unknown_mode_is_rejected():
    with pytest.raises(ValueError, match="mode='greedy' is invalid"):
        agents.make("hauf", gym.make(ENV_ID), mode="greedy")


def test_port_sums_add_exactly_as_numpy():
    from schedgym.agents.baselines.fluctuating_speed import port_sums

    rng = np.random.default_rng(0)
    sizes = [0, 1, 3, 7, 8, 9, 16, 17, 127, 128, 129, 300, 513, 1031, 4099]  # split depth 0-5
    start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    v = rng.normal(size=start[-1]) * 10.0 ** rng.integers(-3, 4, size=start[-1])
    want = [v[s:e].sum() for s, e in zip(start[:-1], start[1:], strict=True)]
    assert port_sums(v, start).tolist() == want  # exact, not approximate


def test_port_sums_load_from_the_numba_cache_in_a_fresh_process(tmp_path):
    """``port_sums`` calls the pairwise sum; when that was recursive, a process loading
    ``port_sums`` from numba's on-disk cache (not the one that compiled it) crashed. Twice in
    fresh processes over one empty cache folder: the second loads every kernel from it."""
    import os
    import subprocess
    import sys

    code = ("import numpy as np, schedgym\n"
            "from schedgym.agents.baselines.fluctuating_speed import port_sums\n"
            "v = np.arange(700.0) / 7\n"
            "s = np.array([0, 5, 300, 700])\n"
            "got = port_sums(v, s)\n"
            "print(got.tolist() == [v[0:5].sum(), v[5:300].sum(), v[300:].sum()])\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip() == "True"
    assert any(p.suffix == ".nbc" for p in tmp_path.rglob("*"))  # it did use the cache


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_priority_order_equals_numpy_stable_sorts(seed):
    from schedgym.agents.baselines.fluctuating_speed import priority_order

    rng = np.random.default_rng(seed)
    L = int(rng.integers(1, 7))
    deg = rng.integers(1, 5, size=L)
    start = np.concatenate([[0], np.cumsum(deg)]).astype(np.int64)
    port_key = rng.integers(0, 3, size=L) / 2.0  # ties on purpose
    edge_key = rng.integers(0, 3, size=start[-1]) / 2.0
    present = rng.random(L) < 0.7
    ports = np.flatnonzero(present)
    ports = ports[np.argsort(-port_key[ports], kind="stable")]
    want = [e for l in ports
            for e in np.arange(start[l], start[l + 1])[
                np.argsort(-edge_key[start[l]:start[l + 1]], kind="stable")]]
    assert priority_order(port_key, edge_key, present, start).tolist() == want
