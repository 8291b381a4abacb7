"""ESDP within a memory limit: the checkpointed dynamic program makes the decisions the full one
makes (and the brute force of rule (21)), and a size it cannot hold is refused at construction
in one line naming the largest size it can play."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedgym  # noqa: F401
from schedgym import agents
from schedgym.agents.esdp import ESDP, p4_decision
from schedgym.core.knapsack import DPTooLargeError, best_segment, budgeted_memory
from schedgym.core.limits import NotComputed
from schedgym.envs.fluctuating_speed import dynamics
from tests.agents.test_esdp import ENV_ID, _brute_p4, random_p4_case

MIB = 2**20


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 500), st.integers(0, 2**31 - 1), st.integers(1, 3000),
       st.booleans())
def test_checkpointed_decision_equals_full_and_brute_force(inst_seed, stat_seed, t, aware):
    case = random_p4_case(inst_seed, stat_seed)
    if case is None:
        return
    inst, ag, stats, rng = case
    theta, s2, eta = ag.scaled_index(stats, t)
    allowed = rng.random(inst.n_edges) < 0.7 if aware else np.ones(inst.n_edges, bool)
    args = (s2, theta, allowed, ag.requests, ag.capacities, ag.n_max, eta * ag.m, np.inf)
    x_full, s_full, S, form = p4_decision(*args, form="full")
    x_ck, s_ck, S_ck, form_ck = p4_decision(*args, form="checkpointed")
    assert (form, form_ck) == ("full", "checkpointed") and S_ck == S
    np.testing.assert_array_equal(x_ck, x_full)
    assert s_ck == s_full
    if not aware:  # rule (21) by enumeration over every capacity-feasible selection
        s_star, v_star = _brute_p4(inst.requests, inst.capacities, theta, s2, eta * ag.m)
        assert s_ck == s_star and float(s2 @ x_ck) == v_star and theta @ x_ck >= s_star
    assert dynamics.is_feasible(inst, x_ck) and not np.any(x_ck[~allowed])


@pytest.mark.parametrize("variant", ["esdp", "esdp-aa"])
def test_a_checkpointed_episode_plays_the_same_actions(variant):
    env = gym.make(ENV_ID, horizon=120, compute_oracle=False)
    full = agents.make(variant, env, dp_form="full")
    ck = agents.make(variant, env, dp_form="checkpointed")
    obs, _ = env.reset(seed=3)
    for step in range(120):
        start = np.array([step == 0])
        a, _ = full.predict(obs, episode_start=start)
        b, _ = ck.predict(obs, episode_start=start)
        np.testing.assert_array_equal(a, b)
        assert ck.last["dp_form"] == "checkpointed"
        obs, *_ = env.step(a)
    assert full.last["budget_levels"] > 50  # the DP was not trivial at the end


def test_auto_checkpoints_when_the_full_tables_exceed_the_limit():
    rng = np.random.default_rng(5)
    E, A, c = 80, rng.integers(1, 3, size=(3, 80)), np.array([6, 6, 3])
    theta, s2 = rng.integers(0, 40, size=E), rng.integers(1, 10**6, size=E).astype(float)
    args = (s2, theta, np.ones(E, bool), A, c, 3, 10**6)
    x, s_star, S, _ = p4_decision(*args, np.inf, form="full")
    n_c = 7 * 7 * 4
    full = 8 * n_c * (S + 1) + n_c * (S + 1) * E  # every edge reaches S here (80 > 3 edges)
    ck = budgeted_memory(E, n_c, S + 1, best_segment(E))
    assert ck < full
    assert p4_decision(*args, full)[3] == "full"
    got = p4_decision(*args, (ck + full) / 2)
    assert got[3] == "checkpointed" and got[1] == s_star
    np.testing.assert_array_equal(got[0], x)
    with pytest.raises(DPTooLargeError, match=r"needs [\d.]+ MiB for 80 channels x 196 capacity "
                                              rf"states x {S + 1} budget levels"):
        p4_decision(*args, ck - 1)


def test_64_ports_by_2560_servers_is_refused_in_one_line():
    # 64 ports x 2,560 servers: about 16,500 channels (the full DP would need ~230 GiB)
    env = gym.make(ENV_ID, n_types=64, n_instances=2560, compute_oracle=False)
    with pytest.raises(DPTooLargeError) as err:
        agents.make("esdp", env)
    msg = str(err.value)
    assert isinstance(err.value, NotComputed) and isinstance(err.value, ValueError)
    assert err.value.benchmark == "esdp" and "\n" not in msg
    E = env.unwrapped.instance.n_edges
    head = (rf"^esdp cannot play this instance within memory_limit_mb=4096: its exact dynamic "
            rf"program needs about [\d,]+ MiB at the last slot \(\|E\|={E} channels x \d+ "
            rf"capacity states x [\d,]+ budget levels\); the largest it can play "
            rf"at these capacities and horizon=2000 is \|E\|=(\d+) channels")
    found = re.match(head, msg)
    assert found, msg
    largest = int(found.group(1))
    # the named size is the largest whose bound fits (checked with a limit it does not bind)
    roomy = ESDP(env, memory_limit_mb=1e9)
    assert roomy.worst_case_memory(largest)[0] <= 4096 * MIB
    assert roomy.worst_case_memory(largest + 1)[0] > 4096 * MIB
    with pytest.raises(DPTooLargeError, match=r"^esdp cannot play this instance"):
        agents.make("esdp-aa", env)  # the arrival-aware DP can meet every port present


def test_a_small_limit_names_the_size_that_fits():
    env = gym.make(ENV_ID, horizon=2000)
    need, levels = ESDP(env).worst_case_memory()
    with pytest.raises(DPTooLargeError, match=rf"needs about [\d,.]+ MiB at the last slot .* "
                                              rf"x {levels:,} budget levels"):
        ESDP(env, memory_limit_mb=0.5 * need / MIB)
    ESDP(env, memory_limit_mb=need / MIB)  # exactly the bound: accepted
    with pytest.raises(ValueError, match=r"memory_limit_mb=0 is invalid"):
        ESDP(env, memory_limit_mb=0)
    with pytest.raises(ValueError, match=r"dp_form='fast' is invalid"):
        ESDP(env, dp_form="fast")
