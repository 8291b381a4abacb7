"""OnSocMax: pricing function (spec onsocmax §3.2), exact P3 solver (§3.3) against KKT and cvxpy,
the ALM ablation, and the agent's behaviour in the env (spec §9 checklist)."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedgym  # noqa: F401
from schedgym import agents
from schedgym.agents.onsocmax import P3, OnSocMax, solve_alm, solve_p3_cvxpy
from schedgym.envs.deadline_welfare import ENV_ID, dynamics
from schedgym.envs.deadline_welfare.pricing import Pricing, alpha_hat

# spec §3.2 reference table: v/iota -> (alpha_hat, w/C, kappa/iota)
TABLE = [(1, 2.000000, 1.0000, 0.067668), (1.5, 2.359984, 0.7353, 0.101623),
         (2, 2.593565, 0.6275, 0.120684), (3, 2.918215, 0.5213, 0.143575),
         (5, 3.332928, 0.4286, 0.167734), (10, 3.914757, 0.3431, 0.194359),
         (30, 4.881239, 0.2576, 0.226074), (36, 5.046021, 0.2472, 0.230381),
         (100, 5.986791, 0.2005, 0.250752), (1000, 8.177396, 0.1393, 0.280898)]


@pytest.mark.parametrize("ratio, alpha, wfrac, kappa", TABLE)
def test_alpha_hat_table(ratio, alpha, wfrac, kappa):
    assert alpha_hat(ratio) == pytest.approx(alpha, abs=1e-6)
    p = Pricing.from_bounds(1.0, float(ratio))
    assert p.threshold(1.0) == pytest.approx(wfrac, abs=1e-4)
    assert p.kappa == pytest.approx(kappa, abs=1e-6)
    # the corrected Eq. (40) holds at the root, and its equivalent form
    a = p.alpha
    if ratio > 1:
        assert (a - 1) == pytest.approx(1 / (a - 1) + math.log((a * ratio - 1) / (a - 1)))
    assert ratio == pytest.approx(1 / a + (1 - 1 / a) * math.exp(a - a / (a - 1)), rel=1e-9)


def test_alpha_hat_bad_input():
    assert alpha_hat(1.0) == 2.0
    with pytest.raises(ValueError, match="ratio=0.5 is invalid"):
        alpha_hat(0.5)
    with pytest.raises(ValueError, match="ratio=nan is invalid"):
        alpha_hat(float("nan"))
    with pytest.raises(ValueError, match="iota=0.0 is invalid"):
        Pricing.from_bounds(0.0, 1.0)


@settings(max_examples=40, deadline=None)
@given(iota=st.floats(0.05, 3.0), ratio=st.floats(1.0, 500.0), C=st.floats(0.5, 50.0))
def test_price_continuity_end_values_and_design_ode(iota, ratio, C):
    p = Pricing.from_bounds(iota, iota * ratio)
    w = float(p.threshold(C))
    assert p.price(0.0, C) == pytest.approx(iota, rel=1e-12)
    assert p.price(w * (1 - 1e-12), C) == pytest.approx(iota, rel=1e-9)
    assert p.price(w, C) == pytest.approx(iota, rel=1e-9)
    assert p.price(C, C) == pytest.approx(p.v, rel=1e-9)
    assert np.isinf(p.price(C * 1.01, C))
    u = np.linspace(0.0, C, 2001)
    ph = p.price(u, C)
    assert np.all(np.diff(ph) >= -1e-12 * p.v)
    assert np.max(np.abs(np.diff(ph))) <= 10 * p.v * p.alpha / 2000 + 1e-12  # no jump
    # design condition of Theorem 1 with equality on [w, C]
    uu = np.linspace(w, C, 50)
    np.testing.assert_allclose(p.price(uu, C) * C, p.alpha * p.cumulative(uu, C) - iota * uu,
                               rtol=1e-9, atol=1e-9 * p.v * C)
    # inverse
    pp = np.linspace(iota, p.v, 7)
    np.testing.assert_allclose(p.price(p.inverse(pp, C), C), pp, rtol=1e-9)


def test_cumulative_matches_quadrature():
    from scipy.integrate import quad

    for iota, v, C in ((1.0, 3.0, 20.0), (0.1, 3.0, 5.0), (0.18, 4.76, 18.0), (1.0, 1.0, 4.0)):
        p = Pricing.from_bounds(iota, v)
        for u in np.linspace(0, C, 9):
            q, _ = quad(lambda s, p=p, C=C: float(p.price(s, C)), 0.0, u,
                        points=[float(p.threshold(C))], epsabs=1e-12, epsrel=1e-12)
            assert float(p.cumulative(u, C)) == pytest.approx(q, rel=1e-9, abs=1e-12)


def random_p3(rng: np.random.Generator, code: int, m: int = 12) -> P3:
    C = rng.uniform(3.0, 20.0, m)
    usage = C * rng.uniform(0.0, 1.0, m) * rng.integers(0, 2, m)
    xbar = rng.uniform(0.5, 8.0, m)
    a = rng.uniform(1.0, 3.0, m)
    beta = rng.uniform(0.1, 0.5, m)
    cap = np.maximum(0.0, np.minimum(xbar, C - usage))
    iota = float(rng.uniform(0.1, 1.0))
    pr = Pricing.from_bounds(iota, iota * float(rng.uniform(1.0, 40.0)))
    rho = float(rng.uniform(1.0, 40.0))
    return P3(code, a, beta / C, usage, C, cap, rho, pr)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), code=st.sampled_from([0, 1, 2]),
       m=st.integers(1, 30))
def test_exact_solver_satisfies_kkt(seed, code, m):
    p = random_p3(np.random.default_rng(seed), code, m)
    x, mu = p.solve()
    assert np.all(x >= 0) and np.all(x <= p.cap + 1e-12) and x.sum() <= p.rho * (1 + 1e-12)
    assert p.kkt_residual(x, mu) <= 1e-6


@pytest.mark.parametrize("code", [0, 1, 2])
def test_exact_solver_objective_matches_cvxpy(code):
    pytest.importorskip("cvxpy")
    rng = np.random.default_rng(100 + code)
    for _ in range(8):
        p = random_p3(rng, code, m=int(rng.integers(2, 25)))
        x, _ = p.solve()
        xc = solve_p3_cvxpy(p)
        assert p.objective(x) >= p.objective(xc) - 1e-6
        assert p.objective(x) == pytest.approx(p.objective(xc), abs=1e-5)


def test_linear_tie_is_shared_in_proportion_to_slack():
    """Hand-computed: two linear units with the same marginal a + b - ι = 2 in the flat price
    region (v = ι = 1: α̂ = 2, threshold C / (α̂ - 1) = 100 above both caps), ρ = 4 < 2 + 6:
    μ* = 2 and the workload is shared in proportion to the caps, x = (1, 3)."""
    pr = Pricing.from_bounds(1.0, 1.0)
    p = P3(0, np.array([3.0, 3.0]), np.zeros(2), np.zeros(2), np.full(2, 100.0),
           np.array([2.0, 6.0]), 4.0, pr)
    x, mu = p.solve()
    np.testing.assert_allclose(x, [1.0, 3.0], rtol=1e-12)
    assert mu == pytest.approx(2.0, rel=1e-12)
    assert p.kkt_residual(x, mu) <= 1e-12


@pytest.mark.parametrize("code, expected", [(1, 1.0), (2, 1.0)])
def test_concave_unit_in_the_flat_region_hand_computed(code, expected):
    """One unit, ample workload, price ι = 1 in the flat region: f'(x) = 1 gives x = 1 for
    ``2 ln(1 + x)`` (2 / (1 + x) = 1) and for ``2 sqrt(x)`` (1 / sqrt(x) = 1); μ* = 0."""
    pr = Pricing.from_bounds(1.0, 1.0)
    p = P3(code, np.array([2.0]), np.zeros(1), np.zeros(1), np.array([100.0]),
           np.array([10.0]), 100.0, pr)
    x, mu = p.solve()
    assert x[0] == pytest.approx(expected, rel=1e-12) and mu == 0.0


@settings(max_examples=50, deadline=None)
@given(code=st.sampled_from([1, 2]), a=st.floats(0.01, 100.0), d=st.floats(1e-3, 1e3))
def test_f_prime_inverse_inverts_f_prime(code, a, d):
    x = dynamics.f_prime_inverse(code, a, d)
    if x > 0:
        assert dynamics.f_prime(code, a, x) == pytest.approx(d, rel=1e-9)
    else:  # f' never reaches d on x >= 0: f'(0) <= d
        assert dynamics.f_prime(code, a, 0.0) <= d * (1 + 1e-12)
    assert dynamics.f_prime_inverse(0, a, d) == (np.inf if a > d else 0.0)


@pytest.mark.parametrize("code", [0, 1, 2])
def test_alm_ablation_is_feasible_and_not_better_than_exact(code):
    rng = np.random.default_rng(7 + code)
    for _ in range(3):
        p = random_p3(rng, code, m=10)
        xa = solve_alm(p, max_outer=30, max_inner=100)
        assert np.all(xa >= 0) and np.all(xa <= p.cap + 1e-12) and xa.sum() <= p.rho + 1e-9
        assert p.objective(xa) <= p.objective(p.solve()[0]) + 1e-9


def run_episode(env, agent):
    obs, _ = env.reset(seed=env.unwrapped.instance_seed)
    done, total = False, 0.0
    while not done:
        a, _ = agent.predict(obs)
        obs, r, done, _, info = env.step(a)
        total += r
    return total, info


@pytest.mark.parametrize("util", ["linear", "log", "sqrt"])
def test_uncongested_onsocmax_equals_per_job_myopic_optimum_and_opt(util):
    """Capacity so large that no unit leaves the flat price region (Theorem 1 Case I):
    OnSocMax = each job's myopic optimum = OPT."""
    pytest.importorskip("cvxpy")
    import cvxpy as cp

    from schedgym.envs.deadline_welfare.offline import solve_p1

    env = gym.make(ENV_ID, utility=util, n_instances=3, horizon=6, n_jobs=6,
                   capacity_mean=1e4, capacity_sd=0.0)
    agent = agents.make("onsocmax", env)
    total, _ = run_episode(env, agent)
    e = env.unwrapped
    jobs, inst = e.jobs, e.instance
    for n in range(jobs.n_jobs):
        m = jobs.mask[n]
        a, xb = jobs.coef[n][m], jobs.capability[n][m]
        b = jobs.weight[n][m] / inst.capacity[m]
        x = cp.Variable(a.size, nonneg=True)
        f = {"linear": a @ x, "log": a @ cp.log(1 + x), "sqrt": a @ cp.sqrt(x)}[util]
        prob = cp.Problem(cp.Maximize(f + b @ x), [x <= xb, cp.sum(x) <= jobs.workload[n]])
        prob.solve(solver=cp.CLARABEL)
        got = sum(dynamics.job_welfare(inst, jobs, n, e.dispatch[n]))
        assert got == pytest.approx(prob.value, rel=1e-6, abs=1e-5)
    assert np.max(e.usage / inst.capacity) < 1 / (e._alpha - 1)  # below every threshold
    assert total == pytest.approx(solve_p1(inst, jobs).value, rel=1e-6)


