"""myopic-opt: the exact per-slot optimum of GainOverhead-v0."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.evaluation import evaluate_policy

from schedgym import agents
from schedgym.agents.myopic_opt import MyopicOpt
from schedgym.core.utilities import FAMILIES
from schedgym.envs.gain_overhead import ENV_ID, dynamics
from tests.envs.gain_overhead.test_offline import cvxpy_hindsight

SMALL = {"n_types": 4, "n_instances": 6, "n_resources": 3, "horizon": 12}
OTHERS = ("ogasched", "drf", "fairness", "binpacking", "spreading", "random")


@pytest.mark.parametrize("family", [*FAMILIES, "mixed"])
@pytest.mark.parametrize("seed", [0, 1])
def test_per_slot_optimum_equals_cvxpy(family, seed):
    env = gym.make(ENV_ID, **SMALL, utility=family, instance_seed=seed,
                   contention=1.0 + 4.0 * seed)
    agent = MyopicOpt(env)
    env.unwrapped.reset(seed=seed)
    for x in env.unwrapped.arrivals[:3]:
        y, value = agent.optimum(x)
        ref = cvxpy_hindsight(env.unwrapped.instance, x)
        assert dynamics.is_feasible(env.unwrapped.instance, y)
        assert value == pytest.approx(ref, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("utility", ["linear", "mixed"])
def test_per_slot_reward_is_at_least_every_other_agents(utility):
    rewards = {}
    for name in ("myopic-opt", *OTHERS):
        env = gym.make(ENV_ID, **SMALL, utility=utility)
        agent = agents.make(name, env)
        obs, _ = env.reset(seed=4)
        rs = []
        for _ in range(SMALL["horizon"]):
            action, _ = agent.predict(obs, deterministic=True)
            obs, r, *_ = env.step(action)
            rs.append(r)
        rewards[name] = np.array(rs)
    best = rewards.pop("myopic-opt")
    for name, rs in rewards.items():
        slack = 1e-6 * np.maximum(np.abs(best), 1.0)  # float32 action encoding
        assert np.all(best >= rs - slack), name


def test_feasible_every_step_through_evaluate_policy():
    env = gym.make(ENV_ID, **SMALL, utility="mixed")
    agent = agents.make("myopic-opt", env)
    seen = []

    def check(locals_, globals_):
        seen.append(dynamics.is_feasible(env.unwrapped.instance, locals_["info"]["allocation"]))

    evaluate_policy(agent, env, n_eval_episodes=1, callback=check, warn=False)
    assert len(seen) == SMALL["horizon"] and all(seen)


def test_cache_serves_repeated_patterns_with_the_same_allocation():
    env = gym.make(ENV_ID, **SMALL)
    agent = MyopicOpt(env)
    x = np.array([1.0, 0.0, 1.0, 1.0])
    y1 = agent.allocation(x)
    y2 = agent.allocation(x.copy())
    assert y1 is y2 and agent.n_solves == 1 and agent.n_calls == 2
    assert np.all(y1[env.unwrapped.instance.edge_type == 1] == 0)  # no job, nothing given


def test_hidden_protocol_plays_the_optimum_of_the_observed_previous_slot():
    env = gym.make(ENV_ID, **SMALL, arrivals="hidden")
    agent = MyopicOpt(env)
    obs, _ = env.reset(seed=1)
    obs, *_ = env.step(agent.predict(obs)[0])
    action, _ = agent.predict(obs)
    expected = env.unwrapped.encode_action(agent.optimum(env.unwrapped.arrivals[0])[0])
    np.testing.assert_array_equal(action, expected)


def test_registered_as_a_ceiling_not_a_clairvoyant_benchmark():
    from schedgym.train.report import CEILING_AGENTS

    assert "myopic-opt" in agents.names() and not agents.is_benchmark("myopic-opt")
    assert "myopic-opt" in CEILING_AGENTS


def test_refuses_a_learnable_mode_and_bad_options():
    with pytest.raises(ValueError, match="action_mode='prices' is invalid"):
        MyopicOpt(gym.make(ENV_ID, **SMALL, action_mode="prices"))
    with pytest.raises(ValueError, match="rtol"):
        MyopicOpt(gym.make(ENV_ID, **SMALL), rtol=0.5)


def _rollout_rewards(env, agent) -> list[float]:
    obs, _ = env.reset(seed=3)
    out = []
    for _ in range(SMALL["horizon"]):
        obs, r, *_ = env.step(agent.predict(obs)[0])
        out.append(float(r))
    return out


def test_an_lp_that_highs_leaves_unsolved_is_solved_by_the_next_try(monkeypatch):
    """HiGHS's simplex without presolve can end in an unknown model status (status 4) on a
    badly scaled LP; the solver then tries presolve, then the interior-point method, and the
    slot's optimum is the same."""
    import scipy.optimize
    from scipy.optimize import OptimizeResult

    want = _rollout_rewards(env := gym.make(ENV_ID, **SMALL, utility="mixed"),
                            agents.make("myopic-opt", env))
    real, calls = scipy.optimize.linprog, []

    def flaky(*a, **k):
        calls.append((k["method"], k["options"]))
        if len(calls) % 3 == 1:  # every first try of a solve fails as on instance 1002
            return OptimizeResult(status=4, message="model_status is Unknown", x=None)
        return real(*a, **k)

    monkeypatch.setattr(scipy.optimize, "linprog", flaky)
    env = gym.make(ENV_ID, **SMALL, utility="mixed")
    got = _rollout_rewards(env, agents.make("myopic-opt", env))
    assert any(opts.get("presolve") for _, opts in calls)  # the second try ran
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)  # within the certified gap


