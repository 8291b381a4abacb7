"""The compiled step of DeadlineWelfare-v0 against its plain-numpy statement
(:mod:`schedgym.envs.deadline_welfare.reference`), on random small instances, every action mode,
every utility family and random actions (out-of-box entries included).

Tolerances: the ``"dispatch"`` mode does the same arithmetic in another summation order, so
sums agree to ``1e-12`` relative; the best response of the ``"pricing"`` and ``"unit_prices"``
modes is a bisection in both
(different brackets and step counts), so dispatches agree to ``1e-7`` workload units and the
welfare to ``1e-6`` relative. The applied dispatch is feasible in both."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedgym.envs.deadline_welfare import ENV_ID, dynamics
from schedgym.envs.deadline_welfare import reference as ref

#: (relative tolerance of sums, absolute tolerance of a dispatch entry) per action mode.
TOL = {"dispatch": (1e-12, 1e-12), "pricing": (1e-6, 1e-7), "unit_prices": (1e-6, 1e-7),
       "demand_price": (1e-6, 1e-7)}


def _job(env, n: int) -> ref.Job:
    jobs = env.jobs
    return ref.Job(mask=jobs.mask[n], capability=np.asarray(jobs.capability[n], float),
                   coef=np.asarray(jobs.coef[n], float), weight=np.asarray(jobs.weight[n], float),
                   workload=float(jobs.workload[n]))


def _check_obs(obs: dict, want: dict, where: str) -> None:
    for key, value in want.items():
        np.testing.assert_array_equal(obs[key], value, err_msg=f"{where}: {key}")


def _run_episode(data, mode: str, sizes: tuple[int, int, int], family: str, cap_mean: float,
                 seed: int) -> None:
    R, T, N = sizes
    env = gym.make(ENV_ID, action_mode=mode, n_instances=R, horizon=T, n_jobs=N,
                   capacity_mean=cap_mean, capacity_sd=cap_mean / 10, utility=family).unwrapped
    obs, info = env.reset(seed=seed)
    inst = env.instance
    code, cap = inst.family_code, np.asarray(inst.capacity, float)
    rtol, atol = TOL[mode]
    usage = np.zeros((R, T))
    dim = {"pricing": 3, "demand_price": 1}.get(mode, R * T)
    action_st = st.lists(st.floats(-1.5, 1.5, allow_nan=False, width=32), min_size=dim,
                         max_size=dim)
    for n in range(N):
        job = _job(env, n)
        _check_obs(obs, ref.observation(job, (env.jobs.arrival[n], env.jobs.deadline[n]), usage,
                                        cap, n, N), f"job {n}")
        action = np.array(data.draw(action_st), dtype=np.float32)
        later = env.expected_later_demand()[env.jobs.arrival[n]].reshape(R, T)
        want = ref.step(job, action, mode, code, env.bounds[1], cap, usage, later)
        obs, reward, done, _, info = env.step(action)
        np.testing.assert_allclose(info["dispatch"], want.x, rtol=rtol, atol=atol)
        np.testing.assert_allclose(env.usage, want.usage, rtol=rtol, atol=atol)
        for key in ("job_utility", "cluster_utility", "repair_capacity", "repair_workload",
                    "action_clip", "served", "utilization"):
            assert info[key] == pytest.approx(getattr(want, key), rel=rtol, abs=atol), key
        assert reward == pytest.approx(want.reward, rel=rtol, abs=atol)
        if mode == "dispatch":
            assert info["units_used"] == want.units_used
        assert done == (n == N - 1)
        usage = np.asarray(env.usage, float)  # continue from the env's state (exact)
    assert dynamics.is_feasible(inst, env.jobs, env.dispatch)
    _check_obs(obs, ref.observation(None, (0, 0), usage, cap, N, N), "end")


@pytest.mark.parametrize("mode", ["dispatch", "pricing", "unit_prices", "demand_price"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), R=st.integers(1, 3), T=st.integers(1, 4), N=st.integers(1, 6),
       family=st.sampled_from(["linear", "log", "sqrt"]),
       cap_mean=st.sampled_from([2.0, 6.0, 20.0]), seed=st.integers(0, 2**32))
def test_step_equals_reference(mode, data, R, T, N, family, cap_mean, seed):
    _run_episode(data, mode, (R, T, N), family, cap_mean, seed)


def test_reference_reward_by_hand():
    """The reference itself on the tiny hand-computed case: one unit, x̄ = 3, a = 2, β = 0.5,
    C = 4, ρ = 5, ω = 2: the full action asks 3, capacity leaves 2 (repair 1), reward
    2*2 + 0.5*2/4."""
    one = np.ones((1, 1))
    job = ref.Job(mask=one > 0, capability=3 * one, coef=2 * one, weight=0.5 * one,
                  workload=5.0)
    s = ref.step(job, np.ones(1), "dispatch", ref.LINEAR, 1.0, 4 * one, 2 * one)
    assert (s.x.item(), s.repair_capacity, s.repair_workload) == (2.0, 1.0, 0.0)
    assert s.reward == 4.0 + 0.25 and s.usage.item() == 4.0 and s.served == 0.4