def test_agent_options_and_bad_options():
    env = gym.make(ENV_ID, n_instances=2, horizon=4, n_jobs=3)
    assert isinstance(agents.make("onsocmax", env), OnSocMax)
    agents.make("onsocmax", env, solver="alm")
    with pytest.raises(ValueError, match="solver"):
        agents.make("onsocmax", env, solver="newton")
    with pytest.raises(ValueError, match="tol"):
        agents.make("onsocmax", env, tol=-1.0)


def test_alm_agent_runs_feasibly():
    env = gym.make(ENV_ID, utility="log", n_instances=2, horizon=4, n_jobs=4)
    total, info = run_episode(env, OnSocMax(env, solver="alm"))
    e = env.unwrapped
    assert dynamics.is_feasible(e.instance, e.jobs, e.dispatch) and np.isfinite(total)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.5, 1.25, 2.0, 3.0, 1e-9, 7.75, 1e3]), max_size=40),
       st.lists(st.floats(1e-6, 1e6), max_size=40))
def test_unique_sorted_equals_np_unique(repeated, spread):
    """The solver's sorted distinct jump points are ``np.unique``'s, bit for bit (duplicates,
    already sorted and reversed inputs, empty)."""
    from schedgym.agents.onsocmax import _unique_sorted

    for a in (repeated + spread, sorted(repeated + spread), sorted(spread)[::-1], []):
        v = np.array(a, dtype=np.float64)
        got, want = _unique_sorted(v), np.unique(v)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
