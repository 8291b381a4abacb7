"""Offline optimum of P1 (docs/spec/onsocmax.md §4.4): against cvxpy, above every online agent,
and the empirical ratio OPT / OnSocMax below the theoretical α̂."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import schedgym  # noqa: F401
from schedgym import agents, offline
from schedgym.envs.deadline_welfare import ENV_ID, dynamics
from schedgym.envs.deadline_welfare.offline import solve_p1

from .conftest import SMALL


def p1_cvxpy(inst, jobs):
    cp = pytest.importorskip("cvxpy")
    import scipy.sparse as sp

    idx = np.argwhere(jobs.mask)
    n, r, t = idx.T
    x = cp.Variable(len(idx), nonneg=True)
    a, lin = jobs.coef[n, r, t], jobs.weight[n, r, t] / inst.capacity[r, t]
    f = {"linear": a @ x, "log": a @ cp.log(1 + x), "sqrt": a @ cp.sqrt(x)}[inst.utility]
    J = sp.csr_matrix((np.ones(len(idx)), (n, np.arange(len(idx)))), (jobs.n_jobs, len(idx)))
    us, inv = np.unique(r * inst.horizon + t, return_inverse=True)
    U = sp.csr_matrix((np.ones(len(idx)), (inv, np.arange(len(idx)))), (len(us), len(idx)))
    prob = cp.Problem(cp.Maximize(f + lin @ x), [x <= jobs.capability[n, r, t],
                                                J @ x <= jobs.workload,
                                                U @ x <= inst.capacity.reshape(-1)[us]])
    prob.solve(solver=cp.CLARABEL)
    return prob.value


@pytest.mark.parametrize("util", ["linear", "log", "sqrt"])
@pytest.mark.parametrize("cap", [2.0, 20.0])
def test_opt_matches_cvxpy(util, cap):
    env = gym.make(ENV_ID, utility=util, capacity_mean=cap, capacity_sd=0.1 * cap,
                   locality_size=2, **SMALL).unwrapped
    env.reset(seed=11)
    sol = solve_p1(env.instance, env.jobs)
    assert dynamics.is_feasible(env.instance, env.jobs, sol.X)
    ref = p1_cvxpy(env.instance, env.jobs)
    assert sol.value >= ref - 1e-6 * max(1.0, abs(ref))
    assert sol.value == pytest.approx(ref, rel=1e-6)
    assert sol.upper >= sol.value - 1e-9


@pytest.mark.parametrize("util", ["linear", "log", "sqrt"])
def test_opt_dominates_every_agent_and_onsocmax_ratio_below_alpha_hat(util):
    for seed in (0, 1):
        kw = dict(utility=util, capacity_mean=3.0, capacity_sd=0.3, **SMALL)
        env = gym.make(ENV_ID, **kw)
        env.reset(seed=seed)
        opt = offline.episode_benchmarks(env)["optimum"]
        for name in ("onsocmax", "max-first", "equal-share", "jsq"):
            env = gym.make(ENV_ID, **kw)
            agent = agents.make(name, env)
            obs, _ = env.reset(seed=seed)
            total, done = 0.0, False
            while not done:
                a, _ = agent.predict(obs)
                obs, r, done, _, info = env.step(a)
                total += r
            assert opt >= total - 1e-6 * opt, (name, opt, total)
            if name == "onsocmax":
                assert opt / total <= info["alpha_hat"], (opt / total, info["alpha_hat"])


def test_registry_entry_and_cache():
    env = gym.make(ENV_ID, **SMALL)
    env.reset(seed=3)
    v1 = offline.episode_benchmarks(env)
    v2 = offline.episode_benchmarks(env)
    assert set(v1) == {"optimum"} and v1 == v2 and v1["optimum"] > 0


@pytest.mark.parametrize("p", [2.0, 3.0, 10.0])
def test_one_way_trading_stress_ratio_below_alpha_hat(p):
    """docs/spec/onsocmax.md §4.4(b): one unit (C = 20, β = 0), small linear jobs whose values
    rise geometrically from ι = 1 to p, then one block of volume C at value p. OPT / OnSocMax
    must stay <= α̂."""
    from schedgym.envs.deadline_welfare.env import DeadlineWelfareEnv
    from schedgym.envs.deadline_welfare.pricing import alpha_hat
    from schedgym.envs.deadline_welfare.types import DeadlineWelfareInstance, Jobs

    values = np.geomspace(1.0, p, 60)
    N = values.size + 1
    vol = np.concatenate([np.full(values.size, 0.05 * 20 / 3), [20.0]])
    jobs = Jobs(arrival=np.zeros(N, int), deadline=np.zeros(N, int), workload=vol,
                allowed=np.ones((N, 1), bool), capability=vol,
                coef=np.concatenate([values, [p]]), weight=np.zeros(N), n_slots_hint=1)
    env = DeadlineWelfareEnv(instance=DeadlineWelfareInstance(capacity=np.full((1, 1), 20.0),
                                                              jobs=jobs))
    agent = agents.make("onsocmax", env)
    obs, info = env.reset(seed=0)
    assert info["iota"] == pytest.approx(1.0) and info["v"] == pytest.approx(p)
    total, done = 0.0, False
    while not done:
        a, _ = agent.predict(obs)
        obs, r, done, _, _ = env.step(a)
        total += r
    opt = solve_p1(env.instance, env.jobs).value
    assert opt == pytest.approx(20.0 * p)  # OPT keeps the whole unit for the block
    assert 1.0 < opt / total <= alpha_hat(p) + 1e-9


def test_p1_beyond_the_solvers_is_refused_in_one_line():
    """A week of every node: OPT is not computed, and the line says the size and the most the
    solver takes (``schedgym compare`` reports the ceiling as not computed)."""
    from schedgym.envs.deadline_welfare.offline import P1TooLarge, episode_benchmarks, p1_size

    env = gym.make(ENV_ID, scenario="alibaba-gpu-2023", n_instances="all", split="test",
                   horizon=168, n_jobs=None, utility="log").unwrapped
    env.reset(seed=0)
    variables, rows = p1_size(env.instance, env.jobs)
    assert variables > 5_000_000 and rows > 250_000
    with pytest.raises(P1TooLarge, match=r"OPT \(P1\) of this episode is not computed at this "
                                          r"size: .* variables, .* rows; the log solver takes "
                                          r"at most 6,000 rows") as err:
        episode_benchmarks(env)
    assert isinstance(err.value, ValueError) and "\n" not in str(err.value)