@pytest.mark.slow
def test_the_recorded_hard_slot_is_solved():
    """The slot where HiGHS's first try failed (mixed, instance seed 1002, episode seed 100,
    slot 266): myopic-opt plays it."""
    env = gym.make(ENV_ID, utility="mixed", instance_seed=1002)
    agent = agents.make("myopic-opt", env)
    obs, _ = env.reset(seed=100)
    for _ in range(280):
        obs, *_ = env.step(agent.predict(obs)[0])


def test_refuses_non_linear_utilities_beyond_its_size_in_one_line():
    from schedgym.agents.myopic_opt import MAX_NONLINEAR_ENTRIES, MyopicOptTooLarge
    from schedgym.core.limits import NotComputed

    env = gym.make(ENV_ID, scenario="alibaba-gpu-2023", n_instances="all", utility="mixed",
                   horizon=2)
    inst = env.unwrapped.instance
    assert inst.n_edges * inst.n_resources == 64_932 > MAX_NONLINEAR_ENTRIES
    with pytest.raises(MyopicOptTooLarge, match=r"^myopic-opt is not played at this size: "
                                                r"10,822 channels x 6 resources = 64,932 "
                                                r"allocation entries with non-linear utilities; "
                                                r"it takes at most 32,768") as err:
        agents.make("myopic-opt", env)
    assert "\n" not in str(err.value) and isinstance(err.value, NotComputed)
    assert err.value.benchmark == "myopic-opt"
    small = gym.make(ENV_ID, n_types=3, n_instances=4, n_resources=2, horizon=2,
                     utility="log")  # 8 or more entries
    with pytest.raises(MyopicOptTooLarge, match="it takes at most 4 with them"):
        agents.make("myopic-opt", small, max_nonlinear_entries=4)
    agents.make("myopic-opt", small, max_nonlinear_entries=None)  # no limit
    linear = gym.make(ENV_ID, n_types=3, n_instances=4, n_resources=2, horizon=2)
    agents.make("myopic-opt", linear, max_nonlinear_entries=4)  # linear: any size
    with pytest.raises(ValueError, match="max_nonlinear_entries"):
        agents.make("myopic-opt", small, max_nonlinear_entries=0)
