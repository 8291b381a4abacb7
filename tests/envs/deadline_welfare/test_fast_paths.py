"""The fast paths of DeadlineWelfare-v0 give exactly what the plain code gives: the sampler's
truncated arrivals and trusted Jobs constructor, the compiled job limits and α̂ bisection, and the
single env's one-kernel step."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

from schedgym.core import rng as rngs
from schedgym.core.arrays import f32
from schedgym.envs.deadline_welfare import ENV_ID, dynamics
from schedgym.envs.deadline_welfare.generator import DEFAULTS, PaperJobSampler, _gauss, _uniform
from schedgym.envs.deadline_welfare.pricing import alpha_hat
from schedgym.envs.deadline_welfare.types import Jobs, observed_limits

NAMES = ("arrivals", "durations", "workloads", "capability", "coef", "weights", "locality")
JOB_FIELDS = ("arrival", "deadline", "workload", "allowed", "capability", "coef", "weight")


def _reference_jobs(p: dict, seed: int) -> Jobs:
    """The sampler written plainly: ``rng.streams``, every Poisson arrival expanded before the
    truncation at ``n_jobs``, and the validating ``Jobs`` constructor (no locality)."""
    R, T = p["n_instances"], p["horizon"]
    st = rngs.streams(seed, *NAMES)
    if p["n_jobs"] is None:
        s = np.repeat(np.arange(T), st["arrivals"].poisson(p["arrival_rate"], T))
    else:
        s = np.repeat(np.arange(T - 1), st["arrivals"].poisson(p["arrival_rate"], T - 1))
        s = s[:p["n_jobs"]]
        s = np.concatenate([s, np.full(p["n_jobs"] - s.size, T - 1)]).astype(np.int64)
    N = s.size
    d = np.floor(st["durations"].exponential(p["duration_mean"], N))
    e = np.minimum(T - 1, s + d).astype(np.int64)  # in floats: d may exceed int64
    rho = f32(_gauss(st["workloads"], p["workload_mean"], p["workload_sd"], N))
    xbar = f32(_gauss(st["capability"], p["capability_mean"], p["capability_sd"], (N, R)))
    size = N if p["coef_scope"] == "job" else (N, R, T)
    coef = f32(st["coef"].uniform(*p["coef_range"], size))
    weight = f32(st["weights"].uniform(*p["weight_range"], (N, R, T)))
    return Jobs(arrival=s, deadline=e, workload=rho, allowed=np.ones((N, R), bool),
                capability=xbar, coef=coef, weight=weight, n_slots_hint=T)


@pytest.mark.parametrize("over", [{}, {"coef_scope": "job"}, {"n_jobs": None, "horizon": 5},
                                  {"n_instances": 2, "horizon": 1, "n_jobs": 3},
                                  {"arrival_rate": 40.0, "duration_mean": 1e300}])
def test_sampler_draws_the_reference_jobs(over):
    p = {**DEFAULTS, **over}
    sampler = PaperJobSampler(p)
    for seed in (0, 5, 2**40 + 3, 2**63 - 2):
        got, ref = sampler(seed), _reference_jobs(sampler.params, seed)
        for name in JOB_FIELDS:
            a, b = getattr(got, name), getattr(ref, name)
            assert a.dtype == b.dtype and a.shape == b.shape, name
            np.testing.assert_array_equal(a, b, err_msg=name)
            assert not a.flags.writeable, name
        assert got.n_slots_hint == ref.n_slots_hint
        np.testing.assert_array_equal(got.mask, ref.mask)


def _python_alpha(ratio: float) -> float:
    """The pure-Python bisection α̂ had before it was compiled."""
    def h(a: float) -> float:
        return (a - 1.0) - 1.0 / (a - 1.0) - math.log((a * ratio - 1.0) / (a - 1.0))

    if ratio <= 1.0 + 1e-12:
        return 2.0
    lo, hi = 2.0, 3.0
    while h(hi) <= 0.0:
        lo, hi = hi, hi * 2.0
    while hi - lo > 1e-13 * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if h(mid) > 0.0 else (mid, hi)
    return 0.5 * (lo + hi)


def test_alpha_hat_equals_the_python_bisection():
    gen = np.random.default_rng(0)
    ratios = np.concatenate([1.0 + gen.exponential(3.0, 300), 10 ** gen.uniform(0, 9, 300),
                             [1.0, 1.0 + 1e-13, 1.0 + 1e-9, 2.0]])
    for r in ratios:
        assert abs(alpha_hat(float(r)) - _python_alpha(float(r))) <= 1e-12 * _python_alpha(r)
    with pytest.raises(ValueError, match="ratio=nan is invalid"):
        alpha_hat(float("nan"))


def test_observed_limits_equal_masked_maxima():
    jobs = PaperJobSampler({**DEFAULTS, "n_instances": 4, "horizon": 7, "n_jobs": 9,
                            "locality_size": 2})(11)
    m = jobs.mask
    ref = (jobs.workload.max(), jobs.capability[m].max(), jobs.coef[m].max(),
           jobs.weight[m].max())
    assert observed_limits(jobs) == tuple(float(v) for v in ref)
    empty = Jobs(arrival=np.zeros(0, np.int64), deadline=np.zeros(0, np.int64),
                 workload=np.zeros(0), allowed=np.zeros((0, 2), bool),
                 capability=np.zeros((0, 2, 3)), coef=np.zeros((0, 2, 3)),
                 weight=np.zeros((0, 2, 3)))
    assert observed_limits(empty) == (0.0, 0.0, 0.0, 0.0)


@pytest.mark.parametrize("mode", ["dispatch", "pricing"])
def test_step_equals_repair_and_welfare_reference(mode):
    env = gym.make(ENV_ID, action_mode=mode, n_instances=3, horizon=6, n_jobs=12,
                   capacity_mean=6.0, utility="log").unwrapped
    env.reset(seed=4)
    env.action_space.seed(4)
    inst = env.instance
    done = False
    while not done:
        a = env.action_space.sample() * 1.3  # some entries outside the box
        n = env.job_index
        proposal = env.decode_action(a)
        upper = dynamics.unit_upper(env.jobs, n)
        rep = dynamics.repair(proposal, upper, inst.capacity - env.usage, env.jobs.workload[n])
        usage = env.usage + rep.dispatch
        fj, fc = dynamics.job_welfare(inst, env.jobs, n, rep.dispatch)
        _, reward, done, _, info = env.step(a)
        np.testing.assert_array_equal(info["dispatch"], rep.dispatch)
        np.testing.assert_array_equal(env.usage, usage)
        np.testing.assert_array_equal(env.dispatch[n], rep.dispatch)
        assert reward == fj + fc and info["job_utility"] == fj
        assert info["repair_capacity"] == rep.capacity_l1
        assert info["repair_workload"] == rep.workload_l1
        assert dynamics.is_feasible(inst, env.jobs, env.dispatch)


@pytest.mark.parametrize("low, high", [(1.0, 3.0), (0.1, 0.5), (-7.25, 1e-3), (0.0, 1e300),
                                       (2.5, 2.5)])
@pytest.mark.parametrize("size", [7, (3, 4, 5)])
def test_uniform_equals_the_generators_uniform(low, high, size):
    want = np.random.default_rng(17).uniform(low, high, size)
    got = _uniform(np.random.default_rng(17), low, high, size)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
